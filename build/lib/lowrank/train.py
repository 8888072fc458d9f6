"""Training loop: one process or ``torchrun`` (DDP), atomic checkpoints, exact resume.

``train(config, out_dir=...)`` trains one model and returns its final metrics. The same code
runs under ``torchrun --nproc_per_node N -m lowrank.train --config cfg.json``: every process
takes its slice of the global batch, DDP averages the gradients, rank 0 writes the files.

Reproducibility comes from making every random draw a function of (seed, step, rank): the
batch of step s, the dropout stream of step s and the MLM masks of step s are all seeded from
those numbers, and the learning rate is a pure function of the step. A checkpoint therefore
needs only the step, the model and the optimiser state, and a run killed at any point and
resumed with ``resume=True`` ends with exactly the metrics of an uninterrupted run (same
seed, same machine, same number of processes).

Files in ``out_dir``: ``config.json``; ``metrics.jsonl`` (one JSON object per logged train
interval, evaluation and the final test); ``checkpoint.pt`` (written to a temporary file and
renamed, loaded with ``weights_only=True``); ``result.json`` when the run has finished.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import functools
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from .progress import tqdm

from . import data as _data
from .models import (IGNORE_INDEX, CausalLM, MaskedLM, SequenceClassifier, TransformerConfig,
                     count_parameters, mask_tokens)

__all__ = ["TrainConfig", "NonFiniteLossError", "CheckpointError", "train", "lr_at", "run_key", "main"]

TASKS = ("lm", "mlm", "classify")
SCHEDULES = ("cosine", "inverse_sqrt", "constant")


class NonFiniteLossError(RuntimeError):
    """The loss (or gradient norm) became NaN or infinite; the last good checkpoint is kept."""


@dataclass
class TrainConfig:
    """Everything that determines a run. ``batch_size`` is the global batch (all processes)."""
    task: str = "lm"                 # 'lm' (causal), 'mlm' (BERT masking) or 'classify'
    corpus: str = "shakespeare"      # corpus name or local path (see lowrank.data)
    vocab_size: int = 1024           # BPE vocabulary size
    split_seed: int = 0              # seed of the document split
    seq_len: int = 64                # tokens per sequence n
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int | None = None      # None: standard d_model / n_heads; int: fixed head size d_p
    d_ff: int | None = None          # None: 4 * d_model
    dropout: float = 0.0
    norm: str = "post"
    tie_embeddings: bool = True
    init: str = "bert"               # 'bert' (trunc-normal 0.02) or 'scaled' (residual outputs by fan-in and depth)
    batch_size: int = 16
    steps: int = 200
    lr: float = 1e-3
    warmup_steps: int = 20
    schedule: str = "cosine"         # after warm-up: 'cosine', 'inverse_sqrt' or 'constant'
    min_lr_ratio: float = 0.1        # cosine floor as a fraction of lr
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    grad_clip: float = 1.0           # max global grad norm; 0 disables clipping
    eval_interval: int = 50          # steps between validation evaluations; 0: only at the end
    eval_tokens: int = 16384         # validation tokens (or docs * seq_len) per interval evaluation
    test_tokens: int | None = None   # tokens of the final validation/test evaluation; None: all
    log_interval: int = 10
    checkpoint_every: int = 100      # steps between checkpoints; 0: only at the end
    mlm_prob: float = 0.15
    seed: int = 0
    device: str = "auto"             # 'auto', 'cpu', 'cuda'
    compile: bool = False            # torch.compile the model (CUDA)
    num_threads: int | None = None   # torch CPU threads; None leaves torch's default

    def __post_init__(self):
        for f in fields(self):  # types first, so a string "64" is named, not a TypeError later
            v, kind = getattr(self, f.name), str(f.type)
            optional = "None" in kind
            if v is None and optional:
                continue
            base = kind.split("|")[0].strip()
            ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
                  "float": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x),
                  "bool": lambda x: isinstance(x, bool),
                  "str": lambda x: isinstance(x, str)}.get(base, lambda x: True)(v)
            if not ok:
                raise ValueError(f"{f.name} must be {'an' if base == 'int' else 'a'} {base}"
                                 f"{' or None' if optional else ''}, got {_short(v)}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("steps", "batch_size", "seq_len", "vocab_size", "eval_tokens", "log_interval"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("warmup_steps", "eval_interval", "checkpoint_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        self.model_config(vocab_size=max(self.vocab_size, 1))  # shape errors surface now

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown training config key(s) {unknown}; allowed: {sorted(known)}")
        return cls(**d)

    def to_dict(self) -> dict:
        """Every field, except ``init`` when it is the default 'bert': the run key of every
        config written before ``init`` existed stays what it was (stored runs stay valid)."""
        d = asdict(self)
        if d["init"] == "bert":
            del d["init"]
        return d

    def model_config(self, *, vocab_size: int) -> TransformerConfig:
        return TransformerConfig(
            vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
            head_dim=self.head_dim, d_ff=self.d_ff, max_len=self.seq_len + (1 if self.task == "classify" else 0),
            dropout=self.dropout, causal=self.task == "lm", norm=self.norm,
            tie_embeddings=self.tie_embeddings, init=self.init)


def _short(value, limit: int = 80) -> str:
    """A repr of user input that never grows beyond ``limit`` characters."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 3, 6, 6, limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be read; the message names it and what to do."""


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimiser update ``step`` (1-based): linear warm-up, then decay."""
    w = cfg.warmup_steps
    if w and step <= w:
        return cfg.lr * step / w
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "inverse_sqrt":
        return cfg.lr * math.sqrt(max(w, 1) / step)
    progress = (step - w) / max(1, cfg.steps - w)
    floor = cfg.min_lr_ratio
    return cfg.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


# --- data for the three tasks ---------------------------------------------------------------

def _seed(*parts: int) -> int:
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


class _Task:
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
        g = torch.Generator().manual_seed(_seed(cfg.seed, step, 1))
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
        return self._mlm(win[:, :-1], [_seed(cfg.seed, step, 2, r) for r in rows])

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
                yield self._mlm(win[:, :-1], [_seed(cfg.seed, i, 3) for i in chunk])

    def loss_sum(self, model, batch: dict):
        ids, labels = batch["ids"], batch["labels"]
        if self.cfg.task == "classify":
            pad_mask = ids != _data.PAD
            logits, _ = model(ids, pad_mask=pad_mask)
            loss = F.cross_entropy(logits.float(), labels, reduction="sum")
            correct = (logits.argmax(-1) == labels).sum()
            return loss, labels.numel(), correct
        logits, _ = model(ids)
        flat, lab = logits.flatten(0, 1).float(), labels.flatten()
        loss = F.cross_entropy(flat, lab, ignore_index=IGNORE_INDEX, reduction="sum")
        keep = lab != IGNORE_INDEX
        correct = ((flat.argmax(-1) == lab) & keep).sum()
        return loss, int(keep.sum()), correct


# --- the loop -------------------------------------------------------------------------------

def _dist_setup(device_pref: str):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if device_pref == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch sees no CUDA device; use 'auto' or 'cpu'")
    use_cuda = device_pref == "cuda" or (device_pref == "auto" and torch.cuda.is_available())
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
        created = True
    else:
        created = False
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    return rank, world, device, created


def _all_sum(values: list[float], world: int, device) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(t)
    return t.tolist()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


@torch.no_grad()
def _evaluate(task: _Task, model, split: str, max_tokens, rank, world, device, autocast) -> dict:
    was_training = model.training
    model.eval()
    loss = count = correct = 0.0
    for batch in task.eval_batches(split, max_tokens, rank, world):
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast():
            l, c, k = task.loss_sum(model, batch)
        loss, count, correct = loss + float(l), count + c, correct + float(k)
    loss, count, correct = _all_sum([loss, count, correct], world, device)
    model.train(was_training)
    mean = loss / max(count, 1)
    out = {"loss": mean, "acc": correct / max(count, 1), "n": int(count)}
    if task.cfg.task != "classify":
        out["ppl"] = math.exp(min(mean, 50.0))
    return out


def _read_metrics(path: Path, upto_step: int) -> list[str]:
    if not path.is_file():
        return []
    keep = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill
        if rec.get("split") in ("train", "validation") and rec.get("step", 0) <= upto_step:
            keep.append(line)
    return keep


def train(config: TrainConfig | dict, *, out_dir: str | os.PathLike, resume: bool = False,
          progress: bool = True, stop_after: int | None = None, callbacks=(),
          data_root: str | os.PathLike | None = None) -> dict:
    """Train one model; return its final metrics (validation and test loss / ppl / acc) and,
    from rank 0, its curves: ``train_curve`` and ``val_curve`` as [step, loss] pairs.

    Args:
        config: a :class:`TrainConfig` or its dict.
        out_dir: folder for config.json, metrics.jsonl, checkpoint.pt and result.json.
        resume: continue from ``out_dir/checkpoint.pt`` if there is one (a finished run
            returns its stored result); otherwise the folder is started afresh.
        progress: tqdm bar with loss and tokens/s (rank 0 only).
        stop_after: stop after this global step without saving, as a kill would; returns
            ``{"finished": False, "step": ...}``. For tests of ``resume``.
        callbacks: functions ``f(step, model)`` called after every optimiser update.
        data_root: data folder for corpora and tokenizers (default: see lowrank.data).

    Raises:
        NonFiniteLossError: the loss or gradient norm became non-finite; names the step
            and keeps the last good checkpoint.
    """
    cfg = config if isinstance(config, TrainConfig) else TrainConfig.from_dict(dict(config))
    out = Path(out_dir)
    rank, world, device, created = _dist_setup(cfg.device)
    try:
        return _train(cfg, out, resume, progress, stop_after, callbacks,
                      None if data_root is None else str(data_root), rank, world, device)
    finally:
        if created:
            dist.destroy_process_group()


def _train(cfg, out, resume, progress, stop_after, callbacks, root, rank, world, device) -> dict:
    if cfg.batch_size % world:
        raise ValueError(f"batch_size={cfg.batch_size} must be divisible by the number of processes {world}")
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    ckpt_path, metrics_path, result_path = out / "checkpoint.pt", out / "metrics.jsonl", out / "result.json"
    if resume and result_path.is_file():
        done = json.loads(result_path.read_text())
        if done.get("config") == cfg.to_dict():
            return done
    task = _Task(cfg, root)
    torch.manual_seed(_seed(cfg.seed, 0, 0))
    model = task.build_model().to(device)
    n_params = count_parameters(model)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=device.type == "cuda")
    start, run_loss, run_n = 0, 0.0, 0
    if resume and ckpt_path.is_file():
        try:
            state = torch.load(ckpt_path, map_location=device, weights_only=True)
            if not (isinstance(state, dict) and {"config", "model", "optimizer", "step"} <= set(state)):
                raise ValueError("not a lowrank training checkpoint")
        except Exception as e:
            raise CheckpointError(
                f"checkpoint {ckpt_path} cannot be read ({type(e).__name__}: {_clip(e, 160)}); "
                "it is truncated or not a checkpoint: delete it to restart the run from step 0, or "
                "choose another out_dir") from e
        if state["config"] != cfg.to_dict():
            raise ValueError(f"checkpoint {ckpt_path} was written for a different config; "
                             "use a new out_dir or resume=False")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = int(state["step"])
        run_loss, run_n = float(state["run_loss"]), int(state["run_n"])
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(out / "config.json", json.dumps(cfg.to_dict(), indent=1) + "\n")
        kept = _read_metrics(metrics_path, start) if start else []
        _atomic_write_text(metrics_path, "".join(line + "\n" for line in kept))
        if not resume:  # train(resume=False) starts afresh; the command line refuses a used folder
            for stale in (ckpt_path, result_path):
                stale.unlink(missing_ok=True)
    if world > 1:
        dist.barrier()

    net = model
    if cfg.compile:
        net = torch.compile(net)
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            net, device_ids=[device.index] if device.type == "cuda" else None)
    autocast = (functools.partial(torch.autocast, "cuda", dtype=torch.bfloat16)
                if device.type == "cuda" else contextlib.nullcontext)
    log = open(metrics_path, "a") if rank == 0 else None

    def write(rec: dict) -> None:
        if log is not None:
            log.write(json.dumps(rec) + "\n")
            log.flush()

    def save(step: int) -> None:
        if rank == 0:
            _atomic_save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                          "run_loss": run_loss, "run_n": run_n, "config": cfg.to_dict()}, ckpt_path)
        if world > 1:
            dist.barrier()

    last_good = start if ckpt_path.is_file() else None
    tokens_per_step = cfg.batch_size * cfg.seq_len
    bar = tqdm(total=cfg.steps, initial=start, disable=not progress or rank != 0,
               desc=f"train {cfg.task} h={cfg.n_heads} d_h={cfg.model_config(vocab_size=task.vocab_size).head_size}",
               leave=False)
    t0 = t_log = time.perf_counter()
    net.train()
    try:
        for step in range(start + 1, cfg.steps + 1):
            for g in opt.param_groups:
                g["lr"] = lr_at(step, cfg)
            torch.manual_seed(_seed(cfg.seed, step, 4, rank))  # dropout stream of this step
            batch = {k: v.to(device) for k, v in task.train_batch(step, rank, world).items()}
            with autocast():
                loss_sum, count, _ = task.loss_sum(net, batch)
            total = _all_sum([float(count)], world, device)[0]
            # Sum over the global batch / global count; DDP averages gradients over processes,
            # so scaling by world makes the update equal to a single process's on the whole batch.
            (loss_sum * world / total).backward()
            gnorm = (torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                     if cfg.grad_clip > 0 else torch.tensor(0.0))
            step_loss = _all_sum([float(loss_sum.detach()), float(gnorm)], world, device)
            loss_val, gnorm_val = step_loss[0] / total, step_loss[1] / world
            if not (math.isfinite(loss_val) and math.isfinite(gnorm_val)):
                kept = (f"the last good checkpoint (step {last_good}) is kept at {ckpt_path}"
                        if last_good is not None else "no checkpoint had been written yet")
                write({"step": step, "split": "error", "loss": None, "message": "non-finite"})
                raise NonFiniteLossError(
                    f"non-finite training {'loss' if not math.isfinite(loss_val) else 'gradient norm'} "
                    f"({loss_val if not math.isfinite(loss_val) else gnorm_val}) at step {step}; "
                    f"training stopped, {kept}")
            opt.step()
            opt.zero_grad(set_to_none=True)
            for cb in callbacks:
                cb(step, model)
            run_loss, run_n = run_loss + loss_val, run_n + 1
            if step % cfg.log_interval == 0 or step == cfg.steps:
                now = time.perf_counter()
                tps = run_n * tokens_per_step / max(now - t_log, 1e-9)
                write({"step": step, "split": "train", "loss": run_loss / run_n, "lr": lr_at(step, cfg),
                       "grad_norm": gnorm_val, "tokens_per_s": tps})
                bar.set_postfix(loss=f"{run_loss / run_n:.3f}", tok_s=f"{tps:,.0f}")
                t_log, run_loss, run_n = now, 0.0, 0
            if cfg.eval_interval and step % cfg.eval_interval == 0 and step < cfg.steps:
                ev = _evaluate(task, model, "validation", cfg.eval_tokens, rank, world, device, autocast)
                write({"step": step, "split": "validation", **ev})
            bar.update(1)
            if stop_after is not None and step >= stop_after and step < cfg.steps:
                return {"finished": False, "step": step}
            if (cfg.checkpoint_every and step % cfg.checkpoint_every == 0) or step == cfg.steps:
                save(step)
                last_good = step
    finally:
        bar.close()
        if log is not None:
            log.close()

    wall = time.perf_counter() - t0
    val = _evaluate(task, model, "validation", cfg.test_tokens, rank, world, device, autocast)
    test = _evaluate(task, model, "test", cfg.test_tokens, rank, world, device, autocast)
    result = {"finished": True, "steps": cfg.steps, "n_params": n_params, "n_processes": world,
              **{f"val_{k}": v for k, v in val.items()}, **{f"test_{k}": v for k, v in test.items()},
              "train_wall_s": wall, "tokens_per_s": (cfg.steps - start) * tokens_per_step / max(wall, 1e-9),
              "config": cfg.to_dict()}
    if rank == 0:
        with open(metrics_path, "a") as f:
            f.write(json.dumps({"step": cfg.steps, "split": "final_validation", **val}) + "\n")
            f.write(json.dumps({"step": cfg.steps, "split": "test", **test}) + "\n")
        logged = [json.loads(line) for line in metrics_path.read_text().splitlines()]
        result["train_curve"] = [[r["step"], r["loss"]] for r in logged if r["split"] == "train"]
        result["val_curve"] = [[r["step"], r["loss"]] for r in logged
                               if r["split"] in ("validation", "final_validation")]
        _atomic_write_text(result_path, json.dumps(result, indent=1) + "\n")
    return result


def _last_step(metrics: Path) -> int | None:
    """The last logged step of a run folder's metrics.jsonl, or None."""
    try:
        lines = metrics.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def run_key(config: dict) -> str:
    """16 hex digits of the sha256 of the canonical JSON of the full config (seed included)."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.train --config cfg.json [--out-dir DIR] [--resume]`` (also under torchrun).

    Exit status 0 done; 2 the input was refused (config file missing or unreadable, unknown key,
    bad value, a used ``--out-dir`` without ``--resume``, an unreadable checkpoint), one line on
    stderr, nothing written; 1 the run failed (non-finite loss: the last good checkpoint is kept).
    ``--debug`` adds the Python traceback.
    """
    p = argparse.ArgumentParser(prog="python -m lowrank.train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="JSON file with TrainConfig fields")
    p.add_argument("--out-dir", default=None,
                   help="run folder (default runs/<config hash>); a folder holding files is refused "
                        "unless --resume")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p.add_argument("--data-root", default=None, help="data folder (default $LOWRANK_DATA or ./data)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    args = p.parse_args(argv)

    def refuse(message: str, status: int = 2) -> int:
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"python -m lowrank.train: error: {message}", file=sys.stderr)
        return status

    path = Path(args.config)
    try:
        text = path.read_text(encoding="utf8")
    except IsADirectoryError:
        return refuse(f"--config {path}: is a folder; expected a JSON file of TrainConfig fields")
    except FileNotFoundError:
        return refuse(f"--config {path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        return refuse(f"--config {path}: cannot be read as UTF-8 text ({type(e).__name__})")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        return refuse(f"--config {path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})")
    if not isinstance(raw, dict):
        return refuse(f"--config {path}: expected a JSON object of TrainConfig fields, got "
                      f"{type(raw).__name__}")
    try:
        cfg = TrainConfig.from_dict(raw)
    except (ValueError, TypeError) as e:
        return refuse(f"--config {path}: {_clip(e)}")
    if args.out_dir is None:
        args.out_dir = str(Path("runs") / run_key(cfg.to_dict()))
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        return refuse(f"--out-dir {out}: is a file; expected a run folder")
    if not args.resume and out.is_dir() and any(out.iterdir()):
        held = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        return refuse(f"--out-dir {out} is not empty ({held}); nothing was changed: pass --resume to "
                      "continue the run there, or choose an empty or new folder")
    try:
        result = train(cfg, out_dir=out, resume=args.resume, progress=not args.no_progress,
                       data_root=args.data_root)
    except CheckpointError as err:
        return refuse(str(err))
    except NonFiniteLossError as err:
        return refuse(f"the run failed: {err}", status=1)
    except _data.DataUnavailableError as err:
        return refuse(str(err))
    except ValueError as err:  # a corpus path, a vocabulary or a checkpoint that does not fit
        return refuse(_clip(err, 400))
    except KeyboardInterrupt:
        print("python -m lowrank.train: interrupted; resume with --resume (the last checkpoint is kept)",
              file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - a failure inside the run (out of memory, a dead worker)
        last = _last_step(out / "metrics.jsonl")
        return refuse(f"the run failed{f' after step {last}' if last is not None else ''}: "
                      f"{type(err).__name__}: {_clip(err, 300)} (--debug shows the traceback; "
                      "--resume continues from the last checkpoint)", status=1)
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: v for k, v in result.items() if k != "config"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
