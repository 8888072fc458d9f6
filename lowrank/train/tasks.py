"""Batches and losses of the three tasks (causal LM, masked LM, classification), each a function of
(seed, step, rank) so that a resumed run draws exactly what an uninterrupted one would."""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..data import corpora as _data
from ..layers.models import IGNORE_INDEX, CausalLM, MaskedLM, SequenceClassifier, mask_tokens
from .config import TrainConfig

__all__ = ["seed_of", "Task"]


def seed_of(*parts: int) -> int:
    # A fixed mixing of integers into a 63-bit seed; independent of Python's hash salt.
    h = 1469598103934665603
    for p in parts:
        h = ((h ^ (int(p) & 0xFFFFFFFFFFFF)) * 1099511628211) % (1 << 63)
    return h


@functools.lru_cache(maxsize=8)
def _lm_tokens(corpus: str, vocab_size: int, split_seed: int, root: str | None):
    return _data.prepare_lm(corpus, vocab_size=vocab_size, split_seed=split_seed, root=root)


@functools.lru_cache(maxsize=4)
def _class_data(corpus: str, vocab_size: int, split_seed: int, seq_len: int, root: str | None):
    docs = _data.load_corpus(corpus, root=root)
    if not docs.labels:
        raise ValueError(f"task 'classify' needs a labelled corpus; {docs.name!r} has no labels")
    parts = _data.split_documents(docs, seed=split_seed)
    tok = _data.train_tokenizer(parts["train"].texts, vocab_size=vocab_size, name=docs.name, root=root)
    out = {}
    for split, part in parts.items():
        ids = torch.full((len(part), seq_len + 1), _data.PAD, dtype=torch.long)
        for i, doc in enumerate(_data.encode_documents(tok, part.texts)):
            row = [_data.CLS] + doc[:seq_len]
            ids[i, :len(row)] = torch.tensor(row)
        out[split] = (ids, torch.tensor(part.labels))
    return out, tok.get_vocab_size(), len(docs.label_names)


class Task:
    """Batches and losses for one task. A batch is a dict of tensors; ``loss_sum`` returns
    (sum of losses, number of predictions, number of correct predictions)."""

    def __init__(self, cfg: TrainConfig, root: str | None):
        self.cfg = cfg
        if cfg.task == "classify":
            self.data, self.vocab_size, self.n_classes = _class_data(
                cfg.corpus, cfg.vocab_size, cfg.split_seed, cfg.seq_len, root)
        else:
            self.tokens = _lm_tokens(str(cfg.corpus), cfg.vocab_size, cfg.split_seed, root)
            self.vocab_size = self.tokens.vocab_size
            if len(self.tokens.train) < cfg.seq_len + 2:
                raise ValueError(f"training split has {len(self.tokens.train)} tokens, fewer than "
                                 f"seq_len + 2 = {cfg.seq_len + 2}")

    def build_model(self) -> torch.nn.Module:
        mcfg = self.cfg.model_config(vocab_size=self.vocab_size)
        if self.cfg.task == "lm":
            return CausalLM(mcfg)
        if self.cfg.task == "mlm":
            return MaskedLM(mcfg)
        return SequenceClassifier(mcfg, self.n_classes)

    def _mlm(self, x: torch.Tensor, seeds: list[int]) -> dict:
        # One generator per sequence, so a sequence's mask does not depend on how the batch
        # is split across processes.
        rows = [mask_tokens(row[None], vocab_size=self.vocab_size, mask_id=_data.MASK,
                            special_ids=(_data.PAD, _data.EOS), prob=self.cfg.mlm_prob,
                            generator=torch.Generator().manual_seed(s)) for row, s in zip(x, seeds)]
        return {"ids": torch.cat([r[0] for r in rows]), "labels": torch.cat([r[1] for r in rows])}

    def train_batch(self, step: int, rank: int, world: int) -> dict:
        """The rank's slice of the global batch of ``step``; the global batch depends only on
        (seed, step), so it is the same whatever the number of processes."""
        cfg = self.cfg
        g = torch.Generator().manual_seed(seed_of(cfg.seed, step, 1))
        per = cfg.batch_size // world
        sl = slice(rank * per, (rank + 1) * per)
        if cfg.task == "classify":
            ids, labels = self.data["train"]
            idx = torch.randint(len(ids), (cfg.batch_size,), generator=g)[sl]
            return {"ids": ids[idx, :cfg.seq_len + 1], "labels": labels[idx]}
        stream = self.tokens.train
        n = cfg.seq_len
        start = torch.randint(len(stream) - n - 1, (cfg.batch_size,), generator=g)
        rows = range(cfg.batch_size)[sl]
        win = torch.stack([stream[s:s + n + 1] for s in start[sl].tolist()]).long()
        if cfg.task == "lm":
            return {"ids": win[:, :-1], "labels": win[:, 1:]}
        return self._mlm(win[:, :-1], [seed_of(cfg.seed, step, 2, r) for r in rows])

    def eval_batches(self, split: str, max_tokens: int | None, rank: int, world: int):
        """Fixed evaluation batches of a split (the rank's share of them)."""
        cfg = self.cfg
        if cfg.task == "classify":
            ids, labels = self.data[split]
            n_docs = len(ids) if max_tokens is None else max(1, min(len(ids), max_tokens // cfg.seq_len))
            idx = torch.arange(n_docs)[rank::world]
            for b in range(0, len(idx), cfg.batch_size):
                j = idx[b:b + cfg.batch_size]
                yield {"ids": ids[j], "labels": labels[j]}
            return
        stream = self.tokens.split(split)
        n = cfg.seq_len
        total = (len(stream) - 1) // n
        if total < 1:
            raise ValueError(f"{split} split has {len(stream)} tokens, fewer than seq_len + 1 = {n + 1}")
        # Non-overlapping windows; a budget takes evenly spaced ones so every document counts.
        n_win = total if max_tokens is None else max(1, min(total, max_tokens // n))
        wins = torch.linspace(0, total - 1, n_win).round().long().unique().tolist()[rank::world]
        for b in range(0, len(wins), cfg.batch_size):
            chunk = wins[b:b + cfg.batch_size]
            win = torch.stack([stream[i * n:i * n + n + 1] for i in chunk]).long()
            if cfg.task == "lm":
                yield {"ids": win[:, :-1], "labels": win[:, 1:]}
            else:
                yield self._mlm(win[:, :-1], [seed_of(cfg.seed, i, 3) for i in chunk])

    def loss_sum(self, model, batch: dict, *, count_correct: bool = True):
        """``count_correct=False`` returns None for the correct count: training never reads it,
        and the argmax over the vocabulary costs a few per cent of a small model's step."""
        ids, labels = batch["ids"], batch["labels"]
        if self.cfg.task == "classify":
            pad_mask = ids != _data.PAD
            logits, _ = model(ids, pad_mask=pad_mask)
            loss = F.cross_entropy(logits.float(), labels, reduction="sum")
            correct = (logits.argmax(-1) == labels).sum() if count_correct else None
            return loss, labels.numel(), correct
        logits, _ = model(ids)
        flat, lab = logits.flatten(0, 1).float(), labels.flatten()
        loss = F.cross_entropy(flat, lab, ignore_index=IGNORE_INDEX, reduction="sum")
        keep = lab != IGNORE_INDEX
        correct = ((flat.argmax(-1) == lab) & keep).sum() if count_correct else None
        return loss, int(keep.sum()), correct

