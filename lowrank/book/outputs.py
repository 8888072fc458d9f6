"""A run folder's figures and tables as files a user can open without Jupyter.

After a chapter ran, :func:`write_outputs` reads its executed notebook and writes into the run's
``files/``:

- every glued figure as ``<glue key>.png`` and, when the kernel also rendered it as SVG (run
  kernels do, see :func:`kernel_env`), ``<glue key>.svg``;
- every table the page shows (a pandas table in a cell's HTML output) as
  ``<chapter prefix>_table_<k>.csv``, numbered in page order.

It returns the chapter's glued values for ``results.json`` with each figure's repr replaced by
the files that hold it, and a ``"tables"`` entry naming the CSV files.
"""
from __future__ import annotations

import base64
import csv
import json
from pathlib import Path
from typing import Any

from ..glued import RECORD_PREFIX, read_glue

__all__ = ["FORMATS_ENV", "kernel_env", "write_outputs", "html_tables"]

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
            elif not meta and "text/html" in data:
                for rows in html_tables(_text(data["text/html"])):
                    name = f"ch{prefix}_table_{len(tables) + 1}"
                    with open(files / f"{name}.csv", "w", newline="", encoding="utf8") as f:
                        csv.writer(f).writerows(rows)
                    tables[name] = f"files/{name}.csv"
    if tables:
        results["tables"] = tables
    return results
