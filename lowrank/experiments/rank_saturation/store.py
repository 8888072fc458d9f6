"""Chapter 06's long-scale store: the nested hardmax draws on a head-size grid wide enough for the
paper's increment criterion at every length.

At the chapter's default grid (d_h up to 512) the relative rank increment per doubling of d_h falls
below 0.01 inside the grid at only a few lengths, because its point grows with n. The long grid
keeps the chapter's head sizes round(2^(k / points_per_octave)) but runs them up to
max(increment_top_min, increment_top_factor x n) at each n, with max(min_trials,
increment_rows_per_cell // n) draws. Each length is one record of a results store (keyed by the hash
of its config, appended atomically through :func:`lowrank.stores.sweep.sweep`, carrying its wall time and
:func:`lowrank.core.provenance.provenance`), so an interrupted run resumes at the first missing length.
:func:`fill_store` writes it (``python -m lowrank.experiments.rank_saturation.long`` is the command),
:func:`read_store` gives back the per-draw table of the lengths a store holds, in the form of
:func:`nested_hardmax_table`.
"""
from __future__ import annotations

import base64
import binascii
import tempfile
import warnings
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...core.files import in_book
from ...stores.sweep import ResultStore, foreign_store, sweep
from ...theory.barrier import expected_distinct_columns
from ...train import run_key
from ..shared.montecarlo import seeded
from .grids import head_dim_grid, nested_hardmax_table

__all__ = ["EXPERIMENT", "LONG_STORE", "LONG_COMMAND", "MAX_ELEMENTS", "GRID_POINT_COST", "GRID_PARAMETERS",
           "long_head_dims", "long_trials", "long_configs", "long_units", "run_length", "encode_ranks", "decode_ranks",
           "fill_store", "read_store"]

EXPERIMENT = "ch06_increment_long"
LONG_STORE = "data/results/06_rank_saturation_long.jsonl"
# The committed store is refused as a target: the command grows a copy under runs/, copied back by hand.
LONG_COMMAND = "python -m lowrank.experiments.rank_saturation.long --store runs/06_rank_saturation_long.jsonl"
# The block size nested_hardmax_table draws with: it fixes how the random stream is cut into
# draws, so it is part of every record's config.
MAX_ELEMENTS = 2 ** 25
# One grid point in multiply-adds per logit: the block product reads and writes all n^2 logits,
# then the argmax and the distinct-column count read them again (memory-bound, about 4.5 ns a
# logit against 0.014 ns a multiply-add in the pilot at n = 1024 to 4096, see
# chapters/params/long/06_rank_saturation.yaml).
GRID_POINT_COST = 300
COLUMNS = ["n", "head_dim", "trial", "rank", "bound", "rank_over_bound"]
# The chapter parameters the long grid is made of (what long_configs reads).
GRID_PARAMETERS = ("seed", "ns", "points_per_octave", "min_trials", "increment_top_min", "increment_top_factor",
                   "increment_rows_per_cell")


def long_head_dims(P: Mapping[str, Any], n: int) -> list[int]:
    """The long grid's head sizes at length n: the chapter's grid up to max(top_min, top_factor n)."""
    top = max(int(P["increment_top_min"]), int(P["increment_top_factor"]) * int(n))
    return head_dim_grid(top, P["points_per_octave"])


def long_trials(P: Mapping[str, Any], n: int) -> int:
    """Draws at length n: the same rows at every n, as in the chapter's own grid."""
    return max(int(P["min_trials"]), int(P["increment_rows_per_cell"]) // int(n))


def long_configs(P: Mapping[str, Any]) -> list[dict]:
    """One config per length, shortest first (a partial store holds the cheap lengths). The draws
    run on the CPU with one thread whatever the chapter's device: the store's integer ranks are
    then reproduced exactly from the same config."""
    return [{"n": int(n), "head_dims": long_head_dims(P, n), "trials": long_trials(P, n), "seed": int(P["seed"]),
             "device": "cpu", "threads": 1, "max_elements": MAX_ELEMENTS} for n in sorted(P["ns"])]


def long_units(P: Mapping[str, Any]) -> float:
    """The long grid's work in the cost model's ``nested_long`` units: per draw, n^2 (largest head
    size + GRID_POINT_COST x grid points)."""
    return float(sum(c["trials"] * c["n"] ** 2 * (c["head_dims"][-1] + GRID_POINT_COST * len(c["head_dims"]))
                     for c in long_configs(P)))


def encode_ranks(R: np.ndarray) -> str:
    """(head dims, draws) integer ranks as base64 of zlib-compressed little-endian uint16: about a
    byte a rank, where JSON lists take four."""
    R = np.asarray(R)
    if R.size and (R.min() < 0 or R.max() > np.iinfo(np.uint16).max or not np.all(R == np.round(R))):
        raise ValueError("ranks must be integers from 0 to 65535")
    return base64.b64encode(zlib.compress(R.astype("<u2").tobytes(), 9)).decode("ascii")


def decode_ranks(metrics: Mapping[str, Any]) -> np.ndarray:
    """The (head dims, draws) float array a record's metrics hold; ValueError when they do not
    decode, or disagree with their own shape or mean ranks."""
    try:
        shape = tuple(int(s) for s in metrics["shape"])
        raw = zlib.decompress(base64.b64decode(metrics["ranks"], validate=True))
        R = np.frombuffer(raw, dtype="<u2").reshape(shape).astype(np.float64)
    except (KeyError, TypeError, ValueError, binascii.Error, zlib.error) as e:
        raise ValueError(f"its ranks do not decode ({type(e).__name__})") from None
    if not np.allclose(R.mean(1), np.asarray(metrics.get("mean_rank", []), dtype=float), rtol=0, atol=1e-9):
        raise ValueError("its ranks disagree with its mean_rank")
    return R


def run_length(config: Mapping[str, Any], *, run_dir: Path | None = None) -> dict:
    """One length of the long grid (a :func:`lowrank.stores.sweep.sweep` run; nothing is written to run_dir):
    the hardmax rank of A (exact) at every head size of every draw."""
    dims, t = [int(d) for d in config["head_dims"]], int(config["trials"])
    with seeded(int(config["seed"]), int(config["threads"])):
        table = nested_hardmax_table([int(config["n"])], dims, n_trials=t, seed=int(config["seed"]),
                                     device=config["device"], max_elements=int(config["max_elements"]))
    R = table.pivot(index="head_dim", columns="trial", values="rank").loc[dims].to_numpy()
    return {"ranks": encode_ranks(R), "shape": [len(dims), t], "mean_rank": R.mean(1).tolist()}


def fill_store(P: Mapping[str, Any], store: str | Path, *, progress: bool = False) -> Path:
    """Compute every length of the long grid that ``store`` lacks, appending one record each."""
    path = Path(store)
    with tempfile.TemporaryDirectory(prefix="lowrank-ch06-") as tmp:
        sweep(long_configs(P), experiment=EXPERIMENT, store=path, runs_dir=Path(tmp) / "runs", run_fn=run_length,
              progress=progress)
    return path


def _table(n: int, dims: Sequence[int], R: np.ndarray) -> pd.DataFrame:
    t = R.shape[1]
    bound = expected_distinct_columns(n)
    return pd.DataFrame({"n": n, "head_dim": np.repeat(dims, t), "trial": np.tile(np.arange(t), len(dims)),
                         "rank": R.ravel(), "bound": bound, "rank_over_bound": R.ravel() / bound})


def read_store(path: str | Path, P: Mapping[str, Any]) -> dict[str, Any]:
    """The long grid's lengths that the store at ``path`` holds (read only).

    Returns {"table": per-draw ranks (columns of nested_hardmax_table; empty when the store holds
    none of the grid), "records": the records used, shortest n first, "ns": their lengths,
    "missing": the grid's lengths not in the store, "other": records of other grids (ignored),
    "path": the store}. A record whose ranks do not decode is skipped with a warning naming it, and
    its length counts as missing. A missing store raises FileNotFoundError naming the command
    that makes it; a file that is not a store of this experiment raises ValueError.
    """
    path = in_book(path)
    if not path.is_file():
        raise FileNotFoundError(f"no long-scale increment store at {path}: make it with `python -m "
                                f"lowrank.experiments.rank_saturation.long --store {path}` (hours on one CPU core), "
                                "or set increment_store = None to judge the increment criterion on this run's grid")
    foreign = foreign_store(path, (EXPERIMENT,))
    if foreign:  # another chapter's store holds none of these runs and would read as an empty one
        raise ValueError(f"results store {path}: {foreign}; the increment criterion is judged only on a store "
                         f"of the long grid (python -m lowrank.experiments.rank_saturation.long --store PATH)")
    wanted = {run_key(c): c for c in long_configs(P)}
    stored = {r["key"]: r for r in ResultStore(path).records() if r.get("experiment") == EXPERIMENT}
    frames, used = [], []
    for key, config in wanted.items():
        rec = stored.get(key)
        if rec is None:
            continue
        try:
            R = decode_ranks(rec["metrics"])
            if R.shape != (len(config["head_dims"]), config["trials"]):
                raise ValueError(f"its ranks have shape {R.shape}, its config asks for "
                                 f"{(len(config['head_dims']), config['trials'])}")
        except ValueError as e:
            warnings.warn(f"results store {path}, record of n = {config['n']}: {e}; skipped", RuntimeWarning,
                          stacklevel=2)
            continue
        frames.append(_table(config["n"], config["head_dims"], R))
        used.append(rec)
    ns = [int(r["config"]["n"]) for r in used]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return {"table": table, "records": used, "ns": ns, "missing": [c["n"] for c in wanted.values() if c["n"] not in ns],
            "other": len(set(stored) - set(wanted)), "path": path}
