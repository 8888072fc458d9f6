"""Which notebook cells are setup a reader need not see: the parameters, the imports, table formatting.

One rule, used by the book's Sphinx extension (``_ext/book_ui.py``, which hides such cells on every
page whatever the notebook's tags say) and by ``tools/tidy_notebooks.py`` (which writes the same
decision into the notebooks as ``hide-input`` tags, so Jupyter shows them the same way). A hidden
cell's code stays one click away, and the re-run box documents the parameters.
"""
from __future__ import annotations

import ast

PARAMETERS = "parameters"
# A cell that prints where its numbers come from (git revisions, dates, machine, costs): the tag
# folds the whole cell, output included, into one box the reader opens on demand.
PROVENANCE = "provenance"
SETUP = "setup"
TABLE = "table"

# The toggle a reader sees in place of the hidden code.
PROMPTS = {
    PARAMETERS: "Show the parameters",
    SETUP: "Show the imports and setup",
    TABLE: "Show the code behind this table",
    PROVENANCE: "Show the provenance: revisions, dates, machine and costs",
}


def _starts_with_import(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics: not a plain setup cell
        return False
    return bool(body) and isinstance(body[0], (ast.Import, ast.ImportFrom))


def quiet_role(source: str, tags, *, has_table: bool, has_display: bool) -> str | None:
    """PARAMETERS, SETUP, TABLE or None (a cell the reader sees).

    ``has_table``: an output of the cell is an HTML table; ``has_display``: it shows anything rich
    (a table, an image). A setup cell starts with an import and shows nothing rich; a cell that
    prints a figure or plain text is left alone.
    """
    tags = set(tags or ())
    if PARAMETERS in tags:
        return PARAMETERS
    if has_table:
        return TABLE
    if not has_display and _starts_with_import(source):
        return SETUP
    return None
