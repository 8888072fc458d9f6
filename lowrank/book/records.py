"""A run's ``params.json``: what ran, with which parameters, on what code, and how it ended.

The record is written when the run starts (status ``running``) and rewritten when it ends
(``ok`` or ``failed``, with the message); the revision and code hash come from
:mod:`lowrank.core.provenance`, as on every stored result. A folder is recognised as a failed run of
ours only by this record, so :func:`is_failed_run_record` is the one reading of it.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.files import atomic_write_json
from ..core.provenance import code_hash, git_revision
from .planning import RunPlan

__all__ = ["RECORD", "now", "run_record", "write_record", "mark_failed", "is_failed_run_record"]

RECORD = "params.json"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def run_record(plan: RunPlan, command: str | None) -> dict[str, Any]:
    """The record of a run that is starting."""
    return {
        "chapter": plan.chapter.name,
        "notebook": str(plan.chapter.path),
        "scale": plan.scale,
        "parameter_files": [str(p) for p in plan.files],
        "injected": plan.injected,
        "parameters": plan.parameters,
        "requires": list(plan.requires),
        "kernel": plan.kernel,
        "command": command,
        "status": "running",
        "error": None,
        "started": now(),
        "finished": None,
        "wall_s": None,
        "lowrank_version": __version__,
        "git": git_revision(plan.chapter.path.parent),
        "code_hash": code_hash(),
        "python": platform.python_version(),
        "host": platform.node(),
    }


def write_record(folder: Path, record: dict[str, Any]) -> None:
    atomic_write_json(folder / RECORD, record, indent=2, default=repr)


def mark_failed(folder: Path, why: str) -> None:
    """Turn the record in ``folder`` into a failed run's, if it can be read (else leave it)."""
    try:
        record = json.loads((folder / RECORD).read_bytes())
        record.update(status="failed", error=why)
        write_record(folder, record)
    except (OSError, ValueError):
        pass


def is_failed_run_record(folder: Path) -> bool:
    """Whether ``folder`` holds the record a failed run of ours wrote (status ``failed``)."""
    try:
        record = json.loads((folder / RECORD).read_bytes()[: 1 << 20])
    except (OSError, ValueError):
        return False
    return (isinstance(record, dict) and record.get("status") == "failed" and isinstance(record.get("chapter"), str)
            and "lowrank_version" in record and "started" in record)
