"""Chapter 03's claim rules on synthetic headline dicts: both sides of every threshold, every verdict."""
import math

import pytest

from lowrank.experiments import multihead_bottleneck as M
from lowrank.experiments import verdicts as V

RULES = {c.key: c for c in M.CLAIMS}


def base(**kw):
    h = dict(ch03_boundary_offset=-1.0, ch03_both_sides="yes", ch03_fixed_worst=1e-7, ch03_hc_d=60, ch03_hc_n=6,
             ch03_hc_heads="1, 2, 10, 12, 15", ch03_h_last_fit="12", ch03_dh_last_fit="5", ch03_h_first_fail="15",
             ch03_dh_first_fail="4", ch03_embed_error=7e-15, ch03_embed_naive_error=1.66,
             ch03_sep_rel_gap=0.2, ch03_sep_case=1, ch03_sep_case_gaps="0.20, 1.40, 0.60", ch03_t2_floor=0.05, ch03_t2_floor_test=0.19,
             ch03_t2_fixed=1e-7, ch03_t2_fewer_exact=1e-15, ch03_t2_fewer_heads=2, ch03_t2_params_std=144)
    h.update(kw)
    return h


def judge(key, **kw):
    return RULES[key].judge(base(**kw))


def test_claims_are_wellformed():
    assert set(RULES) == {"multihead-boundary", "f-in-g", "theorem2"}
    for c in M.CLAIMS:
        assert c.chapter == "03" and c.section.startswith("ch03-") and c.paper == V.BHOJANAPALLI


@pytest.mark.parametrize("kw,verdict", [
    ({}, V.CORRECTED),
    (dict(ch03_boundary_offset=0.0, ch03_both_sides="no"), V.REPRODUCED),
    (dict(ch03_boundary_offset=-1.0, ch03_both_sides="no"), V.INCONCLUSIVE),
    (dict(ch03_boundary_offset=math.nan), V.INCONCLUSIVE),
    (dict(ch03_fixed_worst=M.FIT_TOL * 2), V.INCONCLUSIVE),
    (dict(ch03_boundary_offset=-3.0), V.CONTRADICTED),
    (dict(ch03_boundary_offset=2.0), V.CONTRADICTED),
])
def test_multihead_boundary(kw, verdict):
    j = judge("multihead-boundary", **kw)
    assert j.verdict == verdict
    if verdict == V.CORRECTED:  # the paper's own setting: 1024 // 127 == 1024 // 128 == 8 heads
        assert "at most 8 heads" in j.reason and "sharper" in j.reason


@pytest.mark.parametrize("err,verdict", [(M.EXACT_TOL / 10, V.REPRODUCED), (M.EXACT_TOL * 10, V.CONTRADICTED)])
def test_f_in_g(err, verdict):
    assert judge("f-in-g", ch03_embed_error=err).verdict == verdict


@pytest.mark.parametrize("kw,verdict", [
    ({}, V.REPRODUCED),
    (dict(ch03_t2_fewer_exact=1e-3), V.REPRODUCED),
    (dict(ch03_t2_fewer_exact=math.nan), V.REPRODUCED),
    (dict(ch03_sep_rel_gap=M.SEPARATION_MIN / 2), V.INCONCLUSIVE),
    (dict(ch03_t2_floor=1e-6), V.INCONCLUSIVE),
    (dict(ch03_t2_floor=1e-9, ch03_t2_floor_test=M.MATCH_TOL / 10), V.CONTRADICTED),
])
def test_theorem2(kw, verdict):
    j = judge("theorem2", **kw)
    assert j.verdict == verdict
    # the same h is the theorem's hypothesis: the fewer-heads layer is a remark, never a condition
    if kw == {}:
        assert "remark" in j.evidence and "fewer, larger heads" in j.evidence
    if kw == dict(ch03_t2_fewer_exact=1e-3):
        assert "remark" not in j.evidence


def test_rules_read_typed_records():
    assert {c.key: c.evidence for c in M.CLAIMS} == {"multihead-boundary": M.BoundaryEvidence,
                                                      "f-in-g": M.FInGEvidence, "theorem2": M.Theorem2Evidence}
    # the synthetic headline names every value the rules read, and nothing a rule reads is left out
    assert {k for c in M.CLAIMS for k in c.evidence.keys().values()} == set(base())
    for c in M.CLAIMS:
        with pytest.raises(V.MissingEvidence):
            c.judge({})
    # phrases where the sweep found no fitting head count read as text, not as a number
    j = judge("multihead-boundary", ch03_h_last_fit="none of the head counts tested", ch03_dh_last_fit="none",
              ch03_boundary_offset=math.nan, ch03_both_sides="no")
    assert j.verdict == V.INCONCLUSIVE and "fits up to h = none of the head counts tested" in j.evidence
