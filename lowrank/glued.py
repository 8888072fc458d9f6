"""Read the values a chapter glued (myst_nb.glue) back out of its executed notebook.

The synthesis chapter takes its evidence from the other chapters this way, so every number it
shows is one those chapters computed and nbval keeps honest, never a number typed by hand.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

__all__ = ["literal_value", "RECORD_PREFIX", "read_glue", "read_book_glue"]

RECORD_PREFIX = "application/papermill.record/"


# A float that is not finite is glued as its repr, which is not a Python literal.
_NOT_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def literal_value(text: str) -> Any:
    """Python literal from a glued repr (nan and inf as floats); other reprs (arrays, frames) stay strings."""
    if text in _NOT_FINITE:
        return _NOT_FINITE[text]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def read_glue(notebook: str | Path) -> dict[str, Any]:
    """{key: value} of every glued text/plain output of an executed notebook (last one wins)."""
    path = Path(notebook)
    if not path.is_file():
        raise FileNotFoundError(f"no executed notebook at {path}")
    nb = json.loads(path.read_text(encoding="utf8"))
    found: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook")
            text = out.get("data", {}).get(RECORD_PREFIX + "text/plain")
            if meta and text is not None:
                found[meta["name"]] = literal_value(text if isinstance(text, str) else "".join(text))
    return found


def read_book_glue(folder: str | Path, *, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """Glued values of every NN_*.ipynb in a folder, merged; keys are chapter-prefixed (chNN_)."""
    merged: dict[str, Any] = {}
    for nb in sorted(Path(folder).glob("[0-9][0-9]_*.ipynb")):
        if nb.stem not in exclude:
            merged.update(read_glue(nb))
    return merged
