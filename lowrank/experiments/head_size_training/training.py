"""Running the chapter: the corpus, the training sweep through :func:`lowrank.stores.sweep.sweep` (shared
configurations run once; a paper-scale grid can be interrupted, resumed and sharded), the
learning-rate choice, and reading the committed stores (the long-scale sweep and the budget store)."""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ...layers.attention import standard_head_dim
from ...core.files import in_book
from ...stores.sweep import ResultStore, manifest_path, parse_shard, run_key, sweep, write_manifest
from . import budget
from .grids import base_config, lr_sweep_grid, training_grids
from .summaries import configuration_table

__all__ = ["run_corpus", "run_grids", "default_runs_dir", "choose_lr", "manifest_path", "store_provenance",
           "run_training", "BUDGET_STORE", "run_budget", "run_long"]


def run_corpus(corpus: str, *, vocab_size: int) -> dict:
    """``{"corpus": {...}}``: documents, words, the validation and test plays, and the token
    count of each split under the chapter's BPE tokenizer."""
    from ...data.corpora import load_corpus, prepare_lm, split_documents

    docs = load_corpus(corpus)
    parts = split_documents(docs)
    tokens = prepare_lm(corpus, vocab_size=vocab_size)
    return {"corpus": {
        "n_docs": len(docs), "n_words": docs.n_words(), "vocab": tokens.vocab_size,
        "train_tokens": len(tokens.train), "val_tokens": len(tokens.validation), "test_tokens": len(tokens.test),
        "val_docs": ", ".join(n.rsplit("/", 1)[-1] for n in parts["validation"].names),
        "test_docs": ", ".join(n.rsplit("/", 1)[-1] for n in parts["test"].names)}}


def _frame(labelled: list[tuple[dict, dict]], results: pd.DataFrame) -> pd.DataFrame:
    """Join the labels of (labels, config) pairs with their sweep results."""
    by_key = results.set_index("key") if len(results) else results
    rows = []
    for labels, cfg in labelled:
        k = run_key(cfg)
        if k not in by_key.index:
            continue  # another shard has not finished it yet
        r = by_key.loc[k]
        h, d = cfg["n_heads"], cfg["d_model"]
        rows.append({**labels, "d": d, "h": h, "d_h": cfg["head_dim"] or standard_head_dim(d, h), "seed": cfg["seed"],
                     "n_params": int(r["n_params"]), "val_ppl": float(r["val_ppl"]),
                     "test_ppl": float(r["test_ppl"]), "val_loss": float(r["val_loss"]),
                     "test_loss": float(r["test_loss"]) if "test_loss" in r else math.log(float(r["test_ppl"])),
                     "train_wall_s": float(r["train_wall_s"]), "key": k,
                     "train_curve": r.get("train_curve"), "val_curve": r.get("val_curve")})
    return pd.DataFrame(rows)


def run_grids(grids: dict[str, list[tuple[dict, dict]]], *, store: str | os.PathLike,
              runs_dir: str | os.PathLike | None = None, experiment: str = "04_head_size_training",
              progress: bool = True, workers: int = 1,
              shard: tuple[int, int] = (0, 1)) -> dict[str, pd.DataFrame]:
    """Run the union of several grids as one sweep (shared configurations run once); return
    one labelled DataFrame per grid with the runs finished so far (all of them unless sharded)."""
    configs = [c for grid in grids.values() for _, c in grid]
    results = sweep(configs, experiment=experiment, store=store, runs_dir=runs_dir, progress=progress,
                    workers=workers, shard=shard)
    return {name: _frame(grid, results) for name, grid in grids.items()}


def default_runs_dir(store: str | os.PathLike) -> Path:
    """Run folders (checkpoints) beside a store: ``<store without .jsonl>-runs/``."""
    p = Path(store)
    return p.with_name(p.stem + "-runs")


def choose_lr(sweep_runs: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """The one learning rate every run of the main grids uses, chosen from the sweep by a rule
    fixed before the sweep ran: the rate whose largest *regret* over the swept families is
    smallest, where a family's regret at a rate is its validation loss there minus its lowest
    validation loss over all swept rates (ties: the smaller rate).

    One shared rate keeps every paired comparison a comparison of architectures alone; choosing
    it by the worst regret means no family is handicapped by more than the reported regret
    relative to its own best swept rate. Returns (rate, table with one row per family x rate:
    ``family``, ``h``, ``d_h``, ``lr``, ``val_loss``, ``regret``, ``chosen``).
    """
    if sweep_runs.empty:
        raise ValueError("the learning-rate sweep has no finished runs")
    t = sweep_runs.groupby(["family", "h", "d_h", "lr"], as_index=False)["val_loss"].mean()
    t["regret"] = t["val_loss"] - t.groupby(["family", "h"])["val_loss"].transform("min")
    worst = t.groupby("lr")["regret"].max()
    lr = float(worst.index[worst.values == worst.min()].min())
    t["chosen"] = t["lr"] == lr
    return lr, t.sort_values(["family", "h", "lr"]).reset_index(drop=True)


def _json_params(P: Mapping) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in P.items()}


def _read_runs(grids: dict[str, list[tuple[dict, dict]]], store: Path) -> dict[str, pd.DataFrame]:
    """The grids' runs read from ``store`` without training any; a missing run is an error."""
    if not store.is_file():
        raise FileNotFoundError(f"results store {store} does not exist: it is committed with the book "
                                f"(data/results/), or produce it with `lowrank run 04 --scale long`")
    latest = {r["key"]: r for r in ResultStore(store).records()}
    configs = {run_key(c): c for grid in grids.values() for _, c in grid}
    missing = sorted(set(configs) - set(latest))
    if missing:
        raise RuntimeError(f"{len(missing)} of the {len(configs)} runs of the grid are not in {store} "
                           f"(first: {missing[0]}); the store does not match its parameter manifest")
    rows = [{"key": k, **latest[k]["config"], **latest[k]["metrics"], "wall_s": latest[k]["wall_s"]}
            for k in configs]
    results = pd.DataFrame(rows)
    return {name: _frame(grid, results) for name, grid in grids.items()}


def store_provenance(store: str | os.PathLike, keys: set[str] | None = None) -> dict:
    """How a store's records (those of ``keys``, or all) were produced: git revisions, code
    hashes, machines, CPUs (each a sorted list of the distinct values), first and last date,
    the number of records and the sum of their wall times (s, the sweep's CPU time on one
    worker per run)."""
    recs = [r for r in ResultStore(store).records() if keys is None or r["key"] in keys]
    prov = [r.get("provenance") or {} for r in recs]
    dates = sorted(p.get("date", "") for p in prov if p.get("date"))

    def distinct(field: str) -> list[str]:
        return sorted({str(p.get(field, "unknown")) for p in prov})

    return {"records": len(recs), "git_revision": distinct("git_revision"), "code_hash": distinct("code_hash"),
            "machine": distinct("machine"), "cpu": distinct("cpu"), "torch": distinct("torch"),
            "first_date": dates[0] if dates else "unknown", "last_date": dates[-1] if dates else "unknown",
            "wall_s": float(sum(float(r.get("wall_s", 0.0)) for r in recs))}


def run_training(P: Mapping, *, progress: bool = False, read_only: bool = False,
                 store: str | os.PathLike | None = None) -> dict:
    """Train the chapter's grids through one sweep store and return ``heads``, ``matched``,
    ``sizes`` (one row per run), ``lr_sweep`` (one row per sweep run, empty without a sweep),
    ``lr_table`` (:func:`choose_lr`'s table, or None), ``configs`` (one row per configuration)
    and ``setup`` (the training parameters, the chosen rate, tokens seen per run, wall time).

    When ``P["lr_sweep"]`` lists rates, their sweep (:func:`lr_sweep_grid`) runs first and the
    main grids run at the rate :func:`choose_lr` picks from it; otherwise at ``P["lr"]``.

    Runs go to ``store`` (default ``P["results_store"]``) when it names one (finished runs are
    reused, and the parameters are written beside it, :func:`manifest_path`), else to a fresh
    temporary store, so that the page is always recomputed. ``read_only=True`` trains nothing:
    every run must already be in ``store``. ``P["shard"]`` = ``"i/N"`` (optional) trains only
    this machine's share (:func:`lowrank.stores.sweep.shard_of`) into the named store; the chapter
    renders once every shard has finished, from a run with no shard and the same store.
    """
    t0 = time.perf_counter()
    shard = parse_shard(None if read_only else P.get("shard"))
    store = P["results_store"] if store is None else store
    if shard != (0, 1) and store is None:
        raise ValueError(f"shard = {P['shard']!r} needs results_store: the store the shards share")
    if read_only and store is None:
        raise ValueError("read_only needs a store to read")
    sweep_grid = lr_sweep_grid(P)

    def grids_at(path: Path) -> tuple[dict, float, pd.DataFrame | None]:
        if sweep_grid:
            if read_only:
                swept = _read_runs({"lr": sweep_grid}, path)["lr"]
            else:
                swept = run_grids({"lr": sweep_grid}, store=path, runs_dir=default_runs_dir(path),
                                  workers=P["workers"], progress=progress, shard=shard)["lr"]
            if len(swept) < len(sweep_grid):
                raise RuntimeError(f"shard {shard[0]}/{shard[1]} has finished its share of the learning-rate "
                                   f"sweep; the main grids wait for every shard's sweep runs in {path}")
            lr, table = choose_lr(swept)
        else:
            swept, lr, table = pd.DataFrame(), float(P["lr"]), None
        grids = training_grids(P, lr)
        if read_only:
            frames = _read_runs(grids, path)
        else:
            frames = run_grids(grids, store=path, runs_dir=default_runs_dir(path), workers=P["workers"],
                               progress=progress, shard=shard)
        frames["lr_sweep"], frames["lr_table"] = swept, table
        frames.setdefault("recovery", _frame([], pd.DataFrame()))
        return frames, lr, grids

    if store is None:
        # A throw-away store and its checkpoints (tens of MB), removed on every exit path.
        with tempfile.TemporaryDirectory(prefix="lowrank-ch04-") as tmp:
            frames, lr, grids = grids_at(Path(tmp) / "runs.jsonl")
        store_text = "a temporary store, removed after the run"
    else:
        store = Path(store)
        if not read_only:
            store.parent.mkdir(parents=True, exist_ok=True)
            write_manifest(manifest_path(store), _json_params(P))
        frames, lr, grids = grids_at(store)
        store_text = str(store)
    expected = {run_key(c) for grid in grids.values() for _, c in grid}
    missing = expected - {k for name in grids for k in frames[name].get("key", [])}
    if missing:
        raise RuntimeError(
            f"shard {shard[0]}/{shard[1]} has finished its runs; {len(missing)} of the {len(expected)} runs "
            f"belong to other shards and are not in {store} yet. When every shard has finished, execute "
            f"the chapter with shard = None and the same results_store to render it.")
    frames["configs"] = configuration_table(frames["heads"], frames["matched"], frames["sizes"])
    frames["setup"] = {
        "d": P["d_model"], "n": P["seq_len"], "dp": P["head_dim"], "n_layers": P["n_layers"],
        "steps": P["steps"], "lr": lr, "n_seeds": P["n_seeds"], "base_heads": P["baseline_heads"],
        "base_widths": list(P["baseline_widths"]), "size_heads": P["size_heads"],
        "tokens_seen": P["steps"] * P["batch_size"] * P["seq_len"], "store": store_text,
        "val_eval_tokens": base_config(P)["eval_tokens"], "batch_size": P["batch_size"],
        "init": P["init"], "d_ff": P["d_ff"], "lr_sweep": list(P["lr_sweep"]),
        "lr_sweep_steps": P["lr_sweep_steps"] or P["steps"],
        "recovery_steps": P.get("recovery_steps"),
        "wall_s": time.perf_counter() - t0}
    if store is not None and read_only:
        keys = expected | {run_key(c) for _, c in sweep_grid}
        frames["setup"]["provenance"] = store_provenance(store, keys)
    return frames


# The budget store, committed beside the long-scale sweep; the chapter reads it and never writes it.
BUDGET_STORE = "data/results/04_head_size_budget.jsonl"


def run_budget(store: str | os.PathLike = BUDGET_STORE) -> dict:
    """``{"budget": ...}``: what the budget store holds so far (:func:`budget.read`), with the
    paired ``comparisons`` of its budget runs, the factorial's ``effects`` and the records'
    ``provenance`` (None for a store with no record)."""
    path = in_book(store)
    got = budget.read(path)
    got["comparisons"] = budget.comparisons(got["budget"])
    got["effects"] = budget.factorial_effects(got["factorial"])
    got["provenance"] = store_provenance(path) if got["n_records"] else None
    return {"budget": got}


def run_long(P: Mapping, live: Mapping | None = None) -> dict:
    """``{"long": tables}``: the long-scale grids read from the committed store ``P["long_store"]``
    (read-only, with the parameters of its manifest, :func:`manifest_path`), or, when
    ``long_store`` is None, this execution's own tables ``live`` (a run at the long scale itself)."""
    if P["long_store"] is None:
        if live is None:
            raise ValueError("long_store is None: pass this run's tables as live")
        return {"long": {**{k: live[k] for k in ("heads", "matched", "sizes", "recovery", "lr_sweep", "lr_table",
                                                 "configs")},
                         "setup": dict(live["setup"], source="this run")}, **run_budget()}
    store = in_book(P["long_store"])
    man = manifest_path(store)
    if not man.is_file():
        raise FileNotFoundError(f"{man} (the parameters of the long-scale store) does not exist; it is "
                                f"committed with {store.name}")
    L = json.loads(man.read_text())
    tables = run_training(L, read_only=True, store=store)
    tables["setup"]["source"] = "store"
    return {"long": tables, **run_budget()}
