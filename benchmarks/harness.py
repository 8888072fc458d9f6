"""Timing and bookkeeping shared by every benchmark.

A comparison times "ours" and a "baseline" in the same process, interleaved: after the warm-up
runs, each repetition runs both back to back, alternating which goes first. The ratio reported
is the median over repetitions of t_ours / t_baseline, so a change of machine load during the
run hits both sides of each pair alike; medians, minima and maxima of each side are kept too.
"""
from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

# Targets are upper bounds on t_ours / t_baseline; None marks a comparison reported for information.
PASS, FAIL, INFO, SKIPPED, ERROR = "PASS", "FAIL", "info", "skipped", "error"


@dataclass
class Timing:
    """Wall times in seconds of one side of a comparison."""
    times: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def summary(self) -> dict:
        return {"median_s": self.median, "min_s": min(self.times), "max_s": max(self.times),
                "reps": len(self.times), "times_s": self.times}


@dataclass
class Result:
    """One row of the results table.

    ``ratio`` is t_ours / t_baseline (median over paired repetitions); ``target`` is the largest
    ratio that passes, or None when the row is information only (then ``status`` is info,
    skipped or error and ``note`` says why).
    """
    key: str
    item: int
    ours: str
    baseline: str
    config: dict
    ratio: float | None = None
    target: float | None = None
    status: str = INFO
    note: str = ""
    timings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def judge(ratio: float | None, target: float | None) -> str:
    """PASS when ratio <= target, FAIL otherwise; info without a target or a ratio."""
    if target is None or ratio is None:
        return INFO
    return PASS if ratio <= target else FAIL


MIN_REPS = 3  # a median needs at least three


def time_pair(ours: Callable[[], object], baseline: Callable[[], object], *, warmup: int, reps: int,
              sync: Callable[[], None] | None = None,
              budget_s: float | None = None) -> tuple[Timing, Timing, float]:
    """Time two callables interleaved; returns (ours, baseline, median of per-pair ratios).

    ``budget_s`` caps the repetitions at what the last warm-up pair says fits in that many
    seconds (never fewer than MIN_REPS, never more than ``reps``), so a loaded machine makes
    the run noisier rather than endless.
    """
    if warmup < 1 or reps < 1:
        raise ValueError(f"need warmup >= 1 and reps >= 1, got warmup={warmup}, reps={reps}")
    sync = sync or (lambda: None)

    def once(fn):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - t0

    for _ in range(warmup):
        pair_s = once(ours) + once(baseline)
    if budget_s is not None:
        reps = max(min(reps, int(budget_s / max(pair_s, 1e-9))), min(reps, MIN_REPS))
    t_ours, t_base = [], []
    for r in range(reps):
        if r % 2 == 0:
            t_ours.append(once(ours))
            t_base.append(once(baseline))
        else:
            t_base.append(once(baseline))
            t_ours.append(once(ours))
    ratio = statistics.median(a / b for a, b in zip(t_ours, t_base))
    return Timing(t_ours), Timing(t_base), ratio


def time_one(fn: Callable[[], object], *, warmup: int, reps: int,
             sync: Callable[[], None] | None = None, budget_s: float | None = None) -> Timing:
    """Time one callable alone (used for scaling curves, where nothing is paired)."""
    ours, _, _ = time_pair(fn, lambda: None, warmup=warmup, reps=reps, sync=sync, budget_s=budget_s)
    return ours


def compare(key: str, item: int, *, ours: tuple[str, Callable], baseline: tuple[str, Callable],
            config: dict, target: float | None, warmup: int, reps: int, sync=None,
            budget_s: float | None = None, note: str = "", extra: dict | None = None) -> Result:
    """Time ``ours`` against ``baseline`` (each a (label, callable)) and judge the ratio."""
    t_ours, t_base, ratio = time_pair(ours[1], baseline[1], warmup=warmup, reps=reps, sync=sync,
                                      budget_s=budget_s)
    return Result(key=key, item=item, ours=ours[0], baseline=baseline[0], config=config,
                  ratio=ratio, target=target, status=judge(ratio, target), note=note,
                  timings={"ours": t_ours.summary(), "baseline": t_base.summary(),
                           "ratio_of_medians": t_ours.median / t_base.median},
                  extra=extra or {})


def cuda_sync(device: torch.device) -> Callable[[], None] | None:
    """A synchronising callable for CUDA timings (kernels run asynchronously), else None."""
    return torch.cuda.synchronize if device.type == "cuda" else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_name(device: torch.device) -> str:
    """A file-name-safe label: the GPU name on CUDA, else the CPU model and core count."""
    if device.type == "cuda":
        label = "cuda-" + torch.cuda.get_device_name(device)
    else:
        label = f"cpu-{_cpu_model()}-{os.cpu_count()}c"
    safe = "".join(c.lower() if c.isalnum() else "-" for c in label)
    return "-".join(part for part in safe.split("-") if part)


def blas_info() -> list[dict]:
    """threadpoolctl's view of the loaded BLAS/OpenMP libraries (kernel, threads), if installed."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keep = ("user_api", "internal_api", "prefix", "version", "num_threads", "architecture",
            "threading_layer")
    return [{k: lib.get(k) for k in keep if k in lib} for lib in threadpool_info()]


def environment(device: torch.device, threads: int) -> dict:
    """Machine, library versions, thread settings and load, recorded with every result file."""
    import numpy
    import pandas
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "numpy": numpy.__version__, "pandas": pandas.__version__}
    for name in ("scipy", "transformers", "matplotlib"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    env_vars = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                               "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                                               "OPENBLAS_L2_SIZE")}
    info = {"machine": machine_name(device), "platform": platform.platform(), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "device": str(device),
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
            "threads_requested": threads, "env": env_vars, "blas": blas_info(),
            "versions": versions, "loadavg_start": list(os.getloadavg())}
    return info


def fmt_seconds(s: float) -> str:
    """3 significant digits with a unit (s, ms, us)."""
    if not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-6:.3g} us"
