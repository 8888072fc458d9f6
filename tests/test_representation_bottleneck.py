"""Chapters 02 and 03: run functions at tiny sizes, headline() keys and values, the bounds."""
import math

import pytest
import torch

from lowrank.experiments import multihead_bottleneck as M
from lowrank.experiments import representation_theorem as R


@pytest.fixture(scope="module")
def ch02_tables():
    t = R.run_construction([3, 5], d_extra=2, seed=0)
    t.update(R.run_counterexample(seed=0, draws=200))
    t.update(R.run_threshold([4, 5], [1.0], n_targets=1, near=1, coarse=1, restarts=1, max_iter=300,
                             vanish_tol=1e-5, seed=0))
    t.update(R.run_bounds(t, [1.0], n_targets=1, seed=0))
    t.update(R.run_bottleneck(8, [2, 4], n_targets=1, restarts=1, max_iter=100, seed=0))
    t.update(R.run_sparse([6], ["permutation", "dense"], ranks=[1, 2], n_targets=1, restarts=1, max_iter=60,
                          tol=0.01, seed=0))
    t.update(R.run_causal([4, 5, 6], n_targets=1, width=1, restarts=2, max_iter=800, seed=0))
    t.update(R.run_d_below_n(3, [5, 6], n_targets=1, restarts=1, max_iter=200, seed=0))
    t.update(R.run_many_inputs(3, 4, [1, 4], [1, 2], restarts=2, max_iter=600, seed=0))
    return t


def test_ch02_headline_keys_and_values(ch02_tables):
    h = R.headline(ch02_tables)
    assert set(h) == set(R.HEADLINE_KEYS)
    assert h["ch02_construction_error"] < 1e-12 and h["ch02_construction_nmax"] == 5
    assert h["ch02_counterexample_tv"] == pytest.approx(0.25)
    assert h["ch02_ns_list"] == "4, 5"
    assert h["ch02_all_generic"] == "all"
    assert all(isinstance(line, str) for line in R.summary(ch02_tables))
    assert h["ch02_bound_violations"] == 0 and h["ch02_bound_min_below"] > 0
    assert h["ch02_causal_bound_violations"] == 0 and h["ch02_dn_bound_violations"] == 0
    assert "more than rank 2" in h["ch02_sparse_dense_nmax"]  # a phrase, never a -1 sentinel
    # many inputs at n = 3, d = 4: size 1 < n - 1 fits none; size 4 = d has 16 / 6 -> 2 inputs by counting
    cap = ch02_tables["capacity"].set_index("rank")
    assert cap.loc[1, "counting"] == 0 and cap.loc[1, "fitted_capacity"] == 0 and cap.loc[4, "counting"] == 2


def test_ch02_claims_judge_the_tiny_run(ch02_tables):
    h = R.headline(ch02_tables)
    for claim in R.CLAIMS:
        assert claim.judge(h).verdict


def test_bound_below_every_fit_and_positive_below_threshold():
    # for every target, the certified bound <= the fitted error, and > 0 below n - 1
    from lowrank.theory.representation import logit_tail, truncation_tv, tv_lower_bound
    t = R.run_threshold([4, 6], [0.5, 4.0], n_targets=2, near=5, coarse=0, restarts=2, max_iter=400, seed=1)
    bd = R.run_bounds(t, [0.5, 4.0], n_targets=2, seed=1)["bounds"]
    assert len(bd) == 2 * 2 * (4 + 6)
    assert (bd["tv_bound"] <= bd["fitted_tv"]).all()
    assert (bd["tv_bound"] <= bd["truncation_tv"] + 1e-15).all()
    below = bd[bd["rank"] < bd["n"] - 1]
    assert (below["tv_bound"] > 0).all() and (below["logit_bound"] > 0).all()
    assert (bd[bd["rank"] >= bd["n"] - 1]["tv_bound"] == 0).all()


def test_causal_bound_matches_fit_on_small_n():
    from lowrank.theory.representation import causal_rank_bound, causal_targets, causal_tv_lower_bound
    for n in (4, 5, 6, 7):
        P = causal_targets(n, batch=1, seed=n)[0]
        assert causal_rank_bound(P) == n // 2
        assert causal_tv_lower_bound(P, n // 2 - 1) > 0 and causal_tv_lower_bound(P, n // 2) == 0
    t = R.run_causal([4, 6], n_targets=1, width=1, restarts=3, max_iter=1500, seed=0)
    assert list(t["causal_threshold"]["fitted_threshold"]) == [2, 3]
    assert (t["causal"]["tv_bound"] <= t["causal"]["fitted_tv"]).all()


def test_input_limited_error_is_exact_and_bounds_the_fit():
    from lowrank.theory.representation import input_limited_logit_error, logit_tail
    from lowrank.theory.targets import dirichlet_targets
    P = dirichlet_targets(6, seed=3)[0]
    X = torch.randn(6, 8, dtype=torch.float64)
    assert input_limited_logit_error(X, P) < 1e-10  # d >= n: every logit reachable
    X = torch.randn(6, 2, dtype=torch.float64)
    assert input_limited_logit_error(X, P) >= logit_tail(P, 2) - 1e-12  # rank-2 logits at best


@pytest.fixture(scope="module")
def ch03_tables():
    t = M.run_head_count(8, 4, [1, 2, 4], restarts=1, max_iter=200, seed=0)
    t.update(M.run_embedding(6, 2, 4, n=3, batch=2, seed=0))
    t.update(M.run_theorem2(6, 3, 3, n=3, samples=3, std_restarts=1, fixed_restarts=1, std_max_iter=50,
                            fixed_max_iter=50, seed=0))
    t.update(M.run_costs([64], [4], [16]))
    t.update(M.run_paper_settings(d=64, heads=(4, 16), ns=(8, 32)))
    return t


def test_ch03_headline_keys_and_values(ch03_tables):
    h = M.headline(ch03_tables)
    assert set(h) == set(M.HEADLINE_KEYS)
    assert h["ch03_embed_error"] < 1e-10 and h["ch03_embed_naive_error"] > 1e-3
    assert h["ch03_sep_case"] in (1, 2, 3) and h["ch03_sep_gap"] > 0
    assert h["ch03_cost_ratio"] == pytest.approx(4 * 16 / 64)
    assert h["ch03_paper_h"] == pytest.approx(2.0)
    assert all(isinstance(line, str) for line in M.summary(ch03_tables))
    assert h["ch03_t2_fewer_exact"] < 1e-10 and h["ch03_t2_params_std"] == 4 * 36
    for claim in M.CLAIMS:
        assert claim.judge(h).verdict
