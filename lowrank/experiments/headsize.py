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
"""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..models import bert_parameter_count
from ..sweep import run_key, sweep
from ..train import TrainConfig

__all__ = ["PAPER_TABLES", "paper_parameter_table", "heads_at_fixed_width", "parameter_matched",
           "head_size_at_fixed_heads", "run_grids", "summarise", "curves", "mean_curves", "headline",
           "configuration_table", "default_runs_dir", "base_config", "training_grids",
           "run_parameter_table", "run_corpus", "run_training", "HEADLINE_KEYS",
           "PARAMETER_TOLERANCE_M"]

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
    """Mean, standard deviation and standard error of ``value`` over seeds, per group."""
    if df.empty:
        raise ValueError("no finished runs to summarise")
    g = df.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    out["std"] = out["std"].fillna(0.0)
    out["sem"] = out["std"] / out["n"] ** 0.5
    params = df.groupby(by, sort=True)["n_params"].first().reset_index(drop=True)
    out.insert(len(by), "n_params", params.values)
    return out


def default_runs_dir(store: str | os.PathLike) -> Path:
    """Run folders (checkpoints) beside a store: ``<store without .jsonl>-runs/``."""
    p = Path(store)
    return p.with_name(p.stem + "-runs")


def _trend(first: pd.Series, last: pd.Series) -> str:
    """'falls' / 'rises' when the change of the seed mean exceeds twice its standard error,
    else 'does not change beyond seed noise'."""
    diff = last["mean"] - first["mean"]
    noise = 2 * (first["sem"] ** 2 + last["sem"] ** 2) ** 0.5
    if abs(diff) <= noise:
        return "does not change beyond seed noise"
    return "falls" if diff < 0 else "rises"


def _training_headline(heads: pd.DataFrame, matched: pd.DataFrame, sizes: pd.DataFrame) -> dict:
    """Headline numbers of the three experiments (validation perplexity, seed means), with the
    verdict words the chapter's prose uses. Every comparison counts a difference only when it
    exceeds twice the combined standard error over seeds."""
    s = summarise(heads, ["family", "h"])
    std = s[s.family == "standard"].set_index("h")
    fix = s[s.family == "fixed"].set_index("h")
    out: dict = {}
    out["std_h_first"], out["std_h_last"] = int(std.index.min()), int(std.index.max())
    out["fixed_h_first"], out["fixed_h_last"] = int(fix.index.min()), int(fix.index.max())
    out["std_ppl_first"], out["std_ppl_last"] = float(std["mean"].iloc[0]), float(std["mean"].iloc[-1])
    out["fixed_ppl_first"], out["fixed_ppl_last"] = float(fix["mean"].iloc[0]), float(fix["mean"].iloc[-1])
    out["std_best_h"], out["fixed_best_h"] = int(std["mean"].idxmin()), int(fix["mean"].idxmin())
    out["std_trend"] = _trend(std.iloc[0], std.iloc[-1])
    out["fixed_trend"] = _trend(fix.iloc[0], fix.iloc[-1])
    out["fixed_monotone"] = "yes" if bool((fix["mean"].diff().dropna() < 0).all()) else "no"
    common = sorted(set(std.index) & set(fix.index) - {h for h in std.index
                                                          if std.loc[h, "n_params"] == fix.loc[h, "n_params"]})
    if common:
        h = common[-1]
        gap = std.loc[h, "mean"] - fix.loc[h, "mean"]
        noise = 2 * (std.loc[h, "sem"] ** 2 + fix.loc[h, "sem"] ** 2) ** 0.5
        out["gap_h"], out["gap_ppl"] = int(h), float(gap)
        out["gap_verdict"] = ("lower" if gap > noise else "higher" if gap < -noise
                              else "not distinguishable from")
    else:  # every common h has d_p = d / h: the two families are the same models
        out["gap_h"], out["gap_ppl"], out["gap_verdict"] = 0, float("nan"), "identical to"
    m = summarise(matched, ["family", "d", "h"])
    fixed_big = m[m.family == "fixed"].sort_values("n_params").iloc[-1]
    base = m[m.family == "standard"]
    near = base.iloc[(base["n_params"] - fixed_big["n_params"]).abs().argmin()]
    out["match_fixed_h"], out["match_fixed_d"] = int(fixed_big["h"]), int(fixed_big["d"])
    out["match_fixed_params_k"] = float(fixed_big["n_params"]) / 1e3
    out["match_fixed_ppl"] = float(fixed_big["mean"])
    out["match_base_d"], out["match_base_params_k"] = int(near["d"]), float(near["n_params"]) / 1e3
    out["match_base_ppl"] = float(near["mean"])
    gap = near["mean"] - fixed_big["mean"]
    noise = 2 * (near["sem"] ** 2 + fixed_big["sem"] ** 2) ** 0.5
    out["match_verdict"] = "lower" if gap > noise else "higher" if gap < -noise else "not distinguishable from"
    widest = base.sort_values("d").iloc[-1]
    out["widest_base_d"], out["widest_base_ppl"] = int(widest["d"]), float(widest["mean"])
    z = summarise(sizes, ["d_h"]).set_index("d_h")
    out["dp_first"], out["dp_last"] = int(z.index.min()), int(z.index.max())
    out["dp_ppl_first"], out["dp_ppl_last"] = float(z["mean"].iloc[0]), float(z["mean"].iloc[-1])
    out["dp_trend"] = _trend(z.iloc[0], z.iloc[-1])
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
    return out.fillna({"val_ppl_sd": 0.0, "test_ppl_sd": 0.0})


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
    from ..data import load_corpus, prepare_lm, split_documents

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
                tie_embeddings=P["tie_embeddings"], batch_size=P["batch_size"], steps=P["steps"],
                lr=P["lr"], warmup_steps=P["warmup_steps"], schedule=P["schedule"], dropout=P["dropout"],
                eval_interval=P["eval_interval"],
                eval_tokens=max(P["seq_len"], (P["eval_tokens"] or 65536) // 4),
                test_tokens=P["eval_tokens"], checkpoint_every=max(P["steps"] // 4, 1),
                num_threads=P["num_threads"], device=P["device"])


def training_grids(P: Mapping) -> dict[str, list[tuple[dict, dict]]]:
    """The chapter's three grids (``heads``, ``matched``, ``sizes``) from its parameters."""
    base = base_config(P)
    seeds = list(range(P["seed"], P["seed"] + P["n_seeds"]))
    return {
        "heads": heads_at_fixed_width(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds),
        "matched": parameter_matched(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds,
                                     baseline_widths=P["baseline_widths"], baseline_heads=P["baseline_heads"]),
        "sizes": head_size_at_fixed_heads(base, n_heads=P["size_heads"], head_dims=P["head_dims"], seeds=seeds),
    }


def run_training(P: Mapping, *, progress: bool = False) -> dict:
    """Train the chapter's three grids through one sweep and return ``heads``, ``matched``,
    ``sizes`` (one row per run), ``configs`` (one row per configuration) and ``setup`` (the
    chapter's training parameters, the number of seeds, tokens seen per run, wall time).

    Runs go to ``P["results_store"]`` when it names a store (finished runs are reused), else to
    a fresh temporary store, so that the page is always recomputed.
    """
    t0 = time.perf_counter()
    store = (Path(tempfile.mkdtemp(prefix="ch04-")) / "runs.jsonl" if P["results_store"] is None
             else Path(P["results_store"]))
    frames = run_grids(training_grids(P), store=store, runs_dir=default_runs_dir(store), workers=P["workers"],
                       progress=progress)
    frames["configs"] = configuration_table(frames["heads"], frames["matched"], frames["sizes"])
    frames["setup"] = {
        "d": P["d_model"], "n": P["seq_len"], "dp": P["head_dim"], "n_layers": P["n_layers"],
        "steps": P["steps"], "n_seeds": P["n_seeds"], "base_heads": P["baseline_heads"],
        "base_widths": list(P["baseline_widths"]), "size_heads": P["size_heads"],
        "tokens_seen": P["steps"] * P["batch_size"] * P["seq_len"], "store": str(store),
        "wall_s": time.perf_counter() - t0}
    return frames


HEADLINE_KEYS = tuple(f"ch04_{k}" for k in (
    "table_rows", "table_max_diff", "d512_dff2048_M",
    "n_docs", "n_words", "train_tokens", "val_tokens", "test_tokens", "val_docs", "test_docs", "vocab",
    "d", "n", "dp", "n_seeds", "base_heads", "base_widths", "size_heads",
    "std_h_first", "std_h_last", "fixed_h_first", "fixed_h_last", "std_ppl_first", "std_ppl_last",
    "fixed_ppl_first", "fixed_ppl_last", "std_best_h", "fixed_best_h", "std_trend", "fixed_trend",
    "fixed_monotone", "gap_h", "gap_ppl", "gap_verdict", "match_fixed_h", "match_fixed_d",
    "match_fixed_params_k", "match_fixed_ppl", "match_base_d", "match_base_params_k", "match_base_ppl",
    "match_verdict", "widest_base_d", "widest_base_ppl", "dp_first", "dp_last", "dp_ppl_first",
    "dp_ppl_last", "dp_trend", "tokens_seen", "epochs", "n_configs", "n_runs", "train_s", "wall_s",
    "size_ppl_spearman"))


def headline(tables: Mapping) -> dict:
    """Every number chapter 04 glues, keyed ``ch04_*`` (exactly :data:`HEADLINE_KEYS`), from
    the tables of :func:`run_parameter_table`, :func:`run_corpus` and :func:`run_training`."""
    out: dict = {}
    t = tables["parameters"]
    out["table_rows"] = len(t)
    out["table_max_diff"] = float(t["difference (M)"].abs().max())
    out["d512_dff2048_M"] = bert_parameter_count(512, 24, 8, 128, 2048) / 1e6
    c = tables["corpus"]
    for k in ("n_docs", "n_words", "train_tokens", "val_tokens", "test_tokens", "val_docs", "test_docs", "vocab"):
        out[k] = c[k]
    st = tables["setup"]
    out["d"], out["n"], out["dp"] = st["d"], st["n"], st["dp"]
    out["n_seeds"], out["base_heads"], out["size_heads"] = st["n_seeds"], st["base_heads"], st["size_heads"]
    out["base_widths"] = ", ".join(map(str, st["base_widths"]))
    out.update(_training_headline(tables["heads"], tables["matched"], tables["sizes"]))
    out["tokens_seen"] = st["tokens_seen"]
    out["epochs"] = st["tokens_seen"] / c["train_tokens"]
    configs = tables["configs"]
    out["n_configs"] = len(configs)
    out["n_runs"] = int(configs.seeds.sum())
    out["train_s"] = float((configs.train_s * configs.seeds).sum())
    out["wall_s"] = float(st["wall_s"])
    out["size_ppl_spearman"] = float(configs[["params", "val_ppl"]].corr(method="spearman").iloc[0, 1])
    out = {f"ch04_{k}": v for k, v in out.items()}
    if set(out) != set(HEADLINE_KEYS):
        raise AssertionError(f"headline keys drifted from HEADLINE_KEYS: {sorted(set(out) ^ set(HEADLINE_KEYS))}")
    return out
