"""Monte Carlo rank tables of sampled attention: one row per draw (or per draw and measure).

Every (n, d_h) cell draws from its own seed (``cell_seed``), so a table is reproducible cell by
cell whatever else runs, and draws are taken in chunks that bound the memory (``MAX_ELEMENTS``).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch

from ...layers.attention import causal_mask, hardmax, row_softmax
from ...core.progress import tqdm
from ...measure.rank import hardmax_rank, rank_report, rtol_or_default
from ...theory.barrier import expected_distinct_columns
from ...theory.sampling import sample_qk, temperature_scale

__all__ = ["MAX_ELEMENTS", "cell_seed", "as_rtols", "hardmax_rank_table", "attention_rank_table", "attention_probs",
           "mean_band", "seeded"]

MAX_ELEMENTS = 2 ** 24  # per sampled chunk, so a batch of draws fits in a few hundred MB


@contextmanager
def seeded(seed: int, threads: int = 1) -> Iterator[None]:
    """torch's global seed set and its thread count held at ``threads`` for a chapter's run.

    One thread: small batched SVDs are fastest single-threaded, and spare threads only spin on a
    busy machine. The caller's thread count comes back afterwards.
    """
    before = torch.get_num_threads()
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cell_seed(*keys: int) -> int:
    """One seed per Monte Carlo cell, from the run's seed and the cell's keys (n, d_h, chunk, ...)."""
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def as_rtols(rtols: Sequence[float]) -> list[float | None]:
    """Parameter tolerances (0 = torch's default) as rank_report takes them (None = default)."""
    return [rtol_or_default(r) for r in rtols]


def _chunks(n_trials: int, per_draw: int, max_elements: int):
    size = max(1, min(n_trials, max_elements // max(per_draw, 1)))
    start = 0
    while start < n_trials:
        yield start, min(size, n_trials - start)
        start += size


def hardmax_rank_table(ns: Sequence[int], head_dims: Sequence[int], *, n_trials: int | Sequence[int],
                       inputs: str = "orthonormal", causal: bool = False,
                       d_model: int | None = None, seed: int = 0, device="cpu",
                       dtype=torch.float32, max_elements: int = MAX_ELEMENTS,
                       progress: bool = False) -> pd.DataFrame:
    """Exact hardmax rank of sampled attention, one row per (n, d_h, trial).

    Every trial draws its own X, W_q, W_k (independent weights). ``n_trials`` is one int or one
    per n. Hardmax needs only argmaxes, so float32 logits suffice (ties have probability 0).
    Columns: n, head_dim, trial, rank, rank_frac (= rank / n), bound (n (1 - (1-1/n)^n)).
    """
    trials = [n_trials] * len(ns) if isinstance(n_trials, int) else list(n_trials)
    if len(trials) != len(ns) or min(trials) < 1:
        raise ValueError(f"n_trials must be a positive int or one per n, got {n_trials!r} for ns={ns!r}")
    frames = []
    cells = [(n, t, dh) for n, t in zip(ns, trials) for dh in head_dims]
    for n, t, dh in tqdm(cells, disable=not progress, leave=False, desc="hardmax ranks"):
        d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
        ranks = []
        for c, (start, size) in enumerate(_chunks(t, 2 * d * dh + n * n + n * d, max_elements)):
            Q, K = sample_qk(n, dh, batch=size, inputs=inputs, d_model=d_model,
                             independent_weights=True, seed=cell_seed(seed, n, dh, c),
                             device=device, dtype=dtype)
            logits = Q @ K.transpose(-2, -1)
            if causal:
                # The lowest finite value, not -inf: hardmax_rank rejects non-finite matrices.
                logits = logits.masked_fill(~causal_mask(n, device=logits.device),
                                            torch.finfo(logits.dtype).min)
            ranks.append(hardmax_rank(logits).cpu())
        r = torch.cat(ranks).numpy()
        frames.append(pd.DataFrame({"n": n, "head_dim": int(dh), "trial": np.arange(t), "rank": r,
                                    "rank_frac": r / n, "bound": expected_distinct_columns(n)}))
    return pd.concat(frames, ignore_index=True)


def attention_rank_table(n: int, head_dims: Sequence[int], *, n_trials: int,
                         inputs: str | torch.Tensor = "orthonormal",
                         temperature: str | float = "standard", causal: bool = False,
                         d_model: int | None = None, rtols: Sequence[float | None] = (None, 1e-6, 1e-3),
                         energies: Sequence[float] = (0.99,), seed: int = 0, device="cpu",
                         max_elements: int = MAX_ELEMENTS, progress: bool = False) -> pd.DataFrame:
    """Every rank measure of sampled attention probabilities (float64), long form.

    One row per (d_h, trial, measure, tolerance): columns head_dim, trial, measure, tolerance,
    value, plus the setting (n, inputs, temperature, causal). ``inputs`` may be a tensor of
    given token vectors, (n, d) or (n_trials, n, d), reported as inputs="given".
    """
    given = isinstance(inputs, torch.Tensor)
    if given and inputs.dim() == 3 and inputs.shape[0] != n_trials:
        raise ValueError(f"given inputs have batch {inputs.shape[0]}, expected n_trials={n_trials}")
    frames = []
    for dh in tqdm(list(head_dims), disable=not progress, leave=False, desc="attention ranks"):
        if given:
            d = inputs.shape[-1]
        else:
            d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
        for c, (start, size) in enumerate(_chunks(n_trials, 2 * d * dh + 2 * n * n + n * d,
                                                  max_elements)):
            X = inputs[start:start + size] if given and inputs.dim() == 3 else inputs
            Q, K = sample_qk(n, dh, batch=size, inputs=X, d_model=None if given else d_model,
                             independent_weights=True, seed=cell_seed(seed, n, dh, c),
                             device=device, dtype=torch.float64)
            probs = attention_probs(Q @ K.transpose(-2, -1), dh, temperature, causal)
            rep = rank_report(probs, rtols=rtols, energies=energies, long=True)
            rep["trial"] = rep.pop("index") + start
            frames.append(rep.assign(head_dim=int(dh)))
    out = pd.concat(frames, ignore_index=True)
    return out.assign(inputs="given" if given else inputs, temperature=str(temperature),
                      causal=causal)[["n", "head_dim", "trial", "inputs", "temperature", "causal",
                                      "measure", "tolerance", "value"]]


def attention_probs(raw: torch.Tensor, head_dim: int, temperature, causal: bool) -> torch.Tensor:
    """Attention probabilities from raw Q K^T under a temperature and an optional causal mask."""
    scaled = raw if temperature == "hardmax" else raw * temperature_scale(head_dim, temperature)
    if causal:
        scaled = scaled.masked_fill(~causal_mask(raw.shape[-1], device=raw.device), float("-inf"))
    return hardmax(scaled) if temperature == "hardmax" else row_softmax(scaled)


def mean_band(table: pd.DataFrame, *, by: Sequence[str], value: str, z: float = 1.96) -> pd.DataFrame:
    """Mean of ``value`` per group with a normal-theory band mean +- z * standard error.

    Columns: the ``by`` columns, mean, se, lo, hi, draws (one row per group, sorted).
    """
    g = table.groupby(list(by))[value]
    out = g.agg(mean="mean", se="sem", draws="count").reset_index()
    # one draw gives no standard error: se (and the band) stay NaN, never 0
    out["lo"], out["hi"] = out["mean"] - z * out["se"], out["mean"] + z * out["se"]
    return out
