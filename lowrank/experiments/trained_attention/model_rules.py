"""The pretrained claims judged on two more models, all-mpnet-base-v2 and SmolLM2-135M-Instruct:
rules fixed (and registered in the rules ledger) before the long-scale measurement they judge.

Each paper claim that chapter 07 judges on all-MiniLM-L6-v2 gets one claim per new model, judged
the way MiniLM's is wherever the model allows it: the logit bound (a proof check: an algebraic
bound that holds for any weights), the hardmax rank against Min & Li's barrier (for the causal
decoder against its causal analogue (n + 1) / 2, since the barrier assumes every query may
attend to every key), and head truncation by measures that can fail (the encoder: neighbour
overlap and similarity correlation, MiniLM's thresholds; the decoder: next-token loss, with its
margin fixed here). Each of these claims names the claim it extends (``model_of``): chapter 08
shows it under that claim and counts the claim once.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ...measure.rank import DEFAULT_TOL
from ..shared.record import Record
from ..verdicts import (BHOJANAPALLI, CONTRADICTED, INCONCLUSIVE, MIN_LI, PRETRAINED, PROOF_CHECK, REPRODUCED,
                        WEAKER, Claim, Judgement, is_missing)
from .rules import BARRIER_MARGIN, CEILING_SHARE, LOG_FACTOR, NEIGHBOUR_MARGIN, SIMILARITY_LEVEL, barrier_class

__all__ = ["LOSS_MARGIN", "MODEL_TITLES", "cut_records", "rule_logit_rank_mpnet",
           "rule_logit_rank_smollm2", "rule_barrier_mpnet", "rule_barrier_smollm2", "rule_truncation_mpnet",
           "rule_truncation_smollm2", "MODEL_CLAIMS", "VERDICT_SHORT", "verdict_key", "LogitBoundEvidence",
           "ModelBarrierEvidence", "CutEvidence", "MpnetLogitEvidence", "SmolLM2LogitEvidence",
           "MpnetBarrierEvidence", "SmolLM2BarrierEvidence", "MpnetCutEvidence", "SmolLM2CutEvidence"]

# The decoder's cut keeps the model when its next-token loss rises by at most 0.02 nats per token
# (one-sided 95 % upper bound of the mean increase, paired by window): 2 % of perplexity, about
# the change from halving a small model's training budget late in training, which a practitioner
# would notice; less is within what a re-run of fine-tuning moves.
LOSS_MARGIN = 0.02
MODEL_TITLES = {"mpnet": "all-mpnet-base-v2", "smollm2": "SmolLM2-135M-Instruct"}


def cut_records(points: Sequence[Mapping[str, int]]) -> list[dict[str, int]]:
    """Per n the grid interval (prev, r] of the smallest rank whose cut keeps the model, as the headline carries it."""
    return [{"n": int(q["n"]), "prev": int(q["prev"]), "r": int(q["r"])} for q in points]


# Each model's values are keyed ch07_pm_<model>_<name>. A model the store does not hold has every
# number NaN (its cut points ""), so its counts are floats here, printed as whole numbers.
@dataclass(frozen=True)
class LogitBoundEvidence(Record):
    """One model's head size and the numerical rank of its logits over the matrices with n > d_h."""
    dh: float
    logit_maps: float
    logit_min: float
    logit_max: float


@dataclass(frozen=True)
class MpnetLogitEvidence(LogitBoundEvidence):
    """all-mpnet-base-v2's logit ranks."""
    PREFIX: ClassVar[str] = "ch07_pm_mpnet_"


@dataclass(frozen=True)
class SmolLM2LogitEvidence(LogitBoundEvidence):
    """SmolLM2-135M-Instruct's logit ranks."""
    PREFIX: ClassVar[str] = "ch07_pm_smollm2_"


@dataclass(frozen=True)
class ModelBarrierEvidence(Record):
    """One model's heads at its longest n against its reference (the barrier, or its causal analogue):
    mean hardmax rank / n and share of heads above it, with their 95 % intervals."""
    n_max: float
    windows: float
    ref: float
    heads_n: float
    head_mean: float
    head_lo: float
    head_hi: float
    above: float
    above_lo: float
    above_hi: float


@dataclass(frozen=True)
class MpnetBarrierEvidence(ModelBarrierEvidence):
    """all-mpnet-base-v2's heads against the barrier."""
    PREFIX: ClassVar[str] = "ch07_pm_mpnet_"


@dataclass(frozen=True)
class SmolLM2BarrierEvidence(ModelBarrierEvidence):
    """SmolLM2-135M-Instruct's heads against the causal analogue."""
    PREFIX: ClassVar[str] = "ch07_pm_smollm2_"


@dataclass(frozen=True)
class CutEvidence(Record):
    """One model's head size and per n the grid interval of the smallest rank whose cut keeps it."""
    dh: float
    # :func:`cut_records`' records, or "" when the model was not measured
    cut_points: Any


@dataclass(frozen=True)
class MpnetCutEvidence(CutEvidence):
    """all-mpnet-base-v2's head truncation."""
    PREFIX: ClassVar[str] = "ch07_pm_mpnet_"


@dataclass(frozen=True)
class SmolLM2CutEvidence(CutEvidence):
    """SmolLM2-135M-Instruct's head truncation."""
    PREFIX: ClassVar[str] = "ch07_pm_smollm2_"


def _logit_bound(e: LogitBoundEvidence, model: str) -> Judgement:
    maps = e.logit_maps
    if is_missing(maps) or not maps:
        return Judgement(INCONCLUSIVE, f"{MODEL_TITLES[model]}: no logit matrix longer than d_h was ranked",
                         "any excess of one rank above d_h, once a sequence longer than d_h is ranked")
    dh, lo, top = e.dh, e.logit_min, e.logit_max
    evidence = (f"{MODEL_TITLES[model]} (d_h = {dh:.0f}): numerical rank of S ({DEFAULT_TOL}) between {lo:.0f} and "
                f"{top:.0f} over {maps:.0f} logit matrices with n > d_h")
    return Judgement(CONTRADICTED if top > dh else REPRODUCED, evidence)


def rule_logit_rank_mpnet(e: MpnetLogitEvidence) -> Judgement:
    """all-mpnet-base-v2: reproduced when no head's logits S (the content part scale Q K^T; the relative position bias is added after it) has numerical rank above d_h = 64 at float64's default tolerance at any n > d_h, contradicted when one does, inconclusive when none was longer than d_h."""
    return _logit_bound(e, "mpnet")


def rule_logit_rank_smollm2(e: SmolLM2LogitEvidence) -> Judgement:
    """SmolLM2-135M-Instruct: reproduced when no query head's logits S = scale Q K^T (after rotary, keys shared by 3 query heads) has numerical rank above d_h = 64 at float64's default tolerance at any n > d_h, contradicted when one does, inconclusive when none was longer than d_h."""
    return _logit_bound(e, "smollm2")


def _barrier(e: ModelBarrierEvidence, model: str, reference: str) -> Judgement:
    heads = e.heads_n
    lo, hi, ref = e.head_lo, e.head_hi, e.ref
    s_lo, s_hi = e.above_lo, e.above_hi
    if is_missing(heads) or heads < 2 or is_missing(lo):
        return Judgement(INCONCLUSIVE, f"{MODEL_TITLES[model]}: fewer than two heads measured",
                         "none: no interval over heads")
    kind = barrier_class(lo - ref, hi - ref, s_lo, s_hi)
    evidence = (f"{MODEL_TITLES[model]} at n = {e.n_max:.0f} ({heads:.0f} heads, {e.windows:.0f} windows "
                f"each): mean hardmax rank {e.head_mean:.2f} n [{lo:.2f}, {hi:.2f}] against {reference} "
                f"{ref:.3f} n; {e.above:.0f} of {heads:.0f} heads above it, share [{s_lo:.2f}, {s_hi:.2f}] ({kind}); "
                f"margin {BARRIER_MARGIN} n, ceiling share {CEILING_SHARE}")
    if kind == "above":
        return Judgement(CONTRADICTED, evidence, f"more than {CEILING_SHARE * 100:g} % of the heads lie above {reference}")
    if kind == "far":
        return Judgement(CONTRADICTED, evidence, f"the heads' mean lies more than {BARRIER_MARGIN} n from {reference}")
    if kind == "at":
        return Judgement(REPRODUCED, evidence)
    if kind == "below":
        return Judgement(WEAKER, evidence, f"{reference} bounds the heads (at most 5 % above it), but they sit far below it")
    return Judgement(INCONCLUSIVE, evidence, f"a shift of the mean by the margin {BARRIER_MARGIN} n or of the share "
                                             f"above by {CEILING_SHARE}")


def rule_barrier_mpnet(e: MpnetBarrierEvidence) -> Judgement:
    """all-mpnet-base-v2, as MiniLM: each head's hardmax rank / n at the longest n (mean over windows, t interval over heads) against 1 - (1 - 1/n)^n with a 0.05 margin and a 5 % ceiling share (Wilson interval): reproduced when the heads sit within the margin with at most 5 % above; contradicted when more than 5 % lie above it or the mean lies outside the margin otherwise; the weaker "the barrier bounds the heads, which sit far below it" when they are far below it with at most 5 % above; otherwise inconclusive."""
    return _barrier(e, "mpnet", "the barrier")


def rule_barrier_smollm2(e: SmolLM2BarrierEvidence) -> Judgement:
    """SmolLM2-135M-Instruct is causal, so Min & Li's barrier does not apply (it assumes every query may attend to every key); its causal analogue (n + 1) / 2 (query i choosing uniformly among keys 1..i) is judged instead, with the barrier's clauses: each head's hardmax rank / n at the longest n against (n + 1) / 2n, a 0.05 margin and a 5 % ceiling share: reproduced when the heads sit within the margin with at most 5 % above; contradicted when more than 5 % lie above it or the mean lies outside the margin otherwise; the weaker "the analogue bounds the heads, which sit far below it" when they are far below it; otherwise inconclusive."""
    return _barrier(e, "smollm2", "the causal analogue (n + 1) / 2")


def _cut(e: CutEvidence, model: str, measure: str) -> Judgement:
    dh = e.dh
    pts = [(int(q["n"]), int(q["prev"]), int(q["r"])) for q in e.cut_points]
    if not pts:
        return Judgement(INCONCLUSIVE, f"{MODEL_TITLES[model]}: no cut measured", "none: no length n was measured")
    evidence = (f"{MODEL_TITLES[model]} (d_h = {dh:.0f}): " + ", ".join(
        f"n = {n}: r_red in ({prev}, {r}] against 2 ln n = {LOG_FACTOR * math.log(n):.1f}" if r < dh else
        f"n = {n}: no rank below d_h keeps the model" for n, prev, r in pts) + f"; {measure}")
    whole = [n for n, _, r in pts if r >= dh]
    if whole:
        return Judgement(CONTRADICTED, evidence, f"at n = {', '.join(map(str, whole))} no rank below d_h = {dh:.0f} "
                                                 "keeps what the model computes")
    if all(prev < LOG_FACTOR * math.log(n) for n, prev, _ in pts):
        return Judgement(REPRODUCED, evidence)
    return Judgement(WEAKER, evidence, "heads can be cut below d_h without changing what the model computes, "
                                       f"but not to near log n (at most {LOG_FACTOR:g} ln n) at every n")


def rule_truncation_mpnet(e: MpnetCutEvidence) -> Judgement:
    """all-mpnet-base-v2, as MiniLM: every head's logit bilinear form cut to rank r is redundant at r when the one-sided 95 % lower bound of the mean top-10 neighbour overlap among held-out BBC News articles is at least 0.9 of the full model's and the pairwise similarities keep a correlation of at least 0.95; r_red(n) is the smallest such grid rank, a grid interval (previous grid rank, r_red]: reproduced when at every n some r below d_h is redundant and the interval reaches 2 ln n or below; the weaker "heads can be cut below d_h, but not to near log n" when some r below d_h is redundant at every n and at some n the interval lies above 2 ln n; contradicted when at some n no r below d_h is redundant; inconclusive without data."""
    return _cut(e, "mpnet", f"neighbour margin {NEIGHBOUR_MARGIN}, similarity correlation {SIMILARITY_LEVEL}")


def rule_truncation_smollm2(e: SmolLM2CutEvidence) -> Judgement:
    """SmolLM2-135M-Instruct: every query head's logits cut to rank r while the model runs (rotary positions leave no single bilinear form) are redundant at r when the one-sided 95 % upper bound of the mean increase of next-token loss on windows of BBC News, paired by window with the full model, is at most 0.02 nats per token; r_red(n) is the smallest such grid rank, a grid interval (previous grid rank, r_red]: reproduced when at every n some r below d_h is redundant and the interval reaches 2 ln n or below; the weaker "heads can be cut below d_h, but not to near log n" when some r below d_h is redundant at every n and at some n the interval lies above 2 ln n; contradicted when at some n no r below d_h is redundant; inconclusive without data."""
    return _cut(e, "smollm2", f"loss margin {LOSS_MARGIN} nats per token")


_SECTION = "sec-ch07-models"
# The verdict keys the chapter glues, per claim: ch07_pm_verdict_<short>_<model>.
VERDICT_SHORT = {"bhojanapalli-trained-logit-rank": "logit", "minli-trained-barrier": "barrier",
                 "minli-truncation": "truncation"}
MODEL_CLAIMS: tuple[Claim, ...] = tuple(
    Claim(f"{parent}-{model}", paper, "07", _SECTION, f"{statement} ({MODEL_TITLES[model]})", rule, kind=kind,
          where=where, model_of=parent, model=MODEL_TITLES[model], scale_key="ch07_pm_scale", evidence=evidence)
    for parent, paper, statement, kind, where, rules in (
        ("bhojanapalli-trained-logit-rank", BHOJANAPALLI,
         "The mechanism: a head's logits have rank at most d_h, also in a trained model", PROOF_CHECK, "Sec. 1",
         {"mpnet": (rule_logit_rank_mpnet, MpnetLogitEvidence),
          "smollm2": (rule_logit_rank_smollm2, SmolLM2LogitEvidence)}),
        ("minli-trained-barrier", MIN_LI, "The barrier n(1-(1-1/n)^n) describes trained attention on real data",
         PRETRAINED, "abstract; Sec. 3.1 (real data)",
         {"mpnet": (rule_barrier_mpnet, MpnetBarrierEvidence),
          "smollm2": (rule_barrier_smollm2, SmolLM2BarrierEvidence)}),
        ("minli-truncation", MIN_LI,
         "Redundancy in a real model: heads cut to a logit rank near log n keep what the model computes", PRETRAINED,
         "abstract (redundancy, model reduction)",
         {"mpnet": (rule_truncation_mpnet, MpnetCutEvidence),
          "smollm2": (rule_truncation_smollm2, SmolLM2CutEvidence)}),
    ) for model, (rule, evidence) in rules.items())


def verdict_key(claim: Claim) -> str:
    """The headline key of a model claim's verdict label."""
    return f"ch07_pm_verdict_{VERDICT_SHORT[claim.model_of]}_{claim.key.rsplit('-', 1)[1]}"
