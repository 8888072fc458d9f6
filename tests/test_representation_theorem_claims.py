"""Chapter 02's claim rules on synthetic headline dicts: both sides of every threshold, every verdict."""
import math

import pytest

from lowrank.experiments import representation_theorem as R
from lowrank.experiments import verdicts as V

RULES = {c.key: c for c in R.CLAIMS}


def _fits(*pairs):
    """(n, fitted threshold or None) per length, as the headline carries them."""
    return [{"n": n, "fitted": f} for n, f in pairs]


def base(**kw):
    h = dict(ch02_construction_error=3e-15, ch02_construction_nmax=32,
             ch02_threshold_offset=-1.0, ch02_vanish_list="7, 15, 31", ch02_ns_list="8, 16, 32",
             ch02_bound_violations=0, ch02_bound_min_below=2e-6, ch02_bound_max_below=6e-4, ch02_bound_rows=40,
             ch02_causal_n_count=5, ch02_causal_match_count=5, ch02_causal_bound_violations=0,
             ch02_causal_ns="4, 6, 8, 10, 12", ch02_causal_fitted_list="2, 3, 4, 5, 6",
             ch02_causal_bound_list="2, 3, 4, 5, 6", ch02_counterexample_tv=0.25,
             ch02_causal_fits=_fits((4, 2), (6, 3), (8, 4), (10, 5), (12, 6)))
    h.update(kw)
    return h


def judge(key, **kw):
    return RULES[key].judge(base(**kw))


def test_claims_are_wellformed():
    assert set(RULES) == {"theorem1-sufficiency", "theorem1-counterexample", "head-size-threshold", "causal-threshold"}
    assert RULES["causal-threshold"].paper == V.BOOK
    for c in R.CLAIMS:
        assert c.chapter == "02" and c.section.startswith("ch02-")


@pytest.mark.parametrize("err,verdict", [(R.EXACT_TOL / 10, V.REPRODUCED), (R.EXACT_TOL * 10, V.CONTRADICTED)])
def test_theorem1(err, verdict):
    assert judge("theorem1-sufficiency", ch02_construction_error=err).verdict == verdict


@pytest.mark.parametrize("kw,verdict", [
    ({}, V.CORRECTED),
    (dict(ch02_threshold_offset=0.0), V.REPRODUCED),
    (dict(ch02_threshold_offset=-2.0), V.CONTRADICTED),
    (dict(ch02_bound_violations=1), V.CONTRADICTED),
    (dict(ch02_threshold_offset=math.nan), V.INCONCLUSIVE),
    (dict(ch02_bound_min_below=0.0), V.INCONCLUSIVE),
    (dict(ch02_threshold_offset=1.0), V.INCONCLUSIVE),
])
def test_head_size_threshold(kw, verdict):
    j = judge("head-size-threshold", **kw)
    assert j.verdict == verdict
    if verdict == V.CORRECTED:
        assert "n - 1" in j.reason and "sharper" in j.reason


@pytest.mark.parametrize("kw,verdict", [
    ({}, V.REPRODUCED),
    (dict(ch02_causal_match_count=4), V.INCONCLUSIVE),
    (dict(ch02_causal_n_count=2, ch02_causal_match_count=2, ch02_causal_ns="4, 6", ch02_causal_fitted_list="2, 3",
          ch02_causal_fits=_fits((4, 2), (6, 3))),
     V.INCONCLUSIVE),
    (dict(ch02_causal_bound_violations=1), V.CONTRADICTED),
    (dict(ch02_causal_fitted_list="2, 3, 3, 5, 6", ch02_causal_fits=_fits((4, 2), (6, 3), (8, 3), (10, 5), (12, 6)),
          ch02_causal_match_count=4), V.CONTRADICTED),
    (dict(ch02_causal_fitted_list="2, 3, never, 5, 6",
          ch02_causal_fits=_fits((4, 2), (6, 3), (8, None), (10, 5), (12, 6)), ch02_causal_match_count=4),
     V.INCONCLUSIVE),
])
def test_causal_threshold(kw, verdict):
    assert judge("causal-threshold", **kw).verdict == verdict


def test_missing_evidence_is_named():
    with pytest.raises(V.MissingEvidence, match="ch02_construction_error"):
        RULES["theorem1-sufficiency"].judge({})


@pytest.mark.parametrize("tv,verdict", [(0.25, V.REPRODUCED), (0.25 - R.EXACT_TOL / 2, V.REPRODUCED),
                                        (0.25 - 10 * R.EXACT_TOL, V.CONTRADICTED), (0.0, V.CONTRADICTED)])
def test_theorem1_counterexample(tv, verdict):
    j = judge("theorem1-counterexample", ch02_counterexample_tv=tv)
    assert j.verdict == verdict and RULES["theorem1-counterexample"].kind == V.PROOF_CHECK
