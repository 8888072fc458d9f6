"""The verdict table as a reader scans it: claim, coloured verdict badge, one-line reason, section link.

``verdict_cards(rows)`` takes one plain dict per claim (keys in ``FIELDS``) and returns an object
that a notebook displays (and ``myst_nb.glue`` pastes) as HTML: a full-width table on a desktop that
becomes one card per claim below 600 px (``_ext/static/book_ui.css``). The verdict sits in its own
column next to the claim, as a badge in the colour and hatch of the verdict figure, so the table
reads in grey scale too; the evidence, the rule, the scale and the rules-ledger record of each
claim fold into a ``<details>`` row under it. ``brief=True`` drops those rows (the landing page).

Text fields may hold inline maths as ``$...$``; it is typeset by the book's MathJax, as are the
plain-text formulas the chapters' claims and rules use (``lowrank.book.plain_maths``). Everything
else is escaped.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

from .plain_maths import typeset
from ..experiments.verdicts import one_line_reason

FIELDS = ("claim", "paper", "href", "section_text", "verdict", "qualifier", "reason", "evidence", "rule",
          "scale", "kind", "ledger")

# background, text colour, CSS pattern (the verdict figure's hatches), border
_HATCH = {
    "": "none",
    "//": "repeating-linear-gradient(45deg, rgba(0,0,0,.22) 0 1px, transparent 1px 6px)",
    "\\\\": "repeating-linear-gradient(-45deg, rgba(255,255,255,.35) 0 1px, transparent 1px 6px)",
    "||": "repeating-linear-gradient(90deg, rgba(0,0,0,.2) 0 1px, transparent 1px 6px)",
    "..": "radial-gradient(rgba(0,0,0,.3) 0.8px, transparent 1px) 0 0 / 5px 5px",
    "xx": ("repeating-linear-gradient(45deg, rgba(0,0,0,.2) 0 1px, transparent 1px 6px), "
           "repeating-linear-gradient(-45deg, rgba(0,0,0,.2) 0 1px, transparent 1px 6px)"),
}
VERDICT_STYLE: dict[str, tuple[str, str, str, str]] = {
    "reproduced": ("#5aae61", "#000000", "", "1px solid #3f7f44"),
    "reproduced, corrected": ("#1b7837", "#ffffff", "\\\\", "1px solid #0f4a21"),
    "reproduced in a weaker form": ("#a6dba0", "#000000", "//", "1px solid #6aa864"),
    "holds only under stated conditions": ("#fee08b", "#000000", "..", "1px solid #c9a93f"),
    "no effect larger than the margin": ("#92c5de", "#000000", "||", "1px solid #4f8fb0"),
    "inconclusive": ("#d9d9d9", "#000000", "", "1px solid #9a9a9a"),
    "contradicted": ("#c2a5cf", "#000000", "xx", "1px solid #8a6a99"),
    "not tested": ("#ffffff", "#000000", "", "1px dashed #555555"),
}
_ROW_START = '<tr class="verdict-row"'
_MATH = re.compile(r"(?<!\\)\$([^$\n]+?)(?<!\\)\$")


class VerdictCards:
    """HTML shown by Jupyter and pasted by glue; ``str()`` gives the same HTML."""

    def __init__(self, html_text: str):
        self.html = html_text

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"VerdictCards({self.html.count(_ROW_START)} claims)"


def text_html(text) -> str:
    """Escape ``text``; ``$...$`` and the formulas of ``plain_maths`` become MathJax's ``\\(...\\)``."""
    escaped = html.escape(typeset("" if text is None else str(text)), quote=False)
    return _MATH.sub(lambda m: f"\\({m.group(1)}\\)", escaped)


def verdict_badge(verdict: str) -> str:
    if verdict not in VERDICT_STYLE:
        raise ValueError(f"verdict = {verdict!r:.60}: expected one of {', '.join(VERDICT_STYLE)}")
    background, colour, hatch, border = VERDICT_STYLE[verdict]
    pattern = _HATCH[hatch]
    style = f"background: {pattern}, {background}; color: {colour}; border: {border};" if pattern != "none" \
        else f"background: {background}; color: {colour}; border: {border};"
    slug = re.sub(r"[^a-z]+", "-", verdict).strip("-")
    return f'<span class="verdict-badge verdict-{slug}" style="{style}">{html.escape(verdict)}</span>'


def _check(row: Mapping, i: int, brief: bool) -> None:
    needed = ("claim", "verdict", "reason", "href", "section_text") if brief else FIELDS
    missing = [k for k in needed if k not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks {', '.join(missing)}: expected the keys {', '.join(FIELDS)}")
    if row["verdict"] not in VERDICT_STYLE:
        raise ValueError(f"rows[{i}]['verdict'] = {row['verdict']!r:.60}: expected one of "
                         f"{', '.join(VERDICT_STYLE)}")
    href = str(row["href"])
    if href.startswith(("javascript:", "data:")):
        raise ValueError(f"rows[{i}]['href'] = {href!r:.60}: expected a link into the book")


def _details(row: Mapping) -> str:
    items = [("Evidence", row.get("evidence")), ("Same rule on this page's live run", row.get("live")),
             ("Rule", row.get("rule")), ("Scale", row.get("scale")), ("Kind", row.get("kind")),
             ("Rules ledger", row.get("ledger"))]
    body = "".join(f"<dt>{name}</dt><dd>{text_html(value)}</dd>" for name, value in items if value)
    return (f'<tr class="verdict-details"><td colspan="4"><details><summary>Evidence, rule and record'
            f'</summary><dl>{body}</dl></details></td></tr>')


def rows_from_claims(claims: Iterable, headline: Mapping, *, page: str = "", section_text: str = "its section",
                     scale: str = "default", kind: str = "", ledger: str = "",
                     details: Mapping[str, Mapping[str, str]] | None = None) -> list[dict]:
    """Rows for :func:`verdict_cards` from a chapter's ``CLAIMS`` judged on its ``headline``.

    Each claim links to its section on ``page`` ("" for the page showing the cards); the reason is
    the verdict's qualifier, or "holds as stated" for a verdict without one. ``details`` maps a
    claim's key to fields of its own (its scale, kind, rules-ledger record, or ``live``: the same
    rule on the page's live run), which replace the shared ones.
    """
    rows = []
    for claim in claims:
        judgement = claim.judge(headline)
        row = dict(claim=claim.statement, paper=claim.paper, href=f"{page}#{claim.section}",
                   section_text=section_text, verdict=judgement.verdict, qualifier="",
                   reason=one_line_reason(judgement.verdict, judgement.reason, judgement.evidence),
                   evidence=judgement.evidence, rule=claim.rule_sentence, scale=scale, kind=kind, ledger=ledger)
        rows.append({**row, **(details or {}).get(claim.key, {})})
    return rows


def verdict_cards(rows: Iterable[Mapping], base: str = "", *, brief: bool = False) -> VerdictCards:
    """One row per claim: claim | verdict badge | reason | section link (``base`` + ``href``).

    ``href`` is relative to the book's root (``chapters/05_rank_barrier.html#ch05-bound``); ``base``
    leads from the page to that root ("" on the landing page, "../" in a chapter).
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows is empty: expected one dict per claim")
    out = ['<div class="verdict-cards tex2jax_process mathjax_process">',
           f'<table class="verdict-table{" verdict-brief" if brief else ""}">',
           '<thead><tr><th>Claim</th><th>Verdict</th><th>Why</th><th>Section</th></tr></thead><tbody>']
    for i, row in enumerate(rows):
        _check(row, i, brief)
        paper = f'<span class="verdict-paper">{text_html(row.get("paper"))}</span> ' if row.get("paper") else ""
        kind = f' <span class="verdict-kind">{text_html(row.get("kind"))}</span>' if row.get("kind") and not brief \
            else ""
        qualifier = f'<span class="verdict-qualifier">{text_html(row.get("qualifier"))}</span>' \
            if row.get("qualifier") else ""
        link = html.escape(f"{base}{row['href']}", quote=True)
        out.append(
            f'<tr class="verdict-row">'
            f'<td class="verdict-claim" data-label="Claim">{paper}{text_html(row["claim"])}{kind}</td>'
            f'<td class="verdict-cell" data-label="Verdict">{verdict_badge(row["verdict"])}{qualifier}</td>'
            f'<td class="verdict-reason" data-label="Why">{text_html(row["reason"])}</td>'
            f'<td class="verdict-section" data-label="Section"><a href="{link}">'
            f'{text_html(row["section_text"])}</a></td></tr>')
        if not brief:
            out.append(_details(row))
    out.append("</tbody></table></div>")
    return VerdictCards("".join(out))
