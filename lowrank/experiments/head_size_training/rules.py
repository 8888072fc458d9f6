"""One rule for chapter 04's training claims, judged on paired gaps at the largest budget.

Every training row compares two models, a minus b, paired by seed, where a positive difference
of loss is what the claim says (the claim's worse model minus its better one). The evidence of a
row, from a source ``src`` ("budget": the budget store; "long": the long-scale sweep; "live":
this page's own runs), sits in headline keys ``ch04_rule_<src>_<row>_<field>`` built by
:func:`row_evidence`; :func:`judge_row` decides on them.

The budget store's rows are powered: before their runs, the seeds each comparison needs were fixed
from the spread the store had already measured (:func:`required_seeds`, :data:`POWER_SEEDS`), with
an equivalence margin (:data:`MARGIN`): a row whose intervals lie wholly inside it on both splits
shows no effect larger than the margin at this scale.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import pandas as pd

from ..shared.power import seeds_for_margin
from ..shared.record import Record
from .paper import paper_parameter_table
from .row_record import (FIELDS, SPLITS, Arms, CapacityRow, FewHeadsRow, FixedHeadsRow, GapRow, MatchRow, PastNRow,
                         RowEvidence, StdHeadsRow)
from ..verdicts import (AWAITS_RATES, AWAITS_RUNS, BHOJANAPALLI, CONTRADICTED, INCONCLUSIVE, NEGLIGIBLE, PROOF_CHECK,
                        REPRODUCED, TRAINING, Claim, Effect, Judgement, is_missing)

__all__ = ["HORIZON_DOUBLINGS", "MATCH_TOLERANCE", "RULE_LEVEL", "MARGIN", "POWER_SEEDS", "MAX_SEEDS",
           "EVIDENCE_FIELDS", "Arms", "RowEvidence", "ParameterCountEvidence", "FewHeadsEvidence", "required_seeds",
           "row_evidence", "judge", "judge_row", "evidence_keys", "CLAIMS", "LIVE_RULES",
           "rule_parameter_counts", "rule_fixed_heads", "rule_parameter_matched", "rule_more_heads_standard",
           "rule_more_heads_fixed", "rule_head_size", "rule_head_size_past_n", "rule_too_few_heads"]

# Every interval the rule reads is a two-sided 95 % Student-t interval over seeds.
RULE_LEVEL = 0.95
# A gap detectably moving toward 0 keeps its verdict only if it would not reach 0 within this many
# more doublings of the budget at its last measured rate: the span the three budgets cover (1,000 to
# 4,000 steps), and no further, since a trend in log budget is not known beyond what was measured.
HORIZON_DOUBLINGS = 2
# Fig. 1 compares models on a common parameter axis: a baseline whose parameter count differs
# from the fixed-head model's by more than 10 % is not a parameter-matched comparison.
MATCH_TOLERANCE = 0.10
# The smallest difference a practitioner choosing a head size would act on: 0.03 nats of loss per
# token, a 3 % change of perplexity. Intervals wholly inside (-MARGIN, MARGIN) on both splits show
# no effect larger than it; the power rule sizes every row so that its half-width reaches it.
MARGIN = 0.03
# The seeds every powered row needs: required_seeds of the largest standard deviation of a paired
# difference (four rows, two splits) at the budget store's 4,000-step budget over its first three
# seeds, 0.0385 nats (tests/test_head_size_training_budget.py recomputes it from the store).
POWER_SEEDS = 9
# The most seeds a row may ask for when its own spread over the first POWER_SEEDS seeds is larger
# than planned (a re-estimate from the spread alone, never from the mean): a limit on CPU time.
MAX_SEEDS = 16

_SPLITS = SPLITS
EVIDENCE_FIELDS = FIELDS


def required_seeds(sd: float) -> int:
    """Seeds a paired comparison needs for a 95 % t half-width of at most :data:`MARGIN` at standard
    deviation ``sd`` (the shared power rule, :func:`..shared.power.seeds_for_margin`): at least
    POWER_SEEDS, at most MAX_SEEDS; POWER_SEEDS when ``sd`` is missing (the row's first seeds are not
    all stored)."""
    return seeds_for_margin(float("nan") if is_missing(sd) else sd, MARGIN, level=RULE_LEVEL,
                            least=POWER_SEEDS, most=MAX_SEEDS)


def evidence_keys(src: str, rows) -> tuple[str, ...]:
    """The headline keys of :func:`row_evidence` for every row of ``rows`` from ``src``."""
    return tuple(f"ch04_rule_{src}_{r}_{f}" for r in rows for f in EVIDENCE_FIELDS)


def row_evidence(src: str, row: str, arms: Arms, comps: pd.DataFrame, *, planned: int,
                 param_gap: float = float("nan"), plan_sd: float = float("nan"), lr_stored: int = 0,
                 lr_planned: int = 0, lr_edge: str = "") -> dict:
    """Headline keys of one row from its comparison table ``comps`` (one row per budget and split:
    ``steps``, ``tokens``, ``split`` 'validation' / 'test', ``diff``, ``lo``, ``hi``, ``n``, ``runs``
    stored of the two models, ``change_diff`` .. ``change_n`` from the previous budget), judged at
    the largest budget in it; ``planned`` is how many runs of the two models its budgets need (all
    of them, ``stored`` counts the runs at every budget of ``comps``); ``plan_sd``: the larger
    standard deviation (over the two splits) of the paired difference over the first
    :data:`POWER_SEEDS` seeds, NaN until they are stored (powered rows only). Optional columns of
    ``comps``: ``lr_a`` / ``lr_b`` (each model's rate) and ``params_a`` / ``params_b`` (parameter
    counts); ``lr_stored`` of ``lr_planned`` runs of the two models' rate grid are stored, and
    ``lr_edge`` names a model whose best rate is still the end of its grid ("" when none)."""
    nan = float("nan")
    steps = sorted(int(s) for s in comps["steps"].unique())
    last = comps[comps.steps == steps[-1]]
    col = lambda c: float(last[c].iloc[0]) if c in last else nan  # noqa: E731
    effects, changes = [], []
    for _, split in _SPLITS:
        r = last[last.split == split].iloc[0]
        effects.append(Effect(split, float(r["diff"]), float(r["lo"]), float(r["hi"]), int(r["n"])))
        changes.append(Effect(split, float(r["change_diff"]), float(r["change_lo"]), float(r["change_hi"]),
                              int(r["change_n"])) if len(steps) > 1 else Effect(split, nan, nan, nan, 0))
    record = RowEvidence(
        arms=arms, steps=steps[-1], tokens=float(last["tokens"].iloc[0]), planned=int(planned),
        stored=sum(int(comps[comps.steps == st]["runs"].iloc[0]) for st in steps),
        prev_steps=float(steps[-2]) if len(steps) > 1 else nan, param_gap=float(param_gap), plan_sd=float(plan_sd),
        params=(col("params_a"), col("params_b")), rates=(col("lr_a"), col("lr_b")), lr_edge=str(lr_edge),
        lr_stored=int(lr_stored), lr_planned=int(lr_planned), effects=tuple(effects), changes=tuple(changes))
    return record.values(f"ch04_rule_{src}_{row}_")


def _interval(diff: float, lo: float, hi: float, n: int) -> str:
    if n == 0:
        return "not measured"
    if n < 2 or is_missing(lo) or is_missing(hi):
        return f"{diff:+.3f} nats (one seed, no interval)"
    return f"{diff:+.3f} nats ({RULE_LEVEL:.0%} interval {lo:+.3f} to {hi:+.3f}, {n} seeds)"


def _arms_text(ev: RowEvidence) -> str:
    """Each model's rate and parameter count, as the evidence names them ("" when not measured)."""
    parts = []
    (lr_a, lr_b), (pa, pb) = ev.rates, ev.params
    if not (is_missing(lr_a) or is_missing(lr_b)):
        parts.append(f"learning rates {lr_a:g} and {lr_b:g}, each model's best in its grid")
    if not (is_missing(pa) or is_missing(pb)):
        parts.append(f"{int(pa):,} and {int(pb):,} parameters")
    return "; ".join(parts)


def _unequal(ev: RowEvidence) -> str:
    """The phrase a verdict carries when its two models' parameter counts differ by more than
    MATCH_TOLERANCE ("" when they do not, or are not known)."""
    pa, pb = ev.params
    if is_missing(pa) or is_missing(pb) or abs(pa - pb) <= MATCH_TOLERANCE * min(pa, pb):
        return ""
    return (f"the two models differ in parameters ({int(pa):,} against {int(pb):,}, {max(pa, pb) / min(pa, pb):.2f} "
            f"times), so the difference is not the head layout's alone")


def _with_unequal(j: Judgement, ev: RowEvidence) -> Judgement:
    more = _unequal(ev)
    if not more:
        return replace(j, effects=ev.effects)
    if not j.qualifier:
        return replace(j, qualifier=more, effects=ev.effects)
    return replace(j, detail=f"{j.detail}; {more}" if j.detail else more, effects=ev.effects)


def judge_row(H: Mapping, src: str, row: str, *, powered: bool = False) -> Judgement:
    """:func:`judge` on the row ``row`` of source ``src`` as the chapter carries it
    (:meth:`RowEvidence.read` of the keys ``ch04_rule_<src>_<row>_*``)."""
    return judge(RowEvidence.read(H, f"ch04_rule_{src}_{row}_"), powered=powered)


def judge(ev: RowEvidence, *, powered: bool = False) -> Judgement:
    """The rule every training row of chapter 04 shares: the claim's worse model minus its better
    one, paired by seed, at the largest budget; both splits must agree. Where the row's models have
    a learning-rate grid, each is compared at its own best rate, and nothing is judged before every
    run of both models' grids is stored. Intervals above (below) 0 reproduce (contradict) the claim,
    intervals wholly inside (-MARGIN, MARGIN) show no effect larger than the margin; a gap detectably
    moving toward 0 fast enough to reach it within HORIZON_DOUBLINGS doublings is not judged, whichever
    its sign, nor is one inside the margin moving fast enough to leave it, when that change rests on
    at least as many seeds as the gap. ``powered``: the row needs the seeds :func:`required_seeds` asks.
    A verdict on two models whose parameter counts differ by more than MATCH_TOLERANCE says so."""
    what, steps, tokens, prev = ev.arms.what, ev.steps, ev.tokens, ev.prev_steps
    budget = f"{int(steps):,} steps ({tokens / 1e6:.1f} M training tokens a run)"
    budgets = budget if is_missing(prev) else f"{int(prev):,} and {budget}"
    if ev.lr_stored < ev.lr_planned:
        return Judgement(INCONCLUSIVE, f"{what}: each model is compared at its own best learning rate, and "
                                       f"{int(ev.lr_stored)} of the {int(ev.lr_planned)} runs of the two models' rate "
                                       f"grid are stored",
                         "not judged yet: the rates are chosen first", "the runs resume by run key",
                         awaits=AWAITS_RATES)
    if ev.stored < ev.planned:
        return Judgement(INCONCLUSIVE, f"{what}: {int(ev.stored)} of the {int(ev.planned)} runs at {budgets} are "
                                       f"stored",
                         "the rule needs every seed of both models at every budget it compares",
                         "the runs resume by run key", awaits=AWAITS_RUNS)
    sides, parts, half, inside = {}, [], 0.0, True
    for (s, split), e in zip(_SPLITS, ev.effects):
        d, lo, hi, n = e.estimate, e.lo, e.hi, e.seeds
        parts.append(f"{split} {_interval(d, lo, hi, n)}")
        if n < 2 or is_missing(lo) or is_missing(hi):
            sides[s] = None
            continue
        sides[s] = 1 if lo > 0 else -1 if hi < 0 else 0
        half = max(half, (hi - lo) / 2)
        inside = inside and -MARGIN < lo and hi < MARGIN
    one_budget = is_missing(prev)
    if not one_budget:
        for (s, split), c in zip(_SPLITS, ev.changes):
            parts.append(f"change over the last doubling from {int(prev):,} steps, {split}: "
                         f"{_interval(c.estimate, c.lo, c.hi, c.seeds)}")
    arms = _arms_text(ev)
    ev_text = f"{what} at {budget}" + (f" ({arms})" if arms else "") + ": " + "; ".join(parts)
    if ev.lr_edge:
        ev_text += f"; the best rate of {ev.lr_edge} is the end of its grid, so a rate beyond it might do better"
    if one_budget:
        ev_text += "; measured at this one budget, so whether the gap still moves was not measured"
    if None in sides.values():
        return _with_unequal(Judgement(INCONCLUSIVE, ev_text, "one seed: no interval, so no effect of any size can "
                                                              "be detected"), ev)
    seeds = min(e.seeds for e in ev.effects)
    if powered:
        needed = required_seeds(ev.plan_sd)
        ev_text += f"; {seeds} seeds, the power rule asks for {needed} (margin {MARGIN} nats)"
        if seeds < needed:
            return _with_unequal(Judgement(INCONCLUSIVE, ev_text, f"judged on {seeds} seeds where the power rule "
                                                                  f"asks for {needed}: the smallest effect this run "
                                                                  f"could detect is {half:.3f} nats"), ev)
    side = sides["val"] if sides["val"] == sides["test"] else None
    if side is None and not inside:
        return _with_unequal(Judgement(INCONCLUSIVE, ev_text, "the validation and test splits do not agree, and the "
                                                              "rule needs both"), ev)
    if side == 0 and not inside:
        return _with_unequal(Judgement(INCONCLUSIVE, ev_text, f"both intervals contain 0 and reach beyond the margin "
                                                              f"of {MARGIN} nats", f"the smallest effect this run "
                                                              f"could detect is {half:.3f} nats (the larger "
                                                              f"half-width)"), ev)
    if not one_budget:
        for (s, split), e, c in zip(_SPLITS, ev.effects, ev.changes):
            d, cd, clo, chi, cn = e.estimate, c.estimate, c.lo, c.hi, c.seeds
            # A change measured on fewer seeds than the gap cannot overrule it.
            if cn < max(seeds, 2) or is_missing(clo) or is_missing(chi):
                continue
            if side:
                toward = chi < 0 if side > 0 else clo > 0
                if toward and side * (d + HORIZON_DOUBLINGS * cd) <= 0:
                    return _with_unequal(Judgement(INCONCLUSIVE, ev_text, (
                        f"on the {split} split the gap is still moving toward 0 ({cd:+.3f} nats per doubling, "
                        f"interval excludes 0) and would reach it within {HORIZON_DOUBLINGS} more doublings of the "
                        f"budget")), ev)
            elif (clo > 0 or chi < 0) and abs(d + HORIZON_DOUBLINGS * cd) >= MARGIN:
                return _with_unequal(Judgement(INCONCLUSIVE, ev_text, (
                    f"on the {split} split the gap lies inside the margin but is still moving ({cd:+.3f} nats per "
                    f"doubling, interval excludes 0) and would leave the margin of {MARGIN} nats within "
                    f"{HORIZON_DOUBLINGS} more doublings of the budget")), ev)
    if side:
        return _with_unequal(Judgement(REPRODUCED if side > 0 else CONTRADICTED, ev_text), ev)
    return _with_unequal(Judgement(NEGLIGIBLE, ev_text, f"both 95 % intervals lie inside +-{MARGIN} nats, at {budget}"),
                         ev)


# ---------------------------------------------------------------------------------------------
# Claims of Bhojanapalli et al. (2020) that chapter 04 tests, with their rules.

# Below this the difference between our count and the paper's is float round-off in millions.
_ROUNDOFF_M = 1e-9


@dataclass(frozen=True)
class ParameterCountEvidence(Record):
    """Tables 1-3 against our counts: rows compared, rows within the tolerance, the largest
    difference and the tolerance, in millions."""
    PREFIX: ClassVar[str] = "ch04_table_"
    rows: int
    within: int
    max_diff: float
    tolerance: float


def rule_parameter_counts(e: ParameterCountEvidence) -> Judgement:
    """Reproduced when every row of Tables 1-3 is within {paper.PARAMETER_TOLERANCE_M:g} M of our BERT-style count (the paper prints integer millions); contradicted otherwise.

    The feed-forward widths are inferred (the paper does not state them), which the evidence says.
    """
    rows, within, worst, tol = e.rows, e.within, e.max_diff, e.tolerance
    ev = (f"{within} of {rows} rows within {tol:g} M of the reported counts (largest difference {worst:.2f} M), "
          f"with d_ff = 4096 (d = 512, 1024) and 3072 (d = 768) inferred")
    if within == rows and worst <= tol + _ROUNDOFF_M:
        return Judgement(REPRODUCED, ev)
    return Judgement(CONTRADICTED, ev)


def _matched(ev: RowEvidence, *, powered: bool = False) -> Judgement:
    """The shared rule for the parameter-matched row, after its precondition: the two models'
    parameter counts within MATCH_TOLERANCE of each other. Missing runs are said first, as on every
    row (their parameter counts are not known until they are stored)."""
    if ev.stored < ev.planned:
        return judge(ev, powered=powered)
    gap = ev.param_gap
    if is_missing(gap) or gap > MATCH_TOLERANCE:
        return Judgement(INCONCLUSIVE, f"{ev.arms.what}; parameter counts differ by {gap:.0%}",
                         f"not parameter-matched: the baseline is not within {MATCH_TOLERANCE:.0%} of the fixed-head "
                         f"model's parameters, so no effect can be attributed to the head size")
    return judge(ev, powered=powered)


def rule_fixed_heads(e: GapRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), the standard model's loss at h = 32 (d_h = 2) minus the fixed-head model's (d_p = 16), both at width 64, paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`).
    """
    return judge(e, powered=True)


def rule_parameter_matched(e: MatchRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), the standard model at d = 112, h = 4 minus the fixed-head model at d = 64, h = 32 (d_p = 16), within {MATCH_TOLERANCE:percent} of its parameters, in loss, paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; also inconclusive when the parameter counts differ by more than {MATCH_TOLERANCE:percent}; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`).
    """
    return _matched(e, powered=True)


def rule_more_heads_standard(e: StdHeadsRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), the standard model's loss (d_h = d / h, width 64) at h = 32 minus at h = 4, paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`). h = 4 at d = 64 has
    d_h = 16, the head size at which the paper's d = 256 models stop improving (h = 16).
    """
    return judge(e, powered=True)


def rule_more_heads_fixed(e: FixedHeadsRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), the fixed-head model's loss (d_p = 16, width 64) at h = 4 minus at h = 32, paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`). At h = 4, d_p = 16 is
    the standard model.
    """
    return judge(e, powered=True)


def rule_head_size(e: CapacityRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), at n = 64, h = 4 and width 64, the loss at head size n / 4 (d_p = 16, the standard d / h) minus at head size n (d_p = 64), paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`), on Table 2(B)'s ratios
    (head sizes 32 and 128 at n = 128 there). The larger head also has more parameters, as in the
    paper.
    """
    return judge(e, powered=True)


def rule_head_size_past_n(e: PastNRow) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), at n = 64, h = 4 and width 64, the loss at head size n (d_p = 64) minus at head size 2n (d_p = 128), paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`), on Table 2(B)'s ratio
    (head sizes 128 and 256 at n = 128 there). A head of size n already represents any attention
    pattern (chapter 02), so a gain past n is a gain of capacity, not of attention rank.
    """
    return judge(e, powered=True)


_FEW_HEADS = (("fewheads1", 1), ("fewheads2", 2), ("fewheads4", 4))


@dataclass(frozen=True)
class FewHeadsEvidence:
    """The smallest halving's row and, for every halving of :data:`_FEW_HEADS`, the lower ends of
    its intervals on both splits (NaN where the chapter has no such row)."""
    first: FewHeadsRow
    lows: tuple[tuple[float, ...], ...]

    @classmethod
    def keys(cls) -> dict[str, str]:
        """The first row's keys, then the lower ends read for every halving."""
        return {**FewHeadsRow.keys(), **{f"{row}_{s}_lo": f"ch04_rule_budget_{row}_{s}_lo" for row, _ in _FEW_HEADS
                                         for s, _ in _SPLITS}}

    @classmethod
    def read(cls, values: Mapping[str, Any]) -> FewHeadsEvidence:
        lows = tuple(tuple(float(values.get(f"ch04_rule_budget_{row}_{s}_lo", math.nan)) for s, _ in _SPLITS)
                     for row, _ in _FEW_HEADS)
        return cls(FewHeadsRow.read(values), lows)


def rule_too_few_heads(e: FewHeadsEvidence) -> Judgement:
    """Reproduced when, in the long-scale budget store, each model at its own learning rate (the lowest mean validation loss over {design.SEEDS:count} seeds at {fair.LR_GRID_STEPS:,} steps among the rates {fair.LR_GRID_RATES:g}, and one rate a factor {fair.LR_EDGE_FACTOR:g} beyond an end of that grid when the end wins), among standard models of head size 32 (width 32 h) at h = 1, 2, 4, 8, the loss at h = 1 minus at h = 2, paired by seed at {fair.JUDGED_STEPS[1]:,} steps (16.4 M tokens a run), has a {RULE_LEVEL:percent} t interval above 0 on both the validation and the test split; contradicted when both lie below 0; no effect larger than the margin when both lie inside +-{MARGIN} nats; inconclusive until both models' rate grids and every seed at {fair.JUDGED_STEPS:,} steps are stored, when it has fewer seeds than the power rule asks ({POWER_SEEDS}, or more when the row's own spread over its first {POWER_SEEDS} seeds at either budget needs them for a half-width of {MARGIN} nats, at most {MAX_SEEDS}), when the splits disagree or an interval contains 0 and reaches past the margin, or when on either split the gap's change from {fair.JUDGED_STEPS[0]:,} to {fair.JUDGED_STEPS[1]:,} steps, measured on as many seeds as the gap, has an interval excluding 0 and the gap plus {HORIZON_DOUBLINGS:word} such changes would reach 0 (from either side) or leave the margin; the evidence names every halving of h that hurts detectably, the largest of them being the threshold; a verdict on two models whose parameter counts differ by more than {MATCH_TOLERANCE:percent} says so.

    The one rule of every training row of the chapter (:func:`judge_row`) on the smallest halving.
    As in the paper's baselines, the width shrinks with h, so fewer heads also means fewer
    parameters.
    """
    j = judge(e.first, powered=True)
    hurts = []
    for (_, h), los in zip(_FEW_HEADS, e.lows):
        if all(not is_missing(v) and v > 0 for v in los):
            hurts.append(f"{2 * h} to {h}")
    found = (f"halving h hurts detectably on both splits from {', from '.join(hurts)}" if hurts
             else "no halving of h hurts detectably on both splits")
    return replace(j, evidence=f"{j.evidence}; {found}")


# The same rule on this execution's own (live) runs, for the chapter's table; chapter 08 judges
# the claims on the long-scale keys only.
LIVE_RULES = {"bhojanapalli-fixed-heads-training": lambda H: judge_row(H, "live", "gap"),
              "bhojanapalli-parameter-matched": lambda H: _matched(RowEvidence.read(H, "ch04_rule_live_match_")),
              "bhojanapalli-head-size-capacity": lambda H: judge_row(H, "live", "dpsize"),
              "bhojanapalli-more-heads-hurt-standard": lambda H: judge_row(H, "live", "stdheads"),
              "bhojanapalli-more-heads-help-fixed": lambda H: judge_row(H, "live", "fixedheads")}


# Measures: the parameter counts come from paper_parameter_table; every training rule reads the
# fields row_evidence writes from a row's comparison table. (The functions that pair the runs,
# in fair and headlines, import this module, so a claim here cannot name them.)
CLAIMS: tuple[Claim, ...] = (
    Claim("bhojanapalli-parameter-counts", BHOJANAPALLI, "04", "sec-ch04-parameter-table",
          "Parameter counts of Tables 1-3 (BERT-style models with standard and fixed head sizes)",
          rule_parameter_counts, kind=PROOF_CHECK, where="Tables 1-3", measure=paper_parameter_table, evidence=ParameterCountEvidence),
    Claim("bhojanapalli-fixed-heads-training", BHOJANAPALLI, "04", "sec-ch04-heads",
          "Training: at many heads, a fixed head size gives lower perplexity than the standard d/h",
          rule_fixed_heads, scale_key="ch04_long_scale", kind=TRAINING, where="Sec. 4, Fig. 3a", measure=row_evidence,
          evidence=GapRow),
    Claim("bhojanapalli-parameter-matched", BHOJANAPALLI, "04", "sec-ch04-matched",
          "Training, parameter-matched: a fixed head size at a smaller width beats a standard model of "
          "about the same number of parameters",
          rule_parameter_matched, scale_key="ch04_long_scale", kind=TRAINING,
          where="Sec. 4, Fig. 1", measure=row_evidence,
          evidence=MatchRow),
    Claim("bhojanapalli-more-heads-hurt-standard", BHOJANAPALLI, "04", "sec-ch04-heads",
          "Training at a fixed width with the standard head size d/h: \"increasing the number of heads beyond "
          "16 hurts the performance\"",
          rule_more_heads_standard, scale_key="ch04_long_scale", kind=TRAINING, where="Sec. 4, Fig. 3a", measure=row_evidence,
          evidence=StdHeadsRow),
    Claim("bhojanapalli-more-heads-help-fixed", BHOJANAPALLI, "04", "sec-ch04-heads",
          "Training at a fixed width with a fixed head size: \"increasing the number of heads monotonically "
          "improves the performance\"",
          rule_more_heads_fixed, scale_key="ch04_long_scale", kind=TRAINING, where="Sec. 4, Fig. 3a", measure=row_evidence,
          evidence=FixedHeadsRow),
    Claim("bhojanapalli-head-size-capacity", BHOJANAPALLI, "04", "sec-ch04-sizes",
          "Training: at a fixed number of heads, a larger head size gives lower perplexity "
          "(head size controls capacity)",
          rule_head_size, scale_key="ch04_long_scale", kind=TRAINING, where="Table 2(B)", measure=row_evidence,
          evidence=CapacityRow),
    Claim("head-size-past-n", BHOJANAPALLI, "04", "sec-ch04-sizes",
          "Head size keeps helping past the sequence length: d_p = 256 beats d_p = 128 at n = 128",
          rule_head_size_past_n, scale_key="ch04_long_scale", kind=TRAINING, where="Table 2(B)", measure=row_evidence,
          evidence=PastNRow),
    Claim("too-few-heads-hurt", BHOJANAPALLI, "04", "sec-ch04-heads",
          "At a fixed head size of 32, reducing the number of heads below a threshold hurts (LM1B)",
          rule_too_few_heads, scale_key="ch04_long_scale", kind=TRAINING, where="Fig. 4 (Appendix D)", measure=row_evidence,
          evidence=FewHeadsEvidence),
)
