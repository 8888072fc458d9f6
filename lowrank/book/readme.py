"""The README's opening answer: the landing page's abstract (:mod:`lowrank.experiments.abstract`),
written from the committed chapters' verdicts between two marker lines of README.md.

    python -m lowrank.book.readme [ROOT]            rewrite the block from chapters/*.ipynb
    python -m lowrank.book.readme [ROOT] --check    exit 1 when the README's block differs

``make notebooks`` runs it after re-executing the chapters, and a test keeps the two equal, as the
README's store counts are kept.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

__all__ = ["BEGIN", "END", "abstract_markdown", "readme_block", "main"]

BEGIN = "<!-- abstract: written by the book from chapter 08's verdicts; python -m lowrank.book.readme refreshes it -->"
END = "<!-- /abstract -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)


def abstract_markdown(root: Path) -> str:
    """The abstract of the executed chapters under ``root/chapters``, as Markdown paragraphs."""
    from ..experiments import synthesis

    tables = synthesis.run({"chapters_dir": str(Path(root) / "chapters"), "practitioner_ns": ()})
    return synthesis.abstract_markdown(tables)


def readme_block(text: str) -> str | None:
    """The README's block between the markers (None without them)."""
    m = _BLOCK.search(text)
    return m.group(1).strip() if m else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lowrank.book.readme", description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=Path.cwd())
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when they differ")
    args = ap.parse_args(argv)
    path = args.root / "README.md"
    text = path.read_text(encoding="utf8")
    if readme_block(text) is None:
        print(f"{path.name}: no abstract markers ({BEGIN!r} ... {END!r})", file=sys.stderr)
        return 2
    said = abstract_markdown(args.root)
    if args.check:
        same = readme_block(text) == said
        print("README abstract is current" if same else "README abstract differs: run python -m lowrank.book.readme")
        return 0 if same else 1
    path.write_text(_BLOCK.sub(lambda m: f"{BEGIN}\n{said}\n{END}", text, count=1), encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
