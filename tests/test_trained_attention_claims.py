"""Chapter 07's claim rules on synthetic headline values: both sides of every threshold, every verdict."""
import ast
import json
import math

import pytest

from lowrank.experiments import trained_attention as ch
from lowrank.experiments.shared.intervals import wilson_interval
from lowrank.experiments.verdicts import (CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, Judgement,
                                          MissingEvidence, claim_of)

NAN = float("nan")

# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_mechanism = claim_of(ch.CLAIMS, "bhojanapalli-trained-logit-rank").judge
_barrier = claim_of(ch.CLAIMS, "minli-trained-barrier").judge
_reduction = claim_of(ch.CLAIMS, "minli-model-reduction").judge
_truncation = claim_of(ch.CLAIMS, "minli-truncation").judge


def mechanism(**kw):
    h = dict(ch07_mini_dh=32, ch07_logit_maps=3000, ch07_logit_min=31, ch07_logit_max=32, ch07_ret_bounded=140,
             ch07_ret_cases=140)
    return {**h, **kw}


def test_mechanism_rank_at_most_dh_is_reproduced_not_equality():
    j = _mechanism(mechanism())
    assert j.verdict == REPRODUCED and "3000" in j.evidence and ch.DEFAULT_TOL in j.evidence
    # rank below d_h everywhere still reproduces the claim (it is rank <= d_h, not == d_h)
    assert _mechanism(mechanism(ch07_logit_min=20, ch07_logit_max=30)).verdict == REPRODUCED


def test_mechanism_one_excess_contradicts():
    assert _mechanism(mechanism(ch07_logit_max=33)).verdict == CONTRADICTED
    assert _mechanism(mechanism(ch07_ret_bounded=139)).verdict == CONTRADICTED


def test_mechanism_without_long_sequences_is_inconclusive():
    j = _mechanism(mechanism(ch07_logit_maps=0, ch07_logit_min=NAN, ch07_logit_max=NAN, ch07_ret_bounded=0,
                             ch07_ret_cases=0))
    assert j.verdict == INCONCLUSIVE and j.reason
    # MiniLM without n > d_h, retrieval runs with: judged on the retrieval runs
    j = _mechanism(mechanism(ch07_logit_maps=0, ch07_logit_min=NAN, ch07_logit_max=NAN))
    assert j.verdict == REPRODUCED


def barrier(mean=0.62, half=0.02, above=2, heads=72, r_mean=0.3, r_half=0.02, r_above=20, runs=20, **kw):
    lo, hi = wilson_interval(above, heads)
    rlo, rhi = wilson_interval(r_above, runs)
    h = dict(ch07_n_max=512, ch07_barrier=0.632, ch07_head_mean=mean, ch07_head_mean_lo=mean - half,
             ch07_head_mean_hi=mean + half, ch07_heads=heads, ch07_heads_above=above, ch07_heads_above_lo=lo,
             ch07_heads_above_hi=hi, ch07_windows_nmax=2, ch07_bar_ret_runs=runs, ch07_bar_ret_above=r_above,
             ch07_bar_ret_mean=r_mean, ch07_bar_ret_lo=r_mean - r_half, ch07_bar_ret_hi=r_mean + r_half,
             ch07_bar_ret_share_lo=rlo, ch07_bar_ret_share_hi=rhi, ch07_bar_ret_dh=16,
             ch07_bar_ret_ns="16, 32, 64, 128 and 256")
    return {**h, **kw}


def at_barrier(**kw):
    """Both models sit at the barrier with no head above it."""
    return barrier(above=0, heads=200, r_mean=0.0, r_half=0.02, r_above=0, runs=100, **kw)


def test_barrier_every_model_at_it_is_reproduced():
    assert _barrier(at_barrier()).verdict == REPRODUCED
    # one side of the margin: MiniLM's [0.59, 0.63] sits inside [0.582, 0.682] ...
    assert _barrier(at_barrier(mean=0.61)).verdict == REPRODUCED
    # ... and just across it: [0.56, 0.60] reaches below 0.582
    assert _barrier(at_barrier(mean=0.58)).verdict == INCONCLUSIVE
    # the same for the retrieval heads' excess: [0.02, 0.06] reaches above the margin 0.05
    assert _barrier(at_barrier(ch07_bar_ret_lo=0.02, ch07_bar_ret_hi=0.06)).verdict == INCONCLUSIVE


def test_barrier_retrieval_heads_above_it_contradict_even_when_minilm_sits_at_it():
    j = _barrier(barrier(above=0, heads=200, r_mean=0.35, r_above=95, runs=100))
    assert j.verdict == CONTRADICTED
    assert "retrieval heads" in j.evidence and "all-MiniLM-L6-v2" in j.evidence and "chapter 04" in j.evidence
    assert "95 of 100" in j.evidence and "hardmax rank" in j.evidence
    # every run at rank n: no spread, and no zero-width interval printed
    j = _barrier(barrier(above=0, heads=200, r_mean=0.36, r_half=0.0, r_above=5, runs=5))
    assert j.verdict == CONTRADICTED and "no spread" in j.evidence and "[+0.36, +0.36]" not in j.evidence


def test_barrier_far_below_is_weaker_only_with_a_ceiling_in_every_model():
    below = dict(mean=0.24, half=0.04, above=0, heads=200, r_mean=-0.3, r_above=0, runs=100)
    j = _barrier(barrier(**below))
    assert j.verdict == WEAKER and "bounds" in j.reason
    # far below on the mean but 4 of 72 heads above: the share straddles 5 %, far from the barrier
    assert _barrier(barrier(**{**below, "above": 4, "heads": 72})).verdict == CONTRADICTED
    # one model at the barrier, the other far below with a ceiling: still the weaker form
    assert _barrier(barrier(**{**below, "mean": 0.63, "half": 0.02})).verdict == WEAKER


def test_barrier_share_straddling_the_ceiling_is_inconclusive():
    j = _barrier(barrier(mean=0.63, half=0.02, above=4, heads=72, r_mean=0.0, r_above=0, runs=100))
    assert j.verdict == INCONCLUSIVE and j.reason
    assert _barrier(barrier(mean=0.63, half=0.02, above=40, heads=100, r_mean=0.0, r_above=0,
                            runs=100)).verdict == CONTRADICTED


def test_barrier_without_intervals_is_inconclusive_and_one_model_suffices():
    none = barrier(heads=1, above=0, ch07_head_mean_lo=NAN, ch07_head_mean_hi=NAN, runs=1, r_above=1,
                   ch07_bar_ret_lo=NAN, ch07_bar_ret_hi=NAN)
    assert _barrier(none).verdict == INCONCLUSIVE
    j = _barrier(barrier(above=0, heads=200, runs=0, r_above=0, ch07_bar_ret_lo=NAN,
                         ch07_bar_ret_hi=NAN))
    assert j.verdict == REPRODUCED and "too few" in j.evidence
    assert ch.barrier_class(NAN, 0.0, 0.0, 0.01) == "unclear"


def pts(rows):
    """Grid-interval records: rows of (n, a_lo, a_hi, r_lo, r_hi, gap)."""
    return ch.point_records([dict(zip(("n", "a_lo", "a_hi", "r_lo", "r_hi", "gap"), r)) for r in rows])


LOG_LIKE = [(16, 1, 2, 1, 2, 0.0), (32, 3, 4, 3, 4, 0.0), (64, 5, 6, 4, 6, 0.0), (128, 7, 8, 7, 9, 0.0),
            (256, 9, 10, 9, 10, 0.0)]   # d* = 2.9 ln n - 6.5 fits; c n^alpha, convex in ln n, does not
POWER_LIKE = [(16, 1, 2, 1, 2, 0.0), (32, 2, 3, 2, 3, 0.0), (64, 4, 5, 4, 5, 0.0), (128, 8, 9, 8, 9, 0.0),
              (256, 12, 16, 12, 16, 0.0)]  # d* doubles with n: no a + b ln n fits
PAIR = [(16, 3, 4, 3, 5, 0.0), (32, 4, 5, 4, 6, 0.0)]


def reduction(single=LOG_LIKE, pair=PAIR, **kw):
    h = dict(ch07_red_single=pts(single), ch07_red_pair=pts(pair), ch07_red_single_runs=325,
             ch07_red_single_grid=325, ch07_red_single_plateau=320, ch07_red_pair_runs=104, ch07_red_pair_grid=156,
             ch07_red_pair_plateau=100, ch07_ret_corr=0.997, ch07_ret_pair_corr=0.8, ch07_ret_cap=8000,
             ch07_ret_ext_cap=ch.EXTENDED_CAP, ch07_ret_extended=41)
    return {**h, **kw}


def test_reduction_needs_the_capped_runs_trained_again_to_the_registered_cap():
    j = _reduction(reduction())
    assert j.verdict == REPRODUCED and "trained again to 32,000 (41 stored)" in j.evidence
    for ext in (0, 16000):
        j = _reduction(reduction(ch07_ret_ext_cap=ext))
        assert j.verdict == INCONCLUSIVE and "registered cap of 32,000 steps" in j.reason


def test_reduction_reproduced_when_ln_n_fits_and_a_power_law_does_not():
    ns, lo, hi = [16, 32, 64, 128, 256], [1, 3, 5, 7, 9], [2, 4, 6, 8, 10]
    assert ch.law_fit(ns, lo, hi, "a + b ln n")["fits"] and not ch.law_fit(ns, lo, hi, "c n^alpha")["fits"]
    # one grid step lower at the largest n and the power law is still out; at the smallest, still in for ln n
    assert ch.law_fit(ns, [2, 3, 5, 7, 9], [3, 4, 6, 8, 10], "a + b ln n")["fits"]
    j = _reduction(reduction())
    assert j.verdict == REPRODUCED
    assert "325 of 325" in j.evidence and "met the plateau" in j.evidence and "(3, 4]" in j.evidence


def test_reduction_weaker_when_no_ln_n_fits_the_grid_intervals():
    j = _reduction(reduction(single=POWER_LIKE))
    assert j.verdict == WEAKER and "redundant" in j.reason and "c n^alpha" in j.reason
    # the qualifier says that on the one-key task accuracy and rank / n are nearly one quantity
    assert "nearly one quantity" in j.reason and "0.997" in j.reason


def test_reduction_inconclusive_when_both_laws_fit():
    wide = [(16, 1, 4, 1, 4, 0.0), (32, 2, 5, 2, 5, 0.0), (64, 2, 6, 2, 6, 0.0)]
    j = _reduction(reduction(single=wide))
    assert j.verdict == INCONCLUSIVE and "alpha in" in j.reason


def test_reduction_contradicted_on_either_task_by_a_real_gap_beyond_rank_saturation():
    late = LOG_LIKE[:-1] + [(256, 8, 9, 4, 5, 0.02)]  # accuracy wholly after rank, 0.02 below the best there
    assert _reduction(reduction(single=late)).verdict == CONTRADICTED
    late_pair = [(16, 5, 6, 2, 3, 0.05)] + PAIR[1:]
    assert _reduction(reduction(pair=late_pair)).verdict == CONTRADICTED
    # later, but the gap is within the margin: inconclusive, naming the gap it could resolve
    small = LOG_LIKE[:-1] + [(256, 8, 9, 4, 5, 0.005)]
    j = _reduction(reduction(single=small))
    assert j.verdict == INCONCLUSIVE and "accuracy gap" in j.reason
    # touching intervals count as later: (5, 6] against (4, 5]
    touch = LOG_LIKE[:-1] + [(256, 5, 6, 4, 5, 0.02)]
    assert _reduction(reduction(single=touch)).verdict == CONTRADICTED


def test_reduction_partial_store_is_inconclusive_and_says_what_it_needs():
    j = _reduction(reduction(single=LOG_LIKE[:2]))
    assert j.verdict == INCONCLUSIVE and "3 lengths" in j.reason and "it has 2" in j.reason
    j = _reduction(reduction(pair=PAIR[:1]))
    assert j.verdict == INCONCLUSIVE
    j = _reduction(reduction(single=[], pair=[]))
    assert j.verdict == INCONCLUSIVE and "no n with a complete grid" in j.evidence


def test_point_records_are_plain_data_with_an_open_top():
    rows = [dict(n=16, a_lo=12.0, a_hi=math.inf, r_lo=2.0, r_hi=3.0, gap=0.001)]
    recs = ch.point_records(rows)
    assert recs == [dict(n=16, a_lo=12.0, a_hi=None, r_lo=2.0, r_hi=3.0, gap=0.001)]
    # they survive the glued repr chapter 08 reads, and JSON
    assert ast.literal_eval(repr(recs)) == recs and json.loads(json.dumps(recs)) == recs
    assert ch.point_records([]) == []


def test_an_open_top_read_from_a_record_is_above_every_grid_value():
    # d*_rank open above the grid at n = 64 on the one-key task: accuracy saturating at (4, 8] is not later
    single = LOG_LIKE[:2] + [(64, 4, 8, 4, math.inf, 0.0)] + LOG_LIKE[3:]
    j = _reduction(reduction(single=single))
    assert "d*_rank in (4, inf]" in j.evidence and j.verdict != CONTRADICTED


def test_law_fit_censoring_and_prediction():
    # an open top constrains only from below
    f = ch.law_fit([16, 32, 64], [2, 3, 4], [3, 4, math.inf], "a + b ln n", predict=128)
    assert f["fits"] and f["pred_lo"] > 4 and f["q_lo"] > 0
    # ... and a bottom far above what the first two allow excludes the law
    assert not ch.law_fit([16, 32, 64], [2, 3, 12], [3, 4, math.inf], "a + b ln n")["fits"]
    # three points on d* = ln n exactly inside (d* - 0.5, d* + 0.5]: the prediction brackets ln 256
    ns = [16, 32, 64, 128]
    f = ch.law_fit(ns, [math.log(n) - 0.5 for n in ns], [math.log(n) + 0.5 for n in ns], "a + b ln n", predict=256)
    assert f["pred_lo"] < math.log(256) < f["pred_hi"] and f["q_lo"] < 1 < f["q_hi"]
    g = ch.law_fit(ns, [math.log(n) - 0.5 for n in ns], [math.log(n) + 0.5 for n in ns], "c (ln n)^beta")
    assert g["fits"] and g["q_lo"] < 1 < g["q_hi"]
    with pytest.raises(ValueError):
        ch.law_fit(ns, [1] * 4, [2] * 4, "sqrt n")


def trunc(points=((32, 2, 3), (64, 3, 4), (128, 4, 6), (256, 4, 6)), **kw):
    """``points``: (n, prev, r) per n, as the records the headline carries."""
    rows = [dict(zip(("n", "prev", "r"), p)) for p in points]
    h = dict(ch07_tr_dh=32, ch07_trr_points=ch.truncation_records(rows), ch07_tr_docs=200, ch07_tr_ranks="1, 2, 3, 4, 6, 8, 12, 16, 24 and 32")
    return {**h, **kw}


def test_truncation_reproduced_near_log_n_weaker_above_contradicted_without_redundancy():
    j = _truncation(trunc())
    assert j.verdict == REPRODUCED and "2 ln n" in j.evidence
    # at n = 32, 2 ln n = 6.93: an interval (6, 8] still reaches it, (8, 12] does not
    assert _truncation(trunc(((32, 6, 8), (64, 3, 4)))).verdict == REPRODUCED
    j = _truncation(trunc(((32, 8, 12), (64, 3, 4))))
    assert j.verdict == WEAKER and "log n" in j.reason
    assert _truncation(trunc(((32, 24, 32), (64, 3, 4)))).verdict == CONTRADICTED
    assert _truncation(trunc(())).verdict == INCONCLUSIVE


def test_rules_need_their_evidence_and_claims_are_well_formed():
    with pytest.raises(MissingEvidence):
        _reduction({})
    # the claims judged on more models are tested in test_trained_attention_models.py
    assert {c.key for c in ch.CLAIMS if not c.model_of} == {"bhojanapalli-trained-logit-rank", "minli-trained-barrier",
                                         "minli-model-reduction", "minli-truncation", "minli-vit-plateau",
                                         "minli-imdb-plateau", "minli-layers", "mla-logit-bound-trained",
                                         "minli-mla-trained"}
    for c in ch.CLAIMS:
        assert c.chapter == "07" and c.section.startswith("sec-ch07-") and c.rule_sentence
    h = {**mechanism(), **barrier(), **reduction(), **trunc()}
    assert all(isinstance(c.judge(h), Judgement) for c in ch.CLAIMS
               if c.key not in _keys(ch.CLASSIFIER_CLAIMS) and c.key not in _keys(ch.LATENT_CLAIMS) and not c.model_of)


def _keys(claims):
    return {c.key for c in claims}


def test_every_claim_names_the_function_that_measures_it():
    measures = {c.key: c.measure for c in ch.CLAIMS}
    assert all(measures[c.key] is ch.classifier_headline for c in ch.CLASSIFIER_CLAIMS)
    assert all(measures[c.key] is ch.latent_headline for c in ch.LATENT_CLAIMS)
    assert all(measures[c.key] is ch.models_headline for c in ch.MODEL_CLAIMS)
    assert set(measures.values()) <= {ch.headline, ch.classifier_headline, ch.latent_headline, ch.models_headline}


def test_every_rule_key_is_a_headline_key():
    for c in ch.CLAIMS:
        keys = set(c.evidence.keys().values())
        assert keys, c.key
        for k in keys:
            assert k in ch.HEADLINE_KEYS, (c.key, k)


def test_equivalence_needs_the_upper_bound_inside_the_margin():
    import numpy as np
    d = np.array([1, 2, 4])
    V = np.array([[0.5] * 5, [0.995, 0.99, 1.0, 0.99, 1.0], [1.0] * 5])
    assert ch.equivalent_from(d, V, 0.01) == (2.0, 2)
    # noisy seeds: the mean gap is small but the one-sided bound is not
    V2 = np.array([[0.5] * 5, [1.0, 0.97, 1.0, 0.98, 1.0], [1.0] * 5])
    assert ch.equivalent_from(d, V2, 0.01)[0] == 4.0
    # one seed: only the best qualifies
    assert ch.equivalent_from(d, V[:, :1], 0.01)[0] == 4.0


def test_model_reduction_row_names_the_scale_of_its_runs():
    # Judged on the committed long store, the row must say "long" even when the notebook ran at default.
    claim = next(c for c in ch.CLAIMS if c.key == "minli-model-reduction")
    assert claim.scale_key == "ch07_ret_scale" and claim.scale_key in ch.HEADLINE_KEYS


def test_the_opening_answer_groups_every_verdict_under_its_word():
    from lowrank.experiments.trained_attention import _ABOUT, VERDICT_CLAIMS, answer_text
    words = ["contradicted", "reproduced", "inconclusive", "contradicted", "reproduced in a weaker form",
             "reproduced", "inconclusive", "reproduced", "contradicted"]
    verdicts = dict(zip(VERDICT_CLAIMS, words))
    text = answer_text(verdicts)
    # Reproduced first, then the weaker form, contradicted and inconclusive; each claim named once.
    assert text.index("Reproduced:") < text.index("Reproduced in a weaker form:") < text.index("Contradicted:") \
        < text.index("Inconclusive:")
    for about in _ABOUT.values():
        assert text.count(about) == 1
    contradicted = text.split("Contradicted: ")[1].split(".")[0]
    assert contradicted.split("; ") == [_ABOUT["mechanism"], _ABOUT["truncation"], _ABOUT["mla"]]
    with pytest.raises(ValueError, match="expected one for each"):
        answer_text({k: v for k, v in verdicts.items() if k != "mla"})


def test_the_opening_answer_names_a_verdict_word_outside_the_usual_four():
    from lowrank.experiments.trained_attention import VERDICT_CLAIMS, answer_text
    text = answer_text({name: "not tested" if name == "mechanism" else "reproduced" for name in VERDICT_CLAIMS})
    assert text.startswith("Reproduced: ") and text.endswith("Not tested: logits of rank at most the head size in trained heads.")
