"""The rules ledger where `make mutation` found it untested: a claim's fingerprint covers its typed
evidence record and is the same for the same thresholds however they are written; the words of every
refused event; reading (not appending) a ledger, a missing one and one that is not a file; the batch
amendment's date, refusals and thresholds; and the notes, which read the ledger once and name no
commit (and print nothing) when git cannot answer."""
import hashlib
import json
import shutil
from dataclasses import dataclass
from typing import ClassVar

import pytest

from lowrank.experiments import ledger as L
from lowrank.experiments.rule_source import walk
from lowrank.experiments.shared.record import Record
from lowrank.experiments.verdicts import CONTRADICTED, REPRODUCED, Claim, Judgement
from test_ledger import RULE, _module_rule, scratch_module
from test_ledger_commits import repo  # noqa: F401 - a fixture: a repository whose ledger has two commits

EVENT = dict(event="register", claim="x", date="2026-12-01", fingerprint="a" * 64)
AMEND = dict(event="amend", previous="a" * 64, reason="r", verdict_before="inconclusive", verdict_after="reproduced")


# --- the fingerprint -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Real(Record):
    PREFIX: ClassVar[str] = "ch05_"
    x: float


@dataclass(frozen=True)
class _Whole(Record):
    PREFIX: ClassVar[str] = "ch05_"
    x: int


def _positive(e) -> Judgement:
    """Reproduced when x is positive, contradicted otherwise."""
    return Judgement(REPRODUCED if e.x > 0 else CONTRADICTED, f"x = {e.x}")


def test_a_claims_fingerprint_covers_the_record_its_rule_reads():
    real = Claim("x", "p", "05", "s", "X holds", _positive, evidence=_Real)
    whole = Claim("x", "p", "05", "s", "X holds", _positive, evidence=_Whole)
    bare = Claim("x", "p", "05", "s", "X holds", _positive)
    # the same rule reading x as a real or as a whole number is a different decision
    assert L.claim_fingerprint(real) != L.claim_fingerprint(whole)
    assert L.claim_fingerprint(real) == L.fingerprint(_positive, None, _Real) != L.fingerprint(_positive)
    assert L.claim_fingerprint(bare) == L.fingerprint(_positive)
    assert L.fingerprint(_positive, None, _Real) == L.fingerprint(_positive, evidence=_Real)


def test_a_claim_whose_record_changed_is_caught_until_amended():
    real = Claim("x", "p", "05", "s", "X holds", _positive, evidence=_Real)
    whole = Claim("x", "p", "05", "s", "X holds", _positive, evidence=_Whole)
    registered = [L.Event(**{**EVENT, "fingerprint": L.claim_fingerprint(real), "line": 1})]
    assert L.check([real], registered) == []
    assert [m.problem[:22] for m in L.check([whole], registered)] == ["its rule (code, senten"]


TABLE = '''
LIMITS = {"b": 0.2, "a": 0.1}
ALLOWED = frozenset({2, 3})

def rule(h):
    """Reproduced when x is above the limit of its kind."""
    return h["x"] > LIMITS[h["kind"]] and h["n"] in ALLOWED
'''


def test_a_table_of_thresholds_is_fingerprinted_by_value_not_by_the_order_it_is_written_in(tmp_path):
    one = scratch_module(tmp_path, TABLE, "table_a").rule
    other = scratch_module(tmp_path, TABLE.replace('{"b": 0.2, "a": 0.1}', '{"a": 0.1, "b": 0.2}'), "table_b").rule
    changed = scratch_module(tmp_path, TABLE.replace('"a": 0.1', '"a": 0.15'), "table_c").rule
    assert L.fingerprint(one) == L.fingerprint(other) != L.fingerprint(changed)


def test_a_set_of_allowed_values_is_fingerprinted_and_a_changed_member_changes_it(tmp_path):
    one = scratch_module(tmp_path, TABLE, "set_a").rule
    assert L.thresholds(one)["ALLOWED"] == frozenset({2, 3})
    changed = scratch_module(tmp_path, TABLE.replace("frozenset({2, 3})", "frozenset({2, 4})"), "set_b").rule
    assert L.fingerprint(one) != L.fingerprint(changed)


def test_a_fingerprint_is_recomputed_from_what_the_rule_reaches(tmp_path):
    """The format of every fingerprint in the ledger: sha256 of the JSON object of the code and the
    constants the walk reached, keys sorted (in the real tree the committed ledger pins it too,
    tests/test_ledger.py::test_every_rule_is_registered_and_unchanged)."""
    rule = scratch_module(tmp_path, TABLE, "table_d").rule
    for roots in ((rule,), (_positive, None, _Real)):
        reached = walk(*roots)
        payload = json.dumps({"code": list(reached.code), "constants": reached.constants}, sort_keys=True,
                             default=repr)
        assert L.fingerprint(*roots) == hashlib.sha256(payload.encode()).hexdigest()


# --- the words of a refused event ----------------------------------------------------------------

@pytest.mark.parametrize("fields,words", [
    (dict(event="vote"), "event 'vote' is not one of ('register', 'amend')"),
    (dict(fingerprint="abc"), "fingerprint is not a sha256 hex digest"),
    (dict(date="2026-13-01"), "date '2026-13-01' is not a date YYYY-MM-DD"),
    (dict(date="1" * 50), f"date '{'1' * 40}' is not a date YYYY-MM-DD"),
    (dict(date=20261201), "date '20261201' is not a date YYYY-MM-DD"),
    (dict(AMEND, reason="", previous=""), "an amendment needs reason, previous"),
    (dict(AMEND, verdict_before="", verdict_after=""), "an amendment needs verdict_before, verdict_after"),
], ids=["event", "fingerprint", "date", "long date", "number", "reason", "verdicts"])
def test_a_refused_event_says_its_line_and_fault_and_the_ledger_its_fault(tmp_path, fields, words):
    with pytest.raises(ValueError) as info:
        L.Event(**{**EVENT, **fields, "line": 3})
    assert str(info.value) == f"ledger line 3: {words}"
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(EVENT) + "\n" + json.dumps({**EVENT, **fields}) + "\n")
    assert L.scan_ledger(path)[1] == [(2, words)]
    with pytest.raises(L.LedgerError) as info:
        L.read_ledger(path)
    assert str(info.value) == f"{path}:2: not a ledger event: {words}"


def test_an_unknown_key_is_cut_to_forty_characters(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps({**EVENT, "k" * 60: 1}) + "\n")
    [(line, why)] = L.scan_ledger(path)[1]
    assert line == 1 and why.startswith(f"unknown key '{'k' * 37}...'; an event has event, claim, date")


# --- reading the ledger ----------------------------------------------------------------------------

def test_reading_a_ledger_accepts_a_last_line_without_its_newline_and_appending_does_not(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(EVENT))
    events, faults = L.scan_ledger(path)
    assert [e.claim for e in events] == ["x"] and faults == []
    assert [e.line for e in L.read_ledger(path)] == [1]
    with pytest.raises(L.LedgerError, match="no final newline"):
        L.read_ledger(path, for_append=True)


def test_a_missing_ledger_holds_nothing_and_one_that_is_not_a_file_is_named(tmp_path):
    missing = tmp_path / "none.jsonl"
    assert L.scan_ledger(missing) == ([], []) and L.read_ledger(missing) == []
    dangling = tmp_path / "link.jsonl"
    dangling.symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(L.LedgerError) as info:
        L.scan_ledger(dangling)
    assert str(info.value) == f"{dangling}: the rules ledger does not exist; it is a JSON-lines file"
    with pytest.raises(L.LedgerError) as info:
        L.read_ledger(tmp_path)
    assert str(info.value) == f"{tmp_path}: the rules ledger is a folder; it is a JSON-lines file"


# --- the batch amendment ---------------------------------------------------------------------------

def _ledger(tmp_path, *records):
    path = tmp_path / "l.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_amend_changed_records_the_date_given_and_the_thresholds_the_rule_reads(tmp_path):
    rule = _module_rule(tmp_path, RULE, "amend_a")
    claim = Claim("x", "Paper", "05", "sec", "x is large", rule)
    path = _ledger(tmp_path, EVENT)
    [event] = L.amend_changed([claim], {"x": "reproduced"}, reason="method", data_seen=False, path=path,
                              date="2026-01-15")
    assert (event.date, event.fingerprint) == ("2026-01-15", L.claim_fingerprint(claim))
    assert event.thresholds == L.thresholds(rule) and event.thresholds["LIMIT"] == 0.5
    written = L.read_ledger(path)[-1]
    assert (written.date, written.data_seen, written.reason) == ("2026-01-15", False, "method")
    assert written.thresholds["LIMIT"] == 0.5 and written.thresholds == json.loads(json.dumps(event.thresholds))


def test_amend_changed_leaves_untested_and_unregistered_claims_alone(tmp_path):
    rule = _module_rule(tmp_path, RULE, "amend_b")
    claims = [Claim("u", "Paper", "05", "sec", "untested", None, untested="a run at scale"),
              Claim("new", "Paper", "05", "sec", "not registered yet", rule),
              Claim("x", "Paper", "05", "sec", "x is large", rule)]
    path = _ledger(tmp_path, EVENT)
    events = L.amend_changed(claims, {"x": "reproduced"}, reason="method", data_seen=True, path=path,
                             date="2026-01-15")
    assert [e.claim for e in events] == ["x"] and [e.claim for e in L.read_ledger(path)] == ["x", "x"]


def test_amend_changed_names_every_claim_without_a_verdict_and_writes_nothing(tmp_path):
    rule = _module_rule(tmp_path, RULE, "amend_c")
    claims = [Claim(k, "Paper", "05", "sec", "x is large", rule) for k in ("x", "y")]
    path = _ledger(tmp_path, EVENT, {**EVENT, "claim": "y"})
    before = path.read_bytes()
    with pytest.raises(ValueError) as info:
        L.amend_changed(claims, {"y": " "}, reason="method", data_seen=True, path=path)
    assert str(info.value) == "no verdict on the committed outputs for x, y" and path.read_bytes() == before


def test_amend_changed_refuses_a_ledger_whose_last_line_has_no_newline(tmp_path):
    rule = _module_rule(tmp_path, RULE, "amend_d")
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(EVENT))
    with pytest.raises(L.LedgerError, match="no final newline"):
        L.amend_changed([Claim("x", "Paper", "05", "sec", "x", rule)], {"x": "reproduced"}, reason="method",
                        data_seen=True, path=path)
    assert path.read_text() == json.dumps(EVENT)


def test_an_untested_claim_does_not_end_the_check_of_the_claims_after_it():
    claims = [Claim("u", "p", "05", "s", "untested", None, untested="a run"),
              Claim("x", "p", "05", "s", "X holds", _positive)]
    events = [L.Event(**{**EVENT, "fingerprint": L.fingerprint(_positive), "line": 1})]
    assert L.check(claims, events) == []


# --- the notes -------------------------------------------------------------------------------------

def test_a_note_reads_the_events_it_is_given_and_notes_read_the_ledger_once(tmp_path, monkeypatch):
    monkeypatch.setattr(L, "ROOT", tmp_path)
    path = _ledger(tmp_path, EVENT)
    other = [L.Event(**{**EVENT, "date": "2026-11-30", "line": 1})]
    assert L.ledger_note("x", other, path).startswith("registered 2026-11-30 at commit unknown, before the data")
    assert L.ledger_note("x", [], path) == "not in the rules ledger"
    note = L.notes(path)
    path.write_text(json.dumps({**EVENT, "date": "2026-12-05"}) + "\n")
    assert note("x") == "registered 2026-12-01 at commit unknown, before the data it judges were seen."
    assert L.notes(path)("x").startswith("registered 2026-12-05")


def test_without_git_no_commit_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(L, "ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    path = _ledger(tmp_path, EVENT)
    [event] = L.read_ledger(path)
    assert L.event_commit(event, path) == ""
    assert L.committed_after(event, "abc1234", path) is None
    assert L.ledger_note("x", path=path) == "registered 2026-12-01 at commit unknown, before the data it judges were seen."


@pytest.mark.skipif(not shutil.which("git"), reason="no git")
def test_git_says_nothing_on_the_terminal_when_it_cannot_tell(repo, capfd):  # noqa: F811
    path, first, second = repo
    register, amend = L.read_ledger(path)
    capfd.readouterr()
    assert L.committed_after(amend, "0" * 40, path) is None
    assert L.committed_after(amend, "no-such-branch", path) is None
    assert L.committed_after(register, first, path) is True and L.committed_after(amend, first, path) is False
    assert capfd.readouterr() == ("", "")
