"""Theorem 1 of Bhojanapalli et al. (2020), the representation theorem, as exact constructions.

Row convention: X is (n, d), tokens are rows; P is (n, n), positive and row-stochastic;
one head computes softmax_row((X W_q)(X W_k)^T / sqrt(head_dim)).

Facts used (notes in shared/papers/bhojanapalli2020.md, sections 2.2-2.4):
- softmax_row(S) = P exactly when S = log P + c 1^T for some c in R^n (one constant per row);
- the per-row shift that minimises the rank is the row-centring, because
  (log P + c 1^T)(I - 1 1^T / n) = (log P)(I - 1 1^T / n) for every c; so the smallest rank of
  a logit matrix reaching P is rank(L0) with L0 = row-centred log P, at most n - 1;
- with X of full row rank (d >= n) and a right inverse X+ = X^T (X X^T)^{-1}, every n x n
  logit matrix A B^T (A, B of size n x r) is reached by W_q = X+ A, W_k = sqrt(r) X+ B.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from ..rank import default_rtol

__all__ = ["representation_weights", "head_logits", "min_logit_rank", "centred_log", "construction_check",
           "Counterexample", "theorem1_counterexample", "ROW_SUM_TOL"]

ROW_SUM_TOL = 1e-10


def _as_f64(A, name: str) -> torch.Tensor:
    if isinstance(A, np.ndarray):
        A = torch.from_numpy(A)
    if not isinstance(A, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor or numpy array, got {type(A).__name__}")
    if A.dim() != 2:
        raise ValueError(f"{name} must be a matrix, got shape {tuple(A.shape)}")
    A = A.detach().to(torch.float64)
    if not torch.isfinite(A).all():
        raise ValueError(f"{name} has non-finite entries (nan or inf)")
    return A


def _check_stochastic(P) -> torch.Tensor:
    P = _as_f64(P, "P")
    n, m = P.shape
    if n != m:
        raise ValueError(f"P must be square (n x n), got shape {(n, m)}")
    if (P <= 0).any():
        raise ValueError(f"P must be positive (Theorem 1 takes log P); it has {int((P <= 0).sum())} "
                         f"entries <= 0, smallest {P.min().item():.3g}. Replace zeros by a small epsilon "
                         "and renormalise the rows to approximate a sparse P")
    dev = (P.sum(-1) - 1).abs().max().item()
    if dev > ROW_SUM_TOL:
        raise ValueError(f"the rows of P must sum to 1 (row-stochastic); the largest deviation is {dev:.3g}, "
                         f"allowed {ROW_SUM_TOL:g}")
    return P


def centred_log(P) -> torch.Tensor:
    """Row-centred log P, (n, n): the valid logit matrix of least rank (each row sums to 0)."""
    L = _check_stochastic(P).log()
    return L - L.mean(-1, keepdim=True)


def min_logit_rank(P, *, rtol: float | None = None) -> int:
    """Smallest rank of a logit matrix S with softmax_row(S) = P (positive, row-stochastic P).

    Equals the numerical rank of the row-centred log P (sigma_i > rtol * sigma_1, default
    rtol = n * eps): n - 1 for a generic dense P, lower for structured P (e.g. 1 when log P
    is rank one up to the row shift), 0 for the uniform P.
    """
    L0 = centred_log(P)
    n = L0.shape[0]
    sigma = torch.linalg.svdvals(L0)
    if sigma[0] == 0:
        return 0
    tol = default_rtol(n, n) if rtol is None else rtol
    return int((sigma > tol * sigma[0]).sum())


def _check_inputs(X) -> torch.Tensor:
    X = _as_f64(X, "X")
    n, d = X.shape
    if d < n:
        raise ValueError(f"X (n x d) = ({n} x {d}) has d < n, so it cannot have full row rank n; Theorem 1 "
                         f"needs d >= n (see theorem1_counterexample for what fails)")
    sigma = torch.linalg.svdvals(X)
    rank = int((sigma > default_rtol(n, d) * sigma[0]).sum()) if sigma[0] > 0 else 0
    if rank < n:
        raise ValueError(f"X must have full row rank n = {n} (linearly independent tokens), got rank {rank}")
    return X


def representation_weights(X, P, *, head_dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights (W_q, W_k), each (d, head_dim), with softmax_row((X W_q)(X W_k)^T / sqrt(head_dim)) = P.

    X: (n, d) of full row rank (d >= n). P: (n, n) positive, rows summing to 1 (to 1e-10).
    head_dim: defaults to n (the paper's construction: X W_q = I, X W_k = sqrt(n) (log P)^T).
    Any head_dim >= n pads that with zero columns. head_dim = n - 1 uses the row-shift
    invariance (logits = row-centred log P, rank <= n - 1): the sharp threshold, ours, not the
    paper's. A smaller head_dim works only for a P with min_logit_rank(P) <= head_dim and
    otherwise raises. Returns float64 tensors.
    """
    X = _check_inputs(X)
    P = _check_stochastic(P)
    n, d = X.shape
    if P.shape[0] != n:
        raise ValueError(f"X has n = {n} rows (tokens) but P is {tuple(P.shape)}; P must be n x n")
    r = n if head_dim is None else head_dim
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise ValueError(f"head_dim must be a positive int or None, got {head_dim!r}")
    X_pinv = X.T @ torch.linalg.inv(X @ X.T)  # (d, n), X X_pinv = I_n
    if r >= n:
        A = torch.eye(n, dtype=torch.float64)
        B = P.log().T
    else:
        need = min_logit_rank(P)
        if r < need:
            raise ValueError(f"head_dim = {r} is too small for this P: the smallest rank of logits whose row "
                             f"softmax is P is min_logit_rank(P) = {need} (n - 1 = {n - 1} for a generic dense "
                             f"P); allowed head_dim >= {need}")
        U, S, Vh = torch.linalg.svd(centred_log(P))
        A = U[:, :r] * S[:r]
        B = Vh[:r].T
    k = A.shape[1]
    W_q = torch.zeros(d, r, dtype=torch.float64)
    W_k = torch.zeros(d, r, dtype=torch.float64)
    W_q[:, :k] = X_pinv @ A
    W_k[:, :k] = math.sqrt(r) * (X_pinv @ B)
    return W_q, W_k


def head_logits(X, W_q, W_k) -> torch.Tensor:
    """(X W_q)(X W_k)^T / sqrt(head_dim), (n, n), with head_dim = W_q.shape[1]."""
    X, W_q, W_k = (_as_f64(A, name) for A, name in ((X, "X"), (W_q, "W_q"), (W_k, "W_k")))
    if W_q.shape != W_k.shape or W_q.shape[0] != X.shape[1]:
        raise ValueError(f"W_q and W_k must both be (d, head_dim) with d = {X.shape[1]}, got "
                         f"{tuple(W_q.shape)} and {tuple(W_k.shape)}")
    return (X @ W_q) @ (X @ W_k).T / math.sqrt(W_q.shape[1])


def construction_check(ns, *, d_extra: int = 4, seed: int = 0) -> pd.DataFrame:
    """Theorem 1's construction on random inputs and targets, at head size n and n - 1.

    For each n: X (n, n + d_extra) Gaussian, P with Dirichlet(1) rows (positive, dense). One row
    per (n, head_dim): n, d, head_dim, max_abs_error = max |softmax(logits) - P|, and
    logit_rank, the numerical rank of the constructed logits (default rtol).
    """
    from .targets import dirichlet_targets

    rows = []
    for n in ns:
        g = torch.Generator().manual_seed(int(seed) + n)
        X = torch.randn(n, n + d_extra, generator=g, dtype=torch.float64)
        P = dirichlet_targets(n, seed=seed + n)[0]
        for head_dim in (n, n - 1):
            S = head_logits(X, *representation_weights(X, P, head_dim=head_dim))
            rows.append(dict(n=n, d=n + d_extra, head_dim=head_dim,
                             max_abs_error=float((torch.softmax(S, -1) - P).abs().max()),
                             logit_rank=int(torch.linalg.matrix_rank(S))))
    return pd.DataFrame(rows)


class Counterexample(NamedTuple):
    """Inputs X (n, d) with d < n and a target P (n, n) that no (W_q, W_k) can reach."""
    X: torch.Tensor
    P: torch.Tensor
    forced_rows: torch.Tensor  # indices of the rows of softmax(logits) that are uniform for every W
    reason: str


def theorem1_counterexample(n: int = 2, d: int = 1) -> Counterexample:
    """The d < n half of Theorem 1: X = [I_d; 0] and a P whose last row is not uniform.

    The paper's case is n = 2, d = 1, X = [[1], [0]], P = [[0.5, 0.5], [0.75, 0.25]] (row
    convention). Tokens d+1..n are zero vectors, so their queries are zero, their logit rows
    are zero and their attention rows are uniform, 1/n, whatever W_q and W_k are.
    """
    if not (isinstance(n, int) and isinstance(d, int) and 1 <= d < n):
        raise ValueError(f"the counterexample needs integers 1 <= d < n, got n={n!r}, d={d!r}")
    X = torch.zeros(n, d, dtype=torch.float64)
    X[:d] = torch.eye(d, dtype=torch.float64)
    P = torch.full((n, n), 1.0 / n, dtype=torch.float64)
    P[-1, 0] = 1.5 / n
    P[-1, 1] = 0.5 / n
    forced = torch.arange(d, n)
    which = f"token {n} of X is the zero vector" if d + 1 == n else f"tokens {d + 1}..{n} of X are zero vectors"
    reason = (f"{which} (X has rank {d} < n = {n}); a zero token has a zero query X W_q for every W_q, so its "
              f"logit row is all 0 and its attention row is uniform (1/{n} each), but row {n} of P is "
              f"({', '.join(f'{v:.3g}' for v in P[-1].tolist())})")
    return Counterexample(X, P, forced, reason)
