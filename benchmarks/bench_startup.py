"""Item 6: start-up of the ``lowrank`` command against ``papermill --help`` (issue 13).

Ours: ``python -m lowrank list`` (reads every chapter's parameters cell and parameter sets) and
``python -m lowrank --help``. Baseline: ``python -m papermill --help``, the tool ``lowrank run``
drives. Each is a fresh process of the same interpreter, started from this checkout (so this
checkout's lowrank is measured), timed interleaved by the harness: the ratio is the median of
paired ratios over five repetitions. Target 1.5. A check runs ``lowrank list`` in a process that
then reports whether torch, pandas or papermill were imported: the book layer must not load them
to list chapters or print help.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import ERROR, Result, compare

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5
HEAVY = ("torch", "pandas", "papermill", "numpy")
_PROBE = ("import io, runpy, sys, contextlib, json\n"
          "sys.argv = ['lowrank'] + sys.argv[1:]\n"
          "with contextlib.redirect_stdout(io.StringIO()):\n"
          "    try:\n"
          "        runpy.run_module('lowrank', run_name='__main__')\n"
          "    except SystemExit:\n"
          "        pass\n"
          f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _command(args: list[str]):
    cmd, env = [sys.executable, *args], _env()

    def run():
        done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return run


def heavy_imports(*args: str) -> list[str]:
    """Which of torch, pandas, papermill, numpy a ``lowrank ARGS`` process imported."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_startup(*, timing: dict) -> list[Result]:
    baseline = ("papermill --help", _command(["-m", "papermill", "--help"]))
    rows = []
    for key, args in (("startup_list", ["list"]), ("startup_help", ["--help"])):
        heavy = heavy_imports(*args)
        row = compare(key, 6, ours=(f"lowrank {' '.join(args)}", _command(["-m", "lowrank", *args])),
                      baseline=baseline, config={"command": f"lowrank {' '.join(args)}"}, target=TARGET,
                      extra={"heavy_imports": heavy}, **timing)
        if heavy:
            row.status, row.note = ERROR, f"imports {', '.join(heavy)} at start-up"
        rows.append(row)
    return rows
