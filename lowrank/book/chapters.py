"""Chapters as notebooks: finding them, naming them on the command line, reading their parameters cell."""
from __future__ import annotations

import ast
import contextlib
import io
import json
import logging
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.files import BOOK_ROOT
from .errors import UsageError
from .params import short_repr

__all__ = ["Chapter", "find_root", "list_chapters", "resolve_chapter", "read_cells", "notebook_parameters",
           "quiet_papermill"]


@dataclass(frozen=True)
class Chapter:
    """A chapter notebook; ``name`` (the file stem) is also its schema key in lowrank.book.params."""

    name: str
    path: Path

    def param_file(self, scale: str) -> Path:
        return self.path.parent / "params" / scale / f"{self.name}.yaml"

    def param_sets(self) -> list[str]:
        """Names of the scales with a parameter file for this chapter, e.g. ['paper', 'smoke']."""
        base = self.path.parent / "params"
        if not base.is_dir():
            return []
        return sorted(d.name for d in base.iterdir() if (d / f"{self.name}.yaml").is_file())

    def title(self) -> str:
        for cell in read_cells(self.path):
            if cell["cell_type"] == "markdown":
                for line in cell["source"].splitlines():
                    if line.startswith("# "):
                        return line[2:].strip()
        return ""


def find_root(start: Path | None = None) -> Path | None:
    """The book folder: the nearest folder at or above ``start`` (default: the current folder)
    holding ``chapters/``, else the checkout this package was imported from, else None."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "chapters").is_dir():
            return folder
    return BOOK_ROOT if (BOOK_ROOT / "chapters").is_dir() else None


def list_chapters(root: Path) -> list[Chapter]:
    """Every notebook in ``root/chapters``, in file-name order."""
    return [Chapter(p.stem, p.resolve()) for p in sorted((Path(root) / "chapters").glob("*.ipynb"))]


def resolve_chapter(spec: str, root: Path | None) -> Chapter:
    """A chapter from a path to a notebook, a file name, a stem or a number ('1', '01')."""
    path = Path(spec)
    if path.suffix == ".ipynb" and path.is_file():
        return Chapter(path.stem, path.resolve())
    if root is None:
        raise UsageError(f"chapter {short_repr(spec)} not found: no chapters/ folder at or above {Path.cwd()} "
                         "(run from the book's folder, pass --root, or give the notebook's path)")
    known = list_chapters(root)
    stem = path.name.removesuffix(".ipynb")
    hits = [c for c in known if c.name == stem]
    if not hits and stem.isdigit():
        hits = [c for c in known if c.name.split("_", 1)[0] == stem.zfill(2)]
    if len(hits) == 1:
        return hits[0]
    names = ", ".join(c.name for c in known) or "none"
    what = "is ambiguous" if hits else "not found"
    raise UsageError(f"chapter {short_repr(spec)} {what} in {Path(root) / 'chapters'}; chapters: {names}")


def read_cells(path: Path) -> list[dict]:
    """A notebook's cells (cell_type, source as one string, metadata), read as plain JSON: what
    ``list`` and planning need, without importing nbformat's validation (start-up time)."""
    try:
        nb = json.loads(Path(path).read_bytes())
        cells = nb["cells"]
        return [{"cell_type": c.get("cell_type"), "metadata": c.get("metadata") or {},
                 "source": c["source"] if isinstance(c.get("source"), str) else "".join(c.get("source") or [])}
                for c in cells]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise UsageError(f"notebook {path} cannot be read ({type(e).__name__}); expected a Jupyter notebook "
                         "(.ipynb JSON)") from None


def notebook_parameters(chapter: Chapter, *, papermill: bool = True) -> dict[str, dict[str, Any]]:
    """name -> {default, default_text, help, papermill} for the ``parameters`` cell, in cell order.

    Names come from ``papermill.inspect_notebook`` and from Python's own parse of the cell, which
    sees every assignment the kernel will make: papermill's line parser skips a line whose comment
    holds an ``=`` (it logs "Unable to parse line"), yet injecting that name works. ``papermill``
    says whether papermill's parser found the name; ``default`` is the literal value (or its source
    text if it is not a literal) and ``help`` the line's comment. With ``papermill=False``
    (``lowrank list``, which must start fast) papermill is not imported and ``papermill`` is None.
    """
    cells = read_cells(chapter.path)
    cell = next((c for c in cells if c["cell_type"] == "code" and "parameters" in c["metadata"].get("tags", [])), None)
    if cell is None:
        raise UsageError(f"{chapter.path} has no code cell tagged 'parameters'")
    found: dict = {}
    if papermill:
        import papermill as pm

        with quiet_papermill():
            found = pm.inspect_notebook(str(chapter.path))

    out = {}
    for name, text, comment in _assignments(cell["source"]):
        out[name] = {"default_text": text, "help": comment or (found.get(name) or {}).get("help") or "",
                     "papermill": (name in found) if papermill else None}
    for name, info in found.items():
        if name not in out:
            out[name] = {"default_text": info.get("default") or "", "help": info.get("help") or "",
                         "papermill": True}
    for info in out.values():
        try:
            info["default"] = ast.literal_eval(info["default_text"])
        except (ValueError, SyntaxError):
            info["default"] = info["default_text"]
    return out


class _DropCheckedWarnings(logging.Filter):
    """papermill's warnings about parameters this module has already read and checked itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(("Unable to parse line", "Passed unknown parameter"))


@contextlib.contextmanager
def quiet_papermill():
    loggers = [logging.getLogger("papermill"), logging.getLogger("papermill.translators")]
    drop = _DropCheckedWarnings()
    for log in loggers:
        log.addFilter(drop)
    try:
        yield
    finally:
        for log in loggers:
            log.removeFilter(drop)


def _assignments(source: str) -> list[tuple[str, str, str]]:
    """(name, value source, trailing comment) of each top-level ``name = value`` in a cell."""
    try:
        tree = ast.parse(source)
        comments = {tok.start[0]: tok.string.lstrip("#").strip()
                    for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                    if tok.type == tokenize.COMMENT}
    except (SyntaxError, tokenize.TokenError):
        return []  # not plain Python (a magic, say): papermill's reading is all there is
    found = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if isinstance(target, ast.Name):
            found.append((target.id, ast.get_source_segment(source, node.value),
                          comments.get(node.end_lineno, "")))
    return found
