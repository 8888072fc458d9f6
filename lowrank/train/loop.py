"""The training loop: one process or ``torchrun`` (DDP), checkpoints at fixed steps, exact resume.

Every random draw is a function of (seed, step, rank) (:mod:`lowrank.train.tasks`) and the
learning rate a function of the step, so a checkpoint needs only the step, the model and the
optimiser state, and a resumed run ends with the metrics of an uninterrupted one.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from ..core.files import atomic_write_json, atomic_write_text
from ..layers.models import count_parameters
from ..core.progress import tqdm
from .checkpoints import finished_result, load_checkpoint, read_metrics, save_checkpoint
from .config import TrainConfig, lr_at
from .evaluate import all_sum, evaluate
from .tasks import Task, seed_of

__all__ = ["NonFiniteLossError", "dist_setup", "train"]


class NonFiniteLossError(RuntimeError):
    """The loss (or gradient norm) became NaN or infinite; the last good checkpoint is kept."""



def dist_setup(device_pref: str):
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
        data_root: data folder for corpora and tokenizers (default: see lowrank.data.corpora).

    Raises:
        NonFiniteLossError: the loss or gradient norm became non-finite; names the step
            and keeps the last good checkpoint.
    """
    cfg = config if isinstance(config, TrainConfig) else TrainConfig.from_dict(dict(config))
    out = Path(out_dir)
    rank, world, device, created = dist_setup(cfg.device)
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
    done = finished_result(result_path, cfg) if resume else None
    if done is not None:
        return done
    task = Task(cfg, root)
    torch.manual_seed(seed_of(cfg.seed, 0, 0))
    model = task.build_model().to(device)
    n_params = count_parameters(model)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=device.type == "cuda")
    start, run_loss, run_n = 0, 0.0, 0
    if resume and ckpt_path.is_file():
        state = load_checkpoint(ckpt_path, device, cfg)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = int(state["step"])
        run_loss, run_n = float(state["run_loss"]), int(state["run_n"])
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "config.json", cfg.to_dict())
        kept = read_metrics(metrics_path, start) if start else []
        atomic_write_text(metrics_path, "".join(line + "\n" for line in kept))
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
            save_checkpoint({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
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
            torch.manual_seed(seed_of(cfg.seed, step, 4, rank))  # dropout stream of this step
            batch = {k: v.to(device) for k, v in task.train_batch(step, rank, world).items()}
            with autocast():
                loss_sum, count, _ = task.loss_sum(net, batch, count_correct=False)
            total = all_sum([float(count)], world, device)[0]
            # Sum over the global batch / global count; DDP averages gradients over processes,
            # so scaling by world makes the update equal to a single process's on the whole batch.
            (loss_sum * world / total).backward()
            gnorm = (torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                     if cfg.grad_clip > 0 else torch.tensor(0.0))
            step_loss = all_sum([float(loss_sum.detach()), float(gnorm)], world, device)
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
            # The last step is evaluated on the interval sample too, so that a curve ends on the sample it began on.
            if cfg.eval_interval and (step % cfg.eval_interval == 0 or step == cfg.steps):
                ev = evaluate(task, model, "validation", cfg.eval_tokens, rank, world, device, autocast)
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
    val = evaluate(task, model, "validation", cfg.test_tokens, rank, world, device, autocast)
    test = evaluate(task, model, "test", cfg.test_tokens, rank, world, device, autocast)
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
        atomic_write_json(result_path, result)
    return result
