"""Saturation points: the first head size at which the mean rank curve reaches a fraction of a
reference (the bound or the plateau), or at which its increment per doubling of d_h falls below a
threshold; with bootstraps over draws and each point's standard error and interval.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...measure.stats import MIN_BOOTSTRAP
from ...theory.barrier import expected_distinct_columns

__all__ = ["criteria", "saturation_points", "saturation_bootstrap", "curve_bootstrap", "point_summary", "interval_text"]


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


def criteria(fractions, increment: float, reference: str) -> list[str]:
    """The criteria's names, e.g. '75% of bound' and 'increment < 0.01', in the order of the points."""
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
    names = criteria(fractions, increment, reference)
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
    names = criteria(fractions, increment, reference)
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
    names = criteria(fractions, increment, reference)
    rng = np.random.default_rng(seed)
    out = []
    for n, (d, R) in _cells(table, value).items():
        T = R.shape[1]
        idx = rng.integers(0, T, size=(n_boot, T))
        means = np.empty((n_boot, R.shape[0]))  # (boot, head dims)
        # Each replicate's sum as (times each draw was picked) x R, a few replicates at a time:
        # gathering the picked draws would take gigabytes for the thousands of draws of a
        # long-scale store. For integer ranks every partial sum is exact, so the means are the
        # same to the last bit as those of the gathered draws.
        step = max(1, 2 ** 22 // T)
        for s in range(0, n_boot, step):
            b = idx[s:s + step]
            picks = np.bincount((b + T * np.arange(len(b))[:, None]).ravel(), minlength=len(b) * T)
            means[s:s + step] = picks.reshape(len(b), T).astype(np.float64) @ R.T / T
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


def interval_text(v: float, lo: float, hi: float, fmt: str = ".1f") -> str:
    """A point with its interval, e.g. '41.9 [41.5, 42.3]'; an open upper end is 'beyond the grid'."""
    hi_s = "beyond the grid" if not np.isfinite(hi) else f"{hi:{fmt}}"
    return f"{v:{fmt}} [{lo:{fmt}}, {hi_s}]"
