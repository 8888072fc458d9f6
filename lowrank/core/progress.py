"""Progress bars that show in a terminal and stay out of notebook outputs.

Inside a Jupyter kernel stderr is not a terminal, so bars are off by default there and the
rendered book holds no progress noise; ``lowrank run`` shows papermill's per-cell bar instead.
Set LOWRANK_PROGRESS=1 to force bars on, 0 to force them off.
"""
from __future__ import annotations

import os

from tqdm.std import tqdm as _tqdm

__all__ = ["progress", "tqdm"]


def _enabled() -> bool | None:
    flag = os.environ.get("LOWRANK_PROGRESS")
    if flag is None:
        return None  # tqdm decides: on for a terminal, off otherwise
    return flag not in ("0", "false", "False", "")


def progress(iterable=None, **kw):
    """tqdm with the book's defaults (``disable`` follows LOWRANK_PROGRESS or the terminal)."""
    kw.setdefault("leave", False)
    kw.setdefault("dynamic_ncols", True)
    if kw.get("disable") is None:
        env = _enabled()
        kw["disable"] = None if env is None else not env
    return _tqdm(iterable, **kw)


# Plain tqdm for callers that pass ``disable`` themselves (the trainer, sweeps). tqdm.std, not
# tqdm.auto: the notebook flavour warns "IProgress not found" on stderr in kernels without
# ipywidgets, which would land in every executed chapter.
tqdm = _tqdm
