"""What the book found, as an abstract: the landing page's answer box and the top of the README.

A paper's abstract does this job in 150 to 250 words, so this text is short on purpose: per paper,
the thesis, what holds in theory and simulation (with the one correction or condition that
matters), and how many of its training and pretrained claims are decided, with their verdicts;
then the practitioner's choice of ``head_dim`` in two sentences. The practitioner's sentences lead
with the parameter-matched comparison (a standard model widened to the parameters of a model with
many fixed-size heads), because a choice of head size is a choice at a fixed budget; the second
says what adding parameters through a fixed head size buys, and that it is not parameter-matched.

Everything is read from chapter 08's judged rows (:class:`lowrank.experiments.synthesis.Row`) and
from the evidence fields chapter 04 glues for those two comparisons: the fair design's
(``ch04_rule_budget_<row>_*``: ``arm_a``, ``arm_b``, ``arm_shared``, ``test_diff``, ``test_lo``, ``test_hi``, ``test_n``,
``param_gap``, the runs stored and planned) and, until those are measured, the runs at one shared
learning rate (``ch04_budget_shared_<row>_*``, with the arms' parameter counts); nothing is typed.
Rule internals (trends per doubling, floors, margins) stay in chapter 08, one click away. A
comparison whose fair version (each model at its own tuned learning rate) is still being stored
is said to be re-run, with how much of it is stored, and its numbers are labelled as those of one
shared learning rate.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .verdicts import (AWAITS_RATES, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, NEGLIGIBLE, NOT_TESTED, PAPERS,
                       PRETRAINED, PROOF_CHECK, REPRODUCED, SIMULATION, TRAINING, VERDICTS, WEAKER, Paper)

__all__ = ["MATCH_KEY", "GAP_KEY", "FAIR_FIELDS", "SHARED_FIELDS", "SPLIT_KEY", "paper_abstract", "practitioner_abstract",
           "abstract", "abstract_text"]

# The rows the practitioner's sentences rest on.
MATCH_KEY = "bhojanapalli-parameter-matched"
GAP_KEY = "bhojanapalli-fixed-heads-training"
# Each row's fields: the fair design's (each model at its own rate), read by the rule, and the runs
# at one shared rate, quoted (labelled) until the fair ones are measured.
FAIR_FIELDS = "ch04_rule_budget_{row}_"
SHARED_FIELDS = "ch04_budget_shared_{row}_"
# The headline value naming the split chapter 04 reports (its rates are chosen on validation), which
# the abstract quotes too, so the two pages quote one split.
SPLIT_KEY = "ch04_reported_split"

_THEORY = (PROOF_CHECK, SIMULATION)
_EVIDENCE = (TRAINING, PRETRAINED)
_WORD = {REPRODUCED: "reproduced", CORRECTED: "reproduced with a correction", WEAKER: "hold in a weaker form",
         CONDITIONAL: "hold only under conditions", NEGLIGIBLE: "show no effect beyond the margin",
         CONTRADICTED: "contradicted", INCONCLUSIVE: "inconclusive"}
_PAREN = re.compile(r"\s*\([^()]*\)")
# The scales as the abstract names them, shorter than the verdict table's words.
_SHORT_SCALE = {"smoke": "smoke-test", "default": "book's default", "long": "long CPU", "paper": "paper-scale",
                "custom": "custom"}


def scale_phrase(rows: Iterable) -> str:
    """'the long CPU runs', "the book's default and long CPU runs": the scales the rows were judged at."""
    names = list(dict.fromkeys(_SHORT_SCALE.get(r.scale, r.scale) for r in rows if r.scale not in ("", "none")))
    return f"the {_join(names)} runs" if names else "the book's runs"


def _verdict(r) -> str:
    return r.verdict if r.verdict in VERDICTS else "not judged yet"


def _clause(text: str) -> str:
    """A qualifier without its parenthesised asides: 'the exact head-size threshold is n - 1, one
    below the paper's n'."""
    return _PAREN.sub("", text).strip().rstrip(".")


def _name(r) -> str:
    """A claim's short name inside a sentence: its statement up to a colon ('saturation'), else the
    whole statement quoted."""
    s = r.statement.rstrip(".")
    head = s.split(": ")[0]
    if head == s or len(head.split()) > 6:
        return f"“{s}”"
    # Lower-case the first letter of an ordinary first word ("Saturation", "A"), not of a name ("ViT", "MLA").
    first = head.split()[0]
    return head[0].lower() + head[1:] if first[1:] == first[1:].lower() else head


def _names(rows: list) -> list[str]:
    """Short names, one per idea: 'saturation by the paper's own criterion' goes with 'saturation'."""
    names = list(dict.fromkeys(_name(r) for r in rows))
    return [n for n in names if not any(n != m and n.startswith(m) for m in names)]


def _join(parts: Sequence[str]) -> str:
    parts = list(parts)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""


def _theory_sentence(rows: list) -> str:
    """In theory and simulation: holds / holds in part, with the one correction, condition or
    contradiction that matters most (a contradiction first, then a condition, then a correction)."""
    kinds = {r.kind for r in rows}
    where = "In simulation" if kinds == {SIMULATION} else "In theory" if kinds == {PROOF_CHECK} \
        else "In theory and simulation"
    by = {v: [r for r in rows if _verdict(r) == v] for v in VERDICTS}
    decided = [r for r in rows if _verdict(r) in VERDICTS and _verdict(r) != INCONCLUSIVE]
    notes = []
    if by[CONTRADICTED]:
        names = _names(by[CONTRADICTED])
        notes.append(f"{_join(names)} {'is' if len(names) == 1 else 'are'} contradicted")
    if by[CONDITIONAL]:
        r = by[CONDITIONAL][0]
        name = _name(r)
        notes.append(f"{'' if name.startswith('“') else 'the '}{name} holds only for {_clause(r.qualifier)}")
    if by[CORRECTED] and not notes:
        notes.append(f"sharpened: {_clause(by[CORRECTED][0].qualifier)}")
    if not decided:
        return f"{where} it is not decided yet."
    holds = not by[CONTRADICTED] and not by[CONDITIONAL] and not by[WEAKER]
    gist = "it holds" if holds else "it holds in part"
    return f"{where} {gist}" + (f", {notes[0]}" if len(notes) == 1 else f": {'; '.join(notes)}" if notes else "") + "."


def _evidence_sentence(rows: list, untested: int) -> str:
    """'In trained models, at the scale of the long CPU runs, 4 of 7 claims are decided: 2
    reproduced, 2 contradicted; 3 are inconclusive (2 until their learning-rate grid is stored).'"""
    open_rows = [r for r in rows if _verdict(r) not in VERDICTS or _verdict(r) == INCONCLUSIVE]
    decided = [r for r in rows if r not in open_rows]
    models = "trained and pretrained models" if {r.kind for r in rows} == set(_EVIDENCE) else \
        "pretrained models" if {r.kind for r in rows} == {PRETRAINED} else "trained models"
    waiting = sum(r.awaits == AWAITS_RATES for r in open_rows)
    waits = "while each model's learning rate is chosen"
    where = f"In {models} ({scale_phrase(rows)}), "
    if not decided:  # nothing to count but what is open, and why
        text = where + (f"its {len(rows)} {'claim is' if len(rows) == 1 else 'claims are'} open"
                        + (f" {waits}" if waiting == len(rows) else f" ({waiting} {waits})" if waiting else ""))
    else:
        counts = Counter(_verdict(r) for r in decided)
        told = [f"{counts[v]} {_WORD[v]}" for v in VERDICTS if counts[v]]
        text = (where + f"{len(decided)} of {len(rows)} {'claim is' if len(rows) == 1 else 'claims are'} decided: "
                + _join(told))
        if open_rows:
            text += (f"; {len(open_rows)} {'is' if len(open_rows) == 1 else 'are'} open"
                     + (f" {waits}" if waiting == len(open_rows) else f" ({waiting} {waits})" if waiting else ""))
    if untested:
        text += f"; {untested} more {'is' if untested == 1 else 'are'} not tested"
    return text + "."


def paper_abstract(rows: Iterable, paper: Paper) -> tuple[str, ...]:
    """Two or three sentences for ``paper``: the thesis, theory and simulation, trained models."""
    mine = [r for r in rows if r.paper == paper.name and r.statement != "(no claim collected)"]
    if not mine:
        return ("make no claim the book lists.",)
    out = [f"argue that {paper.thesis}." if paper.thesis else "make claims about attention's rank."]
    theory = [r for r in mine if r.kind in _THEORY and _verdict(r) != NOT_TESTED]
    evidence = [r for r in mine if r.kind in _EVIDENCE and _verdict(r) != NOT_TESTED]
    untested = sum(_verdict(r) == NOT_TESTED for r in mine)
    if theory:
        out.append(_theory_sentence(theory))
    if evidence:
        out.append(_evidence_sentence(evidence, untested))
    elif untested:
        out.append(f"The book does not test its {untested} training {'claim' if untested == 1 else 'claims'}.")
    return tuple(out)


def _num(x: Any) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x


def _nats(x: float) -> str:
    return f"{abs(x):.3f}".rstrip("0").rstrip(".") if abs(x) >= 0.001 else f"{abs(x):.1g}"


def _same_places(xs: Sequence[float]) -> list[str]:
    """Numbers as :func:`_nats` writes them, all to the places the most precise needs: 0.037 to 0.070."""
    texts = [_nats(x) for x in xs]
    places = max(len(t.split(".")[1]) if "." in t else 0 for t in texts)
    return [t if "e" in t else f"{abs(x):.{places}f}" for t, x in zip(texts, xs)]


def _arms(f: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """('standard d = 112, h = 4', 'fixed h = 32 at d = 64 (d_p = 16)', ''): the row's two models, its
    loss being the first's minus the second's, and what both share ('h = 32'), as chapter 04 states
    them (``arm_a``, ``arm_b``, ``arm_shared``); None without them."""
    if not (f.get("arm_a") and f.get("arm_b")):
        return None
    return str(f["arm_a"]), str(f["arm_b"]), str(f.get("arm_shared") or "")


def _fields(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}


def _measured(f: Mapping[str, Any]) -> bool:
    split = f.get("split")
    return bool(split) and all(math.isfinite(_num(f.get(f"{split}_{x}"))) for x in ("diff", "lo", "hi", "n")) \
        and _num(f.get(f"{split}_n")) >= 1


def _evidence(values: Mapping[str, Any], row: str) -> tuple[dict, dict, bool]:
    """(the fields to quote, the fair design's fields, whether the quoted ones are the shared-rate
    runs'): the fair comparison (each model at its own rate) once measured, else the runs at one
    shared rate, else nothing to quote ({})."""
    split = {"split": values.get(SPLIT_KEY)}
    fair = {**_fields(values, FAIR_FIELDS.format(row=row)), **split}
    if _measured(fair):
        return fair, fair, False
    shared = {**_fields(values, SHARED_FIELDS.format(row=row)), **split}
    if _measured(shared):
        return shared, fair, True
    return {}, fair, False


def _effect(f: Mapping[str, Any], arms: tuple[str, str, str] | None, *, seeds: bool = True) -> str | None:
    """'{A} reached a test loss 0.034 nats lower (95 % interval 0.012 to 0.057, 9 seeds) than {B}',
    or None without the fields."""
    split = f.get("split")
    diff, lo, hi, n = (_num(f.get(f"{split}_{x}")) for x in ("diff", "lo", "hi", "n"))
    if arms is None or not _measured(f):
        return None
    # the arm with the lower loss is the subject: "A reached a loss 0.03 nats lower than B"
    a, b, both = arms
    a, b = (a, b) if diff <= 0 else (b, a)
    a = f"at {both}, {a}" if both else a
    if diff > 0:
        lo, hi = -hi, -lo
    # the interval as magnitudes in the same direction as the effect when it excludes 0
    if lo > 0 or hi < 0:
        ends = sorted((abs(lo), abs(hi)))
        interval = "95 % interval {} to {}".format(*_same_places(ends))
    else:
        interval = f"95 % interval {lo:+.3f} to {hi:+.3f}, which contains 0"
    n_seeds = f", {int(n)} seeds" if seeds else ""
    return f"{a} reached a {split} loss {_nats(diff)} nats lower ({interval}{n_seeds}) than {b}"


def _seeds(f: Mapping[str, Any]) -> float:
    return _num(f.get(f"{f.get('split')}_n"))


def _apart(f: Mapping[str, Any], fair: Mapping[str, Any]) -> str:
    """' (6 % apart)': how far the two arms' parameter counts are apart, when the fields say."""
    share = _num(fair.get("param_gap"))
    if not math.isfinite(share):
        a, b = _num(f.get("params_a")), _num(f.get("params_b"))
        share = abs(a - b) / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan
    return f" ({share:.0%} apart)".replace("%", " %") if math.isfinite(share) else ""


def _progress(fair: Mapping[str, Any]) -> str:
    """', 6 of 54 runs stored': the learning-rate grid's and the comparison's runs, from the fields."""
    done = planned = 0
    for k, n in (("lr_stored", "lr_planned"), ("stored", "planned")):
        k, n = _num(fair.get(k)), _num(fair.get(n))
        if math.isfinite(k) and math.isfinite(n) and n > 0:
            done, planned = done + int(k), planned + int(n)
    return f", {done} of {planned} runs stored" if planned else ""


def _state(r) -> str:
    return "not judged yet" if r is None else _verdict(r)


def _incomplete(fair: Mapping[str, Any]) -> bool:
    """Fewer runs of the fair design stored than planned, as its fields count them."""
    counts = [(_num(fair.get(done)), _num(fair.get(planned)))
              for done, planned in (("lr_stored", "lr_planned"), ("stored", "planned"))]
    return any(math.isfinite(k) and math.isfinite(n) and k < n for k, n in counts)


def _pending(r, shared: bool, fair: Mapping[str, Any]) -> bool:
    """The row's fair comparison is still being stored: its numbers are the shared-rate runs', its
    fields count fewer runs than planned, or its verdict waits for its learning-rate grid."""
    return shared or (r is not None and _verdict(r) in (INCONCLUSIVE, "not judged yet")
                      and (_incomplete(fair) or r.awaits == AWAITS_RATES))


def practitioner_abstract(rows: Iterable, values: Mapping[str, Any]) -> tuple[str, ...]:
    """Two sentences for someone choosing ``head_dim``: the parameter-matched comparison first,
    then what adding parameters through a fixed head size buys, said to be not parameter-matched.
    While the fair comparison (each model at its own tuned learning rate) is being stored, the
    sentences say so and quote the runs at one shared rate, labelled as such."""
    by_key = {r.key: r for r in rows if r.key}
    match, gap = by_key.get(MATCH_KEY), by_key.get(GAP_KEY)
    if match is None and gap is None:
        return ()
    out = []
    f, fair, shared = _evidence(values, "match")
    effect = _effect(f, _arms(fair) or _arms(f))
    seeds_said = _seeds(f) if effect is not None else None
    where = f" in {scale_phrase([match])}" if match is not None else ""
    head = f"Choosing `head_dim` at about equal parameters{_apart(f, fair)}"
    if _pending(match, shared, fair):
        rerun = f"{head}: the fair comparison (each model at its tuned learning rate) is being re-run{_progress(fair)}"
        label = "at one shared rate" if shared else "so far"
        out.append(f"{rerun}; {label}{where}, {effect}." if effect else f"{rerun}.")
    elif effect:
        out.append(f"{head}{where}: {effect}; verdict: {_state(match)}.")
    else:
        out.append(f"{head}: the book's comparison is {_state(match)}.")
    f, fair, shared = _evidence(values, "gap")
    # the seeds are said again unless the first comparison said the same number
    effect = _effect(f, _arms(fair) or _arms(f), seeds=_seeds(f) != seeds_said)
    if effect:
        pending = _pending(gap, shared, fair)
        label = " (shared rate)" if shared else " (so far)" if pending else ""
        out.append(f"Adding parameters through a fixed head size{label}: {effect}, but not at equal parameters"
                   + (f" ({_state(gap)})." if not pending and gap is not None else "."))
    return tuple(out)


def abstract(rows: Iterable, values: Mapping[str, Any], papers: Iterable[Paper] = PAPERS) -> dict[str, Any]:
    """{'papers': ((paper's name, sentences), ...), 'practitioner': sentences} for each paper."""
    rows = list(rows)
    return {"papers": tuple((p.name, paper_abstract(rows, p)) for p in papers),
            "practitioner": practitioner_abstract(rows, values)}


def abstract_text(said: Mapping[str, Any]) -> str:
    """The abstract as plain text, one paragraph per paper and one for the practitioner (the
    README's opening; formulas in their plain forms, names in backticks)."""
    paras = [f"**{paper}** " + " ".join(sentences) for paper, sentences in said["papers"]]
    if said["practitioner"]:
        paras.append(" ".join(said["practitioner"]))
    return "\n\n".join(paras)
