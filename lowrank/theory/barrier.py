"""Min & Li's rank barrier near (1 - 1/e) n: the closed forms and constructions.

Hardmax attention (zero temperature) is a 0/1 matrix with one 1 per row, so its rank is the
number of distinct columns that hold a row maximum. Under Min & Li's assumptions (orthonormal
X, Gaussian W_q, W_k) Q and K have i.i.d. N(0, 1) entries; given K the rows of Q are i.i.d.,
so the row argmaxes are i.i.d. draws from a column distribution p(K), and

    E[rank | K] = sum_j 1 - (1 - p_j)^n  <=  n (1 - (1 - 1/n)^n)  ->  (1 - 1/e) n,

the inequality by concavity (Jensen), with equality at uniform p. This module holds the
closed forms, the argmax column distribution of a key set and the reviewers' counterexample.
The Monte-Carlo tables, saturation points and fits of chapters 05 and 06 live in
``lowrank.experiments.rank_barrier`` and ``lowrank.experiments.rank_saturation``.
"""
from __future__ import annotations

import math

import numpy as np
import torch

BARRIER_FRACTION = 1.0 - math.exp(-1.0)

__all__ = [
    "BARRIER_FRACTION", "expected_distinct_columns", "expected_distinct_columns_given",
    "expected_distinct_columns_causal", "argmax_column_distribution", "counterexample_qk",
    "lognormal_share_sigma", "saturation_head_dim",
]


def _positive_ints(n, name: str = "n") -> np.ndarray:
    arr = np.asarray(n)
    if arr.size == 0 or not np.issubdtype(arr.dtype, np.number) or np.any(arr < 1) \
            or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be a positive integer or an array of them, got {n!r}")
    return arr.astype(np.float64)


def _scalar_or_array(values: np.ndarray, like):
    return float(values) if np.ndim(like) == 0 else values


def expected_distinct_columns(n, *, limit: bool = False):
    """n (1 - (1 - 1/n)^n), the expected number of distinct values in n uniform draws from n.

    Vectorised over n (a scalar gives a float). ``limit=True`` gives (1 - 1/e) n instead.
    Computed as -n expm1(n log1p(-1/n)) so it stays exact to rounding for large n.
    """
    nn = _positive_ints(n)
    if limit:
        return _scalar_or_array(BARRIER_FRACTION * nn, n)
    with np.errstate(divide="ignore"):  # n = 1: log1p(-1) = -inf, expm1(-inf) = -1, exact
        return _scalar_or_array(-nn * np.expm1(nn * np.log1p(-1.0 / nn)), n)


def expected_distinct_columns_given(p, *, m: int | None = None):
    """sum_j 1 - (1 - p_j)^m: expected distinct columns when m rows pick columns i.i.d. from p.

    p: (..., n), non-negative, each row summing to 1; m defaults to n (square attention).
    Returns shape (...) (a float for a single distribution). Maximised by uniform p.
    """
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("p must be a non-empty array (..., n) of finite non-negative probabilities")
    if not np.allclose(arr.sum(-1), 1.0, atol=1e-9):
        raise ValueError(f"each distribution p must sum to 1, got sums {arr.sum(-1)!r}")
    m = arr.shape[-1] if m is None else m
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise ValueError(f"m must be a positive int, got {m!r}")
    with np.errstate(divide="ignore"):  # p_j = 1 gives log1p(-1) = -inf, which is exact
        out = -np.expm1(m * np.log1p(-np.minimum(arr, 1.0))).sum(-1)
    return float(out) if out.ndim == 0 else out


def expected_distinct_columns_causal(n):
    """(n + 1) / 2: expected distinct columns when row i picks uniformly among columns 1..i.

    Column j is missed with probability prod_{i >= j} (1 - 1/i) = (j - 1) / n, and
    sum_j (1 - (j - 1) / n) = (n + 1) / 2. This is the causal hardmax model. Vectorised over n.
    """
    nn = _positive_ints(n)
    return _scalar_or_array((nn + 1.0) / 2.0, n)


def argmax_column_distribution(K: torch.Tensor, *, n_queries: int = 10_000, seed: int = 0,
                               chunk: int = 4096) -> torch.Tensor:
    """Monte-Carlo estimate of p(K): the probability that key j wins argmax_j q . k_j, q ~ N(0, I).

    K: (..., n, d_h). Returns (..., n) frequencies over ``n_queries`` Gaussian queries.
    """
    if K.dim() < 2 or n_queries < 1:
        raise ValueError(f"K must be (..., n, d_h) and n_queries >= 1, got shape {tuple(K.shape)}, "
                         f"n_queries={n_queries}")
    *batch, n, dh = K.shape
    Kf = K.reshape(-1, n, dh)
    g = torch.Generator(device=K.device).manual_seed(int(seed))
    counts = torch.zeros(Kf.shape[0], n, dtype=torch.float64, device=K.device)
    done = 0
    while done < n_queries:
        take = min(chunk, n_queries - done)
        q = torch.randn(Kf.shape[0], take, dh, generator=g, device=K.device, dtype=K.dtype)
        win = (q @ Kf.transpose(-2, -1)).argmax(-1)  # (B, take)
        counts.scatter_add_(1, win, torch.ones_like(win, dtype=torch.float64))
        done += take
    return (counts / n_queries).reshape(*batch, n)


def counterexample_qk(X: torch.Tensor, *, shift: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Reviewer counterexamples (R25 Reviewer 2): K = X and Q = X rolled by ``shift`` rows.

    X: (..., n, d) with distinct unit-norm rows. shift=0 gives Q = K = X, whose hardmax is the
    identity (x_i . x_j < 1 = x_i . x_i by Cauchy-Schwarz); shift=1 makes token i attend to
    token i - 1 (cyclically), a permutation. Both are full rank n for any d, far above 0.63 n.
    """
    norms = X.norm(dim=-1)
    if not torch.allclose(norms, torch.ones_like(norms), atol=1e-6):
        raise ValueError("counterexample_qk needs unit-norm rows of X")
    return torch.roll(X, shifts=shift, dims=-2), X




def lognormal_share_sigma(fraction: float) -> float:
    """sigma such that E[1 - exp(-e^{sigma Z - sigma^2/2})] = fraction (1 - 1/e), Z ~ N(0, 1).

    If the winning shares n p_j of the keys are log-normal with mean 1 and log-spread sigma,
    the expected hardmax rank is n E[1 - exp(-n p_j)]; this returns the spread at which it is
    ``fraction`` of the uniform-share value n (1 - 1/e). Gauss-Hermite quadrature, 120 nodes.
    (The book's own heuristic, not a result of either paper.)
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction!r}")
    x, wts = np.polynomial.hermite_e.hermegauss(120)
    wts = wts / wts.sum()

    def excess(s: float) -> float:
        return float((wts * -np.expm1(-np.exp(s * x - s * s / 2))).sum()) / BARRIER_FRACTION - fraction

    lo, hi = 1e-6, 20.0  # excess(lo) > 0 > excess(hi): the share spread only lowers the rank
    for _ in range(200):  # bisection to float64 resolution
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def saturation_head_dim(n, fraction: float):
    """The book's heuristic saturation point d_h* = t_n^4 / (2 sigma_f^2), t_n = Phi^{-1}(1 - 1/n).

    For large d_h the scores q . k_j are nearly independent N(0, |k_j|^2) with
    |k_j| = sqrt(d_h) (1 + delta_j), delta_j ~ N(0, 1 / (2 d_h)); the winner beats the level
    t_n |k|, so key j's winning share scales like exp(t_n^2 delta_j): log-normal with spread
    sigma^2 = t_n^4 / (2 d_h). The rank reaches ``fraction`` of the bound when sigma equals
    lognormal_share_sigma(fraction). Since t_n^2 ~ 2 ln n, d_h* ~ 2 (ln n)^2 / sigma_f^2:
    of order (log n)^2. Vectorised over n. (The book's own derivation, heuristic.)
    """
    from statistics import NormalDist
    nn = _positive_ints(n)
    if np.any(nn < 2):
        raise ValueError(f"n must be >= 2, got {n!r}")
    t = np.array([NormalDist().inv_cdf(1.0 - 1.0 / v) for v in np.ravel(nn)]).reshape(nn.shape)
    s = lognormal_share_sigma(fraction)
    return _scalar_or_array(t ** 4 / (2 * s * s), n)
