"""Chapter 04's long-scale budget store: a learning-rate check, the budget extension, a factorial,
and the powered seeds, the doubled budget, Fig. 4 and Table 2(B) added to it.

Grids of causal-LM runs on the recipe of the chapter's long-scale sweep (d = 64, n = 64,
two pre-LN layers, BPE vocabulary 512, batch 32, cosine decay after 100 warm-up steps, scaled
initialisation, one torch thread), written to one resumable store through :func:`lowrank.stores.sweep.sweep`
and run in this order by :func:`run` (``python -m lowrank.experiments.head_size_training``):

1. :func:`lr_check_grid`: standard and fixed head size at h = 32, every rate of
   :data:`LR_CHECK_RATES`, :data:`LR_CHECK_STEPS` steps, one seed. The rate the budget extension
   uses is picked from these runs by :func:`lowrank.experiments.head_size_training.choose_lr` (smallest
   largest regret over the two families), read from the store, never typed.
2. :func:`budget_grid`: the six models of :data:`MODELS`, every seed, each trained separately
   to every budget of :data:`BUDGET_STEPS` with its own schedule (ascending budgets first).
3. :func:`factorial_grid`: tokenizer (characters or BPE 512) x initialisation (BERT-style or
   scaled) x (standard or fixed head size at h = 32), every seed, :data:`FACTORIAL_STEPS` steps
   at the fixed rate :data:`FACTORIAL_LR`.
4. :func:`power_grid`: the six models at the largest budget for the seeds the power rule asks
   (:data:`rules.POWER_SEEDS`); :func:`extension_grid`: the h = 32 and parameter-matched trio at
   :data:`EXTENDED_STEPS`; :func:`table2b_grid` and :func:`fig4_grid`: the head sizes around n at
   h = 4, and head size 32 at h = 1, 2, 4, 8 (width 32 h), at the largest budget. Then
   :func:`reestimate_grid`: more seeds for a row whose own spread over its first seeds asks for them
   (:func:`rules.required_seeds`, read from the spread alone).

:func:`read` returns what the store holds so far (a partial store is normal: the runs take hours
and resume by run key); :func:`comparisons` turns the budget runs into the paired gaps the
chapter plots and its rules judge.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ...core.commands import OneLineParser, interrupt_status, interrupt_words, one_line, signals_interrupt
from ...data.corpora import SPECIAL_TOKENS
from ...stores.sweep import ResultStore, manifest_path, parse_shard, sweep
from ...stores.sweep import store_problem
from ...train import run_key
from . import fair
from .design import (ALL_MODELS, BASE, BUDGET_STEPS, EXPERIMENT, EXTENDED_MODELS, EXTENDED_STEPS, FIG4_MODELS,
                     MODELS, ROW_STEPS, ROWS, SEEDS, TABLE2B_MODELS)
from .design import config as _config
from .design import estimate as _est
from .design import frame as _frame
from .design import labels as _labels
from .design import rows_of as _rows_of
from .rules import MAX_SEEDS, POWER_SEEDS, required_seeds

__all__ = ["BASE", "MODELS", "ROWS", "BUDGET_STEPS", "SEEDS", "LR_CHECK_RATES", "LR_CHECK_STEPS",
           "FACTORIAL_STEPS", "FACTORIAL_LR", "MIN_TIMED_RUNS", "seconds_per_step", "TOKENIZERS", "INITS", "EXPERIMENT", "RESUME_COMMAND",
           "design", "lr_check_grid", "budget_grid", "factorial_grid", "choose_rate", "run", "read",
           "comparisons", "factorial_effects", "manifest_path", "main", "status_line", "stored_line", "STEP_COST_S", "estimate_s", "EXTENDED_STEPS",
           "EXTENDED_MODELS", "TABLE2B_MODELS", "FIG4_MODELS", "ALL_MODELS", "ROW_STEPS", "power_grid", "extension_grid",
           "table2b_grid", "fig4_grid", "reestimate_grid", "row_seeds", "planned_seeds", "planning_sd",
           "added_grids"]

LR_CHECK_RATES = (0.003, 0.01, 0.02)
LR_CHECK_STEPS = 1000
LR_CHECK_MODELS = ("standard h = 32", "fixed h = 32")

FACTORIAL_STEPS = 1200
# The independent character-level set-up's rate, so its cell of the factorial repeats it.
FACTORIAL_LR = 0.01
# Character level is byte-level BPE with no merges: the 256 bytes and the special tokens.
TOKENIZERS = (("characters", 256 + len(SPECIAL_TOKENS)), ("BPE 512", 512))
INITS = ("bert", "scaled")

# Seconds an optimiser step of each model takes on one uncontended core of the build machine (AMD EPYC,
# one torch thread), measured for the long-scale sweep (its parameter set); the character-level runs
# are charged the BPE cost (a 40-step pilot put them at or below it). Used for the estimate only.
STEP_COST_S = {"standard h = 4": 0.063, "standard h = 16": 0.104, "standard h = 32": 0.138, "fixed h = 16": 0.118,
               "fixed h = 32": 0.198, "standard d = 112": 0.112,
               # measured for the added grids on the same kind of machine (15 steps after one warm-up)
               "fixed h = 4, d_p = 32": 0.035, "fixed h = 4, d_p = 64": 0.052, "fixed h = 4, d_p = 128": 0.088,
               "head size 32, h = 1": 0.022, "head size 32, h = 2": 0.035, "head size 32, h = 4": 0.070,
               "head size 32, h = 8": 0.200}

RESUME_COMMAND = ("nohup nice -n 15 .venv/bin/python -m lowrank.experiments.head_size_training "
                  "--store runs/04_head_size_budget.jsonl > runs/04_head_size_budget.log 2>&1 &")


def estimate_s() -> float:
    """CPU seconds of the three grids at :data:`STEP_COST_S` (shared runs counted once)."""
    # Before the rates are chosen, every judged run is costed at the shared rate (a step's cost does not depend on it).
    shared = {m: fair.RateChoice(m, BASE["lr"], (BASE["lr"],), 0, 0) for m in fair.LR_GRID_MODELS}
    seen, total = set(), 0.0
    for labelled in (lr_check_grid(), budget_grid(BASE["lr"]), factorial_grid(), *added_grids(BASE["lr"]),
                     fair.lr_grid(), fair.judged_grid(shared)):
        for lab, cfg in labelled:
            k = run_key(cfg)
            if k not in seen:
                seen.add(k)
                total += cfg["steps"] * STEP_COST_S[lab["model"]]
    return total


# A model's own time per step is read from the store once it holds this many of its runs.
MIN_TIMED_RUNS = 3


def seconds_per_step(latest: Mapping[str, dict], labelled) -> dict[str, float]:
    """Each model's median wall seconds per step over its runs in ``latest`` (records by key) among
    ``labelled`` ((labels, config) pairs), or :data:`STEP_COST_S` while it has fewer than
    :data:`MIN_TIMED_RUNS`. A run resumed from a checkpoint counts only its last stretch, so the
    median, not the mean."""
    timed: dict[str, list[float]] = {}
    for lab, cfg in labelled:
        rec = latest.get(run_key(cfg))
        if rec is not None and rec.get("wall_s"):
            timed.setdefault(lab["model"], []).append(rec["wall_s"] / cfg["steps"])
    return {m: float(pd.Series(timed[m]).median()) if len(timed.get(m, ())) >= MIN_TIMED_RUNS else cost
            for m, cost in STEP_COST_S.items()}


def design() -> dict:
    """The whole design as plain data (written beside the store as its manifest)."""
    return {"experiment": EXPERIMENT, "base": BASE, "fair": fair.design(), "seeds": list(SEEDS),
            "budget_steps": list(BUDGET_STEPS),
            "models": [list(m) for m in MODELS], "rows": [list(r) for r in ROWS],
            "lr_check_rates": list(LR_CHECK_RATES), "lr_check_steps": LR_CHECK_STEPS,
            "lr_check_models": list(LR_CHECK_MODELS), "factorial_steps": FACTORIAL_STEPS,
            "factorial_lr": FACTORIAL_LR, "tokenizers": [list(t) for t in TOKENIZERS], "inits": list(INITS),
            "power_seeds": POWER_SEEDS, "max_seeds": MAX_SEEDS, "extended_steps": EXTENDED_STEPS,
            "extended_models": list(EXTENDED_MODELS), "table2b_models": [list(m) for m in TABLE2B_MODELS],
            "fig4_models": [list(m) for m in FIG4_MODELS], "row_steps": {k: list(v) for k, v in ROW_STEPS.items()}}


def lr_check_grid() -> list[tuple[dict, dict]]:
    """(labels, config) of the learning-rate check: one seed, every rate, both h = 32 models."""
    return [(_labels(m, lr=float(lr)), _config(m, steps=LR_CHECK_STEPS, seed=SEEDS[0], lr=float(lr)))
            for lr in LR_CHECK_RATES for m in LR_CHECK_MODELS]


def budget_grid(lr: float) -> list[tuple[dict, dict]]:
    """(labels, config) of the budget extension at rate ``lr``: smallest budget first, then by seed."""
    return [(_labels(m[0], steps=s), _config(m[0], steps=s, seed=seed, lr=float(lr)))
            for s in BUDGET_STEPS for seed in SEEDS for m in MODELS]


def factorial_grid() -> list[tuple[dict, dict]]:
    """(labels, config) of the factorial: tokenizer x initialisation x head size, every seed."""
    return [(_labels(m, tokenizer=tok, init=init), _config(m, steps=FACTORIAL_STEPS, seed=seed, lr=FACTORIAL_LR,
                                                            vocab_size=vocab, init=init))
            for tok, vocab in TOKENIZERS for init in INITS for seed in SEEDS for m in LR_CHECK_MODELS]


def _grid(models, steps: int, seeds, lr: float) -> list[tuple[dict, dict]]:
    return [(_labels(m[0] if isinstance(m, tuple) else m, steps=steps),
             _config(m[0] if isinstance(m, tuple) else m, steps=steps, seed=seed, lr=float(lr)))
            for seed in seeds for m in models]


def power_grid(lr: float) -> list[tuple[dict, dict]]:
    """The six models at the largest budget for the seeds the power rule adds (3 to POWER_SEEDS - 1)."""
    return _grid(MODELS, BUDGET_STEPS[-1], range(len(SEEDS), POWER_SEEDS), lr)


def extension_grid(lr: float) -> list[tuple[dict, dict]]:
    """The h = 32 pair and the parameter-matched baseline at EXTENDED_STEPS, POWER_SEEDS seeds."""
    return _grid(EXTENDED_MODELS, EXTENDED_STEPS, range(POWER_SEEDS), lr)


def table2b_grid(lr: float) -> list[tuple[dict, dict]]:
    """Head sizes n / 2, n and 2 n at h = 4 (n / 4 is the budget grid's standard h = 4), POWER_SEEDS seeds."""
    return _grid(TABLE2B_MODELS, BUDGET_STEPS[-1], range(POWER_SEEDS), lr)


def fig4_grid(lr: float) -> list[tuple[dict, dict]]:
    """Head size 32 at h = 1, 2, 4, 8 (width 32 h), POWER_SEEDS seeds."""
    return _grid(FIG4_MODELS, BUDGET_STEPS[-1], range(POWER_SEEDS), lr)


def added_grids(lr: float) -> tuple[list[tuple[dict, dict]], ...]:
    """The grids the power rule added, in the order they run."""
    return power_grid(lr), extension_grid(lr), table2b_grid(lr), fig4_grid(lr)


def planning_sd(runs: pd.DataFrame, row: str, seeds=None, steps: int | None = None) -> float:
    """The larger (over the two splits) standard deviation of ``row``'s paired difference at its
    last budget (or ``steps``) over ``seeds`` (default: the first POWER_SEEDS); NaN unless every one
    of those seeds has both runs. The spread alone: the power rule never reads a mean."""
    a, b = _rows_of(row)
    seeds = list(range(POWER_SEEDS)) if seeds is None else list(seeds)
    at = runs[(runs.steps == (ROW_STEPS[row][-1] if steps is None else steps)) & runs.seed.isin(seeds)] \
        if len(runs) else runs
    sds = []
    for value in ("val_loss", "test_loss"):
        d = _pair(at, {"model": a}, {"model": b}, value) if len(at) else pd.DataFrame(columns=["seed", "diff"])
        if len(d) < len(seeds):
            return float("nan")
        sds.append(float(d["diff"].std(ddof=1)))
    return max(sds)


def planned_seeds(runs: pd.DataFrame, row: str, steps: int) -> int:
    """Seeds the design trains for both models of ``row`` at ``steps``: the power rule's at the row's
    last budget, POWER_SEEDS at the largest first budget, the first three seeds below it."""
    if steps == ROW_STEPS[row][-1]:
        return row_seeds(runs, row)
    return POWER_SEEDS if steps == BUDGET_STEPS[-1] else len(SEEDS)


def row_seeds(runs: pd.DataFrame, row: str) -> int:
    """Seeds ``row`` needs at its last budget: :func:`rules.required_seeds` of its planning spread."""
    return required_seeds(planning_sd(runs, row))


def reestimate_grid(lr: float, runs: pd.DataFrame) -> list[tuple[dict, dict]]:
    """Seeds POWER_SEEDS and up for the two models of every row whose own spread over its first
    POWER_SEEDS seeds asks for more (:func:`row_seeds`); empty until those seeds are stored."""
    out = []
    for row, a, b in ROWS:
        need = row_seeds(runs, row)
        if need > POWER_SEEDS:
            out += _grid((a, b), ROW_STEPS[row][-1], range(POWER_SEEDS, need), lr)
    return out


def choose_rate(check: pd.DataFrame) -> tuple[float | None, pd.DataFrame | None]:
    """The rate the budget extension uses, from the learning-rate check's runs (None until all are
    stored): :func:`lowrank.experiments.head_size_training.choose_lr`'s rule, stated before the check ran."""
    from . import choose_lr  # the chapter's one choice rule, shared with its long-scale sweep

    if len(check) < len(lr_check_grid()):
        return None, None
    return choose_lr(check)


def status_line(store: str | os.PathLike, workers: int = 1) -> str:
    """'356 of 430 planned runs stored; 74 left, about 15.0 CPU-hours (7.5 hours on 2 workers) at each
    model's measured time per step': the estimate chapter 04 prints, from :func:`read` (each model's
    median time per step in the store, or :data:`STEP_COST_S` until it has :data:`MIN_TIMED_RUNS` runs)."""
    got = read(store)
    left, hours = got["left_runs"], got["left_cpu_s"] / 3600
    # a row's judged runs are planned only once its models' rates are chosen from the grid
    more = ("; more are planned once every model's learning rate is chosen"
            if any(r.rate is None for r in got["fair"]["rates"].values()) else "")
    if not left:
        return f"{got['n_records']} of {got['planned']['distinct']} planned runs stored; none left{more}"
    wall = f" ({hours / workers:.1f} hours on {workers} workers)" if workers > 1 else ""
    return (f"{got['n_records']} of {got['planned']['distinct']} planned runs stored; {left} left, about "
            f"{hours:.1f} CPU-hours{wall} at each model's measured time per step{more}")


def stored_line(store: str | os.PathLike, labels: Mapping[str, dict], key: str, workers: int = 1) -> str:
    """'16:40 stored fixed h = 32, seed 5, rate 0.005, 8,000 steps in 14 min; ' and :func:`status_line`."""
    rec = _latest(Path(store)).get(key, {})
    cfg, lab = rec.get("config", {}), labels.get(key, {})
    what = ", ".join(x for x in (lab.get("model", ""), f"seed {cfg['seed']}" if "seed" in cfg else "",
                                 f"rate {cfg['lr']:g}" if "lr" in cfg else "",
                                 f"{cfg['steps']:,} steps" if "steps" in cfg else "") if x)
    took = f" in {rec['wall_s'] / 60:.0f} min" if rec.get("wall_s") else ""
    return f"{time.strftime('%H:%M')} stored {what or key}{took}; {status_line(store, workers)}"


def run(store: str | os.PathLike, *, shard: str | None = None, progress: bool = False, workers: int = 1,
        report: bool = False) -> None:
    """Train every missing run of the three grids into ``store`` (resumable, in the stated order);
    ``report``: print a line as each run is stored (:func:`stored_line`)."""
    store = Path(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    manifest_path(store).write_text(json.dumps(design(), indent=1, sort_keys=True) + "\n")
    runs_dir = store.with_name(store.stem + "-runs")
    part = parse_shard(shard)

    def go(grid):
        labels = {run_key(c): lab for lab, c in grid}
        on_stored = (lambda key: stored_line(store, labels, key, workers)) if report else None
        sweep([c for _, c in grid], experiment=EXPERIMENT, store=store, runs_dir=runs_dir, progress=progress,
              shard=part, workers=workers, on_stored=on_stored)

    go(lr_check_grid())
    lr, _ = choose_rate(read(store)["lr_check"])
    if lr is None:
        raise RuntimeError(f"the learning-rate check is not complete in {store} (other shards); the budget "
                           f"extension waits for it")
    go(budget_grid(lr))
    go(factorial_grid())
    for grid in added_grids(lr):
        go(grid)
    go(reestimate_grid(lr, read(store)["budget"]))
    fair.run(go, lambda: _latest(store))


def _budget_grids(lr: float, latest: Mapping[str, dict]) -> list[tuple[dict, dict]]:
    """Every (labels, config) of the budget runs at rate ``lr``: the budget grid, the added grids and
    the re-estimate the stored runs ask for (each config once)."""
    base = [x for g in (budget_grid(lr), *added_grids(lr)) for x in g]
    more = reestimate_grid(lr, _frame(base, latest))
    seen, out = set(), []
    for labels, cfg in base + more:
        k = run_key(cfg)
        if k not in seen:
            seen.add(k)
            out.append((labels, cfg))
    return out


def _latest(store: Path) -> dict[str, dict]:
    return {r["key"]: r for r in ResultStore(store).records()} if store.is_file() else {}


def read(store: str | os.PathLike) -> dict:
    """What ``store`` holds (a missing store holds nothing): ``lr_check``, ``lr`` (the chosen rate
    or None), ``lr_table``, ``budget`` (every budget run: the budget extension, the powered seeds,
    the doubled budget, Table 2(B), Fig. 4 and any re-estimated seeds), ``factorial`` (one row per
    stored run), the planned run counts ``planned`` and the store's ``path``."""
    store = Path(store)
    latest = _latest(store)
    check = _frame(lr_check_grid(), latest)
    lr, table = choose_rate(check)
    grids = _budget_grids(lr if lr is not None else BASE["lr"], latest)
    budget = _frame(grids, latest) if lr is not None else pd.DataFrame()
    fact = _frame(factorial_grid(), latest)
    planned = {"lr_check": len(lr_check_grid()), "budget": len(grids), "factorial": len(factorial_grid())}
    # The seed-0 h = 32 runs at the chosen rate and 1,000 steps belong to both the check and the extension.
    fair_got = fair.read_fair(latest)
    fair_grid, fair_judged = fair_got["grid_configs"], fair_got["judged_configs"]
    planned["lr_grid"], planned["judged"] = fair_got["lr_grid_planned"], fair_got["judged_planned"]
    design_keys = {run_key(c) for g in (lr_check_grid(), factorial_grid(), grids if lr is not None else [],
                                        fair_grid, fair_judged) for _, c in g}
    keys = set(latest) & design_keys
    # Runs the design holds, each counted once; before the rate is chosen, the default rate gives the count.
    labelled = [lc for g in (lr_check_grid(), factorial_grid(), grids, fair_grid, fair_judged) for lc in g]
    planned["distinct"] = len({run_key(c) for _, c in labelled})
    per_step = seconds_per_step(latest, labelled)
    left = {run_key(c): c["steps"] * per_step[lab["model"]] for lab, c in labelled if run_key(c) not in latest}
    return {"lr_check": check, "lr": lr, "lr_table": table, "budget": budget, "factorial": fact,
            "planned": planned, "path": str(store), "n_records": len(keys),
            "cpu_s": float(sum(latest[k]["wall_s"] for k in keys)), "fair": fair_got,
            "left_runs": len(left), "left_cpu_s": float(sum(left.values()))}


def _pair(df: pd.DataFrame, a: Mapping, b: Mapping, value: str) -> pd.DataFrame:
    """Per seed: ``value`` of the run matching ``a`` minus the one matching ``b`` (same seed)."""
    pick = lambda w: df[pd.concat([df[k] == v for k, v in w.items()], axis=1).all(axis=1)]  # noqa: E731
    j = pick(a)[["seed", value]].merge(pick(b)[["seed", value]], on="seed", suffixes=("_a", "_b"))
    return j.assign(diff=j[f"{value}_a"] - j[f"{value}_b"])[["seed", "diff"]]


def comparisons(budget: pd.DataFrame) -> pd.DataFrame:
    """One row per (row of :data:`ROWS`, budget of :data:`ROW_STEPS`, split): the claim's model a minus model b,
    paired by seed (``diff``, 95 % t interval ``lo`` .. ``hi``, ``n`` seeds, ``runs`` of the two
    models stored at that budget), and ``change``: the same paired per seed from the previous
    budget to this one (``change_diff``, ``change_lo``, ``change_hi``, ``change_n``)."""
    rows = []
    for row, a, b in ROWS:
        prev = {}
        for s in ROW_STEPS[row]:
            at = budget[budget.steps == s] if len(budget) else budget
            runs = int(at["model"].isin([a, b]).sum()) if len(at) else 0
            for split, value in (("validation", "val_loss"), ("test", "test_loss")):
                d = _pair(at, {"model": a}, {"model": b}, value) if len(at) else pd.DataFrame(columns=["seed", "diff"])
                e = _est(d["diff"])
                c = _est(pd.Series(dtype=float))
                if split in prev and len(d) and len(prev[split]):
                    j = d.merge(prev[split], on="seed", suffixes=("", "_prev"))
                    c = _est(j["diff"] - j["diff_prev"])
                rows.append({"row": row, "a": a, "b": b, "steps": s, "tokens": s * BASE["batch_size"] * BASE["seq_len"],
                             "split": split, "diff": e.mean, "lo": e.lo, "hi": e.hi, "n": e.n, "runs": runs,
                             "planned": 2 * planned_seeds(budget, row, s),
                             "change_diff": c.mean, "change_lo": c.lo, "change_hi": c.hi, "change_n": c.n})
                prev[split] = d
    return pd.DataFrame(rows)


def factorial_effects(fact: pd.DataFrame) -> pd.DataFrame:
    """Per cell (tokenizer x initialisation), standard minus fixed at h = 32 paired by seed, on
    both splits; then each factor's effect on that gap (the gap's mean over the other factor's two
    levels, one level minus the other, paired by seed) and their interaction. ``effect`` labels a
    row; ``factor`` ("cell" for a cell), ``level_a`` and ``level_b`` say what it compares."""
    rows = []
    per = {}
    for tok, _ in TOKENIZERS:
        for init in INITS:
            cell = fact[(fact.tokenizer == tok) & (fact.init == init)] if len(fact) else fact
            for split, value in (("validation", "val_loss"), ("test", "test_loss")):
                d = (_pair(cell, {"family": "standard"}, {"family": "fixed"}, value) if len(cell)
                     else pd.DataFrame(columns=["seed", "diff"]))
                per[(tok, init, split)] = d.set_index("seed")["diff"]
                e = _est(d["diff"])
                rows.append({"effect": f"{tok}, {init} init", "factor": "cell", "level_a": tok, "level_b": init,
                             "split": split, "diff": e.mean, "lo": e.lo, "hi": e.hi, "n": e.n})
    (t0, _), (t1, _) = TOKENIZERS
    i0, i1 = INITS
    for split in ("validation", "test"):
        g = {k[:2]: v for k, v in per.items() if k[2] == split}
        # (factor, first level, second level, effect per seed): one level minus the other; the
        # interaction has no levels.
        effects = (
            ("tokenizer", t0, t1, (g[t0, i0] + g[t0, i1]) / 2 - (g[t1, i0] + g[t1, i1]) / 2),
            ("initialisation", i0, i1, (g[t0, i0] + g[t1, i0]) / 2 - (g[t0, i1] + g[t1, i1]) / 2),
            ("interaction", "", "", (g[t0, i0] - g[t0, i1]) - (g[t1, i0] - g[t1, i1])),
        )
        for factor, a, b, v in effects:
            e = _est(v.dropna())
            name = f"{factor}: {a} minus {b}" if a else factor
            rows.append({"effect": name, "factor": factor, "level_a": a, "level_b": b, "split": split,
                         "diff": e.mean, "lo": e.lo, "hi": e.hi, "n": e.n})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.experiments.head_size_training --store PATH``: grow the budget store.

    Every input is checked before anything is written (the manifest beside the store included):
    the store must be a ``.jsonl`` file that is new, empty or a store of this experiment, neither it
    nor the files beside it committed (by path, hard link or symlink), and its manifest, if any, of
    this experiment. Exit status 0 done; 2 refused, one line; 1 the runs failed, one line; 130
    Ctrl-C, 143 SIGTERM (finished runs are in the store; the command resumes by run key)."""
    prog = "python -m lowrank.experiments.head_size_training"
    ap = OneLineParser(prog=prog, description="Train chapter 04's budget store (resumable by run key).")
    ap.add_argument("--store", required=True, help="the results store (.jsonl) to append to")
    ap.add_argument("--shard", default=None, help="i/N: train only this share of every grid")
    ap.add_argument("--progress", action="store_true", help="a progress bar per grid (on a terminal)")
    ap.add_argument("--workers", type=int, default=1, help="runs in parallel, one process and one core each")
    ap.add_argument("--debug", action="store_true", help="show Python tracebacks")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed in one line
        return e.code if isinstance(e.code, int) else 2

    def say(text: str, status: int) -> int:
        if a.debug:
            import traceback

            traceback.print_exc()
        print(f"{prog}: {one_line(text, 600)}", file=sys.stderr)
        return status

    store = Path(a.store).expanduser().resolve()
    why = store_problem(store, (EXPERIMENT,), manifest_names=True)  # run() rewrites the manifest
    if why:
        return say(f"error: --store {one_line(a.store, 200)!r} resolves to {store}: {why}; nothing was written", 2)
    try:
        parse_shard(a.shard)
    except ValueError as e:
        return say(f"error: --shard: {e}", 2)
    if a.workers < 1:
        return say(f"error: --workers must be a positive int, got {a.workers}", 2)
    try:
        print(f"{time.strftime('%H:%M')} {status_line(store, a.workers)}", flush=True)
        with signals_interrupt():
            run(store, shard=a.shard, progress=a.progress, workers=a.workers, report=True)
    except KeyboardInterrupt as e:
        return say(f"{interrupt_words(e)}; the finished runs are in {store}, and the same command resumes",
                   interrupt_status(e))
    except Exception as e:  # noqa: BLE001 - a failed run or an incomplete rate check: its cause, one line
        return say(f"error: stopped: {one_line(e) or type(e).__name__}"
                   + ("" if a.debug else " (--debug shows the traceback)"), 1)
    return 0


if __name__ == "__main__":  # works too, but Python warns: the package has imported this module already
    raise SystemExit(main())
