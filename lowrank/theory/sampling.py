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

Temperature: "standard" is S = Q K^T / sqrt(d_h); a float k multiplies that by k (k > 1 is
colder); "hardmax" is the zero-temperature limit (one-hot rows at the row argmax).
"""
from __future__ import annotations

import math

import torch

from ..attention import causal_mask, hardmax, row_softmax

INPUTS = ("orthonormal", "gaussian", "sphere", "anisotropic")
ANISOTROPY_NOISE = 0.25


def _generator(seed: int, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def sample_inputs(n: int, d: int, *, batch: int = 1, inputs: str = "orthonormal", seed: int = 0,
                  device="cpu", dtype=torch.float64) -> torch.Tensor:
    """Token matrices X, shape (batch, n, d), under one of INPUTS."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}, got {inputs!r}")
    if n < 1 or d < 1 or batch < 1:
        raise ValueError(f"n, d and batch must be positive, got n={n}, d={d}, batch={batch}")
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


def sample_qk(n: int, head_dim: int, *, batch: int = 1, inputs: str = "orthonormal",
              d_model: int | None = None, seed: int = 0, device="cpu",
              dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys Q = X W_q, K = X W_k with W entries i.i.d. N(0, 1); each (batch, n, d_h)."""
    if head_dim < 1:
        raise ValueError(f"head_dim must be >= 1, got {head_dim}")
    d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
    X = sample_inputs(n, d, batch=batch, inputs=inputs, seed=seed, device=device, dtype=dtype)
    g = _generator(seed + 1_000_003, device)
    W = torch.randn(2, d, head_dim, generator=g, device=device, dtype=dtype)
    return X @ W[0], X @ W[1]


def temperature_scale(head_dim: int, temperature: str | float) -> float:
    """The multiplier of Q K^T: 1/sqrt(d_h) for "standard", k/sqrt(d_h) for a float k."""
    if temperature == "standard":
        return 1.0 / math.sqrt(head_dim)
    if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature > 0:
        return float(temperature) / math.sqrt(head_dim)
    raise ValueError(f"temperature must be 'standard', 'hardmax' or a positive float, got {temperature!r}")


def sample_attention(n: int, head_dim: int, *, batch: int = 1, inputs: str = "orthonormal",
                     temperature: str | float = "standard", causal: bool = False,
                     d_model: int | None = None, seed: int = 0, device="cpu",
                     dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, probs), each (batch, n, n); logits = Q K^T / sqrt(d_h) before any temperature.

    The logits returned are the standard-temperature ones (rank <= d_h); probs applies the
    temperature and the causal mask, so probs rows are one-hot under "hardmax".
    """
    Q, K = sample_qk(n, head_dim, batch=batch, inputs=inputs, d_model=d_model, seed=seed,
                     device=device, dtype=dtype)
    logits = Q @ K.transpose(-2, -1) / math.sqrt(head_dim)
    if temperature == "hardmax":
        scaled = logits
    else:
        scaled = Q @ K.transpose(-2, -1) * temperature_scale(head_dim, temperature)
    if causal:
        scaled = scaled.masked_fill(~causal_mask(n, device=device), float("-inf"))
    probs = hardmax(scaled) if temperature == "hardmax" else row_softmax(scaled)
    return logits, probs
