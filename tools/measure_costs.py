"""Measure the CPU rates of lowrank.experiments.costs on this machine (one torch thread).

Each rate is the time of the chapters' own code at a small size, divided by the units the cost
model counts for that size (the same unit definitions the estimates use). About two minutes.
Prints one line per rate, ``name rate (time s / units)``, and with ``--json FILE`` writes them.

    nice -n 10 .venv/bin/python tools/measure_costs.py [--only svd,hardmax] [--json rates.json] [--cpu-time]

``--cpu-time`` counts this process's CPU time instead of wall time: on a machine shared with
other jobs the wall time of a one-thread measurement grows with the load, its CPU time much less
(worker_start, which times a child process, needs wall time).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch


_CLOCK = [time.perf_counter]


def _timed(fn) -> float:
    clock = _CLOCK[0]
    t = clock()
    fn()
    return clock() - t


def svd() -> tuple[float, float]:
    from lowrank.experiments.shared.montecarlo import attention_rank_table
    n, T = 128, 60
    s = _timed(lambda: attention_rank_table(n, [8], n_trials=T, rtols=(None, 1e-6, 1e-3), energies=(0.99,)))
    return s, T * n ** 3


def hardmax() -> tuple[float, float]:
    from lowrank.experiments.shared.montecarlo import hardmax_rank_table
    n, dh, T = 256, 512, 60
    s = _timed(lambda: hardmax_rank_table([n], [dh], n_trials=T))
    return s, T * n * n * (dh + 8)


def nested() -> tuple[float, float]:
    from lowrank.experiments.rank_saturation import head_dim_grid, nested_hardmax_table
    grid = head_dim_grid(256, 4)
    n, T = 512, 16
    s = _timed(lambda: nested_hardmax_table([n], grid, n_trials=T))
    return s, T * n * n * (max(grid) + 4 * len(grid))


def nested_long() -> tuple[float, float]:
    """Chapter 06's long grid at one of its lengths: large matrix products, few grid points per octave."""
    from lowrank.experiments.rank_saturation import head_dim_grid, nested_hardmax_table
    from lowrank.experiments.rank_saturation.store import GRID_POINT_COST
    n, T = 1024, 4
    grid = head_dim_grid(8 * n, 4)
    s = _timed(lambda: nested_hardmax_table([n], grid, n_trials=T))
    return s, T * n * n * (max(grid) + GRID_POINT_COST * len(grid))


def fit_iter() -> tuple[float, float]:
    """The loop's own cost of one iteration of a batched L-BFGS fit (autograd, line search,
    history), from causal fits at tiny n that run to their iteration cap."""
    from lowrank.experiments.representation_theorem import run_causal
    ns, it = [4, 5, 6], 1000
    s = _timed(lambda: run_causal(ns, n_targets=2, width=1, restarts=4, max_iter=it, seed=0))
    return s, len(ns) * it


def _fits(fn) -> tuple[float, list[int]]:
    """Seconds of fn and the iterations of each batched L-BFGS fit it ran (a batch runs until its
    slowest problem stops)."""
    import lowrank.tasks.fit as fit
    inner, counted = fit.lbfgs, []

    def counting(*args, **kwargs):
        x, f, n_iter = inner(*args, **kwargs)
        counted.append(int(n_iter.max()))
        return x, f, n_iter

    fit.lbfgs = counting
    try:
        return _timed(fn), counted
    finally:
        fit.lbfgs = inner


_LOOP: list[float] = []


def _loop_s() -> float:
    if not _LOOP:
        seconds, units = fit_iter()
        _LOOP.append(seconds / units)
    return _LOOP[0]


def lbfgs() -> tuple[float, float]:
    from lowrank.experiments.representation_theorem import rank_grid, threshold_sweep
    n, conc, targets, restarts, it = 32, [1.0], 2, 2, 1000
    s = _timed(lambda: threshold_sweep([n], conc, n_targets=targets, near=2, coarse=3, restarts=restarts, max_iter=it))
    b = len(conc) * targets * len(rank_grid(n, near=2, coarse=3)) * restarts
    return s, b * it * n * n * (n + 2)


def heads_fit() -> tuple[float, float]:
    """Head fits, net of the loop's own cost, per head x restart x iteration run x n (n + d) d_h;
    also prints the iterations the batched head fits of chapter 03's default grid ran per token."""
    from lowrank.experiments.multihead_bottleneck import run_head_count
    from lowrank.tasks.fit import fit_heads
    from lowrank.theory.sampling import sample_inputs
    from lowrank.theory.targets import dirichlet_targets
    for n, d, heads in ((6, 60, [1, 2, 4, 6, 10, 12, 15, 20, 30]), (12, 120, [1, 10, 40])):
        _, its = _fits(lambda: run_head_count(d, n, heads, restarts=2, max_iter=1000))
        print(f"  head fits at n = {n}: {sum(its) / len(its) / n:.0f} n iterations on average (cap 1000)")
    n, d, h, restarts = 16, 64, 16, 2
    X = sample_inputs(n, d, inputs="gaussian", seed=0)[0]
    P = dirichlet_targets(n, batch=h, seed=0)
    s, its = _fits(lambda: fit_heads(X, P, head_dim=n, restarts=restarts, max_iter=300))
    return s - sum(its) * _loop_s(), sum(its) * h * restarts * n * (n + d) * n


def layer_fit() -> tuple[float, float]:
    """Whole-layer fits, net of the loop's own cost, per restart x iteration run x samples x n d (d + n):
    the standard layer fitted to Theorem 2's g_V, which runs to its cap."""
    import torch as _torch
    from lowrank.tasks.fit import fit_layer
    from lowrank.theory.multihead import theorem2_layer
    from lowrank.theory.sampling import sample_inputs
    d, h, hd, n, S, restarts = 6, 3, 3, 4, 64, 8
    g_V = theorem2_layer(d, h, hd, seed=0)
    X = sample_inputs(n, d, batch=S, inputs="sphere", seed=1)
    with _torch.no_grad():
        Y = g_V(X)[0]
    s, its = _fits(lambda: fit_layer(X, Y, n_heads=h, restarts=restarts, max_iter=300, seed=0))
    return s - sum(its) * _loop_s(), sum(its) * restarts * S * n * d * (d + n)


def _lm_run(n_heads: int, steps: int, seed: int, folder: Path) -> tuple[float, dict]:
    from lowrank.train import TrainConfig, train as train_lm
    cfg = TrainConfig.from_dict(dict(task="lm", corpus="shakespeare", vocab_size=512, seq_len=64, d_model=64,
                                     n_layers=2, n_heads=n_heads, batch_size=16, steps=steps, eval_interval=1000,
                                     eval_tokens=4096, test_tokens=4096, num_threads=1, device="cpu",
                                     seed=seed)).to_dict()
    return _timed(lambda: train_lm(cfg, out_dir=folder / f"h{n_heads}-{steps}-{seed}", progress=False)), cfg


def _train_pair() -> dict[str, float]:
    """Solve two runs (4 and 32 standard heads at d = 64) for the per-flop and per-head rates."""
    from lowrank.experiments.head_size_training import lm_units
    with tempfile.TemporaryDirectory() as tmp:
        _lm_run(4, 10, 0, Path(tmp))  # tokenizer and corpus caches
        t_short, c_short = _lm_run(4, 10, 1, Path(tmp))
        t4, c4 = _lm_run(4, 300, 1, Path(tmp))
        t32, c32 = _lm_run(32, 300, 1, Path(tmp))
    u4, u32, us = lm_units(c4), lm_units(c32), lm_units(c_short)
    # standard heads at one width have the same parameters: the difference is the per-head work
    attn = (t32 - t4) / (u32["train_attn"] - u4["train_attn"])
    flop = (t4 - t_short - attn * (u4["train_attn"] - us["train_attn"])) / (u4["train"] - us["train"])
    run = max(0.0, t_short - flop * us["train"] - attn * us["train_attn"])
    return {"train": flop, "train_attn": attn, "train_run": run}


_TRAIN: dict[str, float] = {}


def _train_rate(name: str) -> tuple[float, float]:
    if not _TRAIN:
        _TRAIN.update(_train_pair())
    return _TRAIN[name], 1.0


def train() -> tuple[float, float]:
    return _train_rate("train")


def train_attn() -> tuple[float, float]:
    return _train_rate("train_attn")


def train_run() -> tuple[float, float]:
    return _train_rate("train_run")


def retrieval() -> tuple[float, float]:
    from lowrank.tasks.retrieval import train_retrieval
    # min_steps = max_steps and no cool-down: exactly 240 steps
    cfg = dict(n=32, head_dim=4, seed=0, max_steps=240, min_steps=240, check_every=80, cooldown=0.0, d_model=64,
               n_values=16, lr=0.003, tokens_per_step=2048, test_sequences=100, rank_sequences=4, rank_rtol=1e-3)
    s = _timed(lambda: train_retrieval(cfg))
    return s, 240


def retrieval_run() -> tuple[float, float]:
    """Testing on fresh sequences: per 160,000 test queries (10,000 sequences at n = 16)."""
    from lowrank.tasks.retrieval import train_retrieval
    cfg = dict(n=32, head_dim=4, seed=0, max_steps=60, min_steps=60, check_every=20, cooldown=0.0, d_model=64,
               n_values=16, lr=0.003, tokens_per_step=2048, test_sequences=5000, rank_sequences=64, rank_rtol=1e-3)
    s = _timed(lambda: train_retrieval(cfg))
    seconds, steps = retrieval()
    steps_s = seconds / steps * 60
    return max(s - steps_s, 0.0), 5000 * 32 / 160_000


def truncation() -> tuple[float, float]:
    from lowrank.experiments.trained_attention import truncation_configs, truncation_run
    cfg = truncation_configs(ns=[64], ranks=[1, 32], per_class=4, folds=2, seed=0, l2=0.01)[0]
    truncation_run(dict(cfg, n=16))  # MiniLM and the corpus into the caches
    s = _timed(lambda: truncation_run(cfg))
    return s, 5 * 4 * 64 * (1 + 2)


def bootstrap() -> tuple[float, float]:
    from lowrank.experiments.rank_saturation import curve_bootstrap, head_dim_grid, nested_hardmax_table
    grid = head_dim_grid(64, 4)
    table = nested_hardmax_table([32, 64, 128], grid, n_trials=16)
    s = _timed(lambda: curve_bootstrap(table, n_boot=2000, fractions=[0.5, 0.75, 0.9], increment=0.01, seed=0))
    return s, 2000 * 3 * len(grid)


def minilm() -> tuple[float, float]:
    from lowrank.experiments.trained_attention import run_pretrained
    ns, counts = [64, 128], [4, 2]
    run_pretrained(corpora=["bbcnews"], seq_lens=[16], counts=[1], batch_size=1, seed=0, rtols=[0.0], energy=0.99)
    s = _timed(lambda: run_pretrained(corpora=["bbcnews"], seq_lens=ns, counts=counts, batch_size=4, seed=0,
                                      rtols=[0.0, 1e-6, 1e-3], energy=0.99, device="cpu"))
    return s, sum(k * n ** 3 for n, k in zip(ns, counts))


def worker_start() -> tuple[float, float]:
    """A sweep worker: a fresh Python process importing what a training run needs."""
    import subprocess
    s = _timed(lambda: subprocess.run([sys.executable, "-c", "import lowrank.stores.sweep, lowrank.train, "
                                       "lowrank.experiments.head_size_training"], check=True))
    return s, 1.0


RATES = {"worker_start": worker_start, "fit_iter": fit_iter, "svd": svd, "hardmax": hardmax, "nested": nested,
         "nested_long": nested_long, "lbfgs": lbfgs, "heads_fit": heads_fit,
         "layer_fit": layer_fit, "train": train, "train_attn": train_attn, "train_run": train_run,
         "retrieval": retrieval, "retrieval_run": retrieval_run, "minilm": minilm, "truncation": truncation,
         "bootstrap": bootstrap}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated rate names (default: all)")
    ap.add_argument("--json", type=Path, help="also write the rates to this JSON file")
    ap.add_argument("--cpu-time", action="store_true", help="time with this process's CPU time, not wall time")
    args = ap.parse_args(argv)
    if args.cpu_time:
        _CLOCK[0] = time.process_time
    names = [n for n in args.only.split(",") if n] or list(RATES)
    unknown = [n for n in names if n not in RATES]
    if unknown:
        print(f"measure_costs: error: unknown rate(s) {', '.join(unknown)}; known: {', '.join(RATES)}",
              file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    out = {}
    for name in names:
        seconds, units = RATES[name]()
        out[name] = seconds / units
        print(f"{name:10s} {out[name]:.2e}  ({seconds:.2f} s / {units:.3g} units)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
