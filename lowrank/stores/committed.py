"""Files no command may write: the book's committed files, recognised by what they are.

A committed results store, its parameter manifest or the rules ledger changes the book's verdicts
when a command appends to it. A path check alone misses the same file reached another way: a
hard link in another folder, or a symlink, is the committed file under a new name. So a file is
committed when git tracks its path, or when it is the same file (device and inode) as a file git
tracks in the book. Every command that writes a store asks here, through
:func:`lowrank.stores.sweep.store_problem`, before it writes anything.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..core.files import BOOK_ROOT

__all__ = ["RESULTS", "tracked", "ignored", "tracked_files", "committed", "sidecars", "committed_store", "unwritable"]

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
    path = Path(path).absolute()  # git runs in the file's folder: a relative path would name another file
    done = _git(path.parent, "ls-files", "--error-unmatch", "--", str(path))
    return done is not None and done.returncode == 0


def ignored(path: Path) -> bool:
    """Whether git ignores ``path``; without git, only paths under a ``mine/`` folder count as ignored."""
    path = Path(path).absolute()
    done = _git(path.parent, "check-ignore", "-q", "--", str(path))
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
