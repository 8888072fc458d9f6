"""Where the book's checkout is, and files written whole or not at all.

A file that a reader may open at any moment (a results record, a checkpoint, a cached tokenizer)
is written under a temporary name beside it, flushed to disk and renamed over the old one:
``os.replace`` is atomic on one file system, so a reader sees the old file or the new one, never
half of one, and a process killed mid-write leaves at most a hidden temporary file behind.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

__all__ = ["PACKAGE_ROOT", "BOOK_ROOT", "in_book", "atomic_write", "atomic_write_text", "atomic_write_json", "sha256_file",
           "InputFileError", "read_regular", "Appender", "appending", "append_whole"]

try:  # POSIX; elsewhere O_APPEND single writes are the only guard between writers
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
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


def sha256_file(path: str | os.PathLike) -> str:
    """The sha256 hex digest of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class InputFileError(ValueError):
    """A file given as input that cannot be read as one: the message is a phrase about the file
    ("is a folder", "is not a regular file ..."), for the caller to put after its name."""


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or InputFileError saying why not.

    A FIFO would block the reader forever and ``/dev/zero`` never ends, so anything but a regular
    file is refused before it is opened, and the read is bounded whatever ``st_size`` says."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputFileError("does not exist") from None
    except OSError as e:
        raise InputFileError(f"cannot be read ({e.strerror or type(e).__name__})") from None
    if stat.S_ISDIR(mode):
        raise InputFileError("is a folder")
    if not stat.S_ISREG(mode):
        raise InputFileError("is not a regular file (a device, FIFO or socket)")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise InputFileError(f"cannot be read ({e.strerror or type(e).__name__})") from None
    if len(raw) > limit:
        raise InputFileError(f"is larger than {limit} bytes")
    return raw


class Appender:
    """A file held open for appending under an exclusive lock (see :func:`appending`)."""

    def __init__(self, fd: int, path: Path):
        self.fd, self.path = fd, path

    def ends_mid_line(self) -> bool:
        """Whether the file is not empty and its last byte is not a newline (a cut or unterminated line)."""
        size = os.fstat(self.fd).st_size
        return bool(size) and os.pread(self.fd, 1, size - 1) != b"\n"

    def write(self, data: bytes) -> None:
        """Append ``data`` whole or not at all: a short write is continued, and a write that fails
        part-way (a full disk, a file size limit, a signal) is cut back to the old end of the file
        before the error goes on, so no reader ever sees half a record."""
        size = os.fstat(self.fd).st_size
        try:
            done = 0
            while done < len(data):
                n = os.write(self.fd, data[done:])
                if n <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += n
            os.fsync(self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, size)
                os.fsync(self.fd)
            raise


@contextlib.contextmanager
def appending(path: str | os.PathLike) -> Iterator[Appender]:
    """Hold ``path`` (created if missing) open for appending under an exclusive ``flock`` for the
    ``with`` block: a writer that reads the file, decides and appends does all three before the next
    writer reads."""
    path = Path(path)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield Appender(fd, path)
    finally:
        os.close(fd)  # closing releases the lock


def append_whole(path: str | os.PathLike, data: bytes) -> None:
    """Append one whole record (``data``, ending in a newline) to ``path`` under the lock; a last
    line cut by a killed writer is closed first, so both lines stay apart."""
    with appending(path) as out:
        out.write((b"\n" if out.ends_mid_line() else b"") + data)
