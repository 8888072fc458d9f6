"""Tidy chapter notebooks for the reader: setup cells tagged hidden, every table captioned.

Idempotent: a second run changes nothing. For each notebook it

- tags ``hide-input`` every cell that ``lowrank.book.cells.quiet_role`` calls setup (the parameters
  cell, an import cell that shows nothing, a cell that prints a table), so that Jupyter hides them
  as the rendered book does (``_ext/book_ui.py`` hides them there whatever the tags say);
- lists every code cell that prints a table without a ``table-caption`` directive at the top of
  the next markdown cell (``_ext/book_tables.py``), and prose that points at a table by position
  ("the table above") instead of by number. Captions are the author's to write: these are reported,
  never invented.

Only the cell tags are rewritten, in the notebook's own JSON layout; outputs are untouched, so
nbval's checks and the committed outputs stay as they were.

usage: python tools/tidy_notebooks.py [--check] chapters/01_*.ipynb ...
       --check: change nothing; exit 1 when a notebook would change or a table lacks its caption
exit status: 0 done, 1 --check found work (or a table lacks a caption), 2 bad input
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's lowrank

from lowrank.book.cells import quiet_role  # noqa: E402

HIDE = "hide-input"
# Tags that already decide how the cell is shown.
SHOWN_AS_TAGGED = {"hide-input", "hide-cell", "remove-cell", "remove-input", "remove_cell", "remove_input"}
CAPTION = re.compile(r"\A\s*(`{3,}|:{3,})\{table-caption\}")
BY_POSITION = re.compile(r"\b(the|this|that) (table|tables) (above|below)\b", re.IGNORECASE)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _outputs(cell: dict) -> tuple[bool, bool]:
    """(prints a table, shows something rich) for a code cell."""
    table = display = False
    for out in cell.get("outputs", []):
        for mime, data in (out.get("data") or {}).items():
            if "html" in mime or mime.startswith("image/"):
                display = True
            if "html" in mime and "<table" in _text(data):
                table = True
    return table, display


def tidy(nb: dict) -> tuple[int, list[str]]:
    """Tag setup cells in place; returns (cells tagged, problems for the author)."""
    tagged, problems = 0, []
    cells = nb.get("cells", [])
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown":
            for m in BY_POSITION.finditer(_text(cell.get("source"))):
                problems.append(f"cell {i}: '{m.group(0)}': refer to the table by number ({{numref}})")
            continue
        if cell.get("cell_type") != "code":
            continue
        tags = cell.setdefault("metadata", {}).get("tags", [])
        table, display = _outputs(cell)
        role = quiet_role(_text(cell.get("source")), tags, has_table=table, has_display=display)
        if role and not SHOWN_AS_TAGGED & set(tags):
            cell["metadata"]["tags"] = [*tags, HIDE]
            tagged += 1
        if table and "remove-cell" not in tags and "remove-output" not in tags:
            following = cells[i + 1] if i + 1 < len(cells) else None
            if not (following and following.get("cell_type") == "markdown"
                    and CAPTION.match(_text(following.get("source")))):
                problems.append(f"cell {i}: prints a table with no table-caption at the top of the next "
                                "markdown cell")
    return tagged, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if there is work")
    args = parser.parse_args(argv)

    loaded = {}
    for path in args.notebooks:
        try:
            text = path.read_text(encoding="utf8")
            loaded[path] = (text, json.loads(text))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            print(f"tidy_notebooks: error: notebook = {str(path)[:80]!r}: {type(exc).__name__}; expected a "
                  ".ipynb file (JSON)", file=sys.stderr)
            return 2
        if not isinstance(loaded[path][1], dict) or not isinstance(loaded[path][1].get("cells"), list):
            print(f"tidy_notebooks: error: notebook = {str(path)[:80]!r} has no list of cells; expected a "
                  ".ipynb file", file=sys.stderr)
            return 2

    changed = problems_found = False
    for path, (text, nb) in loaded.items():
        tagged, problems = tidy(nb)
        for problem in problems:
            print(f"{path}: {problem}")
        problems_found |= bool(problems)
        new_text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if new_text == text:
            continue
        changed = True
        if args.check:
            print(f"{path}: {tagged} setup cells would be tagged {HIDE}")
        else:
            path.write_text(new_text, encoding="utf8")
            print(f"{path}: {tagged} setup cells tagged {HIDE}")
    return 1 if problems_found or (args.check and changed) else 0

if __name__ == "__main__":
    sys.exit(main())
