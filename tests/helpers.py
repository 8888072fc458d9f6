"""Helpers the tests call directly (fixtures are in conftest.py): the book's command line run in
this process, the one-line refusal every input error must be, the "nothing else changed" check,
and the committed results stores."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from lowrank.book import cli
from lowrank.stores.sweep import ResultStore

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "data" / "results"
PROVENANCE_FIELDS = ("git_revision", "code_hash", "date", "machine", "cpu")


def default_sigint() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C: Python in it raises KeyboardInterrupt, even when
    the tests themselves run in the background (a shell without job control starts a background job
    with SIGINT ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def snapshot(*folders: Path) -> dict:
    """{path: (size, mtime)} of every file and folder below ``folders`` (caches left out)."""
    seen = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".pytest_cache", ".ipynb_checkpoints")]
            for name in filenames + dirnames:
                p = Path(dirpath) / name
                st = p.lstat()
                seen[str(p)] = (st.st_size if p.is_file() else -1, st.st_mtime_ns if p.is_file() else 0)
    return seen


class Unchanged:
    """Snapshots folders; ``check(allow=...)`` asserts nothing changed outside ``allow``.

    The ``unchanged`` fixture's snapshot is retaken right before each command the test runs
    (``lowrank`` below, or ``before_command()``), so files the test itself prepared do not count."""

    active: "Unchanged | None" = None

    def __init__(self, *folders: Path):
        self.folders = folders
        self.reset()

    def reset(self) -> None:
        self.before = snapshot(*self.folders)

    def check(self, *allow: Path) -> None:
        after = snapshot(*self.folders)
        changed = {p for p in set(self.before) | set(after) if self.before.get(p) != after.get(p)}
        changed = {p for p in changed if not any(p == str(a) or p.startswith(str(a) + os.sep) for a in allow)}
        assert not changed, f"changed outside the run's folder: {sorted(changed)[:5]}"


def before_command() -> None:
    if Unchanged.active is not None:
        Unchanged.active.reset()


def lowrank(capsys, *argv) -> tuple[int, str]:
    """``lowrank ARGV`` in this process, on this book for `run` and `book`; (exit status, stderr)."""
    before_command()
    rc = cli.main([argv[0], "--root", str(ROOT), *argv[1:]] if argv and argv[0] in ("run", "book") else list(argv))
    return rc, capsys.readouterr().err


def refused(rc: int, err: str, *words: str) -> None:
    """Exit status 2 and one bounded `lowrank: error:` line holding every word, no traceback."""
    assert rc == 2, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip() and "warning" not in ln]
    assert len(lines) == 1 and lines[0].startswith("lowrank: error: "), err
    assert len(lines[0]) < 1200, f"unbounded message ({len(lines[0])} characters)"
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"


def store_records(path: Path) -> list[dict]:
    """The records of a committed results store; a missing or empty store fails (no silent skip:
    the chapters read these stores at their default scale)."""
    assert path.is_file(), f"the committed store {path} is missing: restore it from git (it is not regenerated here)"
    recs = ResultStore(path).records()
    assert recs, f"{path} holds no record"
    return recs
