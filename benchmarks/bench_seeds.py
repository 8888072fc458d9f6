"""Item 8: several seeds of one model trained in one process, against the same seeds one after another.

Chapter 04's budget store trains every seed in a process of its own, two one-thread processes on
two cores (row 7e). A run of several seeds of one configuration could instead stack their
weights and train them together: ``torch.func.vmap`` over the stacked parameters turns every
layer's matrix product into one batched product, which saves the per-operation overhead that a
small model pays once per seed. This item measures whether it pays, on the minimal causal LM of
item 7 (the engine takes the same time, rows 7a-7c) in the shapes of chapter 04's models.

Both sides train the same seeds from the same initial weights on the same batches with AdamW,
per-seed gradient clipping and the store's rate, one torch thread. Ours is one stacked step for
all seeds; the baseline is one step of each seed's own model. The row is an error unless both
sides end with the same losses and weights: stacking must change the speed, not the training.
"""
from __future__ import annotations

import copy
import re
import warnings

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from bench_engine import _row_config, budget_config, minimal_model, torch_threads
from harness import ERROR, Result, compare

# Largest difference of a seed's loss, and largest relative difference of a weight tensor, between
# the two sides after the timed steps: float32 products batched differently round differently,
# nothing more. Weights are compared as whole tensors because Adam turns a rounding difference in
# a near-zero gradient into a full-size step of that one element.
LOSS_TOLERANCE = 1e-3
WEIGHT_TOLERANCE = 1e-3


def _optimizer(params: list[torch.Tensor], decayed: list[bool], cfg: dict) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        [{"params": [p for p, d in zip(params, decayed) if d], "weight_decay": cfg["weight_decay"]},
         {"params": [p for p, d in zip(params, decayed) if not d], "weight_decay": 0.0}],
        lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]))


class Separate:
    """Each seed its own model and optimiser; a step trains them one after another."""

    def __init__(self, models: list[torch.nn.Module], cfg: dict):
        self.models, self.cfg = models, cfg
        self.opts = [_optimizer(list(m.parameters()), [p.dim() >= 2 for p in m.parameters()], cfg)
                     for m in models]
        self.losses = [float("nan")] * len(models)

    def step(self, windows: torch.Tensor) -> None:
        for i, (model, opt) in enumerate(zip(self.models, self.opts)):
            win = windows[i]
            loss = F.cross_entropy(model(win[:, :-1]).flatten(0, 1), win[:, 1:].flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.cfg["grad_clip"])
            opt.step()
            self.losses[i] = loss.item()


class Stacked:
    """All seeds' weights stacked on a leading axis and trained by one vmapped step."""

    def __init__(self, models: list[torch.nn.Module], cfg: dict):
        self.cfg = cfg
        self.shell = copy.deepcopy(models[0]).to("meta")
        params, self.buffers = stack_module_state(models)
        self.params = {k: v.detach().requires_grad_() for k, v in params.items()}
        # AdamW is elementwise, so one optimiser over the stacked tensors updates each seed as its
        # own would; decay follows the unstacked shape.
        self.opt = _optimizer(list(self.params.values()), [p.dim() >= 3 for p in self.params.values()], cfg)

        def loss(p, b, win):
            logits = functional_call(self.shell, (p, b), (win[:, :-1],))
            return F.cross_entropy(logits.flatten(0, 1), win[:, 1:].flatten())

        self.loss = vmap(loss)
        self.losses = [float("nan")] * len(models)

    def step(self, windows: torch.Tensor) -> None:
        with warnings.catch_warnings():
            # scaled_dot_product_attention has no batching rule; vmap loops over the seeds there.
            warnings.filterwarnings("ignore", message=".*batching rule.*")
            losses = self.loss(self.params, self.buffers, windows)
        self.opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        grads = [p.grad for p in self.params.values()]
        norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0).sqrt()
        scale = (self.cfg["grad_clip"] / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *[1] * (g.dim() - 1)))
        self.opt.step()
        self.losses = losses.tolist()


@torch.no_grad()
def weight_difference(stacked: Stacked, separate: Separate) -> float:
    """The largest ||stacked - separate|| / ||separate|| over every weight tensor of every seed."""
    return max(float((stacked.params[k][i] - p).norm() / p.norm().clamp(min=1e-12))
               for i, model in enumerate(separate.models) for k, p in model.named_parameters())


def bench_seeds_row(name: str, seeds: int, steps: int, *, timing: dict, cfg: dict | None = None) -> Result:
    """The item-8 row of one model: ``seeds`` seeds stacked in one process against one after another."""
    cfg = cfg or budget_config(name, steps)
    vocab, n, batch = cfg["vocab_size"], cfg["seq_len"], cfg["batch_size"]
    g = torch.Generator().manual_seed(0)
    windows = torch.randint(vocab, (steps, seeds, batch, n + 1), generator=g)

    def models():
        out = []
        for s in range(seeds):
            torch.manual_seed(s)
            out.append(minimal_model(cfg, vocab))
        return out

    state = {}

    def train(kind):
        def run():
            state[kind] = trainer = kind(models(), cfg)
            for i in range(steps):
                trainer.step(windows[i])
        return run

    key = "seeds_one_process_" + re.sub(r"\W+", "_", name).strip("_")
    config = {**_row_config(cfg, name, 1), "seeds": seeds, "steps": steps}
    with torch_threads(1):
        row = compare(key, 8, config=config, target=None,
                      ours=(f"{seeds} seeds in one process, stacked (torch.func.vmap)", train(Stacked)),
                      baseline=(f"the {seeds} seeds one after another", train(Separate)), **timing)
    ours, base = state[Stacked].losses, state[Separate].losses
    gap = max(abs(a - b) for a, b in zip(ours, base))
    weight_gap = weight_difference(state[Stacked], state[Separate])
    row.extra = {"losses": {"stacked": ours, "separate": base}, "largest_loss_difference": gap,
                 "largest_weight_difference": weight_gap}
    if not (gap <= LOSS_TOLERANCE and weight_gap <= WEIGHT_TOLERANCE):
        row.status, row.note = ERROR, (
            f"the stacked seeds trained differently: losses {ours} against {base}, largest differences "
            f"{gap:.2g} in a loss (tolerance {LOSS_TOLERANCE:g}) and {weight_gap:.2g} in a weight "
            f"(tolerance {WEIGHT_TOLERANCE:g}, relative)")
        return row
    row.note = (f"{steps} steps of each seed from the same weights and batches; the seeds' losses agree to "
                f"{gap:.1g}; stacked takes {row.ratio:.2f} times as long, so it "
                + ("pays" if row.ratio < 1 else "does not pay"))
    return row


def bench_seeds(models: list[str], seeds: int, steps: int, *, timing: dict) -> list[Result]:
    return [bench_seeds_row(name, seeds, steps, timing=timing) for name in models]
