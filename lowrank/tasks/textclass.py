"""Topic classification of BBC News articles: the book's analogue of Min & Li's IMDB experiment.

The model is the package's :class:`lowrank.layers.models.SequenceClassifier` (token and learned
position embeddings, ``n_layers`` encoder blocks on :class:`lowrank.layers.attention.MultiHeadAttention`
with an independent head size d_h, a tanh pooler on the first token, a linear classifier), at a
fixed width ``d_model`` with ``head_dim`` as the knob.

Data: a labelled corpus of :mod:`lowrank.data.corpora` (default ``bbcnews``: 2,225 articles, 5 topics),
split by document with a seeded permutation (:func:`lowrank.data.corpora.split_documents`; train,
validation and test fractions from the config), a byte-level BPE trained on the training split,
each document encoded as ``<cls>`` followed by its first ``seq_len`` tokens and padded with
``<pad>`` to ``seq_len + 1``. Padding keys are masked in every layer.

:func:`train_text` trains one :class:`TextConfig` with the schedule of :mod:`lowrank.tasks.plateau`
(warm-up, constant rate until the validation loss stalls, decay; not the training engine
:func:`lowrank.train.train`, whose cosine schedule runs a fixed number of steps and cannot stop at a
plateau) and reports test accuracy with its standard error over documents and the first block's
attention ranks on held-out documents. Ranks are taken among real tokens only: for a document
with L real tokens (``<cls>`` included) the probe keeps the L x L block of rows and columns at
real tokens (:func:`lowrank.probes.probe.valid_blocks`); the masked softmax gives padding keys zero
weight, so that block is itself row-stochastic.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F

from ..data import corpora as _data
from ..layers.models import SequenceClassifier, TransformerConfig
from ..core.params import Choice, Float, Int, Param, ParameterError, Str
from .plateau import PlateauConfig, accuracy_record, block_hardmax_ranks, first_block_ranks, train_to_plateau
from ..train.tasks import seed_of

__all__ = ["TextConfig", "TextSplits", "load_text_splits", "build_model", "train_text", "text_run"]


@dataclass(frozen=True, kw_only=True)
class TextConfig(PlateauConfig):
    """One text-classification run. ``to_dict()`` is the content of its run key."""
    head_dim: int                  # d_h: query/key/value size of every head
    corpus: str = "bbcnews"        # a labelled corpus name of lowrank.data.corpora, or a local folder
    vocab_size: int = 2048         # BPE vocabulary
    seq_len: int = 128             # tokens kept per document (after <cls>)
    d_model: int = 64
    n_layers: int = 1
    n_heads: int = 4
    d_ff: int = 128
    norm: str = "pre"
    dropout: float = 0.1
    split_seed: int = 0
    val_fraction: float = 0.1
    test_fraction: float = 0.2
    rank_documents: int = 32       # held-out (test) documents whose first-block attention is ranked
    # The schedule's defaults for BBC News: the training loss is near zero after a few epochs
    # (50 steps each) and the validation loss turns up soon after, so it is checked often and the
    # stop can come early; dropout slows the memorising.
    batch_size: int = 32
    eval_every: int = 25
    min_steps: int = 300
    max_steps: int = 2000
    patience: int = 4

    SCHEMA: ClassVar[dict[str, Param]] = {
        **PlateauConfig.SCHEMA, "head_dim": Int(1, 4096), "corpus": Str(), "vocab_size": Int(260, 1 << 20),
        "seq_len": Int(1, 65535), "d_model": Int(1, 4096), "n_layers": Int(1, 64), "n_heads": Int(1, 256),
        "d_ff": Int(1, 65536), "norm": Choice("pre", "post"), "dropout": Float(0.0, 0.9), "split_seed": Int(0),
        "val_fraction": Float(0.01, 0.5), "test_fraction": Float(0.01, 0.5), "rank_documents": Int(1, 100_000),
    }

    def check(self) -> None:
        if self.val_fraction + self.test_fraction >= 0.9:
            raise ParameterError(f"val_fraction + test_fraction = {self.val_fraction + self.test_fraction:g} "
                                 "must be below 0.9, to leave documents to train on")

    @property
    def fractions(self) -> tuple[float, float, float]:
        return (1.0 - self.val_fraction - self.test_fraction, self.val_fraction, self.test_fraction)


@dataclass
class TextSplits:
    """Token ids (N, seq_len + 1) int64 (``<cls>`` first, ``<pad>`` after the text) and labels (N,)."""
    corpus: str
    ids: dict[str, torch.Tensor]
    labels: dict[str, torch.Tensor]
    vocab_size: int
    label_names: list[str]

    def split(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        if name not in self.ids:
            raise ValueError(f"split must be 'train', 'validation' or 'test', got {str(name)[:40]!r}")
        return self.ids[name], self.labels[name]


@functools.lru_cache(maxsize=4)
def _splits(corpus: str, vocab_size: int, seq_len: int, fractions: tuple, split_seed: int, root) -> TextSplits:
    docs = _data.load_corpus(corpus, root=root)
    if not docs.labels:
        raise ValueError(f"text classification needs a labelled corpus; {docs.name!r} has no labels")
    parts = _data.split_documents(docs, fractions=fractions, seed=split_seed)
    tok = _data.train_tokenizer(parts["train"].texts, vocab_size=vocab_size, name=docs.name, root=root)
    ids, labels = {}, {}
    for split, part in parts.items():
        rows = torch.full((len(part), seq_len + 1), _data.PAD, dtype=torch.long)
        for i, doc in enumerate(_data.encode_documents(tok, part.texts)):
            row = [_data.CLS] + doc[:seq_len]
            rows[i, :len(row)] = torch.tensor(row)
        ids[split], labels[split] = rows, torch.tensor(part.labels)
    return TextSplits(docs.name, ids, labels, tok.get_vocab_size(), list(docs.label_names))


def load_text_splits(cfg: TextConfig, *, root=None) -> TextSplits:
    """The config's corpus split, tokenised and padded; cached in the process (do not modify)."""
    return _splits(cfg.corpus, cfg.vocab_size, cfg.seq_len, cfg.fractions, cfg.split_seed,
                   None if root is None else str(root))


def build_model(cfg: TextConfig, *, vocab_size: int, n_classes: int) -> SequenceClassifier:
    body = TransformerConfig(vocab_size=vocab_size, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                             head_dim=cfg.head_dim, d_ff=cfg.d_ff, max_len=cfg.seq_len + 1, dropout=cfg.dropout,
                             causal=False, norm=cfg.norm)
    return SequenceClassifier(body, n_classes)


@torch.no_grad()
def _logits(model, ids: torch.Tensor, chunk: int = 64) -> torch.Tensor:
    was = model.training
    model.eval()
    out = torch.cat([model(ids[i:i + chunk], pad_mask=ids[i:i + chunk] != _data.PAD)[0]
                     for i in range(0, len(ids), chunk)])
    model.train(was)
    return out


def train_text(config: dict | TextConfig, *, threads: int | None = None, data: TextSplits | None = None,
               root=None) -> dict:
    """Train one run to its validation plateau; return its record, test accuracy and ranks.

    The record has the fields of :func:`lowrank.tasks.vision.train_vit` (plateau, ``test_acc``,
    ``test_acc_se`` over documents, ``test_loss``, first-block ranks averaged over heads and the
    first ``rank_documents`` test documents, real tokens only) and ``rank_mean_tokens``, the
    mean number L of real tokens of the ranked documents. Seeds as in ``train_vit``: the batch of
    step s (drawn with replacement) from seed_of(seed, s, 1), initialisation from seed_of(seed, 0, 0).
    """
    cfg = config if isinstance(config, TextConfig) else TextConfig.from_dict(dict(config))
    if threads:
        torch.set_num_threads(threads)
    data = data or load_text_splits(cfg, root=root)
    ids_train, y_train = data.split("train")
    ids_val, y_val = data.split("validation")
    torch.manual_seed(seed_of(cfg.seed, 0, 0))
    model = build_model(cfg, vocab_size=data.vocab_size, n_classes=len(data.label_names))

    def train_loss(step: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed_of(cfg.seed, step, 1))
        idx = torch.randint(len(ids_train), (cfg.batch_size,), generator=g)
        torch.manual_seed(seed_of(cfg.seed, step, 4))  # dropout stream of this step
        ids = ids_train[idx]
        return model(ids, y_train[idx], pad_mask=ids != _data.PAD)[1]

    def val_loss() -> float:
        return float(F.cross_entropy(_logits(model, ids_val), y_val))

    out = train_to_plateau(model, cfg, train_loss=train_loss, val_loss=val_loss)
    out.update(accuracy_record(_logits(model, ids_val), y_val, "val"))
    ids_test, y_test = data.split("test")
    out.update(accuracy_record(_logits(model, ids_test), y_test, "test"))
    t0 = time.perf_counter()
    held = ids_test[:cfg.rank_documents]
    batches = [{"ids": held[i:i + 8], "pad_mask": held[i:i + 8] != _data.PAD} for i in range(0, len(held), 8)]
    out.update(first_block_ranks(model, batches, rtol=cfg.rank_rtol))
    out["layer_hardmax_rank"] = block_hardmax_ranks(model, batches, n_layers=cfg.n_layers)
    out.update({"rank_s": time.perf_counter() - t0, "n_params": int(sum(p.numel() for p in model.parameters())),
                "vocab_size_used": data.vocab_size})
    return out


def text_run(config: dict, *, run_dir: Path | None = None) -> dict:
    """:func:`train_text` as a :func:`lowrank.stores.sweep.sweep` run function (no checkpoint: a run takes
    minutes, and an interrupted sweep re-trains it to the same result)."""
    return train_text(config)
