"""The verdict framework: the verdicts, claims with rules fixed before the data, judgements.

A claim's rule is a plain function of its evidence: the typed record of the values it reads
(``Claim.evidence``, :mod:`lowrank.experiments.shared.record`), read from its chapter's
``headline()`` values. Its thresholds are
named constants in the chapter's module, each with a one-line reason, and its docstring's first
paragraph is the rule as the book prints it, naming the constants it states in braces
(:func:`lowrank.experiments.rule_source.render`). A claim's ``measure`` is the function that
computes the values its rule reads; the rules ledger fingerprints both. A rule returns a :class:`Judgement`: the verdict,
the evidence (numbers with their uncertainty and the seeds or draws behind them) and, for the
three qualified verdicts, what qualifies them.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.params import SCALES
from .rule_source import render

__all__ = ["REPRODUCED", "CORRECTED", "WEAKER", "CONDITIONAL", "NEGLIGIBLE", "INCONCLUSIVE", "CONTRADICTED", "NOT_TESTED",
           "VERDICTS", "NOT_JUDGED", "VERDICT_MEANING", "KINDS", "PROOF_CHECK", "SIMULATION", "TRAINING", "PRETRAINED",
           "EMPIRICAL_KINDS", "KIND_MEANING", "SCALES", "BHOJANAPALLI", "MIN_LI", "BOOK", "Paper", "PAPERS", "Effect",
           "Judgement", "Claim", "MissingEvidence", "need", "is_missing", "claim_of", "plain_number", "upper_end"]

REPRODUCED = "reproduced"
CORRECTED = "reproduced, corrected"
WEAKER = "reproduced in a weaker form"
CONDITIONAL = "holds only under stated conditions"
NEGLIGIBLE = "no effect larger than the margin"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
NOT_TESTED = "not tested"
VERDICTS = (REPRODUCED, CORRECTED, WEAKER, CONDITIONAL, NEGLIGIBLE, INCONCLUSIVE, CONTRADICTED, NOT_TESTED)
# What a row of the verdict table says when no rule could be applied (its evidence is missing): not a verdict.
NOT_JUDGED = "not judged"

VERDICT_MEANING = {
    REPRODUCED: "the claim holds as stated, and the uncertainty excludes the alternative",
    CORRECTED: "a sharper or corrected statement holds (the row names the correction); not a weakening",
    WEAKER: "only a weaker statement holds; the row names it",
    CONDITIONAL: ("true inside conditions the claim did not state (the row names them); a theorem's own "
                  "hypothesis is not such a condition"),
    NEGLIGIBLE: ("the experiment had the power its registered margin asks, and every interval lies inside that "
                 "margin: no effect larger than the margin at this scale (the row names the margin and the scale)"),
    INCONCLUSIVE: "the experiment cannot tell at its power; the row states the smallest effect it could detect",
    CONTRADICTED: "the evidence excludes the claim as the book states it",
    NOT_TESTED: "the book does not test the claim; the row says what testing it would take",
}
# What a qualified verdict must say next to it.
_QUALIFIER = {CORRECTED: "the correction", WEAKER: "the weaker statement that holds",
              CONDITIONAL: "the conditions", NEGLIGIBLE: "the margin and the scale", INCONCLUSIVE: "the smallest effect the experiment could detect",
              NOT_TESTED: "what testing it would take"}

# What an inconclusive rule still waits for (Judgement.awaits): the runs that choose each model's
# learning rate, or the judged runs themselves.
AWAITS_RATES = "learning rates"
AWAITS_RUNS = "judged runs"

# What kind of evidence a claim rests on. Totals never add proof checks to empirical results.
PROOF_CHECK = "proof check"
SIMULATION = "simulation"
TRAINING = "training experiment"
PRETRAINED = "pretrained model"
KINDS = (PROOF_CHECK, SIMULATION, TRAINING, PRETRAINED)
EMPIRICAL_KINDS = (SIMULATION, TRAINING, PRETRAINED)
KIND_MEANING = {
    PROOF_CHECK: "an identity, a construction or arithmetic, checked numerically: true for any data",
    SIMULATION: "a Monte Carlo or fitting experiment on synthetic inputs or random weights",
    TRAINING: "models trained by the book on real or synthetic data",
    PRETRAINED: "a model trained by others, measured by the book",
}

BHOJANAPALLI = "Bhojanapalli et al. (2020)"
MIN_LI = "Min & Li (ICLR 2025 submission)"
BOOK = "this book"  # a finding of the book's own, beyond both papers


@dataclass(frozen=True)
class Paper:
    """A paper whose claims the book judges: ``name`` as its claims cite it (``Claim.paper``),
    ``slug`` for the keys of its values (``ch08_found_<slug>``), and ``thesis``: what it answers to
    the book's question, in its own terms, completing "<name> argue that ..." ("" when it states
    none: its answer then only reports on its claims). A chapter module that
    brings a paper of its own declares it in ``PAPERS`` beside its ``CLAIMS``."""
    name: str
    slug: str
    thesis: str

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.slug):
            raise ValueError(f"paper {self.name!r}: slug {self.slug!r} must be lower-case letters, digits and '_'")
        if not self.name.strip():
            raise ValueError(f"paper {self.slug}: a name is needed")


# The two papers of the book; the claims of each are spread over several chapters.
PAPERS = (
    Paper(BHOJANAPALLI, "bhojanapalli",
          "a head smaller than the sequence length cannot express every attention pattern"),
    Paper(MIN_LI, "min_li", "the rank of attention saturates at a small head size, so larger heads are redundant"),
)


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
class Effect:
    """A measured effect a verdict rests on: what was measured (e.g. "validation"), its estimate,
    its 95 % interval and the seeds or draws behind it, in ``unit``."""
    what: str
    estimate: float
    lo: float
    hi: float
    seeds: int
    unit: str = "nats"

    @property
    def text(self) -> str:
        """'validation +0.038 nats (+0.026 to +0.050), 9 seeds'."""
        return (f"{self.what} {self.estimate:+.3f} {self.unit} ({self.lo:+.3f} to {self.hi:+.3f}), "
                f"{self.seeds} seeds")


@dataclass(frozen=True)
class Judgement:
    """A rule's verdict on a claim, as fields the book's sentences quote and never cut apart.

    ``qualifier`` is one clause (the correction, the condition, the weaker statement, why a test
    is inconclusive, or for a contradiction what the evidence shows against the claim): the
    answers quote it whole. ``detail`` is what the verdict table adds after it. ``awaits`` names
    the data a rule is still waiting for ("learning rates", "judged runs"), "" once it has it all.
    """
    verdict: str
    evidence: str
    qualifier: str = ""
    detail: str = ""
    # The measured effects the verdict rests on, as numbers, for the sentences that quote them.
    effects: tuple[Effect, ...] = ()
    awaits: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {VERDICTS}")
        if self.verdict in _QUALIFIER and not self.qualifier.strip():
            raise ValueError(f"verdict {self.verdict!r} needs a qualifier: {_QUALIFIER[self.verdict]}")
        if self.detail and not self.qualifier:
            raise ValueError("a detail needs the qualifier it explains")
        if self.awaits and self.verdict != INCONCLUSIVE:
            raise ValueError(f"only an inconclusive verdict awaits data, not {self.verdict!r}")
        if not self.evidence.strip():
            raise ValueError("a judgement needs its evidence")

    @property
    def reason(self) -> str:
        """The qualifier with its detail, as the verdict table prints it."""
        return f"{self.qualifier}; {self.detail}" if self.detail else self.qualifier

    @property
    def label(self) -> str:
        """The verdict with its qualifier, as the table prints it."""
        return f"{self.verdict}: {self.reason}" if self.qualifier else self.verdict


def one_line_reason(verdict: str, reason: str, evidence: str) -> str:
    """A verdict's reason in one line, for the verdict cards: its qualifier with the detail, "holds
    as stated" for a claim reproduced without one, else the evidence itself."""
    if reason:
        return reason
    return "holds as stated" if verdict == REPRODUCED else evidence


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (or of the book), where the paper makes it, the section that tests it, and its rule.

    A claim the book does not test has ``rule=None`` and says in ``untested`` what testing it
    would take; it is listed with the verdict "not tested".
    """
    key: str
    paper: str
    chapter: str
    section: str
    statement: str
    rule: Callable[[Mapping[str, Any]], Judgement] | None
    # A headline key whose value names the scale the claim's evidence comes from, when that is
    # not the scale the chapter's notebook ran at (chapter 04 judges its training claims on a
    # stored long-scale sweep). "" (default): the notebook's scale.
    scale_key: str = ""
    kind: str = SIMULATION
    # Where the paper makes the claim ("Theorem 1", "Sec. 2.3", "abstract"), in the paper's numbering.
    where: str = ""
    untested: str = ""
    # The key of the claim this one judges on one more model ("" for a claim of its own): chapter 08
    # shows it under that claim, naming the model, and counts the claim once.
    model_of: str = ""
    # The model such a claim is judged on, as the row names it ("all-mpnet-base-v2").
    model: str = ""
    # The function of the chapter's module that computes the values the rule reads (a chapter's
    # headline, or a narrower function where one exists): the rules ledger fingerprints it with the
    # rule, so a change to the measurement is recorded like a change to the decision.
    measure: Callable[..., Any] | None = None
    # The typed record the rule reads (a :class:`lowrank.experiments.shared.record.Record`, or any
    # class with a ``read(values)`` class method, as chapter 04's row records): :meth:`judge` reads it
    # from the chapter's values and hands the rule the record. None: the rule reads the values
    # themselves (a claim added before its record is written).
    evidence: type | None = None

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.key):
            raise ValueError(f"claim key {self.key!r}: lower-case letters, digits and '-' only")
        if not re.fullmatch(r"\d\d", self.chapter):
            raise ValueError(f"claim {self.key}: chapter {self.chapter!r} is not two digits")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key}: kind {self.kind!r} is not one of {KINDS}")
        if self.rule is None:
            if not self.untested.strip():
                raise ValueError(f"claim {self.key}: an untested claim says what testing it would take")
        elif not (self.rule.__doc__ or "").strip():
            raise ValueError(f"claim {self.key}: its rule needs a docstring (the sentence the book prints)")
        if self.measure is not None and not callable(self.measure):
            raise ValueError(f"claim {self.key}: its measure is a {type(self.measure).__name__}, not a function")
        if self.evidence is not None and not (isinstance(self.evidence, type) and callable(getattr(self.evidence, "read", None))):
            raise ValueError(f"claim {self.key}: its evidence must be a record class with a read(values) method")

    @property
    def rule_sentence(self) -> str:
        """The rule's docstring up to its first blank line, on one line, with the constants it names
        in braces filled in (:func:`lowrank.experiments.rule_source.render`; "" for an untested claim)."""
        if self.rule is None:
            return ""
        return render(self.rule)

    def judge(self, headline: Mapping[str, Any]) -> Judgement:
        if self.rule is None:
            return Judgement(NOT_TESTED, "no experiment in this book", self.untested)
        judgement = self.rule(self.evidence.read(headline) if self.evidence is not None else headline)
        if not isinstance(judgement, Judgement):
            raise TypeError(f"claim {self.key}: rule returned {type(judgement).__name__}, not a Judgement")
        return judgement


def is_missing(x: Any) -> bool:
    """True for None and NaN: a number the experiment could not estimate."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def plain_number(x: float) -> float | None:
    """A float as a headline record carries it: None where it is not finite (an open grid end at
    infinity, or NaN where nothing was estimated), since a nested nan or inf survives neither a
    Python literal (the glued repr chapter 08 reads) nor JSON."""
    x = float(x)
    return x if math.isfinite(x) else None


def upper_end(x: float | None) -> float:
    """The upper end of a grid interval from a record (:func:`plain_number`): None is the open end, inf."""
    return math.inf if x is None else float(x)


def claim_of(claims: Iterable[Claim], key: str) -> Claim:
    """The claim whose key is ``key``: claims are addressed by key, so inserting or reordering
    claims in a tuple never hands one claim's verdict to another. KeyError names the key and those known."""
    claims = tuple(claims)
    for c in claims:
        if c.key == key:
            return c
    raise KeyError(f"no claim {key!r}; known claims: {', '.join(c.key for c in claims) or 'none'}")
