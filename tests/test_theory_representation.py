import math

import pytest
import torch

from lowrank.theory import (centred_log, dirichlet_targets, head_logits, min_logit_rank,
                            representation_weights, theorem1_counterexample)


def _inputs(n, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("n,d", [(3, 3), (6, 9), (12, 20)])
@pytest.mark.parametrize("extra", [None, 0, 3, -1])
def test_construction_reproduces_P(n, d, extra):
    X = _inputs(n, d, seed=n)
    P = dirichlet_targets(n, batch=1, seed=n)[0]
    head_dim = None if extra is None else n + extra
    W_q, W_k = representation_weights(X, P, head_dim=head_dim)
    assert W_q.shape == W_k.shape == (d, n if head_dim is None else head_dim)
    err = (torch.softmax(head_logits(X, W_q, W_k), dim=-1) - P).abs().max().item()
    assert err < 1e-10


def test_paper_column_convention_and_construction():
    # Paper: X (d x n), column softmax of (W_k X)^T (W_q X) / sqrt(d_k) equals a column-stochastic P.
    n, d = 5, 7
    X = _inputs(n, d, seed=3)
    P = dirichlet_targets(n, seed=4)[0]
    W_q, W_k = representation_weights(X, P)
    Xc, Pc = X.T, P.T  # paper convention
    S = (W_k.T @ Xc).T @ (W_q.T @ Xc) / math.sqrt(n)
    assert torch.allclose(torch.softmax(S, dim=0), Pc, atol=1e-12, rtol=0)
    # Row convention construction of the notes: X W_q = I_n.
    assert torch.allclose(X @ W_q, torch.eye(n, dtype=torch.float64), atol=1e-12)


def test_too_small_head_dim_for_dense_P_raises():
    n = 6
    X, P = _inputs(n, n + 2), dirichlet_targets(n, seed=1)[0]
    with pytest.raises(ValueError, match="min_logit_rank"):
        representation_weights(X, P, head_dim=n - 2)


def test_structured_P_below_threshold():
    n = 8
    a = torch.linspace(-1, 1, n, dtype=torch.float64)
    b = torch.cos(torch.arange(n, dtype=torch.float64))
    P = torch.softmax(torch.outer(a, b), dim=-1)
    assert min_logit_rank(P) == 1
    X = _inputs(n, n)
    W_q, W_k = representation_weights(X, P, head_dim=1)
    assert (torch.softmax(head_logits(X, W_q, W_k), -1) - P).abs().max() < 1e-10


@pytest.mark.parametrize("bad,match", [
    ("zero", "positive"), ("rowsum", "sum to 1"), ("rank", "full row rank"), ("d<n", "d < n"),
    ("shape", "n x n"), ("head_dim", "positive int")])
def test_bad_inputs_raise(bad, match):
    n = 4
    X, P = _inputs(n, 6), dirichlet_targets(n, seed=2)[0]
    kw = {}
    if bad == "zero":
        P = P.clone()
        P[0] = torch.tensor([0.5, 0.5, 0.0, 0.0])
    elif bad == "rowsum":
        P = P * 1.001
    elif bad == "rank":
        X = X.clone()
        X[1] = 2 * X[0]
    elif bad == "d<n":
        X = X[:, :3]
    elif bad == "shape":
        P = dirichlet_targets(n + 1, seed=0)[0]
    else:
        kw = dict(head_dim=0)
    with pytest.raises(ValueError, match=match):
        representation_weights(X, P, **kw)


def test_min_logit_rank_values():
    n = 7
    assert min_logit_rank(dirichlet_targets(n, seed=5)[0]) == n - 1
    assert min_logit_rank(torch.full((n, n), 1.0 / n, dtype=torch.float64)) == 0
    g = torch.Generator().manual_seed(0)
    L = torch.randn(n, 2, generator=g, dtype=torch.float64) @ torch.randn(2, n, generator=g, dtype=torch.float64)
    assert min_logit_rank(torch.softmax(L, -1)) == 2
    # Shift invariance: adding a constant per row changes nothing, per column does.
    assert min_logit_rank(torch.softmax(L + torch.arange(n, dtype=torch.float64)[:, None], -1)) == 2


def test_centred_log_is_a_valid_logit_matrix():
    P = dirichlet_targets(5, seed=9)[0]
    L0 = centred_log(P)
    assert L0.sum(-1).abs().max() < 1e-12
    assert (torch.softmax(L0, -1) - P).abs().max() < 1e-14
    assert torch.linalg.matrix_rank(L0) == 4


def test_head_logits_checks_shapes():
    with pytest.raises(ValueError, match="head_dim"):
        head_logits(torch.ones(3, 4), torch.ones(4, 2), torch.ones(4, 3))


def test_counterexample_paper_case():
    ce = theorem1_counterexample()
    assert torch.equal(ce.X, torch.tensor([[1.0], [0.0]], dtype=torch.float64))
    assert torch.equal(ce.P, torch.tensor([[0.5, 0.5], [0.75, 0.25]], dtype=torch.float64))
    assert ce.forced_rows.tolist() == [1]
    assert "uniform" in ce.reason
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        W_q, W_k = (torch.randn(1, 1, generator=g, dtype=torch.float64) * 10 for _ in range(2))
        A = torch.softmax((ce.X @ W_q) @ (ce.X @ W_k).T, -1)
        assert torch.allclose(A[1], torch.tensor([0.5, 0.5], dtype=torch.float64))
    with pytest.raises(ValueError):
        representation_weights(ce.X, ce.P)


def test_counterexample_general():
    ce = theorem1_counterexample(5, 3)
    assert ce.X.shape == (5, 3) and torch.linalg.matrix_rank(ce.X) == 3
    assert ce.forced_rows.tolist() == [3, 4]
    assert (ce.P[-1] - 0.2).abs().max() > 0.05 and torch.allclose(ce.P.sum(-1), torch.ones(5, dtype=torch.float64))
    with pytest.raises(ValueError, match="1 <= d < n"):
        theorem1_counterexample(3, 3)


def test_construction_check_table():
    from lowrank.theory import construction_check
    t = construction_check([2, 5, 9], d_extra=1, seed=0)
    assert list(t["head_dim"]) == [2, 1, 5, 4, 9, 8] and list(t["d"]) == [3, 3, 6, 6, 10, 10]
    assert (t["max_abs_error"] < 1e-10).all()
    # head size n uses log P itself (rank n); head size n - 1 the row-centred log P (rank n - 1)
    assert list(t["logit_rank"]) == [2, 1, 5, 4, 9, 8]


def test_head_size_threshold_is_n_minus_1_and_floor_half_causal():
    from lowrank.theory import representation as R
    from lowrank.theory.representation import head_size_threshold

    assert [head_size_threshold(n) for n in (1, 2, 8, 512)] == [0, 1, 7, 511]
    assert [head_size_threshold(n, causal=True) for n in (1, 5, 8, 4096)] == [0, 2, 4, 2048]
    # the generic dense pattern needs exactly that logit rank, and its causal blocks half of it
    P = torch.softmax(torch.randn(9, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64), dim=-1)
    assert R.min_logit_rank(P) == head_size_threshold(9)
    assert R.causal_rank_bound(R.causal_targets(9, seed=0)[0]) == head_size_threshold(9, causal=True)
    for bad in (0, -3, 2.5, "8"):
        with pytest.raises(ValueError, match="sequence length"):
            head_size_threshold(bad)
