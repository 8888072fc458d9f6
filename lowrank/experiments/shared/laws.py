"""Growth laws fitted to points with bootstrap errors: a + b ln n, c n^alpha and c (ln n)^beta.

``law_comparison`` fits the three laws to one criterion's points and compares them (misfit, BIC
with a shared error inflation, out-of-range prediction, local log-log slopes); ``law_value`` is the
fitted law's formula, the one place it is written.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LAWS", "LOG", "POWER", "POLYLOG", "law_value", "law_comparison", "fit_saturation"]

LAWS = ("a + b ln n", "c n^alpha", "c (ln n)^beta")
LOG, POWER, POLYLOG = LAWS


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


def law_value(law: str, p: tuple[float, float], n) -> np.ndarray:
    """The law at n with parameters p = (first, second): a + b ln n, c n^alpha or c (ln n)^beta."""
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
            pred = float(law_value(law, fs[:2], ns[big]))
            rp1, rp2, _ = _fit_law(law, ns[small], B[:, small], w[small])
            preds = law_value(law, (rp1, rp2), ns[big])
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
