"""The command that fills chapter 06's long-scale increment store (:mod:`.store`) with the grid the
chapter's long parameter set states (chapters/params/long/06_rank_saturation.yaml):

    python -m lowrank.experiments.rank_saturation.long --store data/results/06_rank_saturation_long.jsonl

Finished lengths are skipped, so an interrupted run resumes at the first missing one.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from ...files import BOOK_ROOT
from ...sweep import foreign_store
from .store import GRID_PARAMETERS, fill_store, read_store

__all__ = ["LONG_SET", "long_parameters", "main"]

LONG_SET = Path("chapters") / "params" / "long" / "06_rank_saturation.yaml"


def long_parameters(book: str | Path = BOOK_ROOT) -> dict[str, Any]:
    """The long grid's parameters (:data:`GRID_PARAMETERS`) as the chapter's long set states them,
    checked by the chapter's schema; ValueError naming the file when one is missing or out of range."""
    from ...params import ParameterError, validate
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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and status 2, as every input error of the book
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="python -m lowrank.experiments.rank_saturation.long",
                 description="Fill chapter 06's long-scale increment store (resumable: finished lengths are skipped).")
    ap.add_argument("--store", required=True, help="the results store (.jsonl) to append to")
    ap.add_argument("--progress", action="store_true", help="show a progress bar")
    a = ap.parse_args(argv)
    store = Path(a.store).expanduser()
    if store.suffix != ".jsonl" or store.is_dir():
        print(f"{ap.prog}: error: --store must name a .jsonl file, got {str(a.store)[:200]!r}", file=sys.stderr)
        return 2
    foreign = foreign_store(store)
    if foreign:
        print(f"{ap.prog}: error: --store {str(store)[:200]!r}: it is not a results store ({foreign}); "
              "nothing is appended to it", file=sys.stderr)
        return 2
    try:
        P = long_parameters(BOOK_ROOT)
    except ValueError as e:
        print(f"{ap.prog}: error: {str(e)[:500]}", file=sys.stderr)
        return 2
    fill_store(P, store, progress=a.progress)
    got = read_store(store, P)
    print(f"{store}: {len(got['ns'])} of {len(got['ns']) + len(got['missing'])} lengths of the long grid")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
