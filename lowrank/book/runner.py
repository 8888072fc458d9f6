"""Re-execute a chapter with checked parameters: the logic behind ``lowrank run``, ``list`` and ``book``.

This module holds the conventions below and the names the command and the tests use; the work is
done in one module per job: :mod:`~lowrank.book.parameter_files` (reading ``-p`` values and YAML
sets), :mod:`~lowrank.book.chapters` (finding chapters, reading their parameters cell),
:mod:`~lowrank.book.planning` (every check before a kernel starts), :mod:`~lowrank.book.guards`
(where a run may write), :mod:`~lowrank.book.run_folders` (OUTDIR, its lock and its failed twin),
:mod:`~lowrank.book.records` (``params.json``), :mod:`~lowrank.book.execution` (papermill, the
hidden run folder, failures) and :mod:`~lowrank.book.staging` (``lowrank book``).

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
                           kernel, times, status, lowrank version, git revision, code hash
    OUTDIR/results.json    every value the chapter glued (myst_nb ``glue``), name -> value, as plain
                           data (text, numbers, a table as records); a figure as the files below
                           that hold it; "tables" names the table files
    OUTDIR/files/          its figures (<glue key>.png and .svg), its tables (chNN_table_K.csv) and
                           whatever the chapter wrote into :func:`results_dir` (:mod:`.outputs`);
                           files/evidence/<chapter>.json, for a chapter that judges claims, the
                           values they are judged on (:mod:`lowrank.experiments.evidence`)
    OUTDIR/page.html       with ``--html``: the run as the chapter's page, its assets in
                           OUTDIR/page_files/ (:mod:`.page`)

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
(``params.PATHS``), a store that is committed (or a hard link or symlink to a committed file),
someone else's file, another chapter's store or at odds with its manifest (:mod:`lowrank.book.guards`); GPU required; OUTDIR inside the book's sources, not empty, under a
file, not writable or locked by another run; an ``OUTDIR.failed`` that is not a failed run's
folder); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).

**Temporary files.** The kernel's ``TMPDIR`` (given to the kernel only, never set in this
process: ``lowrank book`` runs every chapter in one process) is a ``scratch/`` folder inside
the hidden run folder, removed when the run ends however it ends, so a chapter's ``tempfile``
folders never outlive the run. A lock file ``.OUTDIR.lock`` (the pid of the run) keeps a second
run off the same OUTDIR; one left by a killed process is ignored once that process is gone.
"""
from __future__ import annotations

from .chapters import Chapter, find_root, list_chapters, notebook_parameters, resolve_chapter
from .errors import ExecutionFailed, OutdirLocked, RunError, UsageError
from .execution import RUN_DIR_ENV, execute, execute_in_place, kernel_manager_with_env, results_dir
from .parameter_files import (KNOWN_REQUIREMENTS, MAX_PARAMETER_FILE, load_parameter_file, load_yaml,
                              parameter_file_header, parse_value)
from .planning import RunPlan, plan_run
from .run_folders import check_outdir, default_outdir
from .staging import build_book

__all__ = ["RunError", "UsageError", "OutdirLocked", "ExecutionFailed", "Chapter", "RunPlan", "KNOWN_REQUIREMENTS",
           "RUN_DIR_ENV", "MAX_PARAMETER_FILE", "load_yaml", "check_outdir", "execute_in_place",
           "kernel_manager_with_env", "find_root", "list_chapters", "resolve_chapter", "parse_value",
           "load_parameter_file", "parameter_file_header", "notebook_parameters", "plan_run",
           "default_outdir", "execute", "build_book", "results_dir"]
