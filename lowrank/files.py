"""Where the book's checkout is, and files written whole or not at all.

A file that a reader may open at any moment (a results record, a checkpoint, a cached tokenizer)
is written under a temporary name beside it, flushed to disk and renamed over the old one:
``os.replace`` is atomic on one file system, so a reader sees the old file or the new one, never
half of one, and a process killed mid-write leaves at most a hidden temporary file behind.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

__all__ = ["PACKAGE_ROOT", "BOOK_ROOT", "in_book", "atomic_write", "atomic_write_text", "atomic_write_json"]

PACKAGE_ROOT = Path(__file__).resolve().parent
# The folder holding the package: the book's checkout when lowrank is imported from one (its
# data/, chapters/ and rules ledger sit there); an installed wheel's site-packages otherwise.
BOOK_ROOT = PACKAGE_ROOT.parent


def in_book(path: str | os.PathLike) -> Path:
    """``path`` as given when it is absolute or exists from the working folder, else relative to
    the book's root, so a committed ``data/results/...`` store is found wherever a notebook runs."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return BOOK_ROOT / p


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any]) -> Path:
    """Replace ``path`` by what ``write(tmp)`` writes to a temporary file beside it; return ``path``.

    ``write`` gets the temporary path and writes the whole file there (``torch.save``, a
    tokenizer's ``save``); the file is synced to disk before the rename. On any error the
    temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Replace ``path`` by ``text`` (UTF-8), atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 1,
                      default: Callable[[Any], Any] | None = None) -> Path:
    """Replace ``path`` by ``obj`` as JSON (``indent``, a final newline), atomically; ``default``
    as in :func:`json.dumps` (``repr`` records values JSON has no type for)."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, default=default) + "\n")
