"""No text a user sees names this machine or the project's issue tracker: `lowrank list`, the
README and the docs it links, the book's pages (their Markdown, the chapters' text and committed
outputs, the parameter sets' headers that the re-run boxes and `lowrank list` show)."""
import json
import re
from pathlib import Path

import pytest

from lowrank.book import cli, runner

ROOT = Path(__file__).resolve().parents[1]
# A machine's own folders, and an issue cited by number ("issue 17", "issues 12 and 13", "#17").
MACHINE = re.compile(r"(?<![\w.<>])/(?:work|tmp|root)/")
ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w&])#\d{1,4}\b", re.I)


def _offences(text: str) -> list[str]:
    return [text[max(0, m.start() - 40):m.end() + 20] for p in (MACHINE, ISSUE) for m in p.finditer(text)]


def test_the_patterns_find_what_they_are_for():
    assert _offences("see issue 17 and cd /work/main && ls /tmp/x; #12")
    assert not _offences("a head of size 16; data/results/x.jsonl; runs/04/; &#39; colour #fff; <book>/work/")


def _book_pages() -> dict[str, str]:
    pages = {p.name: p.read_text(encoding="utf8") for p in [*ROOT.glob("*.md"), *(ROOT / "appendix").glob("*.md"),
                                                              *(ROOT / "docs").glob("operations.md")]}
    pages.pop("CHANGELOG.md", None)  # history, read as history
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf8"))["cells"]
        shown = []
        for c in cells:
            tags = c.get("metadata", {}).get("tags", [])
            if "remove-cell" in tags:
                continue
            if c["cell_type"] == "markdown":
                shown.append("".join(c["source"]))
            for out in c.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    continue  # never reaches the page
                data = out.get("data", {})
                shown.append("".join(out.get("text", "")) + "".join(data.get("text/html", ""))
                             + "".join(data.get("text/markdown", "")))
        pages[nb.name] = "\n".join(shown)
    for yaml_file in sorted((ROOT / "chapters" / "params").glob("*/*.yaml")):
        pages[str(yaml_file.relative_to(ROOT))] = runner.parameter_file_header(yaml_file)
    return pages


def test_no_page_names_a_machine_path_or_an_issue():
    found = {name: _offences(text) for name, text in _book_pages().items()}
    assert not {k: v for k, v in found.items() if v}, "text a user sees names a machine path or an issue"


def test_lowrank_list_names_no_machine_path_or_issue(capsys):
    assert cli.main(["list", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "01  " in out and not _offences(out)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", [f"{k:02d}" for k in range(1, 9)])
def test_lowrank_list_of_each_chapter_names_no_machine_path_or_issue(chapter, capsys):
    assert cli.main(["list", chapter, "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "about " in out and not _offences(out)
