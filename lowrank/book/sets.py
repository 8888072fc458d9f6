"""Every parameter set of the book with what it needs, its estimate and its measured time.

Reads each set's ``metadata`` block (:mod:`lowrank.book.costs`) and computes its estimate from
its full parameters (the notebook's defaults updated by the set), the numbers ``lowrank list``,
``lowrank book --dry-run``, the README table and the "Paper scale" page show.
``python -m lowrank.book.sets [ROOT]`` prints the README's table; ``--readme`` writes it there.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .costs import DEFAULT_HARDWARE, METADATA_KEY, SetInfo, duration, estimate, measured_time, read_metadata
from ..experiments.costs import run_keys
from ..core.files import atomic_write_text
from ..core.params import SCALES
from .params import SCHEMAS, ParameterError, validate
from .runner import Chapter, find_root, load_yaml, notebook_parameters

__all__ = ["SHOWN_SCALES", "set_parameters", "set_info", "book_sets", "markdown_table", "main"]

# The scales whose costs the book shows: all but the seconds-long smoke sets of the tests.
SHOWN_SCALES = tuple(s for s in SCALES if s != "smoke")


def set_parameters(notebook: Path, values: Mapping[str, Any]) -> dict[str, Any]:
    """The full parameters of a run: the notebook's defaults updated by ``values`` (metadata left
    out), checked by the chapter's schema and constraints."""
    chapter = Chapter(Path(notebook).stem, Path(notebook))
    defaults = {k: v["default"] for k, v in notebook_parameters(chapter, papermill=False).items()}
    merged = {**defaults, **{k: v for k, v in values.items() if k != METADATA_KEY}}
    return validate(chapter.name, merged)


def set_info(root: Path, notebook: Path, scale: str) -> SetInfo:
    """Hardware, devices, memory, estimate and measured time of one scale of a chapter (no
    estimate for a notebook without a registered schema)."""
    notebook = Path(notebook)
    name = notebook.stem
    values: dict[str, Any] = {}
    meta = None
    if scale != "default":
        path = notebook.parent / "params" / scale / f"{name}.yaml"
        values = load_yaml(path.read_text(encoding="utf8")) or {}
        meta = read_metadata(path, values)
    params = None
    if name in SCHEMAS:
        try:
            params = set_parameters(notebook, values)
        except ParameterError:
            params = None  # the notebook and its schema disagree; the chapter's own tests say so
    if meta is None:
        device = "cuda" if (params or {}).get("device") == "cuda" else "cpu"
        hardware, memory, disk = DEFAULT_HARDWARE, "a few GB at most", ""
    else:
        device, hardware, memory, disk = meta["devices"], meta["hardware"], meta["memory"], str(meta.get("disk", ""))
    cost = estimate(name, params, device=device, root=root) if params is not None else None
    keys = run_keys(name, params) if params is not None and meta is not None else None
    return SetInfo(name, scale, hardware, device, memory, disk, cost, measured_time(root, notebook, meta, keys))


def book_sets(root: Path, scales=SHOWN_SCALES) -> list[SetInfo]:
    """Every chapter's sets of ``scales`` that exist, in chapter then scale order."""
    out = []
    for notebook in sorted((Path(root) / "chapters").glob("[0-9][0-9]_*.ipynb")):
        if notebook.stem not in SCHEMAS:
            continue
        for scale in scales:
            if scale == "default" or (notebook.parent / "params" / scale / f"{notebook.stem}.yaml").is_file():
                out.append(set_info(root, notebook, scale))
    return out


def markdown_table(root: Path, scales=SHOWN_SCALES) -> str:
    """The README's table of every default, long and paper set: hardware, estimate, measured time."""
    rows = ["| chapter | scale | hardware | estimate | measured |", "|---|---|---|---|---|"]
    for s in book_sets(root, scales):
        rows.append(f"| {s.chapter[:2]} | {s.scale} | {s.hardware} | {s.estimate_text()} | {s.measured.text()} |")
    return "\n".join(rows) + "\n"


BOOK_ROW = "| `make book` |"


def book_row(root: Path) -> str:
    """The README's row for ``make book``, from the chapters' last default executions (their
    execution records): how long they took together, the quickest and the slowest."""
    timed = [(s.chapter[:2], s.measured.seconds) for s in book_sets(root, ("default",))
             if s.measured.seconds is not None]
    if not timed:
        return f"{BOOK_ROW} every chapter, then the render; under a minute when nothing changed |"
    total = sum(t for _, t in timed)
    (fast, t_fast), (slow, t_slow) = min(timed, key=lambda x: x[1]), max(timed, key=lambda x: x[1])
    return (f"{BOOK_ROW} the {len(timed)} chapters took {duration(total)} together at their last execution "
            f"(from {duration(t_fast)} for chapter {fast} to {duration(t_slow)} for chapter {slow}), then "
            f"the render adds a few minutes; under a minute when nothing changed |")


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.book.sets [ROOT] [--readme]``: print the table of every set's costs
    (Markdown), or with ``--readme`` replace the table in ROOT/README.md with it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    readme = "--readme" in argv
    args = [a for a in argv if a != "--readme"]
    root = Path(args[0]) if args else find_root()
    if root is None or not (root / "chapters").is_dir():
        print(f"lowrank.book.sets: error: no chapters/ folder in {str(root)[:200]}", file=sys.stderr)
        return 2
    table = markdown_table(root)
    if not readme:
        sys.stdout.write(table)
        return 0
    path = root / "README.md"
    text = path.read_text(encoding="utf8") if path.is_file() else ""
    start = text.find(table.splitlines()[0])
    if start < 0:
        print(f"lowrank.book.sets: error: {path} has no cost table (a line {table.splitlines()[0]!r})",
              file=sys.stderr)
        return 2
    end = text.find("\n\n", start)
    end = len(text) if end < 0 else end + 1
    text = text[:start] + table + text[end:]
    row = text.find(BOOK_ROW)
    if row >= 0:
        stop = text.find("\n", row)
        text = text[:row] + book_row(root) + text[stop if stop >= 0 else len(text):]
    atomic_write_text(path, text)
    print(f"lowrank.book.sets: table in {path} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
