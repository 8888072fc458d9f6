import math

import pandas as pd
import pytest
import torch

from lowrank.experiments.multihead_bottleneck import head_count_sweep
from lowrank.experiments.representation_theorem import rank_grid, sparse_sweep, threshold_sweep, vanishing_rank
from lowrank.tasks.fit import fit_heads, fit_layer, fit_logit_rank, lbfgs, logit_rank_sweep, row_kl, row_tv
from lowrank.theory import dirichlet_targets, sample_inputs, theorem2_layer


def test_lbfgs_solves_independent_quadratics():
    g = torch.Generator().manual_seed(0)
    b, p = 5, 6
    M = torch.randn(b, p, p, generator=g, dtype=torch.float64)
    H = M @ M.transpose(1, 2) + torch.eye(p, dtype=torch.float64) * torch.arange(1, b + 1)[:, None, None]
    c = torch.randn(b, p, generator=g, dtype=torch.float64)

    def fun(x, rows):
        return 0.5 * torch.einsum("bi,bij,bj->b", x, H[rows], x) - (c[rows] * x).sum(-1)

    x, f, n_iter = lbfgs(fun, torch.zeros(b, p, dtype=torch.float64), max_iter=200)
    exact = torch.linalg.solve(H, c)
    assert torch.allclose(x, exact, atol=1e-8)
    assert (n_iter > 0).all() and (n_iter < 200).all()
    # A problem's answer does not depend on the others in the batch.
    x1, _, _ = lbfgs(lambda x, rows: fun(x, rows[:1] * 0 + 2), torch.zeros(1, p, dtype=torch.float64), max_iter=200)
    assert torch.allclose(x1[0], exact[2], atol=1e-8)
    assert torch.get_num_threads() >= 1
    with pytest.raises(ValueError):
        lbfgs(fun, torch.zeros(p))


def test_row_kl_and_tv():
    P = torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=torch.float64)
    S = torch.log(torch.tensor([[0.5, 0.5], [0.75, 0.25]], dtype=torch.float64))
    assert row_kl(P, P.clamp_min(1e-300).log()).abs() < 1e-12
    assert row_kl(P, S).item() == pytest.approx(0.5 * math.log(1 / 0.75))
    assert row_tv(P, torch.softmax(S, -1)).item() == pytest.approx(0.25)


def test_fit_logit_rank_threshold_at_n_minus_1():
    n = 5
    P = dirichlet_targets(n, seed=3)[0]
    below = fit_logit_rank(P, n - 2, restarts=3, max_iter=800, seed=0)
    at = fit_logit_rank(P, n - 1, restarts=3, max_iter=800, seed=0)
    assert at.tv_max < 1e-6 and at.loss == "kl"
    assert below.tv_max > 1e-3
    assert at.A.shape == (n, n - 1) and torch.linalg.matrix_rank(at.logits) <= n - 1
    assert (torch.softmax(at.logits, -1) - P).abs().sum(-1).max() / 2 == pytest.approx(at.tv_max)
    assert at.restart_tv.shape == (3,) and at.tv_max == at.restart_tv.min().item()
    with pytest.raises(ValueError, match="loss"):
        fit_logit_rank(P, 2, loss="tv")


def test_fit_logit_rank_structured_target():
    n = 6
    a, b = torch.linspace(-2, 2, n, dtype=torch.float64), torch.sin(torch.arange(n, dtype=torch.float64))
    P = torch.softmax(torch.outer(a, b), -1)
    assert fit_logit_rank(P, 1, restarts=2, max_iter=500).tv_max < 1e-6


def test_logit_rank_sweep_table():
    P = dirichlet_targets(4, batch=2, seed=0)
    df = logit_rank_sweep(P, [1, 3], restarts=2, max_iter=300)
    assert len(df) == 2 * 2 * 2
    assert set(df.columns) >= {"target", "n", "rank", "restart", "tv_max", "kl", "loss"}
    best = df.groupby(["target", "rank"]).tv_max.min().unstack()
    assert (best[3] < 1e-6).all() and (best[1] > 1e-2).all()


def test_rank_grid():
    assert rank_grid(8) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert rank_grid(32, near=2, coarse=3) == [1, 5, 29, 30, 31, 32]
    assert rank_grid(3, near=5) == [1, 2, 3]
    with pytest.raises(ValueError):
        rank_grid(1)


def test_threshold_sweep_and_vanishing_rank():
    df = threshold_sweep([4, 5], [1.0], n_targets=2, near=2, coarse=1, restarts=2, max_iter=600)
    assert set(df["n"]) == {4, 5} and set(df["concentration"]) == {1.0}
    v = vanishing_rank(df, tol=1e-6).set_index("n")
    assert v.loc[4, "vanishing_rank"] == 3 and v.loc[5, "vanishing_rank"] == 4
    assert (v["error_below"] > 1e-3).all()


def test_vanishing_rank_semantics():
    df = pd.DataFrame(dict(n=4, target=0, rank=[1, 2, 3, 4], tv_max=[0.1, 1e-9, 0.2, 1e-9]))
    v = vanishing_rank(df, tol=1e-6)
    assert v["vanishing_rank"].item() == 4 and v["error_below"].item() == 0.2
    none = vanishing_rank(df.assign(tv_max=0.5), tol=1e-6)
    assert math.isnan(none["vanishing_rank"].item())


def test_sparse_sweep():
    df = sparse_sweep([6], ["permutation", "dense"], ranks=[2, 5], n_targets=1, restarts=1, max_iter=300)
    best = df.groupby(["kind", "rank"]).tv_max.min()
    assert best["permutation", 2] < 0.05 < best["dense", 2]
    with pytest.raises(ValueError, match="unknown target kinds"):
        sparse_sweep([6], ["banded"])


def test_fit_heads_and_head_count_sweep():
    n, d = 5, 8
    X = sample_inputs(n, d, inputs="gaussian", seed=0)[0]
    P = dirichlet_targets(n, batch=2, seed=1)
    ok = fit_heads(X, P, head_dim=4, restarts=2, max_iter=600)
    bad = fit_heads(X, P, head_dim=2, restarts=2, max_iter=600)
    assert ok.groupby("head").tv_max.min().max() < 1e-6
    assert bad.groupby("head").tv_max.min().min() > 1e-3
    sweep = head_count_sweep(X, [1, 4], restarts=1, max_iter=400)
    worst = sweep.groupby(["n_heads", "layer"]).tv_max.max()
    assert worst[4, "standard"] > 1e-3 and worst[4, "fixed"] < 1e-6
    with pytest.raises(ValueError, match="divide"):
        head_count_sweep(X, [3])


def test_fit_layer_fixed_fits_theorem2_layer_and_standard_does_not():
    d, h, dp, n = 6, 3, 3, 4
    g = theorem2_layer(d, h, dp, seed=0)
    X = sample_inputs(n, d, batch=16, inputs="sphere", seed=1)
    with torch.no_grad():
        Y = g(X)[0]
    fixed = fit_layer(X, Y, n_heads=h, head_dim=dp, restarts=2, max_iter=2500, seed=2)
    std = fit_layer(X, Y, n_heads=h, restarts=2, max_iter=600, seed=0)
    assert fixed.rel_err < 1e-4 and fixed.loss == "rel_mse"
    assert std.rel_err > 1e-3 and std.layer.head_dim == 2
    with torch.no_grad():
        err = ((std.layer(X)[0] - Y).norm() / Y.norm()).item()
    assert err == pytest.approx(std.rel_err, rel=1e-6)
    with pytest.raises(ValueError, match="both be"):
        fit_layer(X, Y[:, :2], n_heads=h)


def test_threshold_sweep_reports_exact_rank():
    df = threshold_sweep([4], [2.0], n_targets=1, near=1, coarse=0, restarts=1, max_iter=200)
    assert (df["min_logit_rank"] == 3).all() and sorted(df["rank"]) == [3, 4]
