"""Where a run may write: committed stores are read-only, the book's sources are never a run folder.

``lowrank run`` and ``lowrank book`` check every path they will write before a kernel starts:

- a results store (a ``store`` parameter, and the manifest ``<stem>.params.json`` and run folders
  ``<stem>-runs/`` a sweep keeps beside it) must not be a file git tracks, nor lie in the book's
  ``data/results/`` unless git ignores it there (``data/results/mine/``): that folder holds the
  committed long-scale stores the chapters read, and a run appending to one would change the
  book's verdicts with runs of another scale;
- the store must be new, empty or already a store of ours (its records carry their run key,
  config and metrics), and a manifest beside it must hold the same parameters;
- a store read as a chapter's long store must exist and be a store;
- a run folder must not lie inside the book's sources (``chapters/``, ``_ext/``, ``appendix/``,
  ``lowrank/``) nor hold the book.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE_FOLDERS = ("chapters", "_ext", "appendix", "lowrank")
RESULTS = Path("data") / "results"


def _git(folder: Path, *args: str) -> int | None:
    """Exit status of ``git -C folder ARGS`` (None: no git, or it could not run)."""
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=20).returncode
    except (OSError, subprocess.SubprocessError):
        return None


def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` (a file, or any file under a folder) in the repository holding it."""
    return _git(path.parent, "ls-files", "--error-unmatch", "--", str(path)) == 0


def ignored(path: Path) -> bool:
    """Whether git ignores ``path``; without git, only paths under a ``mine/`` folder count as ignored."""
    status = _git(path.parent, "check-ignore", "-q", "--", str(path))
    if status in (0, 1):
        return status == 0
    return "mine" in path.parts


def sidecars(store: Path) -> list[Path]:
    """The files a sweep keeps beside its store: the parameter manifest and the run folders."""
    return [store.with_name(store.stem + ".params.json"), store.with_name(store.stem + "-runs")]


def committed_store(store: Path, root: Path) -> str | None:
    """Why ``store`` (resolved) is a committed store no run may write, or None."""
    for p in (store, *sidecars(store)):
        if tracked(p):
            return f"{p} is committed (git tracks it); runs never write to a committed store"
    results = (root / RESULTS).resolve()
    if (store == results or results in store.parents) and not ignored(store):
        return (f"it lies in {results}, which holds the book's committed stores; runs write there only "
                f"under a git-ignored folder such as {results / 'mine'}")
    return None


def inside_sources(path: Path, root: Path) -> str | None:
    """Why ``path`` (resolved) may not be a run's output folder of the book at ``root``, or None."""
    if path == root or path in root.parents:
        return f"it holds the book itself ({root})"
    for name in SOURCE_FOLDERS:
        folder = root / name
        if folder.is_dir() and (path == folder or folder in path.parents):
            return f"it lies inside the book's sources ({folder})"
    return None
