"""A run folder's figures and tables as files a user can open without Jupyter.

After a chapter ran, :func:`write_outputs` reads its executed notebook and writes into the run's
``files/``:

- every glued figure as ``<glue key>.png`` and, when the kernel also rendered it as SVG (run
  kernels do, see :func:`kernel_env`), ``<glue key>.svg``;
- every table the page shows (a pandas table in a cell's HTML output) as
  ``<chapter prefix>_table_<k>.csv``, numbered in page order.

It returns the chapter's glued values for ``results.json`` as plain values: each figure as the
files that hold it, each glued HTML value (a styled table, the answers, the verdict cards) as what
it shows, a table as its records (one dict per row, keyed by the header) and anything else as its
text, never Python's repr of the object; and a ``"tables"`` entry naming the CSV files.
"""
from __future__ import annotations

import base64
import csv
import json
from pathlib import Path
from typing import Any

from ..core.glued import RECORD_PREFIX, read_glue

__all__ = ["FORMATS_ENV", "kernel_env", "write_outputs", "html_tables", "html_value"]

FORMATS_ENV = "LOWRANK_FIGURE_FORMATS"  # read by lowrank.book.plotting.use_style


def kernel_env(scratch: Path) -> dict[str, str]:
    """Environment for a run's kernel: figures rendered as SVG as well as PNG (the book's style,
    :func:`lowrank.book.plotting.use_style`, reads it), so both reach the notebook and
    :func:`write_outputs`. ``scratch`` is the run's temporary folder (unused: nothing to write)."""
    return {FORMATS_ENV: "png2x,svg"}


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def html_tables(html: str) -> list[list[list[str]]]:
    """The tables of an HTML fragment, each as rows of cell texts (header rows first)."""
    from bs4 import BeautifulSoup

    out = []
    for table in BeautifulSoup(html, "html.parser").find_all("table"):
        rows = []
        for tr in table.find_all("tr"):
            cells = [" ".join(td.get_text(" ").split()) for td in tr.find_all(["th", "td"])]
            if any(cells):
                rows.append(cells)
        if rows:
            out.append(rows)
    return out


def _cell(text: str) -> Any:
    """A table cell as a number when it is one ('0.034', '1,024'), else its text."""
    plain = text.replace(",", "")
    try:
        return int(plain)
    except ValueError:
        pass
    try:
        return float(plain)
    except ValueError:
        return text


def _records(rows: list[list[str]]) -> list[dict[str, Any]]:
    """Rows of cell texts, the first the header, as records; a header cell left empty is named by
    its position (a pandas index column)."""
    header = [h or f"column_{i + 1}" for i, h in enumerate(rows[0])]
    return [dict(zip(header, (_cell(c) for c in row))) for row in rows[1:]]


def html_value(html: str) -> Any:
    """What a glued HTML value shows, as plain data: its table's records (a list of them for
    several tables), or, without a table, its text on one line."""
    from bs4 import BeautifulSoup

    tables = html_tables(html)
    if tables:
        records = [_records(t) for t in tables]
        return records[0] if len(records) == 1 else records
    return " ".join(BeautifulSoup(html, "html.parser").get_text(" ").split())


def write_outputs(notebook: Path, files: Path) -> dict[str, Any]:
    """Write the figures and tables of an executed notebook into ``files``; return its results
    (glued values, figures as ``{"png": "files/KEY.png", "svg": ...}``, ``"tables"``)."""
    notebook, files = Path(notebook), Path(files)
    results = read_glue(notebook)
    nb = json.loads(notebook.read_text(encoding="utf8"))
    prefix = notebook.stem.split("_", 1)[0]
    tables: dict[str, str] = {}
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            meta = out.get("metadata", {}).get("scrapbook")
            if meta and RECORD_PREFIX + "image/png" in data:
                key = meta["name"]
                saved = {}
                png = files / f"{key}.png"
                png.write_bytes(base64.b64decode(_text(data[RECORD_PREFIX + "image/png"])))
                saved["png"] = f"files/{png.name}"
                if RECORD_PREFIX + "image/svg+xml" in data:
                    svg = files / f"{key}.svg"
                    svg.write_text(_text(data[RECORD_PREFIX + "image/svg+xml"]), encoding="utf8")
                    saved["svg"] = f"files/{svg.name}"
                results[key] = saved
            elif meta and RECORD_PREFIX + "text/html" in data:
                results[meta["name"]] = html_value(_text(data[RECORD_PREFIX + "text/html"]))
            elif not meta and "text/html" in data:
                for rows in html_tables(_text(data["text/html"])):
                    name = f"ch{prefix}_table_{len(tables) + 1}"
                    with open(files / f"{name}.csv", "w", newline="", encoding="utf8") as f:
                        csv.writer(f).writerows(rows)
                    tables[name] = f"files/{name}.csv"
    if tables:
        results["tables"] = tables
    return results
