"""Ctrl-C (SIGINT to the whole process group) and SIGHUP mid-cell: one line, status 130, no traceback.

The kernel is a process of the same group, so it gets the signal too; the socket errors it then
prints belong to the kernel's log in the failed run's folder, not to the user's terminal.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from helpers import default_sigint

ROOT = Path(__file__).resolve().parents[1]

COMMAND = textwrap.dedent("""
    import sys
    from lowrank.core import params
    from lowrank.book import cli
    from lowrank.book.params import SCHEMAS

    SCHEMAS["99_sleep"] = {"t": params.Int(0, 600)}
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGHUP"])
def test_a_signal_to_the_group_mid_cell_prints_one_line(tmp_path, sig):
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    params = new_code_cell("t = 60")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [params, new_code_cell("import os, pathlib, time\n"
                                      "(pathlib.Path(os.environ['LOWRANK_RUN_DIR']) / 'started').touch()\n"
                                      "time.sleep(t)")]
    nbformat.write(nb, book / "chapters" / "99_sleep.ipynb")
    script = tmp_path / "lowrank_cmd.py"
    script.write_text(COMMAND)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runs = tmp_path / "runs"
    runs.mkdir()
    p = subprocess.Popen([sys.executable, str(script), "run", str(book / "chapters" / "99_sleep.ipynb"), "--root",
                          str(book), "-o", str(runs / "r"), "--no-progress"], env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_sigint)
    try:
        deadline = time.time() + 120
        while not list(runs.glob(".r.tmp-*/files/started")) and time.time() < deadline and p.poll() is None:
            time.sleep(0.2)
        assert list(runs.glob(".r.tmp-*/files/started")), "the cell never started"
        os.killpg(p.pid, getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    # the plan and estimate a run states before it starts, then the one line the signal gives
    plan = ("lowrank: running ", "lowrank: estimate")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert [ln.startswith(plan) for ln in lines] == [True, True, False], err
    lines = lines[2:]
    assert p.returncode == 130, err
    assert len(lines) == 1 and lines[0].startswith("lowrank: error: ") and "interrupted" in lines[0], err
    assert "Traceback" not in err and "ZMQError" not in err
    assert sorted(x.name for x in runs.iterdir()) == ["r.failed"]  # no hidden folder, no lock
