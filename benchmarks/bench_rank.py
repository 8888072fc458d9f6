"""Items 1 and 2: rank analysis of batches of attention matrices.

1. ``rank_report`` against (a) a per-matrix NumPy loop computing the same measures the way an
   analysis script usually does (``np.linalg.matrix_rank``, then a second SVD for effective and
   stable rank) and (b) a bare batched ``torch.linalg.svdvals``, the floor.
2. Time per matrix against n for the SVD-based measures and for ``hardmax_rank``, with the
   slopes of a log-log fit.
"""
from __future__ import annotations

import numpy as np
import torch

from harness import Result, compare, cuda_sync, time_one
from lowrank.measure.rank import hardmax_rank, rank_report
from lowrank.theory.sampling import sample_attention

HEAD_DIM = 64  # attention from d_h = 64 heads, the usual BERT/GPT head size
SLOPE_FROM_N = 256  # below this, per-call overheads bend the log-log curve


def attention_batch(batch: int, n: int, *, seed: int = 0, device="cpu") -> torch.Tensor:
    """Softmax attention matrices (batch, n, n), float64, from Gaussian tokens and weights."""
    _, probs = sample_attention(n, HEAD_DIM, batch=batch, inputs="gaussian", d_model=256,
                                seed=seed, device=device, dtype=torch.float64)
    return probs


def numpy_loop_ranks(A: np.ndarray) -> dict[str, np.ndarray]:
    """The usual analysis-script route, one matrix at a time: np.linalg.matrix_rank (default
    tolerance), then np.linalg.svd again for effective rank (Roy & Vetterli) and stable rank.

    A is (B, m, n); returns arrays of length B under numerical_rank, effective_rank, stable_rank.
    """
    ranks, eff, stable = [], [], []
    for M in A:
        ranks.append(np.linalg.matrix_rank(M))
        s = np.linalg.svd(M, compute_uv=False)
        p = s / s.sum()
        p = p[p > 0]
        eff.append(np.exp(-(p * np.log(p)).sum()))
        stable.append((s ** 2).sum() / s[0] ** 2)
    return {"numerical_rank": np.array(ranks), "effective_rank": np.array(eff),
            "stable_rank": np.array(stable)}


def check_same_measures(A: torch.Tensor) -> None:
    """Raise if rank_report and the NumPy loop disagree on A (so the timing compares like with like)."""
    report = rank_report(A)
    ref = numpy_loop_ranks(A.cpu().numpy())
    ours = {"numerical_rank": report["numerical_rank[rtol=max(m,n)eps]"].to_numpy(),
            "effective_rank": report["effective_rank"].to_numpy(),
            "stable_rank": report["stable_rank"].to_numpy()}
    if not np.array_equal(ours["numerical_rank"], ref["numerical_rank"]):
        raise AssertionError("rank_report and np.linalg.matrix_rank disagree on the numerical rank")
    for name in ("effective_rank", "stable_rank"):
        if not np.allclose(ours[name], ref[name], rtol=1e-9):
            raise AssertionError(f"rank_report and the NumPy loop disagree on {name}")


def bench_rank_report(shapes, *, device: torch.device, timing: dict, numpy_timing: dict) -> list[Result]:
    """Item 1 for each (batch, n) in shapes: two rows per shape, vs NumPy loop and vs svdvals.

    ``timing`` and ``numpy_timing`` are keyword arguments of harness.compare (warmup, reps,
    budget_s); the NumPy loop is slow enough to need fewer repetitions.
    """
    sync = cuda_sync(device)
    rows = []
    for batch, n in shapes:
        A = attention_batch(batch, n, device=device)
        check_same_measures(A[:4])
        A_np = A.cpu().numpy()
        config = {"batch": batch, "n": n, "dtype": "float64", "device": str(device)}
        label = f"{batch}x{n}x{n}"
        rows.append(compare(
            f"rank_report_vs_numpy_{label}", 1, config=config, target=1 / 2.5,
            ours=("rank_report", lambda: rank_report(A)),
            baseline=("NumPy loop: matrix_rank + svd per matrix", lambda: numpy_loop_ranks(A_np)),
            sync=sync, note="target: at least 2.5x faster (ratio <= 0.4)", **numpy_timing))
        rows.append(compare(
            f"rank_report_vs_svdvals_{label}", 1, config=config, target=1.15,
            ours=("rank_report", lambda: rank_report(A)),
            baseline=("torch.linalg.svdvals (floor)", lambda: torch.linalg.svdvals(A)),
            sync=sync, note="target: at most 1.15x the bare batched SVD", **timing))
    return rows


def loglog_slope(ns, seconds) -> float:
    """Least-squares slope of log(seconds) on log(n)."""
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(seconds, float)), 1)[0])


SVD_METHOD, HARDMAX_METHOD = "SVD measures (rank_report)", "hardmax_rank"


def bench_scaling(ns, *, device: torch.device, timing: dict, svd_elements: int = 2 ** 18,
                  hardmax_elements: int = 2 ** 21) -> Result:
    """Item 2: seconds per matrix for the SVD-based measures and for hardmax_rank at each n.

    Each n gets a batch of about ``svd_elements`` (SVD) or ``hardmax_elements`` (hardmax)
    matrix entries, so small n is not all call overhead and large n stays affordable; the SVD
    batch has at least one matrix per thread, so every n runs the same (split) code path. The row's
    ratio is SVD / hardmax time at the largest n; ``extra`` holds the log-log slopes (fitted
    for n >= SLOPE_FROM_N) and one point per (n, method) for the plot.
    """
    if len(set(ns)) < 2:
        raise ValueError(f"a slope needs at least two sizes, got ns={ns!r}")
    sync = cuda_sync(device)
    points = []
    for n in ns:
        for method, elements in ((SVD_METHOD, svd_elements), (HARDMAX_METHOD, hardmax_elements)):
            least = torch.get_num_threads() if method == SVD_METHOD and device.type == "cpu" else 1
            batch = max(least, elements // (n * n))
            A = attention_batch(batch, n, device=device)
            fn = (lambda: rank_report(A, hardmax=False)) if method == SVD_METHOD else (lambda: hardmax_rank(A))
            t = time_one(fn, sync=sync, **timing)
            points.append({"n": n, "batch": batch, "method": method,
                           "seconds_per_matrix": t.median / batch,
                           "min_s": min(t.times) / batch, "max_s": max(t.times) / batch,
                           "reps": len(t.times)})
    start = min(SLOPE_FROM_N, sorted(set(ns))[-2])  # at least two points in every fit
    slopes = {}
    for method in (SVD_METHOD, HARDMAX_METHOD):
        pts = [p for p in points if p["method"] == method and p["n"] >= start]
        slopes[method] = loglog_slope([p["n"] for p in pts], [p["seconds_per_matrix"] for p in pts])
    largest = max(ns)
    t_svd, t_hard = (next(p["seconds_per_matrix"] for p in points if p["n"] == largest and p["method"] == m)
                     for m in (SVD_METHOD, HARDMAX_METHOD))
    return Result(
        key="scaling_svd_vs_hardmax", item=2, ours="SVD measures (rank_report, hardmax=False)",
        baseline="hardmax_rank", config={"n": f"{min(ns)}..{largest}", "dtype": "float64", "device": str(device)},
        ratio=t_svd / t_hard, target=None,
        note=(f"per matrix, at n={largest}; log-log slopes for n >= {start}: "
              f"SVD {slopes[SVD_METHOD]:.2f}, hardmax {slopes[HARDMAX_METHOD]:.2f}"),
        extra={"slopes": slopes, "slope_from_n": start, "points": points})
