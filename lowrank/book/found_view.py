"""What the book found, as the landing page and chapter 08 show it: the answers in words, and the
verdict counts as a table that stays on a phone's screen.

``answers_html`` renders the answers of :mod:`lowrank.experiments.answers`: each paper's name in
bold as the subject of its first sentence, formulas typeset by the book's MathJax, a name in
backticks as code. ``counts_html`` renders :func:`lowrank.experiments.synthesis.counts_by_kind`:
a table on a desktop; below 600 px (``_ext/static/book_ui.css``) one line per verdict, each count
labelled with its kind and the zero counts left out, so no column is off-screen. Both return an
object that a notebook displays, and ``myst_nb.glue`` pastes, as HTML.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from .verdict_view import VERDICT_STYLE, text_html, verdict_badge

__all__ = ["Html", "answers_html", "counts_html"]

_CODE = re.compile(r"`([^`]+)`")


class Html:
    """HTML shown by Jupyter and pasted by glue; ``str()`` gives the same HTML."""

    def __init__(self, html_text: str, what: str = "HTML"):
        self.html = html_text
        self._what = what

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"Html({self._what})"


def _prose(text: str) -> str:
    """Escaped text with its plain formulas typeset and a name in backticks set as code."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", text_html(text))


def answers_html(answers: Iterable, practitioner: Sequence[str] = ()) -> Html:
    """Each answer's answering sentence first, one short paragraph per paper (``lead`` in bold, the
    sentence marked ``book-answer-lede``; an ``inline`` answer's details follow in it), then the
    practitioner's sentences, then the other answers' details: on a phone's first screen the reader
    gets every paper's answer before any detail."""
    answers = list(answers)
    parts = ['<div class="book-answers tex2jax_process mathjax_process">']
    for a in answers:
        rest = f" {_prose(' '.join(a.details))}" if getattr(a, "inline", False) and a.details else ""
        parts.append(f'<p class="book-answer">{_lead(a)}<span class="book-answer-lede">{_prose(a.answer)}</span>{rest}</p>')
    if practitioner:
        parts.append(f'<p class="book-practitioner">{_prose(" ".join(practitioner))}</p>')
    for a in answers:
        if a.details and not getattr(a, "inline", False):
            parts.append(f'<p class="book-answer-details">{_lead(a, "More on ", ".")}{_prose(" ".join(a.details))}</p>')
    parts.append("</div>")
    return Html("".join(parts), "answers")


def _lead(answer, before: str = "", after: str = "") -> str:
    return f"<strong>{before}{html.escape(answer.lead)}{after}</strong> " if answer.lead else ""


def counts_html(table) -> Html:
    """The verdict counts (a DataFrame with a "Verdict" column and one column per kind of evidence)
    as a table whose cells carry their kind, so that a phone can show each verdict on one line."""
    columns = [c for c in table.columns if c != "Verdict"]
    out = ['<table class="counts-table">', "<thead><tr><th>Verdict</th>"]
    out += [f'<th class="num">{html.escape(str(c))}</th>' for c in columns]
    out.append("</tr></thead><tbody>")
    for _, row in table.iterrows():
        verdict = str(row["Verdict"])
        label = verdict_badge(verdict) if verdict in VERDICT_STYLE else html.escape(verdict)
        total = ' class="counts-total"' if verdict == "total" else ""
        out.append(f'<tr{total}><td class="counts-verdict">{label}</td>')
        for c in columns:
            value = int(row[c])
            zero = " counts-zero" if value == 0 else ""
            out.append(f'<td class="num{zero}" data-label="{html.escape(str(c), quote=True)}">{value}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return Html("".join(out), "verdict counts")
