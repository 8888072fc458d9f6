"""Near-orthonormal tokens: X X^T = I + E with a controlled off-diagonal size.

The ICLR 2026 version of Min & Li states the barrier for inputs whose Gram matrix is I + E with
|E_ij| = o(n^-3/2) (R26 Reviewer 4). Here E is symmetric with a zero diagonal and off-diagonal
entries of size exactly c n^-3/2 with random signs, so ``c`` sweeps the perturbation against the
hypothesis' scale: every finite c is inside "O(n^-3/2)", and c -> 0 is inside "o(n^-3/2)".

Only Q = X W_q and K = X W_k enter hardmax attention. With X = S V, S = (I + E)^{1/2} and V of
orthonormal rows, V W has i.i.d. N(0, 1) entries for Gaussian W, so Q = S G_q and K = S G_k with
G i.i.d. N(0, 1): the exact distribution, without the d x d_h products. The rows of Q (and of K)
then have covariance I + E across tokens, which is what the perturbation changes.
"""
from __future__ import annotations

import math

import torch

__all__ = ["near_orthonormal_gram", "near_orthonormal_qk"]


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def near_orthonormal_gram(n: int, c: float, *, batch: int = 1, seed: int = 0,
                          dtype=torch.float64) -> torch.Tensor:
    """Gram matrices I + E, shape (batch, n, n): E symmetric, zero diagonal, |E_ij| = c n^-3/2.

    Raises ValueError when I + E is not positive definite (c too large for n), since then no
    token vectors have that Gram matrix.
    """
    if not (isinstance(n, int) and n >= 2):
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    if not (math.isfinite(c) and c >= 0):
        raise ValueError(f"c must be a finite number >= 0, got {c!r}")
    g = _generator(seed)
    signs = torch.randint(0, 2, (batch, n, n), generator=g).to(dtype) * 2 - 1
    upper = torch.triu(signs, diagonal=1)
    E = (upper + upper.transpose(-2, -1)) * (c * n ** -1.5)
    G = torch.eye(n, dtype=dtype) + E
    smallest = float(torch.linalg.eigvalsh(G)[..., 0].min())
    if smallest <= 0:
        raise ValueError(f"I + E is not positive definite at n = {n}, c = {c} (smallest eigenvalue "
                         f"{smallest:.3g}): no token vectors have this Gram matrix; use a smaller c")
    return G


def near_orthonormal_qk(n: int, head_dim: int, c: float, *, batch: int = 1, seed: int = 0,
                        dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Q, K (batch, n, d_h) of one head with Gaussian weights on near-orthonormal tokens (see the
    module docstring); every batch element draws its own E, W_q and W_k."""
    if not (isinstance(head_dim, int) and head_dim >= 1):
        raise ValueError(f"head_dim must be a positive int, got {head_dim!r}")
    G = near_orthonormal_gram(n, c, batch=batch, seed=seed, dtype=dtype)
    w, U = torch.linalg.eigh(G)
    S = U @ torch.diag_embed(w.sqrt()) @ U.transpose(-2, -1)
    Z = torch.randn(batch, 2, n, head_dim, generator=_generator(seed + 7_919), dtype=dtype)
    return S @ Z[:, 0], S @ Z[:, 1]
