"""Every claim of the book, gathered from the chapter modules that test them and from the
inventory of claims no chapter tests, checked for duplicate keys and misfiled chapters.

Chapter 08 (:mod:`lowrank.experiments.synthesis`) judges these claims; the rules ledger's command
line (:mod:`lowrank.experiments.ledger`) registers their rules.
"""
from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

from . import registry
from .verdicts import BOOK, PAPERS, Claim, Paper

__all__ = ["ChapterSource", "claim_sources", "Collection", "collect_claims", "load_module"]


@dataclass(frozen=True)
class ChapterSource:
    """A chapter that tests claims: its number, its notebook's stem and its experiment module."""
    number: str
    stem: str
    module: str


def claim_sources() -> tuple[ChapterSource, ...]:
    """Where claims come from: every chapter whose module defines CLAIMS (:func:`registry.claim_chapters`)."""
    return tuple(ChapterSource(stem[:2], stem, registry.MODULES[stem]) for stem in registry.claim_chapters())


@dataclass(frozen=True)
class Collection:
    """The claims gathered, the chapters that gave none with the reason (number -> reason), and
    the papers the claims cite, in the order of their first claim."""
    claims: tuple[Claim, ...]
    silent: dict[str, str]
    sources: tuple[ChapterSource, ...]
    papers: tuple[Paper, ...] = ()

    def source(self, number: str) -> ChapterSource | None:
        return next((s for s in self.sources if s.number == number), None)


def load_module(name: str) -> ModuleType | None:
    """lowrank.experiments.<name>, or None if that module does not exist (any other error is raised)."""
    full = f"{__package__}.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as e:
        if e.name == full:
            return None
        raise


def _untested() -> tuple[Claim, ...]:
    from .inventory import UNTESTED

    return UNTESTED


def collect_claims(sources: Iterable[ChapterSource] | None = None, *,
                   load: Callable[[str], ModuleType | None] = load_module,
                   untested: Iterable[Claim] | None = None) -> Collection:
    """Every Claim of the listed chapters' modules, in chapter order, then the claims no chapter tests
    (``untested``, default: :data:`lowrank.experiments.inventory.UNTESTED`); chapters without any
    claim are named.

    ``load(module_name)`` returns the module or None when it does not exist (tests pass fakes).
    A claim filed under another chapter than the module's, a key used twice, or a paper that neither
    :data:`lowrank.experiments.verdicts.PAPERS` nor a module's ``PAPERS`` declares, is an error.
    """
    sources = claim_sources() if sources is None else tuple(sources)
    claims: list[Claim] = []
    silent: dict[str, str] = {}
    declared = {p.name: p for p in PAPERS}
    for src in sources:
        module = load(src.module)
        if module is None:
            silent[src.number] = f"module lowrank.experiments.{src.module} does not exist"
            continue
        for paper in getattr(module, "PAPERS", ()):
            if not isinstance(paper, Paper):
                raise TypeError(f"{src.module}.PAPERS holds {type(paper).__name__}, not a Paper")
            declared[paper.name] = paper
        found = getattr(module, "CLAIMS", None)
        if found is None:
            silent[src.number] = f"lowrank.experiments.{src.module} defines no CLAIMS"
            continue
        found = tuple(found)
        if not found:
            silent[src.number] = f"lowrank.experiments.{src.module} lists no claim"
        for c in found:
            if not isinstance(c, Claim):
                raise TypeError(f"{src.module}.CLAIMS holds {type(c).__name__}, not a Claim")
            if c.chapter != src.number:
                raise ValueError(f"claim {c.key} of {src.module} names chapter {c.chapter}, not {src.number}")
        claims += found
    for c in (_untested() if untested is None else tuple(untested)):
        if c.rule is not None:
            raise ValueError(f"claim {c.key} of the untested inventory has a rule: move it to its chapter")
        claims.append(c)
    keys = Counter(c.key for c in claims)
    twice = sorted(k for k, n in keys.items() if n > 1)
    if twice:
        raise ValueError(f"claim keys used more than once: {', '.join(twice)}")
    cited = list(dict.fromkeys(c.paper for c in claims if c.paper != BOOK))
    unknown = [name for name in cited if name not in declared]
    if unknown:
        raise ValueError(f"claims cite {', '.join(map(repr, unknown))}, which no chapter module declares in PAPERS")
    return Collection(tuple(claims), silent, sources, tuple(declared[name] for name in cited))
