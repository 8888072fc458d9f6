"""Chapter 02's claims and their rules (registered in the rules ledger)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .. import verdicts as _v
from ..shared.record import Record
from .headlines import headline

__all__ = ["CLAIMS", "EXACT_TOL", "MIN_LENGTHS", "COUNTEREXAMPLE_TV", "rule_theorem1", "rule_head_size_threshold",
           "rule_theorem1_counterexample", "rule_causal_threshold", "ConstructionEvidence", "ThresholdEvidence",
           "CounterexampleEvidence", "CausalEvidence"]

# An exact construction in float64: softmax of order-one logits is exact to ~1e-15 per entry at
# the sizes run here (n <= 512); 1e-10 leaves five orders of margin for round-off growth.
EXACT_TOL = 1e-10
# The causal law is only a law if it holds at several lengths, not one or two.
MIN_LENGTHS = 3


@dataclass(frozen=True)
class ConstructionEvidence(Record):
    """The exact construction's largest entrywise error and the largest n it was run at."""
    PREFIX: ClassVar[str] = "ch02_"
    construction_error: float
    construction_nmax: int


@dataclass(frozen=True)
class ThresholdEvidence(Record):
    """The dense-target fits: the vanishing rank's offset from n (NaN where it differs between
    lengths or is not reached), and the certified bounds beside the fitted errors."""
    PREFIX: ClassVar[str] = "ch02_"
    threshold_offset: float
    bound_violations: int
    # NaN where no fit lies below n - 1
    bound_min_below: float
    vanish_list: str
    ns_list: str
    bound_max_below: float
    bound_rows: int


@dataclass(frozen=True)
class CounterexampleEvidence(Record):
    """The smallest total variation of row 2 from Theorem 1's d < n target over the weights drawn."""
    PREFIX: ClassVar[str] = "ch02_"
    counterexample_tv: float


@dataclass(frozen=True)
class CausalEvidence(Record):
    """The causal heads: per length the fitted threshold and the certified bound, and how many lengths agree."""
    PREFIX: ClassVar[str] = "ch02_causal_"
    n_count: int
    match_count: int
    bound_violations: int
    ns: str
    fitted_list: str
    bound_list: str
    # per length n its fitted threshold, {"n": n, "fitted": rank} (None: no head size of the grid fitted it)
    fits: tuple[Any, ...]


def rule_theorem1(e: ConstructionEvidence) -> _v.Judgement:
    """Reproduced if the constructed head reproduces every target to within 1e-10 (float64
    round-off) at head size n and n - 1; contradicted otherwise.

    Evidence: the largest entrywise error over all tested n."""
    err = e.construction_error
    ev = f"max |softmax(logits) - P| = {err:.1e} over n up to {e.construction_nmax}, head sizes n and n - 1 (exact construction)"
    return _v.Judgement(_v.REPRODUCED if err < EXACT_TOL else _v.CONTRADICTED, ev)


def rule_head_size_threshold(e: ThresholdEvidence) -> _v.Judgement:
    """Reproduced in a corrected form if, at every n, the fitted error vanishes exactly at head size
    n - 1, the certified lower bound is positive at every smaller size and never above a fitted
    error; reproduced if it vanishes at n; contradicted if a size below n - 1 reaches a target or
    the bound is violated; inconclusive otherwise.

    The paper's own statement (Theorem 1) sets d_k = d >= n; its head-size discussion reads that
    as 'head size n'. The bound certifies the failure below n - 1 independently of the optimiser."""
    off, viol, bmin = e.threshold_offset, e.bound_violations, e.bound_min_below
    ev = (f"fitted error < tolerance first at r = {e.vanish_list} for n = {e.ns_list}; "
          f"certified TV bound below n - 1 between {bmin:.1e} and {e.bound_max_below:.1e}, "
          f"above the fitted error in {viol} of {e.bound_rows} fits")
    if viol > 0:
        return _v.Judgement(_v.CONTRADICTED, ev + " (a bound above a fit: the bound or the fit is wrong)")
    if _v.is_missing(off):
        return _v.Judgement(_v.INCONCLUSIVE, ev, "the vanishing rank differs between lengths or is not reached",
                            "the sweep resolves one rank step")
    if off < -1:
        return _v.Judgement(_v.CONTRADICTED, ev)
    if off == -1 and bmin > 0:
        return _v.Judgement(_v.CORRECTED, ev,
                            "the exact head-size threshold is n - 1 (row-shift invariance), one below the paper's n",
                            "a sharper statement; below it no head reaches a generic dense P, certified by "
                            "Eckart-Young")
    if off == 0:
        return _v.Judgement(_v.REPRODUCED, ev)
    return _v.Judgement(_v.INCONCLUSIVE, ev, "the fits stop above n - 1 without a certified failure",
                        "the sweep resolves one rank step")


# Theorem 1's d < n example: row 2 of the softmax is (1/2, 1/2) for every W_q, W_k, and the target's
# row 2 is (3/4, 1/4), so the total variation between them is exactly 1/4 at every draw.
COUNTEREXAMPLE_TV = 0.25


def rule_theorem1_counterexample(e: CounterexampleEvidence) -> _v.Judgement:
    """Reproduced if, over every random weight pair drawn, row 2 of the d = 1, n = 2 head stays at
    total variation 1/4 from the paper's target (to within 1e-10), so no weights represent it;
    contradicted if some draw comes closer.

    The example needs d < n: with one input dimension, X cannot have full row rank."""
    tv = e.counterexample_tv
    ev = (f"d = 1, n = 2, target P = [[1/2, 1/2], [3/4, 1/4]] (row convention): the smallest total variation of "
          f"row 2 from the target over the random weight pairs is {tv:.3g}")
    return _v.Judgement(_v.REPRODUCED if tv > COUNTEREXAMPLE_TV - EXACT_TOL else _v.CONTRADICTED, ev)


def rule_causal_threshold(e: CausalEvidence) -> _v.Judgement:
    """Reproduced if, at three or more lengths n, the certified rank bound equals floor(n/2), every
    target is fitted at head size floor(n/2) and no bound exceeds a fitted error; contradicted if
    a bound exceeds a fit or a fit vanishes below floor(n/2); inconclusive otherwise.

    The book's own finding: one causal head of size floor(n/2) represents every lower-triangular
    positive P with a generic row-shift class, half the bidirectional n - 1."""
    k, m, viol = e.n_count, e.match_count, e.bound_violations
    ev = (f"n = {e.ns}: fitted threshold {e.fitted_list}, certified bound "
          f"{e.bound_list}; bound above a fit in {viol} fits")
    if viol > 0 or any(f["fitted"] is not None and f["fitted"] < f["n"] // 2 for f in e.fits):
        return _v.Judgement(_v.CONTRADICTED, ev)
    if k >= MIN_LENGTHS and m == k:
        return _v.Judgement(_v.REPRODUCED, ev)
    return _v.Judgement(_v.INCONCLUSIVE, ev, f"the law was confirmed at {m} of {k} lengths (needs all, and at least "
                        f"{MIN_LENGTHS})", "a fit can miss a rank by the optimiser alone")


# Each rule reads values that headlines.headline computes from the chapter's tables: its measure.
CLAIMS = (
    _v.Claim("theorem1-sufficiency", _v.BHOJANAPALLI, "02", "ch02-theorem1",
             "Theorem 1: with d_k = d >= n, one head represents every positive row-stochastic P on inputs of "
             "full row rank.", rule_theorem1,
             kind=_v.PROOF_CHECK, where="Theorem 1", measure=headline, evidence=ConstructionEvidence),
    _v.Claim("theorem1-counterexample", _v.BHOJANAPALLI, "02", "ch02-theorem1",
             "Theorem 1, second part: if d < n, some X and P cannot be represented by any W_q, W_k.",
             rule_theorem1_counterexample, kind=_v.PROOF_CHECK, where="Theorem 1; Appendix A", measure=headline,
             evidence=CounterexampleEvidence),
    _v.Claim("head-size-threshold", _v.BHOJANAPALLI, "02", "ch02-threshold",
             "A head needs size n to represent an arbitrary dense P on n tokens; below it there is a low-rank "
             "bottleneck.", rule_head_size_threshold,
             kind=_v.SIMULATION, where="Sec. 1 and the reading of Theorem 1", measure=headline,
             evidence=ThresholdEvidence),
    _v.Claim("causal-threshold", _v.BOOK, "02", "ch02-causal",
             "One causal head represents every lower-triangular positive P exactly from head size floor(n/2), "
             "and no smaller head does.", rule_causal_threshold,
             kind=_v.SIMULATION, measure=headline, evidence=CausalEvidence),
)
