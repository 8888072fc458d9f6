"""tools/tidy_notebooks.py: setup cells tagged hidden, idempotently; uncaptioned tables reported."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "tidy_notebooks.py"
TABLE = new_output("display_data", data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "t"})


def _notebook(path: Path, caption: bool) -> Path:
    nb = new_notebook()
    nb.cells = [new_markdown_cell("# T"),
                new_code_cell("seed = 0", metadata={"tags": ["parameters"]}),
                new_code_cell("import numpy as np"),
                new_code_cell("df.style", outputs=[TABLE]),
                new_markdown_cell("```{table-caption}\n:name: tab-t\n\nIt holds.\n```" if caption
                                  else "As the table above shows."),
                new_code_cell("x = compute()"),
                new_code_cell("import x\nplot()", outputs=[new_output("display_data", data={"image/png": "AA"})])]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf8")
    return path


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True)


def _tags(path: Path) -> list[list[str]]:
    return [c.metadata.get("tags", []) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_setup_cells_are_tagged_once_and_outputs_untouched(tmp_path):
    path = _notebook(tmp_path / "a.ipynb", caption=True)
    before = nbformat.read(path, as_version=4)
    assert run("--check", path).returncode == 1
    first = run(path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _tags(path) == [["parameters", "hide-input"], ["hide-input"], ["hide-input"], [], []]
    after = nbformat.read(path, as_version=4)
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    text = path.read_text(encoding="utf8")
    assert run(path).returncode == 0 and path.read_text(encoding="utf8") == text
    assert run("--check", path).returncode == 0


def test_uncaptioned_tables_and_positional_references_are_reported(tmp_path):
    path = _notebook(tmp_path / "b.ipynb", caption=False)
    result = run(path)
    assert result.returncode == 1
    assert "cell 3: prints a table with no table-caption" in result.stdout
    assert "'the table above': refer to the table by number" in result.stdout


def test_bad_input_is_one_line_with_status_2(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json", encoding="utf8")
    for path in (bad, tmp_path / "missing.ipynb"):
        result = run(path)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "tidy_notebooks: error: notebook =" in result.stderr
    assert bad.read_text(encoding="utf8") == "{not json"
