"""Chapter 04's cost: every training run its parameters make, and the work each one does."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...layers.attention import standard_head_dim
from ...train import run_key
from .grids import lr_sweep_grid, training_grids

__all__ = ["training_runs", "lm_units", "estimate", "memory", "run_keys"]


def _lm_params(cfg: Mapping[str, Any]) -> float:
    d, h, L = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
    dh = cfg["head_dim"] or standard_head_dim(d, h)
    d_ff = cfg["d_ff"] or 4 * d
    return cfg["vocab_size"] * d * (1 if cfg.get("tie_embeddings") else 2) + L * (4 * d * h * dh + 2 * d * d_ff)


def training_runs(p) -> list[dict]:
    """Every distinct training config of chapter 04 at P (run keys, as the sweep dedups them):
    the learning-rate sweep and the main grids at the rate P names."""
    configs = [c for _, c in lr_sweep_grid(p)]
    configs += [c for grid in training_grids(p).values() for _, c in grid]
    return list({run_key(c): c for c in configs}.values())


def lm_units(c: Mapping[str, Any]) -> dict[str, float]:
    """Units of one language-model training run (a :class:`lowrank.train.TrainConfig` dict):
    ``train`` 6 x parameters x tokens (training, and evaluation at a third of a step per token),
    ``train_attn`` heads x n x tokens x layers (the per-head score and softmax work, which dominates
    small heads), ``train_run`` 1 (data, model, checkpoints)."""
    tokens = c["steps"] * c["batch_size"] * c["seq_len"]
    evals = (c["steps"] // max(1, c["eval_interval"])) * c["eval_tokens"] / 3 + (c.get("test_tokens") or 0) / 3
    return {"train": 6.0 * _lm_params(c) * (tokens + evals),
            "train_attn": float(c["n_heads"]) * c["seq_len"] * (tokens + evals) * c["n_layers"],
            "train_run": 1.0}


def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    runs = training_runs(p)
    out: dict[str, float] = {}
    for c in runs:
        for k, v in lm_units(c).items():
            out[k] = out.get(k, 0.0) + v
    return out, f"{len(runs)} training runs"


def memory(p) -> float:
    """Bytes of every worker's activations and embedding optimiser state (float32)."""
    d, L, n, B = p["d_model"], p["n_layers"], p["seq_len"], p["batch_size"]
    h = max(p["heads"])
    acts = B * L * (n * 14 * max([d, *p["baseline_widths"]]) + 3 * h * n * n) * 4.0
    return max(1, p["workers"]) * (acts + 16.0 * p["vocab_size"] * d * 2)


def run_keys(p) -> set[str]:
    return {run_key(c) for c in training_runs(p)}
