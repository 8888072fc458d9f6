"""Chapter 06's claim: the saturation rule on synthetic headline values, both sides of every threshold."""
import math

import pytest

from lowrank.experiments import rank_saturation as ch
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, MissingEvidence, claim_of


# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_sat = claim_of(ch.CLAIMS, "saturation").judge
_inc_rule = claim_of(ch.CLAIMS, "saturation-increment").judge


def _h(**kw):
    h = dict(ch06_main_criterion="75% of bound", ch06_n_estimable=8, ch06_n_total=8, ch06_nmin=32,
             ch06_nmax=4096, ch06_fit_nmax=256, ch06_pred_obs=40.0, ch06_pred_obs_se=1.0,
             ch06_pred_log=40.0, ch06_pred_log_se=2.0, ch06_pred_log_z=0.0, ch06_dbic_log=0.0,
             ch06_best_law="a + b ln n", ch06_min_draws=64, ch06_n_boot=2000)
    h.update(kw)
    return h


def test_saturation_every_verdict():
    assert _sat(_h()).verdict == REPRODUCED
    # faster than log n contradicts "of order log n"; the untestable literal lower bound is named
    assert _sat(_h(ch06_pred_log_z=ch.Z_PRED + 0.01)).verdict == CONTRADICTED
    against = _sat(_h(ch06_pred_log_z=5.0))
    assert against.qualifier.startswith("the saturation point grows faster than a + b ln n predicts")
    assert "not testable at finite n" in against.detail
    assert _sat(_h(ch06_pred_log_z=ch.Z_PRED - 0.01)).verdict == REPRODUCED
    assert _sat(_h(ch06_pred_log_z=-ch.Z_PRED - 0.01)).verdict == CONTRADICTED
    assert _sat(_h(ch06_pred_log_z=-ch.Z_PRED + 0.01)).verdict == REPRODUCED
    assert _sat(_h(ch06_dbic_log=ch.BIC_STRONG + 0.1, ch06_best_law="c n^alpha")).verdict == INCONCLUSIVE
    assert _sat(_h(ch06_dbic_log=ch.BIC_STRONG - 0.1)).verdict == REPRODUCED


def test_saturation_needs_range_and_points():
    # the old evidence: four n over a factor 8, however strong the power law looks, decides nothing
    old = _h(ch06_n_estimable=4, ch06_n_total=4, ch06_nmax=256, ch06_pred_log_z=6.0)
    assert _sat(old).verdict == INCONCLUSIVE
    assert _sat(_h(ch06_n_estimable=ch.MIN_NS - 1, ch06_pred_log_z=6.0)).verdict == INCONCLUSIVE
    assert _sat(_h(ch06_n_estimable=ch.MIN_NS, ch06_pred_log_z=6.0)).verdict == CONTRADICTED
    assert _sat(_h(ch06_nmax=32 * 99, ch06_pred_log_z=6.0)).verdict == INCONCLUSIVE
    assert _sat(_h(ch06_nmax=32 * 100, ch06_pred_log_z=6.0)).verdict == CONTRADICTED
    assert _sat(_h(ch06_pred_log_z=math.nan)).verdict == INCONCLUSIVE


def _inc(**kw):
    h = {k.replace("ch06_", "ch06_inc_").replace("inc_main_criterion", "inc_criterion"): v for k, v in _h().items()
         if k not in ("ch06_min_draws", "ch06_n_boot", "ch06_n_total")}
    h.update(ch06_min_draws=64, ch06_n_boot=2000, ch06_n_total=8, ch06_inc_criterion="increment < 0.01",
             ch06_inc_min_draws=128)
    h.update(kw)
    return h


def test_increment_criterion_reaches_every_verdict():
    assert _inc_rule(_inc()).verdict == REPRODUCED
    assert _inc_rule(_inc(ch06_inc_pred_log_z=ch.Z_PRED + 0.01)).verdict == CONTRADICTED
    assert _inc_rule(_inc(ch06_inc_pred_log_z=-ch.Z_PRED - 0.01)).verdict == CONTRADICTED
    assert _inc_rule(_inc(ch06_inc_n_estimable=ch.MIN_NS - 1)).verdict == INCONCLUSIVE
    assert _inc_rule(_inc(ch06_inc_dbic_log=ch.BIC_STRONG + 1)).verdict == INCONCLUSIVE
    assert "increment < 0.01" in _inc_rule(_inc()).evidence
    # the evidence names the long-scale store's draws, not those of the chapter's own grid
    assert "at least 128 draws" in _inc_rule(_inc()).evidence
    with pytest.raises(MissingEvidence):
        _inc_rule({k: v for k, v in _inc().items() if k != "ch06_inc_min_draws"})


def test_claim_is_well_formed():
    c = claim_of(ch.CLAIMS, "saturation")
    assert {k.key for k in ch.CLAIMS} == {"saturation", "saturation-increment"}
    assert c.key == "saturation" and c.chapter == "06" and c.rule_sentence.startswith("On the main")
    with pytest.raises(MissingEvidence):
        _sat({})
