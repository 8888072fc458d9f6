"""Sphinx extension: every table the chapters print reads the same way, with a number and a caption.

- **One table style.** Tables reach the page as HTML (pandas ``Styler`` outputs, glued tables). Here
  each body cell whose text is a number, an interval or a mean ± half-width gets the class ``num``
  (``book_ui.css`` right-aligns it in tabular figures), a header over a column of such cells gets
  it too, e-notation in a cell (``9.5e-08``) is written as ``9.5 × 10⁻⁸``, and ``$...$`` in a cell
  or header is typeset by MathJax (as in Jupyter). Padding, header and
  row rules come from ``book_ui.css``, so no chapter styles a table itself. Tables written in
  markdown get the same classes.
- **Formulas in pasted values.** A value pasted into prose (``{glue:text}``) that holds a formula
  the book writes in plain text in code ("c (ln n)^beta", "d_h", "floor(n/2)":
  ``lowrank.book.plain_maths``) has it typeset as inline maths, like the prose's ``$...$`` around it.
- **Numbered captions.** A ``table-caption`` directive placed right after the code cell that prints
  a table (at the top of the next markdown cell) becomes that table's caption, set above it and
  numbered with the book's figures' scheme ("Table 3.2"); ``:name:`` makes it referable with
  ``{numref}``. A caption that follows no table output fails the build. MyST's own ``{table}``
  directive (markdown tables) shares the same counter.

  ::

      ```{table-caption}
      :name: tab-ch03-heads

      Standard heads fail once $d/h < n - 1$; fixed heads never do. Worst head's max-row TV ...
      ```
"""
from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from lowrank.book.plain_maths import parts as plain_maths_parts
from lowrank.book.plain_maths import typeset as typeset_plain_maths

logger = logging.getLogger(__name__)

SUPERSCRIPT = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")
E_NUMBER = re.compile(r"(?<![\w.])([-−]?\d+(?:\.\d+)?)[eE]([+-]?)(\d+)(?![\w.])")
_NUM = r"[-−+]?(?:\d[\d,\u2009]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+| × 10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?"
NUMERIC = re.compile(rf"^(?:{_NUM}(?:\s*(?:±|/)\s*{_NUM})?|[\[(]\s*{_NUM}\s*,\s*{_NUM}\s*[\])])$")
EMPTY = {"", "-", "–", "—", "nan", "NaN", "n/a"}
CELL = re.compile(r"(<(t[dh])\b)([^>]*)>(.*?)(</\2>)", re.DOTALL)
ROW = re.compile(r"<tr\b.*?</tr>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
DOLLARS = re.compile(r"(?<![\\$])\$([^$<>\n]+?)\$(?!\$)")
TABLE_TAG = re.compile(r"<table\b([^>]*)>")
NBSP = "\u00a0"
TEX_SPAN = re.compile(r"(\\\(.*?\\\))")
# A name and its value ("h = 32", "\(d_p\) = 64") and a count ("18 of 18") stay on one line; a cell still
# wraps between words ("standard h = 32 / minus fixed h = 32") and after an interval's comma, so wide
# tables still fit.
EQUALS = re.compile(r"(?<=[\w)])\s=\s(?=[-+−]?\d)")
COUNT = re.compile(r"(?<=\d)\sof\s(?=\d)")
EQUALS_AFTER_TEX = re.compile(r"^\s=\s(?=[-+−]?\d)")


def times_ten(text: str) -> str:
    """'5.8e-15' -> '5.8 × 10⁻¹⁵' wherever e-notation stands alone in ``text``."""
    def one(m: re.Match) -> str:
        sign = "⁻" if m.group(2) == "-" else ""
        exponent = m.group(3).lstrip("0") or "0"
        if exponent == "0":
            return m.group(1)
        return f"{m.group(1)} × 10{sign}{exponent.translate(SUPERSCRIPT)}"
    return E_NUMBER.sub(one, text)


def is_numeric(text: str) -> bool:
    return bool(NUMERIC.match(" ".join(text.split())))


def keep_together(text: str) -> str:
    """``text`` with non-breaking spaces in "name = value" and "18 of 18", never inside TeX."""
    pieces = TEX_SPAN.split(text)
    for i in range(0, len(pieces), 2):
        piece = COUNT.sub(f"{NBSP}of{NBSP}", EQUALS.sub(f"{NBSP}={NBSP}", pieces[i]))
        pieces[i] = EQUALS_AFTER_TEX.sub(f"{NBSP}={NBSP}", piece) if i else piece
    return "".join(pieces)


def _add_class(attrs: str, cls: str) -> str:
    m = re.search(r'class="([^"]*)"', attrs)
    if m:
        return attrs[:m.start()] + f'class="{m.group(1)} {cls}"' + attrs[m.end():]
    return f'{attrs} class="{cls}"'


def style_table_html(html: str) -> str:
    """Mark numeric cells (and the headers of all-numeric columns) ``num``; e-notation as × 10ⁿ."""
    if "<table" not in html:
        return html
    spanned = "rowspan" in html or "colspan" in html
    numeric_cols: dict[int, bool] = {}

    def cell(m: re.Match, col: int) -> str:
        inner = m.group(4)
        if "<" not in inner:
            inner = DOLLARS.sub(lambda d: f"\\({d.group(1)}\\)", times_ten(inner))
            inner = keep_together(typeset_plain_maths(inner, header=m.group(2) == "th"))
        text = TAG.sub("", inner).strip()
        attrs = m.group(3)
        if m.group(2) == "td":
            numeric = is_numeric(text)
            if text not in EMPTY:
                numeric_cols[col] = numeric_cols.get(col, True) and numeric
            if numeric:
                attrs = _add_class(attrs, "num")
        return f"{m.group(1)}{attrs}>{inner}{m.group(5)}"

    def row(m: re.Match) -> str:
        counter = iter(range(10_000))
        return CELL.sub(lambda c: cell(c, next(counter)), m.group(0))

    out = ROW.sub(row, html)
    if "\\(" in out:  # typeset by the book's MathJax, which only looks inside marked elements
        out = TABLE_TAG.sub(lambda t: f"<table{_add_class(t.group(1), 'tex2jax_process')}>", out, count=1)
    if spanned or not numeric_cols:
        return out

    def header_row(m: re.Match) -> str:
        if "<td" in m.group(0):
            return m.group(0)
        counter = iter(range(10_000))

        def head(c: re.Match) -> str:
            col = next(counter)
            if numeric_cols.get(col):
                return f"{c.group(1)}{_add_class(c.group(3), 'num')}>{c.group(4)}{c.group(5)}"
            return c.group(0)
        return CELL.sub(head, m.group(0))

    head_end = out.find("</thead>")
    if head_end < 0:
        return out
    return ROW.sub(header_row, out[:head_end]) + out[head_end:]


def style_docutils_tables(doctree: nodes.document) -> int:
    """Mark numeric cells of tables written in markdown (docutils tables) the same way."""
    marked = 0
    for tgroup in doctree.findall(nodes.tgroup):
        numeric_cols: dict[int, bool] = {}
        for body in tgroup.findall(nodes.tbody):
            for row in body.findall(nodes.row):
                for col, entry in enumerate(e for e in row.children if isinstance(e, nodes.entry)):
                    text = " ".join(entry.astext().split())
                    numeric = is_numeric(text)
                    if text not in EMPTY:
                        numeric_cols[col] = numeric_cols.get(col, True) and numeric
                    if numeric:
                        entry["classes"].append("num")
                        marked += 1
        if any(e.get("morecols") or e.get("morerows") for e in tgroup.findall(nodes.entry)):
            continue
        for head in tgroup.findall(nodes.thead):
            for row in head.findall(nodes.row):
                for col, entry in enumerate(e for e in row.children if isinstance(e, nodes.entry)):
                    if numeric_cols.get(col):
                        entry["classes"].append("num")
    return marked


def style_tables(doctree: nodes.document) -> int:
    """Apply :func:`style_table_html` to every raw HTML table; e-notation in pasted values too."""
    changed = 0
    for raw in list(doctree.findall(nodes.raw)):
        if "html" not in raw.get("format", "") or "<table" not in raw.astext():
            continue
        new_html = style_table_html(raw.astext())
        if new_html != raw.astext():
            raw.replace_self(nodes.raw(new_html, new_html, **raw.attributes))
            changed += 1
    for inline in list(doctree.findall(nodes.inline)):
        if "pasted-text" not in inline.get("classes", []):
            continue
        text = inline.astext()
        new_text = times_ten(text)
        pieces = plain_maths_parts(new_text)
        if new_text != text or any(tex for _, tex in pieces):
            # a formula pasted into prose is typeset like the prose's own $...$ around it
            inline.children = [nodes.math(tex, tex) if tex else nodes.Text(piece) for piece, tex in pieces]
            changed += 1
    return changed


class table_caption(nodes.General, nodes.Element):
    """A table's numbered caption; enumerable as 'table', so {numref} gives 'Table 3.2'."""


class TableCaption(SphinxDirective):
    has_content = True
    option_spec = {"name": directives.unchanged_required}

    def run(self):
        if "name" not in self.options:
            raise self.error("table-caption needs :name: (a label, e.g. tab-ch03-heads), so the prose "
                             "can refer to the table by number")
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        paragraphs = [c for c in holder.children if isinstance(c, nodes.paragraph)]
        if len(paragraphs) != 1 or len(holder.children) != 1:
            raise self.error("table-caption holds one paragraph: the takeaway first, then what is listed")
        node = table_caption("", *paragraphs[0].children)
        self.add_name(node)
        self.set_source_info(node)
        return [node]


def _holds_table(cell: nodes.Node) -> bool:
    return isinstance(cell, nodes.container) and cell.get("nb_element") == "cell_code" and any(
        "<table" in raw.astext() for raw in cell.findall(nodes.raw))


def place_captions(doctree: nodes.document) -> None:
    """Set each caption above the table cell it follows, both in one ``book-table`` box."""
    for caption in list(doctree.findall(table_caption)):
        parent = caption.parent
        if "book-table" in parent.get("classes", []):
            continue  # placed already (book_glue's glued-table: a table pasted from another document)
        index = parent.index(caption)
        previous = parent[index - 1] if index > 0 else None
        if not _holds_table(previous):
            logger.warning("table-caption %s follows no code cell that prints a table; put it at the top "
                           "of the markdown cell right after that cell", caption.get("names", ["?"])[0],
                           location=caption)
            continue
        box = nodes.container(classes=["book-table"])
        parent.remove(caption)
        parent.replace(previous, box)
        box += caption
        box += previous


def visit_table_caption(self, node: table_caption) -> None:
    self.body.append(self.starttag(node, "p", CLASS="book-table-caption"))
    self.add_fignumber(node)


def depart_table_caption(self, node: table_caption) -> None:
    self.body.append("</p>\n")


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    place_captions(doctree)


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    # After the post-transforms: glued tables and pasted values only exist from here on.
    style_tables(doctree)
    style_docutils_tables(doctree)


def setup(app: Sphinx) -> dict:
    app.add_enumerable_node(table_caption, "table", lambda node: node.astext(),
                            html=(visit_table_caption, depart_table_caption))
    app.add_directive("table-caption", TableCaption)
    app.connect("doctree-read", on_doctree_read)
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
