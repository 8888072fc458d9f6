"""Bibliography labels read as the text cites them (_ext/book_bib.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from pybtex.database import parse_string

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import book_bib  # noqa: E402

BIB = r"""
@misc{one, author = {Min, Tianyu and Li, Zhi}, title = {T}, year = {2025}}
@misc{many, author = {Bhojanapalli, Srinadh and Yun, Chulhee and Rawat, Ankit}, title = {L}, year = {2020}}
@misc{solo, author = {{Radford}, Alec}, title = {R}, year = {2019}}
@misc{w1, author = {Wang, A and Li, B and Xu, C}, title = {A}, year = {2020}}
@misc{w2, author = {Wang, D and Ma, E and Zhu, F}, title = {B}, year = {2020}}
@techreport{org, institution = {X}, title = {{Report}}, year = {2021}}
"""


def test_labels_are_author_year_and_repeated_ones_get_letters():
    entries = list(parse_string(BIB, "bibtex").entries.values())
    labels = list(book_bib.AuthorYearLabels().format_labels(entries))
    assert labels == ["Min and Li, 2025", "Bhojanapalli et al., 2020", "Radford, 2019",
                      "Wang et al., 2020a", "Wang et al., 2020b", "Report, 2021"]


def test_the_book_uses_the_style_by_default():
    text = (ROOT / "_config.yml").read_text(encoding="utf8")
    assert f"bibtex_default_style: {book_bib.STYLE}" in text and "book_bib: _ext" in text
