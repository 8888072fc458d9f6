"""Attention ranks in trained models: a pretrained encoder on real text, and our own classifiers.

- :func:`pretrained_ranks`: every head of a Hugging Face encoder (all-MiniLM-L6-v2 in the book)
  on unpadded windows of real text at several sequence lengths, through :func:`lowrank.probe.rank_table`.
- :func:`head_dim_sweep`: the model-reduction experiment of Min & Li. A text classifier is
  trained at each head size d_h (width, heads and layers fixed, so only d_h changes) and seed,
  through :func:`lowrank.sweep.sweep`; for every run the first block's attention is ranked on
  held-out documents, after training and at a fresh initialisation of the same architecture.
- :func:`saturation_point`: where a curve over d_h reaches a given fraction of its rise.

Tolerances follow chapter 01: an ``rtols`` entry of 0 (or None) means the matrix_rank default
max(m, n) eps.
"""
from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import data as _data
from ..models import SequenceClassifier
from ..pretrained import encode_windows
from ..probe import MEASURES, LayerAttention, for_each_layer, rank_table, valid_blocks
from ..progress import progress
from ..sweep import sweep
from ..train import TrainConfig, train

__all__ = ["pretrained_ranks", "argmax_patterns", "classification_batch", "load_classifier", "fresh_classifier",
           "first_block_ranks", "head_dim_sweep", "saturation_point", "saturation_table", "as_rtols"]

SWEEP_EXPERIMENT = "ch07_head_dim_sweep"


def as_rtols(rtols: Sequence[float | None]) -> tuple[float | None, ...]:
    """Chapter convention to rank_report's: 0 (or None) is the default max(m, n) eps."""
    out = tuple(None if (r is None or r == 0) else float(r) for r in rtols)
    if any(r is not None and not 0 < r < 1 for r in out):
        raise ValueError(f"rtols must be in [0, 1), got {list(rtols)!r}")
    return out


def pretrained_ranks(model, tokenizer, corpora: Mapping[str, Sequence[str]], *, seq_lens: Sequence[int],
                     counts: Sequence[int], batch_size: int = 4, seed: int = 0,
                     measures: Sequence[str] = MEASURES, rtols: Sequence[float | None] = (0.0, 1e-6, 1e-3),
                     energies: Sequence[float] = (0.99,)) -> pd.DataFrame:
    """Rank of every head of ``model`` on ``counts[i]`` windows of ``seq_lens[i]`` tokens per corpus.

    Windows come from :func:`lowrank.pretrained.encode_windows` ([CLS] ... [SEP], unpadded); a
    length's windows run through the model ``batch_size`` at a time, so memory holds one layer of
    one batch. Returns the columns of :func:`lowrank.probe.rank_table` plus ``corpus``; ``seq``
    numbers the windows of one (corpus, n).
    """
    if len(seq_lens) != len(counts):
        raise ValueError(f"seq_lens and counts must have the same length, got {len(seq_lens)} and {len(counts)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    device = next(model.parameters()).device
    frames = []
    jobs = [(c, n, k) for c in corpora for n, k in zip(seq_lens, counts)]
    for corpus, n, count in progress(jobs, desc="pretrained ranks"):
        ids = encode_windows(tokenizer, corpora[corpus], n=n, count=count, seed=seed + n)
        for start in range(0, count, batch_size):
            t = rank_table(model, ids[start:start + batch_size].to(device), measures=measures,
                           rtols=as_rtols(rtols), energies=energies)
            t["seq"] += start
            frames.append(t.assign(corpus=corpus))
    return pd.concat(frames, ignore_index=True)


def argmax_patterns(model, batch, *, layers: Sequence[int] | None = None) -> pd.DataFrame:
    """Where each head's queries put their largest attention weight, one row per (layer, head, seq).

    Columns: layer, head, seq, n, hardmax_rank (distinct argmax keys), and the shares of the n
    queries whose argmax key is the first token (``to_first``), the last (``to_last``), the
    query itself (``to_self``), the previous token (``to_prev``) or the next one (``to_next``).
    Positions count real tokens only (padding removed).
    """
    rows: list[pd.DataFrame] = []

    def collect(la: LayerAttention) -> None:
        for seqs, A in valid_blocks(la.probs, la.valid):
            G, h, L, _ = A.shape
            j = A.argmax(-1)  # (G, h, L): key chosen by each query
            i = torch.arange(L, device=j.device)
            hit = torch.zeros(G, h, L, dtype=torch.bool, device=j.device).scatter_(-1, j, True)
            share = {name: (cond.double().mean(-1)).flatten().cpu().numpy() for name, cond in (
                ("to_first", j == 0), ("to_last", j == L - 1), ("to_self", j == i),
                ("to_prev", j == i - 1), ("to_next", j == i + 1))}
            rows.append(pd.DataFrame({
                "layer": la.layer, "head": np.tile(np.arange(h), G), "seq": np.repeat(seqs.numpy(), h),
                "n": L, "hardmax_rank": hit.sum(-1).flatten().cpu().numpy(), **share}))

    for_each_layer(model, batch, collect, layers=layers)
    return pd.concat(rows, ignore_index=True)


@functools.lru_cache(maxsize=8)
def _documents(corpus: str, vocab_size: int, seq_len: int, split: str, split_seed: int, root: str | None):
    docs = _data.load_corpus(corpus, root=root)
    parts = _data.split_documents(docs, seed=split_seed)
    # The same call as the trainer's, so the tokenizer comes from the same cache file.
    tok = _data.train_tokenizer(parts["train"].texts, vocab_size=vocab_size, name=docs.name, root=root)
    return [d for d in _data.encode_documents(tok, parts[split].texts) if len(d) >= seq_len]


def classification_batch(corpus: str = "bbcnews", *, vocab_size: int, seq_len: int, count: int,
                         split: str = "test", split_seed: int = 0, root: str | None = None) -> dict:
    """``{"ids": (count, seq_len + 1)}``: <cls> + the first seq_len tokens of held-out documents.

    The format the trainer's classifier sees; only documents that fill the window are used, so
    the batch needs no padding (n = seq_len + 1 for every sequence).
    """
    docs = _documents(corpus, vocab_size, seq_len, split, split_seed, root)
    if len(docs) < count:
        raise ValueError(f"the {split} split of {corpus!r} has {len(docs)} documents of at least "
                         f"{seq_len} tokens, fewer than count={count}")
    rows = [[_data.CLS] + d[:seq_len] for d in docs[:count]]
    return {"ids": torch.tensor(rows, dtype=torch.long)}


def _classifier(cfg: TrainConfig, state: Mapping[str, torch.Tensor]) -> SequenceClassifier:
    vocab, classes = state["body.tok.weight"].shape[0], state["classifier.weight"].shape[0]
    return SequenceClassifier(cfg.model_config(vocab_size=vocab), classes)


def load_classifier(run_dir: str | Path) -> SequenceClassifier:
    """The classifier a finished :func:`lowrank.train.train` run saved in ``run_dir``, in eval mode."""
    path = Path(run_dir) / "checkpoint.pt"
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}: the run has not saved one")
    state = torch.load(path, map_location="cpu", weights_only=True)
    cfg = TrainConfig.from_dict(state["config"])
    model = _classifier(cfg, state["model"])
    model.load_state_dict(state["model"])
    return model.eval()


def fresh_classifier(run_dir: str | Path, *, seed: int) -> SequenceClassifier:
    """A new draw of the initialisation of the architecture saved in ``run_dir`` (same shapes)."""
    state = torch.load(Path(run_dir) / "checkpoint.pt", map_location="cpu", weights_only=True)
    torch.manual_seed(seed)
    return _classifier(TrainConfig.from_dict(state["config"]), state["model"]).eval()


def first_block_ranks(model, batch, *, rtols, energies=(0.99,)) -> list[dict]:
    """Mean, min and max over heads and sequences of each rank of the first block's attention."""
    t = rank_table(model, batch, layers=[0], rtols=as_rtols(rtols), energies=energies)
    g = t.groupby(["n", "matrix", "measure", "tolerance"])["value"].agg(["mean", "min", "max"])
    return [dict(zip(("n", "matrix", "measure", "tolerance"), k), **{s: float(v) for s, v in row.items()})
            for k, row in g.iterrows()]


def _train_and_probe(config: dict, *, run_dir: Path, probe_count: int, rtols, energies,
                     root: str | None) -> dict:
    res = train(config, out_dir=run_dir, resume=True, progress=False, data_root=root)
    cfg = TrainConfig.from_dict(config)
    batch = classification_batch(cfg.corpus, vocab_size=cfg.vocab_size, seq_len=cfg.seq_len,
                                 count=probe_count, split="test", split_seed=cfg.split_seed, root=root)
    ranks = [dict(r, stage="trained") for r in
             first_block_ranks(load_classifier(run_dir), batch, rtols=rtols, energies=energies)]
    ranks += [dict(r, stage="init") for r in
              first_block_ranks(fresh_classifier(run_dir, seed=cfg.seed), batch, rtols=rtols, energies=energies)]
    metrics = {k: v for k, v in res.items() if k != "config"}
    return {**metrics, "ranks": ranks}


def head_dim_sweep(base: Mapping, *, head_dims: Sequence[int], seeds: Sequence[int], probe_count: int = 16,
                   rtols: Sequence[float | None] = (0.0, 1e-6, 1e-3), energies: Sequence[float] = (0.99,),
                   results_dir: str | Path | None = None, root: str | None = None,
                   show_progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``base`` (a :class:`lowrank.train.TrainConfig` dict) at every head_dim x seed; rank its first block.

    ``results_dir=None`` runs in a temporary folder (every call trains afresh); a folder keeps the
    results store and checkpoints there, so a rerun skips finished runs and a killed one resumes.

    Returns (runs, ranks). runs: one row per run with head_dim, seed, test_acc, val_acc,
    test_n, test_loss, n_params, train_wall_s. ranks: one row per run, stage ("init" / "trained"),
    matrix, measure and tolerance, with n and the mean, min and max over heads and sequences.
    """
    if not head_dims or not seeds:
        raise ValueError("head_dims and seeds must be non-empty")
    configs = [TrainConfig.from_dict({**base, "head_dim": int(d), "seed": int(s)}).to_dict()
               for d in head_dims for s in seeds]
    run_fn = functools.partial(_train_and_probe, probe_count=probe_count, rtols=tuple(rtols),
                               energies=tuple(energies), root=root)
    with tempfile.TemporaryDirectory(prefix="lowrank-ch07-") as tmp:
        where = Path(tmp) if results_dir is None else Path(results_dir)
        table = sweep(configs, experiment=SWEEP_EXPERIMENT, store=where / f"{SWEEP_EXPERIMENT}.jsonl",
                      runs_dir=where / "runs", run_fn=run_fn, progress=show_progress, root=root)
    keep = ["head_dim", "seed", "test_acc", "test_n", "val_acc", "test_loss", "n_params", "train_wall_s"]
    runs = table[keep].copy()
    ranks = pd.DataFrame([{"head_dim": row.head_dim, "seed": row.seed, **r}
                          for row in table.itertuples() for r in row.ranks])
    return runs, ranks


def saturation_point(x: Sequence[float], y: Sequence[float], *, fraction: float = 0.9) -> float:
    """Smallest x whose y reaches ``fraction`` of the way from min(y) to max(y).

    x ascending. For a flat curve (max = min) this is x[0]. Interpreting it needs the rise to be
    larger than the noise in y; report both.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or len(x) == 0:
        raise ValueError(f"x and y must be 1-D and of the same non-zero length, got {x.shape} and {y.shape}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be strictly increasing, got {x.tolist()}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y has non-finite values")
    level = y.min() + fraction * (y.max() - y.min())
    return float(x[np.argmax(y >= level - 1e-12 * max(1.0, abs(level)))])


def saturation_table(curves: Mapping[str, pd.DataFrame], *, fraction: float = 0.9) -> pd.DataFrame:
    """Saturation point of each curve next to its rise and its seed noise.

    ``curves`` maps a name to a frame indexed by d_h (ascending) with columns ``mean`` and
    ``std`` (over seeds). Columns of the result: ``saturates_at`` (:func:`saturation_point` of
    the means), ``rise`` (max - min of the means), ``seed_sd`` (mean of the stds, NaN with one
    seed) and ``rise_over_sd``; a saturation point means little where rise_over_sd is small.
    """
    rows = {}
    for name, c in curves.items():
        if not {"mean", "std"} <= set(c.columns):
            raise ValueError(f"curve {name!r} needs columns 'mean' and 'std', got {list(c.columns)}")
        m = c["mean"]
        sd = float(c["std"].mean()) if c["std"].notna().any() else float("nan")
        rise = float(m.max() - m.min())
        rows[name] = {"saturates_at": saturation_point(c.index, m, fraction=fraction), "rise": rise,
                      "seed_sd": sd, "rise_over_sd": rise / sd if sd > 0 else float("nan")}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("curve")
