"""The evidence of the increment criterion's rule: read from the long-scale store when the chapter
names one (:mod:`.store`), else from the chapter's own grid; and the glued text that says which."""
from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...core.files import BOOK_ROOT
from ..shared.laws import law_comparison
from .criteria import criteria, curve_bootstrap, interval_text, point_summary, saturation_points
from .grids import head_dim_grid, trials_per_n
from .store import LONG_COMMAND, fill_store, long_configs, read_store

__all__ = ["increment_criterion", "increment_evidence", "increment_keys"]

POINT_COLUMNS = ["n", "criterion", "head_dim", "se", "lo", "hi", "missing", "estimable"]


def increment_criterion(P: Mapping[str, Any]) -> str:
    """The increment criterion's name, e.g. 'increment < 0.01'."""
    return criteria(P["fractions"], P["increment"], "bound")[-1]


def _points(table: pd.DataFrame, P: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    if table.empty:
        return (pd.DataFrame(columns=POINT_COLUMNS).astype({"estimable": bool}),
                pd.DataFrame(columns=["boot", "n", "criterion", "head_dim"]))
    pts = saturation_points(table, fractions=P["fractions"], increment=P["increment"])
    boot = curve_bootstrap(table, n_boot=P["n_boot"], fractions=P["fractions"], increment=P["increment"],
                           seed=P["seed"])
    return point_summary(pts, boot), boot


def increment_evidence(P: Mapping[str, Any], points: pd.DataFrame, boot: pd.DataFrame, *,
                       progress: bool = False) -> dict[str, Any]:
    """Saturation points, bootstrap and law fits of the increment criterion, and where they come from.

    With ``increment_run_store`` the long grid's missing lengths are computed into it first and
    it is read; else ``increment_store`` (the committed long-scale store) is read; with neither, the
    chapter's own ``points`` and ``boot`` are used. A store holding some lengths gives those only.
    Returns {"source": "grid", "store" or "run_store", "points", "boot", "laws", "store": what
    :func:`read_store` returned (None for the own grid), "seconds"}.
    """
    t0 = time.perf_counter()
    crit = increment_criterion(P)
    run_store, store = P.get("increment_run_store"), P.get("increment_store")
    got, source = None, "grid"
    if run_store is not None or store is not None:
        if run_store is not None:
            fill_store(P, run_store, progress=progress)
        source = "run_store" if run_store is not None else "store"
        got = read_store(run_store if run_store is not None else store, P)
        points, boot = _points(got["table"], P)
    points, boot = points[points.criterion == crit], boot[boot.criterion == crit]
    return {"source": source, "points": points, "boot": boot, "laws": law_comparison(points, boot, crit),
            "store": got, "seconds": time.perf_counter() - t0}


def _span(values: Mapping[int, int]) -> str:
    """'512 at n = 32 to 32768 at n = 4096' (or one value when they are all equal)."""
    ns = sorted(values)
    if len({values[n] for n in ns}) == 1:
        return f"{values[ns[0]]} at every n"
    return f"{values[ns[0]]} at n = {ns[0]} to {values[ns[-1]]} at n = {ns[-1]}"


def _shown(path: Path) -> str:
    """A store's path as the book names it: from the book's folder when it lies there."""
    try:
        return path.resolve().relative_to(BOOK_ROOT.resolve()).as_posix()
    except ValueError:
        return path.name


def _point_text(r) -> str:
    if r["estimable"]:
        return f"{interval_text(r['head_dim'], r['lo'], r['hi'])} (n = {int(r['n'])})"
    if np.isfinite(r["head_dim"]):
        return f"{r['head_dim']:.1f}, not estimable (n = {int(r['n'])})"
    return f"not reached (n = {int(r['n'])})"


def _provenance(records: list[dict]) -> str:
    if not records:
        return "no record yet"
    prov = [r.get("provenance") or {} for r in records]
    pick = lambda k: ", ".join(sorted({str(p.get(k, "not recorded")) for p in prov}))  # noqa: E731
    dates = sorted(str(p.get("date", "")) for p in prov if p.get("date"))
    when = f"{dates[0][:10]} to {dates[-1][:10]}" if dates else "on dates not recorded"
    minutes = sum(float(r.get("wall_s", 0.0)) for r in records) / 60
    return (f"git revision {pick('git_revision')}, code hash {pick('code_hash')}, computed {when} on machine "
            f"{pick('machine')} ({pick('cpu')}), {minutes:.0f} minutes of wall time summed over the records")


def increment_keys(P: Mapping[str, Any], ev: Mapping[str, Any]) -> dict[str, Any]:
    """The glued text of the increment criterion's evidence: its source, grid, draws, the lengths a
    store holds, the points with their intervals, provenance, the store's command and the scale."""
    ns = sorted(int(n) for n in P["ns"])
    out: dict[str, Any] = {"ch06_inc_command": LONG_COMMAND}
    if ev["source"] == "grid":
        grid = head_dim_grid(P["max_head_dim"], P["points_per_octave"])
        trials = dict(zip(P["ns"], trials_per_n(P)))
        out.update(ch06_inc_source=f"this run's own grid (head sizes up to {max(grid)})",
                   ch06_inc_grid=f"{max(grid)} at every n", ch06_inc_draws=_span(trials),
                   ch06_inc_min_draws=int(min(trials.values())), ch06_inc_held=f"every one of the {len(ns)} lengths",
                   ch06_inc_provenance="computed by this run, no store", ch06_inc_scale="notebook")
    else:
        got, configs = ev["store"], long_configs(P)
        rule = f"max({P['increment_top_min']}, {P['increment_top_factor']} n)"
        what = "the committed long-scale store" if ev["source"] == "store" else "the store this run computed"
        held = [c for c in configs if c["n"] in got["ns"]]
        if not held:
            have = f"none of the {len(ns)} lengths yet"
        elif not got["missing"]:
            have = f"all {len(ns)} lengths"
        else:
            have = (f"{len(held)} of the {len(ns)} lengths (n = {', '.join(str(n) for n in got['ns'])}; missing: "
                    f"n = {', '.join(str(n) for n in got['missing'])})")
        if got["other"]:
            have += f", and {got['other']} record(s) of other grids, not used"
        out.update(ch06_inc_source=f"{what} {_shown(got['path'])}",
                   ch06_inc_grid=f"{rule} ({_span({c['n']: c['head_dims'][-1] for c in configs})})",
                   ch06_inc_draws=(f"max({P['min_trials']}, {P['increment_rows_per_cell']} // n) "
                                   f"({_span({c['n']: c['trials'] for c in configs})})"),
                   ch06_inc_min_draws=int(min(c["trials"] for c in (held or configs))), ch06_inc_held=have,
                   ch06_inc_provenance=_provenance(got["records"]), ch06_inc_scale="long")
    pts = ev["points"].sort_values("n")
    out["ch06_inc_points"] = ", ".join(_point_text(r) for _, r in pts.iterrows()) or "none yet"
    return out
