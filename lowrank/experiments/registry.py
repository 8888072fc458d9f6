"""The one list of the book's chapters and the module that holds each.

A chapter module exports ``SCHEMA`` and ``CONSTRAINTS`` (its parameters, :mod:`lowrank.core.params`),
optionally ``PATHS`` and ``MANIFESTS`` (parameters naming files), its run functions, ``headline``
(every number its notebook glues) and, when it judges the papers, ``CLAIMS``. The book layer,
the synthesis chapter, ``lowrank list`` and the tests read the chapters from here.
"""
from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any, Mapping

from ..core.params import ParameterError, short_repr, validate as validate_values

__all__ = ["CHAPTERS", "SYNTHESIS", "claim_chapters", "MODULES", "chapter_name", "module", "schema", "constraints", "paths", "manifests", "store_experiments",
           "validate"]

# Book order: each chapter's notebook is chapters/<stem>.ipynb and its module
# lowrank.experiments.<stem without its number>.
CHAPTERS: tuple[str, ...] = (
    "01_attention_and_rank",
    "02_representation_theorem",
    "03_multihead_bottleneck",
    "04_head_size_training",
    "05_rank_barrier",
    "06_rank_saturation",
    "07_trained_attention",
    "08_synthesis",
)
MODULES: dict[str, str] = {stem: stem.split("_", 1)[1] for stem in CHAPTERS}
# The module of the chapter that collects every other chapter's verdicts.
SYNTHESIS = "synthesis"


def claim_chapters() -> tuple[str, ...]:
    """The chapters whose modules judge claims (they define ``CLAIMS``), in book order, the
    collecting chapter left out; a new chapter joins by defining ``CLAIMS``. Imports every chapter
    module (some load torch)."""
    return tuple(stem for stem in CHAPTERS if MODULES[stem] != SYNTHESIS and hasattr(module(stem), "CLAIMS"))


def chapter_name(chapter: str, known: tuple[str, ...] = CHAPTERS) -> str:
    """Resolve '01', '01_attention_and_rank' or a path ending in the notebook's name."""
    stem = str(chapter).rsplit("/", 1)[-1].removesuffix(".ipynb")
    if stem in known:
        return stem
    hits = [c for c in known if c.split("_", 1)[0] == stem.zfill(2)]
    if len(hits) == 1:
        return hits[0]
    raise ParameterError(f"unknown chapter {short_repr(chapter)}; known chapters: {', '.join(sorted(known))}")


def module(chapter: str) -> ModuleType:
    """The chapter's experiments module (imported on first use: some load torch)."""
    return import_module(f"{__package__}.{MODULES[chapter_name(chapter)]}")


def schema(chapter: str) -> dict:
    return module(chapter).SCHEMA


def constraints(chapter: str) -> tuple:
    return tuple(module(chapter).CONSTRAINTS)


def paths(chapter: str) -> dict[str, str]:
    return dict(getattr(module(chapter), "PATHS", {}))


def manifests(chapter: str) -> tuple[str, ...]:
    return tuple(getattr(module(chapter), "MANIFESTS", ()))


def store_experiments(chapter: str) -> tuple[str, ...] | None:
    """The experiments whose records a store parameter of the chapter may hold (None: any)."""
    found = getattr(module(chapter), "STORE_EXPERIMENTS", None)
    return None if found is None else tuple(found)


def validate(chapter: str, values: Mapping[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """A chapter's parameters checked against its module's SCHEMA and CONSTRAINTS."""
    name = chapter_name(chapter)
    return validate_values(schema(name), values, constraints=constraints(name), label=name, partial=partial)
