"""The ledger's events and checks in detail, as `make mutation` asks: every fault of a line named
in words, what an appended line holds, every problem of a chain named for its claim, and the walk
of a rule through its helpers (cycles, names that are not globals, constants that are not plain)."""
import json

import pytest

from lowrank.experiments import ledger as L
from lowrank.experiments.verdicts import Claim
from test_ledger import scratch_module

EVENT = dict(event="register", claim="x", date="2026-12-01", fingerprint="a" * 64)


def test_every_fault_of_a_line_is_named_in_words(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text("\n".join([json.dumps(EVENT), "[1]", '{"bogus": 1}', '{"event": "register"}', ""]))
    events, faults = L.scan_ledger(path)
    assert [e.line for e in events] == [1]
    assert faults == [
        (2, "not a JSON object (a list)"),
        (3, "unknown key 'bogus'; an event has event, claim, date, fingerprint, thresholds, data_seen, note, reason, "
            "previous, verdict_before, verdict_after, method"),
        (4, "no claim, date, fingerprint")]


def test_an_appended_line_is_the_event_with_sorted_keys_and_its_text_as_written(tmp_path):
    path = tmp_path / "l.jsonl"
    event = L.append_event({**EVENT, "note": "é first", "line": 7}, path)
    assert event.claim == "x" and event.note == "é first"
    assert path.read_text(encoding="utf8") == json.dumps({**EVENT, "note": "é first"}, sort_keys=True,
                                                         ensure_ascii=False) + "\n"
    assert list(json.loads(path.read_text(encoding="utf8"))) == sorted({**EVENT, "note": ""})


def test_nothing_is_appended_after_a_line_without_its_newline(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(EVENT))
    with pytest.raises(L.LedgerError, match="no final newline"):
        L.append_event({**EVENT, "claim": "y"}, path)
    assert path.read_text() == json.dumps(EVENT)


def _rule():
    """Reproduced never."""


def test_every_problem_of_a_chain_is_named_for_its_claim():
    claim = Claim("x", "p", "09", "s", "st", _rule)
    other = Claim("z", "p", "09", "s", "st", _rule)
    fp = L.fingerprint(_rule)
    events = [L.Event(**{**EVENT, "claim": "u1", "line": 1}), L.Event(**{**EVENT, "claim": "u2", "line": 2}),
              L.Event(**{**EVENT, "fingerprint": fp, "line": 3}), L.Event(**{**EVENT, "fingerprint": fp, "line": 4}),
              L.Event(**{**EVENT, "event": "amend", "previous": "b" * 64, "reason": "r", "verdict_before": "a",
                         "verdict_after": "b", "line": 5})]
    assert L.check([claim, other], events) == [
        L.Mismatch("u1", "ledger line 1 names a claim no chapter defines"),
        L.Mismatch("u2", "ledger line 2 names a claim no chapter defines"),
        L.Mismatch("x", "ledger line 4 registers it a second time; use an amendment"),
        L.Mismatch("x", "ledger line 5: the amendment's previous fingerprint is not the one registered before it"),
        L.Mismatch("x", "its rule (code, sentence or thresholds) differs from the ledger: record an amendment "
                        "(python -m lowrank.experiments.ledger amend x ...)"),
        L.Mismatch("z", "its rule is not in the ledger: register it (python -m lowrank.experiments.ledger "
                        "register z ...)")]




WALK = '''
LIMIT = 0.5
PAIRS = ((1, 2), "a")
ODD = (1, object())
KEYED = {1: 2}

def _again(x, depth):
    return x if depth == 0 else rule({"x": x}, depth - 1)

def _a_first(x):
    return x + FIRST

FIRST = 3

def rule(h, depth=1):
    """Reproduced when x exceeds the limit, asked twice."""
    Alpha = h["x"]
    return _again(Alpha, depth) > LIMIT and PAIRS and ODD and KEYED and _a_first(Alpha)
'''


def test_the_walk_follows_cycles_once_and_keeps_only_plain_constants(tmp_path):
    rule = scratch_module(tmp_path, WALK, "walk_rule").rule
    # a local name sorting before the constants does not end the walk; a cycle is walked once, and
    # meeting the rule again at its end does not end the walk before the helper it named first
    assert L.thresholds(rule) == {"FIRST": 3, "LIMIT": 0.5, "PAIRS": ((1, 2), "a")}
    changed = scratch_module(tmp_path, WALK.replace("depth == 0", "depth <= 0"), "walk_rule2").rule
    assert L.fingerprint(changed) != L.fingerprint(rule)


def test_a_rule_without_source_is_named():
    namespace = {}
    exec("def made(h):\n    '''Made at run time.'''\n", namespace)
    with pytest.raises(ValueError, match=r"^cannot read the source of 'made': "):
        L.fingerprint(namespace["made"])


def test_a_damaged_ledger_counts_its_other_damaged_lines(tmp_path):
    path = tmp_path / "l.jsonl"
    good = json.dumps(EVENT)
    for bad, more in ((1, ""), (2, " (1 more damaged line)"), (3, " (2 more damaged lines)")):
        path.write_text("\n".join([good, *["[1]"] * bad, ""]))
        with pytest.raises(L.LedgerError) as info:
            L.read_ledger(path)
        assert str(info.value) == f"{path}:2: not a ledger event: not a JSON object (a list){more}"


def test_blank_and_undecodable_lines_do_not_stop_the_scan_and_a_cut_line_is_named(tmp_path):
    path = tmp_path / "l.jsonl"
    good = json.dumps(EVENT).encode()
    path.write_bytes(b"\n".join([good, b"", b"\xff{}", good, b"{cut"]))
    events, faults = L.scan_ledger(path)
    assert [e.line for e in events] == [1, 4]
    assert faults == [(3, "byte 0xff at column 1 is not UTF-8"),
                      (5, "not JSON (Expecting property name enclosed in double quotes, column 2); the line has "
                          "no final newline: a write was cut short")]
    path.write_bytes(good)
    assert L.scan_ledger(path, for_append=True)[1] == [
        (1, "the last line has no final newline (cut short, or saved by an editor without one); add the newline "
            "before appending")]
