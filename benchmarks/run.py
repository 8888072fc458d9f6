"""Run the performance comparisons of the lowrank package against standard implementations.

    python benchmarks/run.py --quick --check     # 2-core CPU check, under 2 minutes
    python benchmarks/run.py                     # full CPU run: results/<machine>.json, latest.*, scaling.png
    python benchmarks/run.py --gpu               # full run on CUDA, bf16 autocast for layers and training

Every comparison is a time ratio ours / baseline measured in this process (see harness.py).
The table marks each ratio PASS or FAIL against its target; ``--check`` makes the exit code
non-zero when any target is missed or a correctness check fails. Items:

  1  rank_report vs a per-matrix NumPy loop, and vs bare torch.linalg.svdvals
  2  rank analysis time against n: SVD measures vs hardmax_rank (log-log slopes, plot)
  3  MultiHeadAttention fwd+bwd vs torch.nn.MultiheadAttention; fixed vs standard head size
  4  masked-LM training step vs Hugging Face BertForMaskedLM (sdpa)
  5  lowrank.probes.probe.rank_table over MiniLM vs output_attentions + NumPy loop
  6  start-up: `lowrank list` and `lowrank --help` vs `papermill --help` (fresh processes)
  7  lowrank.train.train end to end (chapter 04's runs) vs a minimal plain-PyTorch causal LM;
     full mode adds torch.compile on this CPU and two one-thread processes vs one two-thread run
  8  several seeds of one chapter-04 model stacked in one process (torch.func.vmap) vs the
     same seeds trained one after another, one thread

Rows of items not run this time are kept from the previous results (the machine's file of the
same mode, and the book's latest.json), so `--items 7` refreshes item 7's rows and leaves the
others as they were measured, with the date, machine and load of their run.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Measure the checkout this script sits in, not whatever lowrank is installed.
sys.path[:0] = [str(HERE), str(ROOT)]

import torch  # noqa: E402

from harness import ERROR, Result, environment  # noqa: E402
from report import (atomic_write, failed, markdown_table, merge_previous, scaling_plot,  # noqa: E402
                    summary_markdown, text_table, write_json)

# Sizes and repetitions per mode. Each timing dict is warm-up runs, repetitions, and a time
# budget in seconds that caps the repetitions (never below three) when the machine is slow or
# loaded. Quick keeps every comparison at smaller sizes to fit two minutes on two cores; full
# uses the sizes of the issue. The training step has the shape of chapter 04's models: its CPU
# defaults in quick mode, the paper's (Bhojanapalli et al. Sec. 4.2) in full mode, both with
# BERT's post-LayerNorm and tied embeddings so that BertForMaskedLM has the same shape. The
# engine runs chapter 04's budget-store recipe on the CPU with one thread whatever the mode or
# --gpu: quick mode trains the two h = 32 models for 10 steps (start-up, checkpoints and the
# final evaluation weigh most), full mode adds the parameter-matched model and trains 200 steps,
# which include one interval evaluation.
SETTINGS = {
    "quick": dict(
        timing=dict(warmup=1, reps=7, budget_s=3),
        numpy_timing=dict(warmup=1, reps=3, budget_s=2),
        rank_shapes=[(32, 128), (8, 512)],
        scaling_ns=[64, 128, 256, 512], scaling_timing=dict(warmup=1, reps=3, budget_s=1),
        svd_elements=2 ** 17, hardmax_elements=2 ** 20,
        mha=[dict(batch=32, n=128, d_model=256, n_heads=8), dict(batch=4, n=256, d_model=512, n_heads=8)],
        train=dict(vocab=512, d_model=64, layers=2, heads=8, d_ff=256, n=64, batch=8, dropout=0.0),
        train_timing=dict(warmup=1, reps=7, budget_s=8),
        probe_n=64, probe_timing=dict(warmup=1, reps=3, budget_s=2),
        startup_timing=dict(warmup=1, reps=5),
        engine=dict(models=["standard h = 32", "fixed h = 32"], steps=10),
        engine_timing=dict(warmup=1, reps=3, budget_s=10),
        engine_info=None,
        seeds=dict(models=["standard h = 4"], seeds=2, steps=3), seeds_timing=dict(warmup=1, reps=3, budget_s=5)),
    "full": dict(
        timing=dict(warmup=2, reps=21, budget_s=60),
        numpy_timing=dict(warmup=1, reps=7, budget_s=120),
        rank_shapes=[(256, 128), (32, 512)],
        scaling_ns=[64, 128, 256, 512, 1024, 2048], scaling_timing=dict(warmup=1, reps=7, budget_s=20),
        svd_elements=2 ** 20, hardmax_elements=2 ** 22,
        mha=[dict(batch=32, n=128, d_model=256, n_heads=8), dict(batch=16, n=512, d_model=512, n_heads=8)],
        train=dict(vocab=8192, d_model=256, layers=6, heads=8, d_ff=1024, n=256, batch=8, dropout=0.1),
        train_timing=dict(warmup=2, reps=11, budget_s=150),
        probe_n=512, probe_timing=dict(warmup=1, reps=3, budget_s=120),
        startup_timing=dict(warmup=1, reps=5),
        engine=dict(models=["standard h = 32", "fixed h = 32", "standard d = 112"], steps=200),
        engine_timing=dict(warmup=1, reps=7, budget_s=300),
        engine_info=dict(compile_timing=dict(warmup=2, reps=21, budget_s=20), process_steps=100,
                         process_timing=dict(warmup=1, reps=5, budget_s=150)),
        seeds=dict(models=["standard h = 4", "fixed h = 32", "head size 32, h = 8"], seeds=2, steps=10),
        seeds_timing=dict(warmup=1, reps=7, budget_s=60)),
}
# On a GPU the layers and the training step run under bf16 autocast at larger sizes (BERT-base
# for the training step); rank analysis stays float64.
GPU_OVERRIDES = dict(
    timing=dict(warmup=3, reps=31, budget_s=30),
    mha=[dict(batch=32, n=128, d_model=256, n_heads=8), dict(batch=32, n=1024, d_model=1024, n_heads=16)],
    train=dict(vocab=30522, d_model=768, layers=12, heads=12, d_ff=3072, n=512, batch=32, dropout=0.1),
    train_timing=dict(warmup=3, reps=21, budget_s=60))


ITEMS = (1, 2, 3, 4, 5, 6, 7, 8)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, few repetitions (< 2 min on 2 cores)")
    p.add_argument("--check", action="store_true", help="exit 1 if a target is missed or a check fails")
    p.add_argument("--gpu", action="store_true", help="run on CUDA (bf16 autocast for items 3 and 4)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch and BLAS threads (default: the cores this process may use)")
    p.add_argument("--items", type=int, nargs="+", default=list(ITEMS), choices=ITEMS,
                   help="which comparisons to run")
    p.add_argument("--out", type=Path, default=HERE / "results", help="folder for the result files")
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--render", type=Path, metavar="RESULTS.json",
                   help="measure nothing: rewrite the tables and the plot in --out from a results file")
    args = p.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads must be >= 1, got {args.threads}")
    if args.gpu and not torch.cuda.is_available():
        p.error("--gpu given but torch sees no CUDA device (torch.cuda.is_available() is False)")
    return args


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _guarded(item: int, fn, *args, **kw) -> list[Result]:
    """Run one item; an exception becomes an error row (so the other items still run)."""
    try:
        out = fn(*args, **kw)
    except Exception as e:  # noqa: BLE001  - reported in the table and failing --check
        return [Result(key=f"item{item}_error", item=item, ours="-", baseline="-", config={},
                       status=ERROR, note=f"{type(e).__name__}: {e}")]
    return out if isinstance(out, list) else [out]


def run_items(args, settings: dict, device: torch.device) -> list[Result]:
    from bench_attention import bench_mha
    from bench_engine import bench_engine
    from bench_probe import bench_probe
    from bench_rank import bench_rank_report, bench_scaling
    from bench_seeds import bench_seeds
    from bench_startup import bench_startup
    from bench_training import bench_training_step

    amp = torch.bfloat16 if device.type == "cuda" else None
    s = settings
    results = []
    for item in args.items:
        t0 = time.perf_counter()
        if item == 1:
            rows = _guarded(1, bench_rank_report, s["rank_shapes"], device=device, timing=s["timing"],
                            numpy_timing=s["numpy_timing"])
        elif item == 2:
            rows = _guarded(2, bench_scaling, s["scaling_ns"], device=device, timing=s["scaling_timing"],
                            svd_elements=s["svd_elements"], hardmax_elements=s["hardmax_elements"])
        elif item == 3:
            rows = _guarded(3, bench_mha, s["mha"], device=device, timing=s["timing"], amp=amp)
        elif item == 4:
            rows = _guarded(4, bench_training_step, s["train"], device=device, timing=s["train_timing"], amp=amp)
        elif item == 5:
            rows = _guarded(5, bench_probe, s["probe_n"], device=device, timing=s["probe_timing"])
        elif item == 6:
            rows = _guarded(6, bench_startup, timing=s["startup_timing"])
        elif item == 8:
            rows = _guarded(8, bench_seeds, s["seeds"]["models"], s["seeds"]["seeds"], s["seeds"]["steps"],
                            timing=s["seeds_timing"])
        else:
            rows = _guarded(7, bench_engine, s["engine"]["models"], s["engine"]["steps"],
                            timing=s["engine_timing"], info=s["engine_info"])
        print(f"item {item}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        results.extend(rows)
    return results


def _stem(env: dict, quick: bool) -> str:
    return env["machine"] + ("-quick" if quick else "")


def write_run(out: Path, results: list[Result], env: dict, stem: str) -> list[str]:
    """A results file and its markdown table: <stem>.json and <stem>.md."""
    write_json(out / f"{stem}.json", results, env)
    atomic_write(out / f"{stem}.md", markdown_table(results, env).encode())
    return [str(out / f"{stem}.json"), str(out / f"{stem}.md")]


def write_book(out: Path, results: list[Result], env: dict) -> list[str]:
    """The book's files: latest.json and latest.md (the appendix's table), summary.md (the
    README's), scaling.png. They may combine rows of runs on different machines; the
    environment line names the run of every row."""
    written = write_run(out, results, env, "latest")
    atomic_write(out / "summary.md", summary_markdown(results, env).encode())
    written.append(str(out / "summary.md"))
    scaling = next((r for r in results if r.extra.get("points")), None)
    if scaling is not None:
        scaling_plot(out / "scaling.png", scaling)
        written.append(str(out / "scaling.png"))
    return written


def write_results(out: Path, results: list[Result], env: dict, *, quick: bool, items=()) -> list[str]:
    """The files of a run: <machine>[-quick].json and .md, and after a full run the book's files.

    Rows of the previous files whose items are not in ``items`` (the items this run measured)
    are kept: in the machine's file those of its previous run, in the book's those of
    latest.json, so a run of some items refreshes only their rows.
    """
    stem = _stem(env, quick)
    written = write_run(out, *merge_previous(out / f"{stem}.json", results, env, items), stem)
    if not quick:
        written += write_book(out, *merge_previous(out / "latest.json", results, env, items))
    return written


def render(path: Path, out: Path) -> int:
    """Rewrite the tables and the plot from a results file, without measuring anything; a full
    run's file becomes the book's (latest.json)."""
    try:
        data = json.loads(path.read_text())
        results = [Result(**r) for r in data["results"]]
        env = data["environment"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read results from {path}: {e}", file=sys.stderr)
        return 2
    written = write_run(out, results, env, path.stem)
    if env.get("mode") != "quick":
        written += [w for w in write_book(out, results, env) if w not in written]
    print(f"wrote {', '.join(written)}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render is not None:
        return render(args.render, args.out)
    mode = "quick" if args.quick else "full"
    device = torch.device("cuda" if args.gpu else "cpu")
    settings = {**SETTINGS[mode], **(GPU_OVERRIDES if args.gpu and not args.quick else {})}
    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    limits = None
    try:
        from threadpoolctl import threadpool_limits
        # NumPy's BLAS gets the same thread count as torch, so both sides of a ratio use the same cores.
        limits = threadpool_limits(limits=threads, user_api="blas")
    except ImportError:
        pass

    start = time.perf_counter()
    env = environment(device, threads)
    env.update(mode=mode, date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
               command=" ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
               git_commit=_git_commit(), settings=settings)
    print(f"{env['machine']}: torch {env['versions']['torch']}, {threads} threads, {mode} mode, "
          f"load average {env['loadavg_start'][0]:.2f}", flush=True)
    results = run_items(args, settings, device)
    env.update(loadavg_end=list(os.getloadavg()), wall_s=time.perf_counter() - start)
    if limits is not None:
        limits.restore_original_limits()

    print()
    print(text_table(results))
    print(f"\nwall time {env['wall_s']:.1f} s; load average {env['loadavg_start'][0]:.2f} at start, "
          f"{env['loadavg_end'][0]:.2f} at end")
    if not args.no_write:
        written = write_results(args.out, results, env, quick=args.quick, items=args.items)
        print(f"wrote {', '.join(written)}")
    bad = failed(results)
    if bad:
        print(f"{len(bad)} comparison(s) missed a target or failed a check: "
              + ", ".join(r.key for r in bad))
    return 1 if (args.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
