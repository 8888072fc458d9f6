"""Where a stored result came from: git revision, a hash of the code, date, machine, CPU.

Every record that :func:`lowrank.stores.sweep.sweep` appends to a results store carries
``provenance()`` (DESIGN.md section 3), so a committed store says which code produced it, when and
on what; with the record's own ``wall_s`` that is enough to judge whether it still applies.
:func:`code_hash` is the sha256 of the package's source files (paths and bytes, in sorted order):
it changes when any line of ``lowrank`` changes, whether or not the change was committed.
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path

from .files import PACKAGE_ROOT

__all__ = ["PACKAGE_ROOT", "code_hash", "git_revision", "cpu_name", "physical_memory", "provenance"]


@functools.lru_cache(maxsize=None)
def code_hash(root: str | os.PathLike = PACKAGE_ROOT) -> str:
    """16 hex digits of the sha256 over every ``*.py`` under ``root`` (relative path and bytes)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"code_hash needs a folder of Python sources, got {str(root)[:200]!r}")
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def git_revision(root: str | os.PathLike = PACKAGE_ROOT) -> str:
    """The checked-out commit (40 hex digits, ``+dirty`` when tracked files differ from it), or
    ``"unknown"`` outside a git checkout (an installed wheel, a source archive)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=None)
def cpu_name() -> str:
    """The CPU model as the kernel names it (``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def physical_memory() -> float | None:
    """Bytes of physical memory of this machine, or None where the system does not say."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def provenance(*, device: str | None = None) -> dict:
    """A JSON-ready dict: git revision, code hash, UTC date, machine, CPU, core count, Python,
    torch (when imported) and the training device (when given)."""
    out = {"git_revision": git_revision(), "code_hash": code_hash(),
           "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": platform.node() or "unknown", "platform": platform.platform(), "cpu": cpu_name(),
           "cpu_count": os.cpu_count(), "python": platform.python_version()}
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = torch.__version__
    if device is not None:
        out["device"] = device
    return out
