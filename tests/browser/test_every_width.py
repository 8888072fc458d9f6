"""Every page as a reader meets it at desktop and phone width: each check names the page, the width and the
element (its section, file name or text) that fails."""
from __future__ import annotations

import re

import pytest

from .book import CHAPTERS, PAGES, VIEWPORTS, WIDTHS, notebook_parameters, screenshot_path
from .visit import Visit

pytestmark = pytest.mark.browser

# Parameter names that are also ordinary words are only flagged in a value's place ("n = n"); a name
# with an underscore or a digit ("d_model", "construction_ns") is never prose.
_IDENTIFIER = re.compile(r"[_0-9]")
_TEMPLATE = re.compile(r"(?<![\w^_}\\])\{[A-Za-z_][A-Za-z0-9_]*\}")
# A paragraph that talks about the parameters themselves ("set `seed` with -p") may name them.
_ABOUT_PARAMETERS = re.compile(r"\bparameters?\b|-p\b|papermill|lowrank run", re.IGNORECASE)


def _shown(v: Visit) -> dict:
    return v.dom["layout"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figures_keep_their_aspect_ratio(visit, page, width):
    bad = []
    for img in _shown(visit(page, width))["images"]:
        if not img["visible"] or not img["naturalW"]:
            continue
        expected = img["w"] * img["naturalH"] / img["naturalW"]
        if abs(img["h"] - expected) > max(2.0, 0.01 * expected):
            squeeze = 100 * (1 - (img["w"] / img["h"]) / (img["naturalW"] / img["naturalH"]))
            bad.append(f"{img['src']} ({img['where']}): shown {img['w']:.0f} x {img['h']:.0f} px, natural "
                       f"{img['naturalW']} x {img['naturalH']}: squeezed sideways by {squeeze:.0f} %")
    assert not bad, f"{page} at {width} width: images drawn out of shape:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figures_are_numbered(visit, page, width):
    bad = [f"{img['src']} ({img['where']}, alt {img['alt'][:40]!r})"
           for img in _shown(visit(page, width))["images"] if img["visible"] and not img["numbered"]]
    assert not bad, (f"{page} at {width} width: images outside a numbered, captioned figure "
                     "(use {glue:figure} / {figure} with a caption):\n" + "\n".join(bad))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_raw_tex_in_text(visit, page, width):
    bad = [f"{t['where']} ({t['element']}): ...{t['text']}..." for t in _shown(visit(page, width))["rawTex"]]
    assert not bad, f"{page} at {width} width: raw $ or TeX in the text (not typeset):\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_stderr_or_traceback_blocks(visit, page, width):
    bad = [f"{t['where']} ({t['element']}): {t['text']}" for t in _shown(visit(page, width))["stderr"]]
    assert not bad, f"{page} at {width} width: stderr or error output shown:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_horizontal_overflow(visit, page, width):
    v = visit(page, width)
    culprits = [f"{c['element']} ({c['where']}) sticks out {c['by']} px: {c['text'][:60]!r}"
                for c in _shown(v)["sticksOut"]]
    assert v.dom["overflowX"] <= 0, (
        f"{page} is {v.dom['overflowX']} px wider than a {VIEWPORTS[width]['width']} px window ({width}): "
        "the page scrolls sideways; what sticks out:\n" + "\n".join(culprits[:10]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_nothing_is_cut_off(visit, page, width):
    bad = [f"{c['element']} in {c['box']} ({c['where']}) cut off by {c['by']} px: {c['text']!r}"
           for c in _shown(visit(page, width))["cutOff"]]
    assert not bad, (f"{page} at {width} width: content wider than a box that hides its overflow "
                     "(clipped, neither wrapped nor scrollable):\n" + "\n".join(bad[:15]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_table_is_cut_off_without_showing_that_it_scrolls(visit, page, width):
    """Every table, those of folded boxes included, fits its box or shows that the box scrolls."""
    v = visit(page, width)
    cut = {(c["element"], c["where"], c["by"]): c for c in [*_shown(v)["cutTables"], *v.dom["opened"]["cutTables"]]}
    bad = [f"{c['element']} in {c['box']} ({c['where']}) cut off by {c['by']} px: {c['text']!r}"
           for c in cut.values()]
    assert not bad, (f"{page} at {width} width: a table's content is cut off with no visible sign that its "
                     "box scrolls:\n" + "\n".join(bad[:15]))


def parameter_names_in(text: str, params: list[str], codes: tuple[str, ...] = ()) -> list[str]:
    """Parameter names (or unfilled templates) where the reader expects a value.

    ``text`` is a paragraph's visible text without its inline code and maths; ``codes`` are the
    texts of its inline code elements. Flagged: an unfilled template ``{name}``; a parameter name
    with an underscore or a digit as a bare word; any parameter name in a value's place (after
    ``=``, ``∈``, ``≤`` ...); an inline code element that is exactly a parameter name, unless the
    paragraph is about the parameters themselves (it says "parameter", ``-p``, papermill or
    ``lowrank run``).
    """
    found = [m.group(0) for m in _TEMPLATE.finditer(text)]
    if not _ABOUT_PARAMETERS.search(text + " " + " ".join(codes)):
        found += [code for code in codes if code in params]
    for name in params:
        bare = re.compile(rf"(?<![\w.{{\\]){re.escape(name)}(?![\w(])")
        in_value_place = re.compile(rf"(=|∈|≤|≥|<|>)\s*{re.escape(name)}(?![\w(.])")
        if (_IDENTIFIER.search(name) and bare.search(text)) or in_value_place.search(text):
            found.append(name)
    return found


def test_parameter_name_detector():
    params = ["n", "d_model", "construction_ns", "seed", "ns"]
    assert parameter_names_in("At d = d_model and n = n, standard heads fit", params) == ["n", "d_model"]
    assert parameter_names_in("Over n ∈ {construction_ns} the threshold is n - 1", params) == \
        ["{construction_ns}"]
    assert parameter_names_in("At n = 64 with seed 0 the rank is 63; the ns run faster", params) == []
    assert parameter_names_in("the bound 1/\\sqrt{d_model}", params) == []
    # "$d = {}$`d_model`": the value's place holds the name as inline code
    assert parameter_names_in("(Gaussian, , )", params, ("n", "d_model")) == ["n", "d_model"]
    assert parameter_names_in("Re-run with -p seed 1", params, ("seed",)) == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_prose_shows_values_not_parameter_names(visit, page, width):
    params = notebook_parameters(page.source)
    bad = []
    for block in _shown(visit(page, width))["prose"]:
        names = parameter_names_in(block["text"], params, tuple(block.get("codes", ())))
        if names:
            bad.append(f"{block['where']} ({block['tag']}): {', '.join(dict.fromkeys(names))} in "
                       f"{block['text'][:140]!r}")
    assert not bad, f"{page} at {width} width: parameter names where a value belongs:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_screenshots_of_every_chapter(visit, page):
    for width in WIDTHS:
        visit(page, width)
        shot = screenshot_path(page, width)
        assert shot.is_file() and shot.stat().st_size > 10_000, f"{page}: no {width} screenshot at {shot}"
