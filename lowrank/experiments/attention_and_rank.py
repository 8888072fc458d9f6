"""Chapter 01: low-rank logits, full-rank attention, and how temperature and tolerance move the rank.

``run(p)`` runs every computation of the chapter from its validated parameters and returns tidy
tables;
``headline(tables)`` is the dict of every value the chapter glues. The chapter tests no claim of
the papers (it fixes notation and measures), so this module defines no ``CLAIMS``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..layers.attention import MultiHeadAttention, attention_parameter_count, row_softmax
from ..core.progress import progress
from ..measure.rank import default_rtol, effective_rank_of_singular_values, numerical_rank_of_singular_values
from ..theory.sampling import sample_qk
from ..core.params import Int, IntList, FloatList, Constraint, contains

__all__ = ["estimate", "memory", "rank_vs_head_dim", "softmax_transpose_gap", "parameter_cost", "run",
           "headline", "HEADLINE_KEYS", "COST_HEADS"]

COST_HEADS = (1, 2, 4, 8, 16, 32)  # head counts of the parameter-cost table


# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.core.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    seed=Int(0, doc="random seed"),
    n=Int(4, 4096, doc="sequence length"),
    head_dims=IntList(1, 4096, doc="head sizes d_h to sweep"),
    n_trials=Int(1, 10_000, doc="random draws per setting"),
    scales=FloatList(1e-3, 1e4, doc="logit multipliers (inverse temperatures) to sweep"),
    rtols=FloatList(0.0, 1.0, doc="relative tolerances for the numerical rank (0 means the default max(m,n)*eps)"),
    d_model=Int(1, 65536, doc="model width for the parameter-cost table"),
    seq_lens=IntList(2, 65536, doc="sequence lengths for the parameter-cost table"),
)
CONSTRAINTS = (
    Constraint(("rtols",), contains("rtols", 0.0, "the default tolerance every figure compares against")),
    Constraint(("scales",), contains("scales", 1.0, "the standard temperature the figures show")),
)


def _tol_label(rtol: float, n: int) -> str:
    return f"rtol={rtol:g}" if rtol > 0 else f"rtol=n*eps={default_rtol(n, n):.1e}"


def rank_vs_head_dim(n: int, head_dims: Sequence[int], *, n_trials: int = 20, scales: Sequence[float] = (1.0,),
                     rtols: Sequence[float] = (0.0,), inputs: str = "orthonormal", seed: int = 0,
                     device="cpu", show_progress: bool | None = None) -> pd.DataFrame:
    """Ranks of logits and softmax attention for random heads, one row per measurement.

    For each head size d_h and trial, Q and K are sampled (see ``sample_qk``), the logits are
    S = Q K^T / sqrt(d_h) and, for each multiplier k in ``scales``, A = softmax(k S). An rtol of
    0 means the default max(n, n) * eps of matrix_rank.

    Columns: head_dim, scale, trial, matrix ("logits" or "probs"), measure ("numerical_rank" or
    "effective_rank"), tolerance, value.
    """
    if n < 2 or not head_dims or n_trials < 1:
        raise ValueError(f"need n >= 2, at least one head_dim and n_trials >= 1; got n={n}, "
                         f"head_dims={list(head_dims)}, n_trials={n_trials}")
    rows = []
    disable = None if show_progress is None else not show_progress
    for i, dh in enumerate(progress(head_dims, desc="head sizes", disable=disable)):
        Q, K = sample_qk(n, dh, batch=n_trials, inputs=inputs, seed=seed + 7919 * i, device=device)
        S = Q @ K.transpose(-2, -1) / dh ** 0.5
        mats = [("logits", 1.0, S)] + [("probs", float(k), row_softmax(k * S)) for k in scales]
        for matrix, k, A in mats:
            sigma = torch.linalg.svdvals(A)
            for rtol in rtols:
                r = numerical_rank_of_singular_values(sigma, n, n, None, rtol if rtol > 0 else None)
                rows += _rows(dh, k, matrix, "numerical_rank", _tol_label(rtol, n), r)
            rows += _rows(dh, k, matrix, "effective_rank", "", effective_rank_of_singular_values(sigma))
    return pd.DataFrame(rows)


def _rows(dh, k, matrix, measure, tol, values):
    return [dict(head_dim=dh, scale=k, trial=t, matrix=matrix, measure=measure, tolerance=tol,
                 value=float(v)) for t, v in enumerate(values.cpu().tolist())]


def softmax_transpose_gap(n: int, seed: int) -> float:
    """max |colsoftmax(S) - rowsoftmax(S^T)^T| for one Gaussian n x n matrix S (float64 round-off)."""
    S = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (torch.softmax(S, dim=0) - row_softmax(S.T).T).abs().max().item()


def parameter_cost(d_model: int, seq_lens: Sequence[int], heads: Sequence[int] = COST_HEADS) -> pd.DataFrame:
    """Weights of real layers, standard (d_h = d/h) and fixed (d_p = n for each n in ``seq_lens``).

    Each count is taken from a built ``MultiHeadAttention`` and checked against
    ``attention_parameter_count``. Columns: heads h, layer, head size, weights (M), ratio to 4d^2.
    """
    rows = []
    for h in heads:
        for kind, dh in [("standard", None)] + [(f"fixed, d_p = n = {L}", L) for L in seq_lens]:
            layer = MultiHeadAttention(d_model, h, head_dim=dh, bias=False)
            counted = sum(p.numel() for p in layer.parameters())
            if counted != attention_parameter_count(d_model, h, dh):
                raise AssertionError(f"formula and module disagree at h = {h}, head_dim = {dh}")
            rows.append({"heads h": h, "layer": kind, "head size": layer.head_dim,
                         "weights (M)": counted / 1e6, "ratio to 4d^2": counted / (4 * d_model**2)})
    return pd.DataFrame(rows)


def _summary(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    g = frame.groupby(by).value
    return pd.DataFrame({"mean": g.mean(), "sd": g.std()}).reset_index()


def run(p: Mapping[str, Any]) -> dict[str, Any]:
    """Every computation of chapter 01 from its validated parameters (SCHEMA's names).

    Returns {"params", "gap" (float), "cost" (parameter_cost), "ranks" (rank_vs_head_dim, raw),
    "default_tol" (label of the default tolerance), "tolerances" (their labels, the default first),
    "ref_dh", "by_head_dim" (mean and sd of each matrix's numerical rank per tolerance and d_h at k = 1),
    "by_scale" (the same for A at d_h = ref_dh per k), "effective" (mean effective rank of A per d_h and k)}.
    """
    seed, n, n_trials, d_model = p["seed"], p["n"], p["n_trials"], p["d_model"]
    scales, rtols, seq_lens = p["scales"], p["rtols"], p["seq_lens"]
    head_dims = list(p["head_dims"])
    df = rank_vs_head_dim(n, head_dims, n_trials=n_trials, scales=scales, rtols=rtols, seed=seed)
    num = df[df.measure == "numerical_rank"]
    default_tol = num.tolerance[num.tolerance.str.startswith("rtol=n*eps")].iloc[0]
    tolerances = sorted(num.tolerance.unique(), key=lambda t: -len(t))  # the default first, as plotted
    ref_dh = 8 if 8 in head_dims else head_dims[len(head_dims) // 2]
    std = num[num.scale == 1.0]
    probs = df[(df.matrix == "probs") & (df.head_dim == ref_dh) & (df.measure == "numerical_rank")]
    eff = df[(df.matrix == "probs") & (df.measure == "effective_rank")]
    return {
        "params": dict(seed=seed, n=n, head_dims=head_dims, n_trials=n_trials, scales=list(scales),
                       rtols=list(rtols), d_model=d_model, seq_lens=list(seq_lens)),
        "gap": softmax_transpose_gap(n, seed),
        "cost": parameter_cost(d_model, seq_lens),
        "ranks": df,
        "default_tol": default_tol,
        "tolerances": tolerances,
        "ref_dh": ref_dh,
        "by_head_dim": _summary(std, ["matrix", "tolerance", "head_dim"]),
        "by_scale": _summary(probs, ["tolerance", "scale"]),
        "effective": eff.groupby(["head_dim", "scale"]).value.mean().reset_index(),
    }


HEADLINE_KEYS = ("ch01_d_model", "ch01_logit_excess", "ch01_logit_excess_phrase", "ch01_logit_at_bound",
                 "ch01_logit_draws", "ch01_first_full", "ch01_dh_min", "ch01_prob_rank_dhmin",
                 "ch01_n", "ch01_ref_dh", "ch01_cold_k", "ch01_rank_warm", "ch01_rank_cold", "ch01_rank_warm_coarse",
                 "ch01_coarse_tol")


def headline(tables: Mapping[str, Any]) -> dict[str, Any]:
    """Every value chapter 01 glues."""
    p, df, default_tol = tables["params"], tables["ranks"], tables["default_tol"]
    n, head_dims, scales, rtols = p["n"], p["head_dims"], p["scales"], p["rtols"]
    std = df[(df.measure == "numerical_rank") & (df.scale == 1.0) & (df.tolerance == default_tol)]
    logit, prob = std[std.matrix == "logits"], std[std.matrix == "probs"]
    over = logit.value - np.minimum(logit.head_dim, n)
    excess = int(over.max())
    # a whole phrase, so that the sentence "the rank of the logits ... min(d_h, n)" parses for every value
    phrase = "never exceeds" if excess <= 0 else f"exceeds, by at most {excess},"
    full = prob.groupby("head_dim").value.min() == n
    first_full = int(full[full].index.min()) if full.any() else "none of the head sizes tried"
    by_scale = tables["by_scale"].pivot(index="scale", columns="tolerance", values="mean")
    cold, coarse = max(scales), max(rtols)
    coarse_tol = f"rtol={coarse:g}" if coarse > 0 else default_tol
    return {
        "ch01_d_model": p["d_model"],
        "ch01_logit_excess": excess,
        "ch01_logit_excess_phrase": phrase,
        "ch01_logit_at_bound": int((over == 0).sum()),
        "ch01_logit_draws": int(len(over)),
        "ch01_first_full": first_full,
        "ch01_dh_min": min(head_dims),
        "ch01_prob_rank_dhmin": float(prob[prob.head_dim == min(head_dims)].value.mean()),
        "ch01_n": n,
        "ch01_ref_dh": tables["ref_dh"],
        "ch01_cold_k": cold,
        "ch01_rank_warm": float(by_scale.loc[1.0, default_tol]),
        "ch01_rank_cold": float(by_scale.loc[cold, default_tol]),
        "ch01_rank_warm_coarse": float(by_scale.loc[1.0, coarse_tol]),
        "ch01_coarse_tol": coarse_tol,
    }


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    n, T, k = p["n"], p["n_trials"], len(p["scales"])
    draws = len(p["head_dims"]) * T * (1 + k)
    return {"svd": draws * n ** 3}, f"{draws:,} float64 {n} x {n} matrices, every rank measure"


def memory(p) -> float:
    """Bytes of the largest arrays: every draw's n x n matrices at every temperature, float64."""
    return 8.0 * p["n_trials"] * (3 + len(p["scales"])) * p["n"] ** 2
