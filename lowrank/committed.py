"""Files no command may write: the book's committed files, recognised by what they are.

A committed results store, its parameter manifest or the rules ledger changes the book's verdicts
when a command appends to it. A path check alone misses the same file reached another way: a
hard link in another folder, or a symlink, is the committed file under a new name. So a file is
committed when git tracks its path, or when it is the same file (device and inode) as a file git
tracks in the book. Every command that writes (``lowrank run``, ``lowrank book``, the budget
command, the ledger) asks here before it writes anything.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Collection
from pathlib import Path

from .files import BOOK_ROOT

__all__ = ["RESULTS", "tracked", "ignored", "tracked_files", "committed", "sidecars", "committed_store", "unwritable",
           "store_problem"]

RESULTS = Path("data") / "results"


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess | None:
    """``git -C folder ARGS`` (None: no git, or it could not run)."""
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None


def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` (a file, or any file under a folder) in the repository holding it."""
    done = _git(Path(path).parent, "ls-files", "--error-unmatch", "--", str(path))
    return done is not None and done.returncode == 0


def ignored(path: Path) -> bool:
    """Whether git ignores ``path``; without git, only paths under a ``mine/`` folder count as ignored."""
    done = _git(Path(path).parent, "check-ignore", "-q", "--", str(path))
    if done is not None and done.returncode in (0, 1):
        return done.returncode == 0
    return "mine" in Path(path).parts


def tracked_files(root: Path) -> list[Path]:
    """Every file git tracks in the repository at ``root`` (none without git)."""
    done = _git(Path(root), "ls-files", "-z")
    if done is None or done.returncode != 0:
        return []
    return [Path(root) / name for name in done.stdout.decode("utf8", "surrogateescape").split("\0") if name]


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)  # follows symlinks: a link to a committed file is that file
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def committed(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path | None:
    """The committed file that ``path`` is, or None: ``path`` itself when git tracks it, or the
    file git tracks in the book at ``root`` (default: the book holding this package) that has
    ``path``'s device and inode (a hard link or a symlink to it)."""
    path = Path(path)
    if tracked(path):
        return path
    me = _identity(path)
    if me is None:
        return None
    roots = dict.fromkeys(Path(r).resolve() for r in (root, BOOK_ROOT) if r is not None)
    for book in roots:
        for name in tracked_files(book):
            if _identity(name) == me:
                return name
    return None


def sidecars(store: Path) -> list[Path]:
    """The files a sweep keeps beside its store: the parameter manifest and the run folders."""
    return [store.with_name(store.stem + ".params.json"), store.with_name(store.stem + "-runs")]


def committed_store(store: Path, root: Path | None = None) -> str | None:
    """Why no run may write ``store`` (resolved) or the files beside it, or None: one of them is a
    committed file (by path or by identity), or the store lies in the book's committed results
    folder without git ignoring it there."""
    for p in (store, *sidecars(store)):
        same = committed(p, root)
        if same is not None:
            alias = "" if same == p else f" (the same file as {same}, which git tracks)"
            return f"{p} is committed{alias or ' (git tracks it)'}; runs never write to a committed store"
    for book in dict.fromkeys(Path(r).resolve() for r in (root, BOOK_ROOT) if r is not None):
        results = (book / RESULTS).resolve()
        if (store == results or results in store.parents) and not ignored(store):
            return (f"it lies in {results}, which holds the book's committed stores; runs write there only "
                    f"under a git-ignored folder such as {results / 'mine'}")
    return None


def unwritable(path: Path) -> str | None:
    """Why a command could not create or append to ``path``, or None: checked first, it is an input
    error (status 2) instead of an OSError minutes later."""
    target = path if path.exists() else next((p for p in path.parents if p.exists()), None)
    if target is None:
        return None
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        return f"cannot write {'in ' if target.is_dir() else ''}{target} (permission denied)"
    return None


def store_problem(store: Path, experiments: Collection[str] | None = None, root: Path | None = None, *,
                  written: bool = True) -> str | None:
    """Why ``store`` (a resolved path) may not be used as a results store, or None.

    Every store: a ``.jsonl`` file, not a folder; when it exists, a store a sweep wrote, of one of
    ``experiments`` (None: any). A store only read must exist. A store ``written`` must also not be,
    nor have beside it, a committed file (:func:`committed_store`), must be writable, and a manifest
    beside it must be a JSON object naming one of ``experiments`` if it names an experiment: nothing
    is written beside a file that belongs to something else."""
    from .sweep import foreign_store

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
        if experiments is not None and "experiment" in old and old["experiment"] not in experiments:
            return (f"its manifest {manifest} is of experiment {str(old['experiment'])[:60]!r}, not of "
                    f"{' or '.join(repr(e) for e in sorted(experiments))}")
    return None
