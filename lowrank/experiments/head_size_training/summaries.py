"""Summaries of finished runs: seed means, training curves, the per-configuration table, and paired
differences of validation loss with their 95 % intervals (and how to say them)."""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ...measure.stats import Estimate, paired_difference

__all__ = ["summarise", "interval_points", "curves", "mean_curves", "curve_gap", "configuration_table", "LEVEL",
           "paired", "diff_text", "half_width"]


def summarise(df: pd.DataFrame, by: list[str], value: str = "val_ppl") -> pd.DataFrame:
    """Mean, standard deviation and standard error of ``value`` over seeds, per group; with
    one seed the standard deviation and error are NaN (one run has no spread), never 0."""
    if df.empty:
        raise ValueError("no finished runs to summarise")
    g = df.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    out["sem"] = out["std"] / out["n"] ** 0.5
    params = df.groupby(by, sort=True)["n_params"].first().reset_index(drop=True)
    out.insert(len(by), "n_params", params.values)
    return out


def interval_points(val_curve: list | None) -> list:
    """The points of a run's ``val_curve`` taken on the interval sample. The training loop appends
    the final evaluation last, on all of the evaluation tokens rather than the quarter every
    interval point uses: a shift of level, not a step of training, so a curve stops before it (at
    the last step for runs whose loop evaluated it on the interval sample too, one interval earlier
    for runs stored before it did)."""
    return list(val_curve or [])[:-1]


def curves(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Long table of the training curves of ``df``'s runs: ``by`` columns, seed, split
    ('train' or 'validation', the interval evaluations of :func:`interval_points`), step, loss."""
    rows = []
    for _, r in df.iterrows():
        points = {"train": r.get("train_curve") or [], "validation": interval_points(r.get("val_curve"))}
        for split, pts in points.items():
            for step, loss in pts:
                rows.append({**{b: r[b] for b in by}, "seed": r["seed"], "split": split,
                             "step": int(step), "loss": float(loss)})
    return pd.DataFrame(rows)


def mean_curves(df: pd.DataFrame, by: list[str], split: str = "validation") -> pd.DataFrame:
    """Seed-mean loss per (``by``..., step) of one split of ``df``'s training curves."""
    c = curves(df, by)
    if c.empty:
        return pd.DataFrame(columns=[*by, "step", "loss"])
    return c[c.split == split].groupby([*by, "step"], as_index=False)["loss"].mean()


def curve_gap(df: pd.DataFrame, a: Mapping, b: Mapping, split: str = "train") -> pd.DataFrame:
    """Loss of the runs matching ``a`` minus those matching ``b`` (dicts of column values) at
    every logged step, paired by seed then averaged: columns ``step``, ``diff``, ``n`` (seeds)."""
    c = curves(df, ["family", "h", "d_h", "d"])
    c = c[c.split == split]
    pick = lambda w: c[pd.concat([c[k] == v for k, v in w.items()], axis=1).all(axis=1)]  # noqa: E731
    j = pick(a).merge(pick(b), on=["seed", "step"], suffixes=("_a", "_b"))
    if j.empty:
        return pd.DataFrame(columns=["step", "diff", "n"])
    j["diff"] = j["loss_a"] - j["loss_b"]
    return j.groupby("step", as_index=False).agg(diff=("diff", "mean"), n=("seed", "count"))


def configuration_table(*frames: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct configuration over all experiments: width, heads, head size,
    parameters, validation and test perplexity (mean and standard deviation over seeds)."""
    df = pd.concat(frames, ignore_index=True).drop_duplicates(subset=["key"])
    df = df.assign(kind=["standard" if dh * h == d else "fixed" for d, h, dh in zip(df.d, df.h, df.d_h)])
    g = df.groupby(["kind", "d", "h", "d_h"], sort=True)
    out = g.agg(params=("n_params", "first"), seeds=("seed", "count"), val_ppl=("val_ppl", "mean"),
                val_ppl_sd=("val_ppl", "std"), test_ppl=("test_ppl", "mean"), test_ppl_sd=("test_ppl", "std"),
                train_s=("train_wall_s", "mean")).reset_index()
    return out  # one seed: the standard deviations are NaN, not 0


# Every interval in this chapter is a two-sided 95 % Student-t interval over seeds.
LEVEL = 0.95


def paired(a: pd.DataFrame, b: pd.DataFrame, value: str = "val_loss") -> Estimate:
    """``value`` of the runs in ``a`` minus those in ``b``, paired by seed (runs with the same
    seed see the same batches), with a 95 % t interval; NaN spread for fewer than two pairs."""
    j = a[["seed", value]].merge(b[["seed", value]], on="seed", suffixes=("_a", "_b"))
    if j.empty:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, 0)
    return paired_difference(j[f"{value}_a"], j[f"{value}_b"], LEVEL)


def _seeds(n: int) -> str:
    return "one seed" if n == 1 else f"{n} seeds"


def diff_text(e: Estimate, unit: str = "nats") -> str:
    """'+0.012 nats (95 % interval -0.030 to +0.054, 3 seeds)', or '+0.012 nats (one seed, no interval)'."""
    if e.n == 0:
        return "not measured (no pair of runs with a common seed)"
    if e.n < 2 or math.isnan(e.lo):
        return f"{e.mean:+.3f} {unit} ({_seeds(e.n)}, no interval)"
    return f"{e.mean:+.3f} {unit} ({LEVEL:.0%} interval {e.lo:+.3f} to {e.hi:+.3f}, {_seeds(e.n)})"


def half_width(e: Estimate) -> float:
    """Half the width of the interval: the smallest effect the comparison could detect."""
    return (e.hi - e.lo) / 2
