import math
import threading

import numpy as np
import pytest
import torch

from lowrank.measure.rank import (batched_svdvals, default_rtol, effective_rank, energy_rank, hardmax_rank, numerical_rank,
                          rank_label, rank_report, singular_values, stable_rank)


def _known_rank(batch=3, m=9, n=7, r=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, m, r, generator=g, dtype=torch.float64) @ torch.randn(batch, r, n, generator=g, dtype=torch.float64)


def test_numerical_rank_of_known_rank_products():
    A = _known_rank()
    assert numerical_rank(A).tolist() == [4, 4, 4]
    assert numerical_rank(torch.eye(5)).item() == 5
    assert numerical_rank(torch.zeros(4, 4)).item() == 0


@pytest.mark.parametrize("kw", [{}, {"rtol": 1e-3}, {"atol": 0.5}, {"atol": 0.5, "rtol": 0.2}, {"atol": 0.0}])
def test_numerical_rank_matches_torch_and_numpy(kw):
    # Graded singular values put several of them near every threshold.
    g = torch.Generator().manual_seed(3)
    U, _ = torch.linalg.qr(torch.randn(5, 12, 12, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(5, 12, 12, generator=g, dtype=torch.float64))
    s = torch.logspace(0, -17, 12, dtype=torch.float64) * 3.0
    A = U @ torch.diag(s) @ V.transpose(-2, -1)
    ours = numerical_rank(A, **kw)
    assert torch.equal(ours, torch.linalg.matrix_rank(A, **kw))
    if not kw:
        assert ours.tolist() == [np.linalg.matrix_rank(a) for a in A.numpy()]


def test_default_rtol():
    assert default_rtol(3, 5) == 5 * np.finfo(np.float64).eps
    assert default_rtol(3, 5, torch.float32) == 5 * np.finfo(np.float32).eps


def test_effective_rank_hand_values():
    assert effective_rank(torch.eye(4)).item() == pytest.approx(4.0)
    assert effective_rank(torch.diag(torch.tensor([3.0, 0.0, 0.0]))).item() == pytest.approx(1.0)
    # sigma = (2, 1): p = (2/3, 1/3), erank = exp(H) = 1.8899...
    p = np.array([2 / 3, 1 / 3])
    expected = math.exp(-(p * np.log(p)).sum())
    assert effective_rank(torch.diag(torch.tensor([2.0, 1.0]))).item() == pytest.approx(expected)
    assert effective_rank(torch.zeros(3, 3)).item() == 0.0


def test_effective_rank_bounded_by_rank():
    A = _known_rank(batch=6)
    e = effective_rank(A)
    assert (e >= 1).all() and (e <= 4 + 1e-9).all()


def test_stable_rank_hand_values():
    assert stable_rank(torch.diag(torch.tensor([2.0, 1.0]))).item() == pytest.approx(5 / 4)
    assert stable_rank(torch.eye(6)).item() == pytest.approx(6.0)
    assert stable_rank(torch.zeros(2, 2)).item() == 0.0


def test_energy_rank_hand_values():
    D = torch.diag(torch.tensor([3.0, 2.0, 1.0]))  # energies 9, 4, 1 of 14
    assert energy_rank(D, 0.6).item() == 1  # 9/14 = 0.64
    assert energy_rank(D, 0.9).item() == 2  # 13/14 = 0.93
    assert energy_rank(D, 0.95).item() == 3
    assert energy_rank(D, 1.0).item() == 3
    with pytest.raises(ValueError, match="energy"):
        energy_rank(D, 1.5)


def test_hardmax_rank_counts_distinct_argmax_columns():
    A = torch.tensor([[[0.0, 1.0, 0.0], [0.0, 2.0, 1.0], [5.0, 0.0, 0.0]],
                      [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
    assert hardmax_rank(A).tolist() == [2, 3]
    # It equals the SVD rank of the 0/1 hardmax matrix.
    from lowrank.layers.attention import hardmax
    S = torch.randn(20, 30, 30, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(hardmax_rank(S), numerical_rank(hardmax(S)))


@pytest.mark.parametrize("bad, match", [
    (torch.zeros(5), "matrix"),
    (torch.zeros(3, 3, dtype=torch.int64), "floating"),
    (torch.tensor([[1.0, float("nan")], [0.0, 1.0]]), "non-finite"),
    (torch.tensor([[1.0, float("inf")], [0.0, 1.0]]), "non-finite"),
    ([[1.0]], "torch.Tensor"),
])
def test_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        numerical_rank(bad)


def test_numpy_input_and_batch_shape():
    A = _known_rank(batch=2).reshape(2, 1, 9, 7).numpy()
    assert numerical_rank(A).shape == (2, 1)
    assert singular_values(A).shape == (2, 1, 7)


def test_rank_report_agrees_with_single_measures():
    A = torch.softmax(_known_rank(batch=5, m=8, n=8, r=2) * 3, -1)
    wide = rank_report(A, rtols=(None, 1e-3), energies=(0.99,))
    assert len(wide) == 5
    assert wide["numerical_rank[rtol=max(m,n)eps]"].tolist() == numerical_rank(A).tolist()
    assert wide["numerical_rank[rtol=0.001]"].tolist() == numerical_rank(A, rtol=1e-3).tolist()
    np.testing.assert_allclose(wide["effective_rank"], effective_rank(A).numpy())
    np.testing.assert_allclose(wide["stable_rank"], stable_rank(A).numpy())
    assert wide["energy_rank[energy=0.99]"].tolist() == energy_rank(A, 0.99).tolist()
    assert wide["hardmax_rank"].tolist() == hardmax_rank(A).tolist()
    long = rank_report(A, rtols=(None, 1e-3), energies=(0.99,), long=True)
    assert set(long.columns) == {"index", "m", "n", "measure", "tolerance", "value"}
    assert len(long) == 5 * 6
    got = long.query("measure == 'numerical_rank' and tolerance == 'rtol=0.001'")["value"].tolist()
    assert got == wide["numerical_rank[rtol=0.001]"].tolist()


def test_rank_label_names_matrix_measure_tolerance():
    assert rank_label("numerical rank", 1e-6, "P") == "numerical rank, rtol=1e-06 of P"
    assert rank_label("effective rank", matrix="logits") == "effective rank of logits"


@pytest.mark.parametrize("shape", [(3, 5, 9, 7), (1, 6, 6), (7, 4)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_batched_svdvals_matches_torch_and_restores_threads(shape, threads):
    g = torch.Generator().manual_seed(2)
    A = torch.randn(shape, generator=g, dtype=torch.float64)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = batched_svdvals(A)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    assert got.shape == (*shape[:-2], min(shape[-2:]))
    torch.testing.assert_close(got, torch.linalg.svdvals(A), rtol=1e-12, atol=1e-12)
    if threads > 1 and A.reshape(-1, *shape[-2:]).shape[0] > 1:  # the batch was split over threads
        assert any(t.name.startswith("lowrank-svd") for t in threading.enumerate())


@pytest.mark.parametrize("route", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_svdvals_routes_agree(monkeypatch, route, dtype):
    import lowrank.measure.rank as rank_module
    calls = []
    numpy_svdvals = rank_module._numpy_svdvals
    monkeypatch.setattr(rank_module, "_numpy_svdvals", lambda c: calls.append(len(c)) or numpy_svdvals(c))
    if route == "torch":
        monkeypatch.setattr(rank_module, "_blas_controller", lambda: None)  # as without threadpoolctl
    A = torch.randn(5, 12, 10, generator=torch.Generator().manual_seed(3), dtype=dtype)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        got = batched_svdvals(A)
    finally:
        torch.set_num_threads(before)
    assert got.dtype == dtype and got.shape == (5, 10)
    assert sorted(calls) == ([2, 3] if route == "numpy" else [])
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(got, torch.linalg.svdvals(A), rtol=tol, atol=tol)


def test_batched_svdvals_keeps_autograd():
    A = torch.randn(4, 6, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64,
                    requires_grad=True)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        batched_svdvals(A).sum().backward()
    finally:
        torch.set_num_threads(before)
    # d(sum sigma)/dA = U V^T for a full-rank square matrix
    U, _, Vh = torch.linalg.svd(A.detach())
    torch.testing.assert_close(A.grad, U @ Vh)


def test_float32_tolerance_name_and_value():
    from lowrank.measure.rank import DEFAULT_TOL, FLOAT32, FLOAT32_TOL, tolerance_label

    assert tolerance_label(None) == DEFAULT_TOL == "rtol=max(m,n)eps"
    assert tolerance_label(FLOAT32) == FLOAT32_TOL and tolerance_label(1e-3) == "rtol=0.001"
    with pytest.raises(ValueError, match="unknown tolerance"):
        tolerance_label("float16")
    # singular values 1, 1e-6, 1e-9: n eps64 keeps all three, n eps32 (~4e-7) drops 1e-9 only
    A = torch.diag(torch.tensor([1.0, 1e-6, 1e-9], dtype=torch.float64))
    wide = rank_report(A[None], rtols=(None, FLOAT32, 1e-3), hardmax=False)
    assert wide[f"numerical_rank[{DEFAULT_TOL}]"].tolist() == [3]
    assert wide[f"numerical_rank[{FLOAT32_TOL}]"].tolist() == [2]
    assert wide["numerical_rank[rtol=0.001]"].tolist() == [1]
    assert rank_label("numerical rank", FLOAT32_TOL, "A") == "numerical rank, rtol=max(m,n)eps_float32 of A"


def test_a_zero_tolerance_parameter_means_the_default():
    from lowrank.measure.rank import FLOAT32, rtol_or_default

    assert [rtol_or_default(r) for r in (0, 0.0, None, 1e-6, FLOAT32)] == [None, None, None, 1e-6, FLOAT32]
    A = torch.diag(torch.tensor([1.0, 1e-6, 1e-9], dtype=torch.float64))
    assert numerical_rank(A, rtol=rtol_or_default(0.0)) == numerical_rank(A) == 3
