"""Chapter 04's budget store: its models, comparisons and budgets, and the helpers that turn a
model's name into a training configuration and stored records into a labelled table. Shared by
the store's first design (:mod:`.budget`) and its fair design (:mod:`.fair`)."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ...layers.attention import standard_head_dim
from ...measure.stats import Estimate, t_interval
from ...train import TrainConfig, run_key

__all__ = ["EXPERIMENT", "BASE", "SEEDS", "BUDGET_STEPS", "MODELS", "EXTENDED_STEPS", "EXTENDED_MODELS",
           "TABLE2B_MODELS", "FIG4_MODELS", "ALL_MODELS", "ROWS", "ROW_STEPS", "model", "config", "labels",
           "rows_of", "frame", "estimate", "run_key"]

EXPERIMENT = "04_head_size_budget"

# The long-scale sweep's recipe (its committed manifest), so that the 1,000-step budget repeats it.
BASE = dict(task="lm", corpus="shakespeare", vocab_size=512, seq_len=64, d_model=64, n_layers=2, d_ff=None,
            norm="pre", tie_embeddings=False, init="scaled", batch_size=32, lr=0.01, warmup_steps=100,
            schedule="cosine", dropout=0.0, eval_interval=100, eval_tokens=8192, test_tokens=32768,
            num_threads=1, device="cpu")

SEEDS = (0, 1, 2)
# 1,000 steps is the long sweep's budget; two doublings reach 8.2M tokens a run.
BUDGET_STEPS = (1000, 2000, 4000)
# (name, family, heads, head size or None for d / h, width): the six models of the extension.
MODELS = (
    ("standard h = 4", "standard", 4, None, 64),  # also the fixed d_p = 16 model at h = 4
    ("standard h = 16", "standard", 16, None, 64),
    ("standard h = 32", "standard", 32, None, 64),
    ("fixed h = 16", "fixed", 16, 16, 64),
    ("fixed h = 32", "fixed", 32, 16, 64),
    ("standard d = 112", "standard", 4, None, 112),
)
# Twice the largest budget (16.4 M tokens a run) for the two rows that decide whether to decouple
# the head size: the h = 32 pair and the parameter-matched baseline.
EXTENDED_STEPS = 8000
EXTENDED_MODELS = ("standard h = 32", "fixed h = 32", "standard d = 112")
# Table 2(B) at n = 64: head sizes n / 4 (the standard d / h, "standard h = 4"), n / 2, n and 2 n at h = 4,
# the ratios of the paper's 32, 64, 128 and 256 at n = 128.
TABLE2B_MODELS = (
    ("fixed h = 4, d_p = 32", "fixed", 4, 32, 64),
    ("fixed h = 4, d_p = 64", "fixed", 4, 64, 64),
    ("fixed h = 4, d_p = 128", "fixed", 4, 128, 64),
)
# Fig. 4: the paper's baselines with head size 32, width and heads varied together (d = 32 h).
FIG4_MODELS = tuple((f"head size 32, h = {h}", "standard", h, None, 32 * h) for h in (1, 2, 4, 8))
ALL_MODELS = MODELS + TABLE2B_MODELS + FIG4_MODELS
# (row, model a, model b): a minus b is positive when the claim holds.
ROWS = (
    ("gap", "standard h = 32", "fixed h = 32"),
    ("match", "standard d = 112", "fixed h = 32"),
    ("stdheads", "standard h = 32", "standard h = 4"),
    ("fixedheads", "standard h = 4", "fixed h = 32"),
    ("capacity", "standard h = 4", "fixed h = 4, d_p = 64"),
    ("pastn", "fixed h = 4, d_p = 64", "fixed h = 4, d_p = 128"),
    ("fewheads1", "head size 32, h = 1", "head size 32, h = 2"),
    ("fewheads2", "head size 32, h = 2", "head size 32, h = 4"),
    ("fewheads4", "head size 32, h = 4", "head size 32, h = 8"),
)
# The budgets each row is compared at; it is judged at the last.
ROW_STEPS = {"gap": (*BUDGET_STEPS, EXTENDED_STEPS), "match": (*BUDGET_STEPS, EXTENDED_STEPS),
             "stdheads": BUDGET_STEPS, "fixedheads": BUDGET_STEPS, "capacity": BUDGET_STEPS[-1:],
             "pastn": BUDGET_STEPS[-1:], "fewheads1": BUDGET_STEPS[-1:], "fewheads2": BUDGET_STEPS[-1:],
             "fewheads4": BUDGET_STEPS[-1:]}


def model(name: str) -> tuple:
    """(name, family, heads, head size or None, width) of a model of :data:`ALL_MODELS`."""
    for m in ALL_MODELS:
        if m[0] == name:
            return m
    raise ValueError(f"unknown model {name!r}; expected one of {[m[0] for m in ALL_MODELS]}")


def config(name: str, *, steps: int, seed: int, **over) -> dict:
    """The :class:`lowrank.train.TrainConfig` dict of model ``name`` on the store's recipe (:data:`BASE`),
    with four checkpoints a run and ``over`` (a rate, a tokenizer) on top."""
    _, _, h, hd, d = model(name)
    cfg = dict(BASE, d_model=d, n_heads=h, head_dim=hd, steps=int(steps), seed=int(seed),
               checkpoint_every=max(int(steps) // 4, 1), **over)
    return TrainConfig.from_dict(cfg).to_dict()


def labels(name: str, **extra) -> dict:
    """The labels a run of model ``name`` carries in the store's tables, and ``extra``."""
    _, family, h, hd, d = model(name)
    return {"model": name, "family": family, "h": h, "d": d, "d_h": hd or standard_head_dim(d, h), **extra}


def rows_of(row: str) -> tuple[str, str]:
    """(model a, model b) of a row of :data:`ROWS`."""
    for r, a, b in ROWS:
        if r == row:
            return a, b
    raise ValueError(f"unknown row {row!r}; expected one of {[r for r, _, _ in ROWS]}")


def frame(labelled: list[tuple[dict, dict]], latest: Mapping[str, dict]) -> pd.DataFrame:
    """One row per (labels, config) of ``labelled`` whose run is in ``latest`` (records by key): the
    labels, seed, budget, rate, parameter count, both splits' losses, times, key and provenance."""
    rows = []
    for lab, cfg in labelled:
        r = latest.get(run_key(cfg))
        if r is None:
            continue
        m = r["metrics"]
        rows.append({**lab, "seed": cfg["seed"], "steps": cfg["steps"], "lr": cfg["lr"],
                     "tokens": cfg["steps"] * cfg["batch_size"] * cfg["seq_len"], "n_params": int(m["n_params"]),
                     "val_loss": float(m["val_loss"]), "test_loss": float(m["test_loss"]),
                     "train_wall_s": float(m["train_wall_s"]), "wall_s": float(r["wall_s"]), "key": r["key"],
                     "val_curve": m.get("val_curve"), "provenance": r.get("provenance") or {}})
    return pd.DataFrame(rows)


def estimate(x: pd.Series) -> Estimate:
    """The mean of paired differences with its 95 % t interval; no interval from one seed."""
    if len(x) == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, 0)
    if len(x) == 1:
        v = float(x.iloc[0])
        return Estimate(v, float("nan"), float("nan"), float("nan"), 1)
    return t_interval(list(x))
