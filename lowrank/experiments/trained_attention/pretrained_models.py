"""Chapter 07, part four: the pretrained claims on two more models, an encoder and a decoder.

all-mpnet-base-v2 (MPNet encoder, 12 layers, 12 heads, d_h = 64, relative position bias) and
SmolLM2-135M-Instruct (Llama decoder, 30 layers, 9 query heads sharing 3 key heads, d_h = 64,
rotary positions, causal, 4-bit weights dequantised) are measured once at the long scale into a
committed store (:data:`LONG_MODELS_STORE`), which the chapter reads at every other scale, so the
book never needs either model. With the models fetched (``make models``) ``models_run`` measures
them again.

Per model, two parts (one store record each, per length for the cut):

- ``ranks``: every head's logits S and probabilities A on unpadded windows of real text
  (:func:`lowrank.probes.probe.text_ranks`, the code path of ``lowrank probe`` and of MiniLM's section),
  condensed per (n, layer, head): the largest and smallest numerical rank of S at float64's
  default tolerance, the mean hardmax rank / n and the mean numerical rank of A / n at float32's.
- ``cut``: every head cut to logit rank r. The encoder's bilinear forms are cut in the weights
  (:func:`lowrank.data.pretrained.truncate_logit_rank`) and judged, as MiniLM's, by the top-10
  neighbour overlap and the pairwise-similarity correlation of mean-pooled embeddings of BBC News
  articles against the full model's. The decoder's logits are cut while it runs (rotary
  positions leave no single form to cut; :func:`lowrank.probes.logit_cut.logit_rank_cut`) and judged by
  its next-token loss on windows of BBC News, paired by window with the full model's.
"""
from __future__ import annotations

import functools
import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data import corpora as _data
from ...core.files import in_book
from ...measure.rank import DEFAULT_TOL, FLOAT32, FLOAT32_TOL
from ...measure.stats import t_interval
from ...stores.sweep import ResultStore, sweep
from ...train import run_key
from ..shared.intervals import t_lower_bound, wilson_interval
from .model_rules import LOSS_MARGIN, MODEL_TITLES, cut_records
from .rules import LEVEL, NEIGHBOUR_MARGIN, SIMILARITY_LEVEL
from .truncation import agreement, probe_documents

__all__ = ["MODELS_EXPERIMENT", "LONG_MODELS_STORE", "MODEL_NAMES", "models_configs", "models_run", "models_meta",
           "run_models", "models_rank_table", "models_cut_table", "models_headline", "MODELS_KEYS"]

MODELS_EXPERIMENT = "ch07_pretrained_models"
LONG_MODELS_STORE = "data/results/07_pretrained_models_long.jsonl"
MODEL_NAMES = ("mpnet", "smollm2")


def models_configs(*, models: Sequence[str], lengths: Sequence[int], windows: int, cut_ns: Sequence[int],
                   cut_ranks: Sequence[int], per_class: int, loss_windows: int, seed: int,
                   corpora: Sequence[str] = ("shakespeare", "bbcnews")) -> list[dict]:
    """One ``ranks`` config per model and one ``cut`` config per (model, n); ranks above a model's
    head size are left out of its cut (64 for both models)."""
    out = []
    for m in models:
        out.append(dict(model=m, part="ranks", lengths=[int(n) for n in lengths], windows=int(windows),
                        corpora=list(corpora), seed=int(seed)))
        for n in cut_ns:
            out.append(dict(model=m, part="cut", n=int(n), ranks=[int(r) for r in cut_ranks if r <= 64],
                            per_class=int(per_class), min_tokens=int(max(cut_ns)) - 2, loss_windows=int(loss_windows),
                            corpus="bbcnews", seed=int(seed)))
    return out


@functools.lru_cache(maxsize=1)
def _model(name: str):
    from ...data.pretrained_models import load_packaged

    return load_packaged(name)


def _ranks(config: Mapping[str, Any]) -> dict:
    from ...probes.probe import text_ranks
    from ...probes.run import is_causal

    model, tok, load_s = _model(config["model"])
    cfg = model.config
    frames, checks = [], []
    for c in config["corpora"]:
        texts = _data.load_corpus(c).texts
        frames.append(text_ranks(model, tok, texts, lengths=config["lengths"], windows=config["windows"],
                                 batch_size=2, seed=config["seed"], rtols=(None, FLOAT32),
                                 measures=("numerical_rank", "hardmax_rank"), energies=(), cross_checks=checks))
    t = pd.concat(frames, ignore_index=True)
    key = ["n", "layer", "head"]
    s = t[(t.matrix == "logits") & (t.measure == "numerical_rank") & (t.tolerance == DEFAULT_TOL)].groupby(key).value
    a = t[(t.matrix == "probs") & (t.measure == "numerical_rank") & (t.tolerance == FLOAT32_TOL)].groupby(key).value
    hard = t[(t.matrix == "probs") & (t.measure == "hardmax_rank")].groupby(key).value
    per = pd.DataFrame({"logit_max": s.max(), "logit_min": s.min(), "a_rank": a.mean(), "hard": hard.mean(),
                        "windows": hard.size()}).reset_index()
    heads = int(cfg.num_attention_heads)
    return {"head_dim": int(getattr(cfg, "head_dim", None) or cfg.hidden_size // heads),
            "layers": int(cfg.num_hidden_layers), "heads": heads,
            "kv_heads": int(getattr(cfg, "num_key_value_heads", None) or heads), "causal": is_causal(model),
            "load_s": float(load_s), "max_abs_diff": float(max(d for _, _, d in checks)),
            "per_head": {col: per[col].tolist() for col in per.columns}}


def _cut(config: Mapping[str, Any]) -> dict:
    from ...probes.logit_cut import logit_rank_cut, next_token_loss
    from ...data.pretrained import document_windows, sentence_embeddings, truncate_logit_rank
    from ...probes.hf import text_windows

    model, tok, _ = _model(config["model"])
    n = int(config["n"])
    if config["model"] == "smollm2":
        texts = _data.load_corpus(config["corpus"]).texts
        ids = text_windows(tok, texts, n=n, count=int(config["loss_windows"]), seed=int(config["seed"]) + n)
        full = next_token_loss(model, ids)
        by_rank = []
        for r in config["ranks"]:
            with logit_rank_cut(model, int(r)):
                by_rank.append({"r": int(r), "loss": next_token_loss(model, ids).tolist()})
        return {"windows": len(ids), "full_loss": full.tolist(), "by_rank": by_rank}
    texts, _ = probe_documents(config["corpus"], tok, per_class=int(config["per_class"]),
                               min_tokens=int(config["min_tokens"]), seed=int(config["seed"]))
    ids = document_windows(tok, texts, n=n)
    full = sentence_embeddings(model, ids)
    by_rank = [{"r": int(r), **agreement(sentence_embeddings(truncate_logit_rank(model, int(r)), ids), full)}
               for r in config["ranks"]]
    return {"docs": len(texts), "by_rank": by_rank}


def models_run(config: Mapping[str, Any], *, run_dir: Path | None = None) -> dict:
    """One store record's metrics: a model's ranks, or its cut at one n."""
    return _ranks(config) if config["part"] == "ranks" else _cut(config)


def run_models(configs: Sequence[dict], *, run: bool, store: str | Path | None = None,
               read_store: str | Path = LONG_MODELS_STORE) -> dict[str, Any]:
    """The two models measured here (``run``, into ``store`` or a temporary file) or read from
    ``read_store``. Returns ``{"models_ranks": ..., "models_cut": ..., "models_meta": ...}``."""
    want = {run_key(c) for c in configs}
    if run:
        with tempfile.TemporaryDirectory(prefix="lowrank-ch07-models-") as tmp:
            where = Path(store) if store is not None else Path(tmp) / f"{MODELS_EXPERIMENT}.jsonl"
            sweep(configs, experiment=MODELS_EXPERIMENT, store=where, runs_dir=Path(tmp) / "runs", run_fn=models_run,
                  progress=False)
            recs = [r for r in ResultStore(where).records() if r["key"] in want]
    else:
        path = in_book(read_store)
        recs = [r for r in ResultStore(path).records() if r["key"] in want] if path.is_file() else []
        if not recs:
            raise FileNotFoundError(f"no measurement of the requested models in {path}")
    return {"models_ranks": models_rank_table(recs), "models_cut": models_cut_table(recs),
            "models_meta": models_meta(recs), "models_source": "notebook" if run else "store",
            "models_wall_s": float(sum(r.get("wall_s", 0.0) for r in recs))}


def models_meta(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model: its shape, whether it is causal, its load time, the cross-check, provenance."""
    rows = []
    for rec in records:
        c, m = rec["config"], rec["metrics"]
        if c["part"] == "ranks":
            prov = rec.get("provenance", {})
            rows.append({"model": c["model"], **{k: m[k] for k in ("head_dim", "layers", "heads", "kv_heads", "causal",
                                                                  "load_s", "max_abs_diff")},
                         "windows": int(c["windows"]) * len(c["corpora"]), "lengths": c["lengths"],
                         "git": prov.get("git_revision", rec.get("git_revision", "")),
                         "wall_s": float(rec.get("wall_s", float("nan")))})
    return pd.DataFrame(rows)


def models_rank_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (model, n, layer, head): logit rank range, rank(A) / n, hardmax rank / n."""
    frames = []
    for rec in records:
        if rec["config"]["part"] == "ranks":
            t = pd.DataFrame(rec["metrics"]["per_head"]).assign(model=rec["config"]["model"],
                                                                head_dim=rec["metrics"]["head_dim"])
            frames.append(t.assign(a_frac=t.a_rank / t.n, hard_frac=t.hard / t.n))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def models_cut_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (model, n, r): the encoder's agreement with its full model, the decoder's loss change."""
    rows = []
    for rec in records:
        c, m = rec["config"], rec["metrics"]
        if c["part"] != "cut":
            continue
        for b in m["by_rank"]:
            row = {"model": c["model"], "n": c["n"], "r": b["r"]}
            if "loss" in b:
                d = np.array(b["loss"]) - np.array(m["full_loss"])  # paired by window
                row.update(loss_full=float(np.mean(m["full_loss"])), loss=float(np.mean(b["loss"])), diff=float(d.mean()),
                           diff_ub=-t_lower_bound(-d, LEVEL), windows=len(d))
            else:
                ov = np.array(b["overlap"])
                row.update(overlap=float(ov.mean()), overlap_lb=t_lower_bound(ov, LEVEL), sim_corr=b["sim_corr"],
                           cos_mean=b["cos_mean"], docs=m["docs"])
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["model", "n", "r"]).reset_index(drop=True) if rows else pd.DataFrame()


def _cut_points(cut: pd.DataFrame, model: str, d_h: int) -> list[dict]:
    """Per n, the smallest grid rank r whose cut keeps the model (encoder: neighbours and similarities
    as MiniLM's rule reads them; decoder: the one-sided 95 % upper bound of the loss increase within
    the margin), and the grid rank below it."""
    out = []
    for n, g in cut[cut.model == model].groupby("n"):
        g = g.sort_values("r")
        if model == "smollm2":
            ok = g.diff_ub <= LOSS_MARGIN
        else:
            ok = (g.overlap_lb >= 1 - NEIGHBOUR_MARGIN) & (g.sim_corr >= SIMILARITY_LEVEL)
        below = g[(g.r < d_h)]
        r = int(below.r[ok[below.index]].iloc[0]) if ok[below.index].any() else d_h
        prev = [int(v) for v in g.r if v < r]
        out.append({"n": int(n), "prev": prev[-1] if prev else 0, "r": r})
    return out


MODELS_KEYS = tuple(f"ch07_pm_{m}_{k}" for m in MODEL_NAMES for k in (
    "title", "dh", "layers", "heads", "kv", "causal", "windows", "load_s", "diff", "logit_min", "logit_max",
    "logit_maps", "n_max", "ref", "ref_name", "head_mean", "head_lo", "head_hi", "heads_n", "above", "above_lo",
    "above_hi", "a_frac", "cut_points", "cut_text", "cut_r1", "git")) + ("ch07_pm_loss_margin", "ch07_pm_cpu_min",
                                                                       "ch07_pm_scale")


def models_headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number of the two models the chapter glues and their rules read (:data:`MODELS_KEYS`)."""
    ranks, cut, meta = t["models_ranks"], t["models_cut"], t["models_meta"]
    out: dict[str, Any] = {"ch07_pm_loss_margin": LOSS_MARGIN,
                           "ch07_pm_scale": "long" if t.get("models_source") == "store" else "notebook",
                           "ch07_pm_cpu_min": float(t.get("models_wall_s", float("nan"))) / 60}
    for m in MODEL_NAMES:
        p = f"ch07_pm_{m}_"
        info = meta[meta.model == m]
        if not len(info):
            out.update({p + k.split(f"{m}_", 1)[1]: float("nan") for k in MODELS_KEYS if k.startswith(p)})
            out[p + "title"], out[p + "cut_points"], out[p + "cut_text"] = MODEL_TITLES[m], "", "not measured"
            continue
        i = info.iloc[0]
        dh, causal = int(i.head_dim), bool(i.causal)
        r = ranks[ranks.model == m]
        tested = r[r.n > dh]
        n_max = int(r.n.max())
        top = r[r.n == n_max]
        ref = (n_max + 1) / (2 * n_max) if causal else -math.expm1(n_max * math.log1p(-1 / n_max))
        est = t_interval(top.hard_frac.to_numpy(), LEVEL)
        above = int((top.hard_frac > ref).sum())
        lo_share, hi_share = wilson_interval(above, len(top))
        pts = _cut_points(cut, m, dh) if len(cut) else []
        c1 = cut[(cut.model == m) & (cut.r == cut[cut.model == m].r.min())] if len(cut) else cut
        out.update({p + "title": MODEL_TITLES[m], p + "dh": dh, p + "layers": int(i.layers), p + "heads": int(i.heads),
                    p + "kv": int(i.kv_heads), p + "causal": causal, p + "windows": int(i.windows),
                    p + "load_s": float(i.load_s), p + "diff": float(i.max_abs_diff),
                    p + "logit_min": int(tested.logit_min.min()) if len(tested) else float("nan"),
                    p + "logit_max": int(tested.logit_max.max()) if len(tested) else float("nan"),
                    p + "logit_maps": int(tested.windows.sum()), p + "n_max": n_max, p + "ref": float(ref),
                    p + "ref_name": "(n + 1) / 2n, the causal analogue" if causal else "1 - (1 - 1/n)^n, the barrier",
                    p + "head_mean": est.mean, p + "head_lo": est.lo, p + "head_hi": est.hi, p + "heads_n": int(len(top)),
                    p + "above": above, p + "above_lo": lo_share, p + "above_hi": hi_share,
                    p + "a_frac": float(top.a_frac.mean()), p + "cut_points": cut_records(pts),
                    p + "cut_text": "; ".join(f"n = {q['n']}: " + (f"between {q['prev']} and {q['r']}" if q["r"] < dh
                                                                   else f"none below {dh}") for q in pts),
                    p + "cut_r1": float(c1["diff"].mean() if m == "smollm2" else c1.overlap.mean()) if len(c1) else
                    float("nan"), p + "git": str(i.git)[:12]})
    return out

