"""The head-size experiments of Bhojanapalli et al. (2020), Section 4, as sweeps.

Three grids of causal-LM runs, each a list of (labels, :class:`lowrank.train.TrainConfig`
dict) pairs, run together by :func:`run_grids` through :func:`lowrank.sweep.sweep` (shared
configurations run once; a paper-scale grid can be interrupted, resumed and sharded):

- :func:`heads_at_fixed_width` (Fig. 3a): width d fixed; standard heads d_h = d / h against a
  fixed head size d_p, for a list of head counts h;
- :func:`parameter_matched` (Fig. 1): fixed head size at the small width against standard
  heads at larger widths, compared at their parameter counts;
- :func:`head_size_at_fixed_heads` (Table 2(B)): h fixed, head size d_p varied.

:func:`run_grids` returns a tidy DataFrame per grid, one row per (family, configuration,
seed), with the run's parameter count, validation / test perplexity and curves;
:func:`summarise` averages over seeds.
:func:`paper_parameter_table` puts the paper's # params column next to
:func:`lowrank.models.bert_parameter_count`.

Chapter 04 calls three run functions, each returning a dict of tables that the chapter
collects into one ``tables`` dict: :func:`run_parameter_table` (the paper's Tables 1-3),
:func:`run_corpus` (the corpus and its token splits) and :func:`run_training` (the three grids
from the chapter's parameters, plus the per-configuration table). :func:`headline` turns
``tables`` into every number the chapter glues (keys :data:`HEADLINE_KEYS`).

The package's other modules: :mod:`.rules` (the claims, and the one rule every training row
shares), :mod:`.budget` (the budget store: learning-rate check, budget extension, factorial; read
by :func:`run_budget`) and :mod:`.figures` (its figures and tables for the page).
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ...models import bert_parameter_count
from ...stats import Estimate, paired_difference
from ...sweep import ResultStore, parse_shard, run_key, sweep, write_manifest
from ...train import TrainConfig
from . import budget, figures
from .rules import HORIZON_DOUBLINGS, evidence_keys, row_evidence
from .rules import (CLAIMS, LIVE_RULES, MATCH_TOLERANCE, rule_fixed_heads, rule_head_size, rule_more_heads_fixed,
                    rule_more_heads_standard, rule_parameter_counts, rule_parameter_matched)

from .estimate import estimate, lm_units, memory, run_keys, training_runs
from .schema import CONSTRAINTS, SCHEMA, PATHS, MANIFESTS

__all__ = ["estimate", "memory", "lm_units", "run_keys", "training_runs", "SCHEMA", "CONSTRAINTS", "PATHS", "MANIFESTS", "PAPER_TABLES", "paper_parameter_table", "heads_at_fixed_width", "parameter_matched",
           "head_size_at_fixed_heads", "run_grids", "summarise", "curves", "mean_curves", "headline",
           "configuration_table", "default_runs_dir", "base_config", "training_grids",
           "run_parameter_table", "run_corpus", "run_training", "HEADLINE_KEYS",
           "PARAMETER_TOLERANCE_M", "LEVEL", "MATCH_TOLERANCE", "paired", "diff_text", "half_width",
           "CLAIMS", "rule_parameter_counts", "rule_fixed_heads", "rule_parameter_matched", "rule_head_size",
           "recovery_grid", "rule_more_heads_standard", "rule_more_heads_fixed",
           "LIVE_RULES", "LONG_COMMAND", "lr_sweep_grid", "choose_lr", "manifest_path", "store_provenance",
           "run_long", "resolve_store",
           "parameter_display", "configuration_display", "COMPARISONS", "comparison_table", "comparison_display",
           "curve_gap", "lr_display",
           "claims_table"]

# The paper prints parameter counts as integer millions: a correct formula lands within 0.5 M.
PARAMETER_TOLERANCE_M = 0.5

# (table, d, h, d_p or None for d/h, d_ff, reported # params in M): all 24 layers, V = 30522.
# d_ff is not stated in the paper; 4096 for d = 1024 and d = 512, 3072 for d = 768 reproduce
# every reported count (see the paper notes, section 3.6).
PAPER_TABLES = [
    ("1", 1024, 8, None, 4096, 336), ("1", 1024, 16, None, 4096, 336), ("1", 1024, 32, None, 4096, 336),
    ("2A", 512, 8, 128, 4096, 168), ("2A", 512, 12, 128, 4096, 193), ("2A", 512, 16, 128, 4096, 218),
    ("2A", 512, 32, 128, 4096, 319),
    ("2B", 512, 8, 32, 4096, 130), ("2B", 512, 8, 64, 4096, 142), ("2B", 512, 8, 128, 4096, 168),
    ("2B", 512, 8, 256, 4096, 218),
    ("3", 768, 8, 128, 3072, 214), ("3", 768, 12, 128, 3072, 252), ("3", 768, 16, 128, 3072, 290),
    ("3", 768, 20, 128, 3072, 327),
]


def paper_parameter_table() -> pd.DataFrame:
    """The 15 rows of Tables 1, 2(A), 2(B), 3: reported # params and our count (millions)."""
    rows = []
    for table, d, h, dp, dff, reported in PAPER_TABLES:
        ours = bert_parameter_count(d, 24, h, dp, dff) / 1e6
        rows.append({"table": table, "d": d, "h": h, "d_p": dp if dp is not None else d // h,
                     "head size": "d/h" if dp is None else "fixed", "d_ff": dff,
                     "reported (M)": reported, "formula (M)": round(ours, 2),
                     "difference (M)": round(ours - reported, 2)})
    return pd.DataFrame(rows)


def _config(base: dict, seed: int, **kw) -> dict:
    cfg = dict(base, seed=seed, **kw)
    if cfg.get("head_dim") is not None and cfg["head_dim"] * cfg["n_heads"] == cfg["d_model"]:
        cfg["head_dim"] = None  # d_p = d/h is the standard model: one key, one run
    return TrainConfig.from_dict(cfg).to_dict()


def _frame(labelled: list[tuple[dict, dict]], results: pd.DataFrame) -> pd.DataFrame:
    """Join the labels of (labels, config) pairs with their sweep results."""
    by_key = results.set_index("key") if len(results) else results
    rows = []
    for labels, cfg in labelled:
        k = run_key(cfg)
        if k not in by_key.index:
            continue  # another shard has not finished it yet
        r = by_key.loc[k]
        h, d = cfg["n_heads"], cfg["d_model"]
        rows.append({**labels, "d": d, "h": h, "d_h": cfg["head_dim"] or d // h, "seed": cfg["seed"],
                     "n_params": int(r["n_params"]), "val_ppl": float(r["val_ppl"]),
                     "test_ppl": float(r["test_ppl"]), "val_loss": float(r["val_loss"]),
                     "test_loss": float(r["test_loss"]) if "test_loss" in r else math.log(float(r["test_ppl"])),
                     "train_wall_s": float(r["train_wall_s"]), "key": k,
                     "train_curve": r.get("train_curve"), "val_curve": r.get("val_curve")})
    return pd.DataFrame(rows)


def run_grids(grids: dict[str, list[tuple[dict, dict]]], *, store: str | os.PathLike,
              runs_dir: str | os.PathLike | None = None, experiment: str = "04_head_size_training",
              progress: bool = True, workers: int = 1,
              shard: tuple[int, int] = (0, 1)) -> dict[str, pd.DataFrame]:
    """Run the union of several grids as one sweep (shared configurations run once); return
    one labelled DataFrame per grid with the runs finished so far (all of them unless sharded)."""
    configs = [c for grid in grids.values() for _, c in grid]
    results = sweep(configs, experiment=experiment, store=store, runs_dir=runs_dir, progress=progress,
                    workers=workers, shard=shard)
    return {name: _frame(grid, results) for name, grid in grids.items()}


def curves(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Long table of the training curves of ``df``'s runs: ``by`` columns, seed, split
    ('train' or 'validation'), step, loss."""
    rows = []
    for _, r in df.iterrows():
        for split, col in (("train", "train_curve"), ("validation", "val_curve")):
            for step, loss in (r.get(col) or []):
                rows.append({**{b: r[b] for b in by}, "seed": r["seed"], "split": split,
                             "step": int(step), "loss": float(loss)})
    return pd.DataFrame(rows)


def heads_at_fixed_width(base: dict, *, heads: list[int], head_dim: int,
                         seeds: list[int]) -> list[tuple[dict, dict]]:
    """Fig. 3a grid: at width ``base['d_model']``, standard heads (d_h = d / h) and fixed head
    size ``head_dim`` for every h in ``heads``; family 'standard' or 'fixed'. The standard
    family skips any h that does not divide d (as h = 70 at d = 256 in the paper)."""
    d = base["d_model"]
    if not any(d % h == 0 for h in heads):
        raise ValueError(f"no head count in {heads} divides d_model={d}: the standard family would be empty")
    labelled = []
    for seed in seeds:
        for h in heads:
            if d % h == 0:
                labelled.append(({"family": "standard"}, _config(base, seed, n_heads=h, head_dim=None)))
            labelled.append(({"family": "fixed"}, _config(base, seed, n_heads=h, head_dim=head_dim)))
    return labelled


def parameter_matched(base: dict, *, heads: list[int], head_dim: int, baseline_widths: list[int],
                      baseline_heads: int, seeds: list[int]) -> list[tuple[dict, dict]]:
    """Fig. 1 grid: fixed head size at width ``base['d_model']`` for each h in ``heads``
    (family 'fixed') against standard models of ``baseline_heads`` heads at each width in
    ``baseline_widths`` (family 'standard'); compare them at equal ``n_params``."""
    bad = [d for d in baseline_widths if d % baseline_heads]
    if bad:
        raise ValueError(f"baseline widths must be multiples of baseline_heads={baseline_heads}: {bad}")
    labelled = []
    for seed in seeds:
        for h in heads:
            labelled.append(({"family": "fixed"}, _config(base, seed, n_heads=h, head_dim=head_dim)))
        for d in baseline_widths:
            labelled.append(({"family": "standard"},
                             _config(base, seed, d_model=d, n_heads=baseline_heads, head_dim=None)))
    return labelled


def head_size_at_fixed_heads(base: dict, *, n_heads: int, head_dims: list[int],
                             seeds: list[int]) -> list[tuple[dict, dict]]:
    """Table 2(B) grid: ``n_heads`` heads at width ``base['d_model']``, head size d_p from ``head_dims``."""
    return [({"family": "fixed"}, _config(base, seed, n_heads=n_heads, head_dim=dp))
            for seed in seeds for dp in head_dims]


def summarise(df: pd.DataFrame, by: list[str], value: str = "val_ppl") -> pd.DataFrame:
    """Mean, standard deviation and standard error of ``value`` over seeds, per group; with
    one seed the standard deviation and error are NaN (one run has no spread), never 0."""
    if df.empty:
        raise ValueError("no finished runs to summarise")
    g = df.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    out["sem"] = out["std"] / out["n"] ** 0.5
    params = df.groupby(by, sort=True)["n_params"].first().reset_index(drop=True)
    out.insert(len(by), "n_params", params.values)
    return out


def default_runs_dir(store: str | os.PathLike) -> Path:
    """Run folders (checkpoints) beside a store: ``<store without .jsonl>-runs/``."""
    p = Path(store)
    return p.with_name(p.stem + "-runs")


# Every interval in this chapter is a two-sided 95 % Student-t interval over seeds.
LEVEL = 0.95


def paired(a: pd.DataFrame, b: pd.DataFrame, value: str = "val_loss") -> Estimate:
    """``value`` of the runs in ``a`` minus those in ``b``, paired by seed (runs with the same
    seed see the same batches), with a 95 % t interval; NaN spread for fewer than two pairs."""
    j = a[["seed", value]].merge(b[["seed", value]], on="seed", suffixes=("_a", "_b"))
    if j.empty:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, 0)
    return paired_difference(j[f"{value}_a"], j[f"{value}_b"], LEVEL)


def _seeds(n: int) -> str:
    return "one seed" if n == 1 else f"{n} seeds"


def diff_text(e: Estimate, unit: str = "nats") -> str:
    """'+0.012 nats (95 % interval -0.030 to +0.054, 3 seeds)', or '+0.012 nats (one seed, no interval)'."""
    if e.n == 0:
        return "not measured (no pair of runs with a common seed)"
    if e.n < 2 or math.isnan(e.lo):
        return f"{e.mean:+.3f} {unit} ({_seeds(e.n)}, no interval)"
    return f"{e.mean:+.3f} {unit} ({LEVEL:.0%} interval {e.lo:+.3f} to {e.hi:+.3f}, {_seeds(e.n)})"


def half_width(e: Estimate) -> float:
    """Half the width of the interval: the smallest effect the comparison could detect."""
    return (e.hi - e.lo) / 2


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
    out["gap_ppl"] = out["gap_std_ppl"] - out["gap_fixed_ppl"]  # seed means; read by chapter 08 until it takes CLAIMS
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


def configuration_table(*frames: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct configuration over all experiments: width, heads, head size,
    parameters, validation and test perplexity (mean and standard deviation over seeds)."""
    df = pd.concat(frames, ignore_index=True).drop_duplicates(subset=["key"])
    df = df.assign(kind=["standard" if dh * h == d else "fixed" for d, h, dh in zip(df.d, df.h, df.d_h)])
    g = df.groupby(["kind", "d", "h", "d_h"], sort=True)
    out = g.agg(params=("n_params", "first"), seeds=("seed", "count"), val_ppl=("val_ppl", "mean"),
                val_ppl_sd=("val_ppl", "std"), test_ppl=("test_ppl", "mean"), test_ppl_sd=("test_ppl", "std"),
                train_s=("train_wall_s", "mean")).reset_index()
    return out  # one seed: the standard deviations are NaN, not 0


def mean_curves(df: pd.DataFrame, by: list[str], split: str = "validation") -> pd.DataFrame:
    """Seed-mean loss per (``by``..., step) of one split of ``df``'s training curves."""
    c = curves(df, by)
    if c.empty:
        return pd.DataFrame(columns=[*by, "step", "loss"])
    return c[c.split == split].groupby([*by, "step"], as_index=False)["loss"].mean()


# ---------------------------------------------------------------------------------------------
# The chapter's run functions and headline

def run_parameter_table() -> dict:
    """``{"parameters": paper_parameter_table()}``: Tables 1, 2(A), 2(B) and 3 of the paper."""
    return {"parameters": paper_parameter_table()}


def run_corpus(corpus: str, *, vocab_size: int) -> dict:
    """``{"corpus": {...}}``: documents, words, the validation and test plays, and the token
    count of each split under the chapter's BPE tokenizer."""
    from ...data import load_corpus, prepare_lm, split_documents

    docs = load_corpus(corpus)
    parts = split_documents(docs)
    tokens = prepare_lm(corpus, vocab_size=vocab_size)
    return {"corpus": {
        "n_docs": len(docs), "n_words": docs.n_words(), "vocab": tokens.vocab_size,
        "train_tokens": len(tokens.train), "val_tokens": len(tokens.validation), "test_tokens": len(tokens.test),
        "val_docs": ", ".join(n.rsplit("/", 1)[-1] for n in parts["validation"].names),
        "test_docs": ", ".join(n.rsplit("/", 1)[-1] for n in parts["test"].names)}}


def base_config(P: Mapping) -> dict:
    """The :class:`lowrank.train.TrainConfig` fields every run of the chapter shares, from the
    chapter's validated parameters (validation on a quarter of ``eval_tokens``, test on all)."""
    return dict(task="lm", corpus=P["corpus"], vocab_size=P["vocab_size"], seq_len=P["seq_len"],
                d_model=P["d_model"], n_layers=P["n_layers"], d_ff=P["d_ff"], norm=P["norm"],
                tie_embeddings=P["tie_embeddings"], init=P["init"], batch_size=P["batch_size"], steps=P["steps"],
                lr=P["lr"], warmup_steps=P["warmup_steps"], schedule=P["schedule"], dropout=P["dropout"],
                eval_interval=P["eval_interval"],
                eval_tokens=max(P["seq_len"], (P["eval_tokens"] or 65536) // 4),
                test_tokens=P["eval_tokens"], checkpoint_every=max(P["steps"] // 4, 1),
                num_threads=P["num_threads"], device=P["device"])


def _with_steps(base: dict, steps: int) -> dict:
    """``base`` with another step budget (and its four checkpoints, as :func:`base_config` sets them)."""
    return dict(base, steps=int(steps), checkpoint_every=max(int(steps) // 4, 1))


def recovery_grid(P: Mapping, lr: float | None = None) -> list[tuple[dict, dict]]:
    """The budget check: the standard and the fixed-head model at the largest head
    count of ``heads`` where they differ (h divides d and d / h != d_p), every seed, trained for
    ``recovery_steps`` steps instead of ``steps`` (labels ``family``; same rate ``lr`` as the main
    grids, default ``P["lr"]``). Empty when ``recovery_steps`` is None or absent."""
    steps = P.get("recovery_steps")
    if steps is None:
        return []
    d, dp = P["d_model"], P["head_dim"]
    distinct = [h for h in P["heads"] if d % h == 0 and d // h != dp]
    if not distinct:
        raise ValueError(f"recovery_steps needs a head count in {P['heads']} where d / h != d_p = {dp}")
    h = max(distinct)
    base = _with_steps(base_config(P), steps)
    if lr is not None:
        base["lr"] = float(lr)
    seeds = range(P["seed"], P["seed"] + P["n_seeds"])
    return [(lab, _config(base, seed, n_heads=h, head_dim=hd)) for seed in seeds
            for lab, hd in (({"family": "standard"}, None), ({"family": "fixed"}, dp))]


def lr_sweep_grid(P: Mapping) -> list[tuple[dict, dict]]:
    """The learning-rate sweep of the chapter's parameters: one seed (``seed``), ``lr_sweep_steps``
    steps (``steps`` when None), each rate of ``lr_sweep`` for every family of ``lr_sweep_heads``:
    standard heads at each h that divides d, and the fixed head size at each h where d / h differs
    from d_p (labels ``family``, ``h``, ``lr``). Empty when ``lr_sweep`` is empty."""
    base = _with_steps(base_config(P), P["lr_sweep_steps"] or P["steps"])
    d, dp = P["d_model"], P["head_dim"]
    labelled = []
    for lr in P["lr_sweep"]:
        for h in P["lr_sweep_heads"]:
            if d % h == 0:
                labelled.append(({"family": "standard", "lr": float(lr)},
                                 _config(base, P["seed"], n_heads=h, head_dim=None, lr=float(lr))))
            if d % h or d // h != dp:
                labelled.append(({"family": "fixed", "lr": float(lr)},
                                 _config(base, P["seed"], n_heads=h, head_dim=dp, lr=float(lr))))
    return labelled


def choose_lr(sweep_runs: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """The one learning rate every run of the main grids uses, chosen from the sweep by a rule
    fixed before the sweep ran: the rate whose largest *regret* over the swept families is
    smallest, where a family's regret at a rate is its validation loss there minus its lowest
    validation loss over all swept rates (ties: the smaller rate).

    One shared rate keeps every paired comparison a comparison of architectures alone; choosing
    it by the worst regret means no family is handicapped by more than the reported regret
    relative to its own best swept rate. Returns (rate, table with one row per family x rate:
    ``family``, ``h``, ``d_h``, ``lr``, ``val_loss``, ``regret``, ``chosen``).
    """
    if sweep_runs.empty:
        raise ValueError("the learning-rate sweep has no finished runs")
    t = sweep_runs.groupby(["family", "h", "d_h", "lr"], as_index=False)["val_loss"].mean()
    t["regret"] = t["val_loss"] - t.groupby(["family", "h"])["val_loss"].transform("min")
    worst = t.groupby("lr")["regret"].max()
    lr = float(worst.index[worst.values == worst.min()].min())
    t["chosen"] = t["lr"] == lr
    return lr, t.sort_values(["family", "h", "lr"]).reset_index(drop=True)


def training_grids(P: Mapping, lr: float | None = None) -> dict[str, list[tuple[dict, dict]]]:
    """The chapter's three grids (``heads``, ``matched``, ``sizes``) from its parameters, every
    run at learning rate ``lr`` (default ``P["lr"]``; the rate :func:`choose_lr` picked when the
    parameters ask for a sweep), plus ``recovery`` (:func:`recovery_grid`) when the parameters
    set ``recovery_steps``."""
    base = base_config(P)
    if lr is not None:
        base["lr"] = float(lr)
    seeds = list(range(P["seed"], P["seed"] + P["n_seeds"]))
    return {
        "heads": heads_at_fixed_width(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds),
        "matched": parameter_matched(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds,
                                     baseline_widths=P["baseline_widths"], baseline_heads=P["baseline_heads"]),
        "sizes": head_size_at_fixed_heads(base, n_heads=P["size_heads"], head_dims=P["head_dims"], seeds=seeds),
        **({"recovery": recovery_grid(P, lr)} if P.get("recovery_steps") is not None else {}),
    }


def manifest_path(store: str | os.PathLike) -> Path:
    """The parameter manifest beside a store: ``<store without .jsonl>.params.json``."""
    p = Path(store)
    return p.with_name(p.stem + ".params.json")


def _json_params(P: Mapping) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in P.items()}


def _read_runs(grids: dict[str, list[tuple[dict, dict]]], store: Path) -> dict[str, pd.DataFrame]:
    """The grids' runs read from ``store`` without training any; a missing run is an error."""
    if not store.is_file():
        raise FileNotFoundError(f"results store {store} does not exist: it is committed with the book "
                                f"(data/results/), or produce it with `lowrank run 04 --scale long`")
    latest = {r["key"]: r for r in ResultStore(store).records()}
    configs = {run_key(c): c for grid in grids.values() for _, c in grid}
    missing = sorted(set(configs) - set(latest))
    if missing:
        raise RuntimeError(f"{len(missing)} of the {len(configs)} runs of the grid are not in {store} "
                           f"(first: {missing[0]}); the store does not match its parameter manifest")
    rows = [{"key": k, **latest[k]["config"], **latest[k]["metrics"], "wall_s": latest[k]["wall_s"]}
            for k in configs]
    results = pd.DataFrame(rows)
    return {name: _frame(grid, results) for name, grid in grids.items()}


def store_provenance(store: str | os.PathLike, keys: set[str] | None = None) -> dict:
    """How a store's records (those of ``keys``, or all) were produced: git revisions, code
    hashes, machines, CPUs (each a sorted list of the distinct values), first and last date,
    the number of records and the sum of their wall times (s, the sweep's CPU time on one
    worker per run)."""
    recs = [r for r in ResultStore(store).records() if keys is None or r["key"] in keys]
    prov = [r.get("provenance") or {} for r in recs]
    dates = sorted(p.get("date", "") for p in prov if p.get("date"))

    def distinct(field: str) -> list[str]:
        return sorted({str(p.get(field, "unknown")) for p in prov})

    return {"records": len(recs), "git_revision": distinct("git_revision"), "code_hash": distinct("code_hash"),
            "machine": distinct("machine"), "cpu": distinct("cpu"), "torch": distinct("torch"),
            "first_date": dates[0] if dates else "unknown", "last_date": dates[-1] if dates else "unknown",
            "wall_s": float(sum(float(r.get("wall_s", 0.0)) for r in recs))}


def run_training(P: Mapping, *, progress: bool = False, read_only: bool = False,
                 store: str | os.PathLike | None = None) -> dict:
    """Train the chapter's grids through one sweep store and return ``heads``, ``matched``,
    ``sizes`` (one row per run), ``lr_sweep`` (one row per sweep run, empty without a sweep),
    ``lr_table`` (:func:`choose_lr`'s table, or None), ``configs`` (one row per configuration)
    and ``setup`` (the training parameters, the chosen rate, tokens seen per run, wall time).

    When ``P["lr_sweep"]`` lists rates, their sweep (:func:`lr_sweep_grid`) runs first and the
    main grids run at the rate :func:`choose_lr` picks from it; otherwise at ``P["lr"]``.

    Runs go to ``store`` (default ``P["results_store"]``) when it names one (finished runs are
    reused, and the parameters are written beside it, :func:`manifest_path`), else to a fresh
    temporary store, so that the page is always recomputed. ``read_only=True`` trains nothing:
    every run must already be in ``store``. ``P["shard"]`` = ``"i/N"`` (optional) trains only
    this machine's share (:func:`lowrank.sweep.shard_of`) into the named store; the chapter
    renders once every shard has finished, from a run with no shard and the same store.
    """
    t0 = time.perf_counter()
    shard = parse_shard(None if read_only else P.get("shard"))
    store = P["results_store"] if store is None else store
    if shard != (0, 1) and store is None:
        raise ValueError(f"shard = {P['shard']!r} needs results_store: the store the shards share")
    if read_only and store is None:
        raise ValueError("read_only needs a store to read")
    sweep_grid = lr_sweep_grid(P)

    def grids_at(path: Path) -> tuple[dict, float, pd.DataFrame | None]:
        if sweep_grid:
            if read_only:
                swept = _read_runs({"lr": sweep_grid}, path)["lr"]
            else:
                swept = run_grids({"lr": sweep_grid}, store=path, runs_dir=default_runs_dir(path),
                                  workers=P["workers"], progress=progress, shard=shard)["lr"]
            if len(swept) < len(sweep_grid):
                raise RuntimeError(f"shard {shard[0]}/{shard[1]} has finished its share of the learning-rate "
                                   f"sweep; the main grids wait for every shard's sweep runs in {path}")
            lr, table = choose_lr(swept)
        else:
            swept, lr, table = pd.DataFrame(), float(P["lr"]), None
        grids = training_grids(P, lr)
        if read_only:
            frames = _read_runs(grids, path)
        else:
            frames = run_grids(grids, store=path, runs_dir=default_runs_dir(path), workers=P["workers"],
                               progress=progress, shard=shard)
        frames["lr_sweep"], frames["lr_table"] = swept, table
        frames.setdefault("recovery", _frame([], pd.DataFrame()))
        return frames, lr, grids

    if store is None:
        # A throw-away store and its checkpoints (tens of MB), removed on every exit path.
        with tempfile.TemporaryDirectory(prefix="lowrank-ch04-") as tmp:
            frames, lr, grids = grids_at(Path(tmp) / "runs.jsonl")
        store_text = "a temporary store, removed after the run"
    else:
        store = Path(store)
        if not read_only:
            store.parent.mkdir(parents=True, exist_ok=True)
            write_manifest(manifest_path(store), _json_params(P))
        frames, lr, grids = grids_at(store)
        store_text = str(store)
    expected = {run_key(c) for grid in grids.values() for _, c in grid}
    missing = expected - {k for name in grids for k in frames[name].get("key", [])}
    if missing:
        raise RuntimeError(
            f"shard {shard[0]}/{shard[1]} has finished its runs; {len(missing)} of the {len(expected)} runs "
            f"belong to other shards and are not in {store} yet. When every shard has finished, execute "
            f"the chapter with shard = None and the same results_store to render it.")
    frames["configs"] = configuration_table(frames["heads"], frames["matched"], frames["sizes"])
    frames["setup"] = {
        "d": P["d_model"], "n": P["seq_len"], "dp": P["head_dim"], "n_layers": P["n_layers"],
        "steps": P["steps"], "lr": lr, "n_seeds": P["n_seeds"], "base_heads": P["baseline_heads"],
        "base_widths": list(P["baseline_widths"]), "size_heads": P["size_heads"],
        "tokens_seen": P["steps"] * P["batch_size"] * P["seq_len"], "store": store_text,
        "val_eval_tokens": base_config(P)["eval_tokens"], "batch_size": P["batch_size"],
        "init": P["init"], "d_ff": P["d_ff"], "lr_sweep": list(P["lr_sweep"]),
        "lr_sweep_steps": P["lr_sweep_steps"] or P["steps"],
        "recovery_steps": P.get("recovery_steps"),
        "wall_s": time.perf_counter() - t0}
    if store is not None and read_only:
        keys = expected | {run_key(c) for _, c in sweep_grid}
        frames["setup"]["provenance"] = store_provenance(store, keys)
    return frames


def resolve_store(path: str | os.PathLike) -> Path:
    """A store path as given when it is absolute or exists from the working folder, else
    relative to the book's root (the folder holding ``lowrank/`` and ``data/``), so the default
    ``data/results/...`` is found wherever the notebook runs."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return Path(__file__).resolve().parents[3] / p


# The budget store, committed beside the long-scale sweep; the chapter reads it and never writes it.
BUDGET_STORE = "data/results/04_head_size_budget.jsonl"


def run_budget(store: str | os.PathLike = BUDGET_STORE) -> dict:
    """``{"budget": ...}``: what the budget store holds so far (:func:`budget.read`), with the
    paired ``comparisons`` of its budget runs, the factorial's ``effects`` and the records'
    ``provenance`` (None for a store with no record)."""
    path = resolve_store(store)
    got = budget.read(path)
    got["comparisons"] = budget.comparisons(got["budget"])
    got["effects"] = budget.factorial_effects(got["factorial"])
    got["provenance"] = store_provenance(path) if got["n_records"] else None
    return {"budget": got}


def _one_budget(a: pd.DataFrame, b: pd.DataFrame, steps: int, tokens: float) -> pd.DataFrame:
    """A comparison table (as :func:`budget.comparisons` gives one row of ROWS) at one budget."""
    rows = []
    for split, value in (("validation", "val_loss"), ("test", "test_loss")):
        e = paired(a, b, value)
        rows.append({"steps": steps, "tokens": tokens, "split": split, "diff": e.mean, "lo": e.lo, "hi": e.hi,
                     "n": e.n, "runs": len(a) + len(b), "change_diff": float("nan"), "change_lo": float("nan"),
                     "change_hi": float("nan"), "change_n": 0})
    return pd.DataFrame(rows)


def _dh(df: pd.DataFrame) -> int:
    return int(df.d_h.iloc[0])


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
    what = {
        "gap": f"at h = {g('gap_h')}, standard (d_h = {g('gap_std_dh')}) minus fixed (d_p = {g('gap_dp')}) loss",
        "match": (f"standard d = {g('match_base_d')} ({g('match_base_params_k'):.0f} k parameters) minus fixed "
                  f"h = {g('match_fixed_h')} at d = {g('match_fixed_d')} ({g('match_fixed_params_k'):.0f} k) loss"),
        "stdheads": f"standard heads, h = {g('std_h_last')} minus h = {g('std_h_first')} loss",
        "fixedheads": f"fixed head size, h = {g('fixed_h_first')} minus h = {g('fixed_h_last')} loss",
        "dpsize": f"at h = {g('size_heads') if 'size_heads' in H else ''}, d_p = {g('dp_first')} minus d_p = {g('dp_last')} loss",
    }
    out = {}
    for row in rows:
        a, b = pairs[row]
        out.update(row_evidence(src, row, what[row], _one_budget(a, b, steps, tokens), planned=len(a) + len(b),
                                param_gap=g("match_param_gap") if row == "match" else float("nan")))
    return out


_BUDGET_WHAT = {"gap": "at h = 32, standard (d_h = 2) minus fixed (d_p = 16) loss",
                "match": "standard d = 112, h = 4 minus fixed h = 32 at d = 64 (d_p = 16) loss",
                "stdheads": "standard heads at d = 64, h = 32 minus h = 4 loss",
                "fixedheads": "fixed head size d_p = 16 at d = 64, h = 4 minus h = 32 loss"}


def _budget_headline(b: Mapping) -> dict:
    """Keys ``rule_budget_*`` (the rule evidence of every row of :data:`budget.ROWS`) and
    ``budget_*`` (what the store holds, the chosen rate, its provenance), without ``ch04_``."""
    comps, runs = b["comparisons"], b["budget"]
    out = {}
    for row, a, bb in budget.ROWS:
        gap = float("nan")
        if row == "match" and len(runs):
            pa, pb = (runs[runs.model == m].n_params for m in (a, bb))
            if len(pa) and len(pb):
                gap = abs(float(pa.iloc[0]) - float(pb.iloc[0])) / float(pb.iloc[0])
        ev = row_evidence("budget", row, _BUDGET_WHAT[row], comps[comps.row == row], planned=2 * len(budget.SEEDS),
                          param_gap=gap)
        out.update({k[len("ch04_"):]: v for k, v in ev.items()})
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
    return out


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
    """Which factor of the factorial moves the standard-minus-fixed gap, as a whole sentence."""
    main = effects[effects.effect.str.startswith(("tokenizer", "initialisation", "interaction"))]
    if (main.n < 2).any():
        return (f"The factorial cannot say yet which factor turns the sign: the emptiest of its cells holds "
                f"{int(main.n.min())} of the {len(budget.SEEDS)} seeds paired across all four cells.")
    moves = []
    for name in dict.fromkeys(main.effect):
        e = main[main.effect == name]
        sides = {int(r.lo > 0) - int(r.hi < 0) for r in e.itertuples()}
        if len(sides) == 1 and 0 not in sides:
            moves.append(name.split(":")[0])
    if not moves:
        return ("No factor's effect on the gap excludes 0 on both splits: at this power the factorial does not "
                "say which factor turns the sign.")
    return (f"The effects whose intervals exclude 0 on both splits: {', '.join(moves)}; the others are not "
            f"detectable at this power.")


_BUDGET_KEYS = ("budget_runs", "budget_planned", "budget_lr_check_runs", "budget_lr_check_planned",
                "budget_factorial_runs", "budget_factorial_planned", "budget_records", "budget_cpu_h",
                "budget_lr_text", "budget_prov_text", "budget_largest_tokens", "budget_command", "budget_estimate_h",
                "budget_steps_text", "budget_tokens_text", "budget_rates_text", "budget_lr_check_steps",
                "budget_factorial_steps", "budget_factorial_lr", "budget_seeds", "budget_factorial_text",
                "budget_horizon", "budget_cost_ratio")
_LIVE_ROWS = ("gap", "match", "stdheads", "fixedheads", "dpsize")


def run_long(P: Mapping, live: Mapping | None = None) -> dict:
    """``{"long": tables}``: the long-scale grids read from the committed store ``P["long_store"]``
    (read-only, with the parameters of its manifest, :func:`manifest_path`), or, when
    ``long_store`` is None, this execution's own tables ``live`` (a run at the long scale itself)."""
    if P["long_store"] is None:
        if live is None:
            raise ValueError("long_store is None: pass this run's tables as live")
        return {"long": {**{k: live[k] for k in ("heads", "matched", "sizes", "recovery", "lr_sweep", "lr_table",
                                                 "configs")},
                         "setup": dict(live["setup"], source="this run")}, **run_budget()}
    store = resolve_store(P["long_store"])
    man = manifest_path(store)
    if not man.is_file():
        raise FileNotFoundError(f"{man} (the parameters of the long-scale store) does not exist; it is "
                                f"committed with {store.name}")
    L = json.loads(man.read_text())
    tables = run_training(L, read_only=True, store=store)
    tables["setup"]["source"] = "store"
    return {"long": tables, **run_budget()}


_PAIRED = ("diff", "lo", "hi", "n", "text")

HEADLINE_KEYS = tuple(f"ch04_{k}" for k in (
    "table_rows", "table_within", "table_max_diff", "table_tolerance", "d512_dff2048_M",
    "n_docs", "n_words", "train_tokens", "val_tokens", "test_tokens", "val_docs", "test_docs", "vocab",
    "d", "n", "dp", "n_layers", "steps", "lr", "batch_size", "val_eval_tokens", "n_seeds", "base_heads",
    "base_widths", "size_heads",
    "std_h_first", "std_h_last", "fixed_h_first", "fixed_h_last", "std_ppl_first", "std_ppl_last",
    "fixed_ppl_first", "fixed_ppl_last", "std_best_h", "fixed_best_h",
    *(f"std_change_{x}" for x in _PAIRED), "std_trend", *(f"fixed_change_{x}" for x in _PAIRED), "fixed_trend",
    "gap_h", "gap_std_dh", "gap_dp", "gap_std_ppl", "gap_fixed_ppl", "gap_ppl", *(f"gap_{x}" for x in _PAIRED), "gap_verdict",
    "match_fixed_h", "match_fixed_d", "match_fixed_params_k", "match_fixed_ppl", "match_base_d",
    "match_base_params_k", "match_base_ppl", "match_param_gap", *(f"match_{x}" for x in _PAIRED), "match_verdict",
    "widest_base_d", "widest_base_ppl", "dp_first", "dp_last", "dp_ppl_first", "dp_ppl_last",
    *(f"dp_change_{x}" for x in _PAIRED), "dp_trend",
    "best_std_h", *(f"fixed_vs_best_{x}" for x in _PAIRED), "fixed_vs_best_verdict", "gap_curve_text",
    "tokens_seen", "epochs", "n_configs", "n_runs", "train_s", "wall_s", "size_ppl_spearman",
    "init", "lr_text", "lr_regret"))

# The budget check: the gap at the recovery budget and its change (see _recovery_headline).
_RECOVERY_KEYS = ("rec_h", "rec_steps", "rec_tokens", "rec_budget_text", *(f"rec_gap_{x}" for x in _PAIRED),
                  *(f"rec_change_{x}" for x in _PAIRED), "rec_trend")
HEADLINE_KEYS = HEADLINE_KEYS + tuple(f"ch04_{k}" for k in _RECOVERY_KEYS)

# The training comparisons again, on the long-scale tables (the committed store, or this run at
# the long scale itself): every key of _training_headline, prefixed "long_".
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
_LONG_SETUP_KEYS = (
    "d", "n", "dp", "n_layers", "steps", "batch_size", "n_seeds", "tokens_seen", "epochs", "lr", "init",
    "size_heads", "base_heads", "base_widths", "lr_text", "lr_regret", "lr_sweep_steps", "n_configs", "n_runs",
    "source", "scale", "prov_text", "prov_records", "cpu_s", "command")
HEADLINE_KEYS = HEADLINE_KEYS + tuple(f"ch04_long_{k}" for k in _LONG_SETUP_KEYS + _TRAINING_KEYS + _RECOVERY_KEYS)

HEADLINE_KEYS = (HEADLINE_KEYS + tuple(f"ch04_{k}" for k in _BUDGET_KEYS)
                 + evidence_keys("budget", [r for r, _, _ in budget.ROWS]) + evidence_keys("long", ["dpsize"])
                 + evidence_keys("live", _LIVE_ROWS))

# The command that reproduces the long-scale store (into the user's own store, never the committed one).
LONG_COMMAND = "lowrank run 04 --scale long"


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
    one = lambda xs: xs[0] if len(xs) == 1 else f"{len(xs)} different values ({', '.join(xs)})"  # noqa: E731
    return (f"{prov['records']} runs trained from {prov['first_date']} to {prov['last_date']} on {one(prov['machine'])} "
            f"({one(prov['cpu'])}), git revision {one(prov['git_revision'])}, code hash {one(prov['code_hash'])}, "
            f"torch {one(prov['torch'])}")


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
    if set(out) != set(HEADLINE_KEYS):
        raise AssertionError(f"headline keys drifted from HEADLINE_KEYS: {sorted(set(out) ^ set(HEADLINE_KEYS))}")
    return out


# ---------------------------------------------------------------------------------------------
# Tables for the page (plain DataFrames with readable column names; the chapter styles them)

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


def curve_gap(df: pd.DataFrame, a: Mapping, b: Mapping, split: str = "train") -> pd.DataFrame:
    """Loss of the runs matching ``a`` minus those matching ``b`` (dicts of column values) at
    every logged step, paired by seed then averaged: columns ``step``, ``diff``, ``n`` (seeds)."""
    c = curves(df, ["family", "h", "d_h", "d"])
    c = c[c.split == split]
    pick = lambda w: c[pd.concat([c[k] == v for k, v in w.items()], axis=1).all(axis=1)]  # noqa: E731
    j = pick(a).merge(pick(b), on=["seed", "step"], suffixes=("_a", "_b"))
    if j.empty:
        return pd.DataFrame(columns=["step", "diff", "n"])
    j["diff"] = j["loss_a"] - j["loss_b"]
    return j.groupby("step", as_index=False).agg(diff=("diff", "mean"), n=("seed", "count"))


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
                     "same rule on this page's live run": lj.label if lj else "(not a training claim)",
                     "rule": c.rule_sentence, "rules ledger": ledger_note(c.key, events)})
    return pd.DataFrame(rows)
