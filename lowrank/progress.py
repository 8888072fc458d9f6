"""The package's progress bar: ``tqdm.auto``, without its import-time warning.

In a Jupyter kernel without ipywidgets, importing ``tqdm.auto`` warns "IProgress not found"
on stderr, which would land in every executed chapter that imports the trainer. Bars in
chapters are disabled (``progress=False``), and a disabled notebook bar never needs the
widget, so that one warning is filtered here, where it is raised, and nothing else is.
"""
import warnings

from tqdm import TqdmWarning

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from tqdm.auto import tqdm

__all__ = ["tqdm"]
