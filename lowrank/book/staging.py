"""``lowrank book``: every chapter run with one scale's set, then rendered from a staged copy of the book."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from ..core.provenance import code_hash
from .chapters import list_chapters, notebook_parameters
from .errors import ExecutionFailed, UsageError
from .params import short_repr
from ..experiments.evidence import FOLDER as EVIDENCE_FOLDER
from .execution import execute
from .planning import plan_run, short_hash

__all__ = ["build_book", "plan_book", "stage_book"]

# Files a staged book needs besides chapters/, the top-level *.md, the bibliography files that
# _config.yml names and every file _toc.yml names.
_BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib")
_BOOK_MARK = ".lowrank-book"  # written into a folder `lowrank book` created, so it may reuse it


def build_book(root: Path, *, scale: str = "paper", out: Path | None = None, allow_cpu: bool = False, force: bool = False,
               kernel: str | None = None, rerun: bool = False, progress_bar: bool = True,
               log_output: bool = False, overrides: list[tuple[str, Any]] | tuple = ()) -> Path:
    """``lowrank book``: every chapter in the toc run with its ``scale`` set, rendered from a staged copy.

    All chapters are planned (parameters, kernel, GPU) before the first one runs, so a mistake
    in the last chapter's set stops the build at once. Runs go to ``OUT/runs/<chapter>/<key>``,
    the key hashing the effective parameters, the kernel, the notebook's code and the lowrank
    sources: a rebuild reuses every finished run whose key is unchanged (``rerun`` re-executes
    all), so an interrupted build resumes at the chapter it stopped in. The book (``_config.yml``,
    ``_toc.yml``, top-level ``*.md``, the bibliography files, ``chapters/`` and any other file the
    toc names) is copied to ``OUT/src``, each executed notebook replaces its chapter there, and the
    copy is rendered with execution off into ``OUT/_build/html``. Returns that folder.
    ``overrides`` (``-p``) apply to every chapter whose parameters cell has the name, e.g.
    ``device cpu`` next to ``allow_cpu``; a name no chapter has is an error.
    """
    out, plans = plan_book(root, scale=scale, out=out, allow_cpu=allow_cpu, force=force, kernel=kernel,
                           overrides=overrides)
    root = Path(root).resolve()
    for plan in plans:
        for note in plan.notes:
            print(f"lowrank: warning: {note}", file=sys.stderr)

    src = out / "src"
    out.mkdir(parents=True, exist_ok=True)
    (out / _BOOK_MARK).write_text(f"staged by lowrank book from {root}; lowrank may replace src/, runs/ "
                                  "and _build/ here\n", encoding="utf8")
    stage_book(root, src)
    for i, plan in enumerate(plans, 1):
        key = short_hash([plan.parameters, plan.kernel, _code_cells(plan.chapter.path), code_hash()])
        rundir = out / "runs" / plan.chapter.name / key
        if rundir.is_dir() and not rerun:
            print(f"[{i}/{len(plans)}] {plan.chapter.name}: reusing {rundir}", file=sys.stderr)
        else:
            if rundir.exists():
                shutil.rmtree(rundir)
            print(f"[{i}/{len(plans)}] {plan.chapter.name}: running the {scale!r} set -> {rundir}",
                  file=sys.stderr)
            execute(plan, rundir, progress_bar=progress_bar, log_output=log_output,
                    command=f"lowrank book --scale {scale}")
        shutil.copyfile(rundir / plan.chapter.path.name, src / "chapters" / plan.chapter.path.name)
        evidence = rundir / "files" / EVIDENCE_FOLDER / f"{plan.chapter.name}.json"
        if evidence.is_file():  # chapter 08 of the staged book reads it beside the staged notebooks
            (src / "chapters" / EVIDENCE_FOLDER).mkdir(exist_ok=True)
            shutil.copyfile(evidence, src / "chapters" / EVIDENCE_FOLDER / evidence.name)

    config_path = src / "_config.yml"
    config = yaml.safe_load(config_path.read_text(encoding="utf8")) or {}
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    config_path.write_text(f"# Staged by `lowrank book --scale {scale}` from {root / '_config.yml'}; "
                           "notebooks are not executed here.\n" + yaml.safe_dump(config, sort_keys=False),
                           encoding="utf8")
    command = [_jupyter_book(), "build", str(src), "--path-output", str(out)]
    print("+ " + " ".join(command), file=sys.stderr, flush=True)
    if subprocess.call(command, cwd=src) != 0:
        raise ExecutionFailed(f"jupyter-book could not render {src}; the runs are kept in {out / 'runs'}")
    return out / "_build" / "html"


def plan_book(root: Path, *, scale: str = "paper", out: Path | None = None, allow_cpu: bool = False,
              force: bool = False, kernel: str | None = None, overrides: list[tuple[str, Any]] | tuple = (),
              machine: bool = True) -> tuple[Path, list]:
    """Every check ``lowrank book`` makes before it writes anything: the output folder, the book's
    toc, the ``-p`` names, and every chapter's plan (:func:`plan_run`). Returns (the resolved output
    folder, the plans). ``machine=False`` (``--dry-run``) notes the GPU a set asks for in the plans'
    notes instead of refusing on a machine without one; every other refusal is the same."""
    root = Path(root).resolve()
    out = Path(out or root / "runs" / f"book-{scale}").expanduser().resolve()
    _check_book_out(out, root)
    if not (root / "_toc.yml").is_file() or not (root / "_config.yml").is_file():
        raise UsageError(f"{root} is not a book: _config.yml and _toc.yml are needed")
    in_toc = set(_toc_files(root / "_toc.yml"))
    chapters = [c for c in list_chapters(root) if f"chapters/{c.path.name}" in in_toc]
    skipped = [c.name for c in list_chapters(root) if c not in chapters]
    if skipped:
        print(f"lowrank: not in _toc.yml, not run: {', '.join(skipped)}", file=sys.stderr)
    if not chapters:
        raise UsageError(f"_toc.yml names no notebook of {root / 'chapters'}")
    names = {c.name: set(notebook_parameters(c)) for c in chapters}
    nowhere = [n for n, _ in overrides if not any(n in known for known in names.values())]
    if nowhere:
        import difflib

        close = difflib.get_close_matches(nowhere[0], sorted(set().union(*names.values())), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"no chapter has a parameter {short_repr(nowhere[0], 40)}{hint}; lowrank list CHAPTER "
                         "shows a chapter's parameters")
    plans = [plan_run(c, scale=scale, kernel=kernel, allow_cpu=allow_cpu, force=force, machine=machine,
                      overrides=[(n, v) for n, v in overrides if n in names[c.name]]) for c in chapters]
    return out, plans


def _check_book_out(out: Path, root: Path) -> None:
    """``book --out`` must be a new or empty folder, or one an earlier ``lowrank book`` made (it holds
    the mark file), and must not hold the book itself or lie inside a folder the book copies."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; expected a new or empty folder")
    copied = [root / "chapters", *(root / n for n in ("_ext", "appendix") if (root / n).is_dir())]
    if out == root or out in root.parents:
        raise UsageError(f"--out {out} holds the book itself ({root}); choose a new folder, e.g. "
                         f"{root / 'runs' / 'book'}")
    for folder in copied:
        if out == folder or folder in out.parents:
            raise UsageError(f"--out {out} lies inside {folder}, which the book copies; choose a folder "
                             "outside it")
    if out.is_dir() and any(out.iterdir()) and not (out / _BOOK_MARK).is_file():
        held = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        raise UsageError(f"--out {out} is not empty ({held}) and was not made by lowrank book; nothing was "
                         "changed: choose a new or empty folder")


def stage_book(root: Path, src: Path) -> None:
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf8")) or {}
    names = [n for n in (*_BOOK_FILES, *config.get("bibtex_bibfiles", [])) if (root / n).is_file()]
    names += sorted(p.name for p in root.glob("*.md"))
    names += [n for n in _toc_files(root / "_toc.yml") if not n.startswith("chapters/")]
    for name in dict.fromkeys(names):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, src / name)
    shutil.copytree(root / "chapters", src / "chapters",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    # The book's own Sphinx extensions (_ext/): jupyter-book resolves their folders against the config.
    local = ((config.get("sphinx") or {}).get("local_extensions") or {}).values()
    for folder in dict.fromkeys(local):
        if (root / folder).is_dir() and not (src / folder).exists():
            shutil.copytree(root / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))


def _toc_files(toc: Path) -> list[str]:
    """Existing files named by ``file:`` entries of a toc, with their suffix."""
    root = toc.parent
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("file", "root") and isinstance(value, str):
                    for suffix in ("", ".md", ".ipynb", ".rst"):
                        if (root / (value + suffix)).is_file():
                            found.append(value + suffix)
                            break
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc.read_text(encoding="utf8")))
    return found


def _code_cells(path: Path) -> list[str]:
    import nbformat

    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _jupyter_book() -> str:
    beside = Path(sys.executable).with_name("jupyter-book")
    found = str(beside) if beside.exists() else shutil.which("jupyter-book")
    if not found:
        raise UsageError("jupyter-book is not installed (pip install 'jupyter-book==1.0.4.post1')")
    return found
