"""Sphinx extension: bibliography labels in the form the text cites, "Bhojanapalli et al., 2020".

The text cites author-year (``bibtex_reference_style: author_year``), while pybtex's styles label
the bibliography "[BYR+20]" (alpha) or "[1]" (plain), so a reader could not find "Min and Li
(2025)" by its label. This registers the pybtex style ``book_authoryear`` (pybtex's unsrt entries,
sorted by author and year, labelled author-year); ``_config.yml`` makes it the default style.
"""
from __future__ import annotations

import re

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx

STYLE = "book_authoryear"
_LATEX = re.compile(r"[{}\\]")


def _last_name(person) -> str:
    return _LATEX.sub("", " ".join(person.prelast_names + person.last_names)).strip()


def author_year(entry) -> str:
    """'Smith, 2020', 'Smith and Jones, 2020' or 'Smith et al., 2020' (organisation or title if no author)."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(p) for p in persons]
    if not names:
        who = _LATEX.sub("", entry.fields.get("organization") or entry.fields.get("title", "Anonymous"))
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [author_year(e) for e in sorted_entries]
        # The same authors and year twice: 2020a, 2020b, in the order of the list.
        for label in set(labels):
            positions = [i for i, lab in enumerate(labels) if lab == label]
            if len(positions) > 1:
                for letter, i in zip("abcdefghijklmnopqrstuvwxyz", positions):
                    labels[i] = f"{label}{letter}"
        yield from labels


class AuthorYearStyle(UnsrtStyle):
    default_label_style = AuthorYearLabels
    default_sorting_style = "author_year_title"


def setup(app: Sphinx) -> dict:
    register_plugin("pybtex.style.formatting", STYLE, AuthorYearStyle, force=True)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
