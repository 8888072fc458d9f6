"""Chapter 04's claims: every rule on synthetic headline values, on both sides of every
threshold, reaching every verdict it can return."""

import pytest

from lowrank.experiments import head_size_training as hs
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, NEGLIGIBLE, REPRODUCED, MissingEvidence

NAN = float("nan")


def _judged(rule):
    """The rule as chapter 08 applies it: through its claim, which reads the claim's typed record."""
    return next(c for c in hs.CLAIMS if c.rule is rule).judge


def _counts(within=15, worst=0.49):
    return {"ch04_table_rows": 15, "ch04_table_within": within, "ch04_table_max_diff": worst,
            "ch04_table_tolerance": hs.PARAMETER_TOLERANCE_M}



SEEDS = hs.rules.POWER_SEEDS


def _row(src, row, val, test=None, *, steps=(4000, 8000), change=(0.0, -0.01, 0.01), test_change=None,
         planned=None, stored=None, n=SEEDS, change_n=None, param_gap=NAN, plan_sd=0.02, params=(NAN, NAN),
         lr=(0.01, 0.01), lr_stored=18, lr_planned=18, lr_edge=""):
    """Synthetic evidence of one row: ``val`` / ``test`` are (diff, lo, hi) at the largest budget,
    ``change`` / ``test_change`` the gap's change over the last doubling (ignored with one budget) on
    ``change_n`` seeds (default ``n``); every seed of both models at every budget stored by default."""
    test = val if test is None else test
    test_change = change if test_change is None else test_change
    planned = 2 * SEEDS * len(steps) if planned is None else planned
    stored = planned if stored is None else stored
    p = f"ch04_rule_{src}_{row}_"
    out = {p + "arm_a": f"{row} a", p + "arm_b": "b", p + "steps": steps[-1], p + "tokens": steps[-1] * 2048.0,
           p + "planned": planned, p + "stored": stored, p + "prev_steps": float(steps[-2]) if len(steps) > 1 else NAN,
           p + "param_gap": param_gap, p + "plan_sd": plan_sd, p + "params_a": params[0], p + "params_b": params[1],
           p + "lr_a": lr[0], p + "lr_b": lr[1], p + "lr_edge": lr_edge, p + "lr_stored": lr_stored,
           p + "lr_planned": lr_planned}
    for s, (d, lo, hi), c in (("val", val, change), ("test", test, test_change)):
        out.update({f"{p}{s}_diff": d, f"{p}{s}_lo": lo, f"{p}{s}_hi": hi, f"{p}{s}_n": n})
        one = len(steps) == 1
        out.update({f"{p}{s}_change_diff": NAN if one else c[0], f"{p}{s}_change_lo": NAN if one else c[1],
                    f"{p}{s}_change_hi": NAN if one else c[2],
                    f"{p}{s}_change_n": 0 if one else (n if change_n is None else change_n)})
    return out


_LONG = {"ch04_long_scale": "long"}

# (rule, source, row, extra keys): every row of the budget store is judged at 8,000 steps with its
# change from 4,000 steps, by one rule.
TRAINING_ROWS = [
    (_judged(hs.rule_fixed_heads), "budget", "gap", {}),
    (_judged(hs.rule_parameter_matched), "budget", "match", {"param_gap": 0.06}),
    (_judged(hs.rule_more_heads_standard), "budget", "stdheads", {}),
    (_judged(hs.rule_more_heads_fixed), "budget", "fixedheads", {}),
    (_judged(hs.rule_head_size), "budget", "capacity", {}),
    (_judged(hs.rule_head_size_past_n), "budget", "pastn", {}),
    (_judged(hs.rules.rule_too_few_heads), "budget", "fewheads1", {}),
]


def test_claims_are_declared_with_sections_and_rule_sentences():
    keys = [c.key for c in hs.CLAIMS]
    assert len(set(keys)) == 8 and all(c.chapter == "04" and c.section.startswith("sec-ch04-") for c in hs.CLAIMS)
    assert all(c.rule_sentence.startswith("Reproduced when") for c in hs.CLAIMS)
    training = [c for c in hs.CLAIMS if c.key != "bhojanapalli-parameter-counts"]
    assert all(c.scale_key == "ch04_long_scale" and "long-scale" in c.rule_sentence for c in training)
    assert all("validation and the test split" in c.rule_sentence for c in training)
    # the page's own runs have no Fig. 4 or Table 2(B) past-n models: those two rows exist in the store only
    assert set(hs.LIVE_RULES) == {c.key for c in training} - {"head-size-past-n", "too-few-heads-hurt"}
    assert "ch04_long_scale" in hs.HEADLINE_KEYS


def test_parameter_counts_rule_both_sides_of_the_tolerance():
    rule = _judged(hs.rule_parameter_counts)
    assert rule(_counts()).verdict == REPRODUCED
    assert rule(_counts(worst=hs.PARAMETER_TOLERANCE_M)).verdict == REPRODUCED
    j = rule(_counts(within=14, worst=hs.PARAMETER_TOLERANCE_M + 0.01))
    assert j.verdict == CONTRADICTED and "14 of 15" in j.evidence
    assert rule(_counts(within=15, worst=0.51)).verdict == CONTRADICTED



@pytest.mark.parametrize("rule,src,row,extra", TRAINING_ROWS)
def test_the_shared_rule_reaches_every_verdict_on_every_row(rule, src, row, extra):
    ev = lambda *a, **k: {**_row(src, row, *a, **{**extra, **k}), **_LONG}  # noqa: E731
    assert rule(ev((0.05, 0.01, 0.09))).verdict == REPRODUCED
    assert rule(ev((0.05, 1e-6, 0.1))).verdict == REPRODUCED            # just above 0
    assert rule(ev((-0.05, -0.09, -0.01))).verdict == CONTRADICTED
    assert rule(ev((-0.05, -0.1, -1e-6))).verdict == CONTRADICTED       # just below 0
    j = rule(ev((0.05, -1e-6, 0.1)))                                     # contains 0
    assert j.verdict == INCONCLUSIVE and "0.050 nats" in j.reason
    # both splits must agree, in both directions
    j = rule(ev((0.05, 0.01, 0.09), (0.02, -0.01, 0.05)))
    assert j.verdict == INCONCLUSIVE and "do not agree" in j.reason
    assert rule(ev((-0.05, -0.09, -0.01), (-0.02, -0.05, 0.01))).verdict == INCONCLUSIVE
    assert rule(ev((0.05, 0.01, 0.09), (-0.05, -0.09, -0.01))).verdict == INCONCLUSIVE
    # missing runs at either budget: inconclusive, and the counts are said
    j = rule(ev((0.05, 0.01, 0.09), stored=5))
    assert j.verdict == INCONCLUSIVE and f"5 of the {4 * SEEDS} runs at 4,000 and 8,000 steps" in j.evidence
    one = rule(ev((0.3, NAN, NAN), n=1))
    assert one.verdict == INCONCLUSIVE and "one seed" in one.reason
    j = rule(ev((0.05, 0.01, 0.09)))
    budget = 8000
    assert f"{budget:,} steps" in j.evidence and f"{budget * 2048 / 1e6:.1f} M training tokens" in j.evidence
    assert "validation +0.050" in j.evidence and f"{SEEDS} seeds, the power rule asks for {SEEDS}" in j.evidence
    # no effect larger than the margin: both intervals strictly inside it, either sign of the mean
    m = hs.rules.MARGIN
    j = rule(ev((0.005, -0.02, m - 1e-6), (-0.004, -m + 1e-6, 0.02)))
    assert j.verdict == NEGLIGIBLE and f"+-{m}" in j.reason
    assert rule(ev((0.005, -0.02, m), (0.0, -0.02, 0.02))).verdict == INCONCLUSIVE   # touching the margin
    j = rule(ev((0.005, -0.02, 0.04)))
    assert j.verdict == INCONCLUSIVE and "beyond the margin" in j.reason
    # an interval above 0 but inside the margin is a small effect, not no effect
    assert rule(ev((0.01, 0.002, 0.02))).verdict == REPRODUCED
    # the power rule: too few seeds, or a spread that asks for more than POWER_SEEDS
    j = rule(ev((0.05, 0.01, 0.09), n=SEEDS - 1, planned=4 * SEEDS - 4))
    assert j.verdict == INCONCLUSIVE and f"judged on {SEEDS - 1} seeds where the power rule asks for {SEEDS}" in j.reason
    need = hs.rules.required_seeds(0.06)
    assert need > SEEDS
    j = rule(ev((0.05, 0.01, 0.09), plan_sd=0.06))
    assert j.verdict == INCONCLUSIVE and f"asks for {need}" in j.reason
    assert rule(ev((0.05, 0.01, 0.09), plan_sd=0.06, n=need)).verdict == REPRODUCED


@pytest.mark.parametrize("rule,src,row,extra", TRAINING_ROWS)
def test_a_gap_still_moving_toward_zero_is_not_judged_in_either_direction(rule, src, row, extra):
    ev = lambda *a, **k: {**_row(src, row, *a, **{**extra, **k}), **_LONG}  # noqa: E731
    h = hs.rules.HORIZON_DOUBLINGS
    # a positive gap shrinking detectably, reaching 0 within the horizon: inconclusive
    j = rule(ev((0.06, 0.03, 0.09), change=(-0.03, -0.05, -0.01)))
    assert j.verdict == INCONCLUSIVE and "moving toward 0" in j.reason and "-0.030 nats per doubling" in j.reason
    # the mirror image: a negative gap rising detectably toward 0
    assert rule(ev((-0.06, -0.09, -0.03), change=(0.03, 0.01, 0.05))).verdict == INCONCLUSIVE
    # the same movement on the test split alone is enough
    assert rule(ev((0.06, 0.03, 0.09), test_change=(-0.03, -0.05, -0.01))).verdict == INCONCLUSIVE
    # moving toward 0 but not reaching it within the horizon: the verdict stands, both ways
    slow = 0.06 / h * 0.9
    assert rule(ev((0.06, 0.03, 0.09), change=(-slow, -slow - 0.01, -0.001))).verdict == REPRODUCED
    assert rule(ev((-0.06, -0.09, -0.03), change=(slow, 0.001, slow + 0.01))).verdict == CONTRADICTED
    # exactly reaching 0 at the horizon counts as reaching it
    edge = 0.06 / h
    assert rule(ev((0.06, 0.03, 0.09), change=(-edge, -edge - 0.01, -0.001))).verdict == INCONCLUSIVE
    # fast movement whose interval contains 0 is not detectable movement: the verdict stands
    assert rule(ev((0.06, 0.03, 0.09), change=(-0.05, -0.1, 0.001))).verdict == REPRODUCED
    assert rule(ev((-0.06, -0.09, -0.03), change=(0.05, -0.001, 0.1))).verdict == CONTRADICTED
    # moving away from 0 never blocks a verdict
    assert rule(ev((0.06, 0.03, 0.09), change=(0.05, 0.02, 0.08))).verdict == REPRODUCED
    assert rule(ev((-0.06, -0.09, -0.03), change=(-0.05, -0.08, -0.02))).verdict == CONTRADICTED
    # a change measured on fewer seeds than the gap, or without an interval, cannot overrule it
    assert rule(ev((0.06, 0.03, 0.09), change=(-0.01, NAN, NAN))).verdict == REPRODUCED
    assert rule(ev((0.06, 0.03, 0.09), change=(-0.03, -0.05, -0.01), change_n=SEEDS - 1)).verdict == REPRODUCED
    assert rule(ev((0.06, 0.03, 0.09), change=(-0.03, -0.05, -0.01), change_n=SEEDS)).verdict == INCONCLUSIVE
    # inside the margin and moving detectably: it stays only if it would not leave within the horizon
    m = hs.rules.MARGIN
    inside = (0.0, -0.02, 0.02)
    j = rule(ev(inside, change=(m / h, 0.001, 0.03)))
    assert j.verdict == INCONCLUSIVE and "leave the margin" in j.reason
    assert rule(ev(inside, change=(-m / h, -0.03, -0.001))).verdict == INCONCLUSIVE
    assert rule(ev(inside, change=(0.9 * m / h, 0.001, 0.03))).verdict == NEGLIGIBLE
    assert rule(ev(inside, change=(0.05, -0.001, 0.1))).verdict == NEGLIGIBLE  # movement not detectable


@pytest.mark.parametrize("rule,src,row,extra", TRAINING_ROWS)
def test_rates_are_chosen_before_a_row_is_judged_and_named_in_its_evidence(rule, src, row, extra):
    ev = lambda *a, **k: {**_row(src, row, *a, **{**extra, **k}), **_LONG}  # noqa: E731
    j = rule(ev((0.05, 0.01, 0.09), lr_stored=17))
    assert j.verdict == INCONCLUSIVE and "17 of the 18 runs" in j.evidence and "rates are chosen first" in j.reason
    j = rule(ev((-0.05, -0.09, -0.01), lr=(0.005, 0.02)))
    assert j.verdict == CONTRADICTED and "learning rates 0.005 and 0.02" in j.evidence
    j = rule(ev((0.05, 0.01, 0.09), lr_edge="fixed h = 32"))
    assert j.verdict == REPRODUCED and "fixed h = 32 is the end of its grid" in j.evidence


@pytest.mark.parametrize("rule,src,row,extra", TRAINING_ROWS[:1] + TRAINING_ROWS[2:])
def test_a_verdict_on_models_of_unequal_size_says_so(rule, src, row, extra):
    ev = lambda *a, **k: {**_row(src, row, *a, **{**extra, **k}), **_LONG}  # noqa: E731
    j = rule(ev((0.05, 0.01, 0.09), params=(169728, 401792)))
    assert j.verdict == REPRODUCED and "differ in parameters (169,728 against 401,792, 2.37 times)" in j.reason
    assert "169,728 and 401,792 parameters" in j.evidence
    # within the tolerance: no such phrase, on either side of it
    assert rule(ev((0.05, 0.01, 0.09), params=(1000, 1100))).reason == ""
    assert "differ" in rule(ev((0.05, 0.01, 0.09), params=(1000, 1101))).reason
    j = rule(ev((0.005, -0.02, 0.02), params=(1000, 2000)))
    assert j.verdict == NEGLIGIBLE and "+-" in j.reason and "differ in parameters" in j.reason


def test_too_few_heads_names_every_halving_that_hurts():
    ev = {**_row("budget", "fewheads1", (0.2, 0.15, 0.25)),
          **_row("budget", "fewheads2", (0.1, 0.05, 0.15)),
          **_row("budget", "fewheads4", (0.01, -0.02, 0.04)), **_LONG}
    j = _judged(hs.rules.rule_too_few_heads)(ev)
    assert j.verdict == REPRODUCED and "from 2 to 1, from 4 to 2" in j.evidence and "8 to 4" not in j.evidence
    ev.update(_row("budget", "fewheads1", (-0.05, -0.08, -0.02)))
    j = _judged(hs.rules.rule_too_few_heads)(ev)
    assert j.verdict == CONTRADICTED and "from 4 to 2" in j.evidence


def test_the_long_sweep_head_size_row_is_judged_at_its_one_budget():
    ev = lambda *a, **k: {**_row("long", "dpsize", *a, steps=(1000,), **k), **_LONG}  # noqa: E731
    rule = hs.LIVE_RULES["bhojanapalli-head-size-capacity"]
    j = judge = hs.rules.judge_row(ev((0.05, 0.02, 0.08)), "long", "dpsize")
    assert j.verdict == REPRODUCED and "one budget" in j.evidence and "1,000 steps" in j.evidence
    assert judge.verdict == REPRODUCED and callable(rule)
    judge = lambda *a: hs.rules.judge_row(ev(*a), "long", "dpsize")  # noqa: E731
    assert judge((-0.05, -0.08, -0.02)).verdict == CONTRADICTED
    assert judge((0.05, 0.02, 0.08), (0.01, -0.02, 0.05)).verdict == INCONCLUSIVE
    assert judge((0.05, -0.02, 0.08)).verdict == INCONCLUSIVE


def test_parameter_matched_needs_a_matched_baseline():
    rule = _judged(hs.rule_parameter_matched)
    ev = lambda gap: {**_row("budget", "match", (0.05, 0.01, 0.09), param_gap=gap), **_LONG}  # noqa: E731
    assert rule(ev(hs.MATCH_TOLERANCE)).verdict == REPRODUCED
    j = rule(ev(hs.MATCH_TOLERANCE + 0.01))
    assert j.verdict == INCONCLUSIVE and "not parameter-matched" in j.reason
    assert rule(ev(NAN)).verdict == INCONCLUSIVE
    # runs missing: said first, not as a parameter mismatch
    j = rule({**_row("budget", "match", (0.05, 0.01, 0.09), param_gap=NAN, stored=2), **_LONG})
    assert j.verdict == INCONCLUSIVE and f"2 of the {4 * SEEDS} runs" in j.evidence and "nan" not in j.evidence


def test_live_rules_read_the_live_keys():
    live = _row("live", "gap", (-0.05, -0.09, -0.01), steps=(200,), planned=4, stored=4)
    j = hs.LIVE_RULES["bhojanapalli-fixed-heads-training"](live)
    assert j.verdict == CONTRADICTED and "200 steps" in j.evidence
    with pytest.raises(MissingEvidence):
        _judged(hs.rule_fixed_heads)(live)  # chapter 08's rule reads only the long-scale keys


def test_missing_evidence_is_named():
    ev = _row("budget", "gap", (0.1, 0.0, 0.2))
    with pytest.raises(MissingEvidence, match="ch04_rule_budget_gap_test_lo"):
        _judged(hs.rule_fixed_heads)({k: v for k, v in ev.items() if k != "ch04_rule_budget_gap_test_lo"})


def test_each_claim_card_adds_its_kind_scale_live_verdict_and_ledger_record():
    import json
    from pathlib import Path

    H = json.loads((Path(__file__).resolve().parents[1] / "chapters/evidence/04_head_size_training.json")
                   .read_text(encoding="utf8"))["values"]
    details = hs.claim_details(H)
    assert set(details) == {c.key for c in hs.CLAIMS}
    for c in hs.CLAIMS:
        d = details[c.key]
        assert d["kind"] == c.kind and d["ledger"], c.key
        if c.key in hs.LIVE_RULES:
            assert d["scale"] == "long" and d["live"] == hs.LIVE_RULES[c.key](H).label, c.key
        elif c.kind == hs.rules.TRAINING:
            assert d["live"] == "no such models in the live run", c.key
        else:
            assert d["scale"] == "default" and d["live"] == "", c.key
