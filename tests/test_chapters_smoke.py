"""Every chapter runs to the end with its smoke parameters, the way ``lowrank run`` runs it.

For ``chapters/<stem>.ipynb`` the parameters are ``chapters/params/smoke/<stem>.yaml``
(seconds-scale values of the names in the notebook's ``parameters`` cell), read, checked and
executed by :mod:`lowrank.book.runner` -- the one YAML loader (``1e-3`` is a float here as in
``lowrank run``), the same schema and cross-parameter checks, papermill with the ``python3``
kernel in ``chapters/``. The run folder is a temporary folder: the committed notebook is never
touched. A chapter without a smoke file, a smoke file naming a parameter the notebook does not
have, or a notebook without a ``parameters`` cell fails the test (the chapter would otherwise
run at its default, book-size parameters).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from lowrank.book import runner

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
CELL_TIMEOUT_S = 600  # a hung kernel fails instead of stalling CI


@pytest.mark.slow
@pytest.mark.parametrize(
    "notebook",
    NOTEBOOKS or [pytest.param(None, id="no-chapters")],
    ids=lambda p: p.stem if isinstance(p, Path) else str(p),
)
def test_chapter_runs_with_smoke_parameters(notebook: Path | None, tmp_path: Path) -> None:
    assert notebook is not None, f"no notebooks found in {CHAPTERS}"
    chapter = runner.resolve_chapter(str(notebook), ROOT)
    if not chapter.param_file("smoke").is_file():
        pytest.fail(f"{notebook.relative_to(ROOT)} has no smoke parameters: create "
                    f"{chapter.param_file('smoke').relative_to(ROOT)} with values of its `parameters` "
                    "cell that run in seconds")
    try:
        plan = runner.plan_run(chapter, scale="smoke", kernel="python3")
        done = runner.execute(plan, tmp_path / "run", progress_bar=False, timeout=CELL_TIMEOUT_S,
                              command="tests/test_chapters_smoke.py")
    except runner.RunError as e:
        pytest.fail(f"{e}\n{getattr(e, 'traceback', '')}", pytrace=False)

    executed = nbformat.read(done / notebook.name, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error outputs in {done}: {[e.ename for e in errors]}"
    not_run = [i for i, c in enumerate(code) if c.source.strip() and c.execution_count is None]
    assert not not_run, f"code cells {not_run} of {notebook.name} did not run"
    assert not list(tmp_path.glob(".*")), "the run left hidden temporary folders or locks behind"
