"""The rules ledger: every claim's rule, fingerprinted, registered before the outputs it judges.

``data/rules_ledger.jsonl`` is an append-only list of events, one JSON object a line:

- ``register``: a claim's rule enters the ledger (its fingerprint, thresholds, date, whether the
  data it judges had been seen, and a note);
- ``amend``: a registered rule changed (new fingerprint and thresholds, the one it replaces, date,
  reason, whether the data had been seen, and the verdict before and after).

A rule's **fingerprint** is a sha256 over the syntax trees (comments and layout ignored, the
docstring included, since it is the sentence the book prints) of the rule function and every
function of ``lowrank.experiments`` it reaches by name, plus the values of the module-level
constants those functions read: its thresholds. Any change to the decision, its thresholds or its
printed sentence changes the fingerprint, and ``tests/test_ledger.py`` fails until the change is
recorded as an amendment. The commit that registered an event is read from git (the commit that
added its line), so nobody types it.

Command line: ``python -m lowrank.experiments.ledger status`` lists claims whose rule differs from
the ledger; ``register KEY --data-seen no --note TEXT`` and ``amend KEY --reason TEXT --data-seen
yes --before VERDICT --after VERDICT`` append an event.
"""
from __future__ import annotations

import argparse
import ast
import datetime as _dt
import hashlib
import inspect
import json
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import BOOK_ROOT

__all__ = ["LEDGER_PATH", "Event", "fingerprint", "thresholds", "read_ledger", "latest", "append_event",
           "check", "Mismatch", "event_commit", "ledger_note", "notes", "committed_after", "main"]

ROOT = BOOK_ROOT
LEDGER_PATH = ROOT / "data" / "rules_ledger.jsonl"
EVENTS = ("register", "amend")
# Values a threshold may take: plain data that prints and compares the same on every machine.
_PLAIN = (bool, int, float, str, type(None))


def _plain(x: Any) -> bool:
    if isinstance(x, _PLAIN):
        return True
    if isinstance(x, (tuple, list, frozenset)):
        return all(_plain(v) for v in x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in x.items())
    return False


def _walk(rule: Callable) -> tuple[list[str], dict[str, Any]]:
    """(syntax-tree dumps of the rule and the experiment functions it reaches, {constant: value})."""
    trees: list[str] = []
    consts: dict[str, Any] = {}
    seen: set[int] = set()
    todo = [rule]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError) as e:
            raise ValueError(f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}") from None
        trees.append(f"{fn.__qualname__}:{ast.dump(tree)}")
        names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
        for name in names:
            if name not in fn.__globals__:
                continue
            obj = fn.__globals__[name]
            if isinstance(obj, types.FunctionType) and obj.__module__.startswith("lowrank.experiments"):
                todo.append(obj)
            elif _plain(obj) and not isinstance(obj, types.ModuleType):
                consts[name] = obj
    return sorted(trees), dict(sorted(consts.items()))


def thresholds(rule: Callable) -> dict[str, Any]:
    """The module-level constants a rule reads (its thresholds and fixed texts), by name."""
    return _walk(rule)[1]


def fingerprint(rule: Callable) -> str:
    """sha256 of the rule's decision code, its printed sentence and its thresholds."""
    trees, consts = _walk(rule)
    payload = json.dumps({"code": trees, "constants": consts}, sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class Event:
    event: str
    claim: str
    date: str
    fingerprint: str
    thresholds: dict = field(default_factory=dict)
    data_seen: bool = False
    note: str = ""
    reason: str = ""
    previous: str = ""
    verdict_before: str = ""
    verdict_after: str = ""
    line: int = 0

    def __post_init__(self):
        if self.event not in EVENTS:
            raise ValueError(f"ledger line {self.line}: event {self.event!r} is not one of {EVENTS}")
        if len(self.fingerprint) != 64:
            raise ValueError(f"ledger line {self.line}: fingerprint is not a sha256 hex digest")
        _dt.date.fromisoformat(self.date)
        if self.event == "amend":
            missing = [k for k in ("reason", "previous", "verdict_before", "verdict_after") if not getattr(self, k)]
            if missing:
                raise ValueError(f"ledger line {self.line}: an amendment needs {', '.join(missing)}")


def read_ledger(path: str | Path = LEDGER_PATH) -> list[Event]:
    """Every event in file order; a damaged line is an error naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    events = []
    for i, text in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
            events.append(Event(**record, line=i))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}:{i}: not a ledger event ({e})") from None
    return events


def latest(events: Iterable[Event]) -> dict[str, Event]:
    """{claim: its newest event}."""
    out: dict[str, Event] = {}
    for e in events:
        out[e.claim] = e
    return out


def append_event(record: Mapping[str, Any], path: str | Path = LEDGER_PATH) -> Event:
    """Validate and append one event (the file is only ever appended to)."""
    event = Event(**record)
    line = json.dumps({k: v for k, v in record.items() if k != "line"}, sort_keys=True, ensure_ascii=False)
    with open(path, "a", encoding="utf8") as f:
        f.write(line + "\n")
        f.flush()
    return event


@dataclass(frozen=True)
class Mismatch:
    claim: str
    problem: str


def check(claims: Iterable, events: Iterable[Event]) -> list[Mismatch]:
    """Claims whose rule is not in the ledger, or differs from its newest event; events of unknown claims;
    amendments that do not chain (``previous`` must be the fingerprint of the event before)."""
    events = list(events)
    problems: list[Mismatch] = []
    known = {}
    for c in claims:
        if c.rule is None:
            continue
        known[c.key] = c
    chain: dict[str, str] = {}
    for e in events:
        if e.claim not in known:
            problems.append(Mismatch(e.claim, f"ledger line {e.line} names a claim no chapter defines"))
            continue
        if e.event == "register" and e.claim in chain:
            problems.append(Mismatch(e.claim, f"ledger line {e.line} registers it a second time; use an amendment"))
        if e.event == "amend" and chain.get(e.claim) != e.previous:
            problems.append(Mismatch(e.claim, f"ledger line {e.line}: the amendment's previous fingerprint is not "
                                              "the one registered before it"))
        chain[e.claim] = e.fingerprint
    for key, c in known.items():
        now = fingerprint(c.rule)
        if key not in chain:
            problems.append(Mismatch(key, "its rule is not in the ledger: register it "
                                          f"(python -m lowrank.experiments.ledger register {key} ...)"))
        elif chain[key] != now:
            problems.append(Mismatch(key, "its rule (code, sentence or thresholds) differs from the ledger: record "
                                          f"an amendment (python -m lowrank.experiments.ledger amend {key} ...)"))
    return problems


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def event_commit(event: Event, path: str | Path = LEDGER_PATH) -> str:
    """The short hash of the commit that added the event's line ("" when git or the commit is not there)."""
    rel = Path(path).resolve()
    try:
        rel = rel.relative_to(ROOT)
    except ValueError:
        return ""
    found = _git("log", "--reverse", "--format=%h", "-S", event.fingerprint, "--", str(rel))
    hashes = found.split()
    if event.event == "register" or not hashes:
        return hashes[0] if hashes else ""
    # An amended fingerprint appears first in the commit that added the amendment.
    return hashes[0]


def committed_after(event: Event, revision: str, path: str | Path = LEDGER_PATH) -> bool | None:
    """True when ``revision`` (a record's git revision) contains the commit that registered ``event``;
    None when git cannot tell (no history, unknown revision)."""
    commit = event_commit(event, path)
    rev = revision.removesuffix("+dirty")
    if not commit or not rev:
        return None
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, rev],
                             capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(out.returncode)


# A reason or note may cite the project's tracker ("Issues 24 and 25: ..."); the reader of the
# book has no such tracker, so the verdict table shows the reason without the citation.
_CITED = re.compile(r"\s*\(issues? \d+(?:(?:,| and) \d+)*\)|\bissues? \d+(?:(?:,| and) \d+)*[:,]?\s*", re.I)


def _public(text: str) -> str:
    return _CITED.sub("", text).strip()


def ledger_note(claim: str, events: Iterable[Event] | None = None, path: str | Path = LEDGER_PATH) -> str:
    """What the ledger shows for one claim, as the verdict table prints it beside the verdict."""
    events = [e for e in (read_ledger(path) if events is None else events) if e.claim == claim]
    if not events:
        return "not in the rules ledger"
    parts = []
    for e in events:
        commit = event_commit(e, path) or "commit unknown"
        seen = "after" if e.data_seen else "before"
        if e.event == "register":
            text = f"registered {e.date} at {commit}, {seen} the data it judges were seen"
            if e.note:
                text += f" ({_public(e.note)})"
        else:
            text = (f"amended {e.date} at {commit}, {seen} the data were seen: {_public(e.reason)}; "
                    f"verdict before: {e.verdict_before}; after: {e.verdict_after}")
        parts.append(text)
    return ". ".join(parts) + "."


def notes(path: str | Path = LEDGER_PATH) -> Callable[[str], str]:
    """claim key -> its ledger note, reading the ledger once (for the verdict table)."""
    events = read_ledger(path)
    return lambda key: ledger_note(key, events, path)


# --- command line ------------------------------------------------------------------------------

def _all_claims():
    from .claims import collect_claims

    return collect_claims().claims


def _yes_no(text: str) -> bool:
    if text not in ("yes", "no"):
        raise argparse.ArgumentTypeError("answer yes or no")
    return text == "yes"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lowrank.experiments.ledger", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", help="claims whose rule differs from the ledger")
    reg = sub.add_parser("register", help="register a claim's rule")
    reg.add_argument("claim")
    reg.add_argument("--data-seen", type=_yes_no, required=True)
    reg.add_argument("--note", default="")
    am = sub.add_parser("amend", help="record a change to a registered rule")
    am.add_argument("claim")
    am.add_argument("--reason", required=True)
    am.add_argument("--data-seen", type=_yes_no, required=True)
    am.add_argument("--before", required=True, help="the verdict under the rule as registered")
    am.add_argument("--after", required=True, help="the verdict under the amended rule")
    args = p.parse_args(argv)

    claims = {c.key: c for c in _all_claims()}
    events = read_ledger()
    if args.cmd == "status":
        problems = check(claims.values(), events)
        for m in problems:
            print(f"{m.claim}: {m.problem}")
        print(f"{len(claims)} claims, {len(events)} ledger events, {len(problems)} problems")
        return 1 if problems else 0
    if args.claim not in claims or claims[args.claim].rule is None:
        print(f"unknown claim {args.claim!r} (or it has no rule)", file=sys.stderr)
        return 2
    rule = claims[args.claim].rule
    last = latest(events).get(args.claim)
    record: dict[str, Any] = {"event": args.cmd, "claim": args.claim, "date": _dt.date.today().isoformat(),
                              "fingerprint": fingerprint(rule), "thresholds": thresholds(rule),
                              "data_seen": args.data_seen}
    if args.cmd == "register":
        if last is not None:
            print(f"{args.claim} is registered already; record an amendment", file=sys.stderr)
            return 2
        record["note"] = args.note
    else:
        if last is None:
            print(f"{args.claim} is not registered yet", file=sys.stderr)
            return 2
        if last.fingerprint == record["fingerprint"]:
            print(f"{args.claim}: the rule has not changed since the ledger's last event", file=sys.stderr)
            return 2
        record.update(reason=args.reason, previous=last.fingerprint, verdict_before=args.before,
                      verdict_after=args.after)
    append_event(record)
    print(f"{args.cmd} {args.claim} {record['fingerprint'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
