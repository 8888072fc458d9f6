"""Every number chapter 04 glues: :func:`headline` turns the chapter's ``tables`` into the dict
keyed exactly :data:`HEADLINE_KEYS`, with the rule evidence the claims of :mod:`.rules` read."""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ...layers.models import bert_parameter_count
from ...measure.stats import Estimate
from . import budget, design, fair
from .paper import PARAMETER_TOLERANCE_M
from ...train import run_key
from .step_cost import step_cost_text
from .leads import REPORTED_SPLIT, answer, answer_more, budget_verdicts, gap_reading, interval_side
from .row_record import Arms
from .rules import HORIZON_DOUBLINGS, MARGIN, MAX_SEEDS, POWER_SEEDS, evidence_keys, row_evidence
from .summaries import curve_gap, diff_text, half_width, paired, summarise

__all__ = ["HEADLINE_KEYS", "LONG_COMMAND", "headline"]


_PAIRED = ("diff", "lo", "hi", "n", "text")

# The comparisons of the three training experiments (see _training_headline): on this run's tables,
# and again, prefixed "long_", on the long-scale tables (the committed store, or this run at the long
# scale itself).
_TRAINING_KEYS = (
    "std_h_first", "std_h_last", "fixed_h_first", "fixed_h_last", "std_ppl_first", "std_ppl_last",
    "fixed_ppl_first", "fixed_ppl_last", "std_best_h", "fixed_best_h",
    *(f"std_change_{x}" for x in _PAIRED), "std_trend", *(f"fixed_change_{x}" for x in _PAIRED), "fixed_trend",
    "gap_h", "gap_std_dh", "gap_dp", "gap_std_ppl", "gap_fixed_ppl", "gap_ppl", *(f"gap_{x}" for x in _PAIRED),
    "gap_verdict", "match_fixed_h", "match_fixed_d", "match_fixed_params_k", "match_fixed_ppl", "match_base_d",
    "match_base_params_k", "match_base_ppl", "match_param_gap", *(f"match_{x}" for x in _PAIRED), "match_verdict",
    "widest_base_d", "widest_base_ppl", "dp_first", "dp_last", "dp_ppl_first", "dp_ppl_last",
    *(f"dp_change_{x}" for x in _PAIRED), "dp_trend",
    "best_std_h", *(f"fixed_vs_best_{x}" for x in _PAIRED), "fixed_vs_best_verdict", "gap_curve_text")
# The budget check: the gap at the recovery budget and its change (see _recovery_headline).
_RECOVERY_KEYS = ("rec_h", "rec_steps", "rec_tokens", "rec_budget_text", *(f"rec_gap_{x}" for x in _PAIRED),
                  *(f"rec_change_{x}" for x in _PAIRED), "rec_trend")
_LONG_SETUP_KEYS = (
    "d", "n", "dp", "n_layers", "steps", "batch_size", "n_seeds", "tokens_seen", "epochs", "lr", "init",
    "size_heads", "base_heads", "base_widths", "lr_text", "lr_regret", "lr_sweep_steps", "n_configs", "n_runs",
    "source", "scale", "prov_text", "prov_records", "cpu_s", "command")
_BUDGET_KEYS = ("budget_runs", "budget_planned", "budget_lr_check_runs", "budget_lr_check_planned",
                "budget_factorial_runs", "budget_factorial_planned", "budget_records", "budget_cpu_h",
                "budget_lr_text", "budget_prov_text", "budget_largest_tokens", "budget_command", "budget_estimate_h",
                "budget_steps_text", "budget_tokens_text", "budget_rates_text", "budget_lr_check_steps",
                "budget_factorial_steps", "budget_factorial_lr", "budget_seeds", "budget_factorial_text",
                "budget_horizon", "budget_cost_ratio", "budget_status_text", "budget_verdicts_text",
                "budget_gap_reading", "budget_trend_text", "budget_power_text", "budget_answer", "budget_margin",
                "budget_power_seeds", "budget_extended_tokens", "budget_added_text", "budget_answer_more",
                "budget_shared_lr", "reported_split", "budget_fair_rates_text", "budget_fair_grid_steps",
                "budget_fair_edge_factor", "budget_fair_judged_text", "budget_lr_grid_stored", "budget_lr_grid_planned", "budget_lr_grid_text",
                "budget_left_runs", "budget_left_h", "budget_left_text",
                *(f"budget_shared_{r}_{s}_{x}" for r in ("gap", "match") for s in ("val", "test")
                  for x in ("diff", "lo", "hi", "n")),
                *(f"budget_shared_{r}_params_{a}" for r in ("gap", "match") for a in ("a", "b")))
_LIVE_ROWS = ("gap", "match", "stdheads", "fixedheads", "dpsize")

HEADLINE_KEYS = tuple(f"ch04_{k}" for k in (
    "step_cost_text", "table_rows", "table_within", "table_max_diff", "table_tolerance", "d512_dff2048_M",
    "n_docs", "n_words", "train_tokens", "val_tokens", "test_tokens", "val_docs", "test_docs", "vocab",
    "d", "n", "dp", "n_layers", "steps", "lr", "batch_size", "val_eval_tokens", "n_seeds", "base_heads",
    "base_widths", "size_heads", *_TRAINING_KEYS,
    "tokens_seen", "epochs", "n_configs", "n_runs", "train_s", "wall_s", "size_ppl_spearman",
    "init", "lr_text", "lr_regret", *_RECOVERY_KEYS,
    *(f"long_{k}" for k in _LONG_SETUP_KEYS + _TRAINING_KEYS + _RECOVERY_KEYS), *_BUDGET_KEYS)) + (
    evidence_keys("budget", [r for r, _, _ in budget.ROWS]) + evidence_keys("long", ["dpsize"])
    + evidence_keys("live", _LIVE_ROWS))


# The command that reproduces the long-scale store (into the user's own store, never the committed one).
LONG_COMMAND = "lowrank run 04 --scale long"


def _change(e: Estimate) -> str:
    """What a paired change of validation loss says, as a verb phrase: 'rises', 'falls', ..."""
    if e.n < 2 or math.isnan(e.lo):
        return "cannot be said to change from one seed"
    if e.lo > 0:
        return "rises"
    if e.hi < 0:
        return "falls"
    return (f"shows no change this run can detect (the interval's half-width, {half_width(e):.3f} nats, "
            f"is the smallest change it could detect)")


def _better(e: Estimate, better: str, worse: str) -> str:
    """A sentence on a paired difference (positive: ``better`` has the lower loss)."""
    if e.n < 2 or math.isnan(e.lo):
        return "one seed gives no interval, so no difference can be claimed"
    if e.lo > 0:
        return f"{better} has the lower loss (the interval excludes 0)"
    if e.hi < 0:
        return f"{worse} has the lower loss (the interval excludes 0)"
    return (f"no difference is detectable at this power: the interval's half-width, {half_width(e):.3f} nats, "
            f"is the smallest effect this run could detect")


def _curve_text(heads: pd.DataFrame, h: int) -> str:
    """How the standard-minus-fixed validation loss at ``h`` heads moved during training: a whole
    phrase from the first to the last evaluation (mean over seeds, paired by seed)."""
    has = "val_curve" in heads.columns and heads["val_curve"].map(lambda c: bool(c) if isinstance(c, list) else False).all()
    g = curve_gap(heads, {"family": "standard", "h": h}, {"family": "fixed", "h": h}, split="validation") if has else None
    if g is None or len(g) < 2:
        return "not recorded (no validation curves)"
    first, last = g.iloc[0], g.iloc[-1]
    return (f"went from {first['diff']:+.3f} nats at step {int(first['step']):,} to {last['diff']:+.3f} nats at step "
            f"{int(last['step']):,} (mean over {int(last['n'])} {'seed' if int(last['n']) == 1 else 'seeds'})")


def _put(out: dict, prefix: str, e: Estimate) -> None:
    out[f"{prefix}_diff"], out[f"{prefix}_lo"], out[f"{prefix}_hi"] = float(e.mean), float(e.lo), float(e.hi)
    out[f"{prefix}_n"], out[f"{prefix}_text"] = int(e.n), diff_text(e)


def _runs(df: pd.DataFrame, **where) -> pd.DataFrame:
    m = pd.Series(True, index=df.index)
    for k, v in where.items():
        m &= df[k] == v
    return df[m]


def _training_headline(heads: pd.DataFrame, matched: pd.DataFrame, sizes: pd.DataFrame) -> dict:
    """Headline numbers of the three experiments: seed-mean validation perplexities, and every
    comparison as a paired difference of validation loss (nats / token) with its 95 % interval."""
    s = summarise(heads, ["family", "h"])
    std = s[s.family == "standard"].set_index("h")
    fix = s[s.family == "fixed"].set_index("h")
    out: dict = {}
    out["std_h_first"], out["std_h_last"] = int(std.index.min()), int(std.index.max())
    out["fixed_h_first"], out["fixed_h_last"] = int(fix.index.min()), int(fix.index.max())
    out["std_ppl_first"], out["std_ppl_last"] = float(std["mean"].iloc[0]), float(std["mean"].iloc[-1])
    out["fixed_ppl_first"], out["fixed_ppl_last"] = float(fix["mean"].iloc[0]), float(fix["mean"].iloc[-1])
    out["std_best_h"], out["fixed_best_h"] = int(std["mean"].idxmin()), int(fix["mean"].idxmin())
    for fam, key, first, last in (("standard", "std", out["std_h_first"], out["std_h_last"]),
                                  ("fixed", "fixed", out["fixed_h_first"], out["fixed_h_last"])):
        e = paired(_runs(heads, family=fam, h=last), _runs(heads, family=fam, h=first))
        _put(out, f"{key}_change", e)
        out[f"{key}_trend"] = _change(e)
    # The largest h at which the families are different models (d_p != d / h).
    distinct = sorted(h for h in set(std.index) & set(fix.index)
                      if int(_runs(heads, family="fixed", h=h).d_h.iloc[0]) != int(_runs(heads, family="standard", h=h).d_h.iloc[0]))
    if not distinct:
        raise ValueError("the heads grid has no h at which standard and fixed heads differ: add an h with d / h != d_p")
    h = distinct[-1]
    a, b = _runs(heads, family="standard", h=h), _runs(heads, family="fixed", h=h)
    out["gap_h"], out["gap_std_dh"], out["gap_dp"] = int(h), int(a.d_h.iloc[0]), int(b.d_h.iloc[0])
    out["gap_std_ppl"], out["gap_fixed_ppl"] = float(std.loc[h, "mean"]), float(fix.loc[h, "mean"])
    out["gap_ppl"] = out["gap_std_ppl"] - out["gap_fixed_ppl"]  # of seed means; gap_diff pairs by seed
    e = paired(a, b)
    _put(out, "gap", e)
    out["gap_verdict"] = _better(e, "the fixed head size", "the standard head size")
    m = summarise(matched, ["family", "d", "h"])
    fixed_big = m[m.family == "fixed"].sort_values("n_params").iloc[-1]
    base = m[m.family == "standard"]
    near = base.iloc[(base["n_params"] - fixed_big["n_params"]).abs().argmin()]
    out["match_fixed_h"], out["match_fixed_d"] = int(fixed_big["h"]), int(fixed_big["d"])
    out["match_fixed_params_k"] = float(fixed_big["n_params"]) / 1e3
    out["match_fixed_ppl"] = float(fixed_big["mean"])
    out["match_base_d"], out["match_base_params_k"] = int(near["d"]), float(near["n_params"]) / 1e3
    out["match_base_ppl"] = float(near["mean"])
    out["match_param_gap"] = float(abs(near["n_params"] - fixed_big["n_params"]) / fixed_big["n_params"])
    e = paired(_runs(matched, family="standard", d=int(near["d"]), h=int(near["h"])),
               _runs(matched, family="fixed", d=int(fixed_big["d"]), h=int(fixed_big["h"])))
    _put(out, "match", e)
    out["match_verdict"] = _better(e, "the fixed-head model", "the standard baseline")
    widest = base.sort_values("d").iloc[-1]
    out["widest_base_d"], out["widest_base_ppl"] = int(widest["d"]), float(widest["mean"])
    out["gap_curve_text"] = _curve_text(heads, h)
    # The fixed-head model at the most heads against the best standard model of the heads grid.
    out["best_std_h"] = out["std_best_h"]
    e = paired(_runs(heads, family="standard", h=out["std_best_h"]), _runs(heads, family="fixed", h=h))
    _put(out, "fixed_vs_best", e)
    out["fixed_vs_best_verdict"] = _better(e, "the fixed-head model", "the best standard model")
    z = summarise(sizes, ["d_h"]).set_index("d_h")
    out["dp_first"], out["dp_last"] = int(z.index.min()), int(z.index.max())
    out["dp_ppl_first"], out["dp_ppl_last"] = float(z["mean"].iloc[0]), float(z["mean"].iloc[-1])
    e = paired(_runs(sizes, d_h=out["dp_last"]), _runs(sizes, d_h=out["dp_first"]))
    _put(out, "dp_change", e)
    out["dp_trend"] = _change(e)
    return out


_NO_RECOVERY = "not measured at this scale (no budget-doubling runs)"


def _recovery_headline(heads: pd.DataFrame, recovery: pd.DataFrame | None, setup: Mapping) -> dict:
    """The budget check (keys ``rec_*``): at the recovery pair's h, the standard-minus-fixed
    validation loss after ``recovery_steps`` steps (``rec_gap``, paired by seed) and the change
    of that gap from the main grid's budget to the larger one (``rec_change``: per seed, the gap
    at the larger budget minus the gap at ``steps``; positive means the fixed-head model closed
    in). Without recovery runs every number is NaN and every text a whole phrase."""
    nan = float("nan")
    none = Estimate(nan, nan, nan, nan, 0)
    out: dict = {}
    have = recovery is not None and len(recovery) > 0
    if have:
        h = int(recovery.h.iloc[0])
        steps = int(setup["recovery_steps"])
        gap2 = paired(_runs(recovery, family="standard"), _runs(recovery, family="fixed"))
        per_seed = []
        for tab in (recovery, heads):
            j = (_runs(tab, family="standard", h=h)[["seed", "val_loss"]]
                 .merge(_runs(tab, family="fixed", h=h)[["seed", "val_loss"]], on="seed", suffixes=("_s", "_f")))
            per_seed.append(j.assign(val_loss=j.val_loss_s - j.val_loss_f)[["seed", "val_loss"]])
        change = paired(*per_seed)
        out["rec_h"], out["rec_steps"] = h, steps
        out["rec_tokens"] = float(steps * setup["batch_size"] * setup["n"])
        out["rec_budget_text"] = (f"{steps:,} steps ({steps * setup['batch_size'] * setup['n']:,} training tokens "
                                  f"per run, twice {setup['steps']:,} steps)" if steps == 2 * setup["steps"] else
                                  f"{steps:,} steps ({steps * setup['batch_size'] * setup['n']:,} training tokens per run)")
    else:
        gap2 = change = none
        out["rec_h"] = out["rec_steps"] = out["rec_tokens"] = nan
        out["rec_budget_text"] = _NO_RECOVERY
    _put(out, "rec_gap", gap2)
    _put(out, "rec_change", change)
    if not have:
        out["rec_gap_text"] = out["rec_change_text"] = _NO_RECOVERY
        out["rec_trend"] = "was " + _NO_RECOVERY  # follows "the gap"
    elif change.n < 2 or math.isnan(change.lo):
        out["rec_trend"] = "cannot be said to move: no interval for its change (fewer than two seeds)"
    elif change.lo > 0:
        out["rec_trend"] = "was still closing (the interval of its change lies above 0)"
    elif change.hi < 0:
        out["rec_trend"] = "widened (the interval of its change lies below 0)"
    else:
        out["rec_trend"] = (f"no longer closed detectably (the interval of its change contains 0; its half-width, "
                            f"{half_width(change):.3f} nats, is the smallest change this run could detect)")
    return out


def _lr_headline(setup: Mapping, lr_table: pd.DataFrame | None) -> dict:
    """``lr_text`` (how the rate was chosen, a whole phrase) and ``lr_regret`` (the chosen
    rate's largest regret over the swept families, nats; NaN without a sweep)."""
    if lr_table is None or len(lr_table) == 0:
        return {"lr_text": f"one rate, {setup['lr']:g}, for every run (no learning-rate sweep at this scale)",
                "lr_regret": float("nan")}
    chosen = lr_table[lr_table.chosen]
    worst = chosen.sort_values("regret").iloc[-1]
    rates = ", ".join(f"{x:g}" for x in sorted(lr_table.lr.unique()))
    fam = f"{worst.family} h = {int(worst.h)}"
    return {"lr_text": (f"{setup['lr']:g}, chosen from {rates} by a one-seed sweep of {setup['lr_sweep_steps']:,} "
                        f"steps as the rate whose largest regret over the swept families is smallest "
                        f"(largest regret {worst.regret:.3f} nats, {fam})"),
            "lr_regret": float(worst.regret)}


def _provenance_text(prov: Mapping | None) -> str:
    if not prov:
        return "this execution's own runs (not read from a stored sweep)"
    def say(xs, one: str, many: str, short: bool = False) -> str:
        xs = [x[:7] for x in xs] if short else list(xs)
        return f"{one} {xs[0]}" if len(xs) == 1 else f"{len(xs)} {many} ({', '.join(xs)})"
    return (f"{prov['records']} runs trained from {prov['first_date']} to {prov['last_date']} on "
            f"{say(prov['machine'], 'machine', 'machines')}, with {say(prov['cpu'], 'CPU', 'CPU models')}, "
            f"{say(prov['git_revision'], 'git revision', 'git revisions', short=True)}, "
            f"{say(prov['code_hash'], 'code hash', 'code hashes')} and {say(prov['torch'], 'torch', 'torch versions')}")


def _long_headline(long: Mapping, train_tokens: int) -> dict:
    """The long-scale keys (without the ``long_`` prefix) from :func:`run_long`'s tables."""
    st = long["setup"]
    out = {k: st[k] for k in ("d", "n", "dp", "n_layers", "steps", "batch_size", "n_seeds", "tokens_seen", "lr",
                              "init", "size_heads", "base_heads", "lr_sweep_steps")}
    out["base_widths"] = ", ".join(map(str, st["base_widths"]))
    out["epochs"] = st["tokens_seen"] / train_tokens
    out.update(_lr_headline(st, long.get("lr_table")))
    configs = long["configs"]
    out["n_configs"], out["n_runs"] = len(configs), int(configs.seeds.sum())
    from_store = st.get("source") == "store"
    out["source"] = "store" if from_store else "this run"
    out["scale"] = "long" if from_store else "this run"
    prov = st.get("provenance") if from_store else None
    out["prov_text"] = _provenance_text(prov)
    out["prov_records"] = int(prov["records"]) if prov else 0
    swept = long.get("lr_sweep")
    cpu = float((configs.train_s * configs.seeds).sum())
    if swept is not None and len(swept):
        cpu += float(swept["train_wall_s"].sum())
    out["cpu_s"] = float(prov["wall_s"]) if prov else cpu
    out["command"] = LONG_COMMAND
    out.update(_training_headline(long["heads"], long["matched"], long["sizes"]))
    out.update(_recovery_headline(long["heads"], long.get("recovery"), st))
    return out


def _one_budget(a: pd.DataFrame, b: pd.DataFrame, steps: int, tokens: float) -> pd.DataFrame:
    """A comparison table (as :func:`budget.comparisons` gives one row of ROWS) at one budget."""
    rows = []
    for split, value in (("validation", "val_loss"), ("test", "test_loss")):
        e = paired(a, b, value)
        rows.append({"steps": steps, "tokens": tokens, "split": split, "diff": e.mean, "lo": e.lo, "hi": e.hi,
                     "n": e.n, "runs": len(a) + len(b), "change_diff": float("nan"), "change_lo": float("nan"),
                     "change_hi": float("nan"), "change_n": 0})
    return pd.DataFrame(rows)


def _single_budget_evidence(src: str, heads: pd.DataFrame, matched: pd.DataFrame, sizes: pd.DataFrame,
                            H: Mapping, steps: int, tokens: float, rows: tuple[str, ...]) -> dict:
    """Rule evidence (:func:`rules.row_evidence`) of ``rows`` from one sweep at one budget, with the
    models :func:`_training_headline` picked (its keys in ``H``, without the ``ch04_`` prefix)."""
    g = lambda k: H[k]  # noqa: E731
    std = lambda h: _runs(heads, family="standard", h=h)  # noqa: E731
    fix = lambda h: _runs(heads, family="fixed", h=h)  # noqa: E731
    pairs = {
        "gap": (std(g("gap_h")), fix(g("gap_h"))),
        "match": (_runs(matched, family="standard", d=g("match_base_d")),
                  _runs(matched, family="fixed", d=g("match_fixed_d"), h=g("match_fixed_h"))),
        "stdheads": (std(g("std_h_last")), std(g("std_h_first"))),
        "fixedheads": (fix(g("fixed_h_first")), fix(g("fixed_h_last"))),
        "dpsize": (_runs(sizes, d_h=g("dp_first")), _runs(sizes, d_h=g("dp_last"))),
    }
    arms = {
        "gap": Arms(f"standard (d_h = {g('gap_std_dh')})", f"fixed (d_p = {g('gap_dp')})", f"h = {g('gap_h')}"),
        "match": Arms(f"standard d = {g('match_base_d')} ({g('match_base_params_k'):.0f} k parameters)",
                      f"fixed h = {g('match_fixed_h')} at d = {g('match_fixed_d')} ({g('match_fixed_params_k'):.0f} k)"),
        "stdheads": Arms(f"standard heads, h = {g('std_h_last')}", f"h = {g('std_h_first')}"),
        "fixedheads": Arms(f"fixed head size, h = {g('fixed_h_first')}", f"h = {g('fixed_h_last')}"),
        "dpsize": Arms(f"d_p = {g('dp_first')}", f"d_p = {g('dp_last')}",
                       f"h = {g('size_heads') if 'size_heads' in H else ''}"),
    }
    out = {}
    for row in rows:
        a, b = pairs[row]
        out.update(row_evidence(src, row, arms[row], _one_budget(a, b, steps, tokens), planned=len(a) + len(b),
                                param_gap=g("match_param_gap") if row == "match" else float("nan")))
    return out


_BUDGET_ARMS = {"gap": Arms("standard (d_h = 2)", "fixed (d_p = 16)", "h = 32"),
                "match": Arms("standard d = 112, h = 4", "fixed h = 32 at d = 64 (d_p = 16)"),
                "stdheads": Arms("standard heads at d = 64, h = 32", "h = 4"),
                "fixedheads": Arms("fixed head size d_p = 16 at d = 64, h = 4", "h = 32"),
                "capacity": Arms("head size n / 4 (d_p = 16)", "head size n (d_p = 64)", "n = 64, h = 4"),
                "pastn": Arms("head size n (d_p = 64)", "head size 2n (d_p = 128)", "n = 64, h = 4"),
                "fewheads1": Arms("head size 32, h = 1 (d = 32)", "h = 2 (d = 64)"),
                "fewheads2": Arms("head size 32, h = 2 (d = 64)", "h = 4 (d = 128)"),
                "fewheads4": Arms("head size 32, h = 4 (d = 128)", "h = 8 (d = 256)")}


def _budget_headline(b: Mapping) -> dict:
    """Keys ``rule_budget_*`` (the rule evidence of every row of :data:`budget.ROWS`) and
    ``budget_*`` (what the store holds, the chosen rate, its provenance), without ``ch04_``."""
    comps, runs = b["comparisons"], b["budget"]
    out = {}
    f = b["fair"]
    judged, rates = f["judged_comparisons"], f["rates"]
    for row, a, bb in budget.ROWS:
        c = judged[judged.row == row]
        pa, pb = float(c.params_a.iloc[0]), float(c.params_b.iloc[0])
        sds = [fair.planning_sd(f["judged"], rates, row, st) for st in fair.JUDGED_STEPS]
        ev = row_evidence("budget", row, _BUDGET_ARMS[row], c,
                          planned=int(c[c.split == "validation"].planned.sum()), param_gap=abs(pa - pb) / pb,
                          plan_sd=float("nan") if any(math.isnan(x) for x in sds) else max(sds),
                          lr_stored=rates[a].stored + rates[bb].stored, lr_planned=rates[a].planned + rates[bb].planned,
                          lr_edge=" and ".join(m for m in (a, bb) if rates[m].at_edge))
        out.update({k[len("ch04_"):]: v for k, v in ev.items()})
    nan = float("nan")
    for row in ("gap", "match"):
        c = comps[(comps.row == row) & (comps.steps == budget.EXTENDED_STEPS)] if len(comps) else comps
        for s, split in (("val", "validation"), ("test", "test")):
            r = c[c.split == split] if len(c) else c
            for x in ("diff", "lo", "hi"):
                out[f"budget_shared_{row}_{s}_{x}"] = float(r[x].iloc[0]) if len(r) else nan
            out[f"budget_shared_{row}_{s}_n"] = int(r["n"].iloc[0]) if len(r) else 0
        for side, m in zip(("a", "b"), design.rows_of(row)):
            n_params = runs[runs.model == m].n_params if len(runs) else []
            out[f"budget_shared_{row}_params_{side}"] = float(n_params.iloc[0]) if len(n_params) else nan
    out["budget_shared_lr"] = out_lr(b)
    out["budget_fair_rates_text"] = ", ".join(f"{r:g}" for r in fair.LR_GRID_RATES[:-1]) + f" and {fair.LR_GRID_RATES[-1]:g}"
    out["budget_fair_grid_steps"] = fair.LR_GRID_STEPS
    out["budget_fair_edge_factor"] = fair.LR_EDGE_FACTOR
    out["budget_fair_judged_text"] = " and ".join(
        f"{s:,} steps ({s * budget.BASE['batch_size'] * budget.BASE['seq_len'] / 1e6:.1f} M tokens a run)"
        for s in fair.JUDGED_STEPS)
    out["budget_lr_grid_stored"] = len(f["lr_grid"])
    out["budget_lr_grid_planned"] = int(f["lr_grid_planned"])
    chosen = [r for r in rates.values() if r.rate is not None]
    out["budget_lr_grid_text"] = (
        f"{len(chosen)} of the {len(rates)} models have their rate"
        + (": " + "; ".join(f"{r.model} at {r.rate:g}" + (" (the end of its grid)" if r.at_edge else "")
                            for r in chosen) if chosen else ""))
    planned = b["planned"]
    out["budget_runs"], out["budget_planned"] = len(runs), planned["budget"]
    out["budget_lr_check_runs"], out["budget_lr_check_planned"] = len(b["lr_check"]), planned["lr_check"]
    out["budget_factorial_runs"], out["budget_factorial_planned"] = len(b["factorial"]), planned["factorial"]
    out["budget_records"] = int(b["n_records"])
    out["budget_cpu_h"] = float(b["cpu_s"]) / 3600
    out["budget_lr_text"] = _budget_lr_text(b)
    out["budget_prov_text"] = _provenance_text(b["provenance"]) if b["provenance"] else "no run stored yet"
    out["budget_largest_tokens"] = budget.BUDGET_STEPS[-1] * budget.BASE["batch_size"] * budget.BASE["seq_len"]
    out["budget_command"] = budget.RESUME_COMMAND
    out["budget_estimate_h"] = budget.estimate_s() / 3600
    steps = [f"{x:,}" for x in budget.BUDGET_STEPS]
    out["budget_steps_text"] = ", ".join(steps[:-1]) + f" and {steps[-1]} steps"
    out["budget_tokens_text"] = ", ".join(f"{x * budget.BASE['batch_size'] * budget.BASE['seq_len'] / 1e6:.1f}M"
                                          for x in budget.BUDGET_STEPS)
    out["budget_rates_text"] = ", ".join(f"{r:g}" for r in budget.LR_CHECK_RATES)
    out["budget_lr_check_steps"] = budget.LR_CHECK_STEPS
    out["budget_factorial_steps"], out["budget_factorial_lr"] = budget.FACTORIAL_STEPS, budget.FACTORIAL_LR
    out["budget_seeds"] = len(budget.SEEDS)
    out["budget_horizon"] = HORIZON_DOUBLINGS
    out["budget_cost_ratio"] = sum(budget.BUDGET_STEPS) / budget.BUDGET_STEPS[-1]
    out["budget_factorial_text"] = _factorial_text(b["effects"])
    out["budget_status_text"] = _budget_status(out["budget_records"], planned["distinct"], out["budget_cpu_h"])
    out["budget_left_runs"], out["budget_left_h"] = int(b["left_runs"]), float(b["left_cpu_s"]) / 3600
    out["budget_left_text"] = _left_text(out["budget_left_runs"], out["budget_left_h"])
    out["budget_trend_text"] = _trend_text(comps, "gap")
    out["budget_margin"] = MARGIN
    out["budget_power_seeds"] = POWER_SEEDS
    out["budget_extended_tokens"] = budget.EXTENDED_STEPS * budget.BASE["batch_size"] * budget.BASE["seq_len"]
    sd = max(budget.planning_sd(runs, row, seeds=budget.SEEDS, steps=budget.BUDGET_STEPS[-1])
             for row in ("gap", "match", "stdheads", "fixedheads")) if len(runs) else float("nan")
    out["budget_power_text"] = (
        f"{POWER_SEEDS} seeds: the fewest whose 95 % half-width reaches {MARGIN} nats at the largest standard "
        f"deviation of a paired difference that the first {len(budget.SEEDS)} seeds showed at "
        f"{budget.BUDGET_STEPS[-1]:,} steps ({sd:.4f} nats); a row whose own spread over its first "
        f"{POWER_SEEDS} seeds is larger gets more seeds, up to {MAX_SEEDS}, read from the spread alone")
    added = [x for g in budget.added_grids(out_lr(b)) for x in g]
    stored = set(runs["key"]) if len(runs) else set()
    got = sum(run_key(c) in stored for _, c in added)
    out["budget_added_text"] = f"{got} of the {len(added)} runs the power rule added are stored"
    return out


def out_lr(b: Mapping) -> float:
    """The budget store's chosen rate (its default before the check is complete)."""
    return b["lr"] if b["lr"] is not None else budget.BASE["lr"]


def _trend_text(comps: pd.DataFrame, row: str) -> str:
    """The row's validation gap at every budget with its interval and seeds, as one phrase."""
    c = comps[(comps.row == row) & (comps.split == "validation")].sort_values("steps")
    parts = []
    for r in c.itertuples():
        at = f"{r.tokens / 1e6:.1f} M tokens"
        if r.n == 0:
            parts.append(f"not stored yet at {at}")
        elif r.n == 1 or pd.isna(r.lo):
            parts.append(f"{r.diff:+.3f} nats at {at} (one seed)")
        else:
            parts.append(f"{r.diff:+.3f} nats at {at} ({r.lo:+.3f} to {r.hi:+.3f}, {r.n} seeds)")
    return "; ".join(parts)


def _budget_status(stored: int, planned: int, cpu_h: float) -> str:
    """Whether the budget store holds every planned run (each counted once), and the training time
    it took, as a phrase."""
    # Wall time, not CPU time: a run paused on a shared machine counts its pause, so this bounds the cost above.
    hours = f"{cpu_h:.1f} hours of wall time summed over the runs, one core each, an upper bound on their compute"
    if stored >= planned:
        return f"complete: every one of the {planned} planned runs is stored ({hours})"
    return f"partial: {stored} of the {planned} planned runs are stored so far ({hours})"


def _left_text(runs: int, cpu_h: float) -> str:
    """What is left of the plan so far, and how long it would take, as a sentence."""
    if not runs:
        return "No planned run is left to train."
    return (f"The {runs} runs still planned would take about {cpu_h:.0f} hours of one core at each model's "
            f"median time per step in the store ({cpu_h / 2:.0f} hours on two cores, two runs at once); a row "
            "whose spread asks for more seeds adds to them.")


def _budget_lr_text(b: Mapping) -> str:
    """The budget extension's rate, how it was chosen, its largest regret and each model's own
    best rate in the learning-rate check (one seed), as a phrase."""
    if b["lr"] is None:
        return (f"not chosen yet: {len(b['lr_check'])} of the {b['planned']['lr_check']} runs of the "
                f"learning-rate check are stored")
    t = b["lr_table"]
    worst = t[t.chosen].sort_values("regret").iloc[-1]
    best = t.loc[t.groupby(["family", "h"])["val_loss"].idxmin()]
    own = "; ".join(f"{f} h = {int(h)} does best at {lr:g}" for f, h, lr in zip(best.family, best.h, best.lr))
    return (f"{b['lr']:g}, the rate whose largest regret over the two models is smallest (largest regret "
            f"{worst.regret:.3f} nats, {worst.family} h = {int(worst.h)}; {own}, one seed)")


def _factorial_text(effects: pd.DataFrame) -> str:
    """Which factor of the factorial moves the standard-minus-fixed gap, with its size and
    direction on both splits, as a whole sentence."""
    main = effects[effects.factor != "cell"]
    if (main.n < 2).any():
        return (f"The factorial cannot say yet which factor turns the sign: the emptiest of its cells holds "
                f"{int(main.n.min())} of the {len(budget.SEEDS)} seeds paired across all four cells.")
    moves = []
    for factor in dict.fromkeys(main.factor):
        e = main[main.factor == factor]
        sides = {interval_side(r.lo, r.hi) for r in e.itertuples()}
        if len(sides) == 1 and 0 not in sides:
            splits = ", ".join(f"{r.split} {r.diff:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]" for r in e.itertuples())
            first, second = e.level_a.iloc[0], e.level_b.iloc[0]
            levels = f"{first} minus {second}" if first else ""
            if second:
                better, worse = (first, second) if sides == {1} else (second, first)
                reading = f"the fixed head size fares better against standard heads with {better} than with {worse}"
            else:
                reading = "the two factors do not add up"
            moves.append(f"the {factor} ({levels + ': ' if levels else ''}{splits} nats): {reading}")
    if not moves:
        return ("No factor's effect on the gap excludes 0 on both splits: at this power the factorial does not "
                "say which factor turns the sign.")
    return (f"Effects whose 95 % intervals exclude 0 on both splits: {'; '.join(moves)}. The other effects are "
            f"not detectable at this power.")


def headline(tables: Mapping) -> dict:
    """Every number chapter 04 glues, keyed ``ch04_*`` (exactly :data:`HEADLINE_KEYS`), from
    the tables of :func:`run_parameter_table`, :func:`run_corpus` and :func:`run_training`.

    Comparisons of trained models are paired by seed, in validation loss (nats / token):
    ``<name>_diff`` with its 95 % t interval ``<name>_lo`` .. ``<name>_hi`` over ``<name>_n``
    seeds (NaN bounds for one seed) and ``<name>_text`` for the page."""
    out: dict = {}
    t = tables["parameters"]
    out["table_rows"] = len(t)
    out["table_within"] = int((t["difference (M)"].abs() <= PARAMETER_TOLERANCE_M).sum())
    out["table_max_diff"] = float(t["difference (M)"].abs().max())
    out["table_tolerance"] = PARAMETER_TOLERANCE_M
    out["d512_dff2048_M"] = bert_parameter_count(512, 24, 8, 128, 2048) / 1e6
    c = tables["corpus"]
    for k in ("n_docs", "n_words", "train_tokens", "val_tokens", "test_tokens", "val_docs", "test_docs", "vocab"):
        out[k] = c[k]
    st = tables["setup"]
    for k in ("d", "n", "dp", "n_layers", "steps", "lr", "batch_size", "val_eval_tokens", "n_seeds", "base_heads",
              "size_heads"):
        out[k] = st[k]
    out["base_widths"] = ", ".join(map(str, st["base_widths"]))
    out.update(_training_headline(tables["heads"], tables["matched"], tables["sizes"]))
    out.update(_recovery_headline(tables["heads"], tables.get("recovery"), st))
    out["tokens_seen"] = st["tokens_seen"]
    out["epochs"] = st["tokens_seen"] / c["train_tokens"]
    configs = tables["configs"]
    out["n_configs"] = len(configs)
    out["n_runs"] = int(configs.seeds.sum())
    out["train_s"] = float((configs.train_s * configs.seeds).sum())
    out["wall_s"] = float(st["wall_s"])
    out["size_ppl_spearman"] = float(configs[["params", "val_ppl"]].corr(method="spearman").iloc[0, 1])
    out["init"] = st["init"]
    out.update(_lr_headline(st, tables.get("lr_table")))
    long = _long_headline(tables["long"], c["train_tokens"])
    out.update({f"long_{k}": v for k, v in long.items()})
    strip = lambda ev: {k[len("ch04_"):]: v for k, v in ev.items()}  # noqa: E731
    out.update(strip(_single_budget_evidence("live", tables["heads"], tables["matched"], tables["sizes"], out,
                                             st["steps"], float(st["tokens_seen"]), _LIVE_ROWS)))
    L = tables["long"]
    out.update(strip(_single_budget_evidence("long", L["heads"], L["matched"], L["sizes"], long, long["steps"],
                                             float(long["tokens_seen"]), ("dpsize",))))
    out.update(_budget_headline(tables["budget"]))
    out = {f"ch04_{k}": v for k, v in out.items()}
    out["ch04_budget_verdicts_text"] = budget_verdicts(out)
    out["ch04_budget_gap_reading"] = gap_reading(out)
    out["ch04_reported_split"] = REPORTED_SPLIT
    out["ch04_budget_answer"] = answer(out)
    out["ch04_budget_answer_more"] = answer_more(out)
    out["ch04_step_cost_text"] = step_cost_text(tables.get("step_cost"))
    if set(out) != set(HEADLINE_KEYS):
        raise AssertionError(f"headline keys drifted from HEADLINE_KEYS: {sorted(set(out) ^ set(HEADLINE_KEYS))}")
    return out
