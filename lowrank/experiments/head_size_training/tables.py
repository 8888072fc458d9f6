"""Chapter 04's tables for the page: plain DataFrames with readable column names (the chapter
styles them), the reading tables of its budget store (:mod:`.budget`, :mod:`.fair`) and the verdict
table of its claims."""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ..verdicts import TRAINING
from . import budget, fair
from .rules import CLAIMS, LIVE_RULES
from .summaries import LEVEL

__all__ = ["parameter_display", "configuration_display", "COMPARISONS", "comparison_table", "comparison_display",
           "lr_display", "claim_details", "interval_text", "budget_display", "factorial_display", "lr_check_display",
           "lr_grid_display", "judged_display"]


def parameter_display(parameters: pd.DataFrame) -> pd.DataFrame:
    """The paper's parameter table with readable column names."""
    return pd.DataFrame({
        "table": parameters["table"], "width d": parameters["d"], "heads h": parameters["h"],
        "head size": [f"{dp} ({kind})" for dp, kind in zip(parameters["d_p"], parameters["head size"])],
        "d_ff": parameters["d_ff"], "reported (M)": parameters["reported (M)"],
        "our count (M)": parameters["formula (M)"], "difference (M)": parameters["difference (M)"]})


def _pm(mean: float, sd: float) -> str:
    return f"{mean:.1f}" if math.isnan(sd) else f"{mean:.1f} ± {sd:.1f}"


def configuration_display(configs: pd.DataFrame) -> pd.DataFrame:
    """:func:`configuration_table` for reading: mean ± standard deviation over seeds in one
    column (the mean alone with one seed), parameters in thousands."""
    return pd.DataFrame({
        "heads": configs["kind"], "width d": configs["d"], "heads h": configs["h"], "head size": configs["d_h"],
        "parameters (k)": (configs["params"] / 1e3).round(1), "seeds": configs["seeds"],
        "validation perplexity": [_pm(m, s) for m, s in zip(configs.val_ppl, configs.val_ppl_sd)],
        "test perplexity": [_pm(m, s) for m, s in zip(configs.test_ppl, configs.test_ppl_sd)],
        "training (s / run)": configs["train_s"].round(1)})


COMPARISONS = (  # (headline prefix, what is compared, positive means)
    ("std_change", "standard heads: most minus fewest heads", "more heads are worse"),
    ("fixed_change", "fixed head size: most minus fewest heads", "more heads are worse"),
    ("gap", "most heads: standard minus fixed head size", "the fixed head size is better"),
    ("fixed_vs_best", "best standard minus fixed head size, most heads", "the fixed head size is better"),
    ("match", "parameter-matched: standard minus fixed head size", "the fixed head size is better"),
    ("dp_change", "fixed heads: largest minus smallest head size", "larger heads are worse"),
)


def comparison_table(H: Mapping, scale: str = "") -> pd.DataFrame:
    """One row per paired comparison of :func:`headline`'s dict ``H`` (``scale="long_"``: the
    long-scale sweep's): validation-loss difference (nats / token), its 95 % interval and the
    number of seeds."""
    rows = []
    for prefix, what, positive in COMPARISONS:
        g = lambda x: H[f"ch04_{scale}{prefix}_{x}"]  # noqa: E731
        rows.append({"comparison": what, "difference (nats)": g("diff"), "lo": g("lo"), "hi": g("hi"),
                     "seeds": g("n"), "positive means": positive})
    return pd.DataFrame(rows)


def comparison_display(H: Mapping, scale: str = "") -> pd.DataFrame:
    """:func:`comparison_table` for reading: the interval as text ('no interval' for one seed)."""
    t = comparison_table(H, scale)
    return pd.DataFrame({
        "comparison (validation loss, paired by seed)": t["comparison"],
        "difference (nats)": [f"{d:+.3f}" for d in t["difference (nats)"]],
        f"{LEVEL:.0%} interval (nats)": ["no interval (one seed)" if n < 2 or math.isnan(lo) else f"{lo:+.3f} to {hi:+.3f}"
                                   for lo, hi, n in zip(t.lo, t.hi, t.seeds)],
        "seeds": t["seeds"], "a positive difference means": t["positive means"]})


def lr_display(lr_table: pd.DataFrame | None) -> pd.DataFrame:
    """The learning-rate sweep for reading: one row per family, one column per rate (final
    validation loss, nats; the chosen rate marked), and each family's regret at the chosen rate."""
    if lr_table is None or len(lr_table) == 0:
        return pd.DataFrame({"learning-rate sweep": ["none at this scale"]})
    t = lr_table.assign(model=[f"{f}, h = {h}, head size {dh}" for f, h, dh in
                               zip(lr_table.family, lr_table.h, lr_table.d_h)])
    wide = t.pivot(index="model", columns="lr", values="val_loss")
    chosen = float(t.loc[t.chosen, "lr"].iloc[0])
    wide.columns = [f"lr {x:g}" + (" (chosen)" if x == chosen else "") for x in wide.columns]
    regret = t[t.chosen].set_index("model")["regret"]
    out = wide.reset_index().rename(columns={"model": "model (one seed)"})
    out["regret at the chosen rate (nats)"] = [regret[m] for m in wide.index]
    return out


def claim_details(H: Mapping) -> dict[str, dict[str, str]]:
    """What each of chapter 04's claims adds to its verdict card (the claims judged on ``H`` as
    chapter 08 records them, long scale for the training claims): its kind and scale, the same rule
    applied to this execution's own runs (training claims only), and what the rules ledger shows
    for it (registration, amendments, with their commits)."""
    from ..ledger import ledger_note, read_ledger

    events = read_ledger()
    out = {}
    for c in CLAIMS:
        live = LIVE_RULES.get(c.key)
        out[c.key] = {"kind": c.kind, "scale": str(H.get(c.scale_key, "default")) if c.scale_key else "default",
                      "ledger": ledger_note(c.key, events),
                      "live": live(H).label if live else (
                          "" if c.kind != TRAINING else "no such models in the live run")}
    return out


def interval_text(d: float, lo: float, hi: float, n: int) -> str:
    """'+0.012 [-0.030, +0.054]', '+0.012 (one seed)', or 'not stored yet' with no pair of runs."""
    if n == 0 or (isinstance(d, float) and math.isnan(d)):
        return "not stored yet"
    if n < 2 or math.isnan(lo):
        return f"{d:+.3f} (one seed)"
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def budget_display(comps: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison and budget: both splits' paired gaps with intervals, the change
    from the previous budget (validation) and how many of the two models' runs are stored."""
    rows = []
    for r in comps[comps.split == "validation"].itertuples():
        t = comps[(comps.row == r.row) & (comps.steps == r.steps) & (comps.split == "test")].iloc[0]
        rows.append({"comparison (a minus b)": f"{r.a} minus {r.b}", "steps": f"{r.steps:,}",
                     "tokens a run": f"{r.tokens / 1e6:.1f} M",
                     "validation (nats, 95 % interval)": interval_text(r.diff, r.lo, r.hi, r.n),
                     "test (nats, 95 % interval)": interval_text(t["diff"], t.lo, t.hi, int(t.n)),
                     "change from the previous budget (validation)":
                         "first budget" if r.steps == budget.ROW_STEPS[r.row][0] else
                         interval_text(r.change_diff, r.change_lo, r.change_hi, int(r.change_n)),
                     "runs stored": f"{r.runs} of {r.planned}"})
    return pd.DataFrame(rows)


def factorial_display(effects: pd.DataFrame) -> pd.DataFrame:
    """The factorial's cells and effects, both splits, as text with intervals."""
    v = effects[effects.split == "validation"].set_index("effect")
    t = effects[effects.split == "test"].set_index("effect")
    return pd.DataFrame({
        "standard minus fixed at h = 32 (nats)": list(v.index),
        "validation (95 % interval)": [interval_text(r["diff"], r.lo, r.hi, int(r.n)) for _, r in v.iterrows()],
        "test (95 % interval)": [interval_text(r["diff"], r.lo, r.hi, int(r.n)) for _, r in t.iterrows()],
        "seeds": [int(n) for n in v.n]})


def lr_check_display(check: pd.DataFrame, table: pd.DataFrame | None) -> pd.DataFrame:
    """The learning-rate check: final validation and test loss of each run (one seed), with each
    model's regret at every rate once the check is complete."""
    if check is None or not len(check):
        return pd.DataFrame({"learning-rate check": ["no run stored yet"]})
    out = check.sort_values(["model", "lr"])[["model", "lr", "val_loss", "test_loss"]].copy()
    if table is not None:
        reg = {(f, h, lr): r for f, h, lr, r in zip(table.family, table.h, table.lr, table.regret)}
        chosen = float(table.loc[table.chosen, "lr"].iloc[0])
        out["regret (nats)"] = [reg[(m.split()[0], int(m.split()[-1]), lr)] for m, lr in zip(out.model, out.lr)]
        out["chosen"] = ["yes" if lr == chosen else "" for lr in out.lr]
    return out.rename(columns={"model": "model (one seed)", "lr": "peak learning rate",
                               "val_loss": "validation loss (nats)", "test_loss": "test loss (nats)"})


def lr_grid_display(rates: Mapping[str, fair.RateChoice]) -> pd.DataFrame:
    """One row per model of the rate grid: validation loss at each rate tried (mean over the grid's
    seeds), the runs stored, and the chosen rate ('not yet' until every run it needs is stored)."""
    rows = []
    for m in fair.LR_GRID_MODELS:
        r = rates[m]
        losses = dict(r.losses)
        rows.append({"model": m,
                     **{f"rate {x:g}": f"{losses[x]:.3f}" if x in losses else "-" for x in
                        sorted(set(fair.LR_GRID_RATES) | {x for x, _ in r.losses})},
                     "runs stored": f"{r.stored} of {r.planned}",
                     "chosen rate": "not yet" if r.rate is None else
                     f"{r.rate:g}" + (" (end of its grid)" if r.at_edge else "")})
    return pd.DataFrame(rows).fillna("-")


def judged_display(comps: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison and budget, each model at its own rate: the rates, both splits' paired
    gaps with intervals, the change from the first budget (validation) and the runs stored."""
    rows = []
    for r in comps[comps.split == "validation"].itertuples():
        t = comps[(comps.row == r.row) & (comps.steps == r.steps) & (comps.split == "test")].iloc[0]
        first = r.steps == min(comps[comps.row == r.row].steps)
        rates = "not chosen yet" if pd.isna(r.lr_a) or pd.isna(r.lr_b) else f"{r.lr_a:g} and {r.lr_b:g}"
        rows.append({"comparison (a minus b)": f"{r.a} minus {r.b}", "rates": rates, "steps": f"{r.steps:,}",
                     "validation (nats)": interval_text(r.diff, r.lo, r.hi, r.n),
                     "test (nats)": interval_text(t["diff"], t.lo, t.hi, int(t.n)),
                     "change (validation)": "first budget" if first else
                     interval_text(r.change_diff, r.change_lo, r.change_hi, int(r.change_n)),
                     "runs stored": f"{r.runs} of {r.planned}"})
    return pd.DataFrame(rows)
