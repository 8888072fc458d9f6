"""Progress bars that show in a terminal and stay out of notebook outputs.

Inside a Jupyter kernel stderr is not a terminal, so ``progress`` bars are off by default there
and the rendered book holds no progress noise; ``lowrank run`` shows papermill's per-cell bar
instead. Set LOWRANK_PROGRESS=1 to force bars on, 0 to force them off.

``tqdm`` is ``tqdm.auto`` (used by the trainer and sweeps) without its import-time warning: in a
Jupyter kernel without ipywidgets, importing ``tqdm.auto`` warns "IProgress not found" on
stderr, which would land in every executed chapter that imports the trainer. Bars in chapters
are disabled, and a disabled notebook bar never needs the widget, so that one warning is
filtered here, where it is raised, and nothing else is.
"""
from __future__ import annotations

import os
import warnings

from tqdm import TqdmWarning
from tqdm.std import tqdm as _tqdm

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from tqdm.auto import tqdm

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
