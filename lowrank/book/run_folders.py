"""A run's output folder: its default name, the checks that make it this run's alone, its lock.

OUTDIR must be new or empty; ``OUTDIR.failed`` may only be a folder a failed run of ours left
(it holds ``FAILED`` and our ``params.json``, status ``failed``), which a later run replaces. A
lock file ``.OUTDIR.lock`` holding the pid keeps a second run off the same OUTDIR; one left by a
process that is gone is ignored.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import OutdirLocked, UsageError
from .guards import inside_sources
from .planning import RunPlan
from .records import is_failed_run_record

__all__ = ["default_outdir", "check_outdir", "failed_path", "our_failed_run", "lock_path", "lock_holder",
           "take_lock"]


def default_outdir(plan: RunPlan, root: Path | None) -> Path:
    base = (root or plan.chapter.path.parent) / "runs" / plan.chapter.name
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = base / f"{stamp}-{plan.params_hash}"
    k = 2
    while out.exists() or failed_path(out).exists() or lock_holder(out):
        out, k = base / f"{stamp}-{plan.params_hash}-{k}", k + 1
    return out


def check_outdir(outdir: Path, root: Path | None = None) -> Path:
    """Refuse (UsageError) a run folder this run could not create and own; return it resolved.

    Refused: OUTDIR inside the sources of the book at ``root`` (``chapters/``, ...) or holding it;
    OUTDIR exists and is a file or a non-empty folder; OUTDIR.failed exists and is not a folder
    an earlier failed run left (:func:`our_failed_run`); a parent that is a file or cannot be
    written; another live run holding OUTDIR's lock."""
    outdir = Path(outdir).expanduser().absolute()
    if root is not None:
        why = inside_sources(outdir.resolve(), Path(root).resolve())
        if why:
            raise UsageError(f"output folder {outdir}: {why}; choose a folder outside it, e.g. "
                             f"{Path(root) / 'runs' / outdir.name}")
    if outdir.is_symlink() or (outdir.exists() and (not outdir.is_dir() or any(outdir.iterdir()))):
        raise UsageError(f"output folder {outdir} already exists and is not empty; "
                         "choose another -o or remove it")
    failed = failed_path(outdir)
    if failed.is_symlink() or (failed.exists() and not our_failed_run(failed)):
        raise UsageError(f"{failed} exists and is not a failed run's folder (a failed run would replace it); "
                         "move it away or choose another -o")
    parent = next((p for p in outdir.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise UsageError(f"output folder {outdir}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"output folder {outdir}: cannot write in {parent} (permission denied)")
    holder = lock_holder(outdir)
    if holder:
        raise OutdirLocked(f"output folder {outdir} is being written by another run (pid {holder}); "
                         "choose another -o")
    return outdir.resolve()


def our_failed_run(folder: Path) -> bool:
    """Whether ``folder`` is what a failed run of ours left: a real folder holding ``FAILED``
    and the ``params.json`` record we wrote, status ``failed``. Only such a folder is ever replaced;
    a folder that merely holds a file named ``FAILED`` is someone else's."""
    if folder.is_symlink() or not folder.is_dir() or not (folder / "FAILED").is_file():
        return False
    return is_failed_run_record(folder)


def lock_path(outdir: Path) -> Path:
    return outdir.with_name(f".{outdir.name}.lock")


def lock_holder(outdir: Path) -> int | None:
    """The pid of a live process holding OUTDIR's lock, else None (a stale lock is ignored)."""
    try:
        pid = int(lock_path(outdir).read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def take_lock(outdir: Path) -> Path:
    lock = lock_path(outdir)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = lock_holder(outdir)
            if holder:
                raise OutdirLocked(f"output folder {outdir} is being written by another run (pid {holder}); "
                                 "choose another -o") from None
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return lock
    raise UsageError(f"cannot lock output folder {outdir} ({lock} keeps reappearing)")


def failed_path(outdir: Path) -> Path:
    return outdir.with_name(outdir.name + ".failed")
