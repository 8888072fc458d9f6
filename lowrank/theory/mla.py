"""Random multi-head latent attention heads: the rank of their logits and attention matrices.

One head of :class:`lowrank.layers.mla.MultiHeadLatentAttention` under Min & Li's sampling setting:
token vectors X from :func:`lowrank.theory.sampling.sample_inputs` (orthonormal rows by
default) and i.i.d. Gaussian weights, a fresh draw of every weight per trial. Projections read
from x have N(0, 1) entries, as ``sample_qk``'s W_q and W_k; projections read from a latent
have N(0, 1 / width) entries. With orthonormal X every entry of c_KV, q_C, k_C, q_R and k_R then
has variance 1, so the logits q . k have variance head_dim + rope_dim before the scale
1 / sqrt(head_dim + rope_dim): a standard head's temperature, with the content and rotary parts
weighing head_dim : rope_dim.

Min & Li's barrier E[hardmax rank] <= n (1 - (1 - 1/n)^n) needs the query rows to be i.i.d.
given the keys. Without a query latent they are: q_i = [z_i, z'_i R_i] with z, z' i.i.d.
N(0, I) given X, and R_i z' ~ N(0, I) again. With a query latent, the rotary query
c_Q W_QR R_i has a covariance R_i^T W_QR^T W_QR R_i that moves with the position, the rows are
no longer identically distributed given the weights, and the barrier is not a theorem there;
:func:`mla_rank_table` measures it.

Keys from a latent are not a standard head's keys: k_C = c_KV W_UK has covariance
W_UK^T W_UK (a Wishart matrix), isotropic only as kv_latent grows, so a head with
kv_latent = head_dim is a standard head of size head_dim with anisotropic keys.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from ..layers.attention import causal_mask, row_softmax
from ..layers.mla import logit_rank_bound, rope
from ..measure.rank import (FLOAT32, default_rtol, hardmax_rank, numerical_rank, rank_label, rtol_or_default,
                    tolerance_label)
from ..measure.stats import mean_se
from .barrier import expected_distinct_columns, expected_distinct_columns_causal
from .sampling import sample_inputs

__all__ = ["LatentHeadWeights", "sample_mla_weights", "mla_head_logits", "sample_mla_logits",
           "mla_rank_table", "MLA_MATRICES"]

# The matrices mla_rank_table measures, as its ``matrix`` column names them.
MLA_MATRICES = ("logits", "attention", "hardmax attention")
_MAX_ELEMENTS = 2 ** 22  # per chunk of draws, about 32 MB in float64


class LatentHeadWeights(NamedTuple):
    """One MLA head's weights per draw, row convention (y = x W), each with a leading batch dim.

    W_dkv (d, kv_latent), W_uk (kv_latent, head_dim), W_kr (d, rope_dim), W_dq (d, q_latent) or
    None, W_q (q_latent or d, head_dim + rope_dim): the content query columns, then the rotary ones.
    """
    W_dkv: torch.Tensor
    W_uk: torch.Tensor
    W_kr: torch.Tensor
    W_dq: torch.Tensor | None
    W_q: torch.Tensor


def _check_sizes(head_dim, kv_latent, rope_dim, q_latent) -> None:
    # logit_rank_bound validates every size and names the bad one.
    logit_rank_bound(1, head_dim=head_dim, kv_latent=kv_latent, rope_dim=rope_dim, q_latent=q_latent)


def sample_mla_weights(d: int, *, head_dim: int, kv_latent: int, rope_dim: int, q_latent: int | None = None,
                       batch: int = 1, seed: int = 0, device="cpu", dtype=torch.float64) -> LatentHeadWeights:
    """Gaussian weights of ``batch`` independent MLA heads reading tokens of width d.

    Entries are N(0, 1) in projections from x and N(0, 1 / width) in projections from a latent
    of that width (W_uk, and W_q when there is a query latent).
    """
    _check_sizes(head_dim, kv_latent, rope_dim, q_latent)
    if d < 1 or batch < 1:
        raise ValueError(f"d and batch must be positive, got d={d}, batch={batch}")
    g = torch.Generator(device=device).manual_seed(int(seed))

    def draw(rows, cols, var=1.0):
        return torch.randn(batch, rows, cols, generator=g, device=device, dtype=dtype) * math.sqrt(var)

    W_dkv = draw(d, kv_latent)
    W_uk = draw(kv_latent, head_dim, 1.0 / kv_latent)
    W_kr = draw(d, rope_dim)
    W_dq = None if q_latent is None else draw(d, q_latent)
    W_q = draw(d, head_dim + rope_dim) if q_latent is None else draw(q_latent, head_dim + rope_dim, 1.0 / q_latent)
    return LatentHeadWeights(W_dkv, W_uk, W_kr, W_dq, W_q)


def mla_head_logits(X: torch.Tensor, w: LatentHeadWeights, *, rope_base: float = 10000.0,
                    scale: float | None = None) -> torch.Tensor:
    """Unmasked logits (batch, n, n) of the heads ``w`` on tokens X (batch or 1, n, d).

    S = (q_C k_C^T + q_R k_R^T) * scale, default scale 1 / sqrt(head_dim + rope_dim): the
    computation of :class:`lowrank.layers.mla.MultiHeadLatentAttention` for one head without biases.
    """
    head_dim = w.W_uk.shape[-1]
    rope_dim = w.W_kr.shape[-1]
    k_c = (X @ w.W_dkv) @ w.W_uk
    k_r = rope(X @ w.W_kr, rope_base)
    q = (X if w.W_dq is None else X @ w.W_dq) @ w.W_q
    q_c, q_r = q[..., :head_dim], rope(q[..., head_dim:], rope_base)
    s = q_c @ k_c.transpose(-2, -1) + q_r @ k_r.transpose(-2, -1)
    return s * (1.0 / math.sqrt(head_dim + rope_dim) if scale is None else scale)


def _width(n: int, inputs, d_model: int | None) -> int:
    if isinstance(inputs, torch.Tensor):
        return inputs.shape[-1]
    return max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)


def sample_mla_logits(n: int, *, head_dim: int, kv_latent: int, rope_dim: int, q_latent: int | None = None,
                      batch: int = 1, inputs: str | torch.Tensor = "orthonormal", d_model: int | None = None,
                      rope_base: float = 10000.0, seed: int = 0, device="cpu",
                      dtype=torch.float64) -> torch.Tensor:
    """Unmasked logits (batch, n, n) of ``batch`` independent random MLA heads.

    Each trial draws its own X (from ``inputs``, as :func:`~lowrank.theory.sampling.sample_inputs`;
    orthonormal rows need d = max(d_model, n); given token vectors are (n, d), shared by the
    trials, or (batch, n, d)) and its own weights (:func:`sample_mla_weights`).
    """
    d = _width(n, inputs, d_model)
    X = sample_inputs(n, d, batch=batch, inputs=inputs, seed=seed, device=device, dtype=dtype)
    w = sample_mla_weights(d, head_dim=head_dim, kv_latent=kv_latent, rope_dim=rope_dim, q_latent=q_latent,
                           batch=batch, seed=seed + 1_000_003, device=device, dtype=dtype)
    return mla_head_logits(X, w, rope_base=rope_base)


def _cell_seed(*keys: int) -> int:
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def _draws(n, dh, dr, c, q_latent, n_trials, inputs, causal, rtols, d_model, rope_base, seed) -> dict:
    """Per-draw ranks of one cell: {(matrix, measure, tolerance): array of n_trials values}."""
    d = _width(n, inputs, d_model)
    per_draw = n * d + d * (c + dr + (q_latent or 0)) + (q_latent or d) * (dh + dr) + 4 * n * n
    size = max(1, min(n_trials, _MAX_ELEMENTS // per_draw))
    found: dict[tuple[str, str, str], list] = {}
    for chunk, start in enumerate(range(0, n_trials, size)):
        take = min(size, n_trials - start)
        X = inputs[start:start + take] if isinstance(inputs, torch.Tensor) and inputs.dim() == 3 else inputs
        s = sample_mla_logits(n, head_dim=dh, kv_latent=c, rope_dim=dr, q_latent=q_latent, batch=take,
                              inputs=X, d_model=d_model, rope_base=rope_base,
                              seed=_cell_seed(seed, n, dh, dr, c, q_latent or 0, chunk))
        masked = s.masked_fill(~causal_mask(n), float("-inf")) if causal else s
        # hardmax_rank refuses -inf; the lowest finite value never wins a row that keeps its diagonal.
        finite = s.masked_fill(~causal_mask(n), torch.finfo(s.dtype).min) if causal else s
        probs = row_softmax(masked)
        ranks = {}
        for matrix, A in (("logits", s), ("attention", probs)):
            for rtol in map(rtol_or_default, rtols):
                value = default_rtol(n, n, torch.float32) if rtol == FLOAT32 else rtol
                ranks[(matrix, "numerical_rank", tolerance_label(rtol))] = numerical_rank(A, rtol=value)
        ranks[("hardmax attention", "hardmax_rank", "")] = hardmax_rank(finite)
        for key, value in ranks.items():
            found.setdefault(key, []).append(value.cpu().numpy())
    return {key: np.concatenate(v).astype(np.float64) for key, v in found.items()}


def mla_rank_table(ns: Sequence[int], kv_latents: Sequence[int], *, head_dims: Sequence[int],
                   rope_dims: Sequence[int], q_latent: int | None = None, n_trials: int,
                   inputs: str | torch.Tensor = "orthonormal", causal: bool = False,
                   rtols: Sequence[float | None] = (None,), d_model: int | None = None,
                   rope_base: float = 10000.0, seed: int = 0, summary: bool = True) -> pd.DataFrame:
    """Ranks of random MLA heads over a grid of n, kv_latent, head_dim and rope_dim (float64).

    Three matrices per draw: the unmasked logits S (numerical rank at each of ``rtols``: None or
    0 is the default max(n, n) eps, :data:`lowrank.measure.rank.FLOAT32` the same rule with float32's eps,
    a number a relative tolerance), the softmax attention at the standard scale 1 / sqrt(head_dim +
    rope_dim) with the causal mask if asked (numerical rank) and the hardmax attention (hardmax
    rank: distinct argmax columns). Every cell draws from its own seed, so a cell's numbers do not
    depend on the rest of the grid.

    ``summary=True``: one row per cell and measure with columns n, head_dim, rope_dim, kv_latent,
    q_latent, inputs, causal, matrix, measure, tolerance, label (:func:`lowrank.measure.rank.rank_label`),
    mean, se (NaN for one draw), draws, frac (mean / n), se_frac, logit_bound
    (:func:`lowrank.layers.mla.logit_rank_bound` at d_model = the inputs' width) and barrier (Min & Li's
    n (1 - (1 - 1/n)^n), or (n + 1) / 2 with the causal mask; a bound on the hardmax rank's mean).
    ``summary=False``: one row per draw and measure, with ``trial`` and ``value`` instead of
    the mean, se, draws, frac and se_frac columns.
    """
    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1:
        raise ValueError(f"n_trials must be a positive int, got {n_trials!r}")
    grids = {"ns": ns, "kv_latents": kv_latents, "head_dims": head_dims, "rope_dims": rope_dims}
    for name, values in grids.items():
        if isinstance(values, (int, str)) or len(values) == 0:
            raise ValueError(f"{name} must be a non-empty sequence of ints, got {values!r}")
    given = isinstance(inputs, torch.Tensor)
    if given and inputs.dim() == 3 and inputs.shape[0] != n_trials:
        raise ValueError(f"given inputs have batch {inputs.shape[0]}, expected n_trials={n_trials}")
    rows = []
    for n in ns:
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise ValueError(f"every n must be an int >= 2, got {n!r}")
        barrier = expected_distinct_columns_causal(n) if causal else expected_distinct_columns(n)
        for dh in head_dims:
            for dr in rope_dims:
                for c in kv_latents:
                    _check_sizes(dh, c, dr, q_latent)
                    bound = logit_rank_bound(n, head_dim=dh, kv_latent=c, rope_dim=dr, q_latent=q_latent,
                                             d_model=_width(n, inputs, d_model))
                    cell = {"n": n, "head_dim": dh, "rope_dim": dr, "kv_latent": c, "q_latent": q_latent,
                            "inputs": "given" if given else inputs, "causal": causal}
                    draws = _draws(n, dh, dr, c, q_latent, n_trials, inputs, causal, rtols, d_model,
                                   rope_base, seed)
                    for (matrix, measure, tol), values in draws.items():
                        head = {**cell, "matrix": matrix, "measure": measure, "tolerance": tol,
                                "label": rank_label(measure, tol, matrix)}
                        tail = {"logit_bound": bound, "barrier": barrier}
                        if summary:
                            mean, se, count = mean_se(values)
                            rows.append({**head, "mean": mean, "se": se, "draws": count, "frac": mean / n,
                                         "se_frac": se / n, **tail})
                        else:
                            rows += [{**head, "trial": t, "value": v, **tail} for t, v in enumerate(values)]
    return pd.DataFrame(rows)
