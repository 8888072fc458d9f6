"""Chapter 08: collect every chapter's claims, judge them on that chapter's headline values, tabulate.

The claims and their rules live in the chapters' experiment modules (``CLAIMS``, see
:mod:`lowrank.experiments.verdicts`); this module only gathers them from the modules listed in
:func:`~lowrank.experiments.claims.claim_sources`, judges each on the headline values of its own chapter, and lays the
judgements out as the book's verdict table. It holds no rule of its own.

Evidence arrives as one dict of values (``chNN_*`` keys, as the chapters' evidence files hold
them, :func:`read_chapter_evidence`, or as the chapters' ``headline()`` dicts merged), and is
split per chapter by the key prefix. A chapter with
no values is "not executed"; a claim whose rule asks for a value its chapter did not provide
gets a row that says so. Neither stops the table. A chapter whose module is missing or defines
no ``CLAIMS`` contributes no claim, and the table says so in a row of its own.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from .verdicts import (BOOK, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, KINDS, NEGLIGIBLE,
                       KIND_MEANING, NOT_JUDGED, NOT_TESTED, PROOF_CHECK, REPRODUCED, SCALES, VERDICT_MEANING, VERDICTS,
                       WEAKER, PAPERS, Claim, Effect, Judgement, MissingEvidence, Paper, one_line_reason)
from ..core.params import IntList, Str
from . import abstract as _abstract, answers as _answers
from .evidence import read_book_evidence
from .claims import ChapterSource, claim_sources, Collection, collect_claims, load_module

__all__ = ["estimate", "ChapterSource", "claim_sources", "NOT_JUDGED", "Collection", "Row", "collect_claims",
           "split_by_chapter", "read_chapter_evidence", "judge_claims", "section_anchor",
           "chapter_link", "verdict_table", "style_table", "verdict_counts", "count_phrase",
           "totals_sentence", "silent_sentence", "meanings_table", "run_synthesis", "headline",
           "HEADLINE_KEYS", "headline_keys", "run", "counts_by_kind", "found_sentence", "kinds_table",
           "reading_table", "card_rows", "answers", "abstract_markdown"]


# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.core.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    chapters_dir=Str(doc="folder whose evidence/ holds the evidence files of the chapters that judge claims"),
    practitioner_ns=IntList(2, 2**20, doc="sequence lengths n at which the answer states the head size a head "
                                          "needs to express every attention pattern"),
)
CONSTRAINTS = ()
# Parameters that name files or folders (lowrank.book.runner resolves them): a results store
# written, a store only read, a folder read, or a corpus name or path.
PATHS = {"chapters_dir": "input_folder"}




# --- evidence and scale ----------------------------------------------------------------------

_PREFIX = re.compile(r"ch(\d\d)_")


def split_by_chapter(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{'05': {every chNN_ key of chapter 05: value}, ...}; keys without a chNN_ prefix are dropped."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        m = _PREFIX.match(key)
        if m:
            out.setdefault(m.group(1), {})[key] = value
    return out


def read_chapter_evidence(folder: str | Path, sources: Iterable[ChapterSource] | None = None
                          ) -> tuple[dict[str, Any], dict[str, str]]:
    """(the values of every listed chapter's evidence file under ``folder``, merged, {chapter number:
    scale}): what chapter 08 judges, read as data (:mod:`lowrank.experiments.evidence`), never from
    another notebook. A chapter without an evidence file gives no value and no scale."""
    values: dict[str, Any] = {}
    scales: dict[str, str] = {}
    sources = claim_sources() if sources is None else sources
    for stem, found in read_book_evidence(folder, [s.stem for s in sources]).items():
        values.update(found.values)
        scales[found.chapter] = found.scale
    return values, scales


# --- judging ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One row of the verdict table: a judged claim, an unjudged one, or a chapter with no claim."""
    chapter: str
    stem: str
    section: str          # the label of the section that tests the claim ("" for a silent chapter)
    paper: str
    statement: str
    evidence: str
    verdict: str          # one of VERDICTS, or NOT_JUDGED
    qualifier: str
    scale: str
    rule: str
    key: str = ""
    kind: str = ""
    where: str = ""
    ledger: str = ""
    # the measured effects the verdict rests on (Judgement.effects), for the answers to quote
    effects: tuple[Effect, ...] = ()
    detail: str = ""      # Judgement.detail: what the table adds after the qualifier
    awaits: str = ""      # Judgement.awaits: the data an inconclusive rule still waits for

    @property
    def own(self) -> bool:
        """A finding of the book's own, counted apart from the papers' claims."""
        return self.paper == BOOK

    @property
    def reason(self) -> str:
        """The qualifier with its detail, as the verdict table prints it."""
        return f"{self.qualifier}; {self.detail}" if self.detail else self.qualifier

    @property
    def label(self) -> str:
        return f"{self.verdict}: {self.reason}" if self.qualifier else self.verdict

    @property
    def judged(self) -> bool:
        return self.verdict in VERDICTS


def judge_claims(collection: Collection, values: Mapping[str, Any],
                 scales: Mapping[str, str] | None = None, *,
                 ledger: Callable[[str], str] | None = None) -> list[Row]:
    """Judge every collected claim on its own chapter's values; one row per claim, then one per silent chapter.

    A chapter with no value at all gives its claims the evidence "chapter NN not executed"; a
    claim whose rule needs a value the chapter lacks names that value. Both are NOT_JUDGED.
    ``scales`` maps chapter numbers to the scale they were run at (default: "default"); a claim
    with a ``scale_key`` whose value is one of SCALES is judged at that scale instead.
    """
    by_chapter = split_by_chapter(values)
    scales = dict(scales or {})
    note = ledger or (lambda key: "")
    rows = []
    for c in collection.claims:
        src = collection.source(c.chapter)
        stem = src.stem if src else c.chapter
        if c.rule is None:
            j = c.judge({})
            rows.append(Row(chapter=c.chapter, stem=stem, section=c.section, paper=c.paper, statement=c.statement,
                            evidence=j.evidence, verdict=j.verdict, qualifier=j.qualifier, detail=j.detail,
                            scale="none", rule="",
                            key=c.key, kind=c.kind, where=c.where, ledger=""))
            continue
        scale = scales.get(c.chapter, "default")
        if c.scale_key:  # the claim names the scale of its evidence itself (one of SCALES, else ignored)
            own = by_chapter.get(c.chapter, {}).get(c.scale_key)
            if own in SCALES:
                scale = own
        common = dict(chapter=c.chapter, stem=stem, section=c.section, paper=c.paper,
                      statement=c.statement, rule=c.rule_sentence, key=c.key, kind=c.kind, where=c.where,
                      ledger=note(c.key))
        if c.chapter not in by_chapter:
            rows.append(Row(**common, evidence=f"chapter {c.chapter} not executed", verdict=NOT_JUDGED,
                            qualifier="", scale="none"))
            continue
        try:
            j: Judgement = c.judge(by_chapter[c.chapter])
        except MissingEvidence as e:
            key = getattr(e, "key", "")
            m = _PREFIX.match(key)
            if m and m.group(1) != c.chapter:
                evidence = (f"the rule reads {key}, a value of chapter {m.group(1)}; a rule may read only "
                            f"its own chapter's values (chapter {c.chapter})")
            else:
                evidence = (f"chapter {c.chapter} was executed without the value {key or e.args[0]}; "
                            "re-execute it with its current code")
            rows.append(Row(**common, evidence=evidence, verdict=NOT_JUDGED, qualifier="", scale=scale))
            continue
        rows.append(Row(**common, evidence=j.evidence, verdict=j.verdict, qualifier=j.qualifier, detail=j.detail,
                        scale=scale, effects=j.effects, awaits=j.awaits))
    rows = _fold_models(collection, rows)
    for number, reason in collection.silent.items():
        src = collection.source(number)
        rows.append(Row(chapter=number, stem=src.stem if src else number, section="", paper="",
                        statement="(no claim collected)", evidence=reason, verdict=NOT_JUDGED, qualifier="",
                        scale=scales.get(number, "none"), rule=""))
    return rows


def _fold_models(collection: Collection, rows: list[Row]) -> list[Row]:
    """A claim judged on one more model (``Claim.model_of``) joins the row of the claim it extends:
    its verdict and evidence are added to that row's evidence, naming the model, and the claim is
    counted once, with the verdict of its own rule."""
    extends = {c.key: c.model_of for c in collection.claims if c.model_of}
    model = {c.key: c.model or c.key for c in collection.claims if c.model_of}
    extra: dict[str, list[Row]] = {}
    for r in rows:
        if r.key in extends:
            extra.setdefault(extends[r.key], []).append(r)
    out = []
    for r in rows:
        if r.key in extends:
            if not any(p.key == extends[r.key] for p in rows):  # its claim is gone: keep the row, say so
                out.append(r)
            continue
        more = extra.get(r.key, [])
        if more:
            added = "; ".join(f"{model[m.key]} ({m.scale} scale, its own rule): "
                              f"{m.label} ({m.evidence})" for m in more)
            r = replace(r, evidence=f"{r.evidence}. The same claim on more models: {added}")
        out.append(r)
    return out


# --- links and tables ------------------------------------------------------------------------

def section_anchor(label: str) -> str:
    """The HTML id Sphinx gives a section labelled ``(label)=`` (docutils' make_id)."""
    anchor = re.sub(r"[^a-z0-9]+", "-", label.lower())
    return re.sub(r"^[^a-z]+", "", anchor).strip("-")


def chapter_link(row: Row, base: str = "") -> str:
    """An HTML link to the section that tests the row's claim (to the chapter if there is no section).

    ``base`` is the path from the page showing the table to the chapters folder: "" in a chapter,
    "chapters/" in intro.md.
    """
    href = f"{base}{row.stem}.html"
    if row.section:
        href += f"#{section_anchor(row.section)}"
    return f'<a href="{href}">chapter {row.chapter}</a>'


COLUMNS = ("Claim", "Paper", "Chapter", "Evidence (with uncertainty)", "Verdict", "Scale", "Rule")


def verdict_table(rows: Iterable[Row], *, base: str = "", brief: bool = False):
    """The verdict table as a DataFrame (Chapter holds an HTML link; show it with :func:`style_table`).

    ``brief`` keeps Claim, Paper, Chapter and Verdict, for the intro.
    """
    import pandas as pd

    records = [{"Claim": r.statement, "Paper": r.paper or "-", "Chapter": chapter_link(r, base),
                "Evidence (with uncertainty)": r.evidence, "Verdict": r.label, "Scale": r.scale,
                "Rule": r.rule or "-"} for r in rows]
    table = pd.DataFrame(records, columns=list(COLUMNS))
    return table[["Claim", "Paper", "Chapter", "Verdict"]] if brief else table


def style_table(table):
    """A Styler for reading: no index column, left-aligned, every column but Chapter HTML-escaped."""
    text = [c for c in table.columns if c != "Chapter"]
    return (table.style.hide(axis="index")
            .format(escape="html", subset=text)
            .set_properties(**{"text-align": "left", "vertical-align": "top"})
            .set_table_styles([{"selector": "th", "props": [("text-align", "left")]}]))


def card_rows(rows: Iterable[Row]) -> list[dict[str, str]]:
    """The claim rows as plain dicts for the book's verdict cards (``lowrank.book.verdict_view``):
    links relative to the book's root, the reason in one line, evidence, rule and ledger record."""
    out = []
    for r in rows:
        if not is_claim(r):
            continue
        href = f"chapters/{r.stem}.html" + (f"#{section_anchor(r.section)}" if r.section else "")
        paper = r.paper + (f", {r.where}" if r.where else "")
        out.append(dict(claim=r.statement, paper=paper, href=href, section_text=f"chapter {r.chapter}",
                        verdict=r.verdict if r.judged or r.verdict == NOT_TESTED else INCONCLUSIVE,
                        qualifier="", reason=one_line_reason(r.verdict, r.reason, r.evidence) if r.judged else f"not judged: {r.evidence}",
                        evidence=r.evidence, rule=r.rule or "no rule: the claim is not tested",
                        scale=r.scale, kind=r.kind, ledger=r.ledger))
    return out


def reading_table(rows: Iterable[Row], base: str = ""):
    """The verdict table laid out for reading in a ~700 px column: three columns (the claim with
    its paper and a link to its section; the evidence with the rule under it; the verdict with its
    scale), every text HTML-escaped. A Styler without an index column."""
    import html

    import pandas as pd

    e = html.escape
    where = lambda r: f", {e(r.where)}" if r.where else ""  # noqa: E731
    records = [{
        "Claim": (f"{e(r.statement)}<br><small>{e(r.paper or '-')}{where(r)}; {e(r.kind or '-')}; "
                  f"{chapter_link(r, base)}</small>"),
        "Evidence, and the rule that judged it": (
            f"{e(r.evidence)}<br><small><em>Rule:</em> {e(r.rule or '-')}</small>"
            + (f"<br><small><em>Ledger:</em> {e(r.ledger)}</small>" if r.ledger else "")),
        "Verdict": (f"<strong>{e(r.verdict)}</strong>" + (f": {e(r.reason)}" if r.qualifier else "")
                    + f"<br><small>scale: {e(r.scale)}</small>"),
    } for r in rows]
    table = pd.DataFrame(records, columns=["Claim", "Evidence, and the rule that judged it", "Verdict"])
    return (table.style.hide(axis="index")
            .set_properties(**{"text-align": "left", "vertical-align": "top"})
            .set_properties(subset=["Claim"], **{"width": "32%"})
            .set_properties(subset=["Verdict"], **{"width": "22%"})
            .set_table_styles([{"selector": "th", "props": [("text-align", "left")]}]))


def kinds_table():
    """The four kinds of evidence and what each means, from verdicts.KIND_MEANING."""
    import pandas as pd

    return pd.DataFrame({"Kind": list(KINDS), "Meaning": [KIND_MEANING[k] for k in KINDS]})


def meanings_table():
    """The five verdicts and what each means, from verdicts.VERDICT_MEANING (the one definition)."""
    import pandas as pd

    return pd.DataFrame({"Verdict": list(VERDICTS), "Meaning": [VERDICT_MEANING[v] for v in VERDICTS]})


# --- sentences -------------------------------------------------------------------------------

def count_phrase(count: int, noun: str = "claim", plural: str | None = None) -> str:
    """'no claims', '1 claim', '3 claims': a count with its noun, agreeing for every count."""
    if count == 0:
        return f"no {plural or noun + 's'}"
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def verdict_counts(rows: Iterable[Row]) -> dict[str, int]:
    """{verdict: number of claims} for every verdict and NOT_JUDGED (claim rows only)."""
    counts = Counter(r.verdict for r in rows if r.statement != "(no claim collected)")
    return {v: counts.get(v, 0) for v in (*VERDICTS, NOT_JUDGED)}


# Each verdict as a predicate, singular and plural, so that "1 claim is ..." and "3 are ..." parse.
_PREDICATE = {
    REPRODUCED: ("is reproduced", "are reproduced"),
    CORRECTED: ("is reproduced with a correction", "are reproduced with a correction"),
    WEAKER: ("is reproduced in a weaker form", "are reproduced in a weaker form"),
    CONDITIONAL: ("holds only under stated conditions", "hold only under stated conditions"),
    NEGLIGIBLE: ("shows no effect larger than its margin", "show no effect larger than their margins"),
    INCONCLUSIVE: ("is inconclusive", "are inconclusive"),
    CONTRADICTED: ("is contradicted", "are contradicted"),
    NOT_TESTED: ("is not tested", "are not tested"),
    NOT_JUDGED: ("is not judged yet, its evidence missing", "are not judged yet, their evidence missing"),
}


def _clause(count: int, verdict: str) -> str:
    one, many = _PREDICATE[verdict]
    if count == 0:
        return f"none {one}"
    return f"{count} {one if count == 1 else many}"


def is_claim(r: Row) -> bool:
    return r.statement != "(no claim collected)"


def _verdict_list(rows: list[Row]) -> str:
    """'5 are reproduced, 1 is contradicted and 2 are not tested': the verdicts that occur, in order."""
    counts = Counter(r.verdict for r in rows)
    parts = [_clause(counts[v], v) for v in (*VERDICTS, NOT_JUDGED) if counts[v]]
    if not parts:
        return "none"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _group(rows: list[Row], noun: str, plural: str, gloss: str = "") -> str:
    what = f"one {noun}" if len(rows) == 1 else f"{len(rows)} {plural}"
    return f"of the {what}{f' ({gloss})' if gloss else ''}, {_verdict_list(rows)}"


_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def totals_sentence(rows: Iterable[Row]) -> str:
    """The verdicts counted by kind, never adding proof checks to empirical results, with the book's
    own findings apart; a sentence that parses for every count."""
    rows = [r for r in rows if is_claim(r)]
    if not rows:
        return "No claim was collected from the chapters, so none was judged."
    papers = [r for r in rows if not r.own]
    proof = [r for r in papers if r.kind == PROOF_CHECK and r.verdict != NOT_TESTED]
    empirical = [r for r in papers if r.kind != PROOF_CHECK and r.verdict != NOT_TESTED]
    untested = [r for r in papers if r.verdict == NOT_TESTED]
    own = [r for r in rows if r.own]
    cited = len({r.paper for r in papers})
    parts = [f"The {_NUMBER_WORDS.get(cited, str(cited))} {'paper makes' if cited == 1 else 'papers make'} "
             f"{count_phrase(len(papers))} that the book lists" if papers else "The papers make no claim the book lists"]
    if proof:
        parts.append(_group(proof, "proof check", "proof checks",
                            "identities, constructions or arithmetic, true for any data"))
    if empirical:
        parts.append(_group(empirical, "empirical claim tested", "empirical claims tested",
                            "simulations, training experiments and pretrained models"))
    if untested:
        verb = "is" if len(untested) == 1 else "are"
        parts.append(f"{count_phrase(len(untested))} {verb} not tested, each with what testing it would take")
    else:
        parts.append("every claim is tested")
    text = parts[0] + ": " + "; ".join(parts[1:]) + "."
    if own:
        text += f" The book's own findings are counted apart: {_group(own, 'finding', 'findings')}."
    return text[0].upper() + text[1:]


def counts_by_kind(rows: Iterable[Row]):
    """Claims per verdict (rows) and kind (columns), the papers' claims only, then the book's own
    findings in a column of their own; verdicts no claim has are left out."""
    import pandas as pd

    rows = [r for r in rows if is_claim(r)]
    groups = [(k, [r for r in rows if not r.own and r.kind == k]) for k in KINDS]
    groups.append(("book's own findings", [r for r in rows if r.own]))
    groups = [(name, g) for name, g in groups if g]
    used = [v for v in (*VERDICTS, NOT_JUDGED) if any(r.verdict == v for r in rows)]
    records = [{"Verdict": v, **{name: sum(r.verdict == v for r in g) for name, g in groups}} for v in used]
    records.append({"Verdict": "total", **{name: len(g) for name, g in groups}})
    return pd.DataFrame(records, columns=["Verdict", *(name for name, _ in groups)])


def found_sentence(rows: Iterable[Row], paper: str) -> str:
    """One paper's result in a sentence: its proof checks, its empirical claims and its untested claims."""
    mine = [r for r in rows if is_claim(r) and r.paper == paper]
    if not mine:
        return f"{paper}: no claim collected."
    proof = [r for r in mine if r.kind == PROOF_CHECK and r.verdict != NOT_TESTED]
    empirical = [r for r in mine if r.kind != PROOF_CHECK and r.verdict != NOT_TESTED]
    untested = [r for r in mine if r.verdict == NOT_TESTED]
    parts = []
    if proof:
        parts.append(_group(proof, "proof check", "proof checks"))
    if empirical:
        parts.append(_group(empirical, "empirical claim tested", "empirical claims tested"))
    if untested:
        parts.append(f"{count_phrase(len(untested))} not tested")
    return f"{paper}: " + "; ".join(parts) + "."


def silent_sentence(collection: Collection) -> str:
    """Which listed chapters contributed no claim (and why), or that every one did."""
    numbers = [s.number for s in collection.sources]
    if not collection.silent:
        return f"Every chapter listed ({', '.join(numbers)}) contributed claims."
    parts = [f"chapter {n} ({why})" for n, why in collection.silent.items()]
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    listed = "it as a row" if len(parts) == 1 else "them as rows"
    return f"No claim was collected from {joined}; the table lists {listed} without a verdict."


# --- the chapter -----------------------------------------------------------------------------

def run_synthesis(values: Mapping[str, Any], scales: Mapping[str, str] | None = None, *,
                  sources: Iterable[ChapterSource] | None = None,
                  load: Callable[[str], ModuleType | None] = load_module,
                  untested: Iterable[Claim] | None = None,
                  ledger: Callable[[str], str] | None = None,
                  practitioner_ns: Iterable[int] = ()) -> dict[str, Any]:
    """Collect, judge and tabulate: {'collection', 'rows', 'table' (links from a chapter page),
    'brief' (links from intro.md), 'meanings', 'practitioner_ns', 'values' (the values judged,
    whose fields the abstract quotes)}. ``ledger(key)`` gives the rules
    ledger's note for a claim (:func:`lowrank.experiments.ledger.notes`; default: no note);
    ``practitioner_ns`` are the sequence lengths the practitioner's answer states thresholds at."""
    collection = collect_claims(sources, load=load, untested=untested)
    rows = judge_claims(collection, values, scales, ledger=ledger)
    return {"collection": collection, "rows": rows, "table": verdict_table(rows),
            "brief": verdict_table(rows, base="chapters/", brief=True), "meanings": meanings_table(),
            "practitioner_ns": tuple(int(n) for n in practitioner_ns), "values": dict(values)}


def run(p: Mapping[str, Any]) -> dict[str, Any]:
    """The chapter: the evidence files of the claim chapters under ``p["chapters_dir"]``
    (``evidence/<stem>.json``), with their scales and the rules ledger's notes, judged claim by claim."""
    from . import ledger

    values, scales = read_chapter_evidence(p["chapters_dir"])
    return run_synthesis(values, scales, ledger=ledger.notes(), practitioner_ns=p.get("practitioner_ns", ()))


def headline_keys(papers: Iterable[Paper]) -> tuple[str, ...]:
    """Every key chapter 08 glues, with one sentence and one answer per paper (``ch08_found_<slug>``,
    ``ch08_answer_<slug>``)."""
    papers = tuple(papers)
    return ("ch08_n_claims", "ch08_totals", "ch08_silent", "ch08_brief", "ch08_verdict_meanings",
            "ch08_kind_meanings", "ch08_counts_by_kind", *(f"ch08_found_{p.slug}" for p in papers),
            "ch08_answers", "ch08_answers_brief", *(f"ch08_answer_{p.slug}" for p in papers),
            "ch08_practitioner", "ch08_practitioner_ns", "ch08_n_amended",
            *(f"ch08_n_{re.sub(r'[^a-z]+', '_', v)}" for v in (*VERDICTS, NOT_JUDGED)))


# The keys with the book's two papers (the notebook's text quotes some of them by name).
HEADLINE_KEYS = headline_keys(PAPERS)


def answers(tables: Mapping[str, Any], *, brief: bool = False) -> dict[str, Any]:
    """{'papers': each paper's :class:`~lowrank.experiments.answers.Answer`, 'practitioner': the
    practitioner's sentences}, from the judged rows; ``brief``: the abstract of
    :mod:`lowrank.experiments.abstract` (the landing page and the README), each paper's sentences
    as one answer; else chapter 08's full answers (:mod:`lowrank.experiments.answers`), whose
    practitioner's part opens with the abstract's parameter-matched comparison."""
    rows, papers = tables["rows"], tables["collection"].papers
    said = _abstract.abstract(rows, tables.get("values", {}), papers)
    if brief:
        # the thesis and theory lead (a phone's first screen shows them for both papers), the
        # trained models follow in the same paragraph
        return {"papers": tuple(_answers.Answer(p, " ".join(s[:2]), tuple(s[2:]), inline=True) for p, s in said["papers"]),
                "practitioner": said["practitioner"]}
    matched = said["practitioner"]
    return {"papers": tuple(_answers.paper_answer(rows, p) for p in papers),
            "practitioner": (*matched, *_answers.practitioner_answer(rows, tables.get("practitioner_ns", ()),
                                                                     quote_decouple=not matched))}


def abstract_markdown(tables: Mapping[str, Any]) -> str:
    """The abstract of the landing page as Markdown paragraphs: the README's opening."""
    return _abstract.abstract_text(_abstract.abstract(tables["rows"], tables.get("values", {}),
                                                      tables["collection"].papers))


def headline(tables: Mapping[str, Any], cards: Callable[..., Any] | None = None,
             prose: Callable[..., Any] | None = None, counts: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Every value chapter 08 glues: counts per verdict, the totals sentence, the answers, the brief
    and meanings tables.

    The book renders three of them (without a renderer each is plain): ``cards(rows, brief=True)``
    the landing page's brief table from :func:`card_rows` (the book's verdict cards),
    ``prose(answers, practitioner)`` the answers, ``counts(table)`` the counts by kind."""
    rows = tables["rows"]
    counts_table = counts_by_kind(rows)
    verdicts = verdict_counts(rows)
    said, brief_said = answers(tables), answers(tables, brief=True)
    papers = tables["collection"].papers
    practitioner = said["practitioner"]
    text = prose or (lambda papers, practitioner=(): " ".join([*(a.text for a in papers), *practitioner]))
    brief = cards(card_rows(rows), brief=True) if cards is not None else style_table(tables["brief"])
    out: dict[str, Any] = {
        "ch08_n_claims": sum(verdicts.values()),
        "ch08_totals": totals_sentence(rows),
        "ch08_silent": silent_sentence(tables["collection"]),
        "ch08_brief": brief,
        "ch08_verdict_meanings": style_table(tables["meanings"]),
        "ch08_kind_meanings": style_table(kinds_table()),
        "ch08_counts_by_kind": counts(counts_table) if counts is not None else counts_table.style.hide(axis="index"),
        **{f"ch08_found_{p.slug}": found_sentence(rows, p.name) for p in papers},
        "ch08_answers": text(said["papers"], practitioner),
        "ch08_answers_brief": text(brief_said["papers"], brief_said["practitioner"]),
        **{f"ch08_answer_{p.slug}": text((a,)) for p, a in zip(papers, said["papers"])},
        "ch08_practitioner": text((), practitioner),
        "ch08_practitioner_ns": _answers.join_values(tables.get("practitioner_ns", ())),
        "ch08_n_amended": sum("amended" in r.ledger for r in rows),
    }
    for v, n in verdicts.items():
        out[f"ch08_n_{re.sub(r'[^a-z]+', '_', v)}"] = n
    assert tuple(out) == headline_keys(papers)
    return out


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    return {}, "reads the executed chapters"
