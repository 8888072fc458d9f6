"""What each parameter set needs and costs, read from its machine-readable ``metadata`` block.

Every ``chapters/params/<scale>/<chapter>.yaml`` holds, beside its parameters, one mapping under
the key ``metadata`` (never injected into the notebook)::

    metadata:
      hardware: one CUDA GPU (bf16 autocast); under 10 GB of GPU memory   # what it needs, in words
      devices: cuda                  # what the run computes on: cpu or cuda
      memory: under 4 GB of host memory
      disk: 10-20 GB of stores and checkpoints, git-ignored               # optional
      measured:                      # where its measured time comes from
        source: store                # store | gpu_check | not_recorded (smoke sets) | none ("not yet run")
        path: data/results/04_head_size_training_long.jsonl

The default scale has no file: it is the run each chapter page shows, measured by the
notebook's own execution record. The estimate is never written down: it is computed from the
set's parameters by :func:`lowrank.experiments.costs.estimate` (the chapter's real grid), so
``lowrank list``, ``lowrank run --dry-run``, the re-run boxes, the README table and the "Paper
scale" page all print the same numbers (:mod:`lowrank.book.sets` gathers them per set;
``python -m lowrank.book.sets`` prints the table).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..experiments.costs import Cost, estimate as estimate_cost
from .params import ParameterError

__all__ = ["METADATA_KEY", "SOURCES", "DEVICES", "DEFAULT_HARDWARE", "GPU_CHECK_FILE", "SetInfo", "Measured",
           "read_metadata", "measured_time", "duration", "estimate"]

METADATA_KEY = "metadata"
SOURCES = ("execution_record", "store", "gpu_check", "not_recorded", "none")
DEVICES = ("cpu", "cuda")
DEFAULT_HARDWARE = "a CPU; the book's runs use 2 cores, no GPU"
GPU_CHECK_FILE = "data/measured/gpu_check.json"  # written by tools/gpu_check.sh


@dataclass(frozen=True)
class Measured:
    """A measured wall time (seconds) and where it comes from, or ``seconds`` None: not yet run."""

    seconds: float | None
    source: str
    where: str = ""
    when: str = ""
    done: int | None = None   # a store that holds only part of the set's runs: how many so far,
    total: int | None = None  # of how many; ``seconds`` is then None (no measurement of the set)
    partial_s: float = 0.0    # and their summed wall_s

    def text(self) -> str:
        if self.done is not None and self.seconds is None:
            return (f"in progress: {self.done} of {self.total} runs in {self.where} so far, "
                    f"{duration(self.partial_s)} of wall_s")
        if self.seconds is None:
            return "run by the tests, time not recorded" if self.source == "not_recorded" else "not yet run"
        what = {"execution_record": "the notebook's execution record", "store": f"sum of wall_s in {self.where}",
                "gpu_check": f"tools/gpu_check.sh, {self.where}"}.get(self.source, self.source)
        return f"measured: {duration(self.seconds)} ({what}{', ' + self.when if self.when else ''})"


@dataclass(frozen=True)
class SetInfo:
    """One scale of one chapter: what it needs, what it would cost, what it took."""

    chapter: str
    scale: str
    hardware: str
    devices: str
    memory: str
    disk: str
    cost: Cost | None
    measured: Measured

    def estimate_text(self) -> str:
        if self.cost is None:
            return "no estimate"
        return f"about {duration(self.cost.wall_s)} ({self.cost.wall_text()})"


def duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 2 h 10 min, 3.5 days."""
    seconds = round(float(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{seconds / 86400:,.1f} days"


def _problem(path: Path, what: str) -> ParameterError:
    return ParameterError(f"{path}: metadata {what}")


def read_metadata(path: Path, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The checked ``metadata`` block of a parameter-set file (read with ``values`` if already loaded).

    Raises ParameterError naming the file and the field when the block is missing or malformed.
    """
    path = Path(path)
    if values is None:
        import yaml

        values = yaml.safe_load(path.read_text(encoding="utf8")) or {}
    meta = values.get(METADATA_KEY) if isinstance(values, Mapping) else None
    if not isinstance(meta, Mapping):
        raise _problem(path, f"block missing: add a '{METADATA_KEY}:' mapping (hardware, devices, memory, measured)")
    for key in ("hardware", "memory"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise _problem(path, f"field {key!r} must be a non-empty string")
    if meta.get("devices") not in DEVICES:
        raise _problem(path, f"field 'devices' must be one of {', '.join(DEVICES)}; got {str(meta.get('devices'))[:40]!r}")
    measured = meta.get("measured")
    if not isinstance(measured, Mapping) or measured.get("source") not in SOURCES[1:]:
        raise _problem(path, f"field 'measured' must be a mapping with source one of {', '.join(SOURCES[1:])}")
    if measured["source"] in ("store", "gpu_check") and not isinstance(measured.get("path"), str):
        raise _problem(path, f"field 'measured' with source {measured['source']!r} needs a 'path'")
    also = measured.get("also", [])
    if not (isinstance(also, list) and all(isinstance(a, str) for a in also)) or (also and measured["source"] != "store"):
        raise _problem(path, "field 'measured.also' must be a list of further store paths (source 'store' only)")
    return dict(meta)


def _store_seconds(path: Path, keys: set[str] | None = None) -> tuple[float | None, str, int]:
    """Sum of the records' ``wall_s`` in a results store (the runs ran one at a time), the date of
    the last record and the number of distinct runs, counting only records whose key is in ``keys``
    when given."""
    total, last, seen = 0.0, "", set()
    for line in path.read_text(encoding="utf8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(rec, dict) and isinstance(rec.get("wall_s"), (int, float))):
            continue
        key = rec.get("key")
        if (keys is not None and key not in keys) or key in seen:
            continue
        seen.add(key)
        total += float(rec["wall_s"])
        last = max(last, str(rec.get("finished_at", "")))
    return (total if seen else None), last[:10], len(seen)


def _execution_record(notebook: Path) -> tuple[float | None, str]:
    nb = json.loads(Path(notebook).read_text(encoding="utf8"))
    meta = nb.get("metadata", {})
    records = [(r.get("end_time") or "", r.get("duration")) for r in
               (meta.get("lowrank_execution"), meta.get("papermill")) if isinstance(r, dict)]
    records = [r for r in records if isinstance(r[1], (int, float))]
    if not records:
        return None, ""
    end, seconds = max(records)
    return float(seconds), str(end)[:10]


def measured_time(root: Path, notebook: Path, meta: Mapping[str, Any] | None,
                  keys: set[str] | None = None) -> Measured:
    """The measured wall time of a scale: the notebook's execution record for the default run
    (``meta`` None), else what the metadata's ``measured`` names. ``keys``: the run keys of the
    set's grid; a store holding only some of them is reported in progress, not measured."""
    if meta is None:
        seconds, when = _execution_record(notebook)
        return Measured(seconds, "execution_record", notebook.name, when)
    m = meta["measured"]
    if m["source"] in ("none", "not_recorded"):
        return Measured(None, m["source"])
    path = Path(root) / m["path"]
    if m["source"] == "store":
        if not path.is_file():
            return Measured(None, "none")
        seconds, when, done = _store_seconds(path, keys)
        # A set whose runs go to more than one store (chapter 07's two more models) names the others.
        for extra in m.get("also", []):
            if (Path(root) / extra).is_file():
                more, more_when, more_done = _store_seconds(Path(root) / extra, keys)
                seconds, when, done = (seconds or 0.0) + (more or 0.0), max(when, more_when), done + more_done
        named = " and ".join([m["path"], *m.get("also", [])])
        if keys is not None and done < len(keys):
            return Measured(None, "store", named, when, done=done, total=len(keys), partial_s=seconds or 0.0)
        return Measured(seconds, "store", named, when)
    if not path.is_file():
        return Measured(None, "none")
    entry = json.loads(path.read_text(encoding="utf8")).get(m.get("key", Path(notebook).stem), {})
    seconds = entry.get("wall_s") if isinstance(entry, dict) else None
    return Measured(float(seconds) if isinstance(seconds, (int, float)) else None, "gpu_check", m["path"],
                    str(entry.get("date", ""))[:10] if isinstance(entry, dict) else "")


def _gpu_rates(root: Path) -> dict[str, float]:
    path = Path(root) / GPU_CHECK_FILE
    if not path.is_file():
        return {}
    rates = json.loads(path.read_text(encoding="utf8")).get("rates", {})
    return {k: float(v) for k, v in rates.items() if isinstance(v, (int, float))}


def estimate(chapter: str, params: Mapping[str, Any], *, device: str | None = None,
             root: Path | None = None) -> Cost | None:
    """The chapter's estimated cost at full, checked ``params`` (None for a chapter without a cost
    model); GPU rates measured by tools/gpu_check.sh in the book folder ``root`` are used when present."""
    try:
        return estimate_cost(chapter, params, device=device, measured=_gpu_rates(root) if root else None)
    except KeyError:
        return None
