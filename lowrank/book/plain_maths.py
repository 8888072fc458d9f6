"""The formulas the chapters write in plain text, typeset for the book's MathJax.

Column names, law names, claim statements and rule sentences are plain strings in code (tests
and rules compare them), so a table header reads "floor(n/2)" and a verdict "Omega(log n)". The
book shows them typeset: :func:`typeset` rewrites each formula it knows as inline maths,
``\\(...\\)``, which MathJax renders wherever the surrounding element asks for it
(``_ext/book_tables.py`` for tables, ``lowrank.book.verdict_view`` for verdicts). Text it does not
know is left as it is; text that already holds maths (``$`` or ``\\(``) is left alone.
"""
from __future__ import annotations

import re

# (plain text, TeX), longest first where one contains another.
PLAIN_MATHS = (
    ("sqrt(1 - d^2/(n(n-1)))", r"\sqrt{1 - d^2/(n(n-1))}"),
    ("max |softmax(logits) - P|", r"\max\,\lvert\operatorname{softmax}(S) - P\rvert"),
    ("max |f(X) - g(X)|", r"\max\,\lvert f(X) - g(X)\rvert"),
    ("n(1-(1-1/n)^n)", r"n(1-(1-1/n)^n)"),
    ("sqrt(chi^2/dof)", r"\sqrt{\chi^2/\mathrm{dof}}"),
    ("c (ln n)^beta", r"c\,(\ln n)^\beta"),
    ("(1-1/e) n", r"(1-1/e)\,n"),
    ("Omega(log n)", r"\Omega(\log n)"),
    ("Theta(log n)", r"\Theta(\log n)"),
    ("floor(n/2)", r"\lfloor n/2 \rfloor"),
    ("a + b ln n", r"a + b \ln n"),
    ("c n^alpha", r"c\,n^\alpha"),
    ("chi^2 / dof", r"\chi^2/\mathrm{dof}"),
    ("chi^2/dof", r"\chi^2/\mathrm{dof}"),
    ("ratio to 4d^2", r"\text{ratio to } 4d^2"),
    ("d_p = n", "d_p = n"),
    ("d_h*", r"d_h^\ast"),
    ("d_p", "d_p"),
    ("d_h", "d_h"),
    ("d/h", "d/h"),
    ("n - 1", "n - 1"),
)
_PLAIN = re.compile("|".join(re.escape(p) for p, _ in PLAIN_MATHS))
_TEX = dict(PLAIN_MATHS)
# A header that names its variable after a word ("heads h", "head size r") or is only the variable.
_HEADER_VARIABLE = re.compile(r"^(?:(.*\b(?:heads|head size|inputs|tokens|sequence length|width|layers)) )?([a-z])$")


def typeset(text: str, header: bool = False) -> str:
    """Known plain-text formulas in ``text`` as ``\\(...\\)``; ``header``: also a lone variable."""
    if "\\(" in text or "$" in text:
        return text
    if header:
        m = _HEADER_VARIABLE.match(text.strip())
        if m:
            return (f"{m.group(1)} " if m.group(1) else "") + f"\\({m.group(2)}\\)"
    return "".join(f"\\({tex}\\)" if tex else piece for piece, tex in parts(text)).replace(" -> ", " → ")


def parts(text: str) -> list[tuple[str, str | None]]:
    """``text`` cut at the formulas it knows, in order: (plain text, None) and (formula, its TeX).
    A value pasted into prose ("the data prefer c (ln n)^beta") becomes text and inline maths."""
    out: list[tuple[str, str | None]] = []
    at = 0
    for m in _PLAIN.finditer(text):
        if _inside_word(text, m.start(), m.end()):
            continue  # "n - 10", "head_dim": not the formula
        if m.start() > at:
            out.append((text[at:m.start()], None))
        out.append((m.group(0), _TEX[m.group(0)]))
        at = m.end()
    if at < len(text) or not out:
        out.append((text[at:], None))
    return out


def _inside_word(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return before.isalnum() or before == "_" or after.isalnum() or after == "_"
