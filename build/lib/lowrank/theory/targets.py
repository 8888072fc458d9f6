"""Target attention matrices P (batch, n, n), row-stochastic and positive, float64.

  dirichlet_targets    dense P: i.i.d. Dirichlet(concentration) rows; small concentration gives
                       peaked rows, large gives near-uniform rows
  sparse_targets       k-sparse P: k random keys per row share mass 1 - eps, the rest share eps
  permutation_targets  near-permutation P: each row puts 1 - eps on a random permutation of keys

The sparse families are the ones Likhosherstov et al. (2021) show approximable with head size
O(log n); eps > 0 keeps P positive so that log P (Theorem 1) exists.
"""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["dirichlet_targets", "sparse_targets", "permutation_targets"]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _check(n: int, batch: int) -> None:
    if not (isinstance(n, int) and n >= 2 and isinstance(batch, int) and batch >= 1):
        raise ValueError(f"need integers n >= 2 and batch >= 1, got n={n!r}, batch={batch!r}")


def dirichlet_targets(n: int, *, concentration: float = 1.0, batch: int = 1, seed: int = 0) -> torch.Tensor:
    """Dense P with i.i.d. Dirichlet(concentration * 1) rows, (batch, n, n)."""
    _check(n, batch)
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}")
    rng = np.random.default_rng(int(seed))
    P = torch.from_numpy(rng.dirichlet(np.full(n, float(concentration)), size=(batch, n)))
    # Small concentrations can underflow to exact zeros; Theorem 1 needs P > 0.
    P = P.clamp_min(torch.finfo(torch.float64).tiny)
    return P / P.sum(-1, keepdim=True)


def sparse_targets(n: int, k: int, *, eps: float = 1e-3, batch: int = 1, seed: int = 0) -> torch.Tensor:
    """k-sparse P: each row spreads 1 - eps over k random keys and eps over the other n - k
    (k = n gives the uniform P)."""
    _check(n, batch)
    if not (isinstance(k, int) and 1 <= k <= n):
        raise ValueError(f"k must be an int in [1, n={n}], got {k!r}")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")
    g = _gen(seed)
    order = torch.rand(batch, n, n, generator=g).argsort(-1)
    support = torch.zeros(batch, n, n, dtype=torch.bool).scatter_(-1, order[..., :k], True)
    on, off = ((1 - eps) / k, eps / (n - k)) if k < n else (1.0 / n, 0.0)
    P = torch.full((batch, n, n), off, dtype=torch.float64)
    return P.masked_fill_(support, on)


def permutation_targets(n: int, *, eps: float = 1e-3, batch: int = 1, seed: int = 0) -> torch.Tensor:
    """Near-permutation P: row i puts 1 - eps on key pi(i) for a random permutation pi."""
    _check(n, batch)
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")
    g = _gen(seed)
    perm = torch.stack([torch.randperm(n, generator=g) for _ in range(batch)])
    P = torch.full((batch, n, n), eps / (n - 1), dtype=torch.float64)
    return P.scatter_(-1, perm[..., None], 1 - eps)
