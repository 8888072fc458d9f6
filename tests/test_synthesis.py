"""Chapter 08's collector, judge and table, on synthetic claims and headline dicts (no notebook runs)."""
import json
import re
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import ClassVar

import matplotlib
import pytest

matplotlib.use("Agg")

from lowrank.book.synthesis_figures import plot_verdicts_by_paper, verdict_groups
from lowrank.experiments import claims
from lowrank.experiments import synthesis as S
from lowrank.experiments.shared.record import Record
from lowrank.experiments.verdicts import (BOOK, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, NOT_TESTED,
                                          PROOF_CHECK, REPRODUCED, SIMULATION, TRAINING, VERDICTS, WEAKER, Claim,
                                          Judgement, Paper, need)

# The synthetic chapter 05's rule reaches every verdict from one number, x.
X_REPRODUCED = 3.0  # x above this: reproduced


def _rule_x(h):
    """Reproduced above 3, weaker in (2, 3], conditional in (1, 2], inconclusive in (0, 1], else contradicted.

    Only the first paragraph is the table's rule sentence."""
    x = need(h, "ch05_x")
    ev = f"x = {x} (95 % interval ±0.1, 5 seeds)"
    if x > X_REPRODUCED:
        return Judgement(REPRODUCED, ev)
    if x > 2:
        return Judgement(WEAKER, ev, "a bound off by one")
    if x > 1:
        return Judgement(CONDITIONAL, ev, "inside the proof's hypotheses")
    if x > 0:
        return Judgement(INCONCLUSIVE, ev, "smallest detectable effect 0.2")
    return Judgement(CONTRADICTED, ev)


def _rule_y(h):
    """Reproduced when y is true, else contradicted."""
    return Judgement(REPRODUCED if need(h, "ch07_y") else CONTRADICTED, f"y = {need(h, 'ch07_y')}")


CLAIM_X = Claim("x-claim", "Paper A", "05", "sec-ch05-x", "x is large", _rule_x)
CLAIM_Y = Claim("y-claim", "Paper B", "07", "sec_ch07 Y", "y holds", _rule_y)
SOURCES = (S.ChapterSource("05", "05_five", "five"), S.ChapterSource("06", "06_six", "six"),
           S.ChapterSource("07", "07_seven", "seven"), S.ChapterSource("04", "04_four", "four"))
PAPER_P = Paper("P", "p", "p holds")
PAPER_A, PAPER_B = Paper("Paper A", "paper_a", "x is large"), Paper("Paper B", "paper_b", "y holds")
MODULES = {"five": SimpleNamespace(CLAIMS=(CLAIM_X,), PAPERS=(PAPER_A,)), "six": SimpleNamespace(),
           "seven": SimpleNamespace(CLAIMS=(CLAIM_Y,), PAPERS=(PAPER_B,))}  # "four" does not exist


def _collect():
    return S.collect_claims(SOURCES, load=MODULES.get)


@pytest.fixture(autouse=True)
def _synthetic_claims_only(request, monkeypatch):
    """Synthetic chapters, without the real inventory of untested claims (tests named 'real' keep it)."""
    if "real" not in request.node.name:
        monkeypatch.setattr(claims, "_untested", lambda: ())


def test_collect_claims_gathers_and_names_the_silent_chapters():
    col = _collect()
    assert [c.key for c in col.claims] == ["x-claim", "y-claim"]
    assert set(col.silent) == {"06", "04"}
    assert "defines no CLAIMS" in col.silent["06"] and "does not exist" in col.silent["04"]
    sentence = S.silent_sentence(col)
    assert "chapter 06" in sentence and "chapter 04" in sentence and "them" in sentence
    empty = S.collect_claims((S.ChapterSource("09", "09_x", "x"),), load={"x": SimpleNamespace(CLAIMS=())}.get)
    assert "lists no claim" in empty.silent["09"] and "it as a row" in S.silent_sentence(empty)
    assert S.silent_sentence(S.collect_claims(SOURCES[:1], load=MODULES.get)).startswith("Every chapter")


def test_collect_claims_refuses_misfiled_duplicate_or_foreign_claims():
    with pytest.raises(ValueError, match="names chapter 05"):
        S.collect_claims(SOURCES[1:2], load={"six": SimpleNamespace(CLAIMS=(CLAIM_X,))}.get)
    with pytest.raises(ValueError, match="more than once"):
        S.collect_claims(SOURCES[:1], load={"five": SimpleNamespace(CLAIMS=(CLAIM_X, CLAIM_X))}.get)
    with pytest.raises(TypeError, match="not a Claim"):
        S.collect_claims(SOURCES[:1], load={"five": SimpleNamespace(CLAIMS=("x",))}.get)


def test_the_real_collector_imports_by_name_and_tolerates_absent_modules():
    col = S.collect_claims((S.ChapterSource("09", "09_none", "no_such_module_here"),), untested=())
    assert col.claims == () and "does not exist" in col.silent["09"]
    for src in S.claim_sources():  # every listed chapter either exists or is reported, never an error
        S.collect_claims((src,))


def test_split_by_chapter():
    assert S.split_by_chapter({"ch05_x": 1, "ch05_fig_a": 2, "ch07_y": 3, "other": 4}) == {
        "05": {"ch05_x": 1, "ch05_fig_a": 2}, "07": {"ch07_y": 3}}


@pytest.mark.parametrize("x, verdict", [(3.5, REPRODUCED), (3.0, WEAKER), (2.5, WEAKER), (1.5, CONDITIONAL),
                                        (0.5, INCONCLUSIVE), (0.0, CONTRADICTED)])
def test_every_verdict_reaches_the_table(x, verdict):
    rows = S.judge_claims(_collect(), {"ch05_x": x, "ch07_y": True}, {"05": "paper"})
    row = next(r for r in rows if r.key == "x-claim")
    assert row.verdict == verdict and row.judged and row.scale == "paper"
    assert row.rule == "Reproduced above 3, weaker in (2, 3], conditional in (1, 2], inconclusive in (0, 1], " \
                       "else contradicted."
    assert "5 seeds" in row.evidence
    if verdict in (WEAKER, CONDITIONAL, INCONCLUSIVE):
        assert row.label.startswith(verdict + ": ") and row.qualifier
    table = S.verdict_table(rows)
    assert list(table.columns) == list(S.COLUMNS)
    assert table.loc[table.Claim == "x is large", "Verdict"].item() == row.label
    assert table.loc[table.Claim == "y holds", "Scale"].item() == "default"  # no scale recorded


def test_a_missing_chapter_or_value_gives_a_clear_row_not_a_crash():
    rows = S.judge_claims(_collect(), {"ch07_other": 1})
    x = next(r for r in rows if r.key == "x-claim")
    assert x.verdict == S.NOT_JUDGED and x.evidence == "chapter 05 not executed" and not x.judged
    y = next(r for r in rows if r.key == "y-claim")
    assert y.verdict == S.NOT_JUDGED and "ch07_y" in y.evidence and "re-execute" in y.evidence
    silent = [r for r in rows if r.statement == "(no claim collected)"]
    assert {r.chapter for r in silent} == {"06", "04"} and all(r.verdict == S.NOT_JUDGED for r in silent)
    table = S.verdict_table(rows)
    assert len(table) == 4 and not table.isna().any().any()
    sentence = S.totals_sentence(rows)
    assert "make 2 claims" in sentence and "2 are not judged yet" in sentence


def test_links_point_at_the_section_from_the_chapter_and_from_the_intro():
    rows = S.judge_claims(_collect(), {"ch05_x": 5.0, "ch07_y": True})
    x, y, *silent = rows
    assert S.chapter_link(x) == '<a href="05_five.html#sec-ch05-x">chapter 05</a>'
    assert S.chapter_link(x, "chapters/") == '<a href="chapters/05_five.html#sec-ch05-x">chapter 05</a>'
    assert S.chapter_link(y).startswith('<a href="07_seven.html#sec-ch07-y">')  # docutils' make_id
    assert 'href="06_six.html"' in S.chapter_link(silent[0])  # no section: the chapter itself
    brief = S.verdict_table(rows, base="chapters/", brief=True)
    assert list(brief.columns) == ["Claim", "Paper", "Chapter", "Verdict"]
    html = S.style_table(S.verdict_table(rows)).to_html()
    assert '<a href="05_five.html#sec-ch05-x">chapter 05</a>' in html  # the link is not escaped
    assert not re.search(r'<th[^>]*class="row_heading', html)  # no index column


def test_text_cells_are_escaped_but_links_are_not():
    rule = lambda h: Judgement(REPRODUCED, "p < 0.05 & more")  # noqa: E731
    rule.__doc__ = "Reproduced."
    col = S.collect_claims(SOURCES[:1], load={"five": SimpleNamespace(PAPERS=(PAPER_P,), CLAIMS=(
        Claim("a", "P", "05", "s", "a <b> claim", rule),))}.get)
    html = S.style_table(S.verdict_table(S.judge_claims(col, {"ch05_z": 1}))).to_html()
    assert "p &lt; 0.05 &amp; more" in html and "a &lt;b&gt; claim" in html and '<a href="05_five.html#s">' in html


@pytest.mark.parametrize("counts, expected", [
    ({REPRODUCED: 1}, "The one paper makes 1 claim that the book lists: of the one empirical claim tested "
                      "(simulations, training experiments and pretrained models), 1 is reproduced; every claim is tested."),
    ({REPRODUCED: 3, CONDITIONAL: 1, CONTRADICTED: 2, INCONCLUSIVE: 0},
     "The one paper makes 6 claims that the book lists: of the 6 empirical claims tested (simulations, training "
     "experiments and pretrained models), 3 are reproduced, 1 holds only under stated conditions and 2 are "
     "contradicted; every claim is tested."),
    ({CONDITIONAL: 2, WEAKER: 1, S.NOT_JUDGED: 1},
     "The one paper makes 4 claims that the book lists: of the 4 empirical claims tested (simulations, training "
     "experiments and pretrained models), 1 is reproduced in a weaker form, 2 hold only under stated conditions and "
     "1 is not judged yet, its evidence missing; every claim is tested."),
    ({}, "No claim was collected from the chapters, so none was judged."),
])
def test_totals_sentence_parses_for_every_count(counts, expected):
    assert S.totals_sentence(_rows(counts)) == expected
    if counts:  # the papers are counted from the rows
        two = S.totals_sentence(_rows(counts) + _rows({REPRODUCED: 1}, paper="Q"))
        assert two.startswith("The two papers make")
    assert S.verdict_counts(_rows(counts))[REPRODUCED] == counts.get(REPRODUCED, 0)


def test_totals_never_add_proof_checks_to_empirical_results_and_count_own_findings_apart():
    rows = (_rows({REPRODUCED: 2, CORRECTED: 1}, PROOF_CHECK) + _rows({CONTRADICTED: 1, NOT_TESTED: 2}, TRAINING)
            + _rows({REPRODUCED: 1}, SIMULATION, BOOK))
    text = S.totals_sentence(rows)
    assert "paper makes 6 claims" in text  # the book's own finding is not one of the papers' claims
    assert "of the 3 proof checks (identities, constructions or arithmetic, true for any data), 2 are reproduced " \
           "and 1 is reproduced with a correction" in text
    assert "of the one empirical claim tested (simulations, training experiments and pretrained models), 1 is " \
           "contradicted" in text
    assert "2 claims are not tested" in text and "own findings are counted apart: of the one finding, 1 is reproduced" in text
    table = S.counts_by_kind(rows).set_index("Verdict")
    assert table.loc["total", "proof check"] == 3 and table.loc[NOT_TESTED, "training experiment"] == 2
    assert table.loc[REPRODUCED, "book's own findings"] == 1 and "simulation" not in table.columns
    assert WEAKER not in table.index  # a verdict no claim has is left out
    assert S.found_sentence(rows, "P") == ("P: of the 3 proof checks, 2 are reproduced and 1 is reproduced with a "
                                           "correction; of the one empirical claim tested, 1 is contradicted; "
                                           "2 claims not tested.")
    groups = verdict_groups(rows)
    assert list(groups) == ["P: proof checks", "P: empirical claims", "this book's own findings"]


def test_untested_claims_are_listed_not_judged_and_need_no_chapter():
    untested = Claim("vit", "Paper A", "07", "", "ViT plateaus", None, kind=TRAINING, untested="GPU hours")
    col = S.collect_claims(SOURCES[:1], load=MODULES.get, untested=(untested,))
    (x, vit) = S.judge_claims(col, {})
    assert x.verdict == S.NOT_JUDGED and vit.verdict == NOT_TESTED and vit.qualifier == "GPU hours"
    assert vit.scale == "none" and vit.kind == TRAINING
    with pytest.raises(ValueError, match="has a rule"):
        S.collect_claims(SOURCES[:1], load=MODULES.get, untested=(CLAIM_X,))


def test_the_real_inventory_joins_and_every_row_has_a_kind():
    col = S.collect_claims()
    untested = [c for c in col.claims if c.rule is None]
    assert len(untested) >= 5 and all(c.untested and c.where for c in untested)
    keys = {c.key for c in col.claims}
    # the claims the review listed as computed-but-unjudged or forgotten each have a row
    assert {"theorem1-counterexample", "saturation-increment", "too-few-heads-hurt", "head-size-past-n",
            "bert-large-more-heads-hurt", "minli-vit-plateau", "minli-imdb-plateau", "minli-lemma1",
            "minli-multihead-068", "minli-mla", "minli-near-orthonormal", "minli-layers", "minli-mla-trained",
            "mla-logit-bound-trained"} <= keys


def _rows(counts, kind="", paper="P"):
    rows = []
    for verdict, n in counts.items():
        for i in range(n):
            rows.append(S.Row("05", "05_five", "s", paper, f"{verdict} {i}", "e", verdict, "", "default", "r",
                              kind=kind))
    return rows


def test_count_phrase():
    assert [S.count_phrase(n) for n in (0, 1, 2)] == ["no claims", "1 claim", "2 claims"]
    assert S.count_phrase(2, "chapter") == "2 chapters"


def test_values_and_scales_come_from_the_evidence_files_only(tmp_path):
    from lowrank.experiments.evidence import write_evidence

    (tmp_path / "evidence").mkdir()
    (tmp_path / "05_five.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))  # never read
    (tmp_path / "evidence" / "05_five.json").write_text(json.dumps({
        "format": 1, "stem": "05_five", "scale": "smoke", "values": {"ch05_a": 1.5}, "verdicts": {},
        "params": {}, "stores": []}))
    values, scales = S.read_chapter_evidence(tmp_path, SOURCES)
    assert values == {"ch05_a": 1.5} and scales == {"05": "smoke"}  # 06, 07, 04: no evidence file
    (tmp_path / "evidence" / "05_five.json").write_text(json.dumps({"format": 0}))
    with pytest.raises(ValueError, match="05_five.json has format 0"):
        S.read_chapter_evidence(tmp_path, SOURCES)
    assert write_evidence("05_five", {}, {}) is None  # no folder given and none in the environment


def test_run_synthesis_headline_and_figure():
    import matplotlib.pyplot as plt

    tables = S.run_synthesis({"ch05_x": 0.5, "ch07_y": False}, {"05": "default"}, sources=SOURCES,
                             load=MODULES.get)
    h = S.headline(tables)
    assert tuple(h) == S.headline_keys((PAPER_A, PAPER_B)) and "ch08_found_paper_b" in h
    assert h["ch08_n_claims"] == 2 and h["ch08_n_inconclusive"] == 1 and h["ch08_n_contradicted"] == 1
    assert h["ch08_n_not_judged"] == 0
    assert 'href="chapters/05_five.html#sec-ch05-x"' in h["ch08_brief"].to_html()
    meanings = h["ch08_verdict_meanings"].to_html()
    assert all(v in meanings for v in VERDICTS)
    fig, ax = plt.subplots()
    plot_verdicts_by_paper(tables["rows"], ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Paper A: empirical claims", "Paper B: empirical claims"]
    legend = ax.get_legend() or fig.legends[0]  # a figure legend under a constrained layout
    assert {t.get_text() for t in legend.get_texts()} == {INCONCLUSIVE, CONTRADICTED}
    plt.close(fig)


def test_figure_without_claims_says_so():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plot_verdicts_by_paper([], ax)
    assert [t.get_text() for t in ax.texts] == ["no claim collected yet"]
    plt.close(fig)


def test_every_real_claim_links_to_a_section_label_of_its_chapter():
    """The links of the rendered table: each collected claim's section is a (label)= target in its notebook."""
    from pathlib import Path

    chapters = Path(__file__).resolve().parents[1] / "chapters"
    col = S.collect_claims()
    for claim in col.claims:
        if claim.rule is None:  # an untested claim links to its chapter, not to a section
            continue
        src = col.source(claim.chapter)
        nb = json.loads((chapters / f"{src.stem}.ipynb").read_text(encoding="utf8"))
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        assert f"({claim.section})=" in text, f"claim {claim.key}: no ({claim.section})= label in {src.stem}"
        assert S.section_anchor(claim.section) == claim.section, (
            f"claim {claim.key}: label {claim.section!r} changes in HTML; use lower-case letters, digits and '-'")


def test_a_rule_reading_another_chapters_value_is_named():
    def rule(h):
        """Reads chapter 03's value from chapter 07's claim."""
        return Judgement(REPRODUCED, f"{need(h, 'ch03_z')}")

    col = S.collect_claims(SOURCES[2:3], load={"seven": SimpleNamespace(PAPERS=(PAPER_P,), CLAIMS=(
        Claim("z", "P", "07", "s", "z", rule),))}.get)
    (row,) = S.judge_claims(col, {"ch07_y": 1, "ch03_z": 2})
    assert row.verdict == S.NOT_JUDGED and "a value of chapter 03" in row.evidence


def test_reading_table_has_three_columns_escapes_text_and_keeps_links():
    rule = lambda h: Judgement(REPRODUCED, "p < 0.05 & more")  # noqa: E731
    rule.__doc__ = "Reproduced <always>."
    col = S.collect_claims(SOURCES[:1], load={"five": SimpleNamespace(PAPERS=(PAPER_P,), CLAIMS=(
        Claim("a", "P", "05", "s", "a <b> claim", rule),))}.get)
    html = S.reading_table(S.judge_claims(col, {"ch05_z": 1})).to_html()
    assert html.count("<th ") == 3 and not re.search(r'<th[^>]*class="row_heading', html)
    assert "p &lt; 0.05 &amp; more" in html and "a &lt;b&gt; claim" in html and "Reproduced &lt;always&gt;." in html
    assert '<a href="05_five.html#s">chapter 05</a>' in html and "scale: default" in html


def test_a_claim_can_name_the_scale_of_its_own_evidence():
    claim = Claim("z-claim", "Paper A", "05", "sec-ch05-z", "z holds", _rule_x, scale_key="ch05_z_scale")
    col = S.collect_claims(SOURCES[:1], load={"five": SimpleNamespace(CLAIMS=(claim,), PAPERS=(PAPER_A,))}.get)
    row = lambda values: S.judge_claims(col, values, {"05": "default"})[0]  # noqa: E731
    assert row({"ch05_x": 4.0, "ch05_z_scale": "long"}).scale == "long"      # evidence from a long-scale store
    assert row({"ch05_x": 4.0, "ch05_z_scale": "this run"}).scale == "default"  # not a scale: the notebook's
    assert row({"ch05_x": 4.0}).scale == "default"                              # value absent: the notebook's
    assert CLAIM_X.scale_key == ""


def _count_boxes(fig):
    """The drawn extents of the counts inside the bars (texts that are whole numbers), with their boxes."""
    from lowrank.book.figures import drawn_extent

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [drawn_extent(t, renderer) for ax in fig.axes for t in ax.texts if t.get_text().isdigit()]


def _many_rows(total=40):
    """A chart that crowds its counts: one group with every verdict once and many untested claims."""
    rows = [S.Row("05", "05_five", "s", "Paper A", f"{v} {i}", "e", v, "", "default", "r", kind=SIMULATION)
            for i, v in enumerate(VERDICTS)]
    rows += [S.Row("05", "05_five", "s", "Paper A", f"untested {i}", "e", NOT_TESTED, "", "none", "r",
                   kind=TRAINING) for i in range(total - len(rows))]
    rows += [S.Row("02", "02_two", "s", "Paper B with a long name (2020)", "p", "e", REPRODUCED, "", "default", "r",
                   kind=PROOF_CHECK)]
    return rows


@pytest.mark.parametrize("total", [12, 40, 90])
def test_verdict_chart_counts_never_overlap_in_either_layout(total):
    import matplotlib.pyplot as plt

    from lowrank.book.figures import narrow_variant
    from lowrank.book.synthesis_figures import verdict_chart

    fig = verdict_chart(_many_rows(total))
    narrow = narrow_variant(fig)
    for f in (fig, narrow):
        boxes = _count_boxes(f)
        assert len(boxes) == len(VERDICTS) + 1  # every count is drawn, inside its bar or under it
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), f"counts overlap at {total} claims: {a} and {b}"
    plt.close(fig)
    plt.close(narrow)


def test_verdict_chart_phone_layout_gives_the_bars_the_width_and_legible_text():
    import matplotlib.pyplot as plt

    from lowrank.book.figures import (MIN_PLOT_FRAC, MIN_TEXT_PX, NARROW_ATTR, PHONE_COLUMN_PX, figure_png,
                                      plot_fraction)
    from lowrank.book.synthesis_figures import verdict_chart

    fig = verdict_chart(_many_rows())
    assert callable(getattr(fig, NARROW_ATTR))
    _, meta = figure_png(fig)
    info = meta["lowrank"]
    assert info["plot_frac"] >= MIN_PLOT_FRAC and info["narrow_plot_frac"] >= 0.85  # labels above the bars
    shown = min(PHONE_COLUMN_PX, info["narrow_width"])
    assert info["narrow_text_px"] * shown / info["narrow_width"] >= MIN_TEXT_PX
    narrow = getattr(fig, NARROW_ATTR)()
    assert not narrow.axes[0].get_yticklabels() or not any(t.get_text() for t in narrow.axes[0].get_yticklabels())
    assert "Paper B with a long name (2020): proof checks" in [t.get_text() for t in narrow.axes[0].texts]
    plt.close(narrow)
    # the measure can fail: labels left of the bars in a phone-wide figure leave the bars a sliver
    squeezed, ax = plt.subplots(figsize=(4.2, 3))
    plot_verdicts_by_paper(_many_rows(), ax)
    ax.set_yticks(ax.get_yticks(), ["a label long enough to take most of a narrow figure's width"] * 2)
    with warnings.catch_warnings():  # matplotlib warns that this deliberately bad layout cannot fit
        warnings.simplefilter("ignore", UserWarning)
        assert plot_fraction(squeezed) < MIN_PLOT_FRAC
    plt.close(squeezed)
    plt.close(fig)


@dataclass(frozen=True)
class _SmithEvidence(Record):
    """What the third paper's rule reads: one measured z."""
    PREFIX: ClassVar[str] = "ch09_"
    z: float


def test_a_third_paper_is_a_claims_module_and_a_chapter_with_no_edit_here():
    """A new paper arrives as a chapter module declaring PAPERS and CLAIMS: it is tabulated, counted,
    answered and given its own values, beside the book's real claims."""
    def rule(e: _SmithEvidence):
        """Reproduced when z is positive."""
        return Judgement(REPRODUCED if e.z > 0 else CONTRADICTED, f"z = {e.z}")

    smith = Paper("Smith et al. (2027)", "smith", "heads should be as large as the sequence")
    third = SimpleNamespace(PAPERS=(smith,), CLAIMS=(Claim("smith-big-heads", smith.name, "09", "sec-ch09", "big heads win",
                                                           rule, kind=TRAINING, evidence=_SmithEvidence),))
    sources = (*S.claim_sources(), S.ChapterSource("09", "09_third", "third"))
    load = lambda name: third if name == "third" else claims.load_module(name)  # noqa: E731
    tables = S.run_synthesis({"ch09_z": 2.0}, {"09": "default"}, sources=sources, load=load)
    assert [p.slug for p in tables["collection"].papers] == ["bhojanapalli", "min_li", "smith"]
    (row,) = [r for r in tables["rows"] if r.key == "smith-big-heads"]
    assert row.verdict == REPRODUCED and row.paper == smith.name
    h = S.headline(tables)
    assert h["ch08_totals"].startswith("The three papers make")
    assert h["ch08_found_smith"].startswith(f"{smith.name}: of the one empirical claim tested, 1 is reproduced")
    assert h["ch08_answer_smith"].startswith(f"{smith.name} argue that heads should be as large as the sequence")
    assert smith.name in h["ch08_answers"]
    assert h["ch08_n_reproduced"] == 1 + sum(r.verdict == REPRODUCED for r in tables["rows"] if r.key != row.key)
