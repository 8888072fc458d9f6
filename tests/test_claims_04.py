"""Chapter 04's claims: every rule on synthetic headline values, on both sides of every
threshold, reaching every verdict it can return."""
import math

import pytest

from lowrank.experiments import headsize as hs
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, MissingEvidence

NAN = float("nan")


def _counts(within=15, worst=0.49):
    return {"ch04_table_rows": 15, "ch04_table_within": within, "ch04_table_max_diff": worst,
            "ch04_table_tolerance": hs.PARAMETER_TOLERANCE_M}


def _paired(prefix, diff, lo, hi, n):
    return {f"ch04_{prefix}_diff": diff, f"ch04_{prefix}_lo": lo, f"ch04_{prefix}_hi": hi,
            f"ch04_{prefix}_n": n, f"ch04_{prefix}_text": f"{diff:+.3f} nats ({n} seeds)"}


# The training claims are judged on the long-scale keys (ch04_long_*), from the stored sweep.
_LONG = {"ch04_long_tokens_seen": 102400, "ch04_long_source": "store", "ch04_long_scale": "long"}


_NO_REC = "not measured at this scale (no budget-doubling runs)"


def _gap(diff, lo, hi, n=3):
    """The fixed-heads evidence at the main budget, without budget-doubling runs (default, smoke)."""
    return {"ch04_long_gap_h": 32, "ch04_long_gap_std_dh": 2, "ch04_long_gap_dp": 8, **_LONG,
            **_paired("long_gap", diff, lo, hi, n),
            **{k: v for x in ("rec_gap", "rec_change") for k, v in
               _paired(f"long_{x}", NAN, NAN, NAN, 0).items()},
            "ch04_long_rec_gap_text": _NO_REC, "ch04_long_rec_change_text": _NO_REC, "ch04_long_rec_trend": "was " + _NO_REC,
            "ch04_long_rec_tokens": NAN}


def _rec(gap2, change, n=3, gap1=(-0.11, -0.15, -0.08)):
    """The same with the budget-doubling runs: ``gap2`` and ``change`` are (diff, lo, hi) at
    twice the budget (4,096,000 tokens per run) and of the gap from one budget to the next."""
    return {**_gap(*gap1), **_paired("long_rec_gap", *gap2, n), **_paired("long_rec_change", *change, n),
            "ch04_long_rec_trend": "(trend)", "ch04_long_rec_tokens": 4096000.0}


def _match(diff, lo, hi, n=3, param_gap=0.04):
    return {"ch04_long_match_base_d": 96, "ch04_long_match_base_params_k": 279.0, "ch04_long_match_fixed_h": 32,
            "ch04_long_match_fixed_d": 64, "ch04_long_match_fixed_params_k": 269.0,
            "ch04_long_match_param_gap": param_gap, **_LONG, **_paired("long_match", diff, lo, hi, n)}


def _size(diff, lo, hi, n=3):
    """The head-size claim's evidence, given as the claim's direction (smallest minus largest d_p):
    the headline stores the opposite difference (largest minus smallest), dp_change."""
    return {"ch04_long_size_heads": 4, "ch04_long_dp_first": 4, "ch04_long_dp_last": 32, **_LONG,
            **_paired("long_dp_change", -diff, -hi, -lo, n)}


def test_claims_are_declared_with_sections_and_rule_sentences():
    keys = [c.key for c in hs.CLAIMS]
    assert len(set(keys)) == 4 and all(c.chapter == "04" and c.section.startswith("sec-ch04-") for c in hs.CLAIMS)
    assert all(c.rule_sentence.startswith("Reproduced when") for c in hs.CLAIMS)
    training = [c for c in hs.CLAIMS if c.key != "bhojanapalli-parameter-counts"]
    assert all(c.scale_key == "ch04_long_scale" and "long-scale" in c.rule_sentence for c in training)
    assert set(hs.LIVE_RULES) == {c.key for c in training}
    assert "ch04_long_scale" in hs.HEADLINE_KEYS


def test_parameter_counts_rule_both_sides_of_the_tolerance():
    rule = hs.rule_parameter_counts
    assert rule(_counts()).verdict == REPRODUCED
    assert rule(_counts(worst=hs.PARAMETER_TOLERANCE_M)).verdict == REPRODUCED
    j = rule(_counts(within=14, worst=hs.PARAMETER_TOLERANCE_M + 0.01))
    assert j.verdict == CONTRADICTED and "14 of 15" in j.evidence
    assert rule(_counts(within=15, worst=0.51)).verdict == CONTRADICTED


@pytest.mark.parametrize("rule,make", [(hs.rule_fixed_heads, _gap), (hs.rule_parameter_matched, _match),
                                       (hs.rule_head_size, _size)])
def test_paired_training_rules_reach_every_verdict(rule, make):
    assert rule(make(0.05, 0.01, 0.09)).verdict == REPRODUCED
    assert rule(make(0.05, 1e-6, 0.1)).verdict == REPRODUCED          # just above 0
    j = rule(make(0.05, -1e-6, 0.1))                                   # just below 0: cannot exclude 0
    assert j.verdict == INCONCLUSIVE and "0.050 nats" in j.qualifier and "3 seeds" in j.qualifier
    assert rule(make(-0.05, -0.09, -0.01)).verdict == CONTRADICTED
    assert rule(make(-0.05, -0.1, 1e-6)).verdict == INCONCLUSIVE       # touches 0: not excluded
    one = rule(make(0.3, NAN, NAN, n=1))                               # one seed: never an effect
    assert one.verdict == INCONCLUSIVE and "one seed" in one.qualifier
    assert "102,400 training tokens" in one.evidence and "stored long-scale sweep" in one.evidence


def test_head_size_rule_reads_the_difference_in_the_claims_direction():
    # dp_change = loss(largest d_p) - loss(smallest d_p) < 0 means larger heads are better: reproduced
    h = {"ch04_long_size_heads": 4, "ch04_long_dp_first": 4, "ch04_long_dp_last": 32, **_LONG,
         **_paired("long_dp_change", -0.05, -0.08, -0.02, 3)}
    j = hs.rule_head_size(h)
    assert j.verdict == REPRODUCED and "+0.050 nats" in j.evidence and "+0.020 to +0.080" in j.evidence


def test_live_rules_read_the_live_keys_and_say_so():
    live = {k.replace("ch04_long_", "ch04_"): v for k, v in _gap(-0.05, -0.09, -0.01).items()}
    live["ch04_tokens_seen"] = 51200
    j = hs.LIVE_RULES["bhojanapalli-fixed-heads-training"](live)
    assert j.verdict == CONTRADICTED and "51,200 training tokens" in j.evidence and "stored" not in j.evidence
    with pytest.raises(MissingEvidence):
        hs.rule_fixed_heads(live)  # chapter 08's rule reads only the long-scale keys
    this_run = {**_gap(0.05, 0.01, 0.09), "ch04_long_source": "this run"}
    assert "stored" not in hs.rule_fixed_heads(this_run).evidence


def test_parameter_matched_needs_a_matched_baseline():
    rule = hs.rule_parameter_matched
    assert rule(_match(0.05, 0.01, 0.09, param_gap=hs.MATCH_TOLERANCE)).verdict == REPRODUCED
    j = rule(_match(0.05, 0.01, 0.09, param_gap=hs.MATCH_TOLERANCE + 0.01))
    assert j.verdict == INCONCLUSIVE and "not parameter-matched" in j.qualifier


def test_missing_evidence_is_named():
    with pytest.raises(MissingEvidence, match="ch04_long_gap_lo"):
        hs.rule_fixed_heads({k: v for k, v in _gap(0.1, 0.0, 0.2).items() if k != "ch04_long_gap_lo"})
    assert math.isnan(_gap(0.1, NAN, NAN)["ch04_long_gap_lo"])


def test_fixed_heads_rule_is_judged_at_the_largest_budget_and_asks_whether_the_gap_still_closes():
    rule = hs.rule_fixed_heads
    closing = (0.05, 0.02, 0.08)      # the gap shrank by 0.05 nats over the doubling (interval above 0)
    flat = (0.01, -0.01, 0.03)        # no detectable change
    widening = (-0.02, -0.04, -0.01)
    # below 0 at 2,000 steps and no longer closing: contradicted, whatever the 1,000-step gap said
    j = rule(_rec((-0.06, -0.09, -0.03), flat))
    assert j.verdict == CONTRADICTED and "4,096,000 training tokens" in j.evidence and "102,400" in j.evidence
    assert "-0.060 nats" in j.evidence and "+0.010 nats" in j.evidence and "stored long-scale sweep" in j.evidence
    assert rule(_rec((-0.06, -0.09, -0.03), widening)).verdict == CONTRADICTED
    assert rule(_rec((-0.06, -0.09, -0.03), (0.01, hs.CLOSING_THRESHOLD, 0.03))).verdict == CONTRADICTED  # touches 0
    # below 0 but still closing significantly: inconclusive, and the qualifier says by how much
    j = rule(_rec((-0.06, -0.09, -0.03), closing))
    assert j.verdict == INCONCLUSIVE
    assert "still closing the gap at 4.1 M tokens per run" in j.qualifier
    assert "+0.050 nats per doubling" in j.qualifier and "+0.020 to +0.080" in j.qualifier and "3 seeds" in j.qualifier
    assert rule(_rec((-0.06, -0.09, -0.03), (0.05, 1e-6, 0.1))).verdict == INCONCLUSIVE  # just above 0
    # above 0 at the larger budget: reproduced, even though the 1,000-step gap was below 0
    assert rule(_rec((0.03, 0.01, 0.05), closing)).verdict == REPRODUCED
    assert rule(_rec((0.03, 1e-6, 0.05), flat)).verdict == REPRODUCED
    # the interval contains 0: inconclusive, with the smallest detectable effect
    j = rule(_rec((-0.01, -0.04, 0.02), closing))
    assert j.verdict == INCONCLUSIVE and "0.030 nats" in j.qualifier
    # one seed at the larger budget: never an effect
    assert "one seed" in rule(_rec((-0.06, NAN, NAN), (0.05, NAN, NAN), n=1)).qualifier
    # a gap below 0 whose change has no interval cannot be called settled
    h = {**_rec((-0.06, -0.09, -0.03), closing), **_paired("long_rec_change", 0.05, NAN, NAN, 1)}
    j = rule(h)
    assert j.verdict == INCONCLUSIVE and "no interval" in j.qualifier


def test_fixed_heads_rule_without_recovery_runs_judges_the_main_budget():
    j = hs.rule_fixed_heads(_gap(-0.05, -0.09, -0.01))
    assert j.verdict == CONTRADICTED and "no budget-doubling runs" in j.evidence
    with pytest.raises(MissingEvidence, match="ch04_long_rec_gap_n"):
        hs.rule_fixed_heads({k: v for k, v in _gap(-0.05, -0.09, -0.01).items() if k != "ch04_long_rec_gap_n"})
