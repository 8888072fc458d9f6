"""Append the finished runs of a training checkout's budget store to chapter 04's committed store.

The budget runs train in a clean checkout into a copy of the store (docs/operations.md, "Chapter 04's
budget store"); this brings them back. Every line of both stores must parse as a record of the budget
experiment; a run is appended when its key is not in the committed store yet and it finished, in the
order the checkout stored it. Then the counts docs/operations.md states are restated from the store,
and with --execute chapters 04 and 08 are re-executed against it (their text sources and the README's
answer refreshed), as `make notebooks` does for every chapter.

usage: python tools/sync_budget_store.py RUNS_STORE [--execute]
exit status: 0 synced (or nothing to add), 2 bad input
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's lowrank

from lowrank.experiments.head_size_training import BUDGET_STORE, budget  # noqa: E402
from lowrank.stores.sweep import ResultStore  # noqa: E402

DOCS = ROOT / "docs" / "operations.md"
CHAPTERS = ("chapters/04_head_size_training.ipynb", "chapters/08_synthesis.ipynb")
# The two sentences of docs/operations.md that state the store's counts (line breaks may fall anywhere):
# the words before, between and after the two numbers.
STORED = r"(the\s+store\s+holds\s+)[\d,]+(\s+of\s+its\s+)[\d,]+(\s+planned\s+runs)"
JUDGED = r"()[\d,]+(\s+of\s+the\s+)[\d,]+(\s+judged\s+runs\s+are\s+stored)"


def records(path: Path) -> list[dict]:
    """Every line of a budget store as a record; a line that is not one is a ValueError naming it."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
        try:
            rec = json.loads(line)
        except ValueError:
            raise ValueError(f"{path.name}:{number}: not a JSON line") from None
        if not isinstance(rec, dict) or rec.get("experiment") != budget.EXPERIMENT or "key" not in rec:
            raise ValueError(f"{path.name}:{number}: not a record of {budget.EXPERIMENT}")
        out.append(rec)
    return out


def new_runs(source: list[dict], committed: list[dict]) -> list[dict]:
    """The finished runs of ``source`` whose key ``committed`` lacks, each once, in source order."""
    seen = {r["key"] for r in committed}
    out = []
    for rec in source:
        if rec["key"] not in seen and rec.get("metrics", {}).get("finished"):
            seen.add(rec["key"])
            out.append(rec)
    return out


def _fill(pattern: str, numbers: tuple[int, int], text: str) -> str:
    """``text`` with the one sentence ``pattern`` matches stating ``numbers``, its line breaks kept."""
    first, second = numbers
    filled, n = re.subn(pattern, lambda m: f"{m[1]}{first:,}{m[2]}{second:,}{m[3]}", text)
    if n != 1:
        raise ValueError(f"docs/operations.md states {n} sentences like {pattern!r}, not one")
    return filled


def restate(text: str, stored: int, planned: int, judged: int, judged_planned: int) -> str:
    """docs/operations.md's text with the store's counts stated anew."""
    return _fill(JUDGED, (judged, judged_planned), _fill(STORED, (stored, planned), text))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path, help="the training checkout's store (a copy of the committed one)")
    p.add_argument("--execute", action="store_true", help="then re-execute chapters 04 and 08 against the store")
    args = p.parse_args(argv)
    target = ROOT / BUDGET_STORE
    if args.source.resolve() == target.resolve():
        print("sync_budget_store: the source is the committed store itself", file=sys.stderr)
        return 2
    try:
        new = new_runs(records(args.source), records(target))
    except (OSError, ValueError) as e:
        print(f"sync_budget_store: {e}", file=sys.stderr)
        return 2
    store = ResultStore(target)
    for rec in new:
        store.append(rec)
    r = budget.read(target)
    counts = (r["n_records"], r["planned"]["distinct"], r["fair"]["judged"].shape[0], r["planned"]["judged"])
    DOCS.write_text(restate(DOCS.read_text(encoding="utf8"), *counts), encoding="utf8")
    print(f"{len(new)} runs appended; the store holds {counts[0]:,} of its {counts[1]:,} planned runs, "
          f"{counts[2]:,} of the {counts[3]:,} judged runs")
    if args.execute and new:
        py = sys.executable
        for command in ([py, "tools/execute_notebooks.py", *CHAPTERS], [py, "tools/sync_sources.py", *CHAPTERS],
                        [py, "-m", "lowrank.book.readme"], [py, "-m", "lowrank.book.sets", "--readme"]):
            subprocess.run(command, cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
