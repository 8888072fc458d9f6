"""Chapter 06's claim: the saturation rule on synthetic headline values, both sides of every threshold."""
import math

import pytest

from lowrank.experiments import saturation as X
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, MissingEvidence


def _h(**kw):
    h = dict(ch06_main_criterion="75% of bound", ch06_n_estimable=8, ch06_n_total=8, ch06_nmin=32,
             ch06_nmax=4096, ch06_fit_nmax=256, ch06_pred_obs=40.0, ch06_pred_obs_se=1.0,
             ch06_pred_log=40.0, ch06_pred_log_se=2.0, ch06_pred_log_z=0.0, ch06_dbic_log=0.0,
             ch06_best_law="a + b ln n", ch06_min_draws=64, ch06_n_boot=2000)
    h.update(kw)
    return h


def test_saturation_every_verdict():
    assert X.rule_saturation(_h()).verdict == REPRODUCED
    assert X.rule_saturation(_h(ch06_pred_log_z=X.Z_PRED + 0.01)).verdict == WEAKER
    assert "Omega(log n)" in X.rule_saturation(_h(ch06_pred_log_z=5.0)).qualifier
    assert X.rule_saturation(_h(ch06_pred_log_z=X.Z_PRED - 0.01)).verdict == REPRODUCED
    assert X.rule_saturation(_h(ch06_pred_log_z=-X.Z_PRED - 0.01)).verdict == CONTRADICTED
    assert X.rule_saturation(_h(ch06_pred_log_z=-X.Z_PRED + 0.01)).verdict == REPRODUCED
    assert X.rule_saturation(_h(ch06_dbic_log=X.BIC_STRONG + 0.1, ch06_best_law="c n^alpha")).verdict == INCONCLUSIVE
    assert X.rule_saturation(_h(ch06_dbic_log=X.BIC_STRONG - 0.1)).verdict == REPRODUCED


def test_saturation_needs_range_and_points():
    # the old evidence: four n over a factor 8, however strong the power law looks, decides nothing
    old = _h(ch06_n_estimable=4, ch06_n_total=4, ch06_nmax=256, ch06_pred_log_z=6.0)
    assert X.rule_saturation(old).verdict == INCONCLUSIVE
    assert X.rule_saturation(_h(ch06_n_estimable=X.MIN_NS - 1, ch06_pred_log_z=6.0)).verdict == INCONCLUSIVE
    assert X.rule_saturation(_h(ch06_n_estimable=X.MIN_NS, ch06_pred_log_z=6.0)).verdict == WEAKER
    assert X.rule_saturation(_h(ch06_nmax=32 * 99, ch06_pred_log_z=6.0)).verdict == INCONCLUSIVE
    assert X.rule_saturation(_h(ch06_nmax=32 * 100, ch06_pred_log_z=6.0)).verdict == WEAKER
    assert X.rule_saturation(_h(ch06_pred_log_z=math.nan)).verdict == INCONCLUSIVE


def test_claim_is_well_formed():
    (c,) = X.CLAIMS
    assert c.key == "saturation" and c.chapter == "06" and c.rule_sentence.startswith("On the main")
    with pytest.raises(MissingEvidence):
        X.rule_saturation({})
