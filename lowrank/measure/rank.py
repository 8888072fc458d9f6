"""Rank measures for batches of matrices, all from one SVD.

Every function takes a tensor (..., m, n) and returns one value per matrix, shape (...).
Analysis runs in float64 by default; CUDA tensors stay on the GPU. On the CPU a batch is split
across torch's threads, one LAPACK call per matrix per thread (see :func:`batched_svdvals`).

Measures (see chapter 01 for definitions):
  numerical_rank  sigma_i > max(atol, rtol * sigma_1), torch.linalg.matrix_rank semantics
  effective_rank  exp of the entropy of p = sigma / sum(sigma) (Roy & Vetterli 2007)
  stable_rank     sum(sigma^2) / sigma_1^2
  energy_rank     smallest k whose top-k sigma^2 hold a fraction `energy` of the total
  hardmax_rank    number of distinct argmax columns over the rows (no SVD)
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import torch

__all__ = [
    "batched_svdvals", "singular_values", "numerical_rank", "effective_rank", "stable_rank",
    "energy_rank", "hardmax_rank", "rank_report", "default_rtol", "rank_label",
    "DEFAULT_TOL", "FLOAT32", "FLOAT32_TOL", "rtol_or_default", "tolerance_label",
    "numerical_rank_of_singular_values", "effective_rank_of_singular_values",
]


def _check(A, dtype: torch.dtype | None) -> torch.Tensor:
    if isinstance(A, np.ndarray):
        A = torch.from_numpy(A)
    if not isinstance(A, torch.Tensor):
        raise ValueError(f"expected a torch.Tensor or numpy array, got {type(A).__name__}")
    if A.dim() < 2:
        raise ValueError(f"expected a matrix or a batch of matrices (..., m, n), got shape {tuple(A.shape)}")
    if not (A.is_floating_point() or A.is_complex()):
        raise ValueError(f"expected a floating-point tensor, got dtype {A.dtype}")
    if A.shape[-1] == 0 or A.shape[-2] == 0:
        raise ValueError(f"matrices must be non-empty, got shape {tuple(A.shape)}")
    if dtype is not None:
        A = A.to(dtype)
    if not torch.isfinite(A).all():
        raise ValueError("matrix has non-finite entries (nan or inf); ranks are undefined")
    return A


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()
_NUMPY_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _pool(workers: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if workers not in _POOLS:
            _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="lowrank-svd")
        return _POOLS[workers]


@functools.cache
def _blas_controller():
    """threadpoolctl's handle on NumPy's BLAS, or None when threadpoolctl is not installed."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _numpy_svdvals(chunk: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.linalg.svd(chunk.numpy(), compute_uv=False))


def batched_svdvals(A: torch.Tensor) -> torch.Tensor:
    """torch.linalg.svdvals of a batch (..., m, n) -> (..., min(m, n)), faster on a multi-core CPU.

    torch runs a CPU batch one matrix after another, each SVD spread over all threads by the
    LAPACK library. For the small matrices of attention analysis that parallelises poorly, and
    on a loaded machine its thread barriers stall. Here the batch is cut into one chunk per
    thread (torch.get_num_threads()), each chunk decomposed on its own Python thread with LAPACK
    on one thread (the GIL is released), so the threads never wait on each other.

    The LAPACK routine is gesdd in every case, so the values are those of torch.linalg.svdvals
    to rounding. Without autograd and with threadpoolctl installed the chunks go through NumPy's
    LAPACK (OpenBLAS in the NumPy wheels), which on the AMD processors we measured is about 1.2x
    faster per matrix than torch's MKL build; otherwise through torch. While a split runs,
    torch's and NumPy's BLAS thread counts in this process are 1 (restored afterwards). CUDA
    tensors, one thread or one matrix: plain torch.linalg.svdvals.
    """
    threads = torch.get_num_threads()
    *batch, m, n = A.shape
    flat = A.reshape(-1, m, n)
    workers = min(threads, flat.shape[0])
    if A.device.type != "cpu" or workers < 2:
        return torch.linalg.svdvals(A)
    blas = _blas_controller()
    use_numpy = blas is not None and not A.requires_grad and A.dtype in _NUMPY_DTYPES
    chunks = flat.tensor_split(workers)
    torch.set_num_threads(1)
    try:
        if use_numpy:
            with blas.limit(limits=1, user_api="blas"):
                parts = list(_pool(workers).map(_numpy_svdvals, chunks))
        else:
            parts = list(_pool(workers).map(torch.linalg.svdvals, chunks))
    finally:
        torch.set_num_threads(threads)
    return torch.cat(parts).reshape(*batch, min(m, n))


def singular_values(A, *, dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """Singular values, descending, shape (..., min(m, n)); float64 unless dtype=None."""
    return batched_svdvals(_check(A, dtype))


def default_rtol(m: int, n: int, dtype: torch.dtype = torch.float64) -> float:
    """max(m, n) * eps, the default relative tolerance of torch and numpy matrix_rank."""
    return max(m, n) * torch.finfo(dtype).eps


# The tolerance vocabulary of printed ranks. An ``rtols`` entry of None is torch's default,
# max(m, n) eps of float64 (the analysis dtype); FLOAT32 is the same rule with float32's eps, the
# rounding level of a model that computed its attention in float32 (about 8.4e8 times coarser).
DEFAULT_TOL = "rtol=max(m,n)eps"
FLOAT32 = "float32"
FLOAT32_TOL = "rtol=max(m,n)eps_float32"


def rtol_or_default(rtol: float | str | None) -> float | str | None:
    """An ``rtols`` entry as a parameter gives it: 0 (or None) means torch's default, None here."""
    return None if rtol is None or rtol == 0 else rtol


def tolerance_label(rtol: float | str | None) -> str:
    """The label of an ``rtols`` entry: DEFAULT_TOL for None, FLOAT32_TOL for FLOAT32, else 'rtol=<g>'."""
    if rtol is None:
        return DEFAULT_TOL
    if rtol == FLOAT32:
        return FLOAT32_TOL
    if isinstance(rtol, str):
        raise ValueError(f"unknown tolerance {rtol!r}: use None, {FLOAT32!r} or a number")
    return f"rtol={rtol:g}"


def _threshold(sigma: torch.Tensor, m: int, n: int, atol, rtol) -> torch.Tensor:
    # torch.linalg.matrix_rank: rtol defaults to max(m, n) * eps when atol is None or 0, else 0.
    if rtol is None:
        rtol = default_rtol(m, n, sigma.dtype) if (atol is None or atol == 0) else 0.0
    atol = 0.0 if atol is None else atol
    return torch.clamp(sigma[..., :1] * rtol, min=atol)


def numerical_rank_of_singular_values(sigma, m, n, atol, rtol):
    return (sigma > _threshold(sigma, m, n, atol, rtol)).sum(-1)


def effective_rank_of_singular_values(sigma):
    total = sigma.sum(-1, keepdim=True)
    p = sigma / torch.where(total > 0, total, torch.ones_like(total))
    entropy = -torch.special.xlogy(p, p).sum(-1)  # xlogy gives 0 log 0 = 0
    return torch.where(total[..., 0] > 0, torch.exp(entropy), torch.zeros_like(entropy))


def _stable_rank(sigma):
    top = sigma[..., 0] ** 2
    return torch.where(top > 0, (sigma ** 2).sum(-1) / torch.where(top > 0, top, 1.0), 0.0)


def _energy_rank(sigma, energy):
    if not 0.0 < energy <= 1.0:
        raise ValueError(f"energy must be in (0, 1], got {energy!r}")
    sq = sigma ** 2
    cum = sq.cumsum(-1)
    # A small slack keeps energy=1.0 from demanding the rounding error of the last few terms.
    need = energy * cum[..., -1:] * (1 - 1e-12)
    k = (cum < need).sum(-1) + 1
    return torch.where(cum[..., -1] > 0, k, torch.zeros_like(k))


def numerical_rank(A, *, atol: float | None = None, rtol: float | None = None,
                   dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """Number of singular values above max(atol, rtol * sigma_1) (matrix_rank semantics)."""
    A = _check(A, dtype)
    return numerical_rank_of_singular_values(batched_svdvals(A), *A.shape[-2:], atol, rtol)


def effective_rank(A, *, dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """Roy & Vetterli (2007): exp(-sum p log p) with p = sigma / sum(sigma); 0 for a zero matrix."""
    return effective_rank_of_singular_values(singular_values(A, dtype=dtype))


def stable_rank(A, *, dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """sum(sigma^2) / sigma_1^2 = ||A||_F^2 / ||A||_2^2; 0 for a zero matrix."""
    return _stable_rank(singular_values(A, dtype=dtype))


def energy_rank(A, energy: float = 0.99, *, dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """Smallest k with ``sum_{i<=k} sigma_i^2 >= energy * sum sigma^2``."""
    return _energy_rank(singular_values(A, dtype=dtype), energy)


def hardmax_rank(A) -> torch.Tensor:
    """Number of distinct columns holding a row maximum: the exact rank of hardmax(A).

    A 0/1 matrix with one 1 per row has rank equal to the number of distinct columns used,
    so this needs no SVD. Ties go to the lowest column index (torch.argmax).
    """
    A = _check(A, None)
    *batch, m, n = A.shape
    idx = A.argmax(-1).reshape(-1, m)
    hit = torch.zeros(idx.shape[0], n, dtype=torch.bool, device=A.device)
    hit.scatter_(1, idx, True)
    return hit.sum(-1).reshape(batch)


def rank_label(measure: str, tolerance: str | float | None = None, matrix: str | None = None) -> str:
    """Human label saying which matrix, which measure and which tolerance, for printed ranks."""
    tol = "" if tolerance in (None, "") else f", {tolerance}" if isinstance(tolerance, str) else f", rtol={tolerance:g}"
    what = f"{measure}{tol}"
    return f"{what} of {matrix}" if matrix else what


def rank_report(A, *, rtols: Sequence[float | str | None] = (None, 1e-6, 1e-3),
                energies: Sequence[float] = (0.9, 0.99), atol: float | None = None,
                hardmax: bool = True, long: bool = False,
                dtype: torch.dtype | None = torch.float64) -> pd.DataFrame:
    """Every measure from one SVD per matrix, as a tidy table.

    Wide form (default): one row per matrix (``index`` is its flat position in the batch),
    one column per (measure, tolerance), e.g. ``numerical_rank[rtol=max(m,n)eps]``,
    ``numerical_rank[rtol=1e-06]``, ``effective_rank``, ``stable_rank``,
    ``energy_rank[energy=0.99]``, ``hardmax_rank``; an ``rtols`` entry FLOAT32 gives
    ``numerical_rank[rtol=max(m,n)eps_float32]`` (see :func:`tolerance_label`). Long form (``long=True``): columns
    ``index, m, n, measure, tolerance, value``.
    """
    A = _check(A, dtype)
    *batch, m, n = A.shape
    sigma = batched_svdvals(A).reshape(-1, min(m, n))
    columns: dict[tuple[str, str], torch.Tensor] = {}
    for rtol in rtols:
        tol = tolerance_label(rtol)
        if atol is not None:
            tol += f",atol={atol:g}"
        value = default_rtol(m, n, torch.float32) if rtol == FLOAT32 else rtol
        columns[("numerical_rank", tol)] = numerical_rank_of_singular_values(sigma, m, n, atol, value)
    columns[("effective_rank", "")] = effective_rank_of_singular_values(sigma)
    columns[("stable_rank", "")] = _stable_rank(sigma)
    for e in energies:
        columns[("energy_rank", f"energy={e:g}")] = _energy_rank(sigma, e)
    if hardmax:
        columns[("hardmax_rank", "")] = hardmax_rank(A.reshape(-1, m, n))
    values = {key: v.detach().cpu().double().numpy() for key, v in columns.items()}
    count = sigma.shape[0]
    if long:
        frames = [pd.DataFrame({"index": np.arange(count), "m": m, "n": n, "measure": meas,
                                "tolerance": tol, "value": v}) for (meas, tol), v in values.items()]
        return pd.concat(frames, ignore_index=True)
    wide = pd.DataFrame({"index": np.arange(count), "m": m, "n": n})
    for (meas, tol), v in values.items():
        wide[f"{meas}[{tol}]" if tol else meas] = v
    return wide
