"""Chapter 04's answer in words, from its headline values: which layout wins at equal parameters,
what adding parameters through a fixed head size buys, how the h = 32 gap moved, and each
budget-store claim's verdict. Each sentence is built from the rules' fields, never typed."""
from __future__ import annotations

import math
from collections.abc import Mapping

from ..verdicts import CONTRADICTED, NEGLIGIBLE, REPRODUCED, MissingEvidence
from .rules import CLAIMS, MATCH_TOLERANCE

__all__ = ["REPORTED_SPLIT", "answer", "answer_more", "gap_reading", "budget_verdicts", "interval_side"]

# The split the chapter's answer quotes (the key prefix of its values): each model's learning rate is
# chosen on the validation split, so the test split, never used for a choice, reports the effect.
REPORTED_SPLIT = "test"
_SPLIT_WORDS = {"val": "validation", "test": "test"}


# The claims the budget store decides, in the order the page lists them: a short name and, where the
# paper has one, the figure or table it comes from.
_BUDGET_NAMES = {"bhojanapalli-fixed-heads-training": ("Fixed against standard heads at h = 32", ""),
                  "bhojanapalli-parameter-matched": ("Parameter-matched", ""),
                  "bhojanapalli-more-heads-hurt-standard": ("More standard heads hurt", ""),
                  "bhojanapalli-more-heads-help-fixed": ("More fixed-size heads help", ""),
                  "bhojanapalli-head-size-capacity": ("Larger heads help", "Table 2(B)"),
                  "head-size-past-n": ("Head size past n helps", "Table 2(B)"),
                  "too-few-heads-hurt": ("Too few heads hurt", "Fig. 4")}


def interval_side(lo: float, hi: float) -> int:
    """+1 when a 95 % interval lies above 0, -1 below, 0 when it contains 0 (or is missing)."""
    return 1 if lo > 0 else -1 if hi < 0 else 0


def gap_reading(H: Mapping) -> str:
    """What the h = 32 gap did between the long sweep's budget and the budget store's largest, as a
    phrase read off the intervals (validation and test must agree at the largest budget), naming
    both budgets; a largest budget whose runs are not all stored is said to be still training."""
    p = "ch04_rule_budget_gap_"
    before = interval_side(H["ch04_long_gap_lo"], H["ch04_long_gap_hi"])
    then = {1: "ahead", -1: "behind", 0: "level with the standard model"}[before]
    start = f"the fixed head size, {then} at {H['ch04_long_tokens_seen'] / 1e6:.1f} M tokens a run (the long sweep),"
    at = f"at {H[p + 'tokens'] / 1e6:.1f} M tokens a run (the budget store's largest budget)"
    if H[p + "lr_stored"] < H[p + "lr_planned"]:
        return (f"{start} is not measured yet {at} with each model at its own rate: {int(H[p + 'lr_stored'])} of the "
                f"{int(H[p + 'lr_planned'])} runs of the two models' rate grid are stored")
    if H[p + "stored"] < H[p + "planned"]:
        return f"{start} is not measured yet {at}: {int(H[p + 'stored'])} of its {int(H[p + 'planned'])} runs are stored"
    after = {interval_side(H[f"{p}{s}_lo"], H[f"{p}{s}_hi"]) for s in ("val", "test")}
    if len(after) > 1:
        return f"{start} is judged differently by the two splits {at}"
    now = after.pop()
    if now == 0:
        return (f"{start} is not detectably better or worse {at}"
                + ("; its early deficit was a matter of training budget" if before == -1 else ""))
    return f"{start} is {'ahead' if now == 1 else 'behind'} {at}"


_GAP_READING = {
    REPRODUCED: "buys a lower loss",
    CONTRADICTED: "costs loss",
    NEGLIGIBLE: "changes the loss by less than the margin",
}


def _claim(key: str):
    return next(c for c in CLAIMS if c.key == key)


def _judged(H: Mapping, row: str) -> bool:
    p = f"ch04_rule_budget_{row}_"
    return H[p + "lr_stored"] >= H[p + "lr_planned"] and H[p + "stored"] >= H[p + "planned"]


def _nats(d: float, lo: float, hi: float) -> str:
    return f"{d:+.3f} nats ({lo:+.3f} to {hi:+.3f})"


def _fixed_by(d: float, lo: float, hi: float) -> str:
    """Standard minus fixed loss read as the fixed head size's side: 'x nats worse (a to b)', 'x nats
    better (a to b)' when the interval excludes 0, else the signed difference with its interval."""
    if hi < 0:
        return f"{-d:.3f} nats worse ({-hi:.3f} to {-lo:.3f})"
    if lo > 0:
        return f"{d:.3f} nats better ({lo:.3f} to {hi:.3f})"
    return f"level ({_nats(d, lo, hi)})"


def answer(H: Mapping) -> str:
    """The chapter's answer, first on the page and at most about four lines on a phone: at equal
    parameters, which layout wins (the parameter-matched row, each model at its own rate) and by how
    much, with its interval and seeds; while that row is not judged, what the shared-rate runs
    showed, labelled as such. The budget opens the next paragraph (:func:`answer_more`)."""
    p, split = "ch04_rule_budget_match_", REPORTED_SPLIT
    on = f"on the {_SPLIT_WORDS[split]} split"
    if _judged(H, "match"):
        j = _claim("bhojanapalli-parameter-matched").judge(H)
        d, lo, hi, n = (H[p + f"{split}_{x}"] for x in ("diff", "lo", "hi", "n"))
        if j.verdict in (REPRODUCED, CONTRADICTED):
            return (f"At equal parameters, a fixed head size is {_fixed_by(d, lo, hi)} {on}, {int(n)} seeds, each "
                    f"model at its own rate.")
        if j.verdict == NEGLIGIBLE:
            return (f"At equal parameters, neither layout wins by more than {H['ch04_budget_margin']:g} nats: "
                    f"{_nats(d, lo, hi)} {on}, {int(n)} seeds.")
        return f"At equal parameters, undecided: standard minus fixed {_nats(d, lo, hi)} {on}, {int(n)} seeds."
    s = f"ch04_budget_shared_match_{split}_"
    if H[s + "n"] < 2:
        return "Undecided: the parameter-matched comparison is still training, each model at its own rate."
    return (f"Undecided: at one shared rate and equal parameters, fixed heads were "
            f"{_fixed_by(H[s + 'diff'], H[s + 'lo'], H[s + 'hi'])} {on}, {int(H[s + 'n'])} seeds.")


def answer_more(H: Mapping) -> str:
    """The opening's second paragraph: the budget and rates of the answer, then what adding parameters
    through a fixed head size buys (the h = 32 row, not parameter-matched), from the fair rows when
    judged, else from the shared-rate runs, labelled."""
    p, s = "ch04_rule_budget_gap_", "ch04_budget_shared_gap_"
    tokens = H["ch04_budget_extended_tokens"] / 1e6
    pa, pb = H[s + "params_a"], H[s + "params_b"]
    sizes = "" if math.isnan(pa) or math.isnan(pb) else f" ({int(pb):,} against {int(pa):,})"
    adds = f"A fixed head size of 16 at h = 32 adds parameters{sizes}"
    if _judged(H, "gap"):
        j = _claim("bhojanapalli-fixed-heads-training").judge(H)
        reading = _GAP_READING.get(j.verdict, "has no verdict yet")
        return (f"Both comparisons train {tokens:.1f} M tokens a run, each model at the best rate of its own grid. "
                f"{adds}: against standard heads it {reading}, standard minus fixed validation loss "
                f"{_nats(H[p + 'val_diff'], H[p + 'val_lo'], H[p + 'val_hi'])}, test "
                f"{_nats(H[p + 'test_diff'], H[p + 'test_lo'], H[p + 'test_hi'])}.")
    if _judged(H, "match"):
        return (f"The parameter-matched runs trained {tokens:.1f} M tokens each, each model at the best rate of its "
                f"own grid. {adds}; that comparison is still training.")
    first = (f"Those runs trained {tokens:.1f} M tokens each at one peak learning rate; the fair comparison, each "
             f"model at its own rate, is still training.")
    if H[s + "val_n"] < 2:
        return f"{first} {adds}."
    return (f"{first} {adds}: at the shared rate, standard minus fixed validation loss was "
            f"{_nats(H[s + 'val_diff'], H[s + 'val_lo'], H[s + 'val_hi'])}, test "
            f"{_nats(H[s + 'test_diff'], H[s + 'test_lo'], H[s + 'test_hi'])}.")


def _row_params(claim, H: Mapping) -> tuple[float, float]:
    """The parameter counts of the two models of the row a budget claim judges (NaN when unknown)."""
    try:
        ev = claim.evidence.read(H)
    except MissingEvidence:  # a row the chapter lacks: its verdict already says so
        return math.nan, math.nan
    return getattr(ev, "first", ev).params


def _named_claim(claim, H: Mapping) -> str:
    """A claim's short name with its source and, when its two models' parameter counts differ by more
    than the rules' tolerance, how far apart they are."""
    name, source = _BUDGET_NAMES[claim.key]
    pa, pb = _row_params(claim, H)
    notes = [source] if source else []
    if not (math.isnan(pa) or math.isnan(pb)) and abs(pa - pb) > MATCH_TOLERANCE * min(pa, pb):
        notes.append(f"parameters {max(pa, pb) / min(pa, pb):.2f} times apart")
    return name + (f" ({'; '.join(notes)})" if notes else "")


def budget_verdicts(H: Mapping) -> str:
    """Each budget-store claim's verdict under its registered rule, one sentence per verdict naming
    its claims (with their source and how far apart their models' sizes are); the reasons are on the
    claims' cards."""
    groups: dict[str, list[str]] = {}
    for c in CLAIMS:
        if c.key in _BUDGET_NAMES:
            groups.setdefault(c.judge(H).verdict, []).append(_named_claim(c, H))
    out = []
    for verdict, names in groups.items():
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        out.append(f"{verdict[:1].upper()}{verdict[1:]}: {who}.")
    return " ".join(out)
