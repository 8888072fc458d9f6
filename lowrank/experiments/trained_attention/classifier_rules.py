"""Chapter 07's trained classifiers: Min & Li's ViT, IMDB and layer claims at CPU scale, with their rules.

A grid of classifiers (a vision transformer on packaged digit images, a topic classifier on BBC
News) is trained at every head size d_h of a grid, several seeds each, to a validation plateau.
Per data set, the saturation points of accuracy and of the attention rank are grid intervals
(:func:`..shared.equivalence.equivalent_from` on the seeds, widened by a seed bootstrap, as the retrieval
study's), and these rules decide on them. Written and registered before the grid's runs.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..shared.record import Record, value
from ..verdicts import (CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, TRAINING, WEAKER, Claim, Judgement,
                        plain_number, upper_end)

__all__ = ["ACC_FLOOR", "PLATEAU_MARGIN", "MIN_CLASSIFIER_SEEDS", "saturation_record", "layers_record",
           "layers_text", "rule_vit_plateau", "rule_text_plateau", "rule_layers", "CLASSIFIER_CLAIMS",
           "PlateauPoints", "PlateauEvidence", "VitPlateauEvidence", "TextPlateauEvidence", "BlockIntervals",
           "LayersEvidence"]

# The accuracy a reader would accept before reading ranks off a model, per data set at the grid's
# largest head size (seed mean): a small convolution-free ViT on 8 x 8 or 28 x 28 digits reaches
# about 0.95; a bag-of-words baseline already gets about 0.95 on BBC News topics, so a Transformer
# below 0.90 has not learnt the task.
ACC_FLOOR = {"digits": 0.95, "mnist5k": 0.95, "bbcnews": 0.90}
# One point of accuracy, and 0.01 n of rank: the retrieval study's equivalence margin, on the same
# [0, 1] scales, so the two studies judge saturation alike.
PLATEAU_MARGIN = 0.01
# The fewest seeds that give a paired standard error with two degrees of freedom.
MIN_CLASSIFIER_SEEDS = 3


_SATURATION_FIELDS = ("seeds", "acc_top", "a_lo", "a_hi", "r_lo", "r_hi", "gap", "inc", "inc_lo", "inc_hi")


def saturation_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """One data set's evidence as the headline carries it, the fields of ``_SATURATION_FIELDS``.

    (a_lo, a_hi] holds d*_acc and (r_lo, r_hi] d*_rank (hi None when d* is the grid's top); acc_top
    is the seed-mean accuracy at the largest d_h; gap is the one-sided 95 % lower bound of (best
    accuracy - accuracy at d*_rank), paired by seed; inc is the rise of the first block's hardmax
    rank / n over the grid's last doubling of d_h, paired by seed, with its two-sided 95 % t
    interval [inc_lo, inc_hi]; None where a number could not be estimated."""
    return {k: int(p[k]) if k == "seeds" else plain_number(p[k]) for k in _SATURATION_FIELDS}


@dataclass(frozen=True)
class PlateauPoints(Record):
    """One data set's saturation points, the fields of :func:`saturation_record` (NaN where not
    estimated; an upper end None is open, above the grid)."""
    seeds: int
    acc_top: float
    a_lo: float
    a_hi: float | None
    r_lo: float
    r_hi: float | None
    gap: float
    inc: float
    inc_lo: float
    inc_hi: float


@dataclass(frozen=True)
class PlateauEvidence(Record):
    """A plateau rule's evidence: the data set, what of its grid is stored, and its saturation points
    (the values of a :class:`PlateauPoints`; None until every run of the grid is stored)."""
    data: str
    stored: str
    # A field cannot itself be a record: the nested values are taken as they are and typed by points().
    record: Any

    def points(self) -> PlateauPoints | None:
        """The saturation points, typed; None while the grid is incomplete."""
        return PlateauPoints.read(self.record) if self.record else None


@dataclass(frozen=True)
class VitPlateauEvidence(PlateauEvidence):
    """The vision transformers' plateau evidence."""
    PREFIX: ClassVar[str] = "ch07_cls_vit_"
    record: Any = value("ch07_cls_vit")


@dataclass(frozen=True)
class TextPlateauEvidence(PlateauEvidence):
    """The topic classifiers' plateau evidence."""
    PREFIX: ClassVar[str] = "ch07_cls_text_"
    record: Any = value("ch07_cls_text")


@dataclass(frozen=True)
class BlockIntervals(Record):
    """One data set's d*_rank grid interval (lo, hi] per block (hi None above the grid) and its
    seed-mean test accuracy at the largest head size, as :func:`layers_record` writes them."""
    data: str
    seeds: int
    acc_top: float
    intervals: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True)
class LayersEvidence(Record):
    """The layer rule's evidence: what its intervals are, and one :class:`BlockIntervals`'s values per
    data set with a multi-block model."""
    PREFIX: ClassVar[str] = "ch07_cls_"
    layers: tuple[Any, ...]
    layers_what: str

    def blocks(self) -> tuple[BlockIntervals, ...]:
        """The data sets' block intervals, typed."""
        return tuple(BlockIntervals.read(s) for s in self.layers)


def _interval(lo: float, hi: float) -> str:
    return f"({lo:g}, {hi:g}]" if math.isfinite(hi) else f"above {lo:g}"


def _plateau_rule(e: PlateauEvidence, name: str, *, together: bool) -> Judgement:
    """The shared decision: accuracy must be acceptable first; then the rank must saturate inside
    the grid and accuracy must not keep rising past it by more than the margin. ``together``: the
    claim is that both saturate together, so accuracy rising past the rank's saturation contradicts
    it; otherwise (the claim is about the rank) it leaves a weaker statement."""
    data, stored, p = e.data, e.stored, e.points()
    if p is None:
        return Judgement(INCONCLUSIVE, f"{name} on {data}: {stored}", "the grid's runs are not all stored yet")
    floor = ACC_FLOOR.get(data, 1.0)
    r_hi = upper_end(p.r_hi)
    ev = (f"{name} on {data}, {stored}; test accuracy at the largest head size {p.acc_top:.3f} (seed mean, the "
          f"floor {floor:.2f}); d*_acc {_interval(p.a_lo, upper_end(p.a_hi))}, d*_rank (hardmax rank / n of the "
          f"first block) {_interval(p.r_lo, r_hi)}; best accuracy minus accuracy at d*_rank, one-sided 95 % lower "
          f"bound {p.gap:+.4f}; margin {PLATEAU_MARGIN}")
    if p.seeds < MIN_CLASSIFIER_SEEDS:
        return Judgement(INCONCLUSIVE, ev, f"{p.seeds} seeds, fewer than {MIN_CLASSIFIER_SEEDS}: no interval")
    if p.acc_top < floor:
        return Judgement(INCONCLUSIVE, ev, f"the models are not trained well enough to read ranks from: accuracy "
                                           f"{p.acc_top:.3f} below {floor:.2f}")
    if not math.isfinite(r_hi):
        # The rank's saturation is not shown inside the grid: that alone is a failure to show the
        # claim. Evidence against it is a rise over the last doubling of d_h wholly above the margin.
        rise = (f"; rise of the rank / n over the grid's last doubling of d_h {p.inc:+.3f} "
                f"(95 % interval {p.inc_lo:+.3f} to {p.inc_hi:+.3f}, paired by seed)")
        if p.inc_lo > PLATEAU_MARGIN:
            return Judgement(CONTRADICTED, ev + rise)
        half = (p.inc_hi - p.inc_lo) / 2
        return Judgement(INCONCLUSIVE, ev + rise, (
            f"the rank's saturation is not shown inside the grid, and its rise over the last doubling is not shown "
            f"to exceed the margin {PLATEAU_MARGIN}: the smallest rise this grid could detect is "
            f"{PLATEAU_MARGIN + half:.3f} of n"))
    if p.gap > PLATEAU_MARGIN:
        if together:
            return Judgement(CONTRADICTED, ev)
        return Judgement(WEAKER, ev, "the rank saturates in d_h, but accuracy keeps rising past it by more than "
                                     f"{PLATEAU_MARGIN}", "a larger head buys accuracy that the first block's rank "
                                     "does not show")
    return Judgement(REPRODUCED, ev)


def rule_vit_plateau(e: VitPlateauEvidence) -> Judgement:
    """Vision transformers trained to a validation plateau at every head size of the grid, several seeds each, on packaged digit images: inconclusive with fewer than 3 seeds or a test accuracy at the largest head size below the data set's floor (0.95); when the first block's hardmax rank / n does not saturate inside the grid (d*_rank, the smallest d_h within 0.01 of the best one-sided at 95 % over seeds, at the grid's top), contradicted when its rise over the grid's last doubling of d_h (paired by seed) has a 95 % interval wholly above 0.01 and inconclusive otherwise; reproduced in a weaker form (the rank saturates, accuracy does not plateau with it) when the best accuracy minus the accuracy at d*_rank exceeds 0.01 (one-sided 95 % lower bound, paired by seed); reproduced otherwise.

    d* are grid intervals widened by a seed bootstrap, as in the retrieval study.
    """
    return _plateau_rule(e, "vision transformers", together=False)


def rule_text_plateau(e: TextPlateauEvidence) -> Judgement:
    """Topic classifiers on BBC News (the book's analogue of the IMDB experiment) trained to a validation plateau at every head size of the grid, several seeds each: inconclusive with fewer than 3 seeds or a test accuracy at the largest head size below 0.90; when the first block's hardmax rank / n does not saturate inside the grid, contradicted when its rise over the grid's last doubling of d_h (paired by seed) has a 95 % interval wholly above 0.01 and inconclusive otherwise; contradicted when the best accuracy minus the accuracy at d*_rank exceeds 0.01 (one-sided 95 % lower bound, paired by seed: accuracy does not saturate with the rank); reproduced otherwise.

    The vision rule's decision (:func:`rule_vit_plateau`), except that the claim is that both
    saturate together, so accuracy rising past the rank's saturation contradicts it.
    """
    return _plateau_rule(e, "topic classifiers", together=True)


def rule_layers(e: LayersEvidence) -> Judgement:
    """In the trained classifiers with more than one block whose test accuracy at the largest head size reaches its data set's floor (0.95 for digits, 0.90 for BBC News, the plateau rules' floors), d*_rank of every block's hardmax rank / n is a grid interval (seeds bootstrapped): reproduced when the intervals of all blocks share a point (one saturation head size is consistent with every layer) and every block saturates inside the grid; contradicted when two blocks' intervals are disjoint; inconclusive when a block does not saturate inside the grid, or with fewer than 3 seeds, or when no model with two blocks reaches its floor.

    Judged on every data set with a multi-block model that reaches its floor; a contradiction on any
    of them decides. A model below its floor is named and not read.
    """
    records = e.blocks()
    evidence = f"{e.layers_what}: " + (_blocks_text(records) or "no model with two blocks stored yet")
    if not records:
        return Judgement(INCONCLUSIVE, evidence, "no model with two blocks is stored yet")
    open_top, disjoint, read, below = False, False, [], []
    for s in records:
        name, seeds, acc = s.data, s.seeds, s.acc_top
        floor = ACC_FLOOR.get(name, 1.0)
        if acc < floor:
            below.append(f"{name} (accuracy {acc:.3f} below {floor:.2f})")
            continue
        if seeds < MIN_CLASSIFIER_SEEDS:
            return Judgement(INCONCLUSIVE, evidence, f"{name}: {seeds} seeds, fewer than {MIN_CLASSIFIER_SEEDS}")
        read.append(name)
        bounds = [(lo, upper_end(hi)) for lo, hi in s.intervals]
        if any(not math.isfinite(hi) for _, hi in bounds):
            open_top = True
        lo, hi = max(b[0] for b in bounds), min(b[1] for b in bounds)
        if lo >= hi:
            disjoint = True
    if below:
        evidence += f"; not read, trained below the floor: {', '.join(below)}"
    if not read:
        return Judgement(INCONCLUSIVE, evidence, "no model with two blocks is trained well enough to read ranks "
                                                 "from")
    if disjoint:
        return Judgement(CONTRADICTED, evidence)
    if open_top:
        return Judgement(INCONCLUSIVE, evidence, "a block's rank does not saturate inside the grid, so its "
                                                 "saturation point is not measured")
    return Judgement(REPRODUCED, evidence)


def layers_record(name: str, seeds: int, intervals: Sequence[tuple[float, float]], acc_top: float) -> dict[str, Any]:
    """One data set's per-block d*_rank grid intervals [lo, hi] (hi None above the grid), with its
    seed-mean test accuracy at the largest head size, as :func:`rule_layers` reads them."""
    return {"data": str(name), "seeds": int(seeds), "acc_top": float(acc_top),
            "intervals": [[float(lo), plain_number(hi)] for lo, hi in intervals]}


def layers_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The records of :func:`layers_record` as the evidence shows them, one data set after another."""
    return _blocks_text([BlockIntervals.read(s) for s in records])


def _blocks_text(blocks: Sequence[BlockIntervals]) -> str:
    return "; ".join(f"{s.data}: {s.seeds} seeds, accuracy {s.acc_top:.4f}, "
                     + " | ".join(f"({lo:g}, {upper_end(hi):g}]" for lo, hi in s.intervals)
                     for s in blocks)


CLASSIFIER_CLAIMS: tuple[Claim, ...] = (
    Claim("minli-vit-plateau", MIN_LI, "07", "sec-ch07-classifiers",
          "Vision transformers on CIFAR-10, CIFAR-100 and SVHN: the rank of the first block's attention "
          "saturates in d_h, and accuracy plateaus with it", rule_vit_plateau, scale_key="ch07_cls_scale",
          kind=TRAINING, where="Sec. 3 (R25 Reviewers 1, 2, 4)", evidence=VitPlateauEvidence),
    Claim("minli-imdb-plateau", MIN_LI, "07", "sec-ch07-classifiers",
          "On IMDB, attention rank and accuracy saturate together as d_h grows", rule_text_plateau,
          scale_key="ch07_cls_scale", kind=TRAINING, where="ICLR 2026 abstract; R26 Reviewers 2, 4",
          evidence=TextPlateauEvidence),
    Claim("minli-layers", MIN_LI, "07", "sec-ch07-classifiers",
          "Rank saturation in d_h looks the same at different Transformer layers", rule_layers,
          scale_key="ch07_cls_scale", kind=TRAINING, where="Fig. 3 caption (R26 Reviewer 2)",
          evidence=LayersEvidence),
)
