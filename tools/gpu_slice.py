"""Timed slices on a GPU, written where the cost model reads them (tools/gpu_check.sh calls this).

Trains 200 steps of two configurations of chapter 04's paper set (standard heads at its baseline
head count, and its largest fixed-head-size model) and times the chapters' Monte Carlo kernels on
CUDA; solves for the GPU rates of :mod:`lowrank.experiments.costs` (seconds per unit, the units
the estimates count) and writes them, with the per-step times, to ``--out`` (default
``data/measured/gpu_check.json``). Commit that file: ``lowrank run --dry-run``, the re-run boxes
and the "Paper scale" page then estimate GPU sets from it instead of assumed speed-ups.

    .venv/bin/python tools/gpu_slice.py [--out FILE] [--set chapters/params/paper/04_head_size_training.yaml]
"""
from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = 200


def _slice_configs(set_file: Path) -> list[dict]:
    from lowrank.book.runner import load_parameter_file
    from lowrank.book.sets import set_parameters
    from lowrank.experiments.head_size_training import training_grids

    values, _ = load_parameter_file(set_file)
    P = set_parameters(ROOT / "chapters" / "04_head_size_training.ipynb", values)
    P = dict(P, n_seeds=1, lr_sweep=[], recovery_steps=None)
    grids = training_grids(P)
    configs = [c for grid in grids.values() for _, c in grid]
    standard = next(c for c in configs if c["head_dim"] is None and c["n_heads"] == P["baseline_heads"]
                    and c["d_model"] == P["d_model"])
    fixed = max((c for c in configs if c["head_dim"] is not None), key=lambda c: c["n_heads"])
    return [dict(c, steps=STEPS, warmup_steps=min(c["warmup_steps"], STEPS // 4), eval_interval=STEPS,
                 checkpoint_every=0, device="cuda") for c in (standard, fixed)]


def _train_rates(configs: list[dict]) -> tuple[dict, dict]:
    from lowrank.experiments.head_size_training import lm_units
    from lowrank.train import train

    per_step, units = {}, []
    with tempfile.TemporaryDirectory(prefix="gpu-slice-") as tmp:
        for c in configs:
            res = train(c, out_dir=Path(tmp) / f"h{c['n_heads']}", progress=False)
            label = f"h={c['n_heads']}, d_h={c['head_dim'] or c['d_model'] // c['n_heads']}"
            per_step[label] = res["train_wall_s"] / STEPS
            u = lm_units(dict(c, eval_interval=10**9, test_tokens=0))
            units.append((res["train_wall_s"], u["train"], u["train_attn"]))
    # two runs, two unknowns: seconds = train * flops + train_attn * head work
    (t1, a1, b1), (t2, a2, b2) = units
    det = a1 * b2 - a2 * b1
    attn = max((a1 * t2 - a2 * t1) / det, 0.0) if det else 0.0
    flop = max((t1 - attn * b1) / a1, 0.0)
    return {"train": flop, "train_attn": attn}, per_step


def _kernel_rates() -> dict:
    from lowrank.experiments.shared.montecarlo import attention_rank_table, hardmax_rank_table
    from lowrank.experiments.rank_saturation import head_dim_grid, nested_hardmax_table

    def timed(fn) -> float:
        import torch

        fn()  # warm-up: kernels, allocator
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t

    n, dh, T = 1024, 1024, 100
    hard = timed(lambda: hardmax_rank_table([n], [dh], n_trials=T, device="cuda")) / (T * n * n * (dh + 8))
    grid = head_dim_grid(1024, 4)
    nested = timed(lambda: nested_hardmax_table([2048], grid, n_trials=16, device="cuda")) / (
        16 * 2048 ** 2 * (max(grid) + 4 * len(grid)))
    svd = timed(lambda: attention_rank_table(256, [8], n_trials=200, device="cuda")) / (200 * 256 ** 3)
    return {"hardmax": hard, "nested": nested, "svd": svd}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "measured" / "gpu_check.json")
    ap.add_argument("--set", type=Path, default=ROOT / "chapters" / "params" / "paper" / "04_head_size_training.yaml")
    args = ap.parse_args(argv)
    if not args.set.is_file():
        print(f"gpu_slice: error: parameter set {args.set} does not exist", file=sys.stderr)
        return 2
    import torch

    from lowrank.core.files import atomic_write_json

    if not torch.cuda.is_available():
        print("gpu_slice: error: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    train_rates, per_step = _train_rates(_slice_configs(args.set))
    rates = {**train_rates, **_kernel_rates()}
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "gpu": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(), "torch": torch.__version__,
              "rates": rates, "ch04_paper_slice": {"steps": STEPS, "seconds_per_step": per_step},
              "wall_s": time.perf_counter() - t0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out, record)
    for label, s in per_step.items():
        print(f"chapter 04 paper config, {label}: {s * 1000:.1f} ms per step")
    print(f"rates written to {args.out}: " + ", ".join(f"{k} {v:.2e}" for k, v in rates.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
