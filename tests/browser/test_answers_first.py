"""Answers first, readable on every screen: navigation on a phone, tables, leads, the landing page's
answer, and figure text and layout."""
from __future__ import annotations

import base64
from urllib.parse import urljoin

import pytest

from .book import CHAPTERS, PAGES, VIEWPORTS, WIDTHS, Page
from .visit import FIGURE_PROBE, Visit

pytestmark = pytest.mark.browser


def _open_dialog(tab, dialog: str) -> dict:
    return tab.evaluate("""(id) => { const d = document.getElementById(id);
        return { open: !!(d && d.open), links: d ? d.querySelectorAll('a[href]').length : 0 }; }""", dialog)


@pytest.mark.parametrize("page", CHAPTERS[:1] + CHAPTERS[-1:], ids=str)
def test_navigation_buttons_open_the_chapter_list_and_contents_on_a_phone(site, browser, page):
    context = browser.new_context(viewport=VIEWPORTS["phone"], device_scale_factor=1, has_touch=True)
    try:
        tab = context.new_page()
        tab.goto(urljoin(site, page.path), wait_until="load")
        hamburger = tab.locator(".primary-toggle:visible")
        assert hamburger.count() == 1, f"{page}: {hamburger.count()} visible hamburger buttons at phone width"
        hamburger.tap()
        tab.wait_for_timeout(300)
        state = _open_dialog(tab, "pst-primary-sidebar-modal")
        assert state["open"], f"{page}: tapping the hamburger at 390 px does not open the chapter list"
        assert state["links"] >= len(CHAPTERS), f"{page}: the opened chapter list has {state['links']} links"
        tab.keyboard.press("Escape")
        tab.wait_for_timeout(200)
        contents = tab.locator(".secondary-toggle:visible")
        assert contents.count() == 1, f"{page}: {contents.count()} visible contents buttons at phone width"
        contents.tap()
        tab.wait_for_timeout(300)
        state = _open_dialog(tab, "pst-secondary-sidebar-modal")
        assert state["open"] and state["links"] >= 2, \
            f"{page}: tapping the contents button at 390 px does not open the page contents: {state}"
    finally:
        context.close()


def test_hamburger_hides_and_shows_the_chapter_list_on_a_desktop(site, browser):
    context = browser.new_context(viewport=VIEWPORTS["desktop"], device_scale_factor=1)
    try:
        tab = context.new_page()
        tab.goto(urljoin(site, CHAPTERS[0].path), wait_until="load")
        width = "() => document.querySelector('.bd-sidebar-primary').getBoundingClientRect().width"
        assert tab.evaluate(width) > 100, "the chapter list is not shown at desktop width"
        tab.locator(".primary-toggle:visible").click()
        tab.wait_for_timeout(200)
        assert tab.evaluate(width) == 0, "the hamburger does not hide the chapter list at desktop width"
        tab.locator(".primary-toggle:visible").click()
        tab.wait_for_timeout(200)
        assert tab.evaluate(width) > 100, "the hamburger does not bring the chapter list back"
    finally:
        context.close()


def _reader(v: Visit) -> dict:
    return v.dom["reader"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_tables_are_padded_and_numbers_right_aligned(visit, page, width):
    bad = []
    for t in _reader(visit(page, width))["tables"]:
        if t["tight"]:
            bad.append(f"{t['where']}: {t['tight']} cells padded under 3 px, e.g. {t['tightExample']!r} "
                       f"(table starting {t['first']!r})")
        if t["leftNumbers"]:
            bad.append(f"{t['where']}: {t['leftNumbers']} numbers not right-aligned, e.g. {t['leftExample']!r} "
                       f"(table starting {t['first']!r})")
    assert not bad, f"{page} at {width} width:\n" + "\n".join(bad)


# A lead reads in a glance on a phone: about four lines (a line's fraction for rounding and maths).
LEAD_MAX_LINES = 4.5


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_lead_is_short_and_in_body_weight(visit, page):
    lead = _reader(visit(page, "phone"))["lead"]
    assert lead, f"{page}: no lead paragraph under the title"
    assert lead["bold"] <= 0.5, f"{page}: the lead is set in bold ({lead['bold']:.0%} of it): {lead['text']!r}"
    assert lead["lines"] <= LEAD_MAX_LINES, (f"{page}: the lead takes {lead['lines']:.1f} lines at 390 px, more "
                                             f"than about four; move the rest into the text: {lead['text']!r}")


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_paragraph_of_running_text_is_set_in_bold(visit, page):
    bold = [f"{b['where']}: {b['text']!r}" for b in _reader(visit(page))["boldParagraphs"]]
    assert not bold, f"{page}: paragraphs set in bold (bold is for a few words of emphasis):\n" + "\n".join(bold)


@pytest.mark.parametrize("page", [*PAGES[1:2], *CHAPTERS], ids=str)
def test_every_table_has_a_numbered_caption(visit, page):
    bad = [f"{t['where']}: table starting {t['first']!r}" for t in _reader(visit(page))["tables"]
           if not (t["number"] or "").startswith("Table")]
    assert not bad, (f"{page}: tables without a numbered caption (a table-caption directive right after "
                     "the cell, or glued-table on a page that pastes one, see _ext/book_tables.py and "
                     "_ext/book_glue.py):\n" + "\n".join(bad))


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_bold_pasted_values_or_raw_markup(visit, page):
    reader = _reader(visit(page))
    bold = [f"{b['where']}: {b['text']!r}" for b in reader["boldPasted"]]
    assert not bold, f"{page}: pasted values in bold inside running text:\n" + "\n".join(bold[:10])
    raw = [f"{r['where']}: ...{r['text']}..." for r in reader["rawMarkup"]]
    assert not raw, f"{page}: raw MyST markup in the text:\n" + "\n".join(raw[:10])


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_parameter_cells_are_folded_away(visit, page):
    shown = _reader(visit(page))["shownSetup"]
    assert not shown, f"{page}: the parameters cell is shown open, not behind its toggle: {shown}"


@pytest.mark.parametrize("width", WIDTHS)
def test_landing_page_answers_on_its_first_screen(visit, width):
    found = _reader(visit(PAGES[1], width))["found"]
    assert found, f"{PAGES[1]}: no 'What the book found' box (class book-found)"
    answers = found["answers"]
    assert len(answers) >= 2, f"{PAGES[1]}: {len(answers)} answers in the box, expected one per paper"
    late = [a["text"] for a in answers if not a["onFirstScreen"]]
    assert not late, (f"{PAGES[1]} at {width} width: the answer to the title question is not wholly on the first "
                      "screen for:\n" + "\n".join(late))
    assert found["countsTable"] and found["chart"] and found["chartLoaded"], \
        f"{PAGES[1]} at {width} width: the verdict counts or the verdict chart are missing from the box"


# The answer box is an abstract: a paper's abstract does the job in 150 to 250 words, and a phone
# reader should meet the book's first section within one and a half screens.
MAX_ANSWER_WORDS = 260
MAX_ANSWER_SCREENS = 1.5


def test_landing_page_answer_box_is_an_abstract(visit):
    found = _reader(visit(PAGES[1], "phone"))["found"]
    assert found, f"{PAGES[1]}: no 'What the book found' box (class book-found)"
    screen = VIEWPORTS["phone"]["height"]
    assert found["words"] <= MAX_ANSWER_WORDS, f"{PAGES[1]}: the answer box holds {found['words']} words"
    assert found["height"] <= MAX_ANSWER_SCREENS * screen, (
        f"{PAGES[1]}: the answer box is {found['height']:.0f} px tall at 390 px, "
        f"{found['height'] / screen:.2f} phone screens")


@pytest.mark.parametrize("width", WIDTHS)
def test_landing_page_tables_do_not_scroll_sideways(visit, width):
    bad = [f"{t['where']}: table starting {t['first']!r} is {t['by']} px wider than its box"
           for t in _reader(visit(PAGES[1], width))["scrolling"]]
    assert not bad, f"{PAGES[1]} at {width} width: tables a reader must scroll sideways:\n" + "\n".join(bad)


def small_figure_text(figures: list[dict], *, sizes_required: bool) -> list[str]:
    """Figures whose smallest text is drawn under MIN_TEXT_PX, and (where sizes are required)
    figures whose text size is unknown."""
    from lowrank.book.figures import MIN_TEXT_PX, shown_text_px

    bad = []
    for f in figures:
        name = f"{f['figure'] or 'unnumbered figure'} ({f['src']})"
        if not f["known"]:
            if sizes_required:
                bad.append(f"{name}: text size unknown (no lowrank figure metadata: re-execute the chapter)")
            continue
        px = shown_text_px(f["textPx"], f["width1x"], f["shownWidth"])
        if not px >= MIN_TEXT_PX:  # NaN too: a size attribute that is missing or unreadable
            bad.append(f"{name}, {f['variant']} variant drawn {f['shownWidth']:.0f} px wide: smallest text "
                       f"{px:.1f} px, under {MIN_TEXT_PX:g}")
    return bad


# Pages whose figures must carry the book's figure measures: the chapters, the landing page, which
# pastes chapter 08's chart, and the appendix, whose static PNGs (the probe report's figures, the
# benchmarks' plot) carry theirs in the file (lowrank.core.figure_measures.save_png).
def _measures_required(page: Page) -> bool:
    return page.is_chapter or page == PAGES[1] or page.path.startswith("appendix/")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figure_text_is_legible(visit, page, width):
    figures = visit(page, width).dom["figures"]
    bad = small_figure_text(figures, sizes_required=_measures_required(page))
    assert not bad, f"{page} at {width} width: figure text too small to read:\n" + "\n".join(bad)


def cramped_figures(figures: list[dict], *, required: bool) -> list[str]:
    """Figures whose plotting area takes under MIN_PLOT_FRAC of the width of the variant shown, or
    whose texts are drawn over each other; where the measures are required, figures without them."""
    from lowrank.book.figures import MIN_PLOT_FRAC

    bad = []
    for f in figures:
        name = f"{f['figure'] or 'unnumbered figure'} ({f['src']}, {f.get('variant', '?')} variant)"
        if f.get("plotFrac") is None or f.get("overlaps") is None:
            if required:
                bad.append(f"{name}: no plotting-area or overlap measure (re-execute its chapter)")
            continue
        if not f["plotFrac"] >= MIN_PLOT_FRAC:
            bad.append(f"{name}: the plotting area takes {f['plotFrac']:.0%} of the width, under "
                       f"{MIN_PLOT_FRAC:.0%} (labels, legend or margins take the rest)")
        if f["overlaps"]:
            pairs = "; ".join(" / ".join(repr(t[:30]) for t in pair) for pair in f["overlaps"])
            bad.append(f"{name}: texts drawn over each other: {pairs}")
    return bad


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_charts_give_their_data_the_width_and_keep_texts_apart(visit, page, width):
    required = page == PAGES[1] or page.path.startswith("appendix/")
    bad = cramped_figures(visit(page, width).dom["figures"], required=required)
    assert not bad, f"{page} at {width} width:\n" + "\n".join(bad)


def test_cramped_figure_check_can_fail():
    ok = {"figure": "Fig. 1", "src": "a.png", "variant": "narrow", "plotFrac": 0.9, "overlaps": []}
    assert not cramped_figures([ok], required=True)
    assert "takes 30% of the width" in cramped_figures([{**ok, "plotFrac": 0.3}], required=False)[0]
    assert "drawn over each other" in cramped_figures([{**ok, "overlaps": [["1", "2"]]}], required=False)[0]
    assert cramped_figures([{**ok, "plotFrac": None}], required=True)
    assert not cramped_figures([{**ok, "plotFrac": None}], required=False)


def test_figure_text_check_fails_on_small_text(browser, tmp_path):
    """The check above, on a page made here: a figure with 4 pt text served without a narrow variant
    fails at 390 px; the same figure with its narrow variant (which raises small text) passes, and so
    does the figure drawn with the book's sizes."""
    import matplotlib.pyplot as plt

    from lowrank.book.figures import figure_png
    from lowrank.book.plotting import subplots

    def page_for(fontsize: float | None, narrow: bool = True) -> str:
        fig, axes = subplots(1, 2, width=7.5, height=3.0)
        for ax in axes[0]:
            ax.plot([1, 2, 3], [1, 4, 9])
            ax.set(xlabel="x", ylabel="y")
        if fontsize:
            axes[0, 0].text(1.5, 5, "note", fontsize=fontsize)
        data, meta = figure_png(fig)
        plt.close(fig)
        info = meta["lowrank"]
        (tmp_path / "wide.png").write_bytes(base64.b64decode(data))
        (tmp_path / "narrow.png").write_bytes(base64.b64decode(info["narrow"]))
        variant = (f'data-narrow="narrow.png" data-narrow-width="{info["narrow_width"]}" '
                   f'data-narrow-text-px="{info["narrow_text_px"]}"') if narrow else ""
        source = '<source media="(max-width: 599.98px)" srcset="narrow.png">' if narrow else ""
        return (f'<article><figure><picture data-width="{info["width"]}" data-text-px="{info["text_px"]}" '
                f'{variant}>{source}<img src="wide.png" style="width: {meta["width"]}px; max-width: 100%; '
                f'height: auto"></picture><figcaption><span class="caption-number">Fig. 1 </span></figcaption>'
                f'</figure></article>')

    def measure(fontsize, narrow=True):
        (tmp_path / "page.html").write_text(page_for(fontsize, narrow), encoding="utf8")
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        try:
            tab = context.new_page()
            tab.goto((tmp_path / "page.html").as_uri(), wait_until="load")
            return tab.evaluate(FIGURE_PROBE)
        finally:
            context.close()

    book = measure(None)
    assert book and book[0]["variant"] == "narrow", book
    assert not small_figure_text(book, sizes_required=True)
    assert not small_figure_text(measure(4), sizes_required=True)  # the narrow variant raises small text
    tiny = measure(4, narrow=False)
    small = small_figure_text(tiny, sizes_required=True)
    assert small and "under 9" in small[0], f"{tiny}"
    assert small_figure_text([{"figure": "Fig. 2", "src": "x.png", "known": False}], sizes_required=True)
