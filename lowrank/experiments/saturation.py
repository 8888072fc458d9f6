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

from ..theory.barrier import expected_distinct_columns
from .barrier import attention_rank_table, hardmax_rank_table, mean_band
from .verdicts import (CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, WEAKER, Claim, Judgement,
                       is_missing, need)

__all__ = ["head_dim_grid", "saturation_points", "saturation_bootstrap", "fit_saturation",
           "run_saturation", "headline", "HEADLINE_KEYS", "CLAIMS", "rule_saturation", "Z_PRED",
           "BIC_STRONG", "MIN_NS", "MIN_RANGE"]

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


# --- chapter 06 ----------------------------------------------------------------------------

LOG, POWER = "a + b ln n", "c n^alpha"


def trials_per_n(P: Mapping[str, Any]) -> list[int]:
    """Draws per (n, d_h): max(min_trials, rows_per_cell // n), so every n holds about the same rows."""
    return [max(P["min_trials"], P["rows_per_cell"] // n) for n in P["ns"]]


def run_saturation(P: Mapping[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """Every computation of chapter 06 at parameters P; returns its tables by name.

    table/band (hardmax ranks), points (saturation points with bootstrap intervals), boot,
    fits; soft (softmax numerical ranks), soft_bands, soft_points, soft_fits; and P.
    """
    dev, seed = P["device"], P["seed"]
    out: dict[str, Any] = {"P": dict(P)}
    grid = head_dim_grid(P["max_head_dim"], P["points_per_octave"])
    table = hardmax_rank_table(P["ns"], grid, n_trials=trials_per_n(P), seed=seed, device=dev,
                               progress=progress)
    table["rank_over_bound"] = table["rank"] / table["bound"]
    out["grid"], out["table"] = grid, table
    out["band"] = mean_band(table, by=["n", "head_dim"], value="rank_over_bound")
    points = saturation_points(table, fractions=P["fractions"], increment=P["increment"])
    boot = saturation_bootstrap(table, n_boot=P["n_boot"], fractions=P["fractions"],
                                increment=P["increment"], seed=seed)
    ci = boot.groupby(["criterion", "n"])["head_dim"].quantile([0.025, 0.975]).unstack()
    ci.columns = ["lo", "hi"]
    points = points.merge(ci.reset_index(), on=["criterion", "n"])
    points["ln n"] = np.log(points["n"])
    out["points"], out["boot"] = points, boot
    out["fits"] = fit_saturation(points[["n", "criterion", "head_dim"]], boot)
    # the standard temperature
    soft_grid = head_dim_grid(P["softmax_max_head_dim"], 2)
    soft = pd.concat([attention_rank_table(n, soft_grid, n_trials=P["softmax_trials"],
                                           rtols=[None if r == 0 else r for r in P["softmax_rtols"]],
                                           energies=(), seed=seed, device=dev) for n in P["softmax_ns"]],
                     ignore_index=True)
    soft = soft[soft.measure == "numerical_rank"]
    tols = list(dict.fromkeys(soft["tolerance"]))
    bands, spoints, sfits = [], [], []
    for tol in tols:
        sub = soft[soft.tolerance == tol]
        bands.append(mean_band(sub.assign(frac=sub["value"] / sub["n"]), by=["n", "head_dim"],
                               value="frac").assign(tolerance=tol))
        pts = saturation_points(sub, value="value", fractions=P["fractions"], increment=P["increment"],
                                reference="plateau")
        bt = saturation_bootstrap(sub, value="value", n_boot=P["n_boot"], fractions=P["fractions"],
                                  increment=P["increment"], reference="plateau", seed=seed)
        spoints.append(pts.assign(tolerance=tol))
        sfits.append(fit_saturation(pts, bt).assign(tolerance=tol))
    out["soft_grid"], out["soft"], out["tols"] = soft_grid, soft, tols
    out["soft_bands"] = pd.concat(bands, ignore_index=True)
    out["soft_points"] = pd.concat(spoints, ignore_index=True)
    out["soft_fits"] = pd.concat(sfits, ignore_index=True)
    return out


def _fit_value(fits: pd.DataFrame, crit: str, model: str, q: str, col: str = "estimate") -> float:
    hit = fits[(fits.criterion == crit) & (fits.model == model) & (fits.quantity == q)]
    return float(hit[col].iloc[0]) if len(hit) else float("nan")


def main_criterion(P: Mapping[str, Any], what: str = "bound") -> str:
    """The middle fraction's criterion name, e.g. '75% of bound'."""
    return f"{round(100 * P['fractions'][len(P['fractions']) // 2])}% of {what}"


HEADLINE_KEYS = (
    "ch06_fractions", "ch06_increment", "ch06_ppo", "ch06_n_boot", "ch06_trials", "ch06_main_criterion",
    "ch06_alpha_main", "ch06_alpha_main_lo", "ch06_alpha_main_hi", "ch06_chi2_log_main", "ch06_chi2_pow_main",
    "ch06_b_main", "ch06_b_main_lo", "ch06_b_main_hi", "ch06_dof", "ch06_power_better", "ch06_fitted",
    "ch06_alphas", "ch06_inc_points", "ch06_local_slopes", "ch06_ln_ratio", "ch06_main_ratio", "ch06_nmin",
    "ch06_nmax", "ch06_dhmax", "ch06_top_list",
    "ch06_soft0_tol", "ch06_soft0_plateau", "ch06_soft0_alpha", "ch06_soft0_alpha_lo", "ch06_soft0_alpha_hi",
    "ch06_soft0_points", "ch06_soft0_growth", "ch06_soft0_chi2_pow", "ch06_soft0_chi2_log",
    "ch06_soft1_tol", "ch06_soft1_plateau", "ch06_soft1_alpha", "ch06_soft1_alpha_lo", "ch06_soft1_alpha_hi",
    "ch06_soft1_points", "ch06_soft1_growth", "ch06_main_soft",
)


def headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 06 glues, from the tables of run_saturation; keys are HEADLINE_KEYS."""
    P, fits, points, table = t["P"], t["fits"], t["points"], t["table"]
    ns = list(P["ns"])
    H: dict[str, Any] = {}
    H["ch06_fractions"] = ", ".join(f"{f:g}" for f in P["fractions"])
    H["ch06_increment"] = P["increment"]
    H["ch06_ppo"] = P["points_per_octave"]
    H["ch06_n_boot"] = P["n_boot"]
    H["ch06_trials"] = ", ".join(f"{k} (n = {n})" for n, k in zip(ns, trials_per_n(P)))
    criteria = list(dict.fromkeys(points["criterion"]))
    chi = {c: (_fit_value(fits, c, LOG, "chi2"), _fit_value(fits, c, POWER, "chi2")) for c in criteria}
    fitted = [c for c in criteria if np.isfinite(chi[c][0])]
    power_better = [c for c in fitted if chi[c][1] < chi[c][0]]
    main = main_criterion(P)
    H["ch06_main_criterion"] = main
    H["ch06_alpha_main"] = _fit_value(fits, main, POWER, "alpha")
    H["ch06_alpha_main_lo"] = _fit_value(fits, main, POWER, "alpha", "lo")
    H["ch06_alpha_main_hi"] = _fit_value(fits, main, POWER, "alpha", "hi")
    H["ch06_chi2_log_main"] = chi.get(main, (np.nan, np.nan))[0]
    H["ch06_chi2_pow_main"] = chi.get(main, (np.nan, np.nan))[1]
    H["ch06_b_main"] = _fit_value(fits, main, LOG, "b")
    H["ch06_b_main_lo"] = _fit_value(fits, main, LOG, "b", "lo")
    H["ch06_b_main_hi"] = _fit_value(fits, main, LOG, "b", "hi")
    H["ch06_dof"] = int(fits["points"].max()) - 2 if len(fits) else 0
    H["ch06_power_better"] = len(power_better)
    H["ch06_fitted"] = len(fitted)
    H["ch06_alphas"] = ", ".join(
        f"{_fit_value(fits, c, POWER, 'alpha'):.2f} [{_fit_value(fits, c, POWER, 'alpha', 'lo'):.2f}, "
        f"{_fit_value(fits, c, POWER, 'alpha', 'hi'):.2f}] ({c})" for c in fitted)
    inc = points[points.criterion.str.startswith("increment")].set_index("n")
    H["ch06_inc_points"] = ", ".join(f"{v:.0f} [{lo:.0f}, {hi:.0f}] (n = {n})" for n, v, lo, hi in
                                     zip(inc.index, inc["head_dim"], inc["lo"], inc["hi"]))
    pm = points[points.criterion == main].sort_values("n")
    slopes = np.diff(np.log(pm["head_dim"].to_numpy())) / np.diff(np.log(pm["n"].to_numpy()))
    H["ch06_local_slopes"] = ", ".join(f"{s:.2f}" for s in slopes)
    H["ch06_ln_ratio"] = float(np.log(max(ns)) / np.log(min(ns)))
    H["ch06_main_ratio"] = float(pm["head_dim"].iloc[-1] / pm["head_dim"].iloc[0])
    grid = t["grid"]
    top = table[table.head_dim == max(grid)].groupby("n")["rank"].mean()
    H["ch06_nmin"], H["ch06_nmax"], H["ch06_dhmax"] = int(min(ns)), int(max(ns)), int(max(grid))
    H["ch06_top_list"] = ", ".join(f"{top[n] / n:.3f} n (n = {n})" for n in ns)
    soft, sfits, spoints = t["soft"], t["soft_fits"], t["soft_points"]
    main_soft = main_criterion(P, "plateau")
    plateau = soft[soft.head_dim == max(t["soft_grid"])].groupby(["tolerance", "n"])["value"].mean()
    for i, tol in enumerate(t["tols"][:2]):
        f = sfits[sfits.tolerance == tol]
        H[f"ch06_soft{i}_tol"] = tol
        H[f"ch06_soft{i}_plateau"] = ", ".join(f"{plateau[(tol, n)] / n:.3f} n (n = {n})" for n in P["softmax_ns"])
        H[f"ch06_soft{i}_alpha"] = _fit_value(f, main_soft, POWER, "alpha")
        H[f"ch06_soft{i}_alpha_lo"] = _fit_value(f, main_soft, POWER, "alpha", "lo")
        H[f"ch06_soft{i}_alpha_hi"] = _fit_value(f, main_soft, POWER, "alpha", "hi")
        sp = spoints[(spoints.tolerance == tol) & (spoints.criterion == main_soft)].set_index("n")["head_dim"]
        H[f"ch06_soft{i}_points"] = ", ".join(f"{v:.1f} (n = {n})" for n, v in sp.items())
        H[f"ch06_soft{i}_growth"] = float(sp.iloc[-1] / sp.iloc[0])
        if i == 0:
            H["ch06_soft0_chi2_pow"] = _fit_value(f, main_soft, POWER, "chi2")
            H["ch06_soft0_chi2_log"] = _fit_value(f, main_soft, LOG, "chi2")
    H["ch06_main_soft"] = main_soft
    return H


# --- claims and their rules (issue 14; fixed before the outputs they judge) ------------------

# Two-sided 95 % prediction interval for the out-of-range check (fit on small n, predict the largest).
Z_PRED = 1.96
# Kass & Raftery (1995): a BIC difference above 10 is "very strong" evidence against a model.
BIC_STRONG = 10.0
# At least three n to fit a two-parameter law on the lower half of the range and three to test
# it against: fewer cannot tell a law from its misfit.
MIN_NS = 6
# Two decades of n: over one decade a pure a + b ln n law is fitted by c n^alpha with
# alpha ~ 0.2 > 0 (issue 14), so a shorter range cannot separate log from power growth.
MIN_RANGE = 100.0


def rule_saturation(h: Mapping[str, Any]) -> Judgement:
    """On the main criterion of the hardmax saturation point, fit a + b ln n on the lower half
    of the n range (in ln n), inflate its errors by sqrt(chi^2/dof) and predict the largest n:
    reproduced (Theta(log n)) if the observed point lies within 1.96 prediction errors and the
    BIC of a + b ln n is within 10 of the best of a + b ln n, c n^alpha and c (ln n)^beta;
    reproduced in a weaker form (Omega(log n)) if it lies above that by more; contradicted
    (slower than log n) if below by more; inconclusive if within the prediction while the BIC
    strongly favours another law, or with fewer than 6 estimable n or a range under 100x.
    """
    crit, n_est, n_tot = need(h, "ch06_main_criterion"), need(h, "ch06_n_estimable"), need(h, "ch06_n_total")
    nmin, nmax, fit_nmax = need(h, "ch06_nmin"), need(h, "ch06_nmax"), need(h, "ch06_fit_nmax")
    obs, obs_se = need(h, "ch06_pred_obs"), need(h, "ch06_pred_obs_se")
    pred, pred_se, z = need(h, "ch06_pred_log"), need(h, "ch06_pred_log_se"), need(h, "ch06_pred_log_z")
    dbic, best = need(h, "ch06_dbic_log"), need(h, "ch06_best_law")
    draws, n_boot = need(h, "ch06_min_draws"), need(h, "ch06_n_boot")
    evidence = (f"{crit} point, {n_est} of {n_tot} n estimable (n = {nmin} to {nmax}, at least {draws} draws "
                f"per cell, {n_boot} bootstrap replicates): at n = {nmax} observed {obs:.1f} (s.e. {obs_se:.1f}), "
                f"a + b ln n fitted up to n = {fit_nmax} predicts {pred:.1f} (s.e. {pred_se:.1f}, z = {z:+.1f}); "
                f"BIC of a + b ln n exceeds the best law ({best}) by {dbic:.1f}")
    if n_est < MIN_NS or is_missing(nmax) or is_missing(nmin) or nmax / nmin < MIN_RANGE or is_missing(z):
        return Judgement(INCONCLUSIVE, evidence, f"needs at least {MIN_NS} estimable n over a range of "
                         f"{MIN_RANGE:g}x; below that a log and a slow power law are not separable")
    if z > Z_PRED:
        return Judgement(WEAKER, evidence, f"d_h* = Omega(log n): the saturation point grows faster than "
                         f"a + b ln n predicts; the best of the three laws is {best}")
    if z < -Z_PRED:
        return Judgement(CONTRADICTED, evidence)
    if dbic > BIC_STRONG:
        return Judgement(INCONCLUSIVE, evidence, f"a departure from a + b ln n smaller than "
                         f"{Z_PRED * pred_se:.1f} in d_h at n = {nmax} is not detectable, and the BIC "
                         f"strongly favours {best}")
    return Judgement(REPRODUCED, evidence)


CLAIMS: tuple[Claim, ...] = (
    Claim("saturation", MIN_LI, "06", "sec-ch06-law",
          "Saturation: the rank stops growing at a critical head size d_h of order log n", rule_saturation),
)
