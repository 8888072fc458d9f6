"""``lowrank book`` runs every chapter in one process: a run must leave that process as it found it.

The kernel of each run gets its own temporary folder (``TMPDIR``), removed when the run ends; if
that setting leaked into the running process, ``tempfile`` would cache the removed folder and the
next chapter's kernel could not start. pytest resolves its own temporary folder before any run, so
only a fresh interpreter shows the failure: the test runs three chapters there, one after another,
exactly as ``build_book`` does.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lowrank.book import runner

ROOT = Path(__file__).resolve().parents[1]
KERNEL_ENV = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

THREE_CHAPTERS = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    from lowrank.book import runner

    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    # tempfile is not used before the first run: a setting leaked by that run would be cached
    for name in sys.argv[3:]:
        plan = runner.plan_run(runner.resolve_chapter(name, root), scale="smoke", kernel="python3")
        done = runner.execute(plan, out / name, progress_bar=False, timeout=300)
        here = Path(tempfile.gettempdir())
        assert here.is_dir() and out not in here.parents, here
        print("finished", name, done, flush=True)
""")


@pytest.mark.slow
@pytest.mark.slow
def test_three_chapters_run_one_after_another_in_a_fresh_interpreter(tmp_path):
    script = tmp_path / "three.py"
    script.write_text(THREE_CHAPTERS)
    done = subprocess.run([sys.executable, str(script), str(ROOT), str(tmp_path / "runs"), "01", "02", "03"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": KERNEL_ENV})
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line.split()[1] for line in done.stdout.splitlines() if line.startswith("finished")] == ["01", "02", "03"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["01", "02", "03"]


def test_the_kernel_gets_its_environment_and_this_process_keeps_its_own(tmp_path):
    import tempfile

    import papermill as pm

    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [new_code_cell("import os, tempfile\nprint(tempfile.gettempdir(), os.environ.get('LOWRANK_X'))")]
    nbformat.write(nb, tmp_path / "in.ipynb")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before, env_before = tempfile.gettempdir(), dict(os.environ)
    pm.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                        progress_bar=False, cwd=str(tmp_path),
                        kernel_manager_class=runner.kernel_manager_with_env({"TMPDIR": str(scratch),
                                                                             "LOWRANK_X": "seen"}))
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[0].outputs[0]["text"].split() == [str(scratch), "seen"]
    assert tempfile.gettempdir() == before and dict(os.environ) == env_before
