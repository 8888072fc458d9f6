"""Re-execute notebooks in place at their default parameters (``make notebooks``).

Each notebook runs top to bottom in its own folder with the ``python3`` kernel (the one
``make setup`` installs into .venv) and the per-cell timeout of ``_config.yml``. A notebook is
rewritten only when every cell ran; on an error the committed file is left as it was, the error is
reported, the remaining notebooks still run, and the exit status is 1. Per-cell timing metadata is
neither recorded nor kept (nbclient's ``execution``, papermill's ``papermill``), so a re-run changes
a notebook only where its outputs changed and in its ``lowrank_execution`` metadata: when the run
ended and how long it took, for the book's execution report (_ext/execution_report.py), and the
parameter set it ran with (``scale``: always ``default`` here), which chapter 08's verdict table
prints beside each verdict (lowrank.experiments.synthesis.notebook_scale).

usage: python tools/execute_notebooks.py chapters/*.ipynb
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute_in_place(path: Path, *, kernel: str, timeout: int) -> None:
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("lowrank_execution", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=timeout,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},  # cwd of the kernel
    ).execute()
    nb.metadata["lowrank_execution"] = {
        "end_time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration": round(time.perf_counter() - start, 1),
        "scale": "default",  # the notebook's own parameters cell, no parameter set
    }
    # write next to the target, then rename: an interrupted run never leaves half a notebook
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".ipynb")
    try:
        with os.fdopen(fd, "w", encoding="utf8") as fh:
            nbformat.write(nb, fh)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--kernel", default="python3", help="kernel name (default: python3)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (default: 900)")
    args = parser.parse_args(argv)

    failed = []
    for path in args.notebooks:
        print(f"executing {path} ...", flush=True)
        start = time.perf_counter()
        try:
            execute_in_place(path, kernel=args.kernel, timeout=args.timeout)
        except Exception as exc:  # cell error, timeout, dead kernel: report and go on
            print(f"FAILED {path} (left unchanged):\n{exc}", file=sys.stderr, flush=True)
            failed.append(path)
            continue
        print(f"  done in {time.perf_counter() - start:.1f} s", flush=True)

    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
