"""A run folder's outputs: figures as PNG and SVG and tables as CSV under files/, named by glue key,
and results.json pointing at them instead of "<Figure size ...>" reprs."""
from __future__ import annotations

import base64
import csv
import json
import os

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from lowrank.book import outputs
from lowrank.book.plotting import use_style

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
TABLE = ("<style></style><table><thead><tr><th>heads h</th><th>rank</th></tr></thead>"
         "<tbody><tr><td>1</td><td>0.12</td></tr><tr><td>2, 4</td><td>1.00</td></tr></tbody></table>")


def _glued(name, data):
    return new_output("display_data", data={f"application/papermill.record/{k}": v for k, v in data.items()},
                      metadata={"scrapbook": {"name": name, "data": True, "display": False}})


def _notebook(tmp_path):
    nb = new_notebook()
    nb.cells = [
        new_code_cell("glue", outputs=[_glued("ch05_fig_a", {"image/png": PNG, "image/svg+xml": "<svg>a</svg>",
                                                             "text/plain": "<Figure size 825x396 with 1 Axes>"}),
                                       _glued("ch05_n", {"text/plain": "64"})]),
        new_code_cell("table", outputs=[new_output("execute_result", data={"text/html": TABLE, "text/plain": "x"},
                                                   execution_count=1)]),
        new_code_cell("fig b", outputs=[_glued("ch05_fig_b", {"image/png": PNG, "text/plain": "<Figure>"})]),
    ]
    path = tmp_path / "05_rank_barrier.ipynb"
    nbformat.write(nb, path)
    return path


def test_figures_and_tables_become_files_and_results_refer_to_them(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    results = outputs.write_outputs(_notebook(tmp_path), files)
    assert results["ch05_n"] == 64
    assert results["ch05_fig_a"] == {"png": "files/ch05_fig_a.png", "svg": "files/ch05_fig_a.svg"}
    assert results["ch05_fig_b"] == {"png": "files/ch05_fig_b.png"}
    assert (files / "ch05_fig_a.png").read_bytes().startswith(b"\x89PNG")
    assert (files / "ch05_fig_a.svg").read_text() == "<svg>a</svg>"
    assert results["tables"] == {"ch05_table_1": "files/ch05_table_1.csv"}
    with open(files / "ch05_table_1.csv", newline="") as f:
        assert list(csv.reader(f)) == [["heads h", "rank"], ["1", "0.12"], ["2, 4", "1.00"]]
    assert "<Figure" not in json.dumps(results)


def test_run_kernels_ask_the_book_style_for_svg_as_well(tmp_path, monkeypatch):
    env = outputs.kernel_env(tmp_path)
    assert env == {outputs.FORMATS_ENV: "png2x,svg"}
    from matplotlib_inline import backend_inline

    seen = []
    monkeypatch.setattr(backend_inline, "set_matplotlib_formats", lambda *f: seen.append(f))
    monkeypatch.setenv(outputs.FORMATS_ENV, env[outputs.FORMATS_ENV])
    use_style()
    monkeypatch.delenv(outputs.FORMATS_ENV)
    use_style()
    assert seen == [("png2x", "svg"), ("png2x",)] and os.environ.get(outputs.FORMATS_ENV) is None


def test_glued_html_values_are_stored_as_what_they_show_never_as_a_repr(tmp_path):
    nb = new_notebook()
    nb.cells = [new_code_cell("glue", outputs=[
        _glued("ch08_answers", {"text/html": "<div><p><strong>Min &amp; Li</strong> argue <em>that</em>.</p></div>",
                                "text/plain": "Html(answers)"}),
        _glued("ch08_counts", {"text/html": TABLE, "text/plain": "<pandas.io.formats.style.Styler at 0x7f00>"})])]
    path = tmp_path / "08_synthesis.ipynb"
    nbformat.write(nb, path)
    files = tmp_path / "files"
    files.mkdir()
    results = outputs.write_outputs(path, files)
    assert results["ch08_answers"] == "Min & Li argue that ."
    assert results["ch08_counts"] == [{"heads h": 1, "rank": 0.12}, {"heads h": "2, 4", "rank": 1.0}]


def test_no_committed_chapter_stores_a_repr_in_its_results(tmp_path):
    import re
    from pathlib import Path

    chapters = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb"))
    assert len(chapters) == 8
    for notebook in chapters:
        files = tmp_path / notebook.stem
        files.mkdir()
        text = json.dumps(outputs.write_outputs(notebook, files), default=repr)
        found = re.findall(r'"(<[^"]*\bat 0x[0-9a-f]+>|\w+\([a-z ]*\)|<Figure[^"]*>)"', text)
        assert not found, f"{notebook.name}: results.json would hold reprs {found[:3]}"
