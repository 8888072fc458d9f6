"""Chapter 07's claims on two more models: every rule reaches every verdict on synthetic evidence;
the store's tables, the headline and the model-by-claim table from synthetic records."""
import math

import pytest

from lowrank.experiments.trained_attention import model_rules as mr
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER


def _h(model, **kw):
    p = f"ch07_pm_{model}_"
    base = {"dh": 64, "logit_maps": 100, "logit_min": 64, "logit_max": 64, "heads_n": 144, "head_lo": 0.60,
            "head_hi": 0.62, "ref": 0.632, "above_lo": 0.0, "above_hi": 0.03, "n_max": 512, "windows": 8,
            "head_mean": 0.61, "above": 1, "cut_points": "64:1:2;128:2:4"}
    base.update(kw)
    return {p + k: v for k, v in base.items()}


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_logit_bound_reaches_every_verdict(model):
    rule = {"mpnet": mr.rule_logit_rank_mpnet, "smollm2": mr.rule_logit_rank_smollm2}[model]
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, logit_max=65)).verdict == CONTRADICTED
    assert rule(_h(model, logit_maps=0)).verdict == INCONCLUSIVE


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_barrier_reaches_every_verdict(model):
    rule = {"mpnet": mr.rule_barrier_mpnet, "smollm2": mr.rule_barrier_smollm2}[model]
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, head_lo=0.2, head_hi=0.3)).verdict == WEAKER
    assert rule(_h(model, above_lo=0.2, above_hi=0.4)).verdict == CONTRADICTED
    assert rule(_h(model, head_lo=0.55, head_hi=0.62)).verdict == INCONCLUSIVE
    assert rule(_h(model, heads_n=1)).verdict == INCONCLUSIVE
    assert ("causal analogue" in rule(_h(model)).evidence) is (model == "smollm2")


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_truncation_reaches_every_verdict(model):
    rule = {"mpnet": mr.rule_truncation_mpnet, "smollm2": mr.rule_truncation_smollm2}[model]
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, cut_points="64:16:32;128:16:32")).verdict == WEAKER
    assert rule(_h(model, cut_points="64:16:32;128:32:64")).verdict == CONTRADICTED
    assert rule(_h(model, cut_points="")).verdict == INCONCLUSIVE
    assert 2 * math.log(64) < 16  # the weaker case above lies above 2 ln n


def test_every_model_claim_names_its_parent_and_glue_key():
    keys = {mr.verdict_key(c) for c in mr.MODEL_CLAIMS}
    assert len(keys) == 6 and all(c.model_of in mr.VERDICT_SHORT for c in mr.MODEL_CLAIMS)
    assert all(c.scale_key == "ch07_pm_scale" for c in mr.MODEL_CLAIMS)


def test_cut_points_round_trip():
    pts = [{"n": 64, "prev": 1, "r": 2}, {"n": 128, "prev": 32, "r": 64}]
    assert mr.parse_cut_points(mr.format_cut_points(pts)) == [(64, 1, 2), (128, 32, 64)]
