"""``lowrank run NN ... --html``: the re-run chapter read as its page, with the run's own numbers in
its sentences; and the progress bar's cell names."""
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lowrank.book import page
from lowrank.book.execution import cell_label

ROOT = Path(__file__).resolve().parents[1]


def _prose(html: str) -> str:
    """The page's article text without the run's own note (which names the parameters)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for box in soup.select("div.admonition"):
        if "This page is your run" in box.get_text():
            box.decompose()
    main = soup.select_one("article") or soup
    text = main.get_text(" ").replace("\\(", "").replace("\\)", "")  # inline maths as its TeX
    return " ".join(text.split())


@pytest.mark.slow
@pytest.mark.parametrize("chapter, param, value, said", [
    ("01", "n", "24", r"n = 24 ?, mean and standard deviation"),
    ("08", "practitioner_ns", "[1000]", r"999 at n = 1000"),
])
def test_a_rerun_with_a_changed_parameter_reads_as_its_page(tmp_path, chapter, param, value, said):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the kernel imports this checkout's lowrank
    done = subprocess.run([sys.executable, "-m", "lowrank", "run", chapter, "--scale", "smoke", "-p", param, value,
                           "--html", "--no-progress", "-o", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.startswith("lowrank: running ") and "lowrank: estimate: " in done.stderr
    html = (out / page.PAGE).read_text(encoding="utf8")
    assert "This page is your run" in html and f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{param}</span></code>" in html
    prose = _prose(html)
    assert re.search(said, prose), f"the page's prose does not show the run's value: {said}"
    assert "{glue" not in html and "Html(" not in prose
    # the page opens from the folder: every asset it names is there
    for ref in re.findall(r'(?:href|src)="(page_files/[^"#?]+)', html):
        if ref.endswith(".html"):  # the book's other pages (index, search) are not part of a run
            continue
        assert (out / ref).exists(), ref


def test_the_note_lists_only_what_differs_from_the_defaults():
    defaults = {"n": {"default_text": "64"}, "ns": {"default_text": "[48, 96]"}, "seed": {"default_text": "0"}}
    changed = page.changed_parameters({"n": 64, "ns": [48], "seed": 0, "new": 1}, defaults)
    assert changed == {"ns": ([48], "[48, 96]"), "new": (1, None)}
    note = page.run_note("smoke", changed)
    assert "- `ns` = 48 (default [48, 96])" in note and "- `new` = 1\n" in note + "\n"
    assert "No parameter differs" in page.run_note("default", {})


def test_the_progress_bar_names_code_by_its_first_line_and_text_by_its_heading():
    cells = [nbformat.v4.new_markdown_cell("# Ranks\nSome text"), nbformat.v4.new_markdown_cell("plain"),
             nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(h['a_very_long_key_name_that_is_cut_somewhere'])"),
             nbformat.v4.new_code_cell("tables = ch.run(P)")]
    labels = [cell_label(cells, c) for c in cells]
    assert labels[0] == "cell 1/4 Ranks" and labels[1] == "cell 2/4 (text)" and labels[3] == "cell 4/4 tables = ch.run(P)"
    assert labels[2].startswith("cell 3/4 print(h[") and labels[2].endswith("...") and len(labels[2]) <= 9 + 36
