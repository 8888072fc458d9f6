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

A path parameter (a chapter's ``PATHS``) is resolved against the caller's folder and checked for
its kind by :func:`check_path`; every refusal is a :class:`~lowrank.book.errors.UsageError`.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .chapters import Chapter
from .errors import UsageError
from .params import CORPUS_NAMES, MANIFESTS, PATHS, short_repr

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


def check_path(name: str, value: str, kind: str, base: Path, source: str, root: Path) -> str:
    """A path parameter resolved against ``base`` (the caller's folder) and checked for its kind."""
    if kind == "corpus" and value in CORPUS_NAMES:
        return value
    path = (base / Path(value).expanduser()).resolve()
    bad = None
    if kind in ("store", "read_store"):
        from ..sweep import foreign_store

        if path.suffix != ".jsonl":
            bad = "a results store must be a .jsonl file"
        elif path.is_dir():
            bad = "it is a folder; a results store is a .jsonl file"
        elif kind == "read_store" and not path.is_file():
            bad = "no such results store (it is read, never written)"
        elif path.exists() and foreign_store(path):
            bad = f"it exists and is not a results store ({foreign_store(path)}); nothing is appended to it"
        elif any(p.exists() and not p.is_dir() for p in path.parents):
            bad = "a file stands where its folder should be"
        elif kind == "store":
            bad = committed_store(path, root) or _unwritable(path)
    elif kind == "folder":
        if path.exists() and not path.is_dir():
            bad = "it is a file; a folder is expected"
        else:
            bad = _unwritable(path)
    elif kind == "input_folder":
        if not path.is_dir():
            bad = "no such folder"
    elif kind == "corpus":
        if not path.exists():
            bad = f"no such file or folder, and not a corpus name ({', '.join(CORPUS_NAMES)})"
        elif path.is_dir() and next((f for f in path.rglob("*.txt") if f.is_file()), None) is None:
            bad = "a corpus folder must hold .txt files (one document each), and this one holds none"
    if bad:
        raise UsageError(f"parameter {name!r} = {short_repr(value)} (set {source}) resolves to {path}: {bad}")
    return str(path)


def check_manifests(chapter: Chapter, merged: dict, injected: dict, sources: dict) -> None:
    """A store written with a parameter manifest beside it takes only runs of the same parameters."""
    for name, kind in PATHS.get(chapter.name, {}).items():
        if kind != "store" or injected.get(name) is None or name not in MANIFESTS.get(chapter.name, ()):
            continue
        from ..sweep import manifest_conflict

        store = Path(injected[name])
        why = manifest_conflict(sidecars(store)[0], merged)
        if why:
            raise UsageError(f"parameter {name!r} = {short_repr(str(store))} (set {sources[name]}): {why}")


def _unwritable(path: Path) -> str | None:
    """Why a run could not create or append to ``path``, or None: checked here, it is an input
    error (status 2) instead of an OSError from a cell minutes later."""
    target = path if path.exists() else next((p for p in path.parents if p.exists()), None)
    if target is None:
        return None
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        return f"cannot write {'in ' if target.is_dir() else ''}{target} (permission denied)"
    return None
