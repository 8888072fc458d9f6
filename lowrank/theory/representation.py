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

from ..measure.rank import default_rtol

__all__ = ["representation_weights", "head_logits", "min_logit_rank", "centred_log", "construction_check",
           "Counterexample", "theorem1_counterexample", "ROW_SUM_TOL", "logit_tail", "tv_from_logit_error",
           "tv_lower_bound", "truncation_tv", "causal_targets", "causal_rank_bound", "causal_tv_lower_bound",
           "input_limited_logit_error", "input_limited_tv_bound", "head_size_threshold"]

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


def head_size_threshold(n: int, *, causal: bool = False) -> int:
    """The smallest head size at which one head can represent every attention pattern over n tokens.

    n - 1 for bidirectional attention: a dense positive pattern P needs logits of the rank of its
    row-centred log, n - 1 for a generic P (:func:`min_logit_rank`), and the row shift makes one
    dimension free, one below the n of Bhojanapalli et al. For causal attention floor(n/2): only
    the fully specified blocks below the diagonal constrain the logits, and the largest has rank
    floor(n/2) for a generic P (:func:`causal_rank_bound`; chapter 02 fits heads that reach it).
    """
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be a positive int (a sequence length), got {n!r}")
    return n // 2 if causal else n - 1


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


# --- certified lower bounds -----------------------------------------------------------------
#
# A head of size r on full-row-rank X produces logits S of rank <= r; softmax_row(S) depends on S
# only through its row-centred form S C (C = I - 1 1^T / n), and the row-centred log of the
# attention it produces is exactly S C. So the distance, in centred logits, from any head's
# attention Q to the target P is ||S C - L0||_F >= tail_r(L0) (Eckart-Young; S C has rank <= r),
# with L0 the row-centred log P. The bound is attained by the truncated SVD of L0.
#
# From logits to total variation: if row i of Q is within TV t of row i of P, every entry moves
# by |q_j - p_j| <= t and sum_j |q_j - p_j| = 2 t, so (with |log(1 + x)| <= |x| / (1 - |x|))
# the row of log(Q / P) has squared l2 norm <= t^2 (1/(p_(1) - t)^2 + 1/(p_(2) - t)^2), p_(1),
# p_(2) the row's two smallest entries (t below p_(1)); centring a row only shrinks it. Summing
# over the rows, tail_r(L0)^2 <= sum_i t^2 (...), which no t below the root t* satisfies: every
# head of size r has max-row TV >= t*.

def _svals(M: torch.Tensor) -> torch.Tensor:
    return torch.linalg.svdvals(M)


def logit_tail(P, r: int) -> float:
    """Eckart-Young lower bound on the centred-logit error ||S C - L0||_F of every head of size r
    (any logits S of rank <= r): sqrt(sum_{k > r} sigma_k(L0)^2), L0 the row-centred log P. It is
    attained by the rank-r truncated SVD of L0; 0 from r = min_logit_rank(P) on."""
    return _tail(_svals(centred_log(P)), r)


def _tail(s: torch.Tensor, r: int) -> float:
    """sqrt(sum of squares of the singular values s[r:]) counting only those above the default
    relative tolerance (smaller ones are float64 round-off of a zero)."""
    if s.numel() == 0 or not s[0] > 0:
        return 0.0
    s = s[s > default_rtol(s.numel(), s.numel()) * s[0]]
    return float(s[int(r):].pow(2).sum().sqrt())


def _two_smallest(P: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """(rows, 2): the two smallest allowed entries of every row (a row with one allowed entry
    repeats it)."""
    Q = P if mask is None else P.masked_fill(~mask, float("inf"))
    two = Q.sort(-1).values[:, :2]
    return torch.where(torch.isfinite(two), two, two[:, :1])


def tv_from_logit_error(err: float, smallest: torch.Tensor) -> float:
    """The largest t that certifies: if every row of Q is within total variation t of P's row,
    the centred-logit error of Q is < err; so max-row TV >= the returned value whenever the
    centred-logit error is >= err. smallest: (rows, 2), each row's two smallest entries of P.

    Solves sum_i t^2 (1/(p_i1 - t)^2 + 1/(p_i2 - t)^2) = err^2 by bisection on [0, min p_i1)
    (the left side is increasing and diverges at min p_i1). err <= 0 gives 0."""
    if not err > 0:
        return 0.0
    w = smallest.to(torch.float64)
    hi = float(w[:, 0].min())

    def lhs(t):
        return float((t * t * ((w[:, 0] - t).pow(-2) + (w[:, 1] - t).pow(-2))).sum())

    lo, up = 0.0, hi
    for _ in range(64):  # 2^-64 of the bracket: below float64 resolution
        mid = 0.5 * (lo + up)
        if mid >= hi or lhs(mid) >= err * err:
            up = mid
        else:
            lo = mid
    return lo


def tv_lower_bound(P, r: int) -> float:
    """Certified lower bound on the max-row total variation between P and the attention of any
    head of size r on full-row-rank inputs (any logits of rank <= r): tv_from_logit_error of
    logit_tail(P, r). Positive for every r below min_logit_rank(P), 0 from it on."""
    P = _check_stochastic(P)
    return tv_from_logit_error(logit_tail(P, r), _two_smallest(P))


def truncation_tv(P, r: int) -> float:
    """Max-row TV of the attention of the rank-r truncated SVD of the row-centred log P: an
    upper bound on the best a head of size r can do (the logits an optimiser may improve on)."""
    P = _check_stochastic(P)
    U, S, Vh = torch.linalg.svd(centred_log(P))
    Q = torch.softmax((U[:, :r] * S[:r]) @ Vh[:r], -1)
    return float(0.5 * (Q - P).abs().sum(-1).max())


# --- causal heads ------------------------------------------------------------------------------
#
# A causal head sees keys j <= i. softmax over the allowed keys gives a lower-triangular positive
# P exactly when S_ij = log P_ij + c_i for j <= i, the entries above the diagonal being free. Every
# block of rows k..n-1 and columns 0..k is fully specified, so rank(S) >= rank of that block of
# log P centred across its k + 1 columns; generically min(n - k, k), at most floor(n / 2).

def causal_targets(n: int, *, concentration: float = 1.0, batch: int = 1, seed: int = 0) -> torch.Tensor:
    """Lower-triangular positive P (batch, n, n): row i is Dirichlet(concentration) over keys
    0..i (row 0 is (1, 0, ..., 0)); entries above the diagonal are 0."""
    import numpy as np

    if not (isinstance(n, int) and n >= 2 and isinstance(batch, int) and batch >= 1):
        raise ValueError(f"need integers n >= 2 and batch >= 1, got n={n!r}, batch={batch!r}")
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}")
    rng = np.random.default_rng(int(seed))
    P = torch.zeros(batch, n, n, dtype=torch.float64)
    for i in range(n):
        row = torch.from_numpy(rng.dirichlet(np.full(i + 1, float(concentration)), size=batch))
        row = row.clamp_min(torch.finfo(torch.float64).tiny)
        P[:, i, :i + 1] = row / row.sum(-1, keepdim=True)
    return P


def _causal_blocks(P: torch.Tensor):
    """(k, rows, centred block of log P) for the fully specified blocks rows k..n-1, cols 0..k."""
    n = P.shape[0]
    L = P.clamp_min(torch.finfo(torch.float64).tiny).log()
    for k in range(1, n - 1):
        B = L[k:, :k + 1]
        yield k, B - B.mean(-1, keepdim=True)


def causal_rank_bound(P, *, rtol: float | None = None) -> int:
    """Lower bound on the smallest rank of causal logits reaching a lower-triangular positive P:
    the largest numerical rank of the column-centred fully specified blocks (floor(n / 2) for a
    generic P)."""
    P = _as_f64(P, "P")
    best = 0
    for _, B in _causal_blocks(P):
        s = _svals(B)
        if s[0] > 0:
            tol = default_rtol(*B.shape) if rtol is None else rtol
            best = max(best, int((s > tol * s[0]).sum()))
    return best


def causal_tv_lower_bound(P, r: int) -> float:
    """Certified lower bound on the max-row TV of any causal head of size r against a
    lower-triangular positive P: the largest, over the fully specified blocks, of the bound of
    tv_lower_bound applied to that block (Eckart-Young on the block, rows' smallest allowed
    entries)."""
    P = _as_f64(P, "P")
    n = P.shape[0]
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    two = _two_smallest(P, mask)
    best = 0.0
    for k, B in _causal_blocks(P):
        tail = _tail(_svals(B), r)
        best = max(best, tv_from_logit_error(tail, two[k:]))
    return best


# --- inputs of rank d < n ---------------------------------------------------------------------

def input_limited_logit_error(X, P) -> float:
    """The smallest centred-logit error ||S C - L0||_F over every head on X (n, d), whatever its
    size: S = X M X^T for any d x d matrix M, so the minimum is ||L0 - Pi_X L0 Pi_{CX}||_F
    (orthogonal projectors onto the columns of X and of C X), exact least squares."""
    X = _as_f64(X, "X")
    L0 = centred_log(P)
    n = X.shape[0]
    C = torch.eye(n, dtype=torch.float64) - 1.0 / n

    def proj(A):
        U, s, _ = torch.linalg.svd(A, full_matrices=False)
        k = int((s > default_rtol(*A.shape) * s[0]).sum()) if s[0] > 0 else 0
        return U[:, :k] @ U[:, :k].T

    return float((L0 - proj(X) @ L0 @ proj(C @ X)).norm())


def input_limited_tv_bound(X, P) -> float:
    """Certified lower bound on the max-row TV of every head on X (n, d) against P, from
    input_limited_logit_error."""
    P = _check_stochastic(P)
    return tv_from_logit_error(input_limited_logit_error(X, P), _two_smallest(P))
