"""Chapter 05's claims: each rule on synthetic headline values, both sides of every threshold."""
import math

import pytest

from lowrank.experiments import rank_barrier as ch
from lowrank.experiments.rank_barrier import rules
from lowrank.experiments.verdicts import (CONDITIONAL, CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER,
                                          MissingEvidence, claim_of)

BOUND = 0.6334

# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_barrier = claim_of(ch.CLAIMS, "barrier").judge
_rises = claim_of(ch.CLAIMS, "rank-rises").judge


def _h(**kw):
    h = dict(ch05_inside_cells=48, ch05_inside_max_z=0.7, ch05_n_trials=50, ch05_inside_gap=0.01,
             ch05_outside_broken="temperature, weight structure", ch05_outside_rows=12,
             ch05_outside_broken_rows=5, ch05_frac_dh1_nmax=0.008, ch05_frac_dh1_nmax_se=0.0005,
             ch05_frac_dhmax_nmax=0.630, ch05_frac_dhmax_nmax_se=0.003, ch05_bound_frac_nmax=BOUND,
             ch05_nmax=256, ch05_dhmax=2048)
    h.update(kw)
    return h


def test_barrier_every_verdict():
    z = rules._bonferroni_z(48)
    assert 3.0 < z < 3.5
    assert _barrier(_h()).verdict == CONDITIONAL
    assert "temperature, weight structure" in _barrier(_h()).reason
    assert _barrier(_h(ch05_outside_broken="", ch05_outside_broken_rows=0)).verdict == REPRODUCED
    assert _barrier(_h(ch05_inside_max_z=z + 0.01)).verdict == CONTRADICTED
    assert _barrier(_h(ch05_inside_max_z=z - 0.01)).verdict == CONDITIONAL
    # a single cell's 1.96 is not a violation among 48 cells
    assert _barrier(_h(ch05_inside_max_z=2.5)).verdict == CONDITIONAL
    assert _barrier(_h(ch05_inside_max_z=2.5, ch05_inside_cells=1)).verdict == CONTRADICTED
    assert _barrier(_h(ch05_inside_gap=ch.NEAR_MARGIN + 1e-3)).verdict == WEAKER
    assert _barrier(_h(ch05_inside_gap=ch.NEAR_MARGIN - 1e-3)).verdict == CONDITIONAL
    assert _barrier(_h(ch05_n_trials=1, ch05_inside_max_z=math.nan)).verdict == INCONCLUSIVE


def test_rank_rises_every_verdict():
    assert _rises(_h()).verdict == REPRODUCED
    assert _rises(_h(ch05_frac_dhmax_nmax=BOUND - ch.NEAR_MARGIN - 0.01)).verdict == WEAKER
    assert _rises(_h(ch05_frac_dhmax_nmax=BOUND - ch.NEAR_MARGIN + 0.01)).verdict == REPRODUCED
    se = math.hypot(0.0005, 0.003)
    flat = 0.008 + 0.9 * ch.Z95 * se
    assert _rises(_h(ch05_frac_dhmax_nmax=flat)).verdict == INCONCLUSIVE
    assert _rises(_h(ch05_frac_dhmax_nmax=0.008 - 1.1 * ch.Z95 * se)).verdict == CONTRADICTED
    assert _rises(_h(ch05_frac_dh1_nmax_se=math.nan)).verdict == INCONCLUSIVE


def test_claims_are_well_formed():
    assert {c.key for c in ch.CLAIMS} == {"barrier", "rank-rises", "minli-near-orthonormal", "minli-mla",
                                          "mla-logit-bound"}
    for c in (claim_of(ch.CLAIMS, "barrier"), claim_of(ch.CLAIMS, "rank-rises")):
        assert c.chapter == "05" and c.rule_sentence
        assert c.judge(_h()).evidence
    assert all(c.chapter == "05" and c.rule_sentence for c in ch.CLAIMS)
    with pytest.raises(MissingEvidence):
        _barrier({})
