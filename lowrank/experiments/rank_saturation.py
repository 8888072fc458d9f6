"""Chapter 06, where the rank saturates in d_h: saturation points of the hardmax rank (and of
the numerical rank of softmax attention) per sequence length, their bootstrap, the fitted laws,
and headline(tables) -> every number the chapter glues.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..progress import tqdm
from ..stats import MIN_BOOTSTRAP
from ..theory.barrier import expected_distinct_columns, saturation_head_dim
from .rank_barrier import attention_rank_table, mean_band
from .verdicts import (SIMULATION, CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, WEAKER, Claim, Judgement,
                       is_missing, need)
from ..params import Int, Float, Choice, IntList, FloatList, Constraint, distinct_at_least

__all__ = ["estimate", "memory", "head_dim_grid", "saturation_points", "saturation_bootstrap", "fit_saturation",
           "nested_hardmax_table", "curve_bootstrap", "point_summary", "law_comparison", "LAWS",
           "points_table", "laws_table", "trials_per_n", "main_criterion", "run_saturation", "headline", "HEADLINE_KEYS", "CLAIMS", "rule_saturation", "Z_PRED",
           "BIC_STRONG", "MIN_NS", "MIN_RANGE"]

# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    seed=Int(0, doc="random seed"),
    device=Choice("cpu", "cuda", doc="where the Monte Carlo runs"),
    ns=IntList(2, 16384, doc="sequence lengths n"),
    max_head_dim=Int(2, 65536, doc="largest head size on the grid"),
    points_per_octave=Int(1, 16, doc="grid density: head sizes round(2^(k / points_per_octave))"),
    rows_per_cell=Int(1, 10_000_000, doc="trials per (n, d_h) = max(min_trials, rows_per_cell // n)"),
    min_trials=Int(2, 100_000, doc="fewest trials per (n, d_h)"),
    fractions=FloatList(0.01, 0.999, doc="saturation criteria: fractions of the bound (or plateau)"),
    increment=Float(1e-6, 1.0, doc="saturation criterion: relative rank increment per doubling of d_h"),
    n_boot=Int(2000, 100_000, doc="bootstrap replicates over Monte-Carlo draws (>= 2000 for 95% percentile intervals)"),
    softmax_ns=IntList(2, 16384, doc="sequence lengths for the softmax (standard temperature) part"),
    softmax_max_head_dim=Int(2, 65536, doc="largest head size for the softmax part"),
    softmax_points_per_octave=Int(1, 64, doc="softmax grid density: head sizes round(2^(k / m)); 8 gives every integer to 6"),
    softmax_trials=Int(2, 100_000, doc="draws per (n, d_h) for the softmax part"),
    softmax_rtols=FloatList(0.0, 1.0, min_len=2, doc="two or more tolerances for the softmax numerical rank (0 means the default max(m,n)*eps)"),
)
CONSTRAINTS = (
    Constraint(("ns",), distinct_at_least("ns", 3, "the saturation law is fitted across three or more n")),
    Constraint(("max_head_dim",), lambda p: None if p["max_head_dim"] >= 4 else (
        f"max_head_dim = {p['max_head_dim']} must be at least 4: the saturation criteria need head sizes "
        "over two octaves or more, or no n has a saturation point to plot")),
)


def head_dim_grid(max_head_dim: int, points_per_octave: int = 4) -> list[int]:
    """Distinct head sizes round(2^(k / points_per_octave)) from 1 to max_head_dim (inclusive)."""
    if max_head_dim < 1 or points_per_octave < 1:
        raise ValueError(f"need max_head_dim >= 1 and points_per_octave >= 1, got {max_head_dim}, "
                         f"{points_per_octave}")
    top = int(math.floor(points_per_octave * math.log2(max_head_dim) + 1e-9))
    return sorted({int(round(2 ** (k / points_per_octave))) for k in range(top + 1)})


def _log_crossing(d: np.ndarray, y: np.ndarray, level: float, *, rising: bool = True) -> float:
    """First d where y crosses ``level`` (upward if rising), interpolated linearly in log d."""
    hit = y >= level if rising else y < level
    if not hit.any():
        return float("nan")
    i = int(np.argmax(hit))
    if i == 0:
        return float(d[0])
    y0, y1 = y[i - 1], y[i]
    t = (level - y0) / (y1 - y0) if y1 != y0 else 1.0
    return float(np.exp(np.log(d[i - 1]) + t * (np.log(d[i]) - np.log(d[i - 1]))))


def _curve_points(d: np.ndarray, r: np.ndarray, ref: float, fractions, increment: float) -> list:
    """Crossings of fractions of ``ref`` and the relative-increment-per-doubling criterion."""
    out = [_log_crossing(d, r, f * ref) for f in fractions]
    # Relative increment per doubling of d_h, (r(2d) - r(d)) / r(d), at grid points whose
    # double lies inside the grid (r interpolated linearly in log d_h).
    inside = d * 2 <= d[-1] * (1 + 1e-9)
    if inside.sum() >= 1:
        r2 = np.interp(np.log(d[inside] * 2), np.log(d), r)
        inc = (r2 - r[inside]) / np.maximum(r[inside], 1e-12)
        out.append(_log_crossing(d[inside], inc, increment, rising=False))
    else:
        out.append(float("nan"))
    return out


def _criteria(fractions, increment: float, reference: str) -> list[str]:
    what = "bound" if reference == "bound" else "plateau"
    return [f"{round(100 * f):d}% of {what}" for f in fractions] + [f"increment < {increment:g}"]


def _reference(n: int, r: np.ndarray, reference: str) -> float:
    if reference == "bound":
        return expected_distinct_columns(n)
    if reference == "plateau":
        return float(r[-1])
    raise ValueError(f"reference must be 'bound' or 'plateau', got {reference!r}")


def _cells(table: pd.DataFrame, value: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """n -> (sorted head dims, values array (head dims, trials))."""
    missing = {"n", "head_dim", "trial", value} - set(table.columns)
    if missing:
        raise ValueError(f"table lacks column(s) {sorted(missing)}")
    out = {}
    for n, sub in table.groupby("n"):
        wide = sub.pivot_table(index="head_dim", columns="trial", values=value).sort_index()
        if len(wide) < 2:
            raise ValueError(f"need at least two head dims per n, got {len(wide)} for n={n}")
        out[int(n)] = (wide.index.to_numpy(dtype=np.float64), wide.to_numpy(dtype=np.float64))
    return out


def saturation_points(table: pd.DataFrame, *, value: str = "rank",
                      fractions: Sequence[float] = (0.5, 0.75, 0.9), increment: float = 0.01,
                      reference: str = "bound") -> pd.DataFrame:
    """Saturation d_h per n from a per-trial table (columns n, head_dim, trial, ``value``).

    Criteria: the first d_h where the mean curve reaches each fraction of the reference
    (``"bound"`` = n (1 - (1-1/n)^n), or ``"plateau"`` = the mean at the largest d_h), and the
    first d_h where the relative increment per doubling of d_h drops below ``increment`` (the
    paper's Table 2 reads "less than or around 0.01"; its step in d_h is not stated). Crossings
    are interpolated linearly in log d_h; NaN when not reached inside the grid.
    Columns: n, criterion, head_dim.
    """
    names = _criteria(fractions, increment, reference)
    rows = []
    for n, (d, R) in _cells(table, value).items():
        r = np.nanmean(R, axis=1)
        pts = _curve_points(d, r, _reference(n, r, reference), fractions, increment)
        rows += [{"n": n, "criterion": c, "head_dim": p} for c, p in zip(names, pts)]
    return pd.DataFrame(rows)


def saturation_bootstrap(table: pd.DataFrame, *, value: str = "rank", n_boot: int = 200,
                         fractions: Sequence[float] = (0.5, 0.75, 0.9), increment: float = 0.01,
                         reference: str = "bound", seed: int = 0) -> pd.DataFrame:
    """Bootstrap replicates of saturation_points: trials resampled within each (n, d_h) cell.

    Columns: boot, n, criterion, head_dim (one row per replicate, n and criterion).
    """
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    names = _criteria(fractions, increment, reference)
    rng = np.random.default_rng(seed)
    rows = []
    for n, (d, R) in _cells(table, value).items():
        T = R.shape[1]
        idx = rng.integers(0, T, size=(n_boot, R.shape[0], T))
        means = np.take_along_axis(np.broadcast_to(R, (n_boot, *R.shape)), idx, axis=2).mean(2)
        for b in range(n_boot):
            r = means[b]
            pts = _curve_points(d, r, _reference(n, r, reference), fractions, increment)
            rows += [{"boot": b, "n": n, "criterion": c, "head_dim": p} for c, p in zip(names, pts)]
    return pd.DataFrame(rows)


_ALPHAS = np.linspace(-1.0, 3.0, 4_001)


def _fit_log(n: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares y = a + b ln n; returns (a, b, chi2)."""
    A = np.stack([np.ones_like(n), np.log(n)], 1)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
    return float(coef[0]), float(coef[1]), float((w * (y - A @ coef) ** 2).sum())


def _fit_power(n: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares y = c n^alpha (c profiled out, alpha on a 1e-3 grid); (c, alpha, chi2)."""
    P = n[None, :] ** _ALPHAS[:, None]  # (alphas, points)
    c = (P * (w * y)).sum(1) / (P * P * w).sum(1)
    chi2 = (w * (y - c[:, None] * P) ** 2).sum(1)
    k = int(np.argmin(chi2))
    return float(c[k]), float(_ALPHAS[k]), float(chi2[k])


def fit_saturation(points: pd.DataFrame, boot: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Fit each criterion's saturation d_h against a + b ln n and against c n^alpha.

    Weighted least squares with weights 1 / se^2, se = bootstrap standard deviation of each
    point; parameter intervals are bootstrap percentiles (each replicate refitted with the
    same weights). Criteria with fewer than 3 usable n are skipped.
    Long form: criterion, model ("a + b ln n" or "c n^alpha"), quantity, estimate, lo, hi,
    where quantity is a, b / c, alpha, and chi2 (weighted residual, dof = points - 2).
    """
    rows = []
    for crit, sub in points.groupby("criterion", sort=False):
        bsub = boot[boot["criterion"] == crit].pivot_table(index="boot", columns="n",
                                                           values="head_dim", dropna=False)
        sub = sub.set_index("n")["head_dim"]
        ok = [n for n in sub.index if np.isfinite(sub[n]) and n in bsub.columns
              and np.isfinite(bsub[n]).all()]
        if len(ok) < 3:
            continue
        n_arr = np.asarray(ok, dtype=np.float64)
        y = sub[ok].to_numpy(dtype=np.float64)
        B = bsub[ok].to_numpy(dtype=np.float64)
        se = np.maximum(B.std(0, ddof=1), 1e-3 * np.maximum(y, 1e-12))
        w = 1.0 / se ** 2
        tail = (1 - level) / 2
        for model, fit, names in (("a + b ln n", _fit_log, ("a", "b")),
                                  ("c n^alpha", _fit_power, ("c", "alpha"))):
            est = fit(n_arr, y, w)
            reps = np.array([fit(n_arr, yb, w) for yb in B])
            for j, q in enumerate(names):
                lo, hi = np.quantile(reps[:, j], [tail, 1 - tail])
                rows.append({"criterion": crit, "model": model, "quantity": q, "estimate": est[j],
                             "lo": float(lo), "hi": float(hi), "points": len(ok)})
            rows.append({"criterion": crit, "model": model, "quantity": "chi2", "estimate": est[2],
                         "lo": float("nan"), "hi": float("nan"), "points": len(ok)})
    return pd.DataFrame(rows)


# --- the saturation law over three decades of n -------------------------------------------

def nested_hardmax_table(ns: Sequence[int], head_dims: Sequence[int], *, n_trials: int | Sequence[int],
                         seed: int = 0, device="cpu", max_elements: int = 2 ** 25,
                         progress: bool = False) -> pd.DataFrame:
    """Exact hardmax rank in the theorem's setting for a whole grid of d_h from one draw each.

    Under orthonormal X and Gaussian W_q, W_k, Q and K are n x d_h with i.i.d. N(0, 1)
    entries, so a draw at the largest d_h holds every smaller one in its leading columns:
    S(d) = Q[:, :d] K[:, :d]^T is accumulated column block by column block, and the hardmax
    rank (distinct row-argmax columns, O(n^2), no SVD) is read at each grid point. One draw
    costs n^2 max(d_h) multiply-adds instead of n^2 sum(d_h); the curves of one draw share
    their randomness (common random numbers), so a bootstrap resamples whole draws.
    Columns: n, head_dim, trial, rank, bound, rank_over_bound.
    """
    dims = sorted({int(d) for d in head_dims})
    trials = [int(n_trials)] * len(ns) if np.ndim(n_trials) == 0 else [int(t) for t in n_trials]
    if len(trials) != len(ns) or min(trials) < 1 or dims[0] < 1:
        raise ValueError(f"need head dims >= 1 and n_trials >= 1 (one int or one per n), got "
                         f"n_trials={n_trials!r} for ns={list(ns)!r}")
    frames = []
    for n, t in tqdm(list(zip(ns, trials)), disable=not progress, leave=False, desc="n"):
        g = torch.Generator(device=device).manual_seed(_seed(seed, n, dims[-1]))
        batch = max(1, min(t, max_elements // (n * n + 2 * n * dims[-1])))
        ranks = np.empty((len(dims), t))
        done = 0
        while done < t:
            b = min(batch, t - done)
            Q = torch.randn(b, n, dims[-1], generator=g, device=device)
            K = torch.randn(b, n, dims[-1], generator=g, device=device)
            S = torch.zeros(b, n, n, device=device)
            prev = 0
            hit = torch.zeros(b, n, dtype=torch.bool, device=device)
            for i, d in enumerate(dims):
                S.baddbmm_(Q[:, :, prev:d], K[:, :, prev:d].transpose(1, 2))
                prev = d
                hit.zero_()
                hit.scatter_(1, S.argmax(-1), True)
                ranks[i, done:done + b] = hit.sum(-1).cpu().numpy()
            done += b
        bound = expected_distinct_columns(n)
        frames.append(pd.DataFrame({"n": n, "head_dim": np.repeat(dims, t), "trial": np.tile(np.arange(t), len(dims)),
                                    "rank": ranks.ravel(), "bound": bound, "rank_over_bound": ranks.ravel() / bound}))
    return pd.concat(frames, ignore_index=True)


def _seed(*keys: int) -> int:
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def curve_bootstrap(table: pd.DataFrame, *, value: str = "rank", n_boot: int = MIN_BOOTSTRAP,
                    fractions: Sequence[float] = (0.5, 0.75, 0.9), increment: float = 0.01,
                    reference: str = "bound", seed: int = 0) -> pd.DataFrame:
    """Bootstrap of saturation_points that resamples whole draws (the same trials at every d_h).

    Use it for nested_hardmax_table, whose curves share randomness within a draw. Replicates
    that do not reach a criterion inside the grid are NaN and kept (never dropped).
    Columns: boot, n, criterion, head_dim.
    """
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    names = _criteria(fractions, increment, reference)
    rng = np.random.default_rng(seed)
    out = []
    for n, (d, R) in _cells(table, value).items():
        T = R.shape[1]
        idx = rng.integers(0, T, size=(n_boot, T))
        means = R[:, idx].mean(2).T  # (boot, head dims)
        pts = np.array([_curve_points(d, r, _reference(n, r, reference), fractions, increment) for r in means])
        out.append(pd.DataFrame({"boot": np.repeat(np.arange(n_boot), len(names)), "n": n,
                                 "criterion": np.tile(names, n_boot), "head_dim": pts.ravel()}))
    return pd.concat(out, ignore_index=True)


def point_summary(points: pd.DataFrame, boot: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Each saturation point with its bootstrap standard error and percentile interval.

    A replicate that never reaches the criterion counts as +inf (beyond the grid), so the
    interval stays honest; ``estimable`` is False when the point itself or more than the
    interval's tail share of replicates is missing (such an n is reported, not dropped).
    Columns: criterion, n, head_dim, se, lo, hi, missing (share of replicates), estimable.
    """
    tail = (1 - level) / 2
    rows = []
    for (crit, n), sub in boot.groupby(["criterion", "n"], sort=False):
        v = sub["head_dim"].to_numpy(dtype=float)
        miss = float(np.mean(~np.isfinite(v)))
        vv = np.where(np.isfinite(v), v, np.inf)
        with np.errstate(invalid="ignore"):  # inf - inf inside the percentile interpolation
            lo, hi = np.quantile(vv, [tail, 1 - tail])
        lo, hi = (lo if not np.isnan(lo) else np.inf), (hi if not np.isnan(hi) else np.inf)
        fin = v[np.isfinite(v)]
        se = float(fin.std(ddof=1)) if fin.size > 1 else float("nan")
        rows.append({"criterion": crit, "n": int(n), "se": se, "lo": float(lo), "hi": float(hi), "missing": miss})
    s = pd.DataFrame(rows)
    out = points.merge(s, on=["criterion", "n"], how="left")
    out["estimable"] = np.isfinite(out["head_dim"]) & (out["missing"] <= tail) & np.isfinite(out["se"])
    return out


LAWS = ("a + b ln n", "c n^alpha", "c (ln n)^beta")
_BETAS = np.linspace(-2.0, 8.0, 5_001)


def _fit_law(law: str, n: np.ndarray, y: np.ndarray, w: np.ndarray):
    """(first parameter, second parameter, weighted chi^2) of one law; y may be (points,) or
    (replicates, points), and then each is an array over the replicates."""
    Y = np.atleast_2d(np.asarray(y, dtype=float))
    if law == LAWS[0]:
        A = np.stack([np.ones_like(n), np.log(n)], 1)
        G = np.linalg.inv(A.T @ (w[:, None] * A))
        coef = G @ (A.T @ (w[:, None] * Y.T))  # (2, replicates)
        chi2 = (w * (Y - (A @ coef).T) ** 2).sum(1)
        p1, p2 = coef[0], coef[1]
    elif law in LAWS[1:]:
        x, (lo, hi) = (n, (-1.0, 3.0)) if law == LAWS[1] else (np.log(n), (-2.0, 8.0))
        p1, p2, chi2 = _profile_power(x, Y, w, lo, hi)
    else:
        raise ValueError(f"unknown law {law!r}; expected one of {LAWS}")
    if np.ndim(y) == 1:
        return float(p1[0]), float(p2[0]), float(chi2[0])
    return p1, p2, chi2


def _profile_power(x: np.ndarray, Y: np.ndarray, w: np.ndarray, lo: float, hi: float):
    """Weighted least squares y = c x^p for each row of Y: c profiled out, p on a coarse grid
    (401 points over [lo, hi]) refined to 1/20 of its step around the best coarse point."""
    def chi(P):  # P (..., points) -> c, chi2 over the leading axes
        spp = (P * P * w).sum(-1)
        spy = (P * w * Yb).sum(-1)
        return spy / spp, (w * Yb * Yb).sum(-1) - spy ** 2 / spp
    coarse = np.linspace(lo, hi, 401)
    Yb = Y[None, :, :]
    _, c2 = chi(x[None, None, :] ** coarse[:, None, None])  # (grid, replicates)
    step = coarse[1] - coarse[0]
    fine = coarse[np.argmin(c2, 0)][:, None] + np.linspace(-step, step, 41)[None, :]  # (replicates, 41)
    Yb = Y[:, None, :]
    c, c2 = chi(x[None, None, :] ** fine[:, :, None])
    j = np.argmin(c2, 1)
    r = np.arange(Y.shape[0])
    return c[r, j], fine[r, j], np.maximum(c2[r, j], 0.0)


def _law_value(law: str, p: tuple[float, float], n) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    if law == LAWS[0]:
        return p[0] + p[1] * np.log(n)
    if law == LAWS[1]:
        return p[0] * n ** p[1]
    return p[0] * np.log(n) ** p[1]


def law_comparison(summary: pd.DataFrame, boot: pd.DataFrame, criterion: str, *,
                   level: float = 0.95) -> dict[str, Any]:
    """The three laws fitted to one criterion's estimable points, compared for misfit.

    Weighted least squares, weights 1 / se^2 (bootstrap se). Every law's chi^2/dof is
    reported; the information criteria use errors inflated by s = sqrt(max(1, smallest
    chi^2/dof)), one factor for all laws, so that a misfit common to all of them does not
    decide: AIC = chi^2/s^2 + 2k, BIC = chi^2/s^2 + k ln N. Out-of-range check: each law is
    fitted on the lower half of the range (ln n <= mean of ln n_min and ln n_max) and
    predicts the largest n; the prediction's error is the bootstrap spread of refitted
    predictions inflated by sqrt(max(1, chi^2/dof)) of that fit, combined with the point's se.
    Parameter intervals are bootstrap percentiles (replicates refitted with the same weights).
    Returns {"laws": DataFrame one row per law, "slopes": DataFrame of local log-log slopes,
    "n": the estimable n, "fit_nmax": largest n of the lower half}.
    """
    tail = (1 - level) / 2
    pts = summary[(summary.criterion == criterion) & summary.estimable].sort_values("n")
    ns = pts["n"].to_numpy(dtype=float)
    out: dict[str, Any] = {"n": [int(v) for v in ns], "laws": pd.DataFrame(), "slopes": pd.DataFrame(),
                           "fit_nmax": float("nan")}
    if len(ns) < 3:
        return out
    y = pts["head_dim"].to_numpy(dtype=float)
    se = np.maximum(pts["se"].to_numpy(dtype=float), 1e-3 * y)
    w = 1.0 / se ** 2
    B = (boot[boot.criterion == criterion].pivot_table(index="boot", columns="n", values="head_dim", dropna=False)
         [[int(v) for v in ns]].to_numpy(dtype=float))
    B = np.where(np.isfinite(B), B, y[None, :])  # rare missing replicates of an estimable n: its own estimate
    small = np.log(ns) <= 0.5 * (np.log(ns[0]) + np.log(ns[-1])) + 1e-9
    out["fit_nmax"] = int(ns[small][-1])
    out["y_last"] = float(y[-1])
    big = len(ns) - 1
    rows, fits = [], {}
    for law in LAWS:
        est = _fit_law(law, ns, y, w)
        reps = np.stack(_fit_law(law, ns, B, w), 1)
        dof = len(ns) - 2
        row = {"law": law, "p1": est[0], "p2": est[1],
               "p2_lo": float(np.quantile(reps[:, 1], tail)), "p2_hi": float(np.quantile(reps[:, 1], 1 - tail)),
               "chi2": est[2], "dof": dof, "chi2_dof": est[2] / dof if dof > 0 else float("nan")}
        if small.sum() >= 3 and (~small).sum() >= 1:
            fs = _fit_law(law, ns[small], y[small], w[small])
            pred = float(_law_value(law, fs[:2], ns[big]))
            rp1, rp2, _ = _fit_law(law, ns[small], B[:, small], w[small])
            preds = _law_value(law, (rp1, rp2), ns[big])
            infl = math.sqrt(max(1.0, fs[2] / max(small.sum() - 2, 1)))
            pse = float(preds.std(ddof=1)) * infl
            tot = math.hypot(pse, se[big])
            row.update(pred=pred, pred_se=pse, pred_z=(y[big] - pred) / tot)
        else:
            row.update(pred=float("nan"), pred_se=float("nan"), pred_z=float("nan"))
        rows.append(row)
    laws = pd.DataFrame(rows)
    dof = max(len(ns) - 2, 1)
    s2 = max(1.0, float((laws["chi2"] / dof).min()))
    laws["aic"] = laws["chi2"] / s2 + 2 * 2
    laws["bic"] = laws["chi2"] / s2 + 2 * math.log(len(ns))
    laws["dbic"] = laws["bic"] - laws["bic"].min()
    laws["inflation"] = math.sqrt(s2)
    out["laws"] = laws
    # local log-log slopes between successive estimable n, with bootstrap percentile intervals
    ly, lB = np.log(y), np.log(np.maximum(B, 1e-12))
    dl = np.diff(np.log(ns))
    sl = np.diff(ly) / dl
    slb = np.diff(lB, axis=1) / dl
    out["slopes"] = pd.DataFrame({"n_from": ns[:-1].astype(int), "n_to": ns[1:].astype(int), "slope": sl,
                                  "lo": np.quantile(slb, tail, axis=0), "hi": np.quantile(slb, 1 - tail, axis=0),
                                  "log_law": 1.0 / np.log(np.sqrt(ns[:-1] * ns[1:])) * 1.0})
    return out


# --- chapter 06 ----------------------------------------------------------------------------

LOG, POWER, POLYLOG = LAWS


def trials_per_n(P: Mapping[str, Any]) -> list[int]:
    """Draws per n: max(min_trials, rows_per_cell // n), so every n holds about the same rows
    (the rank fraction's spread falls like 1 / sqrt(n), so each point's error stays level)."""
    return [max(P["min_trials"], P["rows_per_cell"] // n) for n in P["ns"]]


def main_criterion(P: Mapping[str, Any], what: str = "bound") -> str:
    """The middle fraction's criterion name, e.g. '75% of bound'."""
    return f"{round(100 * P['fractions'][len(P['fractions']) // 2])}% of {what}"


def run_saturation(P: Mapping[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """Every computation of chapter 06 at parameters P; returns its tables by name.

    table/band (hardmax ranks, nested draws), points (saturation points with bootstrap se and
    intervals, estimable or not), boot, laws (per fraction criterion: the three laws compared,
    local slopes); soft (softmax numerical ranks), soft_bands, soft_points; timing; and P.
    """
    import time
    dev, seed = P["device"], P["seed"]
    out: dict[str, Any] = {"P": dict(P)}
    t0, c0 = time.perf_counter(), time.process_time()
    grid = head_dim_grid(P["max_head_dim"], P["points_per_octave"])
    table = nested_hardmax_table(P["ns"], grid, n_trials=trials_per_n(P), seed=seed, device=dev,
                                 progress=progress)
    out["grid"], out["table"] = grid, table
    out["band"] = mean_band(table, by=["n", "head_dim"], value="rank_over_bound")
    points = saturation_points(table, fractions=P["fractions"], increment=P["increment"])
    boot = curve_bootstrap(table, n_boot=P["n_boot"], fractions=P["fractions"], increment=P["increment"],
                           seed=seed)
    points = point_summary(points, boot)
    frac = {f"{round(100 * f):d}% of bound": f for f in P["fractions"]}
    points["heuristic"] = [saturation_head_dim(int(n), frac[c]) if c in frac else float("nan")
                           for n, c in zip(points["n"], points["criterion"])]
    out["points"], out["boot"] = points, boot
    out["laws"] = {c: law_comparison(out["points"], boot, c) for c in _criteria(P["fractions"], P["increment"], "bound")}
    out["seconds_hardmax"] = time.perf_counter() - t0
    out["cpu_seconds_hardmax"] = time.process_time() - c0
    # the standard temperature: numerical rank of softmax attention on a fine integer grid
    t0 = time.perf_counter()
    soft_grid = head_dim_grid(P["softmax_max_head_dim"], P["softmax_points_per_octave"])
    soft = pd.concat([attention_rank_table(n, soft_grid, n_trials=P["softmax_trials"],
                                           rtols=[None if r == 0 else r for r in P["softmax_rtols"]],
                                           energies=(), seed=seed, device=dev) for n in P["softmax_ns"]],
                     ignore_index=True)
    soft = soft[soft.measure == "numerical_rank"]
    tols = list(dict.fromkeys(soft["tolerance"]))
    bands, spoints = [], []
    for tol in tols:
        sub = soft[soft.tolerance == tol]
        bands.append(mean_band(sub.assign(frac=sub["value"] / sub["n"]), by=["n", "head_dim"],
                               value="frac").assign(tolerance=tol))
        pts = saturation_points(sub, value="value", fractions=P["fractions"], increment=P["increment"],
                                reference="plateau")
        bt = saturation_bootstrap(sub, value="value", n_boot=P["n_boot"], fractions=P["fractions"],
                                  increment=P["increment"], reference="plateau", seed=seed)
        spoints.append(point_summary(pts, bt).assign(tolerance=tol))
    out["soft_grid"], out["soft"], out["tols"] = soft_grid, soft, tols
    out["soft_bands"] = pd.concat(bands, ignore_index=True)
    out["soft_points"] = pd.concat(spoints, ignore_index=True)
    out["seconds_softmax"] = time.perf_counter() - t0
    return out


def _interval(v: float, lo: float, hi: float, fmt: str = ".1f") -> str:
    hi_s = "beyond the grid" if not np.isfinite(hi) else f"{hi:{fmt}}"
    return f"{v:{fmt}} [{lo:{fmt}}, {hi_s}]"


def points_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Readable table of the hardmax saturation points: one row per n, one column per criterion."""
    pts = t["points"]
    rows = {}
    for (n, crit), r in pts.set_index(["n", "criterion"]).iterrows():
        txt = (_interval(r["head_dim"], r["lo"], r["hi"]) if r["estimable"] else
               ("not reached within the grid" if not np.isfinite(r["head_dim"]) else
                f"{r['head_dim']:.1f} (not estimable: {100 * r['missing']:.0f}% of replicates beyond the grid)"))
        row = rows.setdefault(n, {"n": n})
        row[f"{crit}: d_h [95% interval]"] = txt
        if np.isfinite(r.get("heuristic", float("nan"))):
            row[f"{crit}: heuristic"] = f"{r['heuristic']:.1f}"
    return pd.DataFrame(list(rows.values()))


def laws_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Readable fit table: one row per (criterion, law) with misfit and out-of-range statistics."""
    rows = []
    for crit, res in t["laws"].items():
        if res["laws"].empty:
            rows.append({"criterion": crit, "law": f"not fitted: {len(res['n'])} estimable n"})
            continue
        for _, r in res["laws"].iterrows():
            exp = {"a + b ln n": "b", "c n^alpha": "alpha", "c (ln n)^beta": "beta"}[r["law"]]
            rows.append({"criterion": crit, "law": r["law"],
                         "parameter [95% interval]": f"{exp} = {r['p2']:.2f} [{r['p2_lo']:.2f}, {r['p2_hi']:.2f}]",
                         "chi^2 / dof": f"{r['chi2']:.1f} / {int(r['dof'])}",
                         "ΔBIC (inflated errors)": f"{r['dbic']:.1f}",
                         "out-of-range prediction (fit on the lower half of n)":
                             (f"{r['pred']:.1f} ± {r['pred_se']:.1f} at n = {res['n'][-1]} from n ≤ {res['fit_nmax']}, "
                              f"observed {res['y_last']:.1f} (z = {r['pred_z']:+.1f})") if np.isfinite(r["pred_z"])
                             else "too few n on the lower half"})
    return pd.DataFrame(rows).fillna("")


HEADLINE_KEYS = (
    "ch06_fractions", "ch06_increment", "ch06_ppo", "ch06_n_boot", "ch06_trials", "ch06_min_draws",
    "ch06_nmin", "ch06_nmax", "ch06_n_total", "ch06_dhmax", "ch06_top_list", "ch06_seconds_hardmax",
    "ch06_cpu_seconds_hardmax",
    "ch06_point_se_max_pct", "ch06_not_estimable", "ch06_heur_main_nmax", "ch06_heur_maxdev_pct",
    "ch06_heur_maxdev_upper_pct", "ch06_heur_upper_nmin",
    "ch06_main_criterion", "ch06_n_estimable", "ch06_fit_nmax",
    "ch06_pred_obs", "ch06_pred_obs_se", "ch06_pred_log", "ch06_pred_log_se", "ch06_pred_log_z",
    "ch06_pred_pow", "ch06_pred_pow_z", "ch06_pred_polylog", "ch06_pred_polylog_z",
    "ch06_dbic_log", "ch06_dbic_pow", "ch06_dbic_polylog", "ch06_best_law", "ch06_inflation",
    "ch06_chi2dof_log", "ch06_chi2dof_pow", "ch06_chi2dof_polylog", "ch06_dof",
    "ch06_b_main", "ch06_b_main_lo", "ch06_b_main_hi", "ch06_alpha_main", "ch06_alpha_main_lo",
    "ch06_alpha_main_hi", "ch06_beta_main", "ch06_beta_main_lo", "ch06_beta_main_hi",
    "ch06_best_by_criterion", "ch06_betas", "ch06_local_slopes", "ch06_slope_first", "ch06_slope_last",
    "ch06_main_ratio", "ch06_ln_ratio", "ch06_ln2_ratio", "ch06_verdict", "ch06_verdict_evidence",
    "ch06_soft_nmin", "ch06_soft_nmax", "ch06_soft_trials", "ch06_soft_grid_text", "ch06_main_soft",
    "ch06_soft0_tol", "ch06_soft0_plateau", "ch06_soft0_points", "ch06_soft1_tol", "ch06_soft1_plateau",
    "ch06_soft1_points",
    *(f"ch06_inc_{k}" for k in ("criterion", "n_estimable", "fit_nmax", "nmin", "nmax", "pred_obs", "pred_obs_se",
                                "pred_log", "pred_log_se", "pred_log_z", "dbic_log", "best_law")),
)


def _law_row(res: Mapping[str, Any], law: str) -> Mapping[str, float]:
    laws = res["laws"]
    if laws.empty:
        return {k: float("nan") for k in ("p1", "p2", "p2_lo", "p2_hi", "chi2", "dof", "chi2_dof", "pred",
                                          "pred_se", "pred_z", "dbic", "inflation")}
    return laws.set_index("law").loc[law].to_dict()


def _criterion_keys(prefix: str, crit: str, laws_by_criterion: Mapping[str, Any], pts: pd.DataFrame) -> dict:
    """The values the saturation rule reads, for one criterion, under ``prefix``."""
    res = laws_by_criterion.get(crit, {"n": [], "laws": pd.DataFrame(), "fit_nmax": float("nan")})
    lg = _law_row(res, LAWS[0])
    mp = pts[(pts.criterion == crit) & (pts.n == max(res["n"]))] if res["n"] else pts.iloc[:0]
    laws = res["laws"]
    return {f"{prefix}criterion": crit, f"{prefix}n_estimable": len(res["n"]), f"{prefix}fit_nmax": res["fit_nmax"],
            f"{prefix}nmin": min(res["n"]) if res["n"] else float("nan"),
            f"{prefix}nmax": max(res["n"]) if res["n"] else float("nan"),
            f"{prefix}pred_obs": float(mp["head_dim"].iloc[0]) if len(mp) else float("nan"),
            f"{prefix}pred_obs_se": float(mp["se"].iloc[0]) if len(mp) else float("nan"),
            f"{prefix}pred_log": lg["pred"], f"{prefix}pred_log_se": lg["pred_se"], f"{prefix}pred_log_z": lg["pred_z"],
            f"{prefix}dbic_log": lg["dbic"],
            f"{prefix}best_law": str(laws.loc[laws["bic"].idxmin(), "law"]) if not laws.empty else "none (too few n)"}


def headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 06 glues, from the tables of run_saturation; keys are HEADLINE_KEYS."""
    P, pts, table = t["P"], t["points"], t["table"]
    ns = [int(n) for n in P["ns"]]
    trials = trials_per_n(P)
    H: dict[str, Any] = {}
    H["ch06_fractions"] = ", ".join(f"{f:g}" for f in P["fractions"])
    H["ch06_increment"] = float(P["increment"])
    H["ch06_ppo"] = int(P["points_per_octave"])
    H["ch06_n_boot"] = int(P["n_boot"])
    H["ch06_trials"] = ", ".join(f"{k} (n = {n})" for n, k in zip(ns, trials))
    H["ch06_min_draws"] = int(min(trials))
    H["ch06_nmin"], H["ch06_nmax"], H["ch06_n_total"] = min(ns), max(ns), len(ns)
    grid = t["grid"]
    H["ch06_dhmax"] = int(max(grid))
    top = table[table.head_dim == max(grid)].groupby("n")["rank"].mean()
    H["ch06_top_list"] = ", ".join(f"{top[n] / n:.3f} n (n = {n})" for n in ns)
    H["ch06_seconds_hardmax"] = float(t.get("seconds_hardmax", float("nan")))
    H["ch06_cpu_seconds_hardmax"] = float(t.get("cpu_seconds_hardmax", float("nan")))
    frac_crit = [c for c in dict.fromkeys(pts["criterion"]) if not c.startswith("increment")]
    ok = pts[pts.estimable & pts.criterion.isin(frac_crit)]
    H["ch06_point_se_max_pct"] = float((100 * ok["se"] / ok["head_dim"]).max()) if len(ok) else float("nan")
    dev = (100 * (ok["head_dim"] / ok["heuristic"] - 1)).abs()
    H["ch06_heur_maxdev_pct"] = float(dev.max()) if len(ok) else float("nan")
    upper = ok["n"] >= np.sqrt(min(ns) * max(ns))  # the upper half of the range, in ln n
    H["ch06_heur_maxdev_upper_pct"] = float(dev[upper].max()) if upper.any() else float("nan")
    H["ch06_heur_upper_nmin"] = int(ok.loc[upper, "n"].min()) if upper.any() else max(ns)
    bad = pts[~pts.estimable]
    H["ch06_not_estimable"] = ("every n is estimable on every criterion" if bad.empty else
                               "; ".join(f"{c}: n = {', '.join(str(int(n)) for n in sub['n'])}"
                                         for c, sub in bad.groupby("criterion", sort=False)) + " (not estimable)")
    main = main_criterion(P)
    res = t["laws"].get(main, {"n": [], "laws": pd.DataFrame(), "slopes": pd.DataFrame(), "fit_nmax": float("nan")})
    H["ch06_main_criterion"] = main
    H["ch06_n_estimable"] = len(res["n"])
    H["ch06_fit_nmax"] = res["fit_nmax"]
    lg, pw, pl = (_law_row(res, law) for law in LAWS)
    mp = pts[(pts.criterion == main) & (pts.n == max(res["n"]))] if res["n"] else pts.iloc[:0]
    H["ch06_pred_obs"] = float(mp["head_dim"].iloc[0]) if len(mp) else float("nan")
    H["ch06_pred_obs_se"] = float(mp["se"].iloc[0]) if len(mp) else float("nan")
    H["ch06_heur_main_nmax"] = float(mp["heuristic"].iloc[0]) if len(mp) else float("nan")
    H["ch06_pred_log"], H["ch06_pred_log_se"], H["ch06_pred_log_z"] = lg["pred"], lg["pred_se"], lg["pred_z"]
    H["ch06_pred_pow"], H["ch06_pred_pow_z"] = pw["pred"], pw["pred_z"]
    H["ch06_pred_polylog"], H["ch06_pred_polylog_z"] = pl["pred"], pl["pred_z"]
    H["ch06_dbic_log"], H["ch06_dbic_pow"], H["ch06_dbic_polylog"] = lg["dbic"], pw["dbic"], pl["dbic"]
    laws = res["laws"]
    H["ch06_best_law"] = str(laws.loc[laws["bic"].idxmin(), "law"]) if not laws.empty else "none (too few n)"
    H["ch06_inflation"] = lg["inflation"]
    H["ch06_chi2dof_log"], H["ch06_chi2dof_pow"], H["ch06_chi2dof_polylog"] = lg["chi2_dof"], pw["chi2_dof"], pl["chi2_dof"]
    H["ch06_dof"] = int(lg["dof"]) if np.isfinite(lg["dof"]) else 0
    for key, row in (("b", lg), ("alpha", pw), ("beta", pl)):
        H[f"ch06_{key}_main"], H[f"ch06_{key}_main_lo"], H[f"ch06_{key}_main_hi"] = row["p2"], row["p2_lo"], row["p2_hi"]
    best, betas = [], []
    for c in frac_crit:
        L = t["laws"][c]["laws"]
        best.append(f"{L.loc[L['bic'].idxmin(), 'law']} ({c})" if not L.empty else f"not fitted ({c})")
        if not L.empty:
            r = L.set_index("law").loc[POLYLOG]
            betas.append(f"{r['p2']:.2f} [{r['p2_lo']:.2f}, {r['p2_hi']:.2f}] ({c})")
    H["ch06_best_by_criterion"] = "; ".join(best)
    H["ch06_betas"] = "; ".join(betas) if betas else "none fitted"
    sl = res["slopes"]
    H["ch06_local_slopes"] = (", ".join(f"{r.slope:.2f} [{r.lo:.2f}, {r.hi:.2f}] ({r.n_from}-{r.n_to})"
                                        for r in sl.itertuples()) if len(sl) else "none (too few n)")
    H["ch06_slope_first"] = float(sl["slope"].iloc[0]) if len(sl) else float("nan")
    H["ch06_slope_last"] = float(sl["slope"].iloc[-1]) if len(sl) else float("nan")
    mpts = pts[(pts.criterion == main) & pts.estimable].sort_values("n")
    H["ch06_main_ratio"] = (float(mpts["head_dim"].iloc[-1] / mpts["head_dim"].iloc[0]) if len(mpts) > 1
                            else float("nan"))
    lo_n, hi_n = (mpts["n"].iloc[0], mpts["n"].iloc[-1]) if len(mpts) > 1 else (min(ns), max(ns))
    H["ch06_ln_ratio"] = float(np.log(hi_n) / np.log(lo_n))
    H["ch06_ln2_ratio"] = float((np.log(hi_n) / np.log(lo_n)) ** 2)
    inc = next(c for c in _criteria(P["fractions"], P["increment"], "bound") if c.startswith("increment"))
    H.update(_criterion_keys("ch06_inc_", inc, t["laws"], pts))
    j = CLAIMS[0].judge(H)
    H["ch06_verdict"], H["ch06_verdict_evidence"] = j.label, j.evidence
    # softmax part
    sp, soft_ns = t["soft_points"], [int(n) for n in P["softmax_ns"]]
    H["ch06_soft_nmin"], H["ch06_soft_nmax"] = min(soft_ns), max(soft_ns)
    H["ch06_soft_trials"] = int(P["softmax_trials"])
    sg = t["soft_grid"]
    H["ch06_soft_grid_text"] = ", ".join(str(d) for d in sg[:12]) + (", ..., " + str(sg[-1]) if len(sg) > 12 else "")
    main_soft = main_criterion(P, "plateau")
    H["ch06_main_soft"] = main_soft
    soft = t["soft"]
    plateau = soft[soft.head_dim == max(sg)].groupby(["tolerance", "n"])["value"].mean()
    for i in range(2):
        tol = t["tols"][i] if i < len(t["tols"]) else None
        if tol is None:
            H[f"ch06_soft{i}_tol"] = H[f"ch06_soft{i}_plateau"] = H[f"ch06_soft{i}_points"] = "not computed"
            continue
        H[f"ch06_soft{i}_tol"] = tol
        H[f"ch06_soft{i}_plateau"] = ", ".join(f"{plateau[(tol, n)] / n:.3f} n (n = {n})" for n in soft_ns)
        q = sp[(sp.tolerance == tol) & (sp.criterion == main_soft)].set_index("n")
        H[f"ch06_soft{i}_points"] = ", ".join(
            (f"{_interval(r['head_dim'], r['lo'], r['hi'])} (n = {n})" if np.isfinite(r["head_dim"])
             else f"not reached (n = {n})") for n, r in q.iterrows())
    return H

# --- claims and their rules (registered in the rules ledger) ---------------------------------

# Two-sided 95 % prediction interval for the out-of-range check (fit on small n, predict the largest).
Z_PRED = 1.96
# Kass & Raftery (1995): a BIC difference above 10 is "very strong" evidence against a model.
BIC_STRONG = 10.0
# At least three n to fit a two-parameter law on the lower half of the range and three to test
# it against: fewer cannot tell a law from its misfit.
MIN_NS = 6
# Two decades of n: over one decade a pure a + b ln n law is fitted by c n^alpha with
# alpha ~ 0.2 > 0, so a shorter range cannot separate log from power growth.
MIN_RANGE = 100.0


def _number(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def _law_verdict(h: Mapping[str, Any], crit: str, n_est: int, nmin, nmax, fit_nmax, obs, obs_se, pred, pred_se,
                 z, dbic, best) -> Judgement:
    """The saturation decision on one criterion's saturation points (see rule_saturation)."""
    draws, n_boot = need(h, "ch06_min_draws"), need(h, "ch06_n_boot")
    # glued values come back as text when they were not numbers (nan): read them as missing
    nmin, nmax, fit_nmax, obs, obs_se, pred, pred_se, z, dbic = (
        _number(x) for x in (nmin, nmax, fit_nmax, obs, obs_se, pred, pred_se, z, dbic))
    if n_est < MIN_NS or is_missing(z):
        evidence = (f"{crit} point, {n_est} of {need(h, 'ch06_n_total')} n estimable (n = {nmin:g} to {nmax:g}, at "
                    f"least {draws} draws per cell): too few points for a growth law")
    else:
        evidence = (f"{crit} point, {n_est} of {need(h, 'ch06_n_total')} n estimable (n = {nmin:g} to {nmax:g}, at "
                    f"least {draws} draws per cell, {n_boot} bootstrap replicates): at n = {nmax:g} observed {obs:.1f} "
                    f"(s.e. {obs_se:.1f}), a + b ln n fitted up to n = {fit_nmax:g} predicts {pred:.1f} (s.e. "
                    f"{pred_se:.1f}, z = {z:+.1f}); BIC of a + b ln n exceeds the best law ({best}) by {dbic:.1f}")
    if n_est < MIN_NS or is_missing(nmax) or is_missing(nmin) or nmax / nmin < MIN_RANGE or is_missing(z):
        return Judgement(INCONCLUSIVE, evidence, f"needs at least {MIN_NS} estimable n over a range of "
                         f"{MIN_RANGE:g}x; below that a log and a slow power law are not separable")
    if z > Z_PRED:
        return Judgement(CONTRADICTED, evidence + f"; the saturation point grows faster than a + b ln n predicts "
                         f"(best of the three laws: {best}); the literal Omega(log n) holds for any such growth "
                         "and is not testable at finite n")
    if z < -Z_PRED:
        return Judgement(CONTRADICTED, evidence + "; the saturation point grows slower than a + b ln n predicts")
    if dbic > BIC_STRONG:
        return Judgement(INCONCLUSIVE, evidence, f"a departure from a + b ln n smaller than "
                         f"{Z_PRED * pred_se:.1f} in d_h at n = {nmax} is not detectable, and the BIC "
                         f"strongly favours {best}")
    return Judgement(REPRODUCED, evidence)


def rule_saturation(h: Mapping[str, Any]) -> Judgement:
    """On the main criterion of the hardmax saturation point, fit a + b ln n on the lower half
    of the n range (in ln n), inflate its errors by sqrt(chi^2/dof) and predict the largest n:
    reproduced (order log n) if the observed point lies within 1.96 prediction errors and the
    BIC of a + b ln n is within 10 of the best of a + b ln n, c n^alpha and c (ln n)^beta;
    contradicted if it lies outside them, above (faster than log n) or below (slower);
    inconclusive if within the prediction while the BIC strongly favours another law, or with
    fewer than 6 estimable n or a range under 100x.

    The claim is read as "d_h* grows like log n". A literal lower bound Omega(log n) holds for
    every law that grows at least that fast and cannot be refuted at finite n; the evidence says
    so beside a verdict of faster growth.
    """
    return _law_verdict(h, *(need(h, f"ch06_{k}") for k in (
        "main_criterion", "n_estimable", "nmin", "nmax", "fit_nmax", "pred_obs", "pred_obs_se", "pred_log",
        "pred_log_se", "pred_log_z", "dbic_log", "best_law")))


def rule_saturation_increment(h: Mapping[str, Any]) -> Judgement:
    """The saturation rule of chapter 06 applied to the paper's own criterion: the first d_h at
    which the relative rank increment per doubling of d_h drops below 0.01 (Table 2's caption);
    reproduced if it grows like a + b ln n predicts (within 1.96 prediction errors, BIC within 10
    of the best law), contradicted if outside, inconclusive with too few n or a strongly
    preferred other law."""
    return _law_verdict(h, *(need(h, f"ch06_inc_{k}") for k in (
        "criterion", "n_estimable", "nmin", "nmax", "fit_nmax", "pred_obs", "pred_obs_se", "pred_log",
        "pred_log_se", "pred_log_z", "dbic_log", "best_law")))


CLAIMS: tuple[Claim, ...] = (
    Claim("saturation", MIN_LI, "06", "sec-ch06-law",
          "Saturation: the rank stops growing at a critical head size d_h of order log n", rule_saturation,
          kind=SIMULATION, where="abstract; Table 2"),
    Claim("saturation-increment", MIN_LI, "06", "sec-ch06-law",
          "Saturation by the paper's own criterion: the rank increment falls below about 0.01 at a head size "
          "of order log n", rule_saturation_increment, kind=SIMULATION, where="Table 2 (as R25 Reviewer 2 quotes it)"),
)


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    grid = head_dim_grid(p["max_head_dim"], p["points_per_octave"])
    trials = trials_per_n(p)
    nested = sum(t * n * n * (max(grid) + 4 * len(grid)) for n, t in zip(p["ns"], trials))
    sgrid = head_dim_grid(p["softmax_max_head_dim"], p["softmax_points_per_octave"])
    svd = sum(p["softmax_trials"] * len(sgrid) * n ** 3 for n in p["softmax_ns"])
    cells = len(p["ns"]) * len(grid) + len(p["softmax_ns"]) * len(sgrid) * len(p["softmax_rtols"])
    boot = p["n_boot"] * cells * 2
    draws = sum(trials)
    return ({"nested": nested, "svd": svd, "bootstrap": boot},
            f"{draws:,} nested hardmax draws (no SVD) over {len(grid)} head sizes, softmax SVDs on {len(sgrid)}")


def memory(p) -> float:
    """Bytes of the largest arrays: the Monte Carlo runs in blocks of 2^25 float64 entries."""
    return 8.0 * 2 ** 25
