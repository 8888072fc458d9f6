"""What the book found, in words: one answer per paper and a summary for a practitioner choosing a
head size, written from chapter 08's judged rows (:mod:`lowrank.experiments.synthesis`) and the
theory's head-size threshold, never from a typed number.

Each answer opens with one sentence that answers the book's question (does head size bottleneck
attention?) for the paper's thesis: what holds in theory (proof checks and simulations) and what
the training experiments and pretrained models say at the scale the book ran them. Further
sentences name the corrections, conditions and contradictions, and say what stays open, how much
of it and why; the counts by verdict are left to the table and chart they sit beside.
Every count, correction, condition and reason comes from the rows; every verdict of ``VERDICTS``,
and a row not judged yet, has its words, for any number of claims of any kind. The text is plain,
with formulas in the plain forms :mod:`lowrank.book.plain_maths` typesets.

Rows are read through their attributes ``paper``, ``kind``, ``verdict``, ``statement``,
``qualifier``, ``scale``, ``key`` and ``effects`` (:class:`lowrank.experiments.synthesis.Row`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..theory.representation import head_size_threshold
from .verdicts import (CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, NEGLIGIBLE, NOT_JUDGED, NOT_TESTED,
                       PRETRAINED, PROOF_CHECK, REPRODUCED, SIMULATION, TRAINING, VERDICTS, WEAKER, Paper)

__all__ = ["THRESHOLD_KEY", "CAUSAL_THRESHOLD_KEY", "DECOUPLE_KEY", "Answer", "paper_answer",
           "practitioner_answer", "gist", "scale_phrase", "join_values"]

# The claims the practitioner's threshold rests on (chapter 02): the head-size threshold of one head,
# and the book's own causal one.
THRESHOLD_KEY = "head-size-threshold"
CAUSAL_THRESHOLD_KEY = "causal-threshold"
# The training claim that answers the practitioner's question (decouple the head size from d/h?),
# whose measured effect the full practitioner's answer quotes once it is decided.
DECOUPLE_KEY = "bhojanapalli-fixed-heads-training"

THEORY_KINDS = (PROOF_CHECK, SIMULATION)
EVIDENCE_KINDS = (TRAINING, PRETRAINED)
ORDER = (*VERDICTS, NOT_JUDGED)

_NOUN = {PROOF_CHECK: ("proof check", "proof checks"), SIMULATION: ("simulation", "simulations"),
         TRAINING: ("training claim", "training claims"),
         PRETRAINED: ("claim on a pretrained model", "claims on pretrained models")}
# What a count of claims "is": "6 proof checks reproduced", "1 simulation true only under stated conditions".
_WORD = {REPRODUCED: "reproduced", CORRECTED: "reproduced with a correction", WEAKER: "reproduced in a weaker form",
         CONDITIONAL: "true only under stated conditions", NEGLIGIBLE: "with no effect beyond the margin",
         INCONCLUSIVE: "inconclusive", CONTRADICTED: "contradicted", NOT_TESTED: "not tested",
         NOT_JUDGED: "not judged yet"}
_SCALE = {"smoke": "smoke-test runs", "default": "the book's default runs", "long": "the long CPU runs",
          "paper": "paper-scale runs", "custom": "runs with custom parameters"}

# An answer quotes this many distinct reasons for its inconclusive claims; the rows state the others.
MAX_REASONS = 2

_HOLDS = {REPRODUCED, CORRECTED}
_QUALIFIED = {WEAKER, CONDITIONAL}
_OPEN = {INCONCLUSIVE, NOT_JUDGED}


@dataclass(frozen=True)
class Answer:
    """A paper's answer: ``lead`` (the paper's name, the subject of the first sentence), ``answer``
    (the rest of that sentence: the thesis, and whether it holds in theory and in trained models),
    then ``details``: what qualifies or contradicts it, what stays open (how much of it) and why;
    ``inline``: the details follow in the answer's own paragraph, not after every answer."""
    lead: str
    answer: str
    details: tuple[str, ...] = ()
    inline: bool = False  # the details belong in the answer's own paragraph (an abstract's)

    @property
    def sentences(self) -> tuple[str, ...]:
        return (self.answer, *self.details)

    @property
    def text(self) -> str:
        return " ".join((self.lead, *self.sentences)).strip()


def _verdict(r) -> str:
    return r.verdict if r.verdict in VERDICTS else NOT_JUDGED


def join_values(values: Iterable) -> str:
    """'512 and 4096', '8, 16 and 32'; 'none' for no value."""
    return _join([str(v) for v in values]) or "none"


def _join(parts: Sequence[str], last: str = "and") -> str:
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + f" {last} " + parts[-1]


def _count(n: int, kind: str) -> str:
    one, many = _NOUN.get(kind, ("claim", "claims"))
    return f"{n} {one if n == 1 else many}"


def gist(rows: Iterable) -> str:
    """What a group of claims amounts to, as a predicate of "it" (the paper's thesis): "holds",
    "holds with qualifications", "holds only in part", "is contradicted", "shows no effect larger
    than the registered margins", or "is not decided" (nothing decided yet); with "where decided
    (k of n claims)" when some of the group are still open."""
    rows = [r for r in rows if _verdict(r) != NOT_TESTED]
    decided = [r for r in rows if _verdict(r) not in _OPEN]
    verdicts = {_verdict(r) for r in decided}
    if not verdicts:
        return "is not decided"
    if verdicts <= _HOLDS:
        base = "holds"
    elif verdicts <= _HOLDS | _QUALIFIED:
        base = "holds with qualifications"
    elif verdicts == {CONTRADICTED}:
        base = "is contradicted"
    elif verdicts == {NEGLIGIBLE}:
        base = "shows no effect larger than the registered margins"
    else:
        base = "holds only in part"
    if len(decided) < len(rows):
        base += f" where decided ({len(decided)} of {_count(len(rows), '')})"
    return base


def _said(qualifier: str) -> str:
    """A qualifier inside a sentence: without the full stop it may end with."""
    return qualifier.strip().rstrip(".")


def _quoted(rows: Iterable) -> str:
    return _join([f"“{r.statement.rstrip('.')}”" for r in rows])


def scale_phrase(rows: Iterable) -> str:
    """'the long CPU runs' (and '... and the book's default runs'): the scales the rows were judged at."""
    scales = [_SCALE.get(s, f"{s} runs") for s in dict.fromkeys(r.scale for r in rows if r.scale in _SCALE
                                                                 or r.scale not in ("", "none"))]
    return _join(scales) if scales else "the book's runs"


def _named(rows: list, *, brief: bool = False) -> list[str]:
    """Sentences naming what qualifies the decided claims: corrections, weaker forms, conditions,
    contradicted theory, and what the training and pretrained claims came to, quoted (``brief``:
    those counted, for the landing page, whose first screen must hold both papers' answers)."""
    out = []
    by = {v: [r for r in rows if _verdict(r) == v] for v in ORDER}
    if by[CORRECTED]:
        out.append(f"Sharpened: {'; '.join(_said(r.qualifier) for r in by[CORRECTED])}.")
    if by[WEAKER]:
        out.append(f"Only a weaker form holds of {_quoted(by[WEAKER])}: "
                   f"{'; '.join(_said(r.qualifier) for r in by[WEAKER])}.")
    if by[CONDITIONAL]:
        out.append(f"True only under conditions the claim did not state: "
                   f"{'; '.join(_said(r.qualifier) for r in by[CONDITIONAL])}.")
    decided = [r for r in rows if r.kind in EVIDENCE_KINDS and _verdict(r) in (REPRODUCED, NEGLIGIBLE, CONTRADICTED)]
    theory_against = [r for r in by[CONTRADICTED] if r.kind not in EVIDENCE_KINDS]
    if brief and decided:
        counts = Counter(_verdict(r) for r in decided)
        against = f"Contradicted in theory or simulation: {_quoted(theory_against)}. " if theory_against else ""
        out.append(f"{against}In trained models, of {_count(len(decided), '')} decided, "
                   + _join([f"{counts[v]} {_WORD[v]}" for v in ORDER if counts[v]])
                   + "; the verdict table names them.")
        return out
    held = [r for r in by[REPRODUCED] if r.kind in EVIDENCE_KINDS]
    if held:
        out.append(f"Reproduced in training or pretrained models: {_quoted(held)}.")
    if by[NEGLIGIBLE]:
        out.append(f"No effect larger than the registered margin at this scale: {_quoted(by[NEGLIGIBLE])}.")
    if by[CONTRADICTED]:
        out.append(f"Contradicted: {_quoted(by[CONTRADICTED])}.")
    return out


def _open(rows: list) -> str:
    """What stays open, how much of it and why: the inconclusive claims with the reasons their rows
    give, the claims not judged yet, and those not tested."""
    inconclusive = [r for r in rows if _verdict(r) == INCONCLUSIVE]
    missing = [r for r in rows if _verdict(r) == NOT_JUDGED]
    untested = [r for r in rows if _verdict(r) == NOT_TESTED]
    parts = []
    if inconclusive:
        reasons = Counter(_said(r.qualifier) for r in inconclusive if r.qualifier.strip())
        shown = [f"“{reason}”" + (f" ({k} claims)" if k > 1 and len(reasons) > 1 else "")
                 for reason, k in reasons.most_common(MAX_REASONS)]
        if len(reasons) > MAX_REASONS:
            shown.append("for the reasons their rows state")
        what = _join([_count(k, kind) for kind, k in Counter(r.kind for r in inconclusive).items()])
        parts.append(f"{what}, inconclusive at the power of the book's runs"
                     + (f" because {_join(shown, 'or')}" if shown else ""))
    if missing:
        chapters = sorted({str(getattr(r, "chapter", "")) for r in missing} - {""})
        which = (f"chapter {chapters[0]} has" if len(chapters) == 1 else f"chapters {_join(chapters)} have") \
            if chapters else "their chapters have"
        parts.append(f"{_count(len(missing), '')} not judged yet, because {which} not produced "
                     f"{'its' if len(missing) == 1 else 'their'} evidence in this build")
    if untested:
        parts.append(f"{_count(len(untested), '')} not tested, each with what testing it would take")
    if not parts:
        return "Nothing stays open: every claim is decided."
    return "Open: " + "; ".join(parts) + "."


def paper_answer(rows: Iterable, paper: Paper, *, brief: bool = False) -> Answer:
    """The paper's answer: one sentence with its thesis, what holds in theory and what the training
    and pretrained evidence says (with its scale), then the corrections, conditions and
    contradictions, then what stays open and why."""
    mine = [r for r in rows if r.paper == paper.name and r.statement != "(no claim collected)"]
    if not mine:
        return Answer(paper.name, "make no claim the book lists.")
    theory = [r for r in mine if r.kind in THEORY_KINDS and _verdict(r) != NOT_TESTED]
    evidence = [r for r in mine if r.kind in EVIDENCE_KINDS and _verdict(r) != NOT_TESTED]
    clauses = []
    if theory:
        kinds = {r.kind for r in theory}
        where = "in simulation" if kinds == {SIMULATION} else "in theory" if kinds == {PROOF_CHECK} \
            else "in theory and simulation"
        clauses.append(f"{where} this {gist(theory)}")
    if evidence:
        clauses.append(f"in trained models, at the scale of {scale_phrase(evidence)}, it {gist(evidence)}")
    if not clauses:
        clauses.append("the book tests none of its claims")
    answer = (f"argue that {paper.thesis}: " if paper.thesis else "make claims of which, ") + "; ".join(clauses) + "."
    # the counts by verdict are the table's and the chart's; the words say what they are about
    details = (*_named([*theory, *evidence], brief=brief), _open(mine))
    return Answer(paper.name, answer, details)


def _values(ns: Sequence[int], causal: bool = False) -> str:
    return _join([f"{head_size_threshold(int(n), causal=causal)} at n = {int(n)}" for n in ns])


def practitioner_answer(rows: Iterable, ns: Sequence[int], *, brief: bool = False,
                        quote_decouple: bool = True) -> tuple[str, ...]:
    """For someone choosing ``head_dim``: the head size a head needs to express every pattern over
    n tokens, at each n of ``ns`` (:func:`lowrank.theory.representation.head_size_threshold`), as far
    as the threshold claims hold; then what the training claims do and do not support, and
    (``quote_decouple``, when no abstract's sentences say it first) the decoupling row's effect."""
    rows = [r for r in rows if r.statement != "(no claim collected)"]
    by_key = {r.key: r for r in rows if r.key}
    out = []
    bi, causal = by_key.get(THRESHOLD_KEY), by_key.get(CAUSAL_THRESHOLD_KEY)
    if bi is not None and _verdict(bi) in _HOLDS and ns:
        text = (f"A floor for `head_dim`: one head can express every attention pattern over n tokens only when its "
                f"size is at least n - 1, which is {_values(ns)}")
        if causal is not None and _verdict(causal) in _HOLDS:
            text += f"; a causal head needs floor(n/2), {_values(ns, causal=True)}"
        out.append(text + ". A head below that size cannot express every dense pattern, whatever it is trained on.")
    elif bi is not None:
        out.append(f"A floor for `head_dim`: the head-size threshold claim is {_WORD[_verdict(bi)]} in this build, "
                   "so the book states no threshold.")
    training = [r for r in rows if r.kind == TRAINING and _verdict(r) != NOT_TESTED]
    if not training:
        out.append("The book ran no training experiment, so it says nothing about what a larger head buys in "
                   "training.")
        return tuple(out)
    decided = [r for r in training if _verdict(r) not in _OPEN]
    where = scale_phrase(training)
    if not decided:
        out.append(f"The training evidence, at the scale of {where}, does not yet support either choice: none of "
                   f"its {_count(len(training), TRAINING)} is decided, so whether a head larger than d/h pays off "
                   "in training is open at this scale.")
        return tuple(out)
    by = {v: [r for r in decided if _verdict(r) == v] for v in ORDER}
    counted = iter([f" of its {_count(len(training), TRAINING)}"])  # said once, after the first count
    named = (lambda group: f"{len(group)}{next(counted, '')}") if brief else _quoted  # noqa: E731
    parts = []
    supported = by[REPRODUCED] + by[CORRECTED] + by[WEAKER] + by[CONDITIONAL]
    if supported:
        parts.append(f"supports {named(supported)}")
    if by[NEGLIGIBLE]:
        parts.append(f"finds no effect larger than the registered margin for {named(by[NEGLIGIBLE])}")
    if by[CONTRADICTED]:
        parts.append(f"contradicts {named(by[CONTRADICTED])}")
    undecided = len(training) - len(decided)
    tail = (f"; {_count(undecided, TRAINING)} {'stays' if undecided == 1 else 'stay'} undecided"
            if undecided else "")
    names = "; the verdict table names them" if brief else ""
    out.append(f"The training evidence, at the scale of {where}, {_join(parts)}{tail}{names}.")
    decouple = by_key.get(DECOUPLE_KEY)
    if not brief and quote_decouple and decouple is not None and decouple in decided and decouple.effects:
        effect = "; ".join(e.text for e in decouple.effects)
        out.append(f"On decoupling the head size from d/h itself, {_WORD[_verdict(decouple)]} at the scale of "
                   f"{scale_phrase([decouple])}, the book measured: {effect}.")
    return tuple(out)
