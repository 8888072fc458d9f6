"""Chapter notebooks as text: the py:percent form (jupytext) of a notebook's cells, without outputs."""
from __future__ import annotations

from pathlib import Path

__all__ = ["source_path", "text_source"]

# What the text keeps of the notebook: cells, their tags and the kernel, not outputs or run metadata.
_KEEP_NOTEBOOK_METADATA = "kernelspec,-jupytext.text_representation.jupytext_version"
_KEEP_CELL_METADATA = "tags"


def source_path(notebook: str | Path) -> Path:
    """chapters/NN_name.ipynb -> chapters/text/NN_name.py"""
    notebook = Path(notebook)
    return notebook.parent / "text" / f"{notebook.stem}.py"


def text_source(notebook: str | Path) -> str:
    """The notebook's cells in py:percent, markdown as comments, code as code."""
    import jupytext

    nb = jupytext.read(notebook)
    nb.metadata.setdefault("jupytext", {})
    nb.metadata["jupytext"]["notebook_metadata_filter"] = _KEEP_NOTEBOOK_METADATA
    nb.metadata["jupytext"]["cell_metadata_filter"] = _KEEP_CELL_METADATA
    return jupytext.writes(nb, fmt="py:percent")
