"""``run(P)``: every computation of chapter 06, and the tables the page shows."""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...theory.barrier import saturation_head_dim
from ..shared.laws import law_comparison, law_value
from ..shared.montecarlo import as_rtols, attention_rank_table, mean_band, seeded
from .criteria import (criteria, curve_bootstrap, interval_text, point_summary, saturation_bootstrap,
                       saturation_points)
from .grids import head_dim_grid, nested_hardmax_table, trials_per_n
from .increment import increment_evidence

__all__ = ["run", "interval_text", "points_table", "laws_table", "law_curves"]


def run(P: Mapping[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """Every computation of chapter 06 at parameters P (seeded, one torch thread); its tables by name.

    table/band (hardmax ranks, nested draws), points (saturation points with bootstrap se and
    intervals, estimable or not), boot, laws (per fraction criterion: the three laws compared,
    local slopes), inc (the increment criterion's evidence, from the long-scale store when P names
    one: :func:`increment_evidence`), law_curves (each fitted law over the range of n); soft
    (softmax numerical ranks), soft_bands, soft_points; timing; and P.
    """
    with seeded(P["seed"]):
        return _tables(P, progress)


def _tables(P: Mapping[str, Any], progress: bool) -> dict[str, Any]:
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
    out["laws"] = {c: law_comparison(out["points"], boot, c) for c in criteria(P["fractions"], P["increment"], "bound")}
    out["seconds_hardmax"] = time.perf_counter() - t0
    out["cpu_seconds_hardmax"] = time.process_time() - c0
    out["inc"] = increment_evidence(P, points, boot, progress=progress)
    # the standard temperature: numerical rank of softmax attention on a fine integer grid
    t0 = time.perf_counter()
    soft_grid = head_dim_grid(P["softmax_max_head_dim"], P["softmax_points_per_octave"])
    soft = pd.concat([attention_rank_table(n, soft_grid, n_trials=P["softmax_trials"],
                                           rtols=as_rtols(P["softmax_rtols"]),
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
    out["law_curves"] = law_curves(out)
    return out


def points_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Readable table of the hardmax saturation points: one row per n, one column per criterion."""
    pts = t["points"]
    rows = {}
    for (n, crit), r in pts.set_index(["n", "criterion"]).iterrows():
        txt = (interval_text(r["head_dim"], r["lo"], r["hi"]) if r["estimable"] else
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


def law_curves(t: Mapping[str, Any], points: int = 100) -> pd.DataFrame:
    """Each fitted law of each fraction criterion evaluated on a geometric grid of n over the range.

    Columns: criterion, law, n, head_dim (the law's saturation head size at n).
    """
    P = t["P"]
    n_line = np.geomspace(min(P["ns"]), max(P["ns"]), points)
    frames = []
    for crit in criteria(P["fractions"], P["increment"], "bound")[:-1]:
        for _, r in t["laws"][crit]["laws"].iterrows():
            frames.append(pd.DataFrame({"criterion": crit, "law": r["law"], "n": n_line,
                                        "head_dim": law_value(r["law"], (r["p1"], r["p2"]), n_line)}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["criterion", "law", "n", "head_dim"])
