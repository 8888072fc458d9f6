"""Chapter 07's trained multi-head latent attention: the rules of its two claims.

Small causal language models on lowrank.layers.mla's layer are trained at several latent sizes
kv_latent, several seeds each (:mod:`.latent`). One rule checks the layer's logit-rank bound on
every trained head (a theorem: one head above it contradicts it); the other asks whether the
attention's hardmax rank rises with kv_latent and saturates by Min & Li's increment criterion,
paired by seed. Written and registered before the runs they judge.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..shared.record import Record
from ..verdicts import (BOOK, CONTRADICTED, INCONCLUSIVE, MIN_LI, PROOF_CHECK, REPRODUCED, TRAINING, WEAKER, Claim,
                        Judgement, plain_number)

__all__ = ["MLA_TRAINED_INCREMENT", "MIN_MLA_SEEDS", "LEARNED_NATS", "bound_record", "saturation_record",
           "rule_mla_trained_bound", "rule_mla_trained_saturation", "LATENT_CLAIMS", "MlaBoundPoints",
           "MlaSaturationPoints", "MlaTrainedEvidence", "MlaTrainedBoundEvidence", "MlaTrainedSaturationEvidence"]

# Min & Li's own saturation criterion (their Table 2, as R25 Reviewer 2 quotes it): the rank has
# saturated when its relative increment per doubling falls below about 0.01; chapter 05's MLA rule
# and chapter 06 use the same number.
MLA_TRAINED_INCREMENT = 0.01
# The fewest seeds whose paired differences give a t interval with two degrees of freedom.
MIN_MLA_SEEDS = 3
# A language model whose validation loss is not at least this many nats below the uniform guess
# ln V has not learnt the text's statistics, and its attention is still the initialisation's; one nat
# is about what a unigram model of a small BPE vocabulary gains over the uniform guess.
LEARNED_NATS = 1.0

_BOUND_KEYS = ("heads", "windows", "n", "excess", "at")
_SAT_KEYS = ("seeds", "latent_first", "latent_prev", "latent_last", "rise", "rise_lo", "rise_hi", "increment",
             "increment_lo", "increment_hi", "loss", "uniform")
_SAT_COUNTS = ("seeds", "latent_first", "latent_prev", "latent_last")


def bound_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """The bound's evidence as the headline carries it: heads measured, held-out windows each, their
    length, the largest logit rank minus the bound over heads and windows (ints), and the share of
    heads reaching the bound."""
    return {"heads": int(p["heads"]), "windows": int(p["windows"]), "n": int(p["n"]), "excess": int(p["excess"]),
            "at": plain_number(p["at"])}


def saturation_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """The saturation evidence as the headline carries it: seeds, the grid's first, second-largest and
    largest kv_latent, the paired rise of hardmax rank / n (mean, 95 % t interval), the relative
    increment per doubling over the last step (mean, 95 % t interval), the largest seed-mean
    validation loss over the grid and ln V; None where a number could not be estimated."""
    return {k: int(p[k]) if k in _SAT_COUNTS else plain_number(p[k]) for k in _SAT_KEYS}


@dataclass(frozen=True)
class MlaBoundPoints(Record):
    """The fields of :func:`bound_record` (the share of heads at the bound NaN where not estimated)."""
    heads: int
    windows: int
    n: int
    excess: int
    at: float


@dataclass(frozen=True)
class MlaSaturationPoints(Record):
    """The fields of :func:`saturation_record` (NaN where not estimated)."""
    seeds: int
    latent_first: int
    latent_prev: int
    latent_last: int
    rise: float
    rise_lo: float
    rise_hi: float
    increment: float
    increment_lo: float
    increment_hi: float
    loss: float
    uniform: float


@dataclass(frozen=True)
class MlaTrainedEvidence(Record):
    """The trained MLA models as both rules name them: the corpus, the model's sizes and the grid of
    kv_latent (as text)."""
    PREFIX: ClassVar[str] = "ch07_mla_"
    data: str
    sizes: str
    latents: str


@dataclass(frozen=True)
class MlaTrainedBoundEvidence(MlaTrainedEvidence):
    """The logit-rank bound's evidence: the rank tolerance and a :class:`MlaBoundPoints`'s values
    (None or empty where no head was measured)."""
    tol: str
    # A field cannot itself be a record: the nested values are taken as they are and typed by points().
    bound: Any

    def points(self) -> MlaBoundPoints | None:
        """The bound's evidence, typed; None where no head was measured."""
        return MlaBoundPoints.read(self.bound) if self.bound else None


@dataclass(frozen=True)
class MlaTrainedSaturationEvidence(MlaTrainedEvidence):
    """The saturation evidence: a :class:`MlaSaturationPoints`'s values (None or empty where no run
    is stored)."""
    saturation: Any

    def points(self) -> MlaSaturationPoints | None:
        """The saturation evidence, typed; None where no run is stored."""
        return MlaSaturationPoints.read(self.saturation) if self.saturation else None


def rule_mla_trained_bound(e: MlaTrainedBoundEvidence) -> Judgement:
    """Every head of the language models trained with multi-head latent attention, on held-out windows: contradicted when any head's logit matrix S (before the causal mask, recomputed in float64) has numerical rank at the float64 default tolerance above its layer's bound min(d_h, kv_latent, d, n) + min(rope_dim, n), capped at n; reproduced when none does; inconclusive when no head was measured.

    A theorem of lowrank.layers.mla checked on trained weights: one head above the bound contradicts it.
    """
    p, data = e.points(), e.data
    if p is None or p.heads < 1:
        return Judgement(INCONCLUSIVE, f"at CPU scale, on {data}: no trained head measured",
                         "no head was measured, so no excess could be seen")
    ev = (f"at CPU scale, on {data} ({e.sizes}; kv_latent {e.latents}): "
          f"{p.heads} trained heads, {p.windows} held-out windows of n = {p.n} each; largest "
          f"numerical rank of S ({e.tol}, float64) minus the bound {p.excess:+d}; "
          f"{p.at:.0%} of the heads reach the bound")
    if p.excess > 0:
        return Judgement(CONTRADICTED, ev)
    return Judgement(REPRODUCED, ev)


def rule_mla_trained_saturation(e: MlaTrainedSaturationEvidence) -> Judgement:
    """Language models trained with multi-head latent attention at every kv_latent of the grid, several seeds each: inconclusive with fewer than 3 seeds or when some latent's seed-mean validation loss is not 1 nat below ln V (not trained); with hardmax rank / n of A per run (mean over heads and held-out windows) and differences paired by seed, contradicted when the 95 % t interval of the rise from the smallest to the largest kv_latent lies below 0; inconclusive when it contains 0; else reproduced when the 95 % t interval of the relative increment per doubling over the grid's last step lies below 0.01 (Min & Li's saturation criterion), reproduced in a weaker form (the rank rises but does not saturate inside the grid) when it lies at or above 0.01, inconclusive when it contains 0.01.

    Min & Li say their results are verified in MLA; chapter 05 asks it of random heads, this rule
    of trained ones.
    """
    p, data = e.points(), e.data
    if p is None:
        return Judgement(INCONCLUSIVE, f"at CPU scale, on {data}: no run stored", "no run to judge")
    ev = (f"at CPU scale, on {data} ({e.sizes}; kv_latent {e.latents}, "
          f"{p.seeds} seeds): hardmax rank / n of A, paired by seed; rise from kv_latent "
          f"{p.latent_first} to {p.latent_last} {p.rise:+.4f} (95 % t interval {p.rise_lo:+.4f} "
          f"to {p.rise_hi:+.4f}); relative increment per doubling from {p.latent_prev} to "
          f"{p.latent_last} {p.increment:+.4f} ({p.increment_lo:+.4f} to {p.increment_hi:+.4f}), "
          f"criterion {MLA_TRAINED_INCREMENT}; largest seed-mean validation loss {p.loss:.2f} nats (ln V = "
          f"{p.uniform:.2f})")
    if p.seeds < MIN_MLA_SEEDS or not math.isfinite(p.rise_lo):
        return Judgement(INCONCLUSIVE, ev, f"{p.seeds} seeds, fewer than {MIN_MLA_SEEDS}: no paired interval")
    if p.loss > p.uniform - LEARNED_NATS:
        return Judgement(INCONCLUSIVE, ev, f"the models are not trained: validation loss {p.loss:.2f} is not "
                                           f"{LEARNED_NATS:g} nat below ln V")
    if p.rise_hi < 0:
        return Judgement(CONTRADICTED, ev)
    if p.rise_lo <= 0:
        return Judgement(INCONCLUSIVE, ev, f"a rise of the rank with the latent smaller than the interval's half "
                                           f"width, {(p.rise_hi - p.rise_lo) / 2:.4f} n, is not detectable")
    if p.increment_hi < MLA_TRAINED_INCREMENT:
        return Judgement(REPRODUCED, ev)
    if p.increment_lo >= MLA_TRAINED_INCREMENT:
        return Judgement(WEAKER, ev, f"the rank rises with the latent but still grows by {p.increment:.3f} per "
                                     f"doubling at the grid's end", "no saturation inside the grid")
    return Judgement(INCONCLUSIVE, ev, f"the increment's interval contains {MLA_TRAINED_INCREMENT}: an increment "
                                       f"closer to it than {(p.increment_hi - p.increment_lo) / 2:.4f} is not "
                                       "resolved")


LATENT_CLAIMS: tuple[Claim, ...] = (
    Claim("mla-logit-bound-trained", BOOK, "07", "sec-ch07-mla",
          "In trained MLA models (at CPU scale, on Shakespeare) every head's logits have rank at most "
          "min(d_h, kv_latent) + rope_dim", rule_mla_trained_bound, kind=PROOF_CHECK,
          where="this book (lowrank.layers.mla)", evidence=MlaTrainedBoundEvidence),
    Claim("minli-mla-trained", MIN_LI, "07", "sec-ch07-mla",
          "The results are verified in multi-head latent attention (MLA) as used in DeepSeek-V3: in a trained "
          "model (at CPU scale, on Shakespeare) attention rank rises with the latent size and saturates",
          rule_mla_trained_saturation, kind=TRAINING, where="ICLR 2026 abstract",
          evidence=MlaTrainedSaturationEvidence),
)
