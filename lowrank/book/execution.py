"""Executing a planned run with papermill: the hidden run folder, the kernel's temporary files, failures.

See :mod:`lowrank.book.runner` for the run folder's layout and what is kept when a run fails.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

from ..experiments.evidence import EVIDENCE_DIR_ENV, FOLDER as EVIDENCE_FOLDER, SCALE_ENV
from ..core.files import atomic_write_json
from .chapters import quiet_papermill
from .errors import ExecutionFailed, UsageError
from .outputs import kernel_env, write_outputs
from .planning import RunPlan
from .records import mark_failed, now, run_record, write_record
from .run_folders import check_outdir, failed_path, our_failed_run, take_lock

__all__ = ["RUN_DIR_ENV", "results_dir", "kernel_manager_with_env", "execute", "execute_in_place", "cell_label",
           "named_cells"]

RUN_DIR_ENV = "LOWRANK_RUN_DIR"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def results_dir() -> Path | None:
    """Where a chapter running under ``lowrank run`` may write files (tables, stores) to keep.

    Call it from a notebook: it returns the run's ``files/`` folder, or None when the notebook
    runs outside ``lowrank run`` (the book build, nbval), where a chapter should write nothing.
    Files there are kept only if the whole run finishes.
    """
    value = os.environ.get(RUN_DIR_ENV)
    return Path(value) if value else None


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


# How much of a cell's first line the progress bar shows beside its number.
_LABEL_CHARS = 36


def cell_label(cells, cell) -> str:
    """'cell 9/23 tables = ch.run(P)': the cell's place among the notebook's cells and its first
    line of code (a leading comment, NBVAL markers aside, when it has one), or a text cell's heading."""
    index = next((i for i, c in enumerate(cells) if c is cell), None)
    where = f"cell {index + 1}/{len(cells)}" if index is not None else "cell"
    lines = [" ".join(ln.split()) for ln in str(cell.get("source") or "").splitlines() if ln.strip()]
    if cell.get("cell_type") == "markdown":  # text: its heading, if it has one
        lines = [ln for ln in lines if ln.startswith("#")][:1] or ["(text)"]
    lines = [ln for ln in lines if not ln.startswith("# NBVAL")] or [""]
    first = lines[0].lstrip("# ").strip()
    if len(first) > _LABEL_CHARS:
        first = first[:_LABEL_CHARS - 3].rstrip() + "..."
    return f"{where} {first}".rstrip()


@contextlib.contextmanager
def named_cells():
    """Papermill's progress bar, while inside, names the cell it is on (papermill's own hook for a
    cell's description, which otherwise reads a ``papermill_description=`` comment)."""
    from papermill.engines import NotebookExecutionManager as manager

    original = manager.get_cell_description

    def describe(self, cell, escape_str="papermill_description="):
        return original(self, cell, escape_str) or (cell_label(self.nb.cells, cell) if cell is not None else None)

    manager.get_cell_description = describe
    try:
        yield
    finally:
        manager.get_cell_description = original


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
    lock = take_lock(outdir)
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
    record = run_record(plan, command)
    write_record(tmp, record)

    t0 = time.perf_counter()
    failure, status, trace = None, 1, ""
    env = {RUN_DIR_ENV: str(files), "TMPDIR": str(scratch), **kernel_env(scratch),
           EVIDENCE_DIR_ENV: str(files / EVIDENCE_FOLDER), SCALE_ENV: plan.scale}
    kernel_log = tmp / "kernel.log"
    streams = {"stdout_file": _Copy(sys.stdout), "stderr_file": _Copy(sys.stderr)} if log_output else {}
    try:
        with quiet_papermill(), named_cells():
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
    record.update(finished=now(), wall_s=round(time.perf_counter() - t0, 3))
    shutil.rmtree(scratch, ignore_errors=True)

    # kept only when the kernel itself failed: then its own messages say why; otherwise they are
    # start-up notices and the noise of a shutdown mid-cell
    if kernel_log.exists() and not (failure or "").startswith("the kernel failed"):
        kernel_log.unlink()
    if failure is not None:
        shutil.rmtree(files, ignore_errors=True)
        record.update(status="failed", error=failure)
        write_record(tmp, record)
        (tmp / "FAILED").write_text(failure + "\n\n" + trace + "\n", encoding="utf8")
        failed = failed_path(outdir)
        if our_failed_run(failed):
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
    # plain values only: a value JSON cannot hold is an error here, never written as its repr
    atomic_write_json(tmp / "results.json", write_outputs(notebook, files), indent=2)
    if not any(files.iterdir()):
        files.rmdir()
    record["status"] = "ok"
    write_record(tmp, record)
    if outdir.exists():
        try:
            outdir.rmdir()  # empty (checked before the run); rename needs the name free
        except OSError:
            _keep_as_failed(tmp, outdir)
            raise ExecutionFailed(f"chapter {plan.chapter.name} finished, but {outdir} was filled by someone "
                                  f"else during the run; the finished run is kept in {failed_path(outdir)}",
                                  partial=failed_path(outdir)) from None
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
    failed = failed_path(outdir)
    if our_failed_run(failed):
        shutil.rmtree(failed)
    why = f"finished, but {outdir} was not empty when the run ended"
    (tmp / "FAILED").write_text(why + "\n", encoding="utf8")
    mark_failed(tmp, why)  # so that a later run of this OUTDIR knows the folder for its own
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
    # the chapter's evidence file waits in the scratch folder until the notebook is kept
    evidence = Path(scratch) / EVIDENCE_FOLDER
    env = {"TMPDIR": scratch, EVIDENCE_DIR_ENV: str(evidence), SCALE_ENV: "default"}
    try:
        try:
            with quiet_papermill():
                pm.execute_notebook(str(path), tmp, kernel_name=kernel, cwd=str(path.parent),
                                    execution_timeout=timeout, progress_bar=False,
                                    kernel_manager_class=kernel_manager_with_env(env))
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
        for found in sorted(evidence.glob("*.json")) if evidence.is_dir() else ():
            (path.parent / EVIDENCE_FOLDER).mkdir(exist_ok=True)
            shutil.move(str(found), path.parent / EVIDENCE_FOLDER / found.name)
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
