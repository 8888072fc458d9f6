"""Chapter 04's shared training rule at its exact boundaries: an interval touching 0 or the margin,
two seeds, a change measured on exactly as many seeds as the gap, the power rule's t quantile at the
half-width that equals the margin. Each case sits where a flipped comparison (> for >=), a shifted
constant or a dropped operand would change the verdict or the sentence the book prints; `make
mutation` checks that every such change is caught."""
import math

import pytest

from lowrank.experiments.head_size_training import rules as R
from lowrank.experiments.shared.intervals import t_quantile
from lowrank.experiments.verdicts import AWAITS_RATES, AWAITS_RUNS, CONTRADICTED, INCONCLUSIVE, NEGLIGIBLE, REPRODUCED

NAN = float("nan")
M = R.MARGIN
SEEDS = R.POWER_SEEDS
NO_CHANGE = (0.0, -0.01, 0.01)


def _judged(rule):
    """The rule as chapter 08 applies it: through its claim, which reads the claim's typed record."""
    return next(c for c in R.CLAIMS if c.rule is rule).judge


def evidence(src="budget", row="gap", val=(0.05, 0.01, 0.09), test=None, *, n=SEEDS, budgets=2,
             change=NO_CHANGE, test_change=None, change_n=None, test_change_n=None, **fields):
    """Headline keys of one row with every run stored: ``val`` / ``test`` (diff, lo, hi) at the last
    of ``budgets`` budgets, ``change`` / ``test_change`` the gap's change over the last doubling on
    ``change_n`` / ``test_change_n`` seeds (default ``n``); ``fields`` set or (None) drop other keys."""
    p = f"ch04_rule_{src}_{row}_"
    steps = 8000 if budgets == 2 else 4000
    out = {"arm_a": "a", "arm_b": "b", "steps": steps, "tokens": steps * 2048.0, "planned": 4 * n, "stored": 4 * n,
           "prev_steps": 4000.0 if budgets == 2 else NAN, "plan_sd": 0.02}
    test = val if test is None else test
    test_change = change if test_change is None else test_change
    for s, (d, lo, hi), c, cn in (("val", val, change, change_n), ("test", test, test_change, test_change_n)):
        out.update({f"{s}_diff": d, f"{s}_lo": lo, f"{s}_hi": hi, f"{s}_n": n})
        one = budgets == 1
        out.update({f"{s}_change_diff": NAN if one else c[0], f"{s}_change_lo": NAN if one else c[1],
                    f"{s}_change_hi": NAN if one else c[2],
                    f"{s}_change_n": 0 if one else (n if cn is None else cn)})
    out.update(fields)
    return {p + k: v for k, v in out.items() if v is not None}


def judge(H, src="budget", row="gap", powered=True):
    return R.judge_row(H, src, row, powered=powered)


def test_an_interval_touching_zero_contains_it():
    # lo == 0 (hi == 0) is not above (below) 0, and the interval reaches past the margin
    assert judge(evidence(val=(0.05, 0.0, 0.1))).verdict == INCONCLUSIVE
    assert judge(evidence(val=(-0.05, -0.1, 0.0))).verdict == INCONCLUSIVE
    assert judge(evidence(val=(0.05, 1e-12, 0.1))).verdict == REPRODUCED
    assert judge(evidence(val=(-0.05, -0.1, -1e-12))).verdict == CONTRADICTED


def test_an_interval_touching_the_margin_from_below_is_not_inside_it():
    assert judge(evidence(val=(0.0, -M, 0.02))).verdict == INCONCLUSIVE
    assert judge(evidence(val=(0.0, -M + 1e-9, 0.02))).verdict == NEGLIGIBLE


def test_the_smallest_detectable_effect_is_the_larger_half_width():
    j = judge(evidence(val=(0.05, -0.01, 0.11), test=(0.05, -0.01, 0.07)))
    assert j.verdict == INCONCLUSIVE and "the smallest effect this run could detect is 0.060 nats" in j.detail
    assert j.qualifier == "both intervals contain 0 and reach beyond the margin of 0.03 nats"


def test_two_seeds_give_an_interval_and_one_seed_none():
    # an unpowered (live) row is judged on two seeds; rows are unpowered unless they say so
    j = R.judge_row(evidence("live", n=2), "live", "gap")
    assert j.verdict == REPRODUCED and "validation +0.050 nats (95% interval +0.010 to +0.090, 2 seeds)" in j.evidence
    j = judge(evidence("live", n=1, val=(0.05, NAN, NAN)), "live", powered=False)
    assert j.qualifier == "one seed: no interval, so no effect of any size can be detected"
    assert "validation +0.050 nats (one seed, no interval)" in j.evidence
    j = judge(evidence("live", n=0, val=(NAN, NAN, NAN)), "live", powered=False)
    assert "validation not measured" in j.evidence


@pytest.mark.parametrize("val", [(0.05, NAN, 0.09), (0.05, 0.01, NAN)])
def test_either_missing_bound_is_no_interval(val):
    # the other split's interval is still printed: every split is read before the verdict
    j = judge(evidence(val=val, test=(0.05, 0.01, 0.09)))
    assert j.qualifier == "one seed: no interval, so no effect of any size can be detected"
    assert "validation +0.050 nats (one seed, no interval)" in j.evidence
    assert "test +0.050 nats (95% interval +0.010 to +0.090, 9 seeds)" in j.evidence


def test_the_evidence_sentence_joins_its_parts():
    j = judge(evidence(tokens=1_050_000.0))
    assert j.evidence.startswith("a minus b loss at 8,000 steps (1.1 M training tokens a run): validation +0.050 nats "
                                 "(95% interval +0.010 to +0.090, 9 seeds); test +0.050 nats")
    assert "; change over the last doubling from 4,000 steps, validation: " in j.evidence
    assert "()" not in j.evidence and "end of its grid" not in j.evidence
    j = judge(evidence(lr_edge="the standard model"))
    assert j.evidence.startswith("a minus b loss at 8,000 steps") and j.evidence.count("a minus b") == 1
    assert "; the best rate of the standard model is the end of its grid" in j.evidence
    j = judge(evidence(budgets=1))
    assert j.evidence.endswith("; measured at this one budget, so whether the gap still moves was not measured; "
                               f"{SEEDS} seeds, the power rule asks for {SEEDS} (margin {M} nats)")


def test_the_arms_are_named_only_when_both_are_known():
    both = judge(evidence(lr_a=0.01, lr_b=0.02, params_a=1000.0, params_b=1050.0)).evidence
    assert "(learning rates 0.01 and 0.02, each model's best in its grid; 1,000 and 1,050 parameters)" in both
    assert "learning rates" not in judge(evidence(lr_a=0.01, lr_b=NAN)).evidence
    one = judge(evidence(params_a=1000.0, params_b=NAN))
    assert "parameters" not in one.evidence and one.qualifier == ""


def test_unequal_models_are_named_on_an_unqualified_verdict():
    j = judge(evidence(params_a=1000.0, params_b=2000.0))
    assert j.verdict == REPRODUCED
    assert j.qualifier == ("the two models differ in parameters (1,000 against 2,000, 2.00 times), so the "
                           "difference is not the head layout's alone")
    assert judge(evidence(params_a=1000.0, params_b=1100.0)).qualifier == ""   # exactly MATCH_TOLERANCE


def test_a_rate_grid_is_waited_for_and_absent_counts_mean_no_grid():
    j = judge(evidence(lr_stored=3, lr_planned=18))
    assert (j.qualifier, j.detail, j.awaits) == ("not judged yet: the rates are chosen first",
                                                 "the runs resume by run key", AWAITS_RATES)
    assert judge(evidence(lr_planned=1)).verdict == INCONCLUSIVE                # nothing stored yet
    assert judge(evidence(lr_stored=None, lr_planned=None)).verdict == REPRODUCED   # a row without a grid


def test_missing_runs_are_waited_for():
    j = judge(evidence(stored=5))
    assert (j.qualifier, j.detail, j.awaits) == (
        "the rule needs every seed of both models at every budget it compares", "the runs resume by run key", AWAITS_RUNS)


def test_disagreeing_splits_are_said():
    j = judge(evidence(val=(0.05, 0.01, 0.09), test=(-0.05, -0.09, -0.01)))
    assert j.qualifier == "the validation and test splits do not agree, and the rule needs both"


def test_a_change_counts_from_exactly_as_many_seeds_as_the_gap():
    toward = (-0.03, -0.05, -0.01)   # the gap 0.05 plus two such changes is below 0
    # two seeds on both: the change is read (at least 2 seeds and as many as the gap)
    assert judge(evidence("live", n=2, change=toward), "live", powered=False).verdict == INCONCLUSIVE
    assert judge(evidence(change=toward, change_n=SEEDS - 1, test_change_n=SEEDS - 1)).verdict == REPRODUCED
    # a change without one of its bounds is not read
    assert judge(evidence(change=(-0.03, NAN, -0.01))).verdict == REPRODUCED
    # the validation change cannot count, the test change still does
    j = judge(evidence(change=toward, change_n=1, test_change=toward))
    assert j.verdict == INCONCLUSIVE and j.qualifier.startswith("on the test split the gap is still moving toward 0")


def test_a_change_touching_zero_does_not_exclude_it():
    # a positive gap whose change interval ends exactly at 0 is not detectably moving toward 0
    assert judge(evidence(val=(0.05, 0.01, 0.09), change=(-0.03, -0.05, 0.0))).verdict == REPRODUCED
    assert judge(evidence(val=(-0.05, -0.09, -0.01), change=(0.03, 0.0, 0.05))).verdict == CONTRADICTED
    # inside the margin, a change interval touching 0 from either side does not move the gap out of it
    inside = (0.01, -0.02, 0.02)
    assert judge(evidence(val=inside, change=(0.02, 0.0, 0.04))).verdict == NEGLIGIBLE
    assert judge(evidence(val=inside, change=(-0.02, -0.04, 0.0))).verdict == NEGLIGIBLE


def test_a_gap_inside_the_margin_leaves_it_by_the_sum_of_gap_and_changes():
    inside = (0.01, -0.02, 0.02)
    # 0.01 + 2 * 0.015 = 0.04 leaves the margin; 0.01 - 2 * 0.015 would not
    j = judge(evidence(val=inside, change=(0.015, 0.005, 0.025)))
    assert j.verdict == INCONCLUSIVE and "would leave the margin of 0.03 nats" in j.qualifier
    assert judge(evidence(val=inside, change=(0.005, 0.001, 0.009))).verdict == NEGLIGIBLE


def test_the_power_rule_uses_the_two_sided_quantile_up_to_the_cap():
    """A one-sided t quantile (t(0.95) for t(0.975)) would accept a spread of 0.045 at 9 seeds."""
    t9 = t_quantile(0.975, SEEDS - 1)
    sd = M * math.sqrt(SEEDS) / t9
    # the spread at which 9 seeds give a half-width of exactly the margin (found among neighbouring floats)
    for _ in range(64):
        half = t9 * sd / math.sqrt(SEEDS)
        if half == M:
            break
        sd = math.nextafter(sd, 0.0 if half > M else 1.0)
    assert t9 * sd / math.sqrt(SEEDS) == M
    assert R.required_seeds(sd) == SEEDS and R.required_seeds(math.nextafter(sd, 1.0)) == SEEDS + 1
    assert R.required_seeds(0.045) == 12    # t(0.975, n - 1) 0.045 / sqrt(n) <= 0.03 first at n = 12
    assert R.required_seeds(0.054) == 15 and R.required_seeds(0.057) == R.MAX_SEEDS == 16
    j = judge(evidence(plan_sd=0.045))
    assert j.verdict == INCONCLUSIVE and "the power rule asks for 12" in j.qualifier


def test_the_parameter_matched_live_row_needs_no_power():
    H = {**evidence("live", "match", n=3), "ch04_rule_live_match_param_gap": 0.05}
    assert R.LIVE_RULES["bhojanapalli-parameter-matched"](H).verdict == REPRODUCED


def test_parameter_counts_at_exactly_the_tolerance_reproduce():
    H = {"ch04_table_rows": 15, "ch04_table_within": 15, "ch04_table_max_diff": 0.5, "ch04_table_tolerance": 0.5}
    assert _judged(R.rule_parameter_counts)(H).verdict == REPRODUCED
    # up to float round-off in millions (1e-9 M) above it
    assert _judged(R.rule_parameter_counts)({**H, "ch04_table_max_diff": 0.5 + 1e-9}).verdict == REPRODUCED
    assert _judged(R.rule_parameter_counts)({**H, "ch04_table_max_diff": 0.5 + 1e-6}).verdict == CONTRADICTED


def test_a_halving_hurts_only_with_both_intervals_above_zero():
    H = {**evidence(row="fewheads1"), **evidence(row="fewheads2", val=(0.05, 0.0, 0.1)),
         **evidence(row="fewheads4", val=(0.05, 0.01, 0.09), test=(0.05, 0.0, 0.1))}
    assert _judged(R.rule_too_few_heads)(H).evidence.endswith("; halving h hurts detectably on both splits from 2 to 1")
    H = {**evidence(row="fewheads1", val=(0.0, -0.01, 0.01))}
    assert _judged(R.rule_too_few_heads)(H).evidence.endswith("; no halving of h hurts detectably on both splits")


def test_evidence_keys_name_every_field_of_every_row():
    keys = R.evidence_keys("budget", ["gap", "match"])
    assert len(keys) == 2 * len(R.EVIDENCE_FIELDS) and keys[0] == "ch04_rule_budget_gap_arm_a"
    assert set(evidence()) <= set(keys)


def _comps(budgets=(4000, 8000), **extra):
    """A comparison table as chapter 04 builds it: one row per budget and split."""
    import pandas as pd

    rows = []
    for i, steps in enumerate(budgets):
        for j, split in enumerate(("validation", "test")):
            rows.append({"steps": steps, "tokens": steps * 2048.0, "split": split, "diff": 0.05 + 0.01 * j + i,
                         "lo": 0.01 + j, "hi": 0.09 + j, "n": 9 + j, "runs": 18 + i,
                         "change_diff": -0.01 - j, "change_lo": -0.02 - j, "change_hi": 0.005 + j,
                         "change_n": 8 + j, **extra})
    return pd.DataFrame(rows)


def test_row_evidence_reads_the_largest_budget_and_its_change():
    H = R.row_evidence("budget", "gap", R.Arms("a", "b"), _comps(params_a=1000, params_b=1100, lr_a=0.01, lr_b=0.02),
                       planned=40, param_gap=0.1, plan_sd=0.04, lr_stored=17, lr_planned=18, lr_edge="b")
    p = "ch04_rule_budget_gap_"
    assert set(H) == set(R.evidence_keys("budget", ["gap"]))
    assert {k[len(p):]: v for k, v in H.items()} == {
        "arm_a": "a", "arm_b": "b", "arm_shared": "", "steps": 8000, "tokens": 8000 * 2048.0, "planned": 40, "stored": 37,
        "prev_steps": 4000.0, "param_gap": 0.1, "plan_sd": 0.04, "params_a": 1000.0, "params_b": 1100.0,
        "lr_a": 0.01, "lr_b": 0.02, "lr_edge": "b", "lr_stored": 17, "lr_planned": 18,
        "val_diff": 1.05, "val_lo": 0.01, "val_hi": 0.09, "val_n": 9,
        "test_diff": 1.06, "test_lo": 1.01, "test_hi": 1.09, "test_n": 10,
        "val_change_diff": -0.01, "val_change_lo": -0.02, "val_change_hi": 0.005, "val_change_n": 8,
        "test_change_diff": -1.01, "test_change_lo": -1.02, "test_change_hi": 1.005, "test_change_n": 9}
    assert isinstance(H[p + "steps"], int) and isinstance(H[p + "val_n"], int)


def test_row_evidence_at_one_budget_has_no_change_and_unknown_arms():
    H = R.row_evidence("long", "capacity", R.Arms("a", "b"), _comps(budgets=(4000,)), planned=18)
    p = "ch04_rule_long_capacity_"
    assert H[p + "stored"] == 18 and H[p + "lr_edge"] == "" and H[p + "lr_stored"] == H[p + "lr_planned"] == 0
    for k in ("prev_steps", "param_gap", "plan_sd", "params_a", "params_b", "lr_a", "lr_b",
              "val_change_diff", "val_change_lo", "test_change_hi"):
        assert math.isnan(H[p + k]), k
    assert H[p + "val_change_n"] == H[p + "test_change_n"] == 0
    assert R.judge_row(H, "long", "capacity").verdict == REPRODUCED
