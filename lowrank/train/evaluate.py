"""Loss, accuracy and perplexity over a split's fixed evaluation batches, summed over processes."""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .tasks import Task

__all__ = ["all_sum", "evaluate"]


def all_sum(values: list[float], world: int, device) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(t)
    return t.tolist()


@torch.no_grad()
def evaluate(task: Task, model, split: str, max_tokens, rank, world, device, autocast) -> dict:
    was_training = model.training
    model.eval()
    loss = count = correct = 0.0
    for batch in task.eval_batches(split, max_tokens, rank, world):
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast():
            l, c, k = task.loss_sum(model, batch)
        loss, count, correct = loss + float(l), count + c, correct + float(k)
    loss, count, correct = all_sum([loss, count, correct], world, device)
    model.train(was_training)
    mean = loss / max(count, 1)
    out = {"loss": mean, "acc": correct / max(count, 1), "n": int(count)}
    if task.cfg.task != "classify":
        out["ppl"] = math.exp(min(mean, 50.0))
    return out

