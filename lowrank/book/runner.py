"""Re-execute a chapter with checked parameters: the logic behind ``lowrank run``, ``list`` and ``book``.

A **chapter** is a notebook ``chapters/NN_name.ipynb`` with one code cell tagged ``parameters``,
a schema registered under ``"NN_name"`` in :mod:`lowrank.book.params`, and parameter sets
``chapters/params/<scale>/NN_name.yaml`` (``smoke``: seconds, used by the tests; ``paper``: full
scale). A chapter is named on the command line by its file name, its stem or its number (``01``).

**Parameters** are merged in this order, later ones winning: the notebook's defaults, the scale's
set, each ``-f`` file in turn, each ``-p NAME VALUE`` in turn. Values are read as YAML, so
``-p n 48`` is the int 48, ``-p scales "[0.5, 1e-3]"`` a list of floats (``1e-3`` without a dot
is a float here, unlike plain PyYAML) and ``-p corpus wikitext`` a string. Before any kernel
starts, every given name must be in the notebook's ``parameters`` cell
(``papermill.inspect_notebook``) and every value must pass the chapter's schema; otherwise the run
stops with exit status 2 and a message naming the parameter, the value, where it was set and what
is allowed.

**Requirements header.** A parameter-set file may declare, in the comment block at its top, what
the run needs::

    # requires: gpu

(several are comma-separated; ``gpu`` is the only one defined). ``gpu`` means
``torch.cuda.is_available()`` must be true: without CUDA the run stops before the kernel starts,
with exit status 2, unless ``allow_cpu`` (``--allow-cpu``) is given. Put it in a ``paper`` set
whose run would take days on a CPU.

**Run folder.** A run writes into a hidden temporary sibling of OUTDIR and renames it to OUTDIR
only when the last cell has succeeded, so *OUTDIR exists if and only if the run finished*::

    OUTDIR/NN_name.ipynb   the executed notebook (with papermill's injected-parameters cell)
    OUTDIR/params.json     chapter, scale, parameter files, injected and effective parameters,
                           kernel, times, status, lowrank version, git revision
    OUTDIR/results.json    every value the chapter glued (myst_nb ``glue``), name -> value; a figure
                           as the files below that hold it; "tables" names the table files
    OUTDIR/files/          its figures (<glue key>.png and .svg), its tables (chNN_table_K.csv) and
                           whatever the chapter wrote into :func:`results_dir` (:mod:`.outputs`)

The default OUTDIR is ``runs/<chapter>/<UTC timestamp>-<hash of the effective parameters>/``.
If a cell fails (or the kernel dies, or the run is interrupted by Ctrl-C or, under the
``lowrank`` command, SIGTERM) the folder is renamed to ``OUTDIR.failed`` instead (replacing an
older one), holding ``FAILED`` (the message and the cell's traceback), ``params.json`` (status
``failed``) and the partial notebook up to and including the failing cell; the chapter's
``files/`` and ``results.json`` are dropped there, so no half-written results exist anywhere.
Only a process killed outright (SIGKILL, power loss) leaves its hidden ``.OUTDIR.tmp-PID``
folder behind; it is never mistaken for a run, and may be deleted.

**Exit statuses** (``RunError.status``): 0 finished; 1 a cell failed, the kernel died, or the
book did not render (the cell or step is named); 2 refused before a kernel started (unknown
chapter, parameter, parameter set or kernel; bad value; YAML with a name set twice or a YAML 1.1
octal or base-60 number; a broken cross-parameter constraint (``params.CONSTRAINTS``); a memory
estimate beyond the machine (``lowrank.book.costs``); a path parameter of the wrong kind
(``params.PATHS``), a store that is committed, someone else's file or at odds with its manifest
(:mod:`lowrank.book.guards`); GPU required; OUTDIR inside the book's sources, not empty, under a
file, not writable or locked by another run; an ``OUTDIR.failed`` that is not a failed run's
folder); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).

**Temporary files.** The kernel's ``TMPDIR`` (given to the kernel only, never set in this
process: ``lowrank book`` runs every chapter in one process) is a ``scratch/`` folder inside
the hidden run folder, removed when the run ends however it ends, so a chapter's ``tempfile``
folders never outlive the run. A lock file ``.OUTDIR.lock`` (the pid of the run) keeps a second
run off the same OUTDIR; one left by a killed process is ignored once that process is gone.
"""
from __future__ import annotations

import ast
import contextlib
import difflib
import hashlib
import io
import json
import logging
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from .costs import METADATA_KEY, estimate
from .guards import committed_store, inside_sources, sidecars
from .outputs import kernel_env, write_outputs
from .params import (CORPUS_NAMES, MANIFESTS, PATHS, SCHEMAS, ParameterError, check_constraints, short_repr,
                     validate)

__all__ = ["RunError", "UsageError", "OutdirLocked", "ExecutionFailed", "Chapter", "RunPlan", "KNOWN_REQUIREMENTS",
           "RUN_DIR_ENV", "MAX_PARAMETER_FILE", "load_yaml", "check_outdir", "execute_in_place",
           "kernel_manager_with_env", "find_root", "list_chapters", "resolve_chapter", "parse_value",
           "load_parameter_file", "parameter_file_header", "notebook_parameters", "plan_run",
           "default_outdir", "execute", "build_book", "results_dir"]

RUN_DIR_ENV = "LOWRANK_RUN_DIR"
KNOWN_REQUIREMENTS = ("gpu",)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_REQUIRES = re.compile(r"^#\s*requires\s*:\s*(.*?)\s*$", re.IGNORECASE)
# Files a staged book needs besides chapters/, the top-level *.md, the bibliography files that
# _config.yml names and every file _toc.yml names.
_BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib")
MAX_PARAMETER_FILE = 1 << 20  # bytes; a parameter file is a few lines
_BOOK_MARK = ".lowrank-book"  # written into a folder `lowrank book` created, so it may reuse it


class RunError(Exception):
    """A run that cannot start or did not finish; ``status`` is the command's exit status."""

    status = 1


class UsageError(RunError):
    """Refused before any kernel started: nothing was executed or written."""

    status = 2


class OutdirLocked(UsageError):
    """Another live run holds the output folder's lock."""


class ExecutionFailed(RunError):
    """A cell failed, the kernel died or the book did not render."""

    def __init__(self, message: str, *, status: int = 1, partial: Path | None = None,
                 traceback: str = ""):
        super().__init__(message)
        self.status = status
        self.partial = partial
        self.traceback = traceback


# --- reading values ------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """YAML 1.1 safe loading, plus floats written without a dot (``1e-3``), as Python reads them."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

# YAML 1.1 reads a leading-zero int as octal (010 -> 8, 0777 -> 511) and a colon-separated one as
# base 60 (1:10 -> 70); nobody typing a parameter means either, so such a value is refused.
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if _OCTAL.match(text) or ":" in text:
        kind = "octal" if _OCTAL.match(text) else "base 60 (sexagesimal)"
        value = yaml.SafeLoader.construct_yaml_int(loader, node)
        raise yaml.constructor.ConstructorError(
            None, None, f"{short_repr(text, 30)} would be read by YAML 1.1 as the {kind} number {value}; write "
            f"{value} if you mean that, or quote it (\"{text[:30]}\") for a string", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    if ":" in str(node.value):
        raise yaml.constructor.ConstructorError(
            None, None, f"{short_repr(str(node.value), 30)} would be read by YAML 1.1 as a base 60 (sexagesimal) "
            "number; write the number itself, or quote it for a string", node.start_mark)
    return yaml.SafeLoader.construct_yaml_float(loader, node)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict:
    """A mapping whose keys are all different: with a key given twice YAML keeps the last one,
    so one of the two values a user wrote would be dropped without a word."""
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key: the base constructor names it
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"found the key {short_repr(key, 40)} twice (first at line {seen[key].line + 1}); "
                "each name may be set once", key_node.start_mark)
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def load_yaml(text: str) -> Any:
    """The one YAML reading of parameters (``lowrank run``, ``lowrank book``, the smoke tests):
    YAML 1.1 safe loading, with ``1e-3`` a float as in Python."""
    return yaml.load(text, Loader=_Loader)


def _yaml_problem(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = getattr(e, "problem", None) or type(e).__name__
    return f"{' '.join(str(what).split())[:240]}{where}"


def parse_value(text: str) -> Any:
    """Read one ``-p`` value as YAML: ``"48"`` -> 48, ``"[1, 2]"`` -> [1, 2], ``"1e-3"`` -> 0.001."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as e:
        raise UsageError(f"cannot read value {short_repr(text)} as YAML ({_yaml_problem(e)}); "
                         "quote strings and lists, e.g. -p head_dims '[1, 2, 4]'") from None


def load_parameter_file(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return (name -> value, requirements declared by ``# requires:`` in the leading comments)."""
    path = Path(path)
    text = _read_parameter_file(path)
    requires: list[str] = []
    for line in _header_lines(text):
        m = _REQUIRES.match(line)
        if m:
            requires += [r.strip().lower() for r in m.group(1).split(",") if r.strip()]
    unknown = sorted(set(requires) - set(KNOWN_REQUIREMENTS))
    if unknown:
        raise UsageError(f"{path}: unknown requirement(s) {', '.join(unknown)} in '# requires:'; "
                         f"known: {', '.join(KNOWN_REQUIREMENTS)}")
    try:
        values = load_yaml(text)
    except yaml.YAMLError as e:
        raise UsageError(f"parameter file {path} is not valid YAML ({_yaml_problem(e)})") from None
    values = {} if values is None else values
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise UsageError(f"parameter file {path} must be a mapping of parameter names to values, "
                         f"got {short_repr(values)}")
    values.pop(METADATA_KEY, None)  # what the set needs and costs (lowrank.book.costs), not a parameter
    return values, tuple(dict.fromkeys(requires))


def _read_parameter_file(path: Path) -> str:
    if path.is_dir():
        raise UsageError(f"parameter file {path} is a folder; expected a YAML file")
    if not path.exists():
        raise UsageError(f"parameter file {path} does not exist")
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, a device never end
            raise UsageError(f"parameter file {path} is not a regular file (a device, FIFO or socket); "
                             "expected a YAML file")
        with open(path, "rb") as f:
            raw = f.read(MAX_PARAMETER_FILE + 1)  # bounded, whatever st_size says
        if len(raw) > MAX_PARAMETER_FILE:
            raise UsageError(f"parameter file {path} is larger than {MAX_PARAMETER_FILE} bytes; "
                             "a parameter file is a few lines")
    except OSError as e:
        raise UsageError(f"parameter file {path} cannot be read ({e.strerror or type(e).__name__})") from None
    try:
        return raw.decode("utf8")
    except UnicodeDecodeError as e:
        raise UsageError(f"parameter file {path} is not UTF-8 text (byte {raw[e.start]:#04x} at offset "
                         f"{e.start}); expected a YAML file") from None


def parameter_file_header(path: Path) -> str:
    """The comment block at the top of a parameter file, without the ``#`` marks."""
    lines = _header_lines(_read_parameter_file(Path(path)))
    return "\n".join(line.lstrip("#").strip() for line in lines).strip()


def _header_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            break
        if line.strip():
            lines.append(line.strip())
    return lines


# --- chapters ------------------------------------------------------------------------------

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
        for cell in _read_cells(self.path):
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
    checkout = Path(__file__).resolve().parents[1]
    return checkout if (checkout / "chapters").is_dir() else None


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


def _read_cells(path: Path) -> list[dict]:
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
    cells = _read_cells(chapter.path)
    cell = next((c for c in cells if c["cell_type"] == "code" and "parameters" in c["metadata"].get("tags", [])), None)
    if cell is None:
        raise UsageError(f"{chapter.path} has no code cell tagged 'parameters'")
    found: dict = {}
    if papermill:
        import papermill as pm

        with _quiet_papermill():
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
def _quiet_papermill():
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


# --- planning: every check that needs no kernel --------------------------------------------

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
        return _short_hash(self.parameters)


# A run estimated above this much wall time is refused unless forced: a typo in a size (an extra
# zero) should cost a second, not a month. A week covers every committed set (the longest, chapter
# 03's paper set, is estimated at about five days of one CPU).
TIME_BOUND_S = 7 * 24 * 3600


def plan_run(chapter: Chapter, *, scale: str = "default", files: list[Path] | tuple = (),
             overrides: list[tuple[str, Any]] | tuple = (), kernel: str | None = None,
             allow_cpu: bool = False, cwd: Path | None = None, memory_bytes: float | None = None,
             force: bool = False) -> RunPlan:
    """Merge and check a run's parameters, its kernel and its requirements; start nothing.

    ``overrides`` are (name, value) pairs, values already parsed (see :func:`parse_value`).
    Besides each value's own range, checks the chapter's cross-parameter CONSTRAINTS on the
    merged set, ``device = cuda`` against the machine, path parameters (resolved against ``cwd``,
    default the current folder; values from the book's own ``--scale`` sets against the book's
    folder) and the chapter's memory estimate (lowrank.book.costs) against ``memory_bytes`` (default: this machine's
    physical memory; runs on CUDA are not compared).
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
            injected[name] = _check_path(name, injected[name], kind, bases[name], sources[name], book)

    merged = {**{k: v["default"] for k, v in known.items()}, **injected}
    try:
        check_constraints(chapter.name, merged)
    except ParameterError as e:
        names = getattr(e, "names", ())
        where = "; ".join(f"{n} set {sources[n]}" for n in names if n in sources) or "the notebook's defaults"
        raise UsageError(f"{e} [{where}]") from None
    _check_manifests(chapter, merged, injected, sources)
    device = merged.get("device")
    if device == "cuda" and not _cuda_available():
        raise UsageError(f"parameter 'device' = 'cuda' (set {sources.get('device', 'in the notebook')}) but no "
                         "CUDA device is visible (torch.cuda.is_available() is False); use -p device cpu")
    notes = []
    on_gpu = device == "cuda" or (device == "auto" and _cuda_available())
    est = estimate(chapter.name, merged, device="cuda" if on_gpu else "cpu", root=book)
    if est is not None:
        limit = memory_bytes if memory_bytes is not None else _physical_memory()
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
    if "gpu" in requires_t and not _cuda_available():
        where = ", ".join(str(p) for p in read)
        if not allow_cpu:
            raise UsageError(
                f"chapter {chapter.name}: {where} declares '# requires: gpu' and no CUDA device is "
                "visible (torch.cuda.is_available() is False). On a CPU this run would take very long; "
                "run it on a GPU machine, or pass --allow-cpu to run it here anyway.")
        notes.append(f"--allow-cpu: running {chapter.name} without the GPU that {where} asks for")

    kernel = kernel or _notebook_kernel(chapter)
    _check_kernel(kernel)
    return RunPlan(chapter=chapter, scale=scale, injected=injected,
                   parameters=merged,
                   sources=sources, files=read, requires=requires_t, kernel=kernel, notes=notes, cost=est)


def _gb(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _physical_memory() -> float | None:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _check_path(name: str, value: str, kind: str, base: Path, source: str, root: Path) -> str:
    """A path parameter resolved against ``base`` (the caller's folder) and checked for its kind."""
    if kind == "corpus" and value in CORPUS_NAMES:
        return value
    path = (base / Path(value).expanduser()).resolve()
    bad = None
    if kind in ("store", "read_store"):
        from ..sweep import foreign_store

        if path.suffix != ".jsonl":
            bad = "a results store must be a .jsonl file"
        elif path.is_dir():
            bad = "it is a folder; a results store is a .jsonl file"
        elif kind == "read_store" and not path.is_file():
            bad = "no such results store (it is read, never written)"
        elif path.exists() and foreign_store(path):
            bad = f"it exists and is not a results store ({foreign_store(path)}); nothing is appended to it"
        elif any(p.exists() and not p.is_dir() for p in path.parents):
            bad = "a file stands where its folder should be"
        elif kind == "store":
            bad = committed_store(path, root) or _unwritable(path)
    elif kind == "folder":
        if path.exists() and not path.is_dir():
            bad = "it is a file; a folder is expected"
        else:
            bad = _unwritable(path)
    elif kind == "input_folder":
        if not path.is_dir():
            bad = "no such folder"
    elif kind == "corpus":
        if not path.exists():
            bad = f"no such file or folder, and not a corpus name ({', '.join(CORPUS_NAMES)})"
        elif path.is_dir() and next((f for f in path.rglob("*.txt") if f.is_file()), None) is None:
            bad = "a corpus folder must hold .txt files (one document each), and this one holds none"
    if bad:
        raise UsageError(f"parameter {name!r} = {short_repr(value)} (set {source}) resolves to {path}: {bad}")
    return str(path)


def _check_manifests(chapter: Chapter, merged: dict, injected: dict, sources: dict) -> None:
    """A store written with a parameter manifest beside it takes only runs of the same parameters."""
    for name, kind in PATHS.get(chapter.name, {}).items():
        if kind != "store" or injected.get(name) is None or name not in MANIFESTS.get(chapter.name, ()):
            continue
        from ..sweep import manifest_conflict

        store = Path(injected[name])
        why = manifest_conflict(sidecars(store)[0], merged)
        if why:
            raise UsageError(f"parameter {name!r} = {short_repr(str(store))} (set {sources[name]}): {why}")


def _unwritable(path: Path) -> str | None:
    """Why a run could not create or append to ``path``, or None: checked here, it is an input
    error (status 2) instead of an OSError from a cell minutes later."""
    target = path if path.exists() else next((p for p in path.parents if p.exists()), None)
    if target is None:
        return None
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        return f"cannot write {'in ' if target.is_dir() else ''}{target} (permission denied)"
    return None


def _yaml_text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def _cuda_available() -> bool:
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


# --- executing ------------------------------------------------------------------------------

def results_dir() -> Path | None:
    """Where a chapter running under ``lowrank run`` may write files (tables, stores) to keep.

    Call it from a notebook: it returns the run's ``files/`` folder, or None when the notebook
    runs outside ``lowrank run`` (the book build, nbval), where a chapter should write nothing.
    Files there are kept only if the whole run finishes.
    """
    value = os.environ.get(RUN_DIR_ENV)
    return Path(value) if value else None


def default_outdir(plan: RunPlan, root: Path | None) -> Path:
    base = (root or plan.chapter.path.parent) / "runs" / plan.chapter.name
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = base / f"{stamp}-{plan.params_hash}"
    k = 2
    while out.exists() or _failed(out).exists() or _lock_holder(out):
        out, k = base / f"{stamp}-{plan.params_hash}-{k}", k + 1
    return out


def check_outdir(outdir: Path, root: Path | None = None) -> Path:
    """Refuse (UsageError) a run folder this run could not create and own; return it resolved.

    Refused: OUTDIR inside the sources of the book at ``root`` (``chapters/``, ...) or holding it;
    OUTDIR exists and is a file or a non-empty folder; OUTDIR.failed exists and is not a folder
    an earlier failed run left (:func:`_our_failed_run`); a parent that is a file or cannot be
    written; another live run holding OUTDIR's lock."""
    outdir = Path(outdir).expanduser().absolute()
    if root is not None:
        why = inside_sources(outdir.resolve(), Path(root).resolve())
        if why:
            raise UsageError(f"output folder {outdir}: {why}; choose a folder outside it, e.g. "
                             f"{Path(root) / 'runs' / outdir.name}")
    if outdir.is_symlink() or (outdir.exists() and (not outdir.is_dir() or any(outdir.iterdir()))):
        raise UsageError(f"output folder {outdir} already exists and is not empty; "
                         "choose another -o or remove it")
    failed = _failed(outdir)
    if failed.is_symlink() or (failed.exists() and not _our_failed_run(failed)):
        raise UsageError(f"{failed} exists and is not a failed run's folder (a failed run would replace it); "
                         "move it away or choose another -o")
    parent = next((p for p in outdir.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise UsageError(f"output folder {outdir}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"output folder {outdir}: cannot write in {parent} (permission denied)")
    holder = _lock_holder(outdir)
    if holder:
        raise OutdirLocked(f"output folder {outdir} is being written by another run (pid {holder}); "
                         "choose another -o")
    return outdir.resolve()


def _our_failed_run(folder: Path) -> bool:
    """Whether ``folder`` is what a failed run of this module left: a real folder holding ``FAILED``
    and the ``params.json`` record we wrote, status ``failed``. Only such a folder is ever replaced;
    a folder that merely holds a file named ``FAILED`` is someone else's."""
    if folder.is_symlink() or not folder.is_dir() or not (folder / "FAILED").is_file():
        return False
    try:
        record = json.loads((folder / "params.json").read_bytes()[: 1 << 20])
    except (OSError, ValueError):
        return False
    return (isinstance(record, dict) and record.get("status") == "failed" and isinstance(record.get("chapter"), str)
            and "lowrank_version" in record and "started" in record)


def _lock(outdir: Path) -> Path:
    return outdir.with_name(f".{outdir.name}.lock")


def _lock_holder(outdir: Path) -> int | None:
    """The pid of a live process holding OUTDIR's lock, else None (a stale lock is ignored)."""
    try:
        pid = int(_lock(outdir).read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _take_lock(outdir: Path) -> Path:
    lock = _lock(outdir)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = _lock_holder(outdir)
            if holder:
                raise OutdirLocked(f"output folder {outdir} is being written by another run (pid {holder}); "
                                 "choose another -o") from None
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return lock
    raise UsageError(f"cannot lock output folder {outdir} ({lock} keeps reappearing)")


def kernel_manager_with_env(env: dict[str, str], log: Path | None = None) -> type:
    """A kernel manager class whose kernels get ``env`` on top of this process's environment.

    The variables go to the kernel only: this process's own environment, and so the temporary
    folder ``tempfile`` caches on first use, stays as it was. Setting ``TMPDIR`` here instead
    would make every later kernel of the same process (the next chapter of ``lowrank book``)
    look for its files in a folder the previous run deleted. With ``log``, the kernel process's
    own stderr (its start-up notices, and the socket errors it prints when a run is interrupted
    mid-cell) goes to that file instead of the user's terminal; what cells print is not there.
    """
    from jupyter_client import AsyncKernelManager

    extra = dict(env)

    class _KernelWithEnv(AsyncKernelManager):
        async def start_kernel(self, **kw):
            merged = dict(kw.pop("env", None) or os.environ)
            merged.update(extra)
            if log is not None:
                with open(log, "ab") as f:  # the kernel keeps its own copy of the descriptor
                    return await super().start_kernel(env=merged, stderr=f, **kw)
            return await super().start_kernel(env=merged, **kw)

    return _KernelWithEnv


def execute(plan: RunPlan, outdir: Path, *, progress_bar: bool = True, log_output: bool = False,
            command: str | None = None, timeout: int | None = None) -> Path:
    """Run a checked plan into ``outdir`` (see the module docstring for the layout); return it.

    Raises UsageError if ``outdir`` cannot be this run's (see :func:`check_outdir`),
    ExecutionFailed if the run fails. The kernel's temporary files (``TMPDIR``) go to a folder
    inside the hidden run folder, removed with it on every exit path.
    """
    outdir = check_outdir(outdir, plan.chapter.path.parent.parent)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"output folder {outdir}: cannot create {outdir.parent} "
                         f"({e.strerror or type(e).__name__})") from None
    lock = _take_lock(outdir)
    tmp = outdir.with_name(f".{outdir.name}.tmp-{os.getpid()}")
    try:
        return _execute(plan, outdir, tmp, progress_bar=progress_bar, log_output=log_output, command=command,
                        timeout=timeout)
    finally:
        if tmp.exists():  # an error of this process itself (disk full, a bug): never leave it behind
            shutil.rmtree(tmp, ignore_errors=True)
        lock.unlink(missing_ok=True)


def _execute(plan: RunPlan, outdir: Path, tmp: Path, *, progress_bar: bool, log_output: bool,
             command: str | None, timeout: int | None) -> Path:
    import papermill as pm

    if tmp.exists():
        shutil.rmtree(tmp)
    files = tmp / "files"
    files.mkdir(parents=True)
    scratch = tmp / "scratch"
    scratch.mkdir()
    notebook = tmp / plan.chapter.path.name
    record = {
        "chapter": plan.chapter.name,
        "notebook": str(plan.chapter.path),
        "scale": plan.scale,
        "parameter_files": [str(p) for p in plan.files],
        "injected": plan.injected,
        "parameters": plan.parameters,
        "requires": list(plan.requires),
        "kernel": plan.kernel,
        "command": command,
        "status": "running",
        "error": None,
        "started": _now(),
        "finished": None,
        "wall_s": None,
        "lowrank_version": __version__,
        "git": _git_revision(plan.chapter.path.parent),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    _write_json(tmp / "params.json", record)

    t0 = time.perf_counter()
    failure, status, trace = None, 1, ""
    env = {RUN_DIR_ENV: str(files), "TMPDIR": str(scratch), **kernel_env(scratch)}
    kernel_log = tmp / "kernel.log"
    streams = {"stdout_file": _Copy(sys.stdout), "stderr_file": _Copy(sys.stderr)} if log_output else {}
    try:
        with _quiet_papermill():
            pm.execute_notebook(str(plan.chapter.path), str(notebook), parameters=plan.injected,
                                kernel_name=plan.kernel, cwd=str(plan.chapter.path.parent),
                                execution_timeout=timeout, progress_bar=progress_bar,
                                request_save_on_cell_execute=True,
                                kernel_manager_class=kernel_manager_with_env(env, kernel_log), **streams)
    except pm.PapermillExecutionError as e:
        failure = _describe_cell_failure(e, plan)
        trace = _ANSI.sub("", "\n".join(e.traceback or []))
    except KeyboardInterrupt:
        failure, status = "interrupted", 130
    except Exception as e:  # kernel died, timed out or could not start: still a failed run
        failure = f"the kernel failed ({type(e).__name__}: {' '.join(str(e).split())[:300]})"
    record.update(finished=_now(), wall_s=round(time.perf_counter() - t0, 3))
    shutil.rmtree(scratch, ignore_errors=True)

    # kept only when the kernel itself failed: then its own messages say why; otherwise they are
    # start-up notices and the noise of a shutdown mid-cell
    if kernel_log.exists() and not (failure or "").startswith("the kernel failed"):
        kernel_log.unlink()
    if failure is not None:
        shutil.rmtree(files, ignore_errors=True)
        record.update(status="failed", error=failure)
        _write_json(tmp / "params.json", record)
        (tmp / "FAILED").write_text(failure + "\n\n" + trace + "\n", encoding="utf8")
        failed = _failed(outdir)
        if _our_failed_run(failed):
            shutil.rmtree(failed)  # an older failed run of this folder (checked in check_outdir)
        os.replace(tmp, failed)
        kept = failed / notebook.name
        where = f"partial notebook kept: {kept}" if kept.exists() else f"no notebook was written; see {failed}"
        if (failed / "kernel.log").exists():
            where += f" (the kernel's own messages: {failed / 'kernel.log'})"
        # an interruption is one line: the user knows why it stopped
        sep = "; " if status == 130 else "\n"
        raise ExecutionFailed(f"chapter {plan.chapter.name} failed: {failure}{sep}{where}",
                              status=status, partial=failed, traceback=trace)

    _stamp_scale(notebook, plan.scale)
    _write_json(tmp / "results.json", write_outputs(notebook, files))
    if not any(files.iterdir()):
        files.rmdir()
    record["status"] = "ok"
    _write_json(tmp / "params.json", record)
    if outdir.exists():
        try:
            outdir.rmdir()  # empty (checked before the run); rename needs the name free
        except OSError:
            _keep_as_failed(tmp, outdir)
            raise ExecutionFailed(f"chapter {plan.chapter.name} finished, but {outdir} was filled by someone "
                                  f"else during the run; the finished run is kept in {_failed(outdir)}",
                                  partial=_failed(outdir)) from None
    os.replace(tmp, outdir)
    return outdir


class _Copy:
    """A terminal stream the cells' output is copied to (``--log-output``); once its reader has
    gone (``| less`` quit, a closed terminal) copying stops and the run goes on."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        if self.stream is not None:
            try:
                self.stream.write(text)
            except (BrokenPipeError, OSError, ValueError):
                self.stream = None
        return len(text)

    def flush(self):
        if self.stream is not None:
            try:
                self.stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.stream = None


def _stamp_scale(notebook: Path, scale: str) -> None:
    """Record the parameter set in the executed notebook, where chapter 08 reads each row's scale."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata.setdefault("lowrank_execution", {})["scale"] = scale
    nbformat.write(nb, notebook)


def _keep_as_failed(tmp: Path, outdir: Path) -> None:
    failed = _failed(outdir)
    if _our_failed_run(failed):
        shutil.rmtree(failed)
    why = f"finished, but {outdir} was not empty when the run ended"
    (tmp / "FAILED").write_text(why + "\n", encoding="utf8")
    try:  # recorded as failed, so that a later run of this OUTDIR knows the folder for its own
        record = json.loads((tmp / "params.json").read_bytes())
        record.update(status="failed", error=why)
        _write_json(tmp / "params.json", record)
    except (OSError, ValueError):
        pass
    os.replace(tmp, failed)


def execute_in_place(path: Path, *, kernel: str = "python3", timeout: int | None = None) -> float:
    """Re-execute a notebook at its default parameters and replace it (``make notebooks``).

    Papermill runs it in its own folder; the committed file is rewritten only if every cell ran
    (written next to it, then renamed). Per-cell timing (nbclient's ``execution``, papermill's
    ``papermill`` metadata) is dropped so a re-run changes only outputs and the notebook's
    ``lowrank_execution`` record (``end_time``, ``duration``, ``scale``: always ``default``) read by
    the execution report and chapter 08's verdict table.
    Returns the duration in seconds; raises ExecutionFailed naming the cell on an error.
    """
    import tempfile
    from datetime import datetime, timezone

    import nbformat
    import papermill as pm

    path = Path(path).resolve()
    start = time.perf_counter()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".ipynb")
    os.close(fd)
    scratch = tempfile.mkdtemp(prefix=f"lowrank-{path.stem}-")  # the kernel's TMPDIR, removed below
    try:
        try:
            with _quiet_papermill():
                pm.execute_notebook(str(path), tmp, kernel_name=kernel, cwd=str(path.parent),
                                    execution_timeout=timeout, progress_bar=False,
                                    kernel_manager_class=kernel_manager_with_env({"TMPDIR": scratch}))
        except pm.PapermillExecutionError as e:
            first = next((line for line in (e.source or "").splitlines() if line.strip()), "")
            raise ExecutionFailed(f"cell {e.cell_index + 1} of {path.name} (starting {first.strip()!r}) raised "
                                  f"{e.ename}: {' '.join(str(e.evalue).split())[:300]}",
                                  traceback=_ANSI.sub("", "\n".join(e.traceback or []))) from None
        nb = nbformat.read(tmp, as_version=4)
        nb.metadata.pop("papermill", None)
        for cell in nb.cells:
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
            if cell.metadata.get("tags") == []:  # papermill adds empty tag lists
                del cell.metadata["tags"]
        duration = round(time.perf_counter() - start, 1)
        nb.metadata["lowrank_execution"] = {
            "end_time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "duration": duration,
            "scale": "default",  # the notebook's own parameters cell, no parameter set
        }
        nbformat.write(nb, tmp)
        os.replace(tmp, path)
        return duration
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if os.path.exists(tmp):
            os.unlink(tmp)


def _describe_cell_failure(e, plan: RunPlan) -> str:
    import nbformat

    # papermill counts cells after inserting its injected-parameters cell right after the
    # parameters cell; give the cell's number in the chapter as the reader sees it.
    cells = nbformat.read(plan.chapter.path, as_version=4).cells
    tagged = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    index = e.cell_index - (1 if plan.injected and e.cell_index > tagged else 0)
    first = next((line for line in (e.source or "").splitlines() if line.strip()), "")
    return (f"cell {index + 1} of {plan.chapter.path.name} (In [{e.exec_count}], starting "
            f"{first.strip()!r}) raised {e.ename}: {e.evalue}")


def _failed(outdir: Path) -> Path:
    return outdir.with_name(outdir.name + ".failed")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _short_hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, default=repr).encode()
    return hashlib.sha256(blob).hexdigest()[:8]


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=repr) + "\n", encoding="utf8")
    os.replace(tmp, path)


def _git_revision(folder: Path) -> str | None:
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=folder,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


# --- a book from runs -----------------------------------------------------------------------

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
        raise UsageError(f"no chapter has a parameter {nowhere[0]!r}; "
                         f"parameters: {', '.join(sorted(set().union(*names.values())))}")
    plans = [plan_run(c, scale=scale, kernel=kernel, allow_cpu=allow_cpu, force=force,
                      overrides=[(n, v) for n, v in overrides if n in names[c.name]]) for c in chapters]
    for plan in plans:
        for note in plan.notes:
            print(f"lowrank: warning: {note}", file=sys.stderr)

    src = out / "src"
    out.mkdir(parents=True, exist_ok=True)
    (out / _BOOK_MARK).write_text(f"staged by lowrank book from {root}; lowrank may replace src/, runs/ "
                                  "and _build/ here\n", encoding="utf8")
    _stage_book(root, src)
    code_hash = _sources_hash(Path(__file__).resolve().parent)
    for i, plan in enumerate(plans, 1):
        key = _short_hash([plan.parameters, plan.kernel, _code_cells(plan.chapter.path), code_hash])
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


def _stage_book(root: Path, src: Path) -> None:
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


def _sources_hash(package: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(package.rglob("*.py")):
        h.update(str(p.relative_to(package)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _jupyter_book() -> str:
    beside = Path(sys.executable).with_name("jupyter-book")
    found = str(beside) if beside.exists() else shutil.which("jupyter-book")
    if not found:
        raise UsageError("jupyter-book is not installed (pip install 'jupyter-book==1.0.4.post1')")
    return found
