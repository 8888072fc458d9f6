"""Every command that writes, held to one standard: a table of commands a hostile user would type and
what each must do (exit status, the words of its one line), with the checkout's ``git status`` and
the committed long store and its manifest byte-identical after each.

The commands: the budget command that grows chapter 04's store, chapter 06's store command, the
rules-ledger CLI, the train CLI, and ``lowrank run``/``lowrank book`` on the stores other chapters
own. Rows run in this process
through each command's ``main``; signals, concurrent writers and a full disk run in fresh
interpreters."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from helpers import ROOT, default_sigint

LONG_04 = ROOT / "data" / "results" / "04_head_size_training_long.jsonl"
LONG_04_MANIFEST = ROOT / "data" / "results" / "04_head_size_training_long.params.json"
BUDGET_04 = ROOT / "data" / "results" / "04_head_size_budget.jsonl"
LONG_06 = ROOT / "data" / "results" / "06_rank_saturation_long.jsonl"
LEDGER = ROOT / "data" / "rules_ledger.jsonl"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
KEPT = (LONG_04, LONG_04_MANIFEST, BUDGET_04, LONG_06, LEDGER)


def _git_status() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored=no"], capture_output=True,
                          text=True)
    return done.stdout if done.returncode == 0 else "(no git)"


def _digests() -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in KEPT}


LINKS = ROOT / "runs" / ".test-links"


@pytest.fixture(autouse=True)
def _no_links_left():
    yield
    if LINKS.is_dir():
        for p in LINKS.iterdir():
            p.unlink()
        LINKS.rmdir()


def _link(target: Path, tmp: Path, name: str) -> Path:
    """A hard link to ``target`` in ``tmp``, or in the book's git-ignored runs/ when ``tmp`` is on
    another file system (hard links cannot cross one); a case then names it through ``{tmp}/name``,
    a symlink to the hard link."""
    try:
        os.link(target, tmp / name)
        return tmp / name
    except OSError:
        pass
    LINKS.mkdir(parents=True, exist_ok=True)
    try:
        os.link(target, LINKS / name)
    except OSError:
        pytest.skip("no hard link to the committed store can be made here")
    (tmp / name).symlink_to(LINKS / name)
    return tmp / name


def _ledger_copy(tmp: Path, edit: Callable[[bytes], bytes] = lambda b: b, name: str = "ledger.jsonl") -> Path:
    path = tmp / name
    path.write_bytes(edit(LEDGER.read_bytes()))
    return path


# --- the table ---------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    command: str                      # budget, ch06long, ledger, train or lowrank
    args: list[str]                   # "{tmp}" is the test's folder
    setup: Callable[[Path], None] = lambda tmp: None
    status: int = 2
    words: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()        # files under {tmp} that must be byte-identical afterwards
    env: dict = field(default_factory=dict)


def _applog(tmp: Path) -> None:
    (tmp / "applog.jsonl").write_text('{"level": "info", "msg": "started"}\n')
    (tmp / "applog.params.json").write_text('{"mine": true}\n')


def _manifest_of_another(tmp: Path) -> None:
    (tmp / "s.jsonl").write_text("")
    (tmp / "s.params.json").write_text(json.dumps({"experiment": "04_head_size_training_long"}) + "\n")


def _fifo(tmp: Path, name: str) -> None:
    os.mkfifo(tmp / name)


def _no_final_newline(b: bytes) -> bytes:
    return b.rstrip(b"\n")


def _cut_last_line(b: bytes) -> bytes:
    return b + b'{"event": "register", "claim": "barr'


def _line(b: bytes, text: bytes) -> bytes:
    return b + text + b"\n"


FP = "0" * 64
CASES = [
    # The budget command: nothing written beside a store that is not its own.
    Case("budget-committed-long-store", "budget", ["--store", str(LONG_04)], words=("is committed",)),
    Case("budget-hard-link-to-committed", "budget", ["--store", "{tmp}/hl.jsonl"],
         setup=lambda t: _link(LONG_04, t, "hl.jsonl"), words=("the same file as", "which git tracks")),
    Case("budget-symlink-to-committed", "budget", ["--store", "{tmp}/sym.jsonl"],
         setup=lambda t: (t / "sym.jsonl").symlink_to(BUDGET_04), words=("is committed",)),
    Case("budget-user-log", "budget", ["--store", "{tmp}/applog.jsonl"], setup=_applog,
         words=("not a results store",), kept=("applog.jsonl", "applog.params.json")),
    Case("budget-another-chapters-store", "budget", ["--store", "{tmp}/s6.jsonl"],
         setup=lambda t: (t / "s6.jsonl").write_bytes(LONG_06.read_bytes()), words=("ch06_increment_long",),
         kept=("s6.jsonl",)),
    Case("budget-manifest-of-another-experiment", "budget", ["--store", "{tmp}/s.jsonl"],
         setup=_manifest_of_another, words=("manifest", "04_head_size_training_long"),
         kept=("s.jsonl", "s.params.json")),
    Case("budget-manifest-of-no-experiment", "budget", ["--store", "{tmp}/s.jsonl"],
         setup=lambda t: (t / "s.params.json").write_text('{"mine": true}\n'), words=("manifest", "names no experiment"),
         kept=("s.params.json",)),
    Case("budget-fifo", "budget", ["--store", "{tmp}/f.jsonl"], setup=lambda t: _fifo(t, "f.jsonl"),
         words=("not a regular file",)),
    Case("budget-workers-not-int", "budget", ["--store", "{tmp}/n.jsonl", "--workers", "x"],
         words=("--workers", "invalid int value")),
    Case("budget-unknown-option", "budget", ["--store", "{tmp}/n.jsonl", "--bogus"], words=("--bogus",)),
    # Chapter 06's store command: the same guard.
    Case("ch06-long-committed-store", "ch06long", ["--store", str(LONG_06)], words=("is committed",)),
    Case("ch06-long-hard-link", "ch06long", ["--store", "{tmp}/h6.jsonl"],
         setup=lambda t: _link(LONG_06, t, "h6.jsonl"), words=("the same file as",)),
    Case("ch06-long-chapter-04s-store", "ch06long", ["--store", "{tmp}/s4.jsonl"],
         setup=lambda t: (t / "s4.jsonl").write_bytes(LONG_04.read_bytes()), words=("'04_head_size_training'",),
         kept=("s4.jsonl",)),
    # The ledger: damaged lines named, nothing appended after them.
    Case("ledger-a-fifo", "ledger", ["--ledger", "{tmp}/l.jsonl", "register", "barrier", "--data-seen", "no"],
         setup=lambda t: _fifo(t, "l.jsonl"), words=("not a regular file",)),
    Case("ledger-missing", "ledger", ["--ledger", "{tmp}/none.jsonl", "status"], words=("no such file",)),
    Case("ledger-empty-reason", "ledger", ["--ledger", "{tmp}/ledger.jsonl", "amend", "barrier", "--reason", "",
                                          "--data-seen", "yes", "--before", "a", "--after", "b"],
         setup=lambda t: _ledger_copy(t), words=("--reason", "empty"), kept=("ledger.jsonl",)),
    Case("ledger-data-seen-maybe", "ledger", ["--ledger", "{tmp}/ledger.jsonl", "register", "barrier",
                                             "--data-seen", "maybe"],
         setup=lambda t: _ledger_copy(t), words=("yes or no", "'maybe'"), kept=("ledger.jsonl",)),
    Case("ledger-unknown-claim", "ledger", ["--ledger", "{tmp}/ledger.jsonl", "register", "no-such-claim",
                                           "--data-seen", "no"],
         setup=lambda t: _ledger_copy(t), words=("unknown claim 'no-such-claim'",), kept=("ledger.jsonl",)),
    Case("ledger-register-twice", "ledger", ["--ledger", "{tmp}/ledger.jsonl", "register", "barrier",
                                            "--data-seen", "no"],
         setup=lambda t: _ledger_copy(t), words=("registered already",), kept=("ledger.jsonl",)),
    *(Case(f"ledger-{damage}-{verb}", "ledger", ["--ledger", "{tmp}/ledger.jsonl" if damage != "a-folder" else "{tmp}",
                                                  *argv], setup=setup, words=words,
           kept=("ledger.jsonl",) if damage != "a-folder" else ())
      for damage, (setup, words) in {
          "glued-line": (lambda t: _ledger_copy(t, _no_final_newline), ("no final newline", "ledger.jsonl:")),
          "cut-line": (lambda t: _ledger_copy(t, _cut_last_line), ("not JSON", "cut short")),
          "bad-date": (lambda t: _ledger_copy(t, lambda b: _line(b, json.dumps(
              {"event": "register", "claim": "x", "date": "2026-13-45", "fingerprint": FP}).encode())),
              ("2026-13-45", "is not a date")),
          "unknown-key": (lambda t: _ledger_copy(t, lambda b: _line(b, b'{"colour": "red"}')),
                          ("unknown key 'colour'",)),
          "not-utf8": (lambda t: _ledger_copy(t, lambda b: _line(b, b"\xff\xfe")), ("0xff", "not UTF-8")),
          "a-folder": (lambda t: None, ("is a folder",)),
      }.items()
      for verb, argv in {
          "status": ["status"],
          "register": ["register", "barrier", "--data-seen", "no"],
          "amend": ["amend", "barrier", "--reason", "r", "--data-seen", "yes", "--before", "a", "--after", "b"],
      }.items()),
    # The train CLI: files that never end, and a key given twice.
    Case("train-config-fifo", "train", ["--config", "{tmp}/cfg", "--out-dir", "{tmp}/run"],
         setup=lambda t: _fifo(t, "cfg"), words=("not a regular file",)),
    Case("train-config-dev-zero", "train", ["--config", "/dev/zero", "--out-dir", "{tmp}/run"],
         words=("/dev/zero", "not a regular file")),
    Case("train-config-duplicate-key", "train", ["--config", "{tmp}/cfg.json", "--out-dir", "{tmp}/run"],
         setup=lambda t: (t / "cfg.json").write_text('{"d_model": 64, "d_model": 32}'),
         words=("'d_model' is given twice",)),
    Case("train-unknown-option", "train", ["--config", "{tmp}/cfg.json", "--bogus"], words=("--bogus",)),
    # lowrank run and book: another chapter's store, a link to a committed one, YAML 1.1 words.
    Case("run-hard-link-as-results-store", "lowrank", ["run", "04", "--scale", "smoke", "-p", "results_store",
                                                       "{tmp}/hl.jsonl", "--dry-run"],
         setup=lambda t: _link(LONG_04, t, "hl.jsonl"), words=("the same file as",)),
    Case("run-04-long-store-of-chapter-06", "lowrank", ["run", "04", "--scale", "smoke", "-p", "long_store",
                                                        str(LONG_06), "--dry-run"],
         words=("long_store", "ch06_increment_long")),
    Case("run-06-reads-chapter-04s-store", "lowrank", ["run", "06", "--scale", "smoke", "-p", "increment_store",
                                                       str(LONG_04), "--dry-run"],
         words=("increment_store", "'04_head_size_training'")),
    Case("run-corpus-no", "lowrank", ["run", "04", "--scale", "smoke", "-p", "corpus", "no", "--dry-run"],
         words=("'no'", "boolean False")),
    Case("run-device-on", "lowrank", ["run", "04", "--scale", "smoke", "-p", "device", "on", "--dry-run"],
         words=("'on'", "boolean True")),
    Case("book-dry-run-out-home", "lowrank", ["book", "--dry-run", "--out", "~"],
         setup=lambda t: (t / "home").mkdir() or (t / "home" / ".profile").write_text("mine\n"),
         env={"HOME": "{tmp}/home"}, words=("--out", "not empty")),
    Case("book-dry-run-unknown-parameter", "lowrank", ["book", "--dry-run", "-p", "nope", "1"],
         words=("no chapter has a parameter 'nope'",)),
    Case("book-dry-run-negative-seed", "lowrank", ["book", "--dry-run", "-p", "seed", "-1"],
         words=("'seed' = -1",)),
]


def _main(command: str):
    if command == "budget":
        from lowrank.experiments.head_size_training.budget import main
    elif command == "ch06long":
        from lowrank.experiments.rank_saturation.long import main
    elif command == "ledger":
        from lowrank.experiments.ledger import main
    elif command == "train":
        from lowrank.train import main
    else:
        from lowrank.book.cli import main
    return main


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_writer_refuses_in_one_line_and_changes_nothing(case, tmp_path, capsys, monkeypatch):
    case.setup(tmp_path)
    fill = lambda s: s.replace("{tmp}", str(tmp_path))  # noqa: E731
    for name, value in case.env.items():
        monkeypatch.setenv(name, fill(value))
    kept = {name: (tmp_path / name).read_bytes() for name in case.kept}
    before, digests = _git_status(), _digests()
    listing = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    rc = _main(case.command)([fill(a) for a in case.args])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == case.status, err
    assert len(lines) == 1 and "Traceback" not in err and "usage:" not in err, err
    for w in case.words:
        assert w in err, f"{w!r} not in {err!r}"
    assert _git_status() == before, "the checkout changed"
    assert _digests() == digests, "a committed file changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == listing, "a file was written beside the inputs"
    for name, data in kept.items():
        assert (tmp_path / name).read_bytes() == data, f"{name} changed"


def test_the_table_covers_every_writer():
    assert Counter(c.command for c in CASES).keys() == {"budget", "ch06long", "ledger", "train", "lowrank"}
    assert len({c.id for c in CASES}) == len(CASES)


# --- whole records: a full disk ----------------------------------------------------------------

_FULL_DISK = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
path = sys.argv[1]
limit = os.path.getsize(path) + 20  # the next record fits only in part: a short write, then a failure
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
"""


def _full_disk(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _FULL_DISK + code, *args], capture_output=True, text=True,
                          env=ENV, timeout=300)


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file size limit on this system")
def test_a_store_append_that_runs_out_of_space_leaves_no_half_record(tmp_path):
    from lowrank.stores.sweep import ResultStore
    from lowrank.train import run_key

    store = tmp_path / "s.jsonl"
    ResultStore(store).append({"key": run_key({"k": 0}), "config": {"k": 0}, "metrics": {"v": 1.0}})
    data = store.read_bytes()
    done = _full_disk("""
from lowrank.stores.sweep import ResultStore
from lowrank.train import run_key
try:
    ResultStore(path).append({"key": run_key({"k": 1}), "config": {"k": 1}, "metrics": {"v": [0.5] * 200}})
except OSError as e:
    print("refused", e.errno)
""", str(store))
    assert "refused" in done.stdout, done.stderr
    assert store.read_bytes() == data  # the short write was cut back
    assert len(ResultStore(store).records()) == 1


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file size limit on this system")
def test_a_ledger_append_that_runs_out_of_space_leaves_the_ledger_as_it_was(tmp_path):
    ledger = _ledger_copy(tmp_path, lambda b: b"\n".join(ln for ln in b.split(b"\n") if b'"barrier"' not in ln))
    data = ledger.read_bytes()
    done = _full_disk("""
from lowrank.experiments.ledger import main
raise SystemExit(main(["--ledger", path, "register", "barrier", "--data-seen", "no", "--note", "n" * 500]))
""", str(ledger))
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "nothing was appended" in done.stderr, done.stderr
    assert ledger.read_bytes() == data


def test_a_store_append_whose_write_fails_is_cut_back(tmp_path, monkeypatch):
    """The same, without a file size limit: the write fails part-way."""
    from lowrank.core import files
    from lowrank.stores.sweep import ResultStore
    from lowrank.train import run_key

    store = tmp_path / "s.jsonl"
    ResultStore(store).append({"key": run_key({"k": 0}), "config": {"k": 0}, "metrics": {"v": 1.0}})
    data = store.read_bytes()
    real = os.write
    calls = []

    def half_then_full(fd, b):
        calls.append(len(b))
        if len(calls) == 1:
            return real(fd, b[: len(b) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        ResultStore(store).append({"key": run_key({"k": 1}), "config": {"k": 1}, "metrics": {"v": 2.0}})
    monkeypatch.undo()
    assert store.read_bytes() == data and len(calls) == 2


# --- the ledger under two writers --------------------------------------------------------------

@pytest.mark.slow
def test_two_registers_of_one_claim_at_once_register_it_once(tmp_path):
    ledger = _ledger_copy(tmp_path, lambda b: b"\n".join(ln for ln in b.split(b"\n") if b'"barrier"' not in ln))
    n_before = len(ledger.read_text().splitlines())
    cmd = [sys.executable, "-m", "lowrank.experiments.ledger", "--ledger", str(ledger), "register", "barrier",
           "--data-seen", "no", "--note", "twice"]
    procs = [subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(rc for rc, _ in results) == [0, 2], results
    loser = next(err for rc, err in results if rc == 2)
    assert len(loser.strip().splitlines()) == 1 and "registered already" in loser, loser
    from lowrank.experiments.ledger import read_ledger

    events = read_ledger(ledger)
    assert [e.claim for e in events].count("barrier") == 1
    assert len(ledger.read_text().splitlines()) == n_before + 1


# --- signals: one line, 130 for Ctrl-C, 143 for SIGTERM -----------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_the_budget_command_ends_on_a_signal_in_one_line(tmp_path, sig, status):
    store = tmp_path / "s.jsonl"
    before = _git_status()
    p = subprocess.Popen([sys.executable, "-m", "lowrank.experiments.head_size_training", "--store", str(store)],
                         env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_sigint)
    try:
        deadline = time.time() + 120
        # The manifest is written once every input is checked and the signal handlers are set.
        while not (tmp_path / "s.params.json").exists() and time.time() < deadline and p.poll() is None:
            time.sleep(0.1)
        assert p.poll() is None, p.communicate()[1]
        time.sleep(1.0)
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == status, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert ("interrupted" if sig == "SIGINT" else "terminated by SIGTERM") in err and "resumes" in err, err
    assert _git_status() == before


# --- chapter 06 never reads another chapter's store as its own -----------------------------------

def test_chapter_06_refuses_chapter_04s_store():
    from lowrank.experiments.rank_saturation import store as st

    with pytest.raises(ValueError, match="'04_head_size_training'"):
        st.read_store(LONG_04, {})  # refused before the grid's parameters are read


def test_a_sweep_never_appends_to_a_committed_store_under_another_name(tmp_path):
    from lowrank.stores.sweep import sweep

    link = _link(LONG_04, tmp_path, "hl.jsonl")
    digests = _digests()
    try:
        with pytest.raises(ValueError, match="is a committed file"):
            sweep([{"k": "new"}], experiment="04_head_size_training", store=link, runs_dir=tmp_path / "runs",
                  run_fn=lambda c, run_dir: {"v": 1.0}, progress=False)
    finally:
        link.unlink()
    assert _digests() == digests and not (tmp_path / "runs").exists()


def test_a_ledger_without_its_final_newline_still_reads_for_the_book(tmp_path):
    from lowrank.experiments.ledger import LedgerError, read_ledger

    ledger = _ledger_copy(tmp_path, _no_final_newline)
    assert len(read_ledger(ledger)) == len(read_ledger(LEDGER))  # the verdict table reads it
    with pytest.raises(LedgerError, match="no final newline"):
        read_ledger(ledger, for_append=True)  # an append would glue its event onto the last line
