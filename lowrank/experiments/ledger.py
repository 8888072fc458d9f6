"""The rules ledger: every claim's rule, fingerprinted, registered before the outputs it judges.

``data/rules_ledger.jsonl`` is an append-only list of events, one JSON object a line:

- ``register``: a claim's rule enters the ledger (its fingerprint, thresholds, date, whether the
  data it judges had been seen, and a note);
- ``amend``: a registered rule changed (new fingerprint and thresholds, the one it replaces, date,
  reason, whether the data had been seen, and the verdict before and after).

A claim's **fingerprint** is a sha256 over the syntax trees (comments and layout ignored, the
docstring included, since it is the sentence the book prints) of its rule, of its measure (the
function that computes the values the rule reads, :attr:`lowrank.experiments.verdicts.Claim.measure`)
and of every function and class of ``lowrank.experiments`` they reach, by name or through a module's
or a class's attribute, plus the values of the constants those read: the rule's own are its
thresholds (:mod:`lowrank.experiments.rule_source`). Any change to the decision, the measurement,
the thresholds or the printed sentence changes the fingerprint, and ``tests/test_ledger.py`` fails until the change is
recorded as an amendment. The commit that registered an event is read from git (the commit that
added its line), so nobody types it.

The ledger is a journal: an event is appended whole or not at all (a failed write is cut back),
under an exclusive lock held while the command reads the ledger, decides and appends, so two
``register`` commands of one claim cannot both succeed. Every read checks every line: a line that
is not UTF-8, not JSON, not an event (an unknown key, a bad date) or has no final newline (a cut
write, or an editor's) is named with its line number, and nothing is appended after it.

Command line: ``python -m lowrank.experiments.ledger status`` lists claims whose rule differs from
the ledger (on a damaged ledger it reads what it can and names every line it skipped);
``register KEY --data-seen no --note TEXT`` and ``amend KEY --reason TEXT --data-seen yes --before
VERDICT --after VERDICT`` append an event; ``amend-changed --reason TEXT --data-seen yes`` appends one
amendment for every claim whose fingerprint changed, its verdict before and after read from the
committed chapter notebooks (a change of method, such as what the fingerprint covers). ``--ledger PATH`` reads and writes another ledger.
Exit status 0 done, 1 rules differ from the ledger, 2 refused or a damaged ledger (one line), 130
Ctrl-C, 143 SIGTERM.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.commands import (OneLineParser, interrupt_status, interrupt_words, one_line, signals_interrupt)
from ..core.files import BOOK_ROOT, InputFileError, appending, read_regular
from .rule_source import walk

__all__ = ["LEDGER_PATH", "Event", "LedgerError", "fingerprint", "claim_fingerprint", "thresholds", "read_ledger", "scan_ledger",
           "latest", "append_event",
           "amend_changed", "committed_verdicts", "check", "Mismatch", "event_commit", "ledger_note", "notes", "committed_after", "main"]

ROOT = BOOK_ROOT
LEDGER_PATH = ROOT / "data" / "rules_ledger.jsonl"
EVENTS = ("register", "amend")
MAX_LEDGER_BYTES = 1 << 26  # a ledger of a few hundred events is some hundred KiB
def thresholds(rule: Callable) -> dict[str, Any]:
    """The constants a rule reads, itself or through the functions it reaches (its thresholds and
    fixed texts), by name."""
    return walk(rule).constants


def fingerprint(rule: Callable, measure: Callable | None = None, evidence: type | None = None) -> str:
    """sha256 of the rule's decision code, its printed sentence and its thresholds, of the
    measure that computes the values the rule reads and of the record that types them
    (:mod:`lowrank.experiments.rule_source`)."""
    reached = walk(rule, measure, evidence)
    payload = json.dumps({"code": list(reached.code), "constants": reached.constants}, sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()


def claim_fingerprint(claim) -> str:
    """The fingerprint of a claim's rule, measure and evidence record."""
    return fingerprint(claim.rule, claim.measure, claim.evidence)


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
    # an amendment for a change of method (what the fingerprint covers), not of the rule's decision
    method: bool = False
    line: int = 0

    def __post_init__(self):
        if self.event not in EVENTS:
            raise ValueError(f"ledger line {self.line}: event {self.event!r} is not one of {EVENTS}")
        if len(self.fingerprint) != 64:
            raise ValueError(f"ledger line {self.line}: fingerprint is not a sha256 hex digest")
        try:
            _dt.date.fromisoformat(self.date)
        except (TypeError, ValueError):
            raise ValueError(f"ledger line {self.line}: date {str(self.date)[:40]!r} is not a date "
                             "YYYY-MM-DD") from None
        if self.event == "amend":
            missing = [k for k in ("reason", "previous", "verdict_before", "verdict_after") if not getattr(self, k)]
            if missing:
                raise ValueError(f"ledger line {self.line}: an amendment needs {', '.join(missing)}")


class LedgerError(ValueError):
    """A ledger that cannot be read whole: the message names the file, the line and the fault."""


_FIELDS = tuple(f for f in Event.__dataclass_fields__ if f != "line")


def _event_at(text: str, number: int) -> Event:
    """The event on line ``number``; ValueError with the fault in words otherwise."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object (a {type(record).__name__})")
    unknown = sorted(set(record) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown key {one_line(unknown[0], 40)!r}; an event has {', '.join(_FIELDS)}")
    missing = [k for k in ("event", "claim", "date", "fingerprint") if k not in record]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    try:
        return Event(**record, line=number)
    except (TypeError, ValueError) as e:
        raise ValueError(str(e).removeprefix(f"ledger line {number}: ")) from None


def scan_ledger(path: str | Path = LEDGER_PATH, *, for_append: bool = False
                ) -> tuple[list[Event], list[tuple[int, str]]]:
    """(every event that reads, [(line number, fault)] of every line that does not). With
    ``for_append``, a last line without its newline is a fault even when it reads, since an append
    would be glued onto it (its event is kept). A missing ledger holds nothing; one that is not a
    readable regular file is a LedgerError."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return [], []
    try:
        raw = read_regular(path, MAX_LEDGER_BYTES)
    except InputFileError as e:
        raise LedgerError(f"{path}: the rules ledger {e}; it is a JSON-lines file") from None
    lines = raw.split(b"\n")
    events, faults = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cut = number == len(lines)  # text after the last newline: a cut or unterminated line
        try:
            text = line.decode("utf8")
        except UnicodeDecodeError as e:
            faults.append((number, f"byte {line[e.start]:#04x} at column {e.start + 1} is not UTF-8"))
            continue
        try:
            events.append(_event_at(text, number))
        except ValueError as e:
            faults.append((number, f"{e}{'; the line has no final newline: a write was cut short' if cut else ''}"))
            continue
        if cut and for_append:
            faults.append((number, "the last line has no final newline (cut short, or saved by an editor "
                                   "without one); add the newline before appending"))
    return events, faults


def read_ledger(path: str | Path = LEDGER_PATH, *, for_append: bool = False) -> list[Event]:
    """Every event in file order; a damaged line is a LedgerError naming the file, the line and the
    fault (and how many other lines are damaged). ``for_append``: as :func:`scan_ledger`."""
    events, faults = scan_ledger(path, for_append=for_append)
    if faults:
        number, why = faults[0]
        more = f" ({len(faults) - 1} more damaged line{'s' if len(faults) > 2 else ''})" if len(faults) > 1 else ""
        raise LedgerError(f"{path}:{number}: not a ledger event: {why}{more}")
    return events


def latest(events: Iterable[Event]) -> dict[str, Event]:
    """{claim: its newest event}."""
    out: dict[str, Event] = {}
    for e in events:
        out[e.claim] = e
    return out


def _line(record: Mapping[str, Any]) -> bytes:
    return (json.dumps({k: v for k, v in record.items() if k != "line"}, sort_keys=True, ensure_ascii=False)
            + "\n").encode("utf8")


def append_event(record: Mapping[str, Any], path: str | Path = LEDGER_PATH) -> Event:
    """Validate and append one event, whole, under the ledger's lock; a damaged ledger (a line
    without its newline included) is a LedgerError and nothing is appended."""
    event = Event(**record)
    with appending(path) as out:
        read_ledger(path, for_append=True)
        out.write(_line(record))
    return event


def amend_changed(claims: Iterable, verdicts: Mapping[str, str], *, reason: str, data_seen: bool,
                  path: str | Path = LEDGER_PATH, date: str | None = None) -> list[Event]:
    """One amendment for every registered claim whose fingerprint is no longer its newest event's
    (a change of method that moves every fingerprint at once), appended under one lock. Its verdict
    before and after is ``verdicts[key]``: the claim's verdict on the committed outputs, which a
    change of method leaves as it was. A changed claim without a verdict refuses the whole batch
    (ValueError), before anything is written; an unregistered claim is left to ``register``."""
    date = date or _dt.date.today().isoformat()
    with appending(path) as out:
        last = latest(read_ledger(path, for_append=True))
        changed = [(c, claim_fingerprint(c)) for c in claims if c.rule is not None and c.key in last]
        changed = [(c, fp) for c, fp in changed if last[c.key].fingerprint != fp]
        missing = [c.key for c, _ in changed if not str(verdicts.get(c.key, "")).strip()]
        if missing:
            raise ValueError(f"no verdict on the committed outputs for {', '.join(missing)}")
        events = []
        for c, fp in changed:
            record = {"event": "amend", "claim": c.key, "date": date, "fingerprint": fp,
                      "thresholds": thresholds(c.rule), "data_seen": data_seen, "reason": reason,
                      "previous": last[c.key].fingerprint, "verdict_before": verdicts[c.key],
                      "verdict_after": verdicts[c.key], "method": True}
            events.append(Event(**record))
            out.write(_line(record))
    return events


def committed_verdicts(claims: Iterable, folder: str | Path | None = None) -> dict[str, str]:
    """{claim key: its verdict label} as chapter 08 judges it: each claim's rule on the values of its
    own chapter's committed evidence file under ``folder`` (default: the book's chapters); a claim
    whose values are missing reads "not judged: ..." with the reason."""
    from .evidence import read_book_evidence
    from .registry import CHAPTERS
    from .verdicts import NOT_JUDGED, MissingEvidence

    folder = Path(folder) if folder is not None else ROOT / "chapters"
    found = {e.chapter: e for e in read_book_evidence(folder, CHAPTERS).values()}
    out = {}
    for c in claims:
        if c.rule is None:
            continue
        if c.chapter not in found:
            out[c.key] = f"{NOT_JUDGED}: chapter {c.chapter} has no evidence file"
            continue
        try:
            out[c.key] = c.judge(found[c.chapter].values).label
        except MissingEvidence as e:
            out[c.key] = f"{NOT_JUDGED}: the committed chapter {c.chapter} lacks {e.key or e.args[0]}"
    return out


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
        now = claim_fingerprint(c)
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
    # -m: a line that entered the ledger in a merge commit is found there too
    found = _git("log", "-m", "--reverse", "--format=%h", "-S", event.fingerprint, "--", str(rel))
    hashes = found.split()
    # A fingerprint, registered or amended, appears first in the commit that added its event.
    return hashes[0] if hashes else ""


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
        elif e.method:
            text = f"fingerprinted anew {e.date} at {commit} (a change of method, the rule unchanged)"
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
# Mutation testing leaves the command line out: its tests run it in a subprocess, which imports the
# package unmutated, so no mutant of it could be killed there.
# pragma: no mutate start

def _all_claims():
    from .claims import collect_claims

    return collect_claims().claims


def _yes_no(text: str) -> bool:
    import argparse

    if text not in ("yes", "no"):
        raise argparse.ArgumentTypeError(f"answer yes or no, not {one_line(text, 40)!r}")
    return text == "yes"


def _said(name: str):
    """An argparse type: a text that says something (not empty or blank)."""
    def read(text: str) -> str:
        import argparse

        if not text.strip():
            raise argparse.ArgumentTypeError(f"{name} must say something; it is empty")
        return text
    return read


PROG = "python -m lowrank.experiments.ledger"


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = OneLineParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--ledger", type=Path, default=LEDGER_PATH, help="the ledger file (default: the book's)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    # The same options after the subcommand, as a user types them; given there, they win.
    common = OneLineParser(add_help=False)
    common.add_argument("--ledger", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", parents=[common], help="claims whose rule differs from the ledger")
    reg = sub.add_parser("register", parents=[common], help="register a claim's rule")
    reg.add_argument("claim")
    reg.add_argument("--data-seen", type=_yes_no, required=True)
    reg.add_argument("--note", default="")
    am = sub.add_parser("amend", parents=[common], help="record a change to a registered rule")
    am.add_argument("claim")
    am.add_argument("--reason", type=_said("--reason"), required=True)
    am.add_argument("--data-seen", type=_yes_no, required=True)
    am.add_argument("--before", type=_said("--before"), required=True,
                    help="the verdict under the rule as registered")
    am.add_argument("--after", type=_said("--after"), required=True, help="the verdict under the amended rule")
    every = sub.add_parser("amend-changed", parents=[common],
                           help="amend every claim whose fingerprint changed (a change of method), its verdict "
                                "before and after read from the committed chapters")
    every.add_argument("--reason", type=_said("--reason"), required=True)
    every.add_argument("--data-seen", type=_yes_no, required=True)
    try:
        args = p.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed in one line
        return e.code if isinstance(e.code, int) else 2
    try:
        with signals_interrupt():
            return _command(args)
    except LedgerError as e:
        return _say(args, f"error: {e}", 2)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM through signals_interrupt: nothing half-written
        return _say(args, f"{interrupt_words(e)}; the ledger holds whole events only", interrupt_status(e))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as e:
        return _say(args, f"error: --ledger {args.ledger}: cannot be written ({e.strerror or type(e).__name__})", 2)
    except OSError as e:  # a full disk, a file size limit: the append was cut back
        return _say(args, f"error: cannot write the ledger {args.ledger} ({e.strerror or type(e).__name__}); "
                          "nothing was appended", 1)
    except Exception as e:  # noqa: BLE001 - a chapter module that fails to import, a rule that cannot be read
        return _say(args, f"error: {args.cmd} stopped: {one_line(e) or type(e).__name__}"
                          + ("" if args.debug else " (--debug shows the traceback)"), 1)


def _say(args, text: str, status: int) -> int:
    if args.debug:
        import traceback

        traceback.print_exc()
    print(f"{PROG}: {one_line(text, 600)}", file=sys.stderr)
    return status


def _command(args) -> int:
    ledger = args.ledger
    claims = {c.key: c for c in _all_claims()}
    if args.cmd == "status":
        if not ledger.exists():  # every claim would read as unregistered: say why instead
            return _say(args, f"error: --ledger {ledger}: no such file", 2)
        events, faults = scan_ledger(ledger, for_append=True)
        problems = check(claims.values(), events)
        for m in problems:
            print(f"{m.claim}: {m.problem}")
        read = {e.line for e in events}
        skipped = sum(1 for number, _ in faults if number not in read)
        print(f"{len(claims)} claims, {len(events)} ledger events, {len(problems)} problems"
              + (f", {len(faults)} damaged ledger line{'s' if len(faults) > 1 else ''} ({skipped} skipped)"
                 if faults else ""))
        for number, why in faults:
            print(f"{PROG}: error: {ledger}:{number}: {'read, but ' if number in read else 'skipped: '}"
                  f"{one_line(why)}", file=sys.stderr)
        return 2 if faults else (1 if problems else 0)
    if args.cmd == "amend-changed":
        read_ledger(ledger, for_append=True)  # a damaged ledger is named before it is opened for writing
        events = amend_changed(claims.values(), committed_verdicts(claims.values()), reason=args.reason,
                               data_seen=args.data_seen, path=ledger)
        for e in events:
            print(f"amend {e.claim} {e.fingerprint[:12]} ({e.verdict_after})")
        print(f"{len(events)} amendments")
        return 0
    if args.claim not in claims or claims[args.claim].rule is None:
        return _say(args, f"error: unknown claim {one_line(args.claim, 60)!r} (or it has no rule); "
                          f"{PROG} status lists the claims", 2)
    rule = claims[args.claim].rule
    record: dict[str, Any] = {"event": args.cmd, "claim": args.claim, "date": _dt.date.today().isoformat(),
                              "fingerprint": claim_fingerprint(claims[args.claim]), "thresholds": thresholds(rule),
                              "data_seen": args.data_seen}
    read_ledger(ledger, for_append=True)  # a damaged ledger is named before it is opened for writing
    with appending(ledger) as out:
        # Read, decide and append under one lock: a second register of the claim waits, then sees the first.
        last = latest(read_ledger(ledger, for_append=True)).get(args.claim)
        if args.cmd == "register":
            if last is not None:
                return _say(args, f"error: {args.claim} is registered already (ledger line {last.line}); "
                                  "record an amendment", 2)
            record["note"] = args.note
        else:
            if last is None:
                return _say(args, f"error: {args.claim} is not registered yet; register it first", 2)
            if last.fingerprint == record["fingerprint"]:
                return _say(args, f"error: {args.claim}: the rule has not changed since the ledger's last event "
                                  f"(line {last.line}); there is nothing to amend", 2)
            record.update(reason=args.reason, previous=last.fingerprint, verdict_before=args.before,
                          verdict_after=args.after)
        Event(**record)
        out.write(_line(record))
    print(f"{args.cmd} {args.claim} {record['fingerprint'][:12]}")
    return 0


# pragma: no mutate end
if __name__ == "__main__":
    sys.exit(main())
