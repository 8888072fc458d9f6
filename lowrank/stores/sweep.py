"""Sweeps: lists of run configs, keyed by a hash of the full config, with an append-only store.

Each finished run appends one JSON line ``{"key", "experiment", "config", "metrics", "wall_s",
"provenance", ...}`` (:func:`lowrank.core.provenance.provenance`: git revision, code hash, date,
machine, CPU) to
``<data root>/results/<experiment>.jsonl`` (or any ``store`` path) in a single ``write`` on a
file opened with ``O_APPEND``, under an exclusive ``flock``, followed by ``fsync``; so shards
running at the same time on one file system never interleave lines, and a rerun skips every
key already in the store. ``workers=k`` runs k at a time on one machine. Each run trains in
``runs_dir/<key>`` with ``resume=True``, so a killed run continues from its last checkpoint.

Devices. ``devices=["cuda:0", "cuda:1"]`` (or the environment variable ``LOWRANK_DEVICES``,
``"0,1"`` or ``"cuda:0,cuda:1"``, which ``lowrank run 04`` passes on) gives each worker process one
device of its own: the list sets the number of workers, and each worker sees only its GPU
(``CUDA_VISIBLE_DEVICES``), so a run's ``device: cuda`` lands on that GPU and the run key, which
names no GPU, is the same on any machine. Without it every worker would use ``cuda:0``.

Shards. ``shard=(i, N)`` runs only the configs whose run key falls in shard i of N
(:func:`shard_of`: the key, a hex hash of the full config, modulo N). The assignment depends on
nothing but the config itself, not on the order or the other members of the grid, so N machines
given the same grid (or overlapping grids) with shards 0 .. N-1 run every config exactly once
between them, and a config shared by two grids lands in the same shard in both. Point every
shard at one store on a shared file system (appends are locked and atomic) or at one store
each and concatenate the files afterwards (records are self-contained lines; duplicates of a
key are harmless, the last one wins). Then run the sweep once more without a shard: it finds
every key done and only reads the store. Chapter 04 exposes this as its ``shard`` parameter::

    lowrank run 04 --scale paper -p shard 0/2 -p results_store runs/ch04.jsonl   # machine A
    lowrank run 04 --scale paper -p shard 1/2 -p results_store runs/ch04.jsonl   # machine B
    lowrank run 04 --scale paper -p results_store runs/ch04.jsonl               # render
"""
from __future__ import annotations

import contextlib
import json
import math
import multiprocessing as mp
import os
import sys
import time
import warnings
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd
from ..core.progress import tqdm

from .committed import committed, committed_store, sidecars, unwritable
from ..data.corpora import data_root
from ..core.files import append_whole
from ..core.provenance import provenance
from ..train import run_key

__all__ = ["run_key", "store_path", "ResultStore", "sweep", "train_run", "shard_of", "parse_shard",
           "record_problem", "foreign_store", "store_problem", "manifest_conflict", "manifest_path", "write_manifest", "OPERATIONAL",
           "parse_devices", "DEVICES_ENV", "WORKER_DEVICE_ENV", "KEEP_CHECKPOINTS_ENV"]

DEVICES_ENV = "LOWRANK_DEVICES"             # "0,1,2,3": one sweep worker per listed GPU
WORKER_DEVICE_ENV = "LOWRANK_WORKER_DEVICE"  # set in each worker: the device it was given
KEEP_CHECKPOINTS_ENV = "LOWRANK_KEEP_CHECKPOINTS"  # "1": keep finished runs' checkpoints

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


def parse_devices(devices) -> list[str]:
    """Devices for sweep workers: a list (``["cuda:0", 1]``) or a comma-separated string
    (``"0,1"``); a bare number ``k`` means ``cuda:k``. Empty or None gives []. Names are kept as
    given otherwise (``cpu``, or the fake names tests use); duplicates are an error."""
    if devices is None:
        return []
    items = devices.split(",") if isinstance(devices, str) else list(devices)
    out = []
    for item in items:
        name = str(item).strip()
        if not name:
            continue
        if name.isdigit():
            name = f"cuda:{name}"
        if len(name) > 40 or any(c.isspace() for c in name):
            raise ValueError(f"device names look like 'cuda:0' or '0', got {name[:40]!r}")
        out.append(name)
    if len(set(out)) != len(out):
        raise ValueError(f"each device can take one worker; {out} lists one twice")
    return out


def _take_device(queue) -> None:
    """This worker's device, before anything in it touches CUDA."""
    device = queue.get()
    os.environ[WORKER_DEVICE_ENV] = device
    if device.startswith("cuda:"):
        os.environ["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]


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


def _finite(value, depth: int = 0) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if depth < 8 and isinstance(value, (list, tuple)):
        return all(_finite(v, depth + 1) for v in value)
    if depth < 8 and isinstance(value, dict):
        return all(_finite(v, depth + 1) for v in value.values())
    return True


def record_problem(rec) -> str | None:
    """Why ``rec`` is not a record a sweep wrote, or None: a dict with a string ``key`` equal to
    :func:`run_key` of its dict ``config``, and a non-empty dict ``metrics`` of finite numbers.
    A key that is not its config's hash means the line was edited or written by something else,
    and a NaN metric would flow silently into every mean and figure."""
    if not (isinstance(rec, dict) and isinstance(rec.get("key"), str)
            and isinstance(rec.get("config"), dict) and isinstance(rec.get("metrics"), dict)):
        return "not a record with a string 'key' and dict 'config' and 'metrics'"
    if not rec["metrics"]:
        return "its 'metrics' are empty"
    try:
        key = run_key(rec["config"])
    except ValueError:  # a non-finite number in the config
        return "its config holds a non-finite number"
    if rec["key"] != key:
        return f"its key {rec['key'][:20]!r} is not the hash of its config ({key})"
    if not _finite(rec["metrics"]):
        return "its metrics hold a non-finite number (NaN or infinity)"
    return None


def foreign_store(path: str | os.PathLike, experiments: Collection[str] | None = None) -> str | None:
    """Why the file at ``path`` is not a results store a sweep may append to, or None (it does not
    exist, is empty, or its first line is a record of ours, :func:`record_problem`, and, when
    ``experiments`` is given, of one of those experiments: another chapter's store read as this
    one's would hold none of its runs, and would look like an empty store). Reads at most the first
    line, up to 64 MiB (one record of a long grid can hold hundreds of KiB)."""
    path = Path(path)
    if path.is_dir():
        return "it is a folder; a results store is a .jsonl file"
    if not path.exists():
        return None
    if not path.is_file():
        return "it is not a regular file"
    with open(path, "rb") as f:
        first = f.readline(1 << 26)
        while first and not first.strip():
            first = f.readline(1 << 26)
    if not first:
        return None
    try:
        rec = json.loads(first.decode("utf8"))
    except (UnicodeDecodeError, ValueError):
        return "its first line is not a JSON record"
    why = record_problem(rec)
    if why:
        return f"its first line is not a record a sweep wrote ({why})"
    if experiments is not None and rec.get("experiment") not in experiments:
        return (f"it is a store of experiment {str(rec.get('experiment'))[:60]!r}, not of "
                f"{' or '.join(repr(e) for e in sorted(experiments))}")
    return None


def store_problem(store: Path, experiments: Collection[str] | None = None, root: Path | None = None, *,
                  written: bool = True, manifest_names: bool = False) -> str | None:
    """Why ``store`` (a resolved path) may not be used as a results store, or None.

    Every store: a ``.jsonl`` file, not a folder; when it exists, a store a sweep wrote, of one of
    ``experiments`` (None: any). A store only read must exist. A store ``written`` must also not be,
    nor have beside it, a committed file (:func:`committed_store`), must be writable, and a manifest
    beside it must be a JSON object naming one of ``experiments`` if it names an experiment (and
    must name one, with ``manifest_names``: a command that rewrites its manifest): nothing is written
    beside a file that belongs to something else."""
    if store.suffix != ".jsonl":
        return "a results store must be a .jsonl file"
    if store.is_dir():
        return "it is a folder; a results store is a .jsonl file"
    if written:  # first: a committed file is named as such, whatever else it is
        why = committed_store(store, root)
        if why:
            return why
    if not written and not store.is_file():
        return "no such results store (it is read, never written)"
    if store.exists() and foreign_store(store):
        return f"it exists and is not a results store ({foreign_store(store)}); nothing is appended to it"
    if store.exists() and foreign_store(store, experiments):
        return f"{foreign_store(store, experiments)}: another experiment's store, whose runs are not these"
    if any(p.exists() and not p.is_dir() for p in store.parents):
        return "a file stands where its folder should be"
    if not written:
        return None
    why = unwritable(store)
    if why:
        return why
    manifest, runs = sidecars(store)
    if runs.exists() and not runs.is_dir():
        return f"{runs} is a file; a store keeps its run folders there"
    if manifest.exists():
        try:
            old = json.loads(manifest.read_text(encoding="utf8")) if manifest.is_file() else None
        except (OSError, UnicodeDecodeError, ValueError):
            old = None
        if not isinstance(old, dict):
            return f"{manifest} exists and is not a parameter manifest (a JSON object); it is never overwritten"
        named = old.get("experiment")
        if experiments is not None and ("experiment" in old or manifest_names) and named not in experiments:
            whose = "names no experiment" if named is None else f"is of experiment {str(named)[:60]!r}"
            return (f"its manifest {manifest} {whose}, not {' or '.join(repr(e) for e in sorted(experiments))}; "
                    "it is never overwritten")
    return None


# Parameters that say how a sweep runs, not what it computes: they may differ between the runs
# that share a store (shards, workers, threads) without a new manifest.
OPERATIONAL = frozenset({"shard", "workers", "num_threads", "threads", "results_store", "long_store",
                         "retrieval_store", "retrieval_long_store", "progress"})


def manifest_conflict(path: str | os.PathLike, params: dict) -> str | None:
    """Why a run with ``params`` must not use the store whose manifest is ``path``, or None.

    A manifest records the parameters its store's runs were made with; a run whose parameters
    differ (outside :data:`OPERATIONAL`) would mix two grids in one store, and rewriting the
    manifest would lose the first grid's parameters. A file of that name that is not a JSON
    object (someone else's file) is a conflict too: it is never overwritten."""
    path = Path(path)
    if not path.exists():
        return None
    if not path.is_file():
        return f"{path} exists and is not a file"
    try:
        old = json.loads(path.read_text(encoding="utf8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"{path} exists and is not a parameter manifest (not JSON); it is never overwritten"
    if not isinstance(old, dict):
        return f"{path} exists and is not a parameter manifest (not a JSON object); it is never overwritten"
    new = json.loads(json.dumps(params, sort_keys=True, default=str))
    differ = sorted(k for k in set(old) | set(new) if k not in OPERATIONAL and old.get(k, None) != new.get(k, None))
    if differ:
        k = differ[0]
        return (f"the store's manifest {path} was written with other parameters ({len(differ)} differ, first "
                f"{k!r}: {str(old.get(k))[:40]} there, {str(new.get(k))[:40]} now); use a new store for a new grid")
    return None


def manifest_path(store: str | os.PathLike) -> Path:
    """The parameter manifest beside a store: ``<store without .jsonl>.params.json``."""
    p = Path(store)
    return p.with_name(p.stem + ".params.json")


def write_manifest(path: str | os.PathLike, params: dict) -> None:
    """Write a store's parameter manifest once: created if missing, left as it is if it holds
    the same parameters, ValueError (:func:`manifest_conflict`) otherwise."""
    path = Path(path)
    why = manifest_conflict(path, params)
    if why:
        raise ValueError(why)
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # another shard wrote it a moment ago: check that one instead
        why = manifest_conflict(path, params)
        if why:
            raise ValueError(why) from None
        return
    with os.fdopen(fd, "w", encoding="utf8") as f:
        f.write(json.dumps(params, indent=1, sort_keys=True, default=str) + "\n")


class ResultStore:
    """Append-only JSONL file of finished runs."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def records(self) -> list[dict]:
        """All complete records, in file order.

        A line that is not UTF-8, not JSON, or not a record (:func:`record_problem`: a string
        ``key`` that is the hash of its dict ``config``, and non-empty, finite ``metrics``) is
        skipped with a warning naming the file and line number; a last line cut short by a crash
        is skipped silently (the next append starts a fresh line). A store path that is a folder
        raises ValueError naming it.
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
                why = record_problem(rec)
            if why:
                warnings.warn(f"results store {self.path}, line {number}: {why}; skipped", RuntimeWarning,
                              stacklevel=2)
                continue
            out.append(rec)
        return out

    def keys(self) -> set[str]:
        return {r["key"] for r in self.records()}

    def append(self, record: dict) -> None:
        """Append one record as one line, whole or not at all (:func:`lowrank.core.files.append_whole`:
        O_APPEND, exclusive lock, fsync, a failed write cut back)."""
        if "key" not in record:
            raise ValueError("a result record needs a 'key'")
        if not (isinstance(record["key"], str) and isinstance(record.get("config"), dict)
                and isinstance(record.get("metrics"), dict)):
            raise ValueError("a result record needs a string 'key' and dict 'config' and 'metrics'")
        try:
            line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode()
        except ValueError:  # json's own words ("Out of range float values...") name nothing
            bad = sorted(k for k, v in record["metrics"].items() if not _finite(v))
            raise ValueError(f"run {record['key'][:20]} finished with non-finite metrics "
                             f"({', '.join(bad[:5]) or 'in its config or record'}: NaN or infinity); "
                             f"it is not stored in {self.path}") from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_whole(self.path, line)


def train_run(config: dict, *, run_dir: Path, progress: bool = False) -> dict:
    """Default runner: :func:`lowrank.train.train` in ``run_dir`` with resume; metrics without
    the config echo. The finished run's ``checkpoint.pt`` is deleted unless the environment sets
    ``LOWRANK_KEEP_CHECKPOINTS=1``."""
    from ..train import train

    res = train(config, out_dir=run_dir, resume=True, progress=progress)
    if res.get("finished", True) and os.environ.get(KEEP_CHECKPOINTS_ENV, "") not in ("1", "true", "yes"):
        # A finished run is its record in the store (and result.json); its checkpoint, the bulk of
        # a paper-scale sweep's disk, is only needed to resume an unfinished run.
        (Path(run_dir) / "checkpoint.pt").unlink(missing_ok=True)
    return {k: v for k, v in res.items() if k != "config"}


def _die_with_parent(parent: int) -> None:
    """Pool worker initializer: end this worker when the process that started it ends (SIGKILL
    included), so no orphan keeps training and appends to the store after its sweep is gone."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG (Linux); elsewhere the check below stays
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def _init_worker(parent: int, devices=None) -> None:
    """Pool initializer: die with the sweep's process, then take a device from the queue if given."""
    _die_with_parent(parent)
    if devices is not None:
        _take_device(devices)


def _run_and_store(run_fn, config: dict, key: str, experiment: str, store: Path, run_dir: Path,
                   parent: int | None = None) -> str:
    # One run folder per run, even across sweeps sharing a store: the second sweep to reach a key
    # waits for the first and then finds it done, instead of training into the same checkpoint.
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir.parent / f".{run_dir.name}.lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        if key in ResultStore(store).keys():
            return key
        t = time.perf_counter()
        metrics = run_fn(config, run_dir=run_dir)
        if parent is not None and os.getppid() != parent:
            os._exit(1)  # the sweep that asked for this run is gone: append nothing
        ResultStore(store).append({"key": key, "experiment": experiment, "config": config, "metrics": metrics,
                                   "wall_s": time.perf_counter() - t,
                                   "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                   "provenance": provenance()})
    finally:
        os.close(fd)  # closing releases the lock
    return key


def _report(on_stored: Callable[[str], str | None] | None, key: str) -> None:
    if on_stored is None:
        return
    try:
        line = on_stored(key)
    except Exception as e:  # noqa: BLE001 - the run is stored; a failed report must not stop the sweep
        line = f"run {key} is stored; reporting it failed: {type(e).__name__}: {e}"
    if line:
        tqdm.write(line)
        sys.stdout.flush()


def sweep(configs: Iterable[dict], *, experiment: str, store: str | os.PathLike | None = None,
          shard: tuple[int, int] = (0, 1), runs_dir: str | os.PathLike | None = None,
          run_fn: Callable[..., dict] = train_run, progress: bool = True, workers: int = 1,
          root: str | os.PathLike | None = None, devices=None,
          on_stored: Callable[[str], str | None] | None = None) -> pd.DataFrame:
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
        devices: one device per worker (:func:`parse_devices`; default ``$LOWRANK_DEVICES``):
            as many workers as devices, each pinned to its own.
        on_stored: called in this process with each run's key once its record is in the store;
            a line it returns is printed to stdout (above a progress bar, flushed), so a sweep
            logged to a file says what it has done.

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
    foreign = foreign_store(st.path)
    if foreign:
        raise ValueError(f"results store {st.path}: {foreign}; nothing is appended to it")
    runs = Path(runs_dir) if runs_dir is not None else data_root(root) / "runs" / experiment
    done = st.keys()
    todo = [k for k in keys if shard_of(k, n) == i and k not in done]
    if todo:  # the last line of defence for callers that did not check: a committed file is never appended to
        same = committed(st.path)
        if same is not None:
            raise ValueError(f"results store {st.path} is a committed file ({same}); {len(todo)} runs would be "
                             "appended to it: sweep into a copy outside the committed results")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    pinned = parse_devices(os.environ.get(DEVICES_ENV) if devices is None else devices)
    if pinned:
        workers = len(pinned)
    bar = tqdm(total=len(todo), desc=f"sweep {experiment} shard {i}/{n}", disable=not progress, leave=False)
    if not todo or (not pinned and (workers == 1 or len(todo) <= 1)):
        for k in todo:
            _run_and_store(run_fn, unique[k], k, experiment, st.path, runs / k)
            bar.update(1)
            _report(on_stored, k)
    else:
        ctx = mp.get_context("spawn")  # fork is unsafe once torch has started its thread pools
        with contextlib.ExitStack() as stack:
            queue = None
            if pinned:
                queue = stack.enter_context(ctx.Manager()).Queue()
                for device in pinned:
                    queue.put(device)
            pool = stack.enter_context(ProcessPoolExecutor(
                max_workers=workers if pinned else min(workers, len(todo)), mp_context=ctx,
                initializer=_init_worker, initargs=(os.getpid(), queue)))
            futures = [pool.submit(_run_and_store, run_fn, unique[k], k, experiment, st.path, runs / k,
                                   os.getpid()) for k in todo]
            try:
                for fut in as_completed(futures):
                    key = fut.result()  # re-raises a failed run's exception here
                    bar.update(1)
                    _report(on_stored, key)
            except KeyboardInterrupt:
                # Ctrl-C or SIGTERM: leaving the pool would wait for every queued run, the rest of the
                # grid; instead none starts and the running ones stop now (each resumes from its checkpoint).
                procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in procs:
                    proc.terminate()
                raise
    bar.close()
    latest = {r["key"]: r for r in st.records() if r["key"] in unique}
    rows = [{"key": k, **latest[k]["config"], **latest[k]["metrics"], "wall_s": latest[k]["wall_s"]}
            for k in keys if k in latest]
    return pd.DataFrame(rows)
