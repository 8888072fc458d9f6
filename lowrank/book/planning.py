"""Planning a run: every check that needs no kernel.

The parameters are merged (notebook defaults < the scale's set < ``-f`` files < ``-p`` values),
each value checked by the chapter's schema, the merged set by its cross-parameter constraints,
path parameters resolved and guarded (:mod:`lowrank.book.guards`), the memory and time estimate
compared with the machine, and the kernel and any ``# requires: gpu`` checked.
"""
from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.provenance import physical_memory
from .chapters import Chapter, notebook_parameters
from .costs import estimate
from .errors import UsageError
from .guards import check_manifests, check_path
from .parameter_files import load_parameter_file
from .params import PATHS, SCHEMAS, STORE_EXPERIMENTS, ParameterError, check_constraints, short_repr, validate

__all__ = ["RunPlan", "TIME_BOUND_S", "plan_run", "short_hash", "cuda_available"]


@dataclass
class RunPlan:
    """A checked run: what ``execute`` injects and records."""

    chapter: Chapter
    scale: str
    injected: dict[str, Any]      # normalised by the schema; what papermill injects
    parameters: dict[str, Any]    # the notebook's defaults updated by ``injected``
    sources: dict[str, str]       # parameter -> where its value was set
    files: list[Path]             # parameter files read, in order
    requires: tuple[str, ...]
    kernel: str
    notes: list[str] = field(default_factory=list)
    cost: Any = None              # lowrank.experiments.costs.Cost of the run, or None

    @property
    def params_hash(self) -> str:
        return short_hash(self.parameters)


# A run estimated above this much wall time is refused unless forced: a typo in a size (an extra
# zero) should cost a second, not a month. A week covers every committed set (the longest, chapter
# 03's paper set, is estimated at about five days of one CPU).
TIME_BOUND_S = 7 * 24 * 3600


def plan_run(chapter: Chapter, *, scale: str = "default", files: list[Path] | tuple = (),
             overrides: list[tuple[str, Any]] | tuple = (), kernel: str | None = None,
             allow_cpu: bool = False, cwd: Path | None = None, memory_bytes: float | None = None,
             force: bool = False, machine: bool = True) -> RunPlan:
    """Merge and check a run's parameters, its kernel and its requirements; start nothing.

    ``overrides`` are (name, value) pairs, values already parsed (see :func:`parse_value`).
    Besides each value's own range, checks the chapter's cross-parameter CONSTRAINTS on the
    merged set, ``device = cuda`` against the machine, path parameters (resolved against ``cwd``,
    default the current folder; values from the book's own ``--scale`` sets against the book's
    folder) and the chapter's memory estimate (lowrank.book.costs) against ``memory_bytes`` (default: this machine's
    physical memory; runs on CUDA are not compared).
    ``machine=False`` plans for another machine (``lowrank book --dry-run``): a GPU the run asks for
    and this machine lacks is a note instead of a refusal.
    Raises UsageError (exit status 2) with a message naming the parameter, value and what is allowed.
    """
    cwd = Path(cwd or Path.cwd()).resolve()
    if chapter.name not in SCHEMAS:
        raise UsageError(f"chapter {chapter.name} has no parameter schema: list its module in "
                         "lowrank/experiments/registry.py and give the module a SCHEMA")
    known = notebook_parameters(chapter)

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    read: list[Path] = []
    requires: list[str] = []
    layers = []
    if scale != "default":
        set_file = chapter.param_file(scale)
        if not set_file.is_file():
            sets = ", ".join(["default", *chapter.param_sets()])
            raise UsageError(f"chapter {chapter.name} has no {scale!r} parameter set "
                             f"(expected {set_file}); scales available: {sets}")
        layers.append(set_file)
    layers += [Path(f) for f in files]
    bases: dict[str, Path] = {}
    book = chapter.path.parent.parent
    for k, path in enumerate(layers):
        got, req = load_parameter_file(path)
        read.append(path)
        requires += req
        for name, value in got.items():
            values[name], sources[name] = value, f"in {path}"
            bases[name] = book if (scale != "default" and k == 0) else cwd
    for name, value in overrides:
        values[name], sources[name] = value, f"by -p {name} {short_repr(value)}"
        bases[name] = cwd

    unknown = [n for n in values if n not in known]
    if unknown:
        n = unknown[0]
        close = difflib.get_close_matches(n, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"unknown parameter {short_repr(n, 40)} = {short_repr(values[n])} (set {sources[n]}) for chapter "
                         f"{chapter.name}{hint}; its parameters cell defines: {', '.join(known)}")
    injected = {}
    for name, value in values.items():
        try:
            injected.update(validate(chapter.name, {name: value}, partial=True))
        except ParameterError as e:
            raise UsageError(f"{e} [set {sources[name]}]") from None
    for name, kind in PATHS.get(chapter.name, {}).items():
        if injected.get(name) is not None:
            injected[name] = check_path(name, injected[name], kind, bases[name], sources[name], book,
                                        STORE_EXPERIMENTS.get(chapter.name))

    merged = {**{k: v["default"] for k, v in known.items()}, **injected}
    try:
        check_constraints(chapter.name, merged)
    except ParameterError as e:
        names = getattr(e, "names", ())
        where = "; ".join(f"{n} set {sources[n]}" for n in names if n in sources) or "the notebook's defaults"
        raise UsageError(f"{e} [{where}]") from None
    check_manifests(chapter, merged, injected, sources)
    device = merged.get("device")
    notes = []
    if device == "cuda" and not cuda_available() and not machine:
        notes.append(f"{chapter.name}: device = 'cuda', and this machine has no CUDA device")
    elif device == "cuda" and not cuda_available():
        raise UsageError(f"parameter 'device' = 'cuda' (set {sources.get('device', 'in the notebook')}) but no "
                         "CUDA device is visible (torch.cuda.is_available() is False); use -p device cpu")
    on_gpu = device == "cuda" or (device == "auto" and cuda_available())
    est = estimate(chapter.name, merged, device="cuda" if on_gpu else "cpu", root=book)
    if est is not None:
        limit = memory_bytes if memory_bytes is not None else physical_memory()
        if limit and est.bytes > limit and not on_gpu:
            raise UsageError(f"chapter {chapter.name}: these parameters need about {_gb(est.bytes)} of memory "
                             f"({est.what}); this machine has {_gb(limit)}. Reduce the sizes you set "
                             f"({', '.join(sorted(sources)) or 'none'}), or run on a larger machine")
        if est.wall_s > TIME_BOUND_S and not force:
            raise UsageError(f"chapter {chapter.name}: this run is estimated at {est.wall_s / 86400:,.1f} days of wall "
                             f"time ({est.what}), over the {TIME_BOUND_S // 86400} days a run may take unasked; "
                             f"reduce the sizes you set ({', '.join(sorted(sources)) or 'none'}), or pass --force "
                             "to run it anyway")
        if est.wall_s > 3600:
            notes.append(f"{chapter.name}: this run is estimated at {est.hours_text()} "
                         f"({est.wall_s / 3600:,.1f} hours of wall time) and {_gb(est.bytes)} of memory ({est.what})")

    requires_t = tuple(dict.fromkeys(requires))
    if "gpu" in requires_t and not cuda_available():
        where = ", ".join(str(p) for p in read)
        if not machine:
            notes.append(f"{chapter.name}: {where} declares '# requires: gpu', and this machine has no CUDA device")
        elif not allow_cpu:
            raise UsageError(
                f"chapter {chapter.name}: {where} declares '# requires: gpu' and no CUDA device is "
                "visible (torch.cuda.is_available() is False). On a CPU this run would take very long; "
                "run it on a GPU machine, or pass --allow-cpu to run it here anyway.")
        else:
            notes.append(f"--allow-cpu: running {chapter.name} without the GPU that {where} asks for")

    kernel = kernel or _notebook_kernel(chapter)
    _check_kernel(kernel)
    return RunPlan(chapter=chapter, scale=scale, injected=injected,
                   parameters=merged,
                   sources=sources, files=read, requires=requires_t, kernel=kernel, notes=notes, cost=est)


def _gb(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _notebook_kernel(chapter: Chapter) -> str:
    import nbformat

    nb = nbformat.read(chapter.path, as_version=4)
    name = nb.metadata.get("kernelspec", {}).get("name")
    if not name:
        raise UsageError(f"{chapter.path} names no kernel in its metadata; pass --kernel NAME")
    return name


def _check_kernel(kernel: str) -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    ksm = KernelSpecManager()
    try:
        ksm.get_kernel_spec(kernel)
    except NoSuchKernel:
        have = ", ".join(sorted(ksm.find_kernel_specs())) or "none"
        raise UsageError(f"no Jupyter kernel named {kernel!r}; installed kernels: {have}") from None


def short_hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, default=repr).encode()
    return hashlib.sha256(blob).hexdigest()[:8]
