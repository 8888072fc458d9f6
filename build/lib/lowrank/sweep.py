"""Sweeps: lists of run configs, keyed by a hash of the full config, with an append-only store.

Each finished run appends one JSON line ``{"key", "experiment", "config", "metrics", "wall_s",
"provenance", ...}`` (:func:`lowrank.provenance.provenance`: git revision, code hash, date,
machine, CPU) to
``<data root>/results/<experiment>.jsonl`` (or any ``store`` path) in a single ``write`` on a
file opened with ``O_APPEND``, under an exclusive ``flock``, followed by ``fsync``; so shards
running at the same time on one file system never interleave lines, and a rerun skips every
key already in the store. ``workers=k`` runs k at a time on one machine. Each run trains in
``runs_dir/<key>`` with ``resume=True``, so a killed run continues from its last checkpoint.

Shards. ``shard=(i, N)`` runs only the configs whose run key falls in shard i of N
(:func:`shard_of`: the key, a hex hash of the full config, modulo N). The assignment depends on
nothing but the config itself, not on the order or the other members of the grid, so N machines
given the same grid (or overlapping grids) with shards 0 .. N-1 run every config exactly once
between them, and a config shared by two grids lands in the same shard in both. Point every
shard at one store on a shared file system (appends are locked and atomic) or at one store
each and concatenate the files afterwards (records are self-contained lines; duplicates of a
key are harmless, the last one wins). Then run the sweep once more without a shard: it finds
every key done and only reads the store. Chapter 04 exposes this as its ``shard`` parameter::

    lowrank run 04 --scale paper -p shard 0/2 -p results_store data/results/ch04.jsonl   # machine A
    lowrank run 04 --scale paper -p shard 1/2 -p results_store data/results/ch04.jsonl   # machine B
    lowrank run 04 --scale paper -p results_store data/results/ch04.jsonl               # render
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd
from .progress import tqdm

from .data import data_root
from .provenance import provenance
from .train import run_key

__all__ = ["run_key", "store_path", "ResultStore", "sweep", "train_run", "shard_of", "parse_shard"]

try:  # POSIX; on other systems O_APPEND single writes are the only guard
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None


def parse_shard(text: str | tuple[int, int] | None) -> tuple[int, int]:
    """``"i/N"`` (or an ``(i, N)`` pair, or None for the whole sweep) as a checked ``(i, N)``."""
    if text is None:
        return (0, 1)
    if isinstance(text, str):
        parts = text.strip().split("/")
        try:
            i, n = (int(p) for p in parts)
        except ValueError:
            raise ValueError(f"shard must look like 'i/N' with integers 0 <= i < N, got {text[:40]!r}") from None
    else:
        try:
            i, n = text
        except (TypeError, ValueError):
            raise ValueError(f"shard must be (i, N) with 0 <= i < N, got {str(text)[:40]}") from None
    if not (isinstance(n, int) and isinstance(i, int) and not isinstance(i, bool) and n >= 1 and 0 <= i < n):
        raise ValueError(f"shard must be (i, N) with 0 <= i < N, got ({str(i)[:20]}, {str(n)[:20]})")
    return (i, n)


def shard_of(key: str, n_shards: int) -> int:
    """The shard (0 .. n_shards - 1) a run key belongs to: the key's hex value modulo n_shards."""
    if not isinstance(n_shards, int) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive int, got {n_shards!r}")
    return int(key, 16) % n_shards


def store_path(experiment: str, *, root: str | os.PathLike | None = None) -> Path:
    """``<data root>/results/<experiment>.jsonl``."""
    if not experiment or any(c in experiment for c in "/\\\x00") or experiment.startswith("."):
        raise ValueError(f"experiment name must be a plain file name, got {experiment!r}")
    return data_root(root) / "results" / f"{experiment}.jsonl"


class ResultStore:
    """Append-only JSONL file of finished runs."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def records(self) -> list[dict]:
        """All complete records, in file order.

        A line that is not UTF-8, not JSON, or not a record (a dict with a string ``key``, a dict
        ``config`` and a dict ``metrics``) is skipped with a warning naming the file and line
        number; a last line cut short by a crash is skipped silently (the next append starts a
        fresh line). A store path that is a folder raises ValueError naming it.
        """
        if self.path.is_dir():
            raise ValueError(f"results store {self.path} is a folder; expected a .jsonl file")
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        out = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            why = None
            try:
                rec = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as e:
                why = f"byte {line[e.start]:#04x} at column {e.start + 1} is not UTF-8"
            except json.JSONDecodeError as e:
                if number == len(lines):
                    continue  # the unterminated last line of a killed writer
                why = f"not JSON ({e.msg})"
            else:
                if not (isinstance(rec, dict) and isinstance(rec.get("key"), str)
                        and isinstance(rec.get("config"), dict) and isinstance(rec.get("metrics"), dict)):
                    why = "not a record with a string 'key' and dict 'config' and 'metrics'"
            if why:
                warnings.warn(f"results store {self.path}, line {number}: {why}; skipped", RuntimeWarning,
                              stacklevel=2)
                continue
            out.append(rec)
        return out

    def keys(self) -> set[str]:
        return {r["key"] for r in self.records()}

    def append(self, record: dict) -> None:
        """Append one record as one line: one write, O_APPEND, exclusive lock, fsync."""
        if "key" not in record:
            raise ValueError("a result record needs a 'key'")
        if not (isinstance(record["key"], str) and isinstance(record.get("config"), dict)
                and isinstance(record.get("metrics"), dict)):
            raise ValueError("a result record needs a string 'key' and dict 'config' and 'metrics'")
        line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            # A file left by a crash may end mid-line; start on a fresh line so both survive.
            size = os.fstat(fd).st_size
            if size:
                with open(self.path, "rb") as f:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        line = b"\n" + line
            os.write(fd, line)
            os.fsync(fd)
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def train_run(config: dict, *, run_dir: Path, progress: bool = False) -> dict:
    """Default runner: :func:`lowrank.train.train` in ``run_dir`` with resume; metrics without
    the config echo."""
    from .train import train

    res = train(config, out_dir=run_dir, resume=True, progress=progress)
    return {k: v for k, v in res.items() if k != "config"}


def _run_and_store(run_fn, config: dict, key: str, experiment: str, store: Path, run_dir: Path) -> str:
    t = time.perf_counter()
    metrics = run_fn(config, run_dir=run_dir)
    ResultStore(store).append({"key": key, "experiment": experiment, "config": config, "metrics": metrics,
                               "wall_s": time.perf_counter() - t,
                               "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                               "provenance": provenance()})
    return key


def sweep(configs: Iterable[dict], *, experiment: str, store: str | os.PathLike | None = None,
          shard: tuple[int, int] = (0, 1), runs_dir: str | os.PathLike | None = None,
          run_fn: Callable[..., dict] = train_run, progress: bool = True, workers: int = 1,
          root: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run every config not yet in the store (this shard's share); return all their results.

    Args:
        configs: run configs (dicts, JSON-serialisable; include the seed). Duplicates run once.
        experiment: name of the store file (``<root>/results/<experiment>.jsonl``).
        store: explicit store path instead.
        shard: (i, N) or "i/N": run only the configs with ``shard_of(run_key(c), N) == i``.
        runs_dir: where run folders (checkpoints) go; default ``<root>/runs/<experiment>``.
        run_fn: ``run_fn(config, run_dir=...) -> dict of metrics``; a module-level function
            when ``workers > 1`` (it is sent to the worker processes by reference).
        workers: runs in parallel, each in its own process (``spawn``); on a CPU, use one
            torch thread per run (``num_threads=1``) and one worker per core.

    Returns:
        tidy DataFrame, one row per config of the sweep that has a result in the store (from
        this or an earlier call, or another shard): ``key``, the config fields, the metrics.
    """
    i, n = parse_shard(shard)
    unique: dict[str, dict] = {}
    for c in configs:
        unique.setdefault(run_key(c), dict(c))
    keys = list(unique)
    st = ResultStore(store if store is not None else store_path(experiment, root=root))
    runs = Path(runs_dir) if runs_dir is not None else data_root(root) / "runs" / experiment
    done = st.keys()
    todo = [k for k in keys if shard_of(k, n) == i and k not in done]
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    bar = tqdm(total=len(todo), desc=f"sweep {experiment} shard {i}/{n}", disable=not progress, leave=False)
    if workers == 1 or len(todo) <= 1:
        for k in todo:
            _run_and_store(run_fn, unique[k], k, experiment, st.path, runs / k)
            bar.update(1)
    else:
        ctx = mp.get_context("spawn")  # fork is unsafe once torch has started its thread pools
        with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx) as pool:
            futures = [pool.submit(_run_and_store, run_fn, unique[k], k, experiment, st.path, runs / k)
                       for k in todo]
            for fut in as_completed(futures):
                fut.result()  # re-raises a failed run's exception here
                bar.update(1)
    bar.close()
    latest = {r["key"]: r for r in st.records() if r["key"] in unique}
    rows = [{"key": k, **latest[k]["config"], **latest[k]["metrics"], "wall_s": latest[k]["wall_s"]}
            for k in keys if k in latest]
    return pd.DataFrame(rows)
