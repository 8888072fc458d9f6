"""Every Python block of README.md runs as written, alone, in a fresh interpreter: a block that
needs another block's import, a placeholder path or a name the library does not have fails here."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf8"), re.S | re.M)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_each_readme_python_block_runs_alone(k, tmp_path):
    # the block's last expression is printed, as a reader pasting it into a REPL sees it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", BLOCKS[k]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"README block {k + 1} failed:\n{BLOCKS[k]}\n{done.stderr[-2000:]}"


def test_make_help_prints_every_line_of_the_makefiles_header():
    header = [line for line in (ROOT / "Makefile").read_text().splitlines()[:20] if line.startswith("#   ")]
    shown = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert len(header) > 8 and len(shown.splitlines()) == len(header)
    for line in header:
        assert line[1:].strip() in shown


def test_the_readme_and_the_cli_agree_with_the_code_on_limits():
    from lowrank.book import cli, planning

    text = " ".join((ROOT / "README.md").read_text(encoding="utf8").split())
    assert "Python 3.11 or newer" in text and "Python 3.11 (" not in text
    days = planning.TIME_BOUND_S // 86400
    force = cli._parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert ("over a week" if days == 7 else f"over {days} days") in " ".join(force.split())
