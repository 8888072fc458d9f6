"""Tables and quiet pages: the book-wide table style, numbered table captions (_ext/book_tables.py)
and the setup cells hidden behind a toggle (lowrank.book.cells, _ext/book_ui.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import book_tables  # noqa: E402
from lowrank.book.cells import PARAMETERS, SETUP, TABLE, quiet_role  # noqa: E402

TABLE_HTML = ('<table id="T"><thead><tr><th class="col_heading">heads h</th><th>layer</th><th>error</th></tr>'
              '</thead><tbody><tr><td>1</td><td>standard</td><td>9.5e-08</td></tr>'
              '<tr><td>1,024</td><td>fixed</td><td>63.5 ± 1.9</td></tr></tbody></table>')


def test_e_notation_becomes_times_ten_to_the_power():
    assert book_tables.times_ten("5.8e-15") == "5.8 × 10⁻¹⁵"
    assert book_tables.times_ten("error 1.3e+02 and 2e5") == "error 1.3 × 10² and 2 × 10⁵"
    assert book_tables.times_ten("7.0e-00") == "7.0"
    assert book_tables.times_ten("abc1e5 v2.1e3x") == "abc1e5 v2.1e3x"


@pytest.mark.parametrize("text, numeric", [
    ("0.630", True), ("1,024", True), ("-3", True), ("63.5 ± 1.9", True), ("[0.61, 0.65]", True),
    ("9.5 × 10⁻⁸", True), ("12%", True), ("1676.6 / 6", True), ("standard", False), ("d = 20", False), ("n/a", False), ("", False),
])
def test_numeric_cells_are_recognised(text, numeric):
    assert book_tables.is_numeric(text) is numeric


def test_numeric_cells_and_headers_of_numeric_columns_are_marked():
    out = book_tables.style_table_html(TABLE_HTML)
    assert '<th class="col_heading num">heads \\(h\\)</th>' in out
    assert "<th>layer</th>" in out
    assert '<th class="num">error</th>' in out
    assert '<td class="num">1,024</td>' in out and "<td>standard</td>" in out
    assert '<td class="num">9.5 × 10⁻⁸</td>' in out
    assert book_tables.style_table_html("<p>no table, 1e-5</p>") == "<p>no table, 1e-5</p>"


def test_a_column_with_one_word_is_not_numeric():
    mixed = TABLE_HTML.replace("<td>1,024</td>", "<td>many</td>")
    assert '<th class="col_heading">heads \\(h\\)</th>' in book_tables.style_table_html(mixed)


@pytest.mark.parametrize("source, tags, table, display, role", [
    ("seed = 0", ["parameters"], False, False, PARAMETERS),
    ("import numpy as np\nP = validate('x', globals())", [], False, False, SETUP),
    ("import numpy as np\nfig, ax = plt.subplots()", [], False, True, None),
    ("df.style.hide(axis='index')", [], True, True, TABLE),
    ("x = run()\nprint(x)", [], False, False, None),
    ("%matplotlib inline", [], False, False, None),
])
def test_which_cells_are_setup(source, tags, table, display, role):
    assert quiet_role(source, tags, has_table=table, has_display=display) == role


def _book(folder: Path, caption: str) -> Path:
    (folder / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['myst_nb', 'book_ui', 'book_tables']\n"
        "numfig = True\nnb_execution_mode = 'off'\nmyst_enable_extensions = ['dollarmath']\n"
        "exclude_patterns = ['_build']\n", encoding="utf8")
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P", "language": "python"}})
    nb.cells = [
        new_markdown_cell("# Title\n\n**Summary.**"),
        new_code_cell("seed = 0", metadata={"tags": ["parameters"]}),
        new_code_cell("import numpy as np\nx = 1"),
        new_code_cell("df.style", metadata={"tags": ["hide-input"]},  # as tools/tidy_notebooks.py tags it
                      outputs=[new_output("display_data", data={"text/html": TABLE_HTML, "text/plain": "df"})]),
        new_markdown_cell(caption + "\n\nAs {numref}`tab-heads` shows."),
        new_code_cell("print(provenance)", metadata={"tags": ["provenance"]},
                      outputs=[new_output("stream", name="stdout", text="git abc1234, 2026-12-03\n")]),
    ]
    nbformat.write(nb, folder / "index.ipynb")
    out = folder / "_build"
    result = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(folder), str(out)],
                            capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))})
    return out / "index.html" if result.returncode == 0 else Path(result.stderr)


@pytest.mark.slow
def test_caption_is_numbered_above_its_table_and_setup_code_hidden(tmp_path):
    page = _book(tmp_path, "```{table-caption}\n:name: tab-heads\n\nStandard heads fail at $h = 3$.\n```")
    assert page.is_file(), f"the build failed: {page}"
    text = page.read_text(encoding="utf8")
    box = text.index('<div class="book-table')
    caption = text.index('<span class="caption-number">Table 1 </span>Standard heads fail at')
    assert box < caption < text.index('<table id="T"')
    assert '<span class="std std-numref">Table 1</span>' in text
    assert '<td class="num">9.5 × 10⁻⁸</td>' in text
    for prompt in ("Show the parameters", "Show the imports and setup", "Show the code behind this table"):
        assert prompt in text
    folded = text.index("Show the provenance: revisions, dates, machine and costs")
    assert text.rfind("<details", 0, folded) > text.index('<table id="T"') and folded < text.index("git abc1234")


@pytest.mark.slow
def test_a_caption_that_follows_no_table_fails_the_build(tmp_path):
    result = _book(tmp_path, "Some text first.\n\n```{table-caption}\n:name: tab-heads\n\nA caption.\n```")
    assert not result.name.endswith(".html") and "follows no code cell that prints a table" in str(result)


@pytest.mark.slow
def test_a_caption_without_a_name_fails_the_build(tmp_path):
    result = _book(tmp_path, "```{table-caption}\n\nA caption.\n```")
    assert "needs :name:" in str(result)


def test_markdown_tables_get_the_same_numeric_classes():
    from docutils.core import publish_doctree
    doctree = publish_doctree("""
=====  =====  ======
size   name   ratio
=====  =====  ======
1      a      0.112
16     b      7.18
=====  =====  ======
""")
    assert book_tables.style_docutils_tables(doctree) == 4
    heads = [e.get("classes") for e in next(iter(doctree.findall(book_tables.nodes.thead))).findall(
        book_tables.nodes.entry)]
    assert heads == [["num"], [], ["num"]]


def test_dollar_maths_in_headers_is_typeset_and_prices_are_not():
    out = book_tables.style_table_html(TABLE_HTML.replace("heads h", "heads $h$").replace(">layer<", ">$d_p$ = 6<"))
    assert '<table id="T" class="tex2jax_process">' in out
    assert "heads \\(h\\)" in out and "\\(d_p\\)\u00a0=\u00a06" in out
    assert "tex2jax" not in book_tables.style_table_html(TABLE_HTML.replace("heads h", "heads"))


@pytest.mark.parametrize("text, header, expected", [
    ("heads h", True, "heads \\(h\\)"),
    ("n", True, "\\(n\\)"),
    ("n", False, "n"),
    ("standard", True, "standard"),
    ("needed causally: floor(n/2)", True, "needed causally: \\(\\lfloor n/2 \\rfloor\\)"),
    ("fixed, d_p = n = 128", True, "fixed, \\(d_p = n\\) = 128"),
    ("c (ln n)^beta", False, "\\(c\\,(\\ln n)^\\beta\\)"),
    ("chi^2 / dof", True, "\\(\\chi^2/\\mathrm{dof}\\)"),
    ("$d_p$ already", True, "$d_p$ already"),
])
def test_plain_text_formulas_in_tables_are_typeset(text, header, expected):
    assert book_tables.typeset_plain_maths(text, header=header) == expected


def test_a_table_with_formulas_is_handed_to_mathjax():
    out = book_tables.style_table_html(TABLE_HTML)
    assert '<table id="T" class="tex2jax_process">' in out and "heads \\(h\\)" in out


@pytest.mark.parametrize("text, expected", [
    ("the data prefer c (ln n)^beta", [("the data prefer ", None), ("c (ln n)^beta", r"c\,(\ln n)^\beta")]),
    ("n = 32, c = 10, d_h = 8", [("n = 32, c = 10, ", None), ("d_h", "d_h"), (" = 8", None)]),
    ("at n - 1 for every n", [("at ", None), ("n - 1", "n - 1"), (" for every n", None)]),
    ("n - 10 and head_dim and d_hx", [("n - 10 and head_dim and d_hx", None)]),  # inside a number or a name
    ("", [("", None)]),
])
def test_pasted_values_are_cut_at_the_formulas_they_hold(text, expected):
    from lowrank.book.plain_maths import parts
    assert parts(text) == expected
    assert "".join(piece for piece, _ in parts(text)) == text


def test_a_pasted_value_with_a_formula_becomes_text_and_inline_maths():
    from docutils import nodes
    from docutils.utils import new_document
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    doc = new_document("x", get_default_settings(Parser))
    para = nodes.paragraph()
    pasted = nodes.inline("", "", nodes.Text("the data prefer c (ln n)^beta (error 1.3e+02)"), classes=["pasted-text"])
    plain = nodes.inline("", "", nodes.Text("c (ln n)^beta"))  # not pasted: left alone
    para += [pasted, plain]
    doc += para
    assert book_tables.style_tables(doc) == 1
    assert [type(c).__name__ for c in pasted.children] == ["Text", "math", "Text"]
    assert pasted.children[1].astext() == r"c\,(\ln n)^\beta" and pasted.children[2].astext() == " (error 1.3 × 10²)"
    assert plain.astext() == "c (ln n)^beta"


def test_a_table_formula_is_not_typeset_inside_a_number_or_a_name():
    assert book_tables.typeset_plain_maths("n - 10 and head_dim") == "n - 10 and head_dim"
    assert book_tables.typeset_plain_maths("n - 1 heads") == "\\(n - 1\\) heads"


@pytest.mark.parametrize("text, expected", [
    ("standard h = 32 minus fixed h = 32", "standard h\u00a0=\u00a032 minus fixed h\u00a0=\u00a032"),
    ("fixed h = 4, \\(d_p\\) = 64", "fixed h\u00a0=\u00a04, \\(d_p\\)\u00a0=\u00a064"),
    ("+0.061 [+0.039, +0.084]", "+0.061 [+0.039, +0.084]"),  # an interval may break: wide tables fit
    ("\\(d_p = 16\\) inside maths, n = n", "\\(d_p = 16\\) inside maths, n = n"),  # TeX and a name as value untouched
    ("0.01 and 0.005", "0.01 and 0.005"),
    ("18 of 18, one of them", "18\u00a0of\u00a018, one of them"),
])
def test_a_name_and_its_value_and_a_count_stay_on_one_line(text, expected):
    assert book_tables.keep_together(text) == expected


def test_table_cells_keep_values_together_and_stay_numeric():
    html = ('<table id="T"><thead><tr><th>model</th><th>loss</th></tr></thead><tbody>'
            '<tr><td>standard h = 32</td><td>[0.1, 0.2]</td></tr></tbody></table>')
    out = book_tables.style_table_html(html)
    assert ">standard h\u00a0=\u00a032</td>" in out and '<td class="num">[0.1, 0.2]</td>' in out
