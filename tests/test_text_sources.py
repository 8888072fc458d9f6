"""Every chapter notebook has a text source (chapters/text/NN_name.py) holding exactly its cells."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lowrank.book.text_sources import source_path, text_source

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_text_source_matches_the_notebook(nb):
    src = source_path(nb)
    assert src.is_file(), f"{src} is missing: run `python tools/sync_sources.py`"
    assert src.read_text(encoding="utf8") == text_source(nb), (
        f"{src} differs from {nb.name}: run `python tools/sync_sources.py` after changing a notebook")


def test_a_changed_cell_is_caught_and_outputs_are_not_in_the_text(tmp_path):
    nb = json.loads(NOTEBOOKS[0].read_text(encoding="utf8"))
    copy = tmp_path / NOTEBOOKS[0].name
    copy.write_text(json.dumps(nb), encoding="utf8")
    run = lambda *a: subprocess.run([sys.executable, str(ROOT / "tools" / "sync_sources.py"), *a, str(copy)],  # noqa: E731
                                    capture_output=True, text=True)
    assert run().returncode == 0 and run("--check").returncode == 0
    text = source_path(copy).read_text(encoding="utf8")
    outputs = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "stream"]
    assert all(o["text"][0].strip() not in text for o in outputs if o.get("text") and o["text"][0].strip())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = ["x = 1  # an edit\n"] + code["source"]
    copy.write_text(json.dumps(nb), encoding="utf8")
    stale = run("--check")
    assert stale.returncode == 1 and "out of date" in stale.stdout
