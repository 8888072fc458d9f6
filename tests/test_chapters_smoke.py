"""Every chapter runs to the end under papermill with its smoke parameters.

For ``chapters/<stem>.ipynb`` the parameters are read from ``chapters/params/smoke/<stem>.yaml``
(seconds-scale values of the names in the notebook's ``parameters`` cell). The notebook runs with
the ``python3`` kernel, in ``chapters/`` as in the book, and is written to a temporary folder: the
committed notebook is never touched. A chapter without a smoke file, a smoke file naming a
parameter the notebook does not have, or a notebook without a ``parameters`` cell fails the test
(papermill would otherwise run the chapter at its default, book-size parameters).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import papermill as pm
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
SMOKE = CHAPTERS / "params" / "smoke"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
CELL_TIMEOUT_S = 600  # a hung kernel fails instead of stalling CI


def _smoke_parameters(notebook: Path) -> dict:
    path = SMOKE / f"{notebook.stem}.yaml"
    if not path.is_file():
        pytest.fail(
            f"{notebook.relative_to(ROOT)} has no smoke parameters: create "
            f"{path.relative_to(ROOT)} with values of its `parameters` cell that run in seconds"
        )
    params = yaml.safe_load(path.read_text(encoding="utf8")) or {}
    if not isinstance(params, dict):
        pytest.fail(f"{path.relative_to(ROOT)} must be a mapping of parameter names to values")
    return params


def _check_parameters_cell(notebook: Path, params: dict) -> None:
    nb = nbformat.read(notebook, as_version=4)
    if not any("parameters" in c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "code"):
        pytest.fail(f"{notebook.relative_to(ROOT)} has no code cell tagged `parameters`")
    known = set(pm.inspect_notebook(str(notebook)))
    unknown = sorted(set(params) - known)
    if unknown:
        pytest.fail(
            f"smoke parameters {unknown} are not in the `parameters` cell of "
            f"{notebook.relative_to(ROOT)} (it defines {sorted(known)})"
        )


@pytest.mark.parametrize(
    "notebook",
    NOTEBOOKS or [pytest.param(None, id="no-chapters")],
    ids=lambda p: p.stem if isinstance(p, Path) else str(p),
)
def test_chapter_runs_with_smoke_parameters(notebook: Path | None, tmp_path: Path) -> None:
    assert notebook is not None, f"no notebooks found in {CHAPTERS}"
    params = _smoke_parameters(notebook)
    _check_parameters_cell(notebook, params)

    out = tmp_path / notebook.name
    pm.execute_notebook(
        str(notebook),
        str(out),
        parameters=params,
        kernel_name="python3",
        cwd=str(CHAPTERS),
        execution_timeout=CELL_TIMEOUT_S,
        progress_bar=False,
    )  # raises PapermillExecutionError, with the cell's traceback, if a cell fails

    executed = nbformat.read(out, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error outputs in {out}: {[e.ename for e in errors]}"
    not_run = [i for i, c in enumerate(code) if c.source.strip() and c.execution_count is None]
    assert not not_run, f"code cells {not_run} of {notebook.name} did not run"
