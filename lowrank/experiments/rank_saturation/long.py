"""The command that fills chapter 06's long-scale increment store (:mod:`.store`) with the grid the
chapter's long parameter set states (chapters/params/long/06_rank_saturation.yaml):

    python -m lowrank.experiments.rank_saturation.long --store runs/06_rank_saturation_long.jsonl

Finished lengths are skipped, so an interrupted run resumes at the first missing one. The committed
store is never written (nor a link to it): grow a copy, and commit the copy.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from ...core.commands import OneLineParser, interrupt_status, interrupt_words, one_line, signals_interrupt
from ...stores.sweep import store_problem
from ...core.files import BOOK_ROOT
from .store import EXPERIMENT, GRID_PARAMETERS, fill_store, read_store

__all__ = ["LONG_SET", "long_parameters", "main"]

LONG_SET = Path("chapters") / "params" / "long" / "06_rank_saturation.yaml"


def long_parameters(book: str | Path = BOOK_ROOT) -> dict[str, Any]:
    """The long grid's parameters (:data:`GRID_PARAMETERS`) as the chapter's long set states them,
    checked by the chapter's schema; ValueError naming the file when one is missing or out of range."""
    from ...core.params import ParameterError, validate
    from . import SCHEMA

    path = Path(book) / LONG_SET
    try:
        values = yaml.safe_load(path.read_text(encoding="utf8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"cannot read the long parameter set {path} ({type(e).__name__})") from None
    missing = [k for k in GRID_PARAMETERS if k not in values]
    if missing:
        raise ValueError(f"{path} does not state {', '.join(missing)}: the command reads the long grid from it")
    try:
        return validate(SCHEMA, {k: values[k] for k in GRID_PARAMETERS}, partial=True, label=str(path))
    except ParameterError as e:
        raise ValueError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    """Exit status 0 done; 2 refused (one line, nothing written): a store that is not a ``.jsonl``
    file, is committed (or a link to a committed file), or is not a store of this experiment, or a
    long set that lost its grid; 1 the computation failed; 130 Ctrl-C, 143 SIGTERM (finished
    lengths are in the store, and the same command resumes)."""
    prog = "python -m lowrank.experiments.rank_saturation.long"
    ap = OneLineParser(prog=prog, description="Fill chapter 06's long-scale increment store (resumable: finished "
                                              "lengths are skipped).")
    ap.add_argument("--store", required=True, help="the results store (.jsonl) to append to")
    ap.add_argument("--progress", action="store_true", help="show a progress bar")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed in one line
        return e.code if isinstance(e.code, int) else 2
    store = Path(a.store).expanduser()
    if store.suffix != ".jsonl" or store.is_dir():
        print(f"{prog}: error: --store must name a .jsonl file, got {one_line(a.store, 200)!r}", file=sys.stderr)
        return 2
    why = store_problem(store.resolve(), (EXPERIMENT,), BOOK_ROOT)
    if why:
        print(f"{prog}: error: --store {one_line(store, 200)!r}: {why}; nothing was written", file=sys.stderr)
        return 2
    try:
        P = long_parameters(BOOK_ROOT)
    except ValueError as e:
        print(f"{prog}: error: {one_line(e, 500)}", file=sys.stderr)
        return 2
    try:
        with signals_interrupt():
            fill_store(P, store, progress=a.progress)
    except KeyboardInterrupt as e:
        print(f"{prog}: {interrupt_words(e)}; the finished lengths are in {store}, and the same command resumes",
              file=sys.stderr)
        return interrupt_status(e)
    except Exception as e:  # noqa: BLE001 - a failure inside a length's computation: its cause, one line
        print(f"{prog}: error: stopped: {one_line(e) or type(e).__name__}", file=sys.stderr)
        return 1
    got = read_store(store, P)
    print(f"{store}: {len(got['ns'])} of {len(got['ns']) + len(got['missing'])} lengths of the long grid")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
