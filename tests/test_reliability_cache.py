"""A damaged jupyter-cache is detected by tools/clear_stale_cache.sh and cleared, so ``make book``
re-executes instead of failing with a traceback from inside jupyter-cache."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "clear_stale_cache.sh"


def _clear(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), str(cache)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable})


def _cached(tmp_path: Path) -> Path:
    """A cache that the script has stamped as current, holding one executed notebook."""
    from jupyter_cache import get_cache

    cache = tmp_path / "_build" / ".jupyter_cache"
    assert _clear(cache).returncode == 0
    cell = new_code_cell("print(1)", execution_count=1, outputs=[new_output("stream", name="stdout", text="1\n")])
    nb = new_notebook(cells=[cell], metadata={"kernelspec": {"name": "python3", "display_name": "P",
                                                             "language": "python"}})
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    get_cache(str(cache)).cache_notebook_file(str(path), check_validity=False)
    (tmp_path / "_build" / ".doctrees").mkdir()
    return cache


def _damage_db(cache: Path) -> None:
    (cache / "global.db").write_bytes(b"not a database at all" * 100)


def _damage_notebook(cache: Path) -> None:
    [nb] = list((cache / "executed").rglob("*.ipynb"))
    nb.write_text("{ truncated")


def _remove_notebook(cache: Path) -> None:
    shutil.rmtree(cache / "executed")


def test_a_healthy_current_cache_is_kept(tmp_path):
    cache = _cached(tmp_path)
    done = _clear(cache)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    assert (cache / "global.db").is_file() and (tmp_path / "_build" / ".doctrees").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("damage", [_damage_db, _damage_notebook, _remove_notebook])
def test_a_damaged_cache_is_named_and_cleared(tmp_path, damage):
    cache = _cached(tmp_path)
    damage(cache)
    done = _clear(cache)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 and "is damaged" in done.stdout, done.stdout
    assert sorted(p.name for p in cache.iterdir()) == ["lowrank.sha256"]
    assert not (tmp_path / "_build" / ".doctrees").exists()
    again = _clear(cache)  # rebuilt as new: the next check finds nothing to say
    assert again.returncode == 0 and again.stdout == ""


def _scratch_repo(tmp_path: Path) -> Path:
    """The script in a tree of its own with one file of each kind its fingerprint reads."""
    repo = tmp_path / "repo"
    for rel, text in {"tools/clear_stale_cache.sh": SCRIPT.read_text(), "lowrank/a.py": "x = 1\n",
                      "requirements/lock.txt": "torch==2.13.0\n", "data/results/s.jsonl": "{}\n",
                      "chapters/evidence/c.json": "{}\n", "data/rules_ledger.jsonl": "{}\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


@pytest.mark.parametrize("changed", ["lowrank/a.py", "requirements/lock.txt", "data/results/s.jsonl",
                                     "chapters/evidence/c.json", "data/rules_ledger.jsonl"])
def test_a_change_to_what_the_chapters_read_clears_the_cache(tmp_path, changed):
    repo = _scratch_repo(tmp_path)
    cache = repo / "_build" / ".jupyter_cache"

    def clear():
        return subprocess.run(["bash", str(repo / "tools" / "clear_stale_cache.sh")], capture_output=True,
                              text=True, timeout=60, env={**os.environ, "PYTHON": sys.executable})

    assert clear().returncode == 0
    (cache / "kept").write_text("an executed notebook")
    assert clear().stdout == "" and (cache / "kept").exists()
    (repo / changed).write_text((repo / changed).read_text() + "changed\n")
    done = clear()
    assert done.returncode == 0 and "changed since the last build" in done.stdout, done.stdout + done.stderr
    assert not (cache / "kept").exists()
