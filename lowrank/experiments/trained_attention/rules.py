"""Chapter 07's claims and their rules, fixed (and registered in the rules ledger) before the outputs they judge.

Each rule reads a typed evidence record (:mod:`..shared.record`) taken from the chapter's headline
values. The grid intervals and plateau counts it reads are produced by :mod:`.reduction` and
:mod:`.truncation`; the decision from those intervals to a verdict (which growth laws fit them,
which task saw what) happens here, so the ledger's fingerprint covers it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...measure.rank import DEFAULT_TOL
from ..shared.record import Record
from ..verdicts import (BHOJANAPALLI, CONTRADICTED, INCONCLUSIVE, MIN_LI, PRETRAINED, PROOF_CHECK, REPRODUCED,
                        TRAINING, WEAKER, Claim, Judgement, is_missing, plain_number, upper_end)

__all__ = ["BARRIER_MARGIN", "CEILING_SHARE", "REDUCTION_MARGIN", "PLATEAU_TOL", "COSINE_LEVEL", "LEVEL",
           "MIN_SEEDS", "MIN_LAW_NS", "EXTENDED_CAP", "MIN_PAIR_NS", "LAWS", "NEIGHBOURS", "NEIGHBOUR_MARGIN", "SIMILARITY_LEVEL",
           "LOG_FACTOR", "point_records", "truncation_records", "law_fit", "barrier_class",
           "rule_mechanism", "rule_trained_barrier", "rule_model_reduction", "rule_truncation", "CLAIMS",
           "MechanismEvidence", "BarrierEvidence", "ReductionEvidence", "TruncationEvidence"]

# Barrier: a population of trained heads "sits at" the barrier when its mean hardmax rank / n is
# within this pre-stated equivalence margin of 1 - (1 - 1/n)^n (5 % of n, about a twelfth of the barrier).
BARRIER_MARGIN = 0.05
# Barrier as a ceiling: at most this share of heads may exceed it (one head in twenty, the 5 % level).
CEILING_SHARE = 0.05
# Model reduction: pre-stated equivalence margin, one point of accuracy, and the same 0.01 of n for
# rank / n, so both saturation points use one criterion on one [0, 1] scale.
REDUCTION_MARGIN = 0.01
# Plateau of a retrieval run: the training loss fell by less than 0.01 nats over the last quarter of
# its steps (lowrank.tasks.retrieval.plateau_change); a run that does not get there by its cap is not used.
PLATEAU_TOL = 0.01
# The step cap of the second training of a run that reached the 8,000-step cap without its plateau
# (41 of 481 runs, all at small head sizes near d*): four times the first cap, the same seed.
EXTENDED_CAP = 32000
# Truncation: an embedding "barely moves" at cosine 0.99 to the full model's (descriptive, no verdict).
COSINE_LEVEL = 0.99
# Level of every interval the rules read.
LEVEL = 0.95
# A length n enters the model-reduction rule with at least 3 seeds whose runs met the plateau at
# every head size of the grid: the fewest that give a paired standard error with two degrees of freedom.
MIN_SEEDS = 3
# A growth law of two parameters is only tested by three or more lengths.
MIN_LAW_NS = 3
# The second task must show its accuracy and rank saturation points at two lengths at least.
MIN_PAIR_NS = 2
# The three growth laws of chapter 06, each linear in its two parameters after a transform:
# (transform of d*, feature of n); "a + b ln n" is d* = a + b ln n itself.
LAWS = ("a + b ln n", "c n^alpha", "c (ln n)^beta")
# Head truncation: neighbours compared per document (its top 10 among the held-out articles).
NEIGHBOURS = 10
# "Agrees with the full model": at most one of its 10 nearest neighbours changes on average
# (one-sided 95 % lower bound of the mean top-10 overlap at least 0.9) ...
NEIGHBOUR_MARGIN = 0.1
# ... and the pairwise similarities keep a Pearson correlation of at least 0.95 with the full model's.
SIMILARITY_LEVEL = 0.95
# "Near log n": the smallest redundant rank's grid interval reaches down to 2 ln n or below.
LOG_FACTOR = 2.0


def point_records(rows: Sequence[Mapping[str, float]]) -> list[dict[str, Any]]:
    """The per-n grid intervals of one task as the headline carries them: one record per judged n.

    (a_lo, a_hi] holds d*_acc, (r_lo, r_hi] d*_rank (hi None when d* is the top of the grid), gap is
    the one-sided 95 % lower bound of (best accuracy - accuracy at d*_rank), paired by seed (None when
    not estimated). Empty: no n judged.
    """
    return [{"n": int(r["n"]), "a_lo": float(r["a_lo"]), "a_hi": plain_number(r["a_hi"]), "r_lo": float(r["r_lo"]),
             "r_hi": plain_number(r["r_hi"]), "gap": plain_number(r["gap"])} for r in rows]


def _points(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`point_records`' records as the rule compares them: an open end is inf, a gap not estimated NaN."""
    return [{**r, "a_hi": upper_end(r["a_hi"]), "r_hi": upper_end(r["r_hi"]),
             "gap": math.nan if r["gap"] is None else float(r["gap"])} for r in records]


def truncation_records(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, int]]:
    """Per n the grid interval (prev, r] of the smallest redundant logit rank r_red, as the headline carries it."""
    return [{"n": int(r["n"]), "prev": int(r["prev"]), "r": int(r["r"])} for r in rows]


def law_fit(ns: Sequence[int], lo: Sequence[float], hi: Sequence[float], law: str,
            predict: int | None = None) -> dict[str, Any]:
    """Does some parameter value of ``law`` put d*(n) inside every interval (lo, hi]?

    Each law is linear in two parameters (p, q) after a transform T of d*: T(d*) = p + q x(n), with
    T = identity, x = ln n for "a + b ln n"; T = ln, x = ln n for "c n^alpha"; T = ln, x = ln ln n for
    "c (ln n)^beta". Fitting every interval is a linear feasibility problem; a law is excluded only
    when it has no solution. Returns {"fits", "q_lo", "q_hi" (range of b, alpha or beta over the
    solutions), "pred_lo", "pred_hi" (range of d*(predict) over them)}; ranges are NaN when it does not fit.
    """
    from scipy.optimize import linprog
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    log_t = law != "a + b ln n"
    feat = (lambda n: math.log(math.log(n))) if law == "c (ln n)^beta" else (lambda n: math.log(n))  # noqa: E731
    T = (lambda v: math.log(v)) if log_t else (lambda v: v)  # noqa: E731
    A, b = [], []
    eps = 1e-9  # the lower end is open: d* > lo
    for n, l, u in zip(ns, lo, hi):
        x = feat(n)
        if l > 0 or not log_t:
            A.append([-1.0, -x]); b.append(-(T(l) + eps) if l > 0 or not log_t else 0.0)  # noqa: E702
        if math.isfinite(u):
            A.append([1.0, x]); b.append(T(u))  # noqa: E702
    nan = float("nan")
    out = {"fits": False, "q_lo": nan, "q_hi": nan, "pred_lo": nan, "pred_hi": nan}
    if not A:
        return {**out, "fits": True, "q_lo": -math.inf, "q_hi": math.inf, "pred_lo": 0.0, "pred_hi": math.inf}
    bounds = [(None, None), (None, None)]

    def extreme(c):
        r = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        if r.status == 2:
            return None
        if r.status == 3:
            return math.inf
        return float(r.fun)

    if extreme([0.0, 0.0]) is None:
        return out
    q_lo, q_hi = extreme([0.0, 1.0]), extreme([0.0, -1.0])
    out.update(fits=True, q_lo=-math.inf if q_lo == math.inf else q_lo, q_hi=math.inf if q_hi == math.inf else -q_hi)
    if predict is not None:
        xp = feat(predict)
        p_lo, p_hi = extreme([1.0, xp]), extreme([-1.0, -xp])
        p_lo = -math.inf if p_lo == math.inf else p_lo
        p_hi = math.inf if p_hi == math.inf else -p_hi
        back = (lambda v: math.exp(v) if math.isfinite(v) else (0.0 if v < 0 else math.inf)) if log_t else \
            (lambda v: v)  # noqa: E731
        out.update(pred_lo=back(p_lo), pred_hi=back(p_hi))
    return out


@dataclass(frozen=True)
class MechanismEvidence(Record):
    """MiniLM's logit ranks at n > d_h and the retrieval runs' largest logit rank against min(d_h, n)."""
    PREFIX: ClassVar[str] = "ch07_"
    mini_dh: int
    logit_maps: int
    # whole numbers, NaN when no sequence was longer than d_h
    logit_min: float
    logit_max: float
    ret_bounded: int
    ret_cases: int


def rule_mechanism(e: MechanismEvidence) -> Judgement:
    """Reproduced when no logit matrix of a trained head (MiniLM at every n > d_h, the retrieval task's head in every run) has numerical rank above d_h at the float64 default tolerance, contradicted when one does; inconclusive when no matrix was longer than d_h.

    The float64 default max(m, n) eps is the finest tolerance the book uses, so a rank at most d_h
    there is at most d_h at every coarser one. The claim is rank <= d_h; equality is reported, not required.
    """
    dh, maps, lo, top = e.mini_dh, e.logit_maps, e.logit_min, e.logit_max
    bounded, cases = e.ret_bounded, e.ret_cases
    evidence = (f"all-MiniLM-L6-v2 (d_h = {dh}): numerical rank of S ({DEFAULT_TOL}) between {lo:.0f} and {top:.0f} "
                f"over {maps} logit matrices with n > d_h; retrieval task: the largest rank of S over each "
                f"run's held-out sequences <= min(d_h, n) in {bounded} of {cases} runs")
    if not maps and not cases:
        return Judgement(INCONCLUSIVE, "no logit matrix longer than d_h was ranked",
                         "any excess of one rank above d_h, once a sequence longer than d_h is ranked")
    if (maps and top > dh) or bounded < cases:
        return Judgement(CONTRADICTED, evidence)
    return Judgement(REPRODUCED, evidence)


def barrier_class(lo: float, hi: float, share_lo: float, share_hi: float) -> str:
    """One population of trained heads against the barrier, from the 95 % interval (lo, hi) of its
    mean excess hardmax rank / n - barrier / n and that of the share of heads above the barrier:
    "at" (within the margin, at most 5 % above), "below" (far below, at most 5 % above), "above"
    (more than 5 % above: the barrier is no ceiling), "far" (far from it, otherwise) or "unclear"."""
    if any(is_missing(v) for v in (lo, hi, share_lo, share_hi)):
        return "unclear"
    ceiling, broken = share_hi <= CEILING_SHARE, share_lo > CEILING_SHARE
    if broken:
        return "above"
    if -BARRIER_MARGIN <= lo and hi <= BARRIER_MARGIN and ceiling:
        return "at"
    if hi < -BARRIER_MARGIN and ceiling:
        return "below"
    if hi < -BARRIER_MARGIN or lo > BARRIER_MARGIN:
        return "far"
    return "unclear"


@dataclass(frozen=True)
class BarrierEvidence(Record):
    """MiniLM's heads and the widest retrieval heads against the barrier: means and shares above it, with
    their 95 % intervals (NaN where too few heads or runs give one)."""
    PREFIX: ClassVar[str] = "ch07_"
    n_max: int
    barrier: float
    head_mean: float
    head_mean_lo: float
    head_mean_hi: float
    heads: int
    heads_above: int
    heads_above_lo: float
    heads_above_hi: float
    windows_nmax: int
    bar_ret_runs: int
    bar_ret_above: int
    bar_ret_mean: float
    bar_ret_lo: float
    bar_ret_hi: float
    bar_ret_share_lo: float
    bar_ret_share_hi: float
    bar_ret_dh: int
    bar_ret_ns: str


def rule_trained_barrier(e: BarrierEvidence) -> Judgement:
    """Judged on every trained model the book holds and can measure (all-MiniLM-L6-v2's heads at its longest n; the retrieval heads of the widest head size, every n, plateau runs; chapter 04's language models are named but not measurable, their store keeping metrics and no weights), each by its hardmax rank / n against 1 - (1 - 1/n)^n with a 0.05 margin and a 5 % ceiling share: reproduced when every measured model sits within the margin with at most 5 % of heads above; contradicted when in any model more than 5 % of heads lie above it (lower end of the Wilson interval) or a model lies outside the margin otherwise; the weaker "the barrier bounds trained heads, which sit far below it" when every model is at or far below it with at most 5 % above; otherwise inconclusive.

    MiniLM: each head's hardmax rank / n averaged over its windows, t interval over heads. Retrieval:
    one value per run, t interval over runs. Shares above the barrier: Wilson intervals.
    """
    n, b = e.n_max, e.barrier
    m, lo, hi = e.head_mean, e.head_mean_lo, e.head_mean_hi
    heads, above = e.heads, e.heads_above
    s_lo, s_hi = e.heads_above_lo, e.heads_above_hi
    windows = e.windows_nmax
    runs, r_above = e.bar_ret_runs, e.bar_ret_above
    r_m, r_lo, r_hi = e.bar_ret_mean, e.bar_ret_lo, e.bar_ret_hi
    rs_lo, rs_hi = e.bar_ret_share_lo, e.bar_ret_share_hi
    models = {}
    parts = []
    if heads >= 2 and not is_missing(lo):
        models["all-MiniLM-L6-v2"] = barrier_class(lo - b, hi - b, s_lo, s_hi)
        parts.append(f"all-MiniLM-L6-v2 at n = {n} ({heads} heads, {windows} windows each): mean hardmax rank "
                     f"{m:.2f} n [{lo:.2f}, {hi:.2f}] against the barrier {b:.3f} n; {above} of {heads} heads "
                     f"above it, share [{s_lo:.2f}, {s_hi:.2f}] ({models['all-MiniLM-L6-v2']})")
    if runs >= 2 and not is_missing(r_lo):
        models["retrieval heads"] = barrier_class(r_lo, r_hi, rs_lo, rs_hi)
        spread = (f"{r_m:+.2f} [{r_lo:+.2f}, {r_hi:+.2f}]" if r_hi > r_lo else
                  f"{r_m:+.2f} in every run (no spread over runs)")
        parts.append(f"retrieval heads of d_h = {e.bar_ret_dh} at n = {e.bar_ret_ns} "
                     f"({runs} plateau runs): hardmax rank / n minus the barrier {spread}; {r_above} of {runs} "
                     f"above it, share [{rs_lo:.2f}, {rs_hi:.2f}] ({models['retrieval heads']})")
    else:
        parts.append(f"retrieval heads: {runs} plateau run(s) of the widest head size stored, too few for an interval")
    parts.append("chapter 04's language models: not measured (its store keeps metrics, not weights)")
    evidence = "; ".join(parts) + f"; measure hardmax rank, margin {BARRIER_MARGIN} n, ceiling share {CEILING_SHARE}"
    if not models:
        return Judgement(INCONCLUSIVE, evidence, "none: no model has two heads or runs to form an interval")
    kinds = set(models.values())
    if kinds & {"above", "far"}:
        return Judgement(CONTRADICTED, evidence)
    if kinds == {"at"}:
        return Judgement(REPRODUCED, evidence)
    if kinds <= {"at", "below"}:
        return Judgement(WEAKER, evidence, "the barrier bounds trained heads (at most 5 % above it), "
                                           "but they sit far below it")
    return Judgement(INCONCLUSIVE, evidence,
                     f"a shift of a model's mean by the margin {BARRIER_MARGIN} n or of its share above the "
                     f"barrier by {CEILING_SHARE}")


def _side(p: Mapping[str, float]) -> str:
    """Accuracy's saturation point against rank's at one n: "later" when its grid interval lies
    wholly above d*_rank's, otherwise "not later"."""
    return "later" if p["a_lo"] >= p["r_hi"] else "not later"


@dataclass(frozen=True)
class ReductionEvidence(Record):
    """Both retrieval tasks' grid intervals of d*_acc and d*_rank (:func:`point_records`' records), their
    run counts, the step caps and how closely accuracy tracks hardmax rank / n."""
    PREFIX: ClassVar[str] = "ch07_"
    red_single: tuple[Any, ...]
    red_pair: tuple[Any, ...]
    ret_cap: int
    ret_ext_cap: int
    red_single_runs: int
    red_single_grid: int
    red_single_plateau: int
    red_pair_runs: int
    red_pair_grid: int
    red_pair_plateau: int
    ret_corr: float
    ret_pair_corr: float
    ret_extended: int


def rule_model_reduction(e: ReductionEvidence) -> Judgement:
    """Judged on plateau runs only, on two retrieval tasks, every run that reached the 8,000-step cap without its plateau trained again from the same seed with a cap of 32,000 steps (a run still at that cap is reported and left out): at each n where every seed (at least 3) met the plateau at every d_h of the grid, d*_acc (smallest d_h whose accuracy is within 0.01 of the best, one-sided 95 % over seeds) and d*_rank (the same for hardmax rank / n) are grid intervals widened by a seed bootstrap; contradicted when on either task accuracy saturates wholly after rank at some n with the accuracy at d*_rank more than 0.01 below the best (one-sided 95 %); otherwise, with accuracy not later than rank at every judged n of both tasks (3 n at least on the one-key task, 2 on the two-key task), the growth of d*_acc on the one-key task decides among a + b ln n, c n^alpha and c (ln n)^beta, a law excluded only when no parameter value fits every interval: reproduced when a + b ln n fits and c n^alpha does not, the weaker "larger heads are redundant beyond rank saturation, but d*_acc does not grow like ln n" when a + b ln n does not fit; inconclusive otherwise.

    The verdict rests on the one-key task for the growth law (its grid is the complete one) and on
    both tasks for "accuracy saturates where rank does": on the one-key task a correct answer makes A
    a permutation, so accuracy and hardmax rank / n are nearly one quantity there; on the two-key
    task (a key is a pair, partial matches score) they can come apart.
    """
    tasks = {"one-key": _points(e.red_single), "two-key": _points(e.red_pair)}
    cap, ext = e.ret_cap, e.ret_ext_cap
    stored = (f"one-key task: {e.red_single_runs} of {e.red_single_grid} runs stored, "
              f"{e.red_single_plateau} met the plateau; two-key task: {e.red_pair_runs} "
              f"of {e.red_pair_grid} stored, {e.red_pair_plateau} met the plateau")
    shown = []
    for name, pts in tasks.items():
        shown.append(f"{name}: " + (", ".join(
            f"n = {p['n']}: d*_acc in ({p['a_lo']:g}, {p['a_hi']:g}], d*_rank in ({p['r_lo']:g}, {p['r_hi']:g}]"
            for p in pts) or "no n with a complete grid of plateau runs"))
    single = tasks["one-key"]
    ns = [p["n"] for p in single]
    fits = {law: law_fit(ns, [p["a_lo"] for p in single], [p["a_hi"] for p in single], law) for law in LAWS}
    law_text = "; ".join(f"{law}: " + (f"fits (parameter in [{f['q_lo']:.2f}, {f['q_hi']:.2f}])" if f["fits"]
                                       else "excluded") for law, f in fits.items())
    same = (f"on the one-key task accuracy and hardmax rank / n are nearly one quantity (correlation "
            f"{e.ret_corr:.3f} over its stored runs; two-key task {e.ret_pair_corr:.3f}), "
            f"so there the saturation comparison is largely built in")
    stored += (f"; runs capped at {cap:,} steps trained again to {ext:,} ({e.ret_extended} stored)"
               if ext else "; no capped run trained again")
    evidence = (f"{stored}; margin {REDUCTION_MARGIN}; " + "; ".join(shown)
                + (f"; growth of d*_acc over {len(ns)} n: {law_text}" if len(ns) >= MIN_LAW_NS else "") + f"; {same}")
    if ext != EXTENDED_CAP:
        return Judgement(INCONCLUSIVE, evidence, f"the capped runs were not trained again to the registered cap of "
                                                 f"{EXTENDED_CAP:,} steps", same)
    later = [(name, p) for name, pts in tasks.items() for p in pts if _side(p) == "later"]
    if any(p["gap"] > REDUCTION_MARGIN for _, p in later):
        return Judgement(CONTRADICTED, evidence)
    if len(single) < MIN_LAW_NS or len(tasks["two-key"]) < MIN_PAIR_NS:
        return Judgement(INCONCLUSIVE, evidence,
                         f"none yet: the rule needs complete grids of plateau runs at {MIN_LAW_NS} lengths of the "
                         f"one-key task and {MIN_PAIR_NS} of the two-key task (it has {len(single)} and "
                         f"{len(tasks['two-key'])})", same)
    if not later:
        if fits["a + b ln n"]["fits"] and not fits["c n^alpha"]["fits"]:
            return Judgement(REPRODUCED, evidence)
        if not fits["a + b ln n"]["fits"]:
            others = [law for law in LAWS if fits[law]["fits"]] or ["none of the three laws"]
            return Judgement(WEAKER, evidence, "accuracy saturates in d_h no later than attention rank at every n "
                                               "of both tasks (larger heads are redundant), but d*_acc does not "
                                               f"grow like ln n (fits: {', '.join(others)})", same)
        a = fits["c n^alpha"]
        return Judgement(INCONCLUSIVE, evidence,
                         f"the grid intervals admit both a + b ln n and c n^alpha (alpha in [{a['q_lo']:.2f}, "
                         f"{a['q_hi']:.2f}]): one grid step of d* at the largest n separates them", same)
    return Judgement(INCONCLUSIVE, evidence,
                     f"an accuracy gap of {REDUCTION_MARGIN} at the n where accuracy saturates after rank", same)


@dataclass(frozen=True)
class TruncationEvidence(Record):
    """MiniLM's head size, the truncation's documents and rank grid, and per n the grid interval of the
    smallest redundant logit rank (:func:`truncation_records`' records)."""
    PREFIX: ClassVar[str] = "ch07_"
    tr_dh: int
    trr_points: tuple[Any, ...]
    tr_docs: int
    tr_ranks: str


def rule_truncation(e: TruncationEvidence) -> Judgement:
    """Every head of all-MiniLM-L6-v2 cut to logit rank r is redundant at r when the one-sided 95 % lower bound of the mean top-10 neighbour overlap among held-out BBC News articles is at least 0.9 of the full model's and the pairwise similarities keep a correlation of at least 0.95; r_red(n) is the smallest such grid rank, a grid interval (previous grid rank, r_red]: reproduced when at every n some r below d_h is redundant and the interval reaches 2 ln n or below; the weaker "heads can be cut below d_h, but not to near log n" when at every n some r below d_h is redundant and at some n the interval lies above 2 ln n; contradicted when at some n no r below d_h is redundant; inconclusive without data.

    The topic probe is reported beside these measures; it does not enter the rule, having been blind
    to a change of the embeddings from cosine 1 to below 0.5.
    """
    dh = e.tr_dh
    pts = [(int(p["n"]), float(p["prev"]), float(p["r"])) for p in e.trr_points]
    if not pts:
        return Judgement(INCONCLUSIVE, "no truncation measured", "none: no length n was measured")
    evidence = (f"all-MiniLM-L6-v2 (d_h = {dh}), {e.tr_docs} BBC News articles, ranks "
                f"{e.tr_ranks}: " + ", ".join(
                    f"n = {n}: " + (f"r_red in ({prev:g}, {r:g}] against 2 ln n = {LOG_FACTOR * math.log(n):.1f}"
                                    if r < dh else "no rank below d_h keeps the neighbours") for n, prev, r in pts)
                + f"; neighbour margin {NEIGHBOUR_MARGIN}, similarity correlation {SIMILARITY_LEVEL}")
    if any(r >= dh for _, _, r in pts):
        return Judgement(CONTRADICTED, evidence)
    if all(prev < LOG_FACTOR * math.log(n) for n, prev, _ in pts):
        return Judgement(REPRODUCED, evidence)
    return Judgement(WEAKER, evidence, "heads can be cut below d_h without moving the neighbours, "
                                       f"but not to near log n (at most {LOG_FACTOR:g} ln n) at every n")


CLAIMS: tuple[Claim, ...] = (
    Claim("bhojanapalli-trained-logit-rank", BHOJANAPALLI, "07", "sec-ch07-pretrained",
          "The mechanism: a head's logits have rank at most d_h, also in a trained model", rule_mechanism,
          kind=PROOF_CHECK, where="Sec. 1", evidence=MechanismEvidence),
    Claim("minli-trained-barrier", MIN_LI, "07", "sec-ch07-barrier",
          "The barrier n(1-(1-1/n)^n) describes trained attention on real data", rule_trained_barrier,
          kind=PRETRAINED, where="abstract; Sec. 3.1 (real data)", evidence=BarrierEvidence),
    Claim("minli-model-reduction", MIN_LI, "07", "sec-ch07-reduction",
          "Model reduction: accuracy saturates in d_h where attention rank does, near log n", rule_model_reduction,
          scale_key="ch07_ret_scale", kind=TRAINING, where="abstract (model-reduction effect)",
          evidence=ReductionEvidence),
    Claim("minli-truncation", MIN_LI, "07", "sec-ch07-truncation",
          "Redundancy in a real model: heads cut to a logit rank near log n keep what the model computes",
          rule_truncation, kind=PRETRAINED, where="abstract (redundancy, model reduction)",
          evidence=TruncationEvidence),
)
