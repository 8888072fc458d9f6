"""Chapter 07, part three: every head of all-MiniLM-L6-v2 cut to logit rank r, judged by measures that can fail.

Per sequence length n and rank r (:func:`lowrank.data.pretrained.truncate_logit_rank`), against the
full model on the same held-out BBC News articles:
(a) top-10 neighbour overlap: each article's 10 nearest articles (cosine of mean-pooled
embeddings) under the cut model and under the full one, the share they have in common;
(b) the Pearson correlation of all pairwise similarities with the full model's;
(c) the cross-validated accuracy of a linear topic probe (kept as before; it turned out blind);
(d) per layer: one layer cut at a time, at one n, measured by (a) and (b).
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
from ...data.pretrained import document_windows, load_minilm, sentence_embeddings, truncate_logit_rank
from ...stores.sweep import ResultStore, sweep
from ...train import run_key
from ..shared.intervals import t_lower_bound
from ..shared.probe import probe_accuracy
from .rules import (COSINE_LEVEL, LEVEL, LOG_FACTOR, NEIGHBOUR_MARGIN, NEIGHBOURS, REDUCTION_MARGIN, SIMILARITY_LEVEL,
                    truncation_records)

__all__ = ["TRUNCATION_EXPERIMENT", "probe_documents", "neighbour_overlap",
           "similarity_correlation", "agreement", "truncation_run", "truncation_configs", "truncation_table",
           "layer_table", "run_truncation", "redundant_ranks", "truncation_headline"]

TRUNCATION_EXPERIMENT = "ch07_truncation"


def probe_documents(corpus: str, tokenizer, *, per_class: int, min_tokens: int, seed: int,
                    root: str | None = None) -> tuple[list[str], list[int]]:
    """``per_class`` documents of each label with at least ``min_tokens`` word pieces (seeded choice)."""
    docs = _data.load_corpus(corpus, root=root)
    if not docs.labels:
        raise ValueError(f"corpus {corpus!r} has no labels")
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for c in range(len(docs.label_names)):
        idx = [i for i in rng.permutation([i for i, l in enumerate(docs.labels) if l == c])]
        keep = []
        for i in idx:
            if len(tokenizer(docs.texts[i], add_special_tokens=False, verbose=False)["input_ids"]) >= min_tokens:
                keep.append(i)
            if len(keep) == per_class:
                break
        if len(keep) < per_class:
            raise ValueError(f"class {docs.label_names[c]!r} has {len(keep)} documents of {min_tokens} word "
                             f"pieces, fewer than {per_class}")
        texts += [docs.texts[i] for i in keep]
        labels += [c] * per_class
    return texts, labels



def _cosines(E: torch.Tensor) -> np.ndarray:
    E = torch.nn.functional.normalize(E.double(), dim=1)
    return (E @ E.T).numpy()


def neighbour_overlap(E: torch.Tensor, F: torch.Tensor, k: int = NEIGHBOURS) -> np.ndarray:
    """Per document, the share of its k nearest other documents (cosine) under E that are also
    among its k nearest under F."""
    out = []
    for C in (_cosines(E), _cosines(F)):
        np.fill_diagonal(C, -np.inf)
        out.append(np.argsort(-C, axis=1, kind="stable")[:, :k])
    return np.array([len(set(a) & set(b)) / k for a, b in zip(*out)])


def similarity_correlation(E: torch.Tensor, F: torch.Tensor) -> float:
    """Pearson correlation of the pairwise cosine similarities (upper triangle) under E and F."""
    iu = np.triu_indices(len(E), 1)
    return float(np.corrcoef(_cosines(E)[iu], _cosines(F)[iu])[0, 1])


def agreement(emb: torch.Tensor, full: torch.Tensor) -> dict[str, Any]:
    """Measures (a) and (b) of a cut model's embeddings against the full model's, plus cosines."""
    ov = neighbour_overlap(emb, full)
    cos = torch.nn.functional.cosine_similarity(emb, full, dim=1).numpy()
    return {"overlap": ov.tolist(), "sim_corr": similarity_correlation(emb, full),
            "cos_mean": float(cos.mean()), "cos_sd": float(cos.std(ddof=1)), "cos_min": float(cos.min())}


def truncation_run(config: Mapping[str, Any], *, run_dir: Path | None = None, root: str | None = None) -> dict:
    """One sequence length n: MiniLM with every head cut to each r of ``config["ranks"]`` (and, when
    ``config["layer_ranks"]`` is non-empty, one layer at a time to each of those ranks) against the full model.

    config: n, ranks, layer_ranks, per_class, min_tokens, seed, folds, l2, corpus. Every document is
    cut to its first n - 2 word pieces (the same documents at every n: all have ``min_tokens``).
    """
    model, tok = load_minilm(device="cpu")
    texts, labels = probe_documents(config["corpus"], tok, per_class=int(config["per_class"]),
                                    min_tokens=int(config["min_tokens"]), seed=int(config["seed"]), root=root)
    ids = document_windows(tok, texts, n=int(config["n"]))
    full = sentence_embeddings(model, ids)
    probe = functools.partial(probe_accuracy, y=labels, folds=int(config["folds"]), seed=int(config["seed"]),
                              l2=float(config["l2"]))
    out: dict[str, Any] = {"docs": len(texts), "head_dim": int(model.config.hidden_size // model.config.num_attention_heads),
                           "layers": int(model.config.num_hidden_layers),
                           "full_acc": probe(full.numpy()).tolist(), "by_rank": [], "by_layer": []}
    for r in config["ranks"]:
        emb = sentence_embeddings(truncate_logit_rank(model, int(r)), ids)
        out["by_rank"].append({"r": int(r), **agreement(emb, full), "acc": probe(emb.numpy()).tolist()})
    for layer in range(out["layers"]) if config.get("layer_ranks") else ():
        for r in config["layer_ranks"]:
            emb = sentence_embeddings(truncate_logit_rank(model, int(r), layers=[layer]), ids)
            out["by_layer"].append({"layer": layer, "r": int(r), **agreement(emb, full)})
    return out


def truncation_configs(*, ns: Sequence[int], ranks: Sequence[int], per_class: int, folds: int, seed: int,
                       l2: float, layer_n: int | None = None, layer_ranks: Sequence[int] = (),
                       corpus: str = "bbcnews") -> list[dict]:
    """One config per n; documents need max(ns) - 2 word pieces, so every n uses the same ones. The
    layer-by-layer cut runs at ``layer_n`` only (which must be one of ``ns``)."""
    if layer_ranks and layer_n not in ns:
        raise ValueError(f"layer_n = {layer_n} must be one of the truncation lengths {list(ns)}")
    return [dict(n=int(n), ranks=[int(r) for r in ranks], per_class=int(per_class), min_tokens=int(max(ns)) - 2,
                 seed=int(seed), folds=int(folds), l2=float(l2), corpus=corpus,
                 layer_ranks=[int(r) for r in layer_ranks] if n == layer_n else []) for n in ns]


def truncation_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (n, r) (r = head_dim is the full rank): the three measures with their uncertainty."""
    rows = []
    for rec in records:
        c, m = rec["config"], rec["metrics"]
        full = np.array(m["full_acc"])
        for b in m["by_rank"]:
            acc = np.array(b["acc"])
            d = acc - full
            ov = np.array(b["overlap"])
            rows.append({"n": c["n"], "r": b["r"], "overlap": ov.mean(), "overlap_lb": t_lower_bound(ov, LEVEL),
                         "sim_corr": b["sim_corr"], "cos_mean": b["cos_mean"], "cos_sd": b["cos_sd"],
                         "cos_min": b["cos_min"], "acc": acc.mean(), "acc_se": acc.std(ddof=1) / math.sqrt(len(acc)),
                         "full_acc": full.mean(), "diff": d.mean(), "diff_se": d.std(ddof=1) / math.sqrt(len(d)),
                         "docs": m["docs"], "folds": len(acc), "head_dim": m["head_dim"],
                         "wall_s": float(rec.get("wall_s", float("nan")))})
    return pd.DataFrame(rows).sort_values(["n", "r"]).reset_index(drop=True)


def layer_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (n, layer, r) of the one-layer-at-a-time cut."""
    rows = [{"n": rec["config"]["n"], "layer": b["layer"], "r": b["r"], "overlap": float(np.mean(b["overlap"])),
             "overlap_lb": t_lower_bound(np.array(b["overlap"]), LEVEL), "sim_corr": b["sim_corr"], "cos_mean": b["cos_mean"]}
            for rec in records for b in rec["metrics"].get("by_layer", [])]
    return pd.DataFrame(rows, columns=["n", "layer", "r", "overlap", "overlap_lb", "sim_corr", "cos_mean"])


def run_truncation(*, ns: Sequence[int], ranks: Sequence[int], per_class: int, folds: int, seed: int, l2: float,
                   layer_n: int | None = None, layer_ranks: Sequence[int] = (), run: bool,
                   store: str | Path | None = None, read_store: str | Path | None = None,
                   root: str | None = None) -> dict[str, Any]:
    """The truncation experiment, training-free: run here (``run=True``, into ``store`` or a temporary
    file) or read from ``read_store``. Returns ``{"truncation": ..., "truncation_layers": ...}``."""
    configs = truncation_configs(ns=ns, ranks=ranks, per_class=per_class, folds=folds, seed=seed, l2=l2,
                                 layer_n=layer_n, layer_ranks=layer_ranks)
    want = {run_key(c) for c in configs}
    if not run:
        path = in_book(read_store)
        recs = {r["key"]: r for r in ResultStore(path).records() if r["key"] in want} if path.is_file() else {}
        if not recs:
            raise FileNotFoundError(f"no truncation run of the requested grid in {path}")
    else:
        with tempfile.TemporaryDirectory(prefix="lowrank-ch07-") as tmp:
            where = Path(store) if store is not None else Path(tmp) / f"{TRUNCATION_EXPERIMENT}.jsonl"
            sweep(configs, experiment=TRUNCATION_EXPERIMENT, store=where, runs_dir=Path(tmp) / "runs",
                  run_fn=functools.partial(truncation_run, root=root), progress=False)
            recs = {r["key"]: r for r in ResultStore(where).records() if r["key"] in want}
    recs = list(recs.values())
    return {"truncation": truncation_table(recs), "truncation_layers": layer_table(recs)}


def redundant_ranks(tr: pd.DataFrame) -> pd.DataFrame:
    """Per n, the smallest grid rank r whose cut keeps the neighbours (lower bound of the mean
    overlap >= 1 - NEIGHBOUR_MARGIN) and the similarities (correlation >= SIMILARITY_LEVEL), with
    the grid rank below it: r_red lies in (prev, r]."""
    rows = []
    for n, g in tr.groupby("n"):
        g = g.sort_values("r")
        ok = (g.overlap_lb >= 1 - NEIGHBOUR_MARGIN) & (g.sim_corr >= SIMILARITY_LEVEL)
        r = int(g.r[ok].iloc[0]) if ok.any() else int(g.head_dim.iloc[0])
        below = [int(v) for v in g.r if v < r]
        rows.append({"n": int(n), "prev": below[-1] if below else 0, "r_red": r})
    return pd.DataFrame(rows, columns=["n", "prev", "r_red"])


def truncation_headline(t: Mapping[str, Any], join) -> dict[str, Any]:
    """Every truncation number chapter 07 glues, with the evidence of :func:`rules.rule_truncation`."""
    tr, lay = t["truncation"], t["truncation_layers"]
    dh = int(tr.head_dim.iloc[0])
    ns, ranks = sorted(int(v) for v in tr.n.unique()), sorted(int(v) for v in tr.r.unique())
    full, r1 = tr[tr.r == dh], tr[tr.r == ranks[0]]
    out: dict[str, Any] = {"ch07_tr_ns": join(ns), "ch07_tr_ranks": join(ranks), "ch07_tr_dh": dh,
                           "ch07_tr_docs": int(tr.docs.iloc[0]), "ch07_tr_folds": int(tr.folds.iloc[0]),
                           "ch07_tr_cos_level": COSINE_LEVEL, "ch07_tr_k": NEIGHBOURS,
                           "ch07_tr_overlap_level": 1 - NEIGHBOUR_MARGIN, "ch07_tr_sim_level": SIMILARITY_LEVEL,
                           "ch07_tr_log_factor": LOG_FACTOR}
    out["ch07_tr_full_dev"] = float((1 - full.cos_min).abs().max()) if len(full) else float("nan")
    out["ch07_tr_full_acc_lo"], out["ch07_tr_full_acc_hi"] = float(tr.full_acc.min()), float(tr.full_acc.max())
    out["ch07_tr_cos_r1"] = float(r1.cos_mean.mean())
    out["ch07_tr_acc_r1_lo"], out["ch07_tr_acc_r1_hi"] = float(r1.acc.min()), float(r1.acc.max())
    out["ch07_tr_drop_r1"] = float(-r1["diff"].mean())
    within = tr.groupby("r")["diff"].min() >= -REDUCTION_MARGIN
    out["ch07_tr_acc_first"] = (f"r = {int(within[within].index.min())}" if within.any() else
                                f"no r in the grid ({out['ch07_tr_ranks']})")
    out["ch07_tr_overlap_r1_lo"], out["ch07_tr_overlap_r1_hi"] = float(r1.overlap.min()), float(r1.overlap.max())
    out["ch07_tr_sim_r1_lo"], out["ch07_tr_sim_r1_hi"] = float(r1.sim_corr.min()), float(r1.sim_corr.max())
    red = redundant_ranks(tr)
    out["ch07_trr_points"] = truncation_records([{"n": r.n, "prev": r.prev, "r": r.r_red} for r in red.itertuples()])
    out["ch07_trr_text"] = "; ".join(
        f"n = {r.n}: " + (f"between {r.prev} and {r.r_red} (ln n = {math.log(r.n):.1f})" if r.r_red < dh
                          else f"none below {dh}") for r in red.itertuples())
    if len(lay):
        ln = int(lay.n.iloc[0])
        worst = lay[lay.r == lay.r.min()].sort_values("overlap")
        out["ch07_trl_n"], out["ch07_trl_r"] = ln, int(lay.r.min())
        out["ch07_trl_worst"] = int(worst.layer.iloc[0])
        out["ch07_trl_worst_overlap"] = float(worst.overlap.iloc[0])
        out["ch07_trl_best"] = int(worst.layer.iloc[-1])
        out["ch07_trl_best_overlap"] = float(worst.overlap.iloc[-1])
    else:
        out["ch07_trl_n"] = out["ch07_trl_r"] = out["ch07_trl_worst"] = out["ch07_trl_best"] = 0
        out["ch07_trl_worst_overlap"] = out["ch07_trl_best_overlap"] = float("nan")
    out["ch07_tr_cpu_min"] = float(tr.groupby("n").wall_s.first().sum() / 60)
    return out
