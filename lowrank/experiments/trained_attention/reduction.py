"""Chapter 07, part two: Min & Li's model reduction on retrieval heads trained to their plateau.

Two tasks of :mod:`lowrank.tasks.retrieval`: "single" (one key per token: a correct answer makes the
attention a permutation, so accuracy and hardmax rank / n nearly coincide) and "pair" (a key is a
pair (a, b), partial matches score, so the two can come apart). Every (task, n, d_h, seed) is one
run of :func:`lowrank.tasks.retrieval.train_retrieval` through :func:`lowrank.stores.sweep.sweep`, trained until
its loss plateaus or its step cap; the chapter reads the committed long-scale store.

:func:`grid_intervals` turns plateau runs into grid intervals of the saturation points d*_acc and
d*_rank (the threshold lies between two grid values, widened by a seed bootstrap), the evidence
:func:`rules.rule_model_reduction` judges.
"""
from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...core.files import in_book
from ...tasks.retrieval import WARMUP_STEPS, RetrievalConfig, train_retrieval
from ...measure.stats import MIN_BOOTSTRAP, t_interval
from ...stores.sweep import ResultStore, sweep
from ...theory.barrier import expected_distinct_columns
from ...train import run_key
from ..shared.equivalence import equivalent_from
from ..shared.intervals import t_quantile, wilson_interval
from .rules import LAWS, LEVEL, MIN_SEEDS, PLATEAU_TOL, REDUCTION_MARGIN, law_fit, point_records

__all__ = ["RETRIEVAL_EXPERIMENT", "LONG_STORE", "TASK_NAMES", "retrieval_configs", "grid_configs", "retrieval_run",
           "extended", "capped_configs",
           "retrieval_table", "read_retrieval_store", "run_retrieval",
           "grid_intervals", "plateau_table", "law_table", "law_bands", "deciding_text", "retrieval_headline"]

RETRIEVAL_EXPERIMENT = "ch07_retrieval"
LONG_STORE = "data/results/07_trained_attention_long.jsonl"
TASK_NAMES = {"single": "one-key", "pair": "two-key"}


def retrieval_configs(*, task: str, ns: Sequence[int], head_dims: Sequence[int], seeds: Sequence[int],
                      max_steps: int, min_steps: int, d_model: int, n_values: int, lr: float, tokens_per_step: int,
                      test_sequences: int, rank_sequences: int, rank_rtol: float) -> list[dict]:
    """One :class:`lowrank.tasks.retrieval.RetrievalConfig` dict per (n, seed, d_h), n-major: a sweep
    stopped early holds complete grids of its smallest lengths. The plateau tolerance is the rule's;
    the plateau is checked every 250 steps (every min_steps / 4 when that is fewer, in short runs)."""
    if not ns or not head_dims or not seeds:
        raise ValueError("ns, head_dims and seeds must be non-empty")
    return [RetrievalConfig(n=int(n), head_dim=int(d), seed=int(s), task=task, max_steps=int(max_steps),
                            min_steps=int(min_steps), plateau_tol=PLATEAU_TOL,
                            check_every=max(1, min(250, int(min_steps) // 4)), d_model=int(d_model),
                            n_values=int(n_values), lr=float(lr), tokens_per_step=int(tokens_per_step),
                            test_sequences=int(test_sequences), rank_sequences=int(rank_sequences),
                            rank_rtol=float(rank_rtol)).to_dict()
            for n in sorted(ns) for s in seeds for d in head_dims]


def grid_configs(*, ns: Sequence[int], pair_ns: Sequence[int], head_dims: Sequence[int], n_seeds: int,
                 pair_seeds: int, seed: int = 0, **common) -> list[dict]:
    """Both tasks' configs, interleaved by n (the one-key grid at n, then the two-key grid at n)."""
    single = retrieval_configs(task="single", ns=ns, head_dims=head_dims, seeds=range(seed, seed + n_seeds), **common)
    pair = retrieval_configs(task="pair", ns=pair_ns, head_dims=head_dims, seeds=range(seed, seed + pair_seeds),
                             **common) if pair_ns and pair_seeds else []
    return sorted(single + pair, key=lambda c: (c["n"], c["task"] != "single"))  # stable: keeps seed, d_h order


def retrieval_run(config: dict, *, run_dir: Path | None = None) -> dict:
    """One retrieval run for :func:`lowrank.stores.sweep.sweep` (nothing is written to ``run_dir``)."""
    return train_retrieval(config)


def retrieval_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per stored run: config fields, metrics (without the loss curve), wall_s and provenance."""
    rows = []
    for r in records:
        m = {k: v for k, v in r["metrics"].items() if k != "loss_curve"}
        prov = r.get("provenance") or {}
        rows.append({**r["config"], **m, "wall_s": float(r.get("wall_s", float("nan"))),
                     **{f"prov_{k}": v for k, v in prov.items()}})
    return pd.DataFrame(rows)


def extended(config: Mapping, cap: int) -> dict:
    """The same run with its step cap raised to ``cap``: the same seed draws the same batches, so it
    repeats the capped run step for step and trains on past the old cap until its plateau."""
    return {**dict(config), "max_steps": int(cap)}


def _records(path: Path) -> dict[str, dict]:
    recs = [r for r in ResultStore(path).records() if r.get("experiment") == RETRIEVAL_EXPERIMENT]
    return {r["key"]: r for r in recs}


def capped_configs(configs: Sequence[Mapping], path: str | Path, cap: int) -> list[dict]:
    """The extended configs (:func:`extended`) of every run of ``configs`` that the store at ``path``
    holds at its step cap without a plateau (none when the store does not exist)."""
    path = in_book(path)
    latest = _records(path) if path.is_file() else {}
    out = []
    for c in configs:
        r = latest.get(run_key(dict(c)))
        if r is not None and not r["metrics"]["plateau"] and int(c["max_steps"]) < int(cap):
            out.append(extended(c, cap))
    return out


def read_retrieval_store(path: str | Path, configs: Sequence[Mapping] | None = None,
                         extended_cap: int | None = None) -> pd.DataFrame:
    """The runs of a retrieval store (read only), restricted to ``configs`` when given; a partial
    store gives the runs it holds. With ``extended_cap``, a run of the grid that stopped at its cap
    is replaced by its extended run (:func:`extended`) when the store holds one. A missing store, or
    one with none of the grid's runs, raises."""
    path = in_book(path)
    if not path.is_file():
        raise FileNotFoundError(f"no retrieval store at {path}: run `lowrank run 07 --scale long` "
                                f"(it writes to retrieval_store) or check out the committed {LONG_STORE}")
    latest = _records(path)
    if configs is not None:
        picked = {}
        for c in configs:
            k = run_key(dict(c))
            if k not in latest:
                continue
            r = latest[k]
            if extended_cap is not None and not r["metrics"]["plateau"]:
                r = latest.get(run_key(extended(c, extended_cap)), r)
            picked[k] = r
        latest = picked
    if not latest:
        raise ValueError(f"the store {path} holds no {RETRIEVAL_EXPERIMENT} run of the requested grid")
    return retrieval_table(list(latest.values()))


def run_retrieval(*, ns: Sequence[int], pair_ns: Sequence[int], head_dims: Sequence[int], n_seeds: int,
                  pair_seeds: int, seed: int = 0, max_steps: int, min_steps: int, d_model: int, n_values: int,
                  lr: float, tokens_per_step: int, test_sequences: int, rank_sequences: int, rank_rtol: float,
                  run: bool, store: str | Path | None = None, read_store: str | Path | None = None,
                  threads: int = 0, show_progress: bool = False, extended_cap: int | None = None) -> dict[str, Any]:
    """Both tasks' grids: trained here (``run=True``, appending to ``store``, a temporary file when
    None) or read from ``read_store`` (``run=False``; the committed long store, never written).
    ``extended_cap``: every run that stopped at ``max_steps`` without a plateau is trained again
    with this cap (the same seed, so the same steps and then more) and takes its capped run's place.

    Returns ``{"retrieval": table of the stored runs, "retrieval_grid": the configs of the grid,
    "retrieval_source": "run"/"store"}``; with a partial store the table holds fewer runs than the grid.
    """
    configs = grid_configs(ns=ns, pair_ns=pair_ns, head_dims=head_dims, n_seeds=n_seeds, pair_seeds=pair_seeds,
                           seed=seed, max_steps=max_steps, min_steps=min_steps, d_model=d_model, n_values=n_values,
                           lr=lr, tokens_per_step=tokens_per_step, test_sequences=test_sequences,
                           rank_sequences=rank_sequences, rank_rtol=rank_rtol)
    grid = pd.DataFrame(configs)
    if extended_cap is not None and int(extended_cap) <= int(max_steps):
        raise ValueError(f"extended_cap = {extended_cap} must exceed max_steps = {max_steps}")
    if not run:
        if read_store is None:
            raise ValueError("run=False needs read_store, the store to read")
        return {"retrieval": read_retrieval_store(read_store, configs, extended_cap), "retrieval_grid": grid,
                "retrieval_source": "store", "retrieval_extended_cap": extended_cap}
    if threads:
        torch.set_num_threads(int(threads))
    with tempfile.TemporaryDirectory(prefix="lowrank-ch07-") as tmp:
        where = Path(store) if store is not None else Path(tmp) / f"{RETRIEVAL_EXPERIMENT}.jsonl"
        go = lambda cs: sweep(cs, experiment=RETRIEVAL_EXPERIMENT, store=where, runs_dir=Path(tmp) / "runs",  # noqa: E731
                              run_fn=retrieval_run, progress=show_progress)
        go(configs)
        if extended_cap is not None:
            go(capped_configs(configs, where, extended_cap))
        return {"retrieval": read_retrieval_store(where, configs, extended_cap), "retrieval_grid": grid,
                "retrieval_source": "run", "retrieval_extended_cap": extended_cap}


def plateau_table(runs: pd.DataFrame, grid: pd.DataFrame) -> pd.DataFrame:
    """Per (task, n): runs in the grid, stored, at their plateau, seeds complete (plateau at every
    d_h), whether the n is judged (every seed of the grid complete, at least MIN_SEEDS of them: no
    seed is left out for not converging) and the (d_h, seed) of runs that hit their cap."""
    rows = []
    for (task, n), g in grid.groupby(["task", "n"], sort=True):
        sub = runs[(runs.task == task) & (runs.n == n)] if len(runs) else runs
        dims = sorted(g.head_dim.unique())
        ok = sub[sub.plateau.astype(bool)] if len(sub) else sub
        complete = [s for s in sorted(g.seed.unique())
                    if len(ok) and set(ok[ok.seed == s].head_dim) >= set(dims)]
        capped = sub[~sub.plateau.astype(bool)] if len(sub) else sub
        seeds = g.seed.nunique()
        rows.append({"task": task, "n": int(n), "grid": len(g), "stored": len(sub), "plateau": len(ok),
                     "capped": len(capped), "complete_seeds": len(complete),
                     "judged": len(complete) == seeds and seeds >= MIN_SEEDS,
                     "capped_runs": _capped_text(capped)})
    return pd.DataFrame(rows)


def _capped_text(capped: pd.DataFrame) -> str:
    """The runs stopped by the cap, by head size: 'd_h 2 (seeds 0, 1), d_h 3 (seed 1)'."""
    parts = []
    for d, g in capped.groupby("head_dim"):
        seeds = sorted(int(x) for x in g.seed)
        parts.append(f"d_h {int(d)} (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})")
    return ", ".join(parts)


def _grid_below(dims: Sequence[int], v: float) -> float:
    """The grid value just below v (0 below the first)."""
    lower = [d for d in dims if d < v]
    return float(lower[-1]) if lower else 0.0


def grid_intervals(runs: pd.DataFrame, grid: pd.DataFrame, task: str, *, margin: float = REDUCTION_MARGIN,
                   n_boot: int = MIN_BOOTSTRAP, seed: int = 0, level: float = LEVEL) -> pd.DataFrame:
    """d*_acc and d*_rank of one task at every judged n, as grid intervals.

    Plateau runs of the seeds complete at n. d* (:func:`equivalent_from` on test accuracy, and on
    hardmax rank / n) is re-estimated on ``n_boot`` seed resamples (the same resample for both, so
    they pair); the interval is (grid value below the resamples' 2.5 % point, their 97.5 % point],
    with an open top (inf) when that point is the grid's largest d_h. ``gap``: one-sided lower
    bound of best accuracy - accuracy at d*_rank, paired by seed.
    """
    table = plateau_table(runs, grid)
    rows = []
    rng = np.random.default_rng(seed)
    tail = (1 - level) / 2
    for row in table[(table.task == task) & table.judged].itertuples():
        n = row.n
        dims = sorted(int(v) for v in grid[(grid.task == task) & (grid.n == n)].head_dim.unique())
        sub = runs[(runs.task == task) & (runs.n == n) & runs.plateau.astype(bool)]
        sub = sub.assign(hard_frac=sub.hardmax_rank / n)
        seeds = [s for s in sorted(sub.seed.unique()) if set(sub[sub.seed == s].head_dim) >= set(dims)]
        sub = sub[sub.seed.isin(seeds) & sub.head_dim.isin(dims)]
        A = sub.pivot_table(index="head_dim", columns="seed", values="test_acc").loc[dims, seeds].to_numpy(float)
        R = sub.pivot_table(index="head_dim", columns="seed", values="hard_frac").loc[dims, seeds].to_numpy(float)
        d = np.array(dims)
        k = len(seeds)
        est_a, best = equivalent_from(d, A, margin, level)
        est_r, _ = equivalent_from(d, R, margin, level)
        idx = rng.integers(0, k, size=(n_boot, k))
        rep_a = np.array([equivalent_from(d, A[:, i], margin, level)[0] for i in idx])
        rep_r = np.array([equivalent_from(d, R[:, i], margin, level)[0] for i in idx])
        out = {"task": task, "n": int(n), "seeds": k, "d_acc": est_a, "d_rank": est_r}
        for tag, rep in (("a", rep_a), ("r", rep_r)):
            lo = float(np.quantile(rep, tail, method="lower"))
            hi = float(np.quantile(rep, 1 - tail, method="higher"))
            out[f"{tag}_lo"] = _grid_below(dims, lo)
            out[f"{tag}_hi"] = math.inf if hi >= dims[-1] else hi
        j = dims.index(int(est_r))
        diff = A[best] - A[j]
        out["gap"] = float(diff.mean() - t_quantile(level, k - 1) * diff.std(ddof=1) / math.sqrt(k)) if k >= 2 \
            else float("nan")
        out["gap_mean"] = float(diff.mean())
        rows.append(out)
    cols = ["task", "n", "seeds", "d_acc", "d_rank", "a_lo", "a_hi", "r_lo", "r_hi", "gap", "gap_mean"]
    return pd.DataFrame(rows, columns=cols)


def law_table(points: pd.DataFrame, predict: int | None = None, *, fit_below: bool = True) -> pd.DataFrame:
    """The three laws against d*_acc's grid intervals: fits or not, the range of its growth parameter,
    and (``predict``) the range it predicts for d*(predict) when fitted on the smaller n only."""
    ns = points.n.tolist()
    rows = []
    for law in LAWS:
        f = law_fit(ns, points.a_lo.tolist(), points.a_hi.tolist(), law)
        row = {"law": law, "fits": f["fits"], "param_lo": f["q_lo"], "param_hi": f["q_hi"]}
        if predict is not None:
            small = points[points.n < predict] if fit_below else points
            g = law_fit(small.n.tolist(), small.a_lo.tolist(), small.a_hi.tolist(), law, predict=predict)
            row.update(pred_lo=g["pred_lo"], pred_hi=g["pred_hi"])
        rows.append(row)
    return pd.DataFrame(rows)


def law_bands(points: pd.DataFrame, ns: Sequence[float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each law that fits every grid interval of d*_acc, the lowest and highest d*(n) over its
    fitting parameter values at each n of ``ns`` (the band the chapter draws); laws that do not fit are left out."""
    out = {}
    args = (points.n.tolist(), points.a_lo.tolist(), points.a_hi.tolist())
    for law in LAWS:
        if not law_fit(*args, law)["fits"]:
            continue
        fits = [law_fit(*args, law, predict=float(n)) for n in ns]
        out[law] = (np.array([f["pred_lo"] for f in fits]), np.array([f["pred_hi"] for f in fits]))
    return out


def deciding_text(points: pd.DataFrame, factors: Sequence[int] = (2, 4, 8)) -> str:
    """Which outcomes at lengths past the largest judged n would exclude a growth law: at each n
    (``factors`` times that length) the range of d*(n) of every law that fits every grid interval
    now. A grid interval there lying wholly outside a law's range excludes that law; one inside
    every range decides nothing. Empty when fewer than three lengths are judged."""
    if len(points) < 3:
        return ""
    n_top = int(points.n.max())
    ns = [n_top * f for f in factors]
    bands = law_bands(points, ns)
    if not bands:
        return "nowhere: no growth law fits every interval, so no further length is needed to exclude one"
    parts = []
    for i, n in enumerate(ns):
        ranges = ", ".join(f"{law} {max(lo[i], 0.0):.1f} to {hi[i]:.1f}" for law, (lo, hi) in bands.items())
        parts.append(f"at n = {n}, {ranges}")
    return "; ".join(parts)


def _interval_text(lo: float, hi: float) -> str:
    return f"({lo:g}, {hi:g}]" if math.isfinite(hi) else f"above {lo:g}"


def retrieval_headline(t: Mapping[str, Any], join) -> dict[str, Any]:
    """Every retrieval number chapter 07 glues (including the evidence its rules read)."""
    runs, grid = t["retrieval"], t["retrieval_grid"]
    single = grid[grid.task == "single"]
    pair = grid[grid.task == "pair"]
    ns = sorted(int(v) for v in single.n.unique())
    dims = sorted(int(v) for v in single.head_dim.unique())
    run = next((i for i in range(1, len(dims)) if dims[i] != dims[i - 1] + 1), len(dims))  # 1, 2, ... without gaps
    dh_text = join([f"{dims[0]} to {dims[run - 1]}", *dims[run:]]) if run > 3 else join(dims)
    out: dict[str, Any] = {"ch07_ret_ns": join(ns), "ch07_ret_dh": dh_text,
                           "ch07_ret_pair_ns": join(sorted(int(v) for v in pair.n.unique())) if len(pair) else "none"}
    out["ch07_ret_seeds"] = int(single.seed.nunique())
    out["ch07_ret_pair_seeds"] = int(pair.seed.nunique()) if len(pair) else 0
    out["ch07_ret_cap"] = int(grid.max_steps.max())
    ext = t.get("retrieval_extended_cap")
    out["ch07_ret_ext_cap"] = int(ext) if ext is not None else 0
    out["ch07_ret_extended"] = int((runs.max_steps > out["ch07_ret_cap"]).sum())
    out["ch07_ret_min_steps"] = int(grid.min_steps.min())
    out["ch07_ret_check"] = int(grid.check_every.max())
    out["ch07_ret_warmup"] = WARMUP_STEPS
    out["ch07_ret_lr"] = float(grid.lr.iloc[0])
    out["ch07_ret_cooldown"] = float(grid.cooldown.iloc[0])
    out["ch07_ret_test_seq"] = int(grid.test_sequences.min())
    out["ch07_ret_runs"], out["ch07_ret_grid_runs"] = int(len(runs)), int(len(grid))
    plateau = runs.plateau.astype(bool)
    out["ch07_ret_plateau"], out["ch07_ret_capped"] = int(plateau.sum()), int((~plateau).sum())
    out["ch07_ret_plateau_tol"] = PLATEAU_TOL
    out["ch07_ret_margin"] = REDUCTION_MARGIN
    out["ch07_ret_acc_se_max"] = float(runs.test_acc_se.max())
    out["ch07_ret_acc_min"], out["ch07_ret_acc_max"] = float(runs.test_acc.min()), float(runs.test_acc.max())
    frac = runs.hardmax_rank / runs.n
    for key, task in (("corr", "single"), ("pair_corr", "pair")):
        m = (runs.task == task).to_numpy()
        out[f"ch07_ret_{key}"] = float(np.corrcoef(runs.test_acc[m], frac[m])[0, 1]) if m.sum() > 2 else float("nan")
    bound = np.minimum(runs.head_dim, runs.n)
    out["ch07_ret_bounded"] = int((runs.logit_rank_max <= bound).sum())
    out["ch07_ret_cases"] = int(len(runs))
    table = plateau_table(runs, grid)
    for key, task in (("single", "single"), ("pair", "pair")):
        tt = table[table.task == task]
        pts = grid_intervals(runs, grid, task)
        out[f"ch07_red_{key}"] = point_records(pts.to_dict("records"))
        out[f"ch07_red_{key}_runs"] = int(tt.stored.sum())
        out[f"ch07_red_{key}_grid"] = int(tt.grid.sum())
        out[f"ch07_red_{key}_plateau"] = int(tt.plateau.sum())
        out[f"ch07_red_{key}_judged"] = join([int(v) for v in tt[tt.judged].n]) if tt.judged.any() else "none"
        out[f"ch07_red_{key}_text"] = ("; ".join(
            f"n = {int(p.n)}: d*_acc {_interval_text(p.a_lo, p.a_hi)}, d*_rank {_interval_text(p.r_lo, p.r_hi)}"
            for p in pts.itertuples()) or "no length has a complete grid of plateau runs yet")
        if key == "single":
            single_pts = pts
    capped = table[table.capped > 0]
    out["ch07_ret_capped_where"] = ("; ".join(f"{TASK_NAMES[r.task]} n = {r.n}: {r.capped_runs}"
                                              for r in capped.itertuples()) or "none")
    # The growth law on the one-key task, and the out-of-range prediction for its largest judged n.
    if len(single_pts) >= 3:
        n_top = int(single_pts.n.max())
        laws = law_table(single_pts, predict=n_top)
        obs = single_pts[single_pts.n == n_top].iloc[0]
        out["ch07_red_laws"] = "; ".join(
            f"{r.law} " + (f"fits (growth parameter between {r.param_lo:.2f} and {r.param_hi:.2f})" if r.fits
                           else "is excluded") for r in laws.itertuples())
        out["ch07_red_pred"] = "; ".join(
            f"{r.law} fitted below n = {n_top} predicts d* between {r.pred_lo:.1f} and {r.pred_hi:.1f}"
            if np.isfinite(r.pred_lo) else f"{r.law} fits no interval below n = {n_top}"
            for r in laws.itertuples()) + f"; observed {_interval_text(obs.a_lo, obs.a_hi)}"
    else:
        out["ch07_red_laws"] = f"not decided: {len(single_pts)} length(s) judged, three needed"
        out["ch07_red_pred"] = "no prediction: fewer than three lengths judged"
    out["ch07_red_decide"] = deciding_text(single_pts) or "nowhere yet (fewer than three lengths are judged)"
    # The barrier, on the retrieval heads of the widest d_h (one-key task, plateau runs, every n).
    top = runs[(runs.task == "single") & (runs.head_dim == dims[-1]) & plateau]
    excess = (top.hardmax_rank / top.n - top.n.map(lambda n: expected_distinct_columns(int(n)) / int(n))).to_numpy()
    out["ch07_bar_ret_dh"] = dims[-1]
    out["ch07_bar_ret_ns"] = join(sorted(int(v) for v in top.n.unique())) if len(top) else "none"
    out["ch07_bar_ret_runs"] = int(len(top))
    above = int((excess > 0).sum())
    out["ch07_bar_ret_above"] = above
    if len(top) >= 2:
        est = t_interval(excess, LEVEL)
        out["ch07_bar_ret_mean"], out["ch07_bar_ret_lo"], out["ch07_bar_ret_hi"] = est.mean, est.lo, est.hi
    else:
        out["ch07_bar_ret_mean"] = out["ch07_bar_ret_lo"] = out["ch07_bar_ret_hi"] = float("nan")
    out["ch07_bar_ret_share_lo"], out["ch07_bar_ret_share_hi"] = wilson_interval(above, int(len(top)))
    lo, hi = out["ch07_bar_ret_lo"], out["ch07_bar_ret_hi"]
    out["ch07_bar_ret_spread"] = (f"95 % t interval over runs {lo:.2f} to {hi:.2f}" if hi > lo else
                                  "the same in every run, so no interval: each head reaches hardmax rank n"
                                  if len(top) >= 2 else "too few runs for an interval")
    # Provenance, read from the records.
    first = lambda c: ", ".join(sorted({str(v) for v in runs[c].dropna()})) if c in runs else "not recorded"  # noqa: E731
    out["ch07_ret_git"] = first("prov_git_revision")
    out["ch07_ret_code"] = first("prov_code_hash")
    dates = runs["prov_date"].dropna().astype(str) if "prov_date" in runs else pd.Series([], dtype=str)
    out["ch07_ret_dates"] = f"{dates.min()} to {dates.max()}" if len(dates) else "not recorded"
    out["ch07_ret_machine"] = first("prov_machine")
    out["ch07_ret_cpu"] = first("prov_cpu")
    out["ch07_ret_cpu_min"] = float(runs.wall_s.sum() / 60)
    out["ch07_ret_source"] = ("the committed long-scale store" if t.get("retrieval_source") == "store"
                              else "runs made by this notebook")
    # The scale chapter 08 reports for the claims judged on these runs.
    out["ch07_ret_scale"] = "long" if t.get("retrieval_source") == "store" else "notebook"
    return out
