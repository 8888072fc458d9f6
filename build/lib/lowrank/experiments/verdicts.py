"""The verdict framework: five verdicts, claims with rules fixed before the data, judgements.

A claim's rule is a plain function of its chapter's ``headline()`` dict. Its thresholds are
named constants in the chapter's module, each with a one-line reason, and its docstring's first
sentence is the rule as the book prints it. A rule returns a :class:`Judgement`: the verdict,
the evidence (numbers with their uncertainty and the seeds or draws behind them) and, for the
three qualified verdicts, what qualifies them.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REPRODUCED", "WEAKER", "CONDITIONAL", "INCONCLUSIVE", "CONTRADICTED", "VERDICTS",
           "VERDICT_MEANING", "SCALES", "BHOJANAPALLI", "MIN_LI", "BOOK", "Judgement", "Claim",
           "MissingEvidence", "need", "is_missing"]

REPRODUCED = "reproduced"
WEAKER = "reproduced in a weaker form"
CONDITIONAL = "holds only under stated conditions"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
VERDICTS = (REPRODUCED, WEAKER, CONDITIONAL, INCONCLUSIVE, CONTRADICTED)

VERDICT_MEANING = {
    REPRODUCED: "the claim holds as stated, and the uncertainty excludes the alternative",
    WEAKER: "a weaker or corrected statement holds; the row names it",
    CONDITIONAL: "true in the proof's setting, false outside it; the row names the conditions",
    INCONCLUSIVE: "the experiment cannot tell at its power; the row states the smallest effect it could detect",
    CONTRADICTED: "the opposite holds, and the uncertainty excludes the claim",
}
# What a qualified verdict must say next to it.
_QUALIFIER = {WEAKER: "the weaker statement that holds", CONDITIONAL: "the conditions",
              INCONCLUSIVE: "the smallest effect the experiment could detect"}

SCALES = ("smoke", "default", "long", "paper")

BHOJANAPALLI = "Bhojanapalli et al. (2020)"
MIN_LI = "Min & Li (ICLR 2025 submission)"
BOOK = "this book"  # a finding of the book's own, beyond both papers


class MissingEvidence(KeyError):
    """A rule needs a headline value that its chapter did not provide (``key`` names it)."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message)
        self.key = key


def need(headline: Mapping[str, Any], key: str) -> Any:
    """headline[key], or MissingEvidence naming the key (NaN is a value: rules decide on it)."""
    if key not in headline:
        raise MissingEvidence(f"headline value {key!r} not found: run chapter {key[2:4]} first", key)
    return headline[key]


@dataclass(frozen=True)
class Judgement:
    verdict: str
    evidence: str
    qualifier: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {VERDICTS}")
        if self.verdict in _QUALIFIER and not self.qualifier.strip():
            raise ValueError(f"verdict {self.verdict!r} needs a qualifier: {_QUALIFIER[self.verdict]}")
        if not self.evidence.strip():
            raise ValueError("a judgement needs its evidence")

    @property
    def label(self) -> str:
        """The verdict with its qualifier, as the table prints it."""
        return f"{self.verdict}: {self.qualifier}" if self.qualifier else self.verdict


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (or of the book), the chapter section that tests it, and its rule."""
    key: str
    paper: str
    chapter: str
    section: str
    statement: str
    rule: Callable[[Mapping[str, Any]], Judgement]
    # A headline key whose value names the scale the claim's evidence comes from, when that is
    # not the scale the chapter's notebook ran at (chapter 04 judges its training claims on a
    # stored long-scale sweep). "" (default): the notebook's scale.
    scale_key: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.key):
            raise ValueError(f"claim key {self.key!r}: lower-case letters, digits and '-' only")
        if not re.fullmatch(r"\d\d", self.chapter):
            raise ValueError(f"claim {self.key}: chapter {self.chapter!r} is not two digits")
        if not (self.rule.__doc__ or "").strip():
            raise ValueError(f"claim {self.key}: its rule needs a docstring (the sentence the book prints)")

    @property
    def rule_sentence(self) -> str:
        """The rule's docstring up to its first blank line, on one line."""
        first = (self.rule.__doc__ or "").strip().split("\n\n")[0]
        return " ".join(first.split())

    def judge(self, headline: Mapping[str, Any]) -> Judgement:
        judgement = self.rule(headline)
        if not isinstance(judgement, Judgement):
            raise TypeError(f"claim {self.key}: rule returned {type(judgement).__name__}, not a Judgement")
        return judgement


def is_missing(x: Any) -> bool:
    """True for None and NaN: a number the experiment could not estimate."""
    return x is None or (isinstance(x, float) and math.isnan(x))
