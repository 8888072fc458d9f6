"""Re-execute notebooks in place at their default parameters (``make notebooks``).

A thin caller of :func:`lowrank.book.runner.execute_in_place`, the same papermill execution
that ``lowrank run``, ``lowrank book`` and the smoke tests use. Each notebook runs top to bottom
in its own folder with the ``python3`` kernel (the one ``make setup`` installs into .venv) and a
per-cell timeout. A notebook is rewritten only when every cell ran; on an error the committed
file is left as it was, the failing cell is named, the remaining notebooks still run, and the
exit status is 1 (2 for a notebook path that does not exist). Per-cell timing metadata is neither
recorded nor kept, so a re-run changes a notebook only where its outputs changed and in its
``lowrank_execution`` metadata: when the run ended and how long it took, for the book's execution
report (_ext/execution_report.py), and the parameter set it ran with (``scale``: always
``default`` here), which chapter 08's verdict table prints beside each verdict.

usage: python tools/execute_notebooks.py chapters/*.ipynb
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's lowrank

from lowrank.book.runner import RunError, execute_in_place  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--kernel", default="python3", help="kernel name (default: python3)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (default: 900)")
    args = parser.parse_args(argv)

    missing = [p for p in args.notebooks if not p.is_file() or p.suffix != ".ipynb"]
    if missing:
        print(f"execute_notebooks: error: not a notebook file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    failed = []
    for path in args.notebooks:
        print(f"executing {path} ...", flush=True)
        start = time.perf_counter()
        try:
            execute_in_place(path, kernel=args.kernel, timeout=args.timeout)
        except RunError as exc:  # a cell failed, timed out, or the kernel died: report and go on
            print(f"FAILED {path} (left unchanged): {exc}", file=sys.stderr, flush=True)
            failed.append(path)
            continue
        except Exception as exc:  # noqa: BLE001 - the kernel could not start, say
            print(f"FAILED {path} (left unchanged): {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            failed.append(path)
            continue
        print(f"  done in {time.perf_counter() - start:.1f} s", flush=True)

    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
