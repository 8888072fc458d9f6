"""Chapter 04's tables for the page: plain DataFrames with readable column names (the chapter
styles them), and the verdict table of its claims."""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ..verdicts import TRAINING
from .rules import CLAIMS, LIVE_RULES
from .summaries import LEVEL

__all__ = ["parameter_display", "configuration_display", "COMPARISONS", "comparison_table", "comparison_display",
           "lr_display", "claims_table"]


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


def claims_table(H: Mapping) -> pd.DataFrame:
    """Chapter 04's claims judged on ``H``: claim, verdict (with its qualifier) and evidence, the
    verdict as chapter 08 records it (long scale for the training claims), the same rule applied
    to this execution's own runs, the rule's sentence and what the rules ledger shows for it
    (registration, amendments, with their commits)."""
    from ..ledger import ledger_note, read_ledger

    events = read_ledger()
    rows = []
    for c in CLAIMS:
        j = c.judge(H)
        live = LIVE_RULES.get(c.key)
        lj = live(H) if live else None
        rows.append({"claim": c.statement, "verdict": j.label, "evidence": j.evidence,
                     "same rule on this page's live run": lj.label if lj else (
                         "(not a training claim)" if c.kind != TRAINING else "(no such models in the live run)"),
                     "rule": c.rule_sentence, "rules ledger": ledger_note(c.key, events)})
    return pd.DataFrame(rows)
