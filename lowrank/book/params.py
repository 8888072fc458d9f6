"""The book's view of chapter parameters.

Each chapter's parameters live in its experiments module (``SCHEMA``, ``CONSTRAINTS``,
``PATHS``, ``MANIFESTS``; the modules are listed in :mod:`lowrank.experiments.registry`). The cell
after a notebook's ``parameters`` cell calls ``validate(CHAPTER, globals())``, and ``lowrank run``
checks the same schema before a kernel starts. The tables below read the modules on first use (some
load torch), and a test may add a chapter of its own to them.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Callable

from ..experiments import registry
from ..core.params import ParameterError, check_constraints as _check, short_repr, validate as _validate

__all__ = ["ParameterError", "short_repr", "SCHEMAS", "CONSTRAINTS", "PATHS", "MANIFESTS", "STORE_EXPERIMENTS", "CORPUS_NAMES",
           "chapter_name", "schema", "validate", "check_constraints"]


class _FromModules(MutableMapping):
    """chapter -> one of its module's declarations, read on first use; other chapters may be added."""

    def __init__(self, read: Callable[[str], Any]):
        self._read, self._added = read, {}

    def __getitem__(self, chapter: str) -> Any:
        if chapter in self._added:
            return self._added[chapter]
        if chapter in registry.MODULES:
            return self._read(chapter)
        raise KeyError(chapter)

    def __contains__(self, chapter: object) -> bool:
        return chapter in self._added or chapter in registry.MODULES

    def __setitem__(self, chapter: str, value: Any) -> None:
        self._added[chapter] = value

    def __delitem__(self, chapter: str) -> None:
        del self._added[chapter]

    def __iter__(self) -> Iterator[str]:
        return iter([*registry.CHAPTERS, *(c for c in self._added if c not in registry.MODULES)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


SCHEMAS: MutableMapping[str, dict] = _FromModules(registry.schema)
CONSTRAINTS: MutableMapping[str, tuple] = _FromModules(registry.constraints)
PATHS: MutableMapping[str, dict] = _FromModules(registry.paths)
MANIFESTS: MutableMapping[str, tuple] = _FromModules(registry.manifests)
STORE_EXPERIMENTS: MutableMapping[str, tuple | None] = _FromModules(registry.store_experiments)
# A "corpus" path parameter may instead name one of the corpora fetched by `make data`.
CORPUS_NAMES = ("shakespeare", "bbcnews")


def chapter_name(chapter: str) -> str:
    """Resolve '01', '01_attention_and_rank' or a path ending in the notebook name."""
    return registry.chapter_name(chapter, tuple(SCHEMAS))


def schema(chapter: str) -> dict:
    return SCHEMAS[chapter_name(chapter)]


def check_constraints(chapter: str, params: Mapping[str, Any]) -> None:
    _check(chapter, CONSTRAINTS.get(chapter, ()), params)


def validate(chapter: str, values: Mapping[str, Any] | None = None, *, partial: bool = False,
             **kw: Any) -> dict[str, Any]:
    """Check a chapter's parameters; return them normalised (floats as float, lists as list).

    ``values`` may be a notebook's ``globals()``: only the schema's names are read from it, and
    every one must be present. With ``partial=True`` (``lowrank run``'s overrides) only the given
    names are checked, and unknown names are an error.
    """
    name = chapter_name(chapter)
    given = {**(values or {}), **kw}
    return _validate(SCHEMAS[name], given, constraints=CONSTRAINTS.get(name, ()), label=f"chapter {name}",
                     partial=partial)
