"""Write each chapter notebook's text source: chapters/text/<stem>.py, py:percent, no outputs.

The .ipynb stays the notebook papermill, nbval and the book execute and render (it carries the
committed outputs); the .py holds the same cells as text, so a review reads the code as a diff and
`duplicates` sees it. tests/test_text_sources.py fails when the two differ.

usage: python tools/sync_sources.py [--check] [chapters/NN_name.ipynb ...]   (default: every chapter)
exit status: 0 in sync (or written), 1 --check found a source out of date, 2 bad input
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's lowrank

from lowrank.book.text_sources import source_path, text_source  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when a source is out of date")
    p.add_argument("notebooks", nargs="*", type=Path)
    args = p.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    stale = 0
    for nb in notebooks:
        if nb.suffix != ".ipynb" or not nb.is_file():
            print(f"sync_sources: {nb} is not a notebook file", file=sys.stderr)
            return 2
        text, target = text_source(nb), source_path(nb)
        if target.is_file() and target.read_text(encoding="utf8") == text:
            continue
        stale += 1
        if args.check:
            print(f"{target} is out of date with {nb}")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf8")
            print(f"wrote {target}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
