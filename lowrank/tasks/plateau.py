"""Train a classifier until its validation loss stops falling, then report accuracy and attention ranks.

Shared by the vision transformer (:mod:`lowrank.tasks.vision`) and the text classifier
(:mod:`lowrank.tasks.textclass`), the book's small-scale analogues of Min & Li's ViT and IMDB
experiments. Both configs derive from :class:`PlateauConfig`, whose fields are the schedule.

Schedule (warm-up, stable, decay, as :func:`lowrank.tasks.retrieval.train_retrieval`): AdamW, the
learning rate rising linearly over ``warmup_steps``, then constant. Every ``eval_every`` steps
the validation loss is measured; from ``min_steps`` on, the constant phase stops when the mean of
the last ``patience`` evaluations is not below the mean of the ``patience`` before them by more
than ``plateau_tol`` nats (:func:`plateaued`; ``plateau = True``), or at ``max_steps``
(``plateau = False``, reported).
The rate then decays linearly to zero over ``cooldown`` times the steps run, and the model is
tested. A validation plateau rather than a fixed epoch count because the runs of one grid differ
in head size d_h: a model with d_h = 1 may need longer than one with d_h = 64, and a fixed count
sized for one would under- or over-train the other; the stop is judged on held-out data, so a
model that starts to overfit stops too.

Ranks (:func:`first_block_ranks`): the first block's attention on held-out inputs, read with
:mod:`lowrank.probes.probe` from a float64 copy of the trained model (so float32 round-off does not
count as rank), per head, over real tokens only (rows and columns at padding are dropped).
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from ..core.params import Float, Int, Param, ParameterError
from ..probes.probe import LayerAttention, for_each_layer, valid_blocks
from ..measure.rank import batched_svdvals, hardmax_rank, numerical_rank, numerical_rank_of_singular_values

__all__ = ["PlateauConfig", "plateaued", "train_to_plateau", "first_block_ranks", "block_hardmax_ranks",
           "accuracy_record"]


@dataclass(frozen=True, kw_only=True)
class PlateauConfig:
    """The schedule fields a plateau-trained classifier shares; subclasses add the model and data.

    A bad value raises :class:`lowrank.core.params.ParameterError` naming the field, the value and
    what is allowed. ``to_dict()`` is the content of the run key.
    """
    seed: int = 0
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_steps: int = 100
    eval_every: int = 50          # steps between validation evaluations
    min_steps: int = 500          # no plateau stop before this step
    max_steps: int = 5000         # step cap of the constant phase
    patience: int = 5             # evaluations per window of the plateau check
    plateau_tol: float = 0.01     # nats: a fall of the windowed validation loss below this is a stall
    cooldown: float = 0.2         # linear decay to zero over this fraction of the steps run
    grad_clip: float = 1.0        # max global gradient norm; 0 disables clipping
    rank_rtol: float = 1e-3       # relative tolerance of the reported numerical rank of A

    SCHEMA: ClassVar[dict[str, Param]] = {
        "seed": Int(0), "batch_size": Int(1, 65536), "lr": Float(1e-8, 10.0), "weight_decay": Float(0.0, 10.0),
        "warmup_steps": Int(0), "eval_every": Int(1), "min_steps": Int(1), "max_steps": Int(1),
        "patience": Int(1, 10_000), "plateau_tol": Float(0.0, 100.0), "cooldown": Float(0.0, 0.95),
        "grad_clip": Float(0.0, 1e6), "rank_rtol": Float(1e-15, 0.5),
    }

    def __post_init__(self):
        for f in fields(self):
            if f.name in self.SCHEMA:
                self.SCHEMA[f.name].check(f.name, getattr(self, f.name))
        if self.min_steps > self.max_steps:
            raise ParameterError(f"min_steps = {self.min_steps} must be <= max_steps = {self.max_steps}")
        if self.warmup_steps > self.min_steps:
            raise ParameterError(f"warmup_steps = {self.warmup_steps} must be <= min_steps = {self.min_steps}: "
                                 "a plateau judged during the warm-up would stop a run that has not started")
        self.check()

    def check(self) -> None:
        """Rules between a subclass's own fields (raise ParameterError naming them)."""

    @classmethod
    def from_dict(cls, d: dict):
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k)[:40] for k in d if k not in known)
        if unknown:
            raise ParameterError(f"unknown {cls.__name__} field(s) {unknown}; allowed: {', '.join(sorted(known))}")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)


def plateaued(val_losses: list[float], patience: int, tol: float) -> bool:
    """True when the mean of the last ``patience`` validation losses is not below the mean of the
    ``patience`` before them by more than ``tol``. Needs ``2 patience`` losses (before that: False).

    Means of windows, not the best single value: at a constant learning rate the validation loss
    jumps from one evaluation to the next, and a single lucky low value would stop a run whose
    trend is still falling.
    """
    if len(val_losses) < 2 * patience:
        return False
    recent = sum(val_losses[-patience:]) / patience
    before = sum(val_losses[-2 * patience:-patience]) / patience
    return recent > before - tol


def train_to_plateau(model: nn.Module, cfg: PlateauConfig, *, train_loss: Callable[[int], torch.Tensor],
                     val_loss: Callable[[], float]) -> dict:
    """Train ``model`` with the schedule of the module docstring; return the run's record.

    ``train_loss(step)`` is the mean training loss of the batch of 1-based ``step`` (a function of
    the step alone, so a run is reproducible from its seed); ``val_loss()`` the mean validation
    loss of the model as it is (it should switch to eval mode and back). A non-finite training
    loss raises FloatingPointError naming the step.
    """
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    losses: list[float] = []
    evals: list[list[float]] = []  # [step, validation loss]
    t0 = time.perf_counter()

    def step(lr: float) -> None:
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        loss = train_loss(len(losses) + 1)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite training loss ({float(loss)}) at step {len(losses) + 1}; "
                                     "lower lr or raise warmup_steps")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))

    plateau = False
    while len(losses) < cfg.max_steps:
        step(cfg.lr * min(1.0, (len(losses) + 1) / max(cfg.warmup_steps, 1)))
        s = len(losses)
        if s % cfg.eval_every == 0:
            evals.append([s, float(val_loss())])
            if s >= cfg.min_steps and plateaued([v for _, v in evals], cfg.patience, cfg.plateau_tol):
                plateau = True
                break
    stable = len(losses)
    n_decay = int(round(cfg.cooldown * stable))
    for i in range(n_decay):
        step(cfg.lr * (1 - (i + 1) / (n_decay + 1)))
    final = float(val_loss())
    evals.append([len(losses), final])
    best = min(evals[:-1] or evals, key=lambda e: e[1])
    w = min(cfg.eval_every, len(losses))
    return {"plateau": plateau, "stable_steps": stable, "cooldown_steps": n_decay, "steps_run": len(losses),
            "best_val_loss": best[1], "best_val_step": int(best[0]), "val_loss_final": final,
            "train_loss_last": float(np.mean(losses[-w:])), "val_curve": evals,
            "train_s": time.perf_counter() - t0}


@torch.no_grad()
def accuracy_record(logits: torch.Tensor, labels: torch.Tensor, prefix: str = "test") -> dict:
    """Accuracy, its standard error over items (std of the 0/1 correctness, ddof 1, over sqrt N;
    items are independent images or documents), mean cross-entropy and N."""
    correct = (logits.argmax(-1) == labels).double()
    n = len(correct)
    acc = float(correct.mean())
    se = float(correct.std() / math.sqrt(n)) if n > 1 else float("nan")
    loss = float(nn.functional.cross_entropy(logits.double(), labels))
    return {f"{prefix}_acc": acc, f"{prefix}_acc_se": se, f"{prefix}_loss": loss, f"{prefix}_n": n}


def first_block_ranks(model: nn.Module, batches: Iterable, *, rtol: float, layer: int = 0) -> dict:
    """Ranks of one block's attention (default the first), per head, over held-out inputs.

    ``batches`` are what :func:`lowrank.probes.probe.for_each_layer` takes (an image tensor, or
    ``{"ids": ..., "pad_mask": ...}``); floating tensors are cast to float64 with the model.
    For each input and head, on the block of real tokens (L x L, padding rows and columns
    dropped): the hardmax rank of A (distinct argmax columns), the numerical rank of A at
    ``rtol`` and at the float64 default max(L, L) eps, and the numerical rank of the logits S at
    the float64 default (at most d_h). Returned as means over heads and inputs, per-head means,
    the largest logit rank seen, the number of inputs and the mean L.
    """
    model64 = copy.deepcopy(model).double()
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("hardmax", "numerical", "numerical_default", "logit")}
    lengths: list[int] = []

    def collect(la: LayerAttention) -> None:
        for (seqs, A), (_, S) in zip(valid_blocks(la.probs, la.valid), valid_blocks(la.logits, la.valid)):
            G, h, L, _ = A.shape
            flat = A.reshape(G * h, L, L)
            sigma = batched_svdvals(flat)
            rows["numerical"].append(numerical_rank_of_singular_values(sigma, L, L, None, rtol).reshape(G, h).numpy())
            rows["numerical_default"].append(
                numerical_rank_of_singular_values(sigma, L, L, None, None).reshape(G, h).numpy())
            rows["hardmax"].append(hardmax_rank(flat).reshape(G, h).numpy())
            rows["logit"].append(numerical_rank(S.reshape(G * h, L, L)).reshape(G, h).numpy())
            lengths.extend([L] * G)

    for batch in batches:
        if isinstance(batch, torch.Tensor) and batch.is_floating_point():
            batch = batch.double()
        for_each_layer(model64, batch, collect, layers=[layer])
    if not lengths:
        raise ValueError("first_block_ranks got no inputs with a real token")
    per = {k: np.concatenate(v).astype(np.float64) for k, v in rows.items()}  # (inputs, heads)
    return {"rank_layer": layer, "rank_inputs": len(lengths), "rank_mean_tokens": float(np.mean(lengths)),
            "hardmax_rank": float(per["hardmax"].mean()), "numerical_rank": float(per["numerical"].mean()),
            "numerical_rank_default": float(per["numerical_default"].mean()),
            "logit_rank_default": float(per["logit"].mean()), "logit_rank_max": int(per["logit"].max()),
            "hardmax_rank_per_head": per["hardmax"].mean(0).tolist(),
            "numerical_rank_per_head": per["numerical"].mean(0).tolist()}


@torch.no_grad()
def block_hardmax_ranks(model: nn.Module, batches: Iterable, *, n_layers: int) -> list[float]:
    """The mean hardmax rank of A (distinct argmax columns, real tokens only) of every block, over
    heads and the inputs of ``batches``, read as :func:`first_block_ranks` reads the first: for the
    claim that saturation in d_h looks the same at every layer."""
    model64 = copy.deepcopy(model).double()
    per: dict[int, list[np.ndarray]] = {i: [] for i in range(n_layers)}

    def collect(la: LayerAttention) -> None:
        for _, A in valid_blocks(la.probs, la.valid):
            G, h, L, _ = A.shape
            per[la.layer].append(hardmax_rank(A.reshape(G * h, L, L)).double().numpy())

    for batch in batches:
        if isinstance(batch, torch.Tensor) and batch.is_floating_point():
            batch = batch.double()
        for_each_layer(model64, batch, collect, layers=list(range(n_layers)))
    return [float(np.concatenate(per[i]).mean()) for i in range(n_layers)]
