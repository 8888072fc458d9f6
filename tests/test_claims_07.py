"""Chapter 07's claim rules on synthetic headline values: both sides of every threshold, every verdict."""
import math

import pytest

from lowrank.experiments import trained as X
from lowrank.experiments.verdicts import (CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, Judgement,
                                          MissingEvidence)

NAN = float("nan")


def mechanism(**kw):
    h = dict(ch07_mini_dh=32, ch07_logit_maps=3000, ch07_logit_min=31, ch07_logit_max=32, ch07_clf_bounded=24,
             ch07_clf_cases=24, ch07_clf_exact=24)
    return {**h, **kw}


def test_mechanism_rank_at_most_dh_is_reproduced_not_equality():
    j = X.rule_mechanism(mechanism())
    assert j.verdict == REPRODUCED and "3000" in j.evidence and X.DEFAULT_TOL in j.evidence
    # rank below d_h everywhere still reproduces the claim (it is rank <= d_h, not == d_h)
    assert X.rule_mechanism(mechanism(ch07_logit_min=20, ch07_logit_max=30, ch07_clf_exact=0)).verdict == REPRODUCED


def test_mechanism_one_excess_contradicts():
    assert X.rule_mechanism(mechanism(ch07_logit_max=33)).verdict == CONTRADICTED
    assert X.rule_mechanism(mechanism(ch07_clf_bounded=23)).verdict == CONTRADICTED


def test_mechanism_without_long_sequences_is_inconclusive():
    j = X.rule_mechanism(mechanism(ch07_logit_maps=0, ch07_logit_min=NAN, ch07_logit_max=NAN, ch07_clf_bounded=0,
                                   ch07_clf_cases=0, ch07_clf_exact=0))
    assert j.verdict == INCONCLUSIVE and j.qualifier
    # MiniLM without n > d_h, classifiers with: judged on the classifiers
    j = X.rule_mechanism(mechanism(ch07_logit_maps=0, ch07_logit_min=NAN, ch07_logit_max=NAN))
    assert j.verdict == REPRODUCED


def barrier(mean=0.62, half=0.02, above=2, heads=72, **kw):
    lo, hi = X.wilson_interval(above, heads)
    h = dict(ch07_n_max=512, ch07_barrier=0.632, ch07_head_mean=mean, ch07_head_mean_lo=mean - half,
             ch07_head_mean_hi=mean + half, ch07_heads=heads, ch07_heads_above=above, ch07_heads_above_lo=lo,
             ch07_heads_above_hi=hi, ch07_windows_nmax=2)
    return {**h, **kw}


def test_barrier_near_with_a_ceiling_is_reproduced():
    assert X.rule_trained_barrier(barrier(above=0, heads=200)).verdict == REPRODUCED
    # one side of the margin: the interval [0.59, 0.63] sits inside [0.582, 0.682]
    assert X.rule_trained_barrier(barrier(mean=0.61, above=0, heads=200)).verdict == REPRODUCED
    # ... and just across it: [0.56, 0.60] reaches below 0.582
    assert X.rule_trained_barrier(barrier(mean=0.58, above=0, heads=200)).verdict == INCONCLUSIVE


def test_barrier_far_below_mean_contradicts_unless_it_is_a_ceiling():
    j = X.rule_trained_barrier(barrier(mean=0.24, half=0.04, above=4, heads=72))
    assert j.verdict == CONTRADICTED and "4 of 72" in j.evidence
    j = X.rule_trained_barrier(barrier(mean=0.24, half=0.04, above=0, heads=200))
    assert j.verdict == WEAKER and "bounds" in j.qualifier
    # far above the barrier: contradicted
    assert X.rule_trained_barrier(barrier(mean=0.8, above=150, heads=200)).verdict == CONTRADICTED


def test_barrier_many_heads_above_contradicts_even_at_the_right_mean():
    j = X.rule_trained_barrier(barrier(mean=0.63, half=0.02, above=40, heads=100))
    assert j.verdict == CONTRADICTED
    # the share straddles 5 %: inconclusive, naming the half-widths it could resolve
    j = X.rule_trained_barrier(barrier(mean=0.63, half=0.02, above=4, heads=72))
    assert j.verdict == INCONCLUSIVE and "half-widths" in j.qualifier


def test_barrier_one_head_is_inconclusive():
    j = X.rule_trained_barrier(barrier(heads=1, above=0, ch07_head_mean_lo=NAN, ch07_head_mean_hi=NAN))
    assert j.verdict == INCONCLUSIVE


def reduction(sd=0.005, se=0.004, seeds=5, dstar=4, rank_at=8, ln_n=4.17, **kw):
    h = dict(ch07_seeds=seeds, ch07_test_docs=10000, ch07_acc_sd=sd, ch07_acc_binom_se=se,
             ch07_acc_mde=X.detectable_difference(sd, se, seeds), ch07_acc_dstar=dstar, ch07_sat_hard=rank_at,
             ch07_clf_ln_n=ln_n, ch07_clf_n=65, ch07_acc_low=0.5, ch07_acc_high=0.9, ch07_dh_min=1)
    return {**h, **kw}


def test_detectable_difference():
    # issue 18's numbers: 2 seeds, seed sd 0.074, binomial s.e. 0.043 -> about 0.21
    assert X.detectable_difference(0.074, 0.043, 2) == pytest.approx(0.207, abs=0.002)
    # the binomial s.e. floors a spread that came out too small
    assert X.detectable_difference(0.001, 0.043, 2) == X.detectable_difference(0.043, 0.043, 2)
    assert math.isnan(X.detectable_difference(NAN, 0.04, 1)) and math.isnan(X.detectable_difference(0.1, 0.04, 1))


def test_reduction_underpowered_is_inconclusive_with_the_detectable_difference():
    j = X.rule_model_reduction(reduction(sd=0.074, se=0.043, seeds=2, dstar=NAN))
    assert j.verdict == INCONCLUSIVE and "0.21" in j.qualifier
    j = X.rule_model_reduction(reduction(sd=NAN, seeds=1))
    assert j.verdict == INCONCLUSIVE and "one seed" in j.qualifier
    # just above and just below the margin
    assert X.reduction_powered(reduction(sd=0.0072, se=0.001, seeds=2)) is False
    assert X.reduction_powered(reduction(sd=0.0071, se=0.001, seeds=2)) is True


def test_reduction_powered_verdicts():
    assert X.rule_model_reduction(reduction(dstar=4, rank_at=8)).verdict == REPRODUCED
    assert X.rule_model_reduction(reduction(dstar=8, rank_at=4)).verdict == REPRODUCED   # 8 <= 2 ln n = 8.3
    j = X.rule_model_reduction(reduction(dstar=16, rank_at=16))
    assert j.verdict == WEAKER and "not near ln n" in j.qualifier
    assert X.rule_model_reduction(reduction(dstar=2, rank_at=2)).verdict == WEAKER      # 2 < ln n / 2 = 2.09
    assert X.rule_model_reduction(reduction(dstar=4, rank_at=16)).verdict == CONTRADICTED
    assert X.rule_model_reduction(reduction(dstar=NAN)).verdict == INCONCLUSIVE


def test_rules_need_their_evidence_and_claims_are_well_formed():
    with pytest.raises(MissingEvidence):
        X.rule_model_reduction({})
    assert {c.key for c in X.CLAIMS} == {"bhojanapalli-trained-logit-rank", "minli-trained-barrier",
                                         "minli-model-reduction"}
    for c in X.CLAIMS:
        assert c.chapter == "07" and c.section.startswith("sec-ch07-") and c.rule_sentence
    h = {**mechanism(), **barrier(), **reduction()}
    assert all(isinstance(c.judge(h), Judgement) for c in X.CLAIMS)


def test_every_rule_key_is_a_headline_key():
    import inspect
    import re
    for c in X.CLAIMS:
        keys = re.findall(r"need\(h, \"(ch07_\w+)\"\)|need\(h, '(ch07_\w+)'\)", inspect.getsource(c.rule))
        for k in {a or b for a, b in keys}:
            assert k in X.HEADLINE_KEYS, k
