"""Chapters 05 and 06: run functions at tiny sizes; headline() keys and values."""
import math

import numpy as np
import pandas as pd
import pytest

from lowrank.experiments import rank_barrier as E
from lowrank.experiments import rank_saturation as S
from lowrank.theory import expected_distinct_columns, saturation_head_dim

P05 = dict(seed=0, device="cpu", ns=[16, 32], head_dims=[1, 4, 64], n_trials=6, n_setting=24,
           setting_head_dims=[1, 8, 64], setting_trials=4, scales=[1.0, 64.0], rtols=[0.0, 0.001], energy=0.99,
           inputs=["orthonormal", "gaussian", "anisotropic"], d_model=64, key_set_n=16, key_head_dims=[1, 16],
           key_sets=3, query_sets=20, heads=[1, 4], heads_d_model=16)
P06 = dict(seed=0, device="cpu", ns=[16, 32, 64], max_head_dim=64, points_per_octave=2, rows_per_cell=256,
           min_trials=8, fractions=[0.5, 0.75, 0.9], increment=0.01, n_boot=2000, softmax_ns=[16, 32],
           softmax_max_head_dim=16, softmax_points_per_octave=2, softmax_trials=4, softmax_rtols=[0.0, 0.001])


def test_barrier_headline_keys_and_values():
    t = E.run_barrier(P05)
    h = E.headline(t)
    assert set(h) == set(E.HEADLINE_KEYS) and len(h) == len(E.HEADLINE_KEYS)
    assert h["ch05_nmax"] == 32 and h["ch05_bound_frac_nmax"] == pytest.approx(expected_distinct_columns(32) / 32)
    assert 0 < h["ch05_frac_dh1_nmax"] < h["ch05_frac_dhmax_nmax"] <= 1
    assert h["ch05_inside_cells"] == 6 and h["ch05_bonferroni_z"] > 1.96
    assert h["ch05_counter_min"] == 1.0
    s = t["summary"]
    assert list(dict.fromkeys(s["group"]))[0] == E.GROUPS[0]
    assert set(s["group"]) <= set(E.GROUPS)
    # Q = K = X is the identity, far above the bound: weight structure must be among the broken
    assert "weight structure" in h["ch05_outside_broken"]
    assert h["ch05_verdict_barrier"].split(":")[0] in {"holds only under stated conditions",
                                                       "reproduced in a weaker form", "inconclusive"}
    view = E.summary_table(s)
    assert not view.isna().any().any() and "bound respected" in view.columns


def test_nested_table_matches_the_bound_and_is_seeded():
    t = S.nested_hardmax_table([16, 64], [1, 4, 256], n_trials=[40, 10], seed=0)
    assert len(t) == 3 * 40 + 3 * 10
    m = t.groupby(["n", "head_dim"])["rank"].mean()
    assert m[(16, 1)] == pytest.approx(2.0, abs=0.05)  # d_h = 1: only the largest and smallest key win
    assert m[(64, 256)] < expected_distinct_columns(64) + 3
    assert t.equals(S.nested_hardmax_table([16, 64], [1, 4, 256], n_trials=[40, 10], seed=0))


def test_law_comparison_recovers_polylog_and_flags_log():
    ns = np.array([32, 64, 128, 256, 512, 1024, 2048, 4096])
    rng = np.random.default_rng(0)
    y = 0.9 * np.log(ns) ** 2.3
    pts = pd.DataFrame({"criterion": "c", "n": ns, "head_dim": y, "se": 0.02 * y, "estimable": True})
    boot = pd.DataFrame([{"boot": b, "n": n, "criterion": "c", "head_dim": v * (1 + 0.02 * rng.standard_normal())}
                         for b in range(200) for n, v in zip(ns, y)])
    r = S.law_comparison(pts, boot, "c")
    laws = r["laws"].set_index("law")
    assert laws.loc["c (ln n)^beta", "p2"] == pytest.approx(2.3, abs=0.01)
    assert laws.loc["c (ln n)^beta", "dbic"] == 0
    assert laws.loc["a + b ln n", "pred_z"] > 2 and laws.loc["c n^alpha", "pred_z"] < -2
    assert r["fit_nmax"] == 362 or r["fit_nmax"] == 256


def test_saturation_heuristic():
    assert saturation_head_dim(4096, 0.75) == pytest.approx(66.0, rel=0.02)
    with pytest.raises(ValueError):
        saturation_head_dim(1, 0.5)


def test_saturation_headline_keys_and_values():
    t = S.run_saturation(P06)
    h = S.headline(t)
    assert set(h) == set(S.HEADLINE_KEYS) and len(h) == len(S.HEADLINE_KEYS)
    assert h["ch06_nmax"] == 64 and h["ch06_n_boot"] == 2000
    # three n over a factor 4: the rule must not decide
    assert h["ch06_verdict"].startswith("inconclusive")
    assert isinstance(h["ch06_not_estimable"], str) and h["ch06_not_estimable"]
    view = S.points_table(t)
    assert len(view) == 3 and not view.isna().any().any()
    assert not S.laws_table(t).isna().any().any()
