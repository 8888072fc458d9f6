"""The verdict table's presentation (lowrank.book.verdict_view), on synthetic rows."""
from __future__ import annotations

import html.parser

import pytest

from lowrank.book.verdict_view import FIELDS, VERDICT_STYLE, verdict_badge, verdict_cards


def _row(verdict: str, **over) -> dict:
    row = dict(claim="Rank saturates once $d_h = \\Omega(\\log n)$", paper="Min & Li",
               href="chapters/06_rank_saturation.html#ch06-fit", section_text="§6.3", verdict=verdict,
               qualifier="", reason="the log law fits no worse than a power law", evidence="63.5 ± 1.9 <b>",
               rule="saturation_rule: BIC gap > 2", scale="default", kind="simulation",
               ledger="registered 2026-12-03 at abc1234")
    row.update(over)
    return row


class _Cells(html.parser.HTMLParser):
    """Text of each row's cells, the links and the badges' inline styles."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.links, self.badges, self.details = [], [], [], 0
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "verdict-row":
            self.rows.append([])
        elif tag == "td" and self.rows and a.get("class", "").startswith("verdict-") \
                and a.get("class") != "verdict-details":
            self._cell = []
        elif tag == "a":
            self.links.append(a["href"])
        elif tag == "span" and "verdict-badge" in a.get("class", ""):
            self.badges.append(a["style"])
        elif tag == "details":
            self.details += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None


def parse(text: str) -> _Cells:
    p = _Cells()
    p.feed(text)
    return p


def test_every_verdict_gets_its_colour_and_the_columns_read_claim_verdict_reason_section():
    rows = [_row(v) for v in VERDICT_STYLE]
    out = parse(str(verdict_cards(rows, base="../")))
    assert len(out.rows) == len(VERDICT_STYLE)
    for cells, verdict in zip(out.rows, VERDICT_STYLE):
        assert cells[1].startswith(verdict)
        assert cells[2] == "the log law fits no worse than a power law"
        assert cells[3] == "§6.3"
    for style, (background, colour, _, border) in zip(out.badges, VERDICT_STYLE.values()):
        assert background in style and f"color: {colour}" in style and border in style
    assert out.links == ["../chapters/06_rank_saturation.html#ch06-fit"] * len(VERDICT_STYLE)
    assert out.details == len(VERDICT_STYLE)


def test_colours_match_the_verdict_figure_and_the_corrected_badge_is_white_on_dark_green():
    assert VERDICT_STYLE["reproduced"][0] == "#5aae61"
    assert VERDICT_STYLE["reproduced, corrected"][:2] == ("#1b7837", "#ffffff")
    assert VERDICT_STYLE["contradicted"][0] == "#c2a5cf"
    assert "dashed" in VERDICT_STYLE["not tested"][3] and VERDICT_STYLE["not tested"][0] == "#ffffff"
    hatched = [v for v in VERDICT_STYLE if "gradient" in verdict_badge(v)]
    assert set(hatched) == {"reproduced, corrected", "reproduced in a weaker form",
                            "holds only under stated conditions", "no effect larger than the margin", "contradicted"}


def test_brief_table_has_no_detail_rows_and_needs_only_the_visible_fields():
    rows = [{k: _row("inconclusive")[k] for k in ("claim", "verdict", "reason", "href", "section_text")}]
    text = str(verdict_cards(rows, brief=True))
    assert "<details" not in text and "verdict-brief" in text
    assert parse(text).links == ["chapters/06_rank_saturation.html#ch06-fit"]


def test_details_hold_evidence_rule_and_ledger_escaped_and_maths_is_typeset():
    text = str(verdict_cards([_row("contradicted", qualifier="only for $n \\le 64$")]))
    assert "63.5 ± 1.9 &lt;b&gt;" in text and "<b>" not in text
    assert "registered 2026-12-03 at abc1234" in text and "saturation_rule: BIC gap &gt; 2" in text
    assert "\\(d_h = \\Omega(\\log n)\\)" in text and "$" not in text
    assert "\\(n \\le 64\\)" in text
    assert "tex2jax_process" in text


def test_notebooks_display_it_as_html():
    cards = verdict_cards([_row("reproduced")])
    assert cards._repr_html_() == str(cards)
    assert repr(cards) == "VerdictCards(1 claims)"


@pytest.mark.parametrize("bad, message", [
    ({"verdict": "mostly true"}, "verdict"),
    ({"href": "javascript:alert(1)"}, "href"),
])
def test_bad_rows_are_refused_with_the_field_named(bad, message):
    with pytest.raises(ValueError, match=message):
        verdict_cards([{**_row("reproduced"), **bad}])


def test_missing_fields_and_empty_input_are_refused():
    row = _row("reproduced")
    del row["ledger"]
    with pytest.raises(ValueError, match="rows\\[0\\] lacks ledger"):
        verdict_cards([row])
    with pytest.raises(ValueError, match="empty"):
        verdict_cards([])
    assert set(FIELDS) == set(_row("reproduced"))


def test_rows_from_a_chapters_claims_carry_verdict_reason_rule_and_evidence():
    from lowrank.book.verdict_view import rows_from_claims
    from lowrank.experiments.verdicts import Claim, Judgement

    def rule_low(h):
        """Reproduced in a weaker form when x is below 1."""
        return Judgement("reproduced in a weaker form", f"x = {h['x']}", qualifier="only as an upper bound")

    def rule_high(h):
        """Reproduced when x is at least 1."""
        return Judgement("reproduced", f"x = {h['x']}")

    claims = [Claim("a", "Min & Li", "05", "sec-a", "Claim A", rule_low),
              Claim("b", "Min & Li", "05", "sec-b", "Claim B", rule_high)]
    rows = rows_from_claims(claims, {"x": 0.5})
    assert [r["verdict"] for r in rows] == ["reproduced in a weaker form", "reproduced"]
    assert [r["reason"] for r in rows] == ["only as an upper bound", "holds as stated"]
    assert rows[0]["href"] == "#sec-a" and rows[0]["rule"] == "Reproduced in a weaker form when x is below 1."
    assert rows[1]["evidence"] == "x = 0.5"
    out = parse(str(verdict_cards(rows)))
    assert [cells[1] for cells in out.rows] == ["reproduced in a weaker form", "reproduced"]


def test_plain_text_formulas_in_claims_and_rules_are_typeset():
    row = _row("reproduced", claim="The mean rank is at most n(1-(1-1/n)^n) -> 0.63 n",
               rule="saturation grows like Omega(log n) with d_h* near c (ln n)^beta; head size floor(n/2)")
    text = str(verdict_cards([row]))
    assert "\\(n(1-(1-1/n)^n)\\) → 0.63 n" in text
    assert "\\(\\Omega(\\log n)\\)" in text and "\\(d_h^\\ast\\)" in text and "\\(c\\,(\\ln n)^\\beta\\)" in text
    assert "\\(\\lfloor n/2 \\rfloor\\)" in text


def test_a_claims_own_details_replace_the_shared_fields_and_the_live_verdict_unfolds():
    from lowrank.book.verdict_view import rows_from_claims
    from lowrank.experiments.verdicts import Claim, Judgement

    def rule(h):
        """Reproduced when x is at least 1."""
        return Judgement("reproduced", f"x = {h['x']}")

    claims = [Claim("a", "P", "04", "sec-a", "Claim A", rule), Claim("b", "P", "04", "sec-b", "Claim B", rule)]
    rows = rows_from_claims(claims, {"x": 2}, scale="default", kind="simulation",
                            details={"a": {"scale": "long", "kind": "training experiment",
                                           "live": "inconclusive: one seed"}})
    assert (rows[0]["scale"], rows[0]["kind"], rows[0]["live"]) == ("long", "training experiment", "inconclusive: one seed")
    assert (rows[1]["scale"], rows[1]["kind"]) == ("default", "simulation") and "live" not in rows[1]
    shown = str(verdict_cards(rows))
    assert shown.count("<dt>Same rule on this page's live run</dt>") == 1
    assert "inconclusive: one seed" in shown
