"""Where a run may write: committed stores are read-only, the book's sources are never a run folder.

``lowrank run`` and ``lowrank book`` check every path they will write before a kernel starts:

- a results store (a ``store`` parameter, and the manifest ``<stem>.params.json`` and run folders
  ``<stem>-runs/`` a sweep keeps beside it) must not be a file git tracks, nor lie in the book's
  ``data/results/`` unless git ignores it there (a hard link or symlink to a committed file is that
  file: :mod:`lowrank.stores.committed` compares device and inode) (``data/results/mine/``): that folder holds the
  committed long-scale stores the chapters read, and a run appending to one would change the
  book's verdicts with runs of another scale;
- the store must be new, empty or already a store of ours (its records carry their run key,
  config and metrics), and a manifest beside it must hold the same parameters;
- a store read as a chapter's long store must exist and be a store;
- a store that exists must hold the chapter's own experiments (``STORE_EXPERIMENTS``): another
  chapter's store would read as an empty one;
- a run folder must not lie inside the book's sources (``chapters/``, ``_ext/``, ``appendix/``,
  ``lowrank/``) nor hold the book.

A path parameter (a chapter's ``PATHS``) is resolved against the caller's folder and checked for
its kind by :func:`check_path`; every refusal is a :class:`~lowrank.book.errors.UsageError`.
"""
from __future__ import annotations

from pathlib import Path

from ..stores.committed import RESULTS, committed_store, ignored, sidecars, tracked, unwritable
from .chapters import Chapter
from .errors import UsageError
from .params import CORPUS_NAMES, MANIFESTS, PATHS, short_repr

__all__ = ["SOURCE_FOLDERS", "RESULTS", "tracked", "ignored", "sidecars", "committed_store", "inside_sources",
           "check_path", "check_manifests"]

SOURCE_FOLDERS = ("chapters", "_ext", "appendix", "lowrank")


def inside_sources(path: Path, root: Path) -> str | None:
    """Why ``path`` (resolved) may not be a run's output folder of the book at ``root``, or None."""
    if path == root or path in root.parents:
        return f"it holds the book itself ({root})"
    for name in SOURCE_FOLDERS:
        folder = root / name
        if folder.is_dir() and (path == folder or folder in path.parents):
            return f"it lies inside the book's sources ({folder})"
    return None


def check_path(name: str, value: str, kind: str, base: Path, source: str, root: Path,
               experiments: tuple[str, ...] | None = None) -> str:
    """A path parameter resolved against ``base`` (the caller's folder) and checked for its kind; a
    store that exists must hold records of one of ``experiments`` (the chapter's, None: any)."""
    if kind == "corpus" and value in CORPUS_NAMES:
        return value
    path = (base / Path(value).expanduser()).resolve()
    bad = None
    if kind in ("store", "read_store"):
        from ..stores.sweep import store_problem  # sweep imports torch: `lowrank list` and `--help` must not

        bad = store_problem(path, experiments, root, written=kind == "store")
    elif kind == "folder":
        if path.exists() and not path.is_dir():
            bad = "it is a file; a folder is expected"
        else:
            bad = unwritable(path)
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
        from ..stores.sweep import manifest_conflict

        store = Path(injected[name])
        why = manifest_conflict(sidecars(store)[0], merged)
        if why:
            raise UsageError(f"parameter {name!r} = {short_repr(str(store))} (set {sources[name]}): {why}")
