"""Random attention matrices under named settings.

The setting of Min & Li's theory is: orthonormal token vectors X (n x d, d >= n), i.i.d.
Gaussian W_q, W_k (d x d_h), hardmax attention. Then Q = X W_q and K = X W_k have i.i.d.
N(0, 1) entries exactly, by rotation invariance. The other input settings keep the token
norms near 1 so that only the geometry changes, not the temperature:

  orthonormal   rows of X orthonormal (d = max(d_model, n))
  gaussian      X_ij ~ N(0, 1/d): rows nearly orthonormal for large d
  sphere        rows uniform on the unit sphere in R^d
  anisotropic   rows = sqrt(1 - a) * u + sqrt(a) * noise, a shared direction u; mean cosine
                similarity 1 - a between tokens, like contextual embeddings (a = 0.25)
  a tensor      given token vectors (real embeddings), (n, d) or (batch, n, d), used as X

Weights: by default one (W_q, W_k) pair is shared by the whole batch; independent_weights=True
draws a fresh pair per batch element (independent Monte-Carlo trials), and heads=h draws h
pairs that all read the same X (a multi-head layer). With orthonormal inputs and independent
weights, Q and K are drawn directly as i.i.d. N(0, 1): exactly their distribution, far cheaper.

Temperature: "standard" is S = Q K^T / sqrt(d_h); a float k multiplies that by k (k > 1 is
colder); "hardmax" is the zero-temperature limit (one-hot rows at the row argmax).
"""
from __future__ import annotations

import math

import torch

from ..layers.attention import causal_mask, hardmax, row_softmax

INPUTS = ("orthonormal", "gaussian", "sphere", "anisotropic")
ANISOTROPY_NOISE = 0.25


def _generator(seed: int, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def _given_inputs(X: torch.Tensor, n: int, d: int, batch: int, device, dtype) -> torch.Tensor:
    if X.dim() not in (2, 3) or X.shape[-2] != n or X.shape[-1] != d:
        raise ValueError(f"given inputs must have shape (n, d) = ({n}, {d}) or (batch, n, d), "
                         f"got {tuple(X.shape)}")
    if X.dim() == 3 and X.shape[0] not in (1, batch):
        raise ValueError(f"given inputs have batch {X.shape[0]}, expected 1 or {batch}")
    X = X.to(device=device, dtype=dtype)
    if not torch.isfinite(X).all():
        raise ValueError("given inputs have non-finite entries (nan or inf)")
    return X.reshape(-1, n, d).expand(batch, n, d)


def sample_inputs(n: int, d: int, *, batch: int = 1, inputs: str | torch.Tensor = "orthonormal",
                  seed: int = 0, device="cpu", dtype=torch.float64) -> torch.Tensor:
    """Token matrices X, shape (batch, n, d), under one of INPUTS or given as a tensor."""
    if n < 1 or d < 1 or batch < 1:
        raise ValueError(f"n, d and batch must be positive, got n={n}, d={d}, batch={batch}")
    if isinstance(inputs, torch.Tensor):
        return _given_inputs(inputs, n, d, batch, device, dtype)
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS} or a tensor, got {inputs!r}")
    g = _generator(seed, device)
    z = torch.randn(batch, n, d, generator=g, device=device, dtype=dtype)
    if inputs == "orthonormal":
        if d < n:
            raise ValueError(f"orthonormal inputs need d >= n, got d={d}, n={n}")
        q, _ = torch.linalg.qr(z.transpose(-2, -1))  # (batch, d, n), orthonormal columns
        return q.transpose(-2, -1)
    if inputs == "gaussian":
        return z / math.sqrt(d)
    if inputs == "sphere":
        return z / z.norm(dim=-1, keepdim=True)
    u = torch.randn(batch, 1, d, generator=g, device=device, dtype=dtype)
    u = u / u.norm(dim=-1, keepdim=True)
    noise = z / math.sqrt(d)
    return math.sqrt(1 - ANISOTROPY_NOISE) * u + math.sqrt(ANISOTROPY_NOISE) * noise


def sample_qk(n: int, head_dim: int, *, batch: int = 1, inputs: str | torch.Tensor = "orthonormal",
              d_model: int | None = None, heads: int | None = None,
              independent_weights: bool = False, seed: int = 0, device="cpu",
              dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys Q = X W_q, K = X W_k with W entries i.i.d. N(0, 1).

    Each is (batch, n, d_h), or (batch, heads, n, d_h) when ``heads`` is given. Given inputs
    fix d = inputs.shape[-1] (``d_model`` must then be None or equal to it).
    """
    if head_dim < 1:
        raise ValueError(f"head_dim must be >= 1, got {head_dim}")
    if heads is not None and (isinstance(heads, bool) or heads < 1):
        raise ValueError(f"heads must be None or a positive int, got {heads!r}")
    if isinstance(inputs, torch.Tensor):
        d = inputs.shape[-1]
        if d_model is not None and d_model != d:
            raise ValueError(f"d_model={d_model} disagrees with the given inputs' width {d}")
    else:
        d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
    if independent_weights and isinstance(inputs, str) and inputs == "orthonormal":
        # X W has i.i.d. N(0, 1) entries when X has orthonormal rows and W is Gaussian, for
        # every head jointly (columns X w ~ N(0, X X^T = I)), so draw Q and K directly: the
        # same distribution without the QR and the d x d_h products.
        if n < 1 or batch < 1:
            raise ValueError(f"n and batch must be positive, got n={n}, batch={batch}")
        g = _generator(seed, device)
        QK = torch.randn(batch, heads or 1, 2, n, head_dim, generator=g, device=device, dtype=dtype)
        Q, K = QK[:, :, 0], QK[:, :, 1]
        return (Q, K) if heads is not None else (Q[:, 0], K[:, 0])
    X = sample_inputs(n, d, batch=batch, inputs=inputs, seed=seed, device=device, dtype=dtype)
    g = _generator(seed + 1_000_003, device)
    if heads is None and not independent_weights:
        W = torch.randn(2, d, head_dim, generator=g, device=device, dtype=dtype)
        return X @ W[0], X @ W[1]
    W = torch.randn(batch if independent_weights else 1, heads or 1, 2, d, head_dim,
                    generator=g, device=device, dtype=dtype)
    Xh = X[:, None]  # (batch, 1, n, d): every head reads the same tokens
    Q, K = Xh @ W[:, :, 0], Xh @ W[:, :, 1]
    return (Q, K) if heads is not None else (Q[:, 0], K[:, 0])


def temperature_scale(head_dim: int, temperature: str | float) -> float:
    """The multiplier of Q K^T: 1/sqrt(d_h) for "standard", k/sqrt(d_h) for a float k."""
    if temperature == "standard":
        return 1.0 / math.sqrt(head_dim)
    if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature > 0:
        return float(temperature) / math.sqrt(head_dim)
    raise ValueError(f"temperature must be 'standard', 'hardmax' or a positive float, got {temperature!r}")


def sample_attention(n: int, head_dim: int, *, batch: int = 1,
                     inputs: str | torch.Tensor = "orthonormal",
                     temperature: str | float = "standard", causal: bool = False,
                     d_model: int | None = None, heads: int | None = None,
                     independent_weights: bool = False, seed: int = 0, device="cpu",
                     dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, probs), each (batch, n, n) or (batch, heads, n, n); logits = Q K^T / sqrt(d_h).

    The logits returned are the standard-temperature ones (rank <= d_h); probs applies the
    temperature and the causal mask, so probs rows are one-hot under "hardmax".
    """
    if temperature != "hardmax":
        temperature_scale(head_dim, temperature)  # reject a bad temperature before sampling
    Q, K = sample_qk(n, head_dim, batch=batch, inputs=inputs, d_model=d_model, heads=heads,
                     independent_weights=independent_weights, seed=seed, device=device, dtype=dtype)
    logits = Q @ K.transpose(-2, -1) / math.sqrt(head_dim)
    if temperature == "hardmax":
        scaled = logits
    else:
        scaled = Q @ K.transpose(-2, -1) * temperature_scale(head_dim, temperature)
    if causal:
        scaled = scaled.masked_fill(~causal_mask(n, device=device), float("-inf"))
    probs = hardmax(scaled) if temperature == "hardmax" else row_softmax(scaled)
    return logits, probs
