"""Sphinx extension: the execution report lists every chapter, also when this build executed nothing.

myst-nb's ``{nb-exec-table}`` lists the notebooks that *this* build executed or took from the
jupyter-cache (``make book``). A build from the committed outputs (``make test``,
``execute_notebooks: off``) executes nothing, and the table would be empty. For every notebook
that has no execution record in this build, this extension supplies one from the notebook itself:
the run that produced its committed outputs, as papermill (``metadata.papermill``) or
``make notebooks`` (``metadata.lowrank_execution``, tools/execute_notebooks.py) recorded it:
when it ended, how long it took, and whether it raised. A notebook that records neither is listed
with no time, and its status is taken from its outputs (an error output means it failed).

The directive ``{estimates-report}`` puts each chapter's estimate beside that measured time (both
from :mod:`lowrank.book.sets`: the cost model on the chapter's default grid, the execution
record), with their ratio, the check ``tests/test_costs.py`` keeps within a factor of 3.
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

RECORD_KEY = "lowrank_execution"  # written by tools/execute_notebooks.py


def _timestamp(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def committed_run(notebook: Path) -> dict:
    """myst-nb's ExecutionResult for the run recorded in a committed notebook."""
    nb = json.loads(notebook.read_text(encoding="utf8"))
    meta = nb.get("metadata", {})
    records = []
    if isinstance(meta.get("papermill"), dict):
        pm = meta["papermill"]
        records.append(("committed (papermill)", _timestamp(pm.get("end_time")), pm.get("duration"),
                        pm.get("exception")))
    if isinstance(meta.get(RECORD_KEY), dict):
        rec = meta[RECORD_KEY]
        records.append(("committed (make notebooks)", _timestamp(rec.get("end_time")), rec.get("duration"),
                        None))
    errors = [o.get("ename", "error") for c in nb.get("cells", []) if c.get("cell_type") == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    method, mtime, runtime, exception = max(records, key=lambda r: r[1] or 0.0,
                                            default=("committed (not timed)", None, None, None))
    failed = bool(exception) or bool(errors)
    return {
        "mtime": mtime,
        "runtime": float(runtime) if runtime is not None else None,
        "method": method,
        "succeeded": not failed,
        "error": (errors[0] if errors else "exception") if failed else None,
        "traceback": None,
    }


def record_committed_run(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    source = Path(env.doc2path(env.docname))
    if source.suffix != ".ipynb" or NbMetadataCollector.get_exec_data(env, env.docname):
        return
    NbMetadataCollector.set_exec_data(env, env.docname, committed_run(source))


def _status_in_words() -> None:
    """Write the status as a word: myst-nb's emoji need a colour-emoji font many readers lack."""
    from myst_nb.ext import execution_tables

    if "succeeded" not in execution_tables._key2transform:
        raise ExtensionError("myst-nb's execution table has no 'succeeded' column any more: update "
                             "_ext/execution_report.py for this myst-nb version")
    execution_tables._key2transform["succeeded"] = lambda ok: "succeeded" if ok is True else "failed"


class EstimatesReport(Directive):
    """``{estimates-report}``: per chapter, the default run's estimate, its measured time and their ratio."""

    has_content = False

    def run(self):
        from lowrank.book.costs import duration
        from lowrank.book.sets import book_sets

        env = self.state.document.settings.env
        root = Path(env.srcdir)
        table = nodes.table(classes=["colwidths-auto"])
        group = nodes.tgroup(cols=4)
        table += group
        for _ in range(4):
            group += nodes.colspec(colwidth=1)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        header = nodes.row()
        for text in ("Chapter", "Estimated", "Measured", "Estimated / measured"):
            header += nodes.entry("", nodes.paragraph(text=text))
        head += header
        for info in book_sets(root, ("default",)):
            env.note_dependency(str(root / "chapters" / f"{info.chapter}.ipynb"))
            row = nodes.row()
            measured = info.measured.seconds
            estimated = info.cost.wall_s if info.cost else None
            ratio = f"{estimated / measured:.2f}" if measured and estimated else "-"
            for text in (info.chapter, duration(estimated) if estimated else "-",
                         duration(measured) if measured else "not recorded", ratio):
                row += nodes.entry("", nodes.paragraph(text=text))
            body += row
        return [table]


def setup(app: Sphinx) -> dict:
    app.setup_extension("myst_nb")
    app.add_directive("estimates-report", EstimatesReport)
    _status_in_words()
    app.connect("doctree-read", record_committed_run)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
