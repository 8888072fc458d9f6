"""Chapter 07's claim rules on synthetic headline values: both sides of every threshold, every verdict."""
import math

import pytest

from lowrank.experiments import trained as X
from lowrank.experiments.verdicts import (CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, Judgement,
                                          MissingEvidence)

NAN = float("nan")


def mechanism(**kw):
    h = dict(ch07_mini_dh=32, ch07_logit_maps=3000, ch07_logit_min=31, ch07_logit_max=32, ch07_ret_bounded=140,
             ch07_ret_cases=140)
    return {**h, **kw}


def test_mechanism_rank_at_most_dh_is_reproduced_not_equality():
    j = X.rule_mechanism(mechanism())
    assert j.verdict == REPRODUCED and "3000" in j.evidence and X.DEFAULT_TOL in j.evidence
    # rank below d_h everywhere still reproduces the claim (it is rank <= d_h, not == d_h)
    assert X.rule_mechanism(mechanism(ch07_logit_min=20, ch07_logit_max=30)).verdict == REPRODUCED


def test_mechanism_one_excess_contradicts():
    assert X.rule_mechanism(mechanism(ch07_logit_max=33)).verdict == CONTRADICTED
    assert X.rule_mechanism(mechanism(ch07_ret_bounded=139)).verdict == CONTRADICTED


def test_mechanism_without_long_sequences_is_inconclusive():
    j = X.rule_mechanism(mechanism(ch07_logit_maps=0, ch07_logit_min=NAN, ch07_logit_max=NAN, ch07_ret_bounded=0,
                                   ch07_ret_cases=0))
    assert j.verdict == INCONCLUSIVE and j.qualifier
    # MiniLM without n > d_h, retrieval runs with: judged on the retrieval runs
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


def reduction(not_later=4, later=0, beyond=0, alpha=0.3, lo=0.1, hi=0.5, seeds=5, k=4, **kw):
    h = dict(ch07_ret_seeds=seeds, ch07_ret_n_count=k, ch07_ret_not_later=not_later, ch07_ret_later=later,
             ch07_ret_beyond=beyond, ch07_ret_alpha=alpha, ch07_ret_alpha_lo=lo, ch07_ret_alpha_hi=hi,
             ch07_ret_log_alpha=0.269, ch07_ret_ns="16, 32, 64 and 128", ch07_ret_dh="1, 2, 3, 4, 6, 8 and 16",
             ch07_ret_test_seq=10000, ch07_ret_acc_se_max=0.002, ch07_ret_source="the committed long-scale store",
             ch07_ret_points="n = 16: d*_acc 3 [3, 4], d*_rank 4 [3, 4]")
    return {**h, **kw}


def test_reduction_reproduced_needs_no_later_everywhere_and_log_like_growth():
    j = X.rule_model_reduction(reduction())
    assert j.verdict == REPRODUCED and "5 seeds" in j.evidence and "10000" in j.evidence
    # the log-law exponent just inside and just outside the alpha interval
    assert X.rule_model_reduction(reduction(lo=0.269)).verdict == REPRODUCED
    assert X.rule_model_reduction(reduction(lo=0.27)).verdict == WEAKER
    assert X.rule_model_reduction(reduction(hi=0.268)).verdict == WEAKER


def test_reduction_weaker_names_how_growth_fails():
    j = X.rule_model_reduction(reduction(alpha=0.6, lo=0.45, hi=0.8))
    assert j.verdict == WEAKER and "redundant" in j.qualifier and "not like ln n" in j.qualifier
    j = X.rule_model_reduction(reduction(alpha=0.1, lo=0.0, hi=0.3))   # interval reaches 0: no growth shown
    assert j.verdict == WEAKER and "does not grow" in j.qualifier


def test_reduction_contradicted_needs_a_real_accuracy_gap_beyond_rank_saturation():
    assert X.rule_model_reduction(reduction(not_later=3, later=1, beyond=1)).verdict == CONTRADICTED
    # accuracy saturates later but the loss at d*_rank is not shown to exceed the margin: inconclusive
    j = X.rule_model_reduction(reduction(not_later=3, later=1, beyond=0))
    assert j.verdict == INCONCLUSIVE and "grid" in j.qualifier
    # intervals overlap 0 at one n: inconclusive
    assert X.rule_model_reduction(reduction(not_later=3, later=0)).verdict == INCONCLUSIVE


def test_reduction_too_few_seeds_or_lengths_is_inconclusive():
    assert X.rule_model_reduction(reduction(seeds=1, lo=NAN, hi=NAN)).verdict == INCONCLUSIVE
    assert X.rule_model_reduction(reduction(k=1, not_later=1)).verdict == INCONCLUSIVE


def _runs(acc, rank, ns=(16, 128), dims=(1, 2, 4, 8), seeds=5, noise=0.0):
    """A synthetic run table: acc[n][i] and rank[n][i] (rank / n) per d_h, identical over seeds
    plus a seed-dependent offset of size ``noise``."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(0)
    rows = []
    for n in ns:
        for i, d in enumerate(dims):
            for s in range(seeds):
                e = noise * rng.standard_normal()
                rows.append(dict(n=n, head_dim=d, seed=s, test_acc=min(1.0, acc[n][i] + e),
                                 hardmax_rank=n * min(1.0, rank[n][i] + e), numerical_rank=n * rank[n][i]))
    return pd.DataFrame(rows)


def test_reduction_points_equivalence_and_paired_bootstrap():
    acc = {16: [0.5, 0.995, 1.0, 1.0], 128: [0.2, 0.6, 0.985, 1.0]}
    rank = {16: [0.2, 0.98, 1.0, 1.0], 128: [0.05, 0.5, 0.95, 1.0]}
    red = X.reduction_points(_runs(acc, rank), margin=0.01)
    P = red["points"].set_index(["criterion", "n"])
    # accuracy within 0.01 from d_h = 2 at n = 16 (gap 0.005), only at 8 at n = 128 (gap 0.015 > 0.01)
    assert P.loc[("accuracy", 16), "head_dim"] == 2 and P.loc[("accuracy", 128), "head_dim"] == 8
    assert P.loc[("hardmax rank", 16), "head_dim"] == 4 and P.loc[("hardmax rank", 128), "head_dim"] == 8
    r = red["ratio"].set_index("n")
    assert r.loc[16, "hi"] < 0 and r.loc[128, "log2_ratio"] == 0
    alpha, lo, hi = X.growth_exponent(red["boot"], red["points"])
    assert alpha == pytest.approx(2 / 3) and lo <= alpha <= hi  # ln(8 / 2) / ln(128 / 16)
    assert X.log_law_exponent([16, 32, 64, 128]) == pytest.approx(0.269, abs=0.001)
    with pytest.raises(ValueError):
        X.reduction_points(_runs(acc, rank), margin=0.01, n_boot=100)


def test_equivalence_needs_the_upper_bound_inside_the_margin():
    import numpy as np
    d = np.array([1, 2, 4])
    V = np.array([[0.5] * 5, [0.995, 0.99, 1.0, 0.99, 1.0], [1.0] * 5])
    assert X.equivalent_from(d, V, 0.01) == (2.0, 2)
    # noisy seeds: the mean gap is small but the one-sided bound is not
    V2 = np.array([[0.5] * 5, [1.0, 0.97, 1.0, 0.98, 1.0], [1.0] * 5])
    assert X.equivalent_from(d, V2, 0.01)[0] == 4.0
    # one seed: only the best qualifies
    assert X.equivalent_from(d, V[:, :1], 0.01)[0] == 4.0


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


def test_censored_law_range_uses_the_grid_resolution():
    import numpy as np
    import pandas as pd
    grid = [1, 2, 3, 4, 6, 8, 16]
    pts = pd.DataFrame({"criterion": "accuracy", "n": [16, 32, 64, 128], "head_dim": [3, 3, 4, 6]})
    lo, hi = X.censored_law_range(pts, grid, "ln n")
    # (2, 3] / ln 16, (2, 3] / ln 32, (3, 4] / ln 64, (4, 6] / ln 128 intersect in (4 / ln 128, 3 / ln 32]
    assert lo == pytest.approx(4 / np.log(128)) and hi == pytest.approx(3 / np.log(32)) and lo < hi
    lo, hi = X.censored_law_range(pts, grid, "sqrt n")
    assert lo >= hi  # (2/4, 3/4] and (3/8, 4/8] do not intersect


def test_model_reduction_row_names_the_scale_of_its_runs():
    # Judged on the committed long store, the row must say "long" even when the notebook ran at default.
    from lowrank.experiments import trained
    claim = next(c for c in trained.CLAIMS if c.key == "minli-model-reduction")
    assert claim.scale_key == "ch07_ret_scale" and claim.scale_key in trained.HEADLINE_KEYS
