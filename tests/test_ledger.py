"""The rules ledger: every rule registered, any change to a rule caught until it is recorded as an amendment."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from lowrank.experiments import ledger as L
from lowrank.experiments.rule_source import walk
from lowrank.experiments.synthesis import collect_claims
from lowrank.experiments.verdicts import REPRODUCED, Claim, Judgement

CLAIMS = [c for c in collect_claims().claims if c.rule is not None]


def _numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def test_every_rule_is_registered_and_unchanged():
    problems = L.check(CLAIMS, L.read_ledger())
    assert not problems, "\n".join(f"{m.claim}: {m.problem}" for m in problems)


def test_every_claim_has_at_least_one_event():
    registered = L.latest(L.read_ledger())
    assert {c.key for c in CLAIMS} <= set(registered)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.key)
def test_changing_any_threshold_fails_until_an_amendment_is_recorded(claim, tmp_path, monkeypatch):
    reached = walk(claim.rule)
    numeric = {k: v for k, v in reached.constants.items() if _numeric(v)}
    if not numeric:
        pytest.skip(f"{claim.key}: its rule reads no numeric threshold")
    ledger = tmp_path / "ledger.jsonl"
    shutil.copy(L.LEDGER_PATH, ledger)
    for key, value in numeric.items():
        before = L.claim_fingerprint(claim)
        # The constant lives in the module (or class) whose code reads it, as the walk found it.
        holder, name = reached.owners[key]
        monkeypatch.setattr(holder, name, value * 2 + 1)
        after = L.claim_fingerprint(claim)
        assert after != before, f"{claim.key}: changing {key} left the fingerprint unchanged"
        problems = L.check([claim], [e for e in L.read_ledger(ledger) if e.claim == claim.key])
        assert [m.claim for m in problems] == [claim.key], f"{claim.key}: changing {key} was not caught"
        last = L.latest(L.read_ledger(ledger))[claim.key]
        L.append_event(dict(event="amend", claim=claim.key, date="2026-12-03", fingerprint=after,
                            thresholds=L.thresholds(claim.rule), data_seen=True, reason="test",
                            previous=last.fingerprint, verdict_before=REPRODUCED, verdict_after=REPRODUCED),
                       ledger)
        assert not L.check([claim], [e for e in L.read_ledger(ledger) if e.claim == claim.key])
        monkeypatch.undo()
        assert L.claim_fingerprint(claim) == before


def scratch_module(tmp_path, body, name):
    """A scratch module under lowrank.experiments' name space, loaded from source."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(f"lowrank.experiments.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _module_rule(tmp_path, body, name="scratch_rule"):
    """A rule defined in a scratch module (:func:`scratch_module`)."""
    return scratch_module(tmp_path, body, name).rule


RULE = '''
from lowrank.experiments.verdicts import Judgement, REPRODUCED, CONTRADICTED
LIMIT = 0.5  # why: the pre-stated margin

def _decide(x):
    return x > LIMIT

def rule(h):
    """Reproduced when x exceeds the limit."""
    return Judgement(REPRODUCED if _decide(h["x"]) else CONTRADICTED, "x")
'''


def test_fingerprint_follows_code_helpers_and_constants_not_comments(tmp_path):
    base = L.fingerprint(_module_rule(tmp_path, RULE, "a"))
    assert L.fingerprint(_module_rule(tmp_path, RULE.replace("# why", "# because"), "b")) == base
    assert L.fingerprint(_module_rule(tmp_path, RULE.replace("LIMIT = 0.5", "LIMIT = 0.6"), "c")) != base
    assert L.fingerprint(_module_rule(tmp_path, RULE.replace("x > LIMIT", "x >= LIMIT"), "d")) != base
    assert L.fingerprint(_module_rule(tmp_path, RULE.replace("exceeds the limit", "is large"), "e")) != base
    assert L.thresholds(_module_rule(tmp_path, RULE, "f"))["LIMIT"] == 0.5


def _event(**kw):
    base = dict(event="register", claim="x", date="2026-12-03", fingerprint="a" * 64)
    return {**base, **kw}


def test_amendments_must_chain_and_say_why(tmp_path):
    rule = _module_rule(tmp_path, RULE, "g")
    claim = Claim("x", "Paper", "05", "sec", "x is large", rule)
    fp = L.fingerprint(rule)
    with pytest.raises(ValueError, match="needs reason"):
        L.Event(**_event(event="amend", fingerprint=fp, previous="a" * 64, verdict_before="x", verdict_after="y"))
    reg = L.Event(**_event())
    wrong = L.Event(**_event(event="amend", fingerprint=fp, previous="b" * 64, reason="r", verdict_before="x",
                             verdict_after="y"))
    assert any("previous" in m.problem for m in L.check([claim], [reg, wrong]))
    right = L.Event(**_event(event="amend", fingerprint=fp, previous="a" * 64, reason="r", verdict_before="x",
                             verdict_after="y"))
    assert not L.check([claim], [reg, right])
    twice = L.Event(**_event(fingerprint=fp))
    assert any("second time" in m.problem for m in L.check([claim], [reg, twice]))
    assert any("no chapter defines" in m.problem for m in L.check([], [reg]))


def test_a_damaged_line_names_the_file_and_line(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_text(json.dumps(_event()) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"l.jsonl:2"):
        L.read_ledger(p)


def test_the_note_shows_an_amendment_with_its_verdicts():
    note = L.ledger_note("bhojanapalli-fixed-heads-training")
    assert "registered" in note and "amended" in note
    assert "verdict before: contradicted; after: inconclusive" in note


def _git_ok():
    return shutil.which("git") and subprocess.run(["git", "-C", str(L.ROOT), "rev-parse"],
                                                  capture_output=True).returncode == 0


@pytest.mark.skipif(not _git_ok(), reason="no git history (source archive)")
def test_the_ledger_was_only_ever_appended_to():
    rel = str(L.LEDGER_PATH.relative_to(L.ROOT))
    revs = subprocess.run(["git", "-C", str(L.ROOT), "log", "--format=%H", "--", rel],
                          capture_output=True, text=True).stdout.split()
    # Branches append in parallel, so a merge interleaves their lines: the test is that no line any
    # commit held was ever removed or edited, and that each commit's own lines keep their order.
    current = L.LEDGER_PATH.read_text(encoding="utf8").splitlines()
    for rev in revs:
        old = subprocess.run(["git", "-C", str(L.ROOT), "show", f"{rev}:{rel}"], capture_output=True, text=True)
        if old.returncode != 0:
            continue
        lines = iter(current)
        for line in old.stdout.splitlines():
            assert any(line == c for c in lines), f"a ledger line of {rev[:8]} was removed, edited or moved: {line[:80]}"


@pytest.mark.slow
def test_command_line_status_and_refusals(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "lowrank.experiments.ledger", *a],
                                    capture_output=True, text=True, cwd=tmp_path)
    ok = run("status")
    assert ok.returncode == 0 and "0 problems" in ok.stdout
    again = run("register", "theorem1-sufficiency", "--data-seen", "no")
    assert again.returncode == 2 and "registered already" in again.stderr
    same = run("amend", "theorem1-sufficiency", "--reason", "r", "--data-seen", "no", "--before", "a",
               "--after", "b")
    assert same.returncode == 2 and "not changed" in same.stderr
    assert run("register", "no-such-claim", "--data-seen", "no").returncode == 2


def test_amend_changed_amends_every_changed_claim_once_with_its_verdict(tmp_path):
    rule = _module_rule(tmp_path, RULE, "h")
    claim = Claim("x", "Paper", "05", "sec", "x is large", rule)
    same = Claim("y", "Paper", "05", "sec", "y is large", rule)
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(_event()) + "\n" + json.dumps(_event(claim="y", fingerprint=L.claim_fingerprint(same)))
                    + "\n")
    with pytest.raises(ValueError, match="no verdict .* for x"):
        L.amend_changed([claim, same], {}, reason="method", data_seen=True, path=path)
    assert len(L.read_ledger(path)) == 2  # refused whole: nothing appended
    events = L.amend_changed([claim, same], {"x": "reproduced"}, reason="method", data_seen=True, path=path,
                             date="2026-12-07")
    assert [(e.claim, e.previous, e.verdict_before, e.verdict_after) for e in events] == [
        ("x", "a" * 64, "reproduced", "reproduced")]
    assert not L.check([claim, same], L.read_ledger(path))
    assert L.amend_changed([claim, same], {"x": "reproduced"}, reason="method", data_seen=True, path=path) == []
    # a change of method is marked as such, and the row does not call it an amendment of the rule
    assert [e.method for e in L.read_ledger(path)] == [False, False, True]
    note = L.ledger_note("x", path=path)
    assert "fingerprinted anew 2026-12-07" in note and "amended" not in note


def test_committed_verdicts_are_the_verdicts_of_the_chapter_08_table():
    from lowrank.experiments import synthesis

    folder = L.ROOT / "chapters"
    collection = collect_claims()
    rows = synthesis.judge_claims(collection, *synthesis.read_chapter_evidence(folder))
    table = {r.key: r.label for r in rows if r.key}
    found = L.committed_verdicts(collection.claims)
    own = [c.key for c in collection.claims if c.rule is not None and not c.model_of]
    assert own and all(found[k] == table[k] for k in own)
