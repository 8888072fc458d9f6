"""The ledger's links to git, on a repository of the test's own: the commit that added an event's
line, whether a record's revision contains it, and the note the verdict table prints."""
import shutil
import subprocess

import pytest

from lowrank.experiments import ledger as L

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="no git")

REGISTER = dict(event="register", claim="x", date="2026-12-01", fingerprint="a" * 64, note="first rule")
AMEND = dict(event="amend", claim="x", date="2026-12-02", fingerprint="b" * 64, previous="a" * 64, data_seen=True,
             reason="Issue 12: a sharper margin", verdict_before="inconclusive", verdict_after="reproduced")


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository whose ledger got its registration in one commit and its amendment in the next:
    (ledger path, first commit, second commit)."""
    _git(tmp_path, "init", "-q")
    for key, value in (("user.email", "t@example.org"), ("user.name", "t"), ("commit.gpgsign", "false")):
        _git(tmp_path, "config", key, value)
    path = tmp_path / "data" / "rules_ledger.jsonl"
    path.parent.mkdir()
    commits = []
    for record in (REGISTER, AMEND):
        L.append_event(record, path)
        _git(tmp_path, "add", str(path))
        _git(tmp_path, "commit", "-q", "-m", record["event"])
        commits.append(_git(tmp_path, "rev-parse", "--short", "HEAD"))
    monkeypatch.setattr(L, "ROOT", tmp_path)
    return path, *commits


def test_an_event_names_the_commit_that_added_its_line(repo):
    path, first, second = repo
    register, amend = L.read_ledger(path)
    assert L.event_commit(register, path) == first and L.event_commit(amend, path) == second
    assert L.event_commit(L.Event(**{**REGISTER, "fingerprint": "c" * 64}), path) == ""   # never committed
    assert L.event_commit(register, path.parent.parent.parent / "elsewhere.jsonl") == ""   # outside the book


def test_a_revision_contains_an_event_or_not(repo):
    path, first, second = repo
    register, amend = L.read_ledger(path)
    assert L.committed_after(register, second, path) is True
    assert L.committed_after(register, first + "+dirty", path) is True
    assert L.committed_after(amend, first, path) is False
    assert L.committed_after(amend, "", path) is None                     # a record without a revision
    assert L.committed_after(amend, "0" * 40, path) is None               # a revision git does not know
    assert L.committed_after(L.Event(**{**REGISTER, "fingerprint": "c" * 64}), second, path) is None


def test_the_note_names_dates_commits_and_verdicts_without_the_tracker(repo):
    path, first, second = repo
    assert L.notes(path)("x") == (
        f"registered 2026-12-01 at {first}, before the data it judges were seen (first rule). "
        f"amended 2026-12-02 at {second}, after the data were seen: a sharper margin; "
        "verdict before: inconclusive; after: reproduced.")
    assert L.notes(path)("y") == "not in the rules ledger"


def test_an_event_not_committed_yet_says_so(repo):
    path, first, second = repo
    L.append_event({**AMEND, "fingerprint": "c" * 64, "previous": "b" * 64, "data_seen": False}, path)
    note = L.notes(path)("x")
    assert note.endswith(f"amended 2026-12-02 at commit unknown, before the data were seen: a sharper margin; "
                         "verdict before: inconclusive; after: reproduced.")
    assert note.count(f" at {second},") == 1


def test_no_commit_is_named_outside_a_repository(repo, tmp_path, monkeypatch):
    path, first, second = repo
    plain = tmp_path / "plain"
    (plain / "data").mkdir(parents=True)
    copy = plain / "data" / "rules_ledger.jsonl"
    copy.write_bytes(path.read_bytes())
    monkeypatch.setattr(L, "ROOT", plain)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    register, _ = L.read_ledger(copy)
    assert L.event_commit(register, copy) == ""


def test_an_event_added_in_a_merge_commit_names_the_merge(repo):
    path, first, second = repo
    root = path.parent.parent
    main = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    _git(root, "checkout", "-q", "-b", "side")
    (root / "other.txt").write_text("x\n")
    _git(root, "add", "other.txt")
    _git(root, "commit", "-q", "-m", "side")
    _git(root, "checkout", "-q", main)
    _git(root, "merge", "-q", "--no-ff", "--no-commit", "side")
    method = dict(AMEND, date="2026-12-03", fingerprint="d" * 64, previous="b" * 64, method=True,
                  verdict_before="reproduced")
    L.append_event(method, path)
    _git(root, "add", str(path))
    _git(root, "commit", "-q", "-m", "merge with an event")
    merge = _git(root, "rev-parse", "--short", "HEAD")
    event = L.read_ledger(path)[-1]
    assert L.event_commit(event, path) == merge
    assert f"fingerprinted anew 2026-12-03 at {merge}" in L.ledger_note("x", path=path)
