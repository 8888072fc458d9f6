"""Read the values a chapter glued (myst_nb.glue) back out of its executed notebook.

A run's ``results.json`` and the chapter listing read a notebook's own glue this way. Chapters
hand their evidence to chapter 08 as data instead (:mod:`lowrank.experiments.evidence`).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

__all__ = ["literal_value", "RECORD_PREFIX", "read_glue"]

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
