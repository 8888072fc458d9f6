"""Sphinx extension: a "re-run this chapter" box on every chapter page, generated from the notebook.

For each notebook under ``chapters/`` the box gives the exact commands that re-execute it with
other values (``lowrank run NN -p NAME VALUE``, the parameter sets in ``chapters/params/``, and the
same through papermill) and a table of its parameters with their defaults and meaning. The table is
generated at build time from the notebook's cell tagged ``parameters``, read with Python's own
parser: every assignment, its default as written and the comment on its line, so it cannot drift
from the notebook. ``lowrank run`` and ``papermill --help-notebook`` read that cell with papermill's
line parser instead, which skips a line it cannot parse (a ``=`` inside the comment is enough); a
parameter it does not see is reported as a build warning, an error in ``make test``. The box goes
after the chapter's title and opening summary, collapsed (a dropdown) so that it does not push the
text down.

Above the commands, a table gives each scale (smoke, default, long, paper: the sets that exist for
the chapter) with the hardware it needs, its estimate and its measured time, from the set file's
machine-readable ``metadata`` block and the chapter's cost model (:mod:`lowrank.book.sets`): the
default run is measured by the notebook's execution record, a long set by its committed store's
``wall_s``; a set nobody has run says "not yet run". The box links the source of
the whole project at the built commit (``_ext/source_archive.py``), so that a reader who downloads
only the notebook can still install ``lowrank``, and says how to see the re-rendered page.
"""
from __future__ import annotations

import ast
import io
import json
import shlex
import tokenize
from pathlib import Path, PurePosixPath

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

CHAPTER_FOLDER = "chapters"
CSS_CLASS = "rerun-chapter"
SET_ORDER = ("smoke", "default", "long", "paper")
# What each scale is for, in a few words (DESIGN.md section 3).
SCALE_PURPOSE = {
    "smoke": "seconds; exercises every cell (the set the tests run)",
    "default": "the run shown on this page",
    "long": "a longer CPU run, results stored under data/results/",
    "paper": "the papers' scale",
}
def parameters_cell(notebook: Path) -> str:
    """Source of the notebook's code cell tagged ``parameters``."""
    nb = json.loads(notebook.read_text(encoding="utf8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "parameters" in c["metadata"].get("tags", [])]
    if len(cells) != 1:
        raise ExtensionError(f"{notebook} has {len(cells)} code cells tagged 'parameters'; a chapter needs one")
    source = cells[0]["source"]
    return "".join(source) if isinstance(source, list) else source


def chapter_parameters(notebook: Path) -> dict[str, dict[str, str]]:
    """name -> {"default": source text, "help": the line's comment} of the ``parameters`` cell, in order."""
    source = parameters_cell(notebook)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ExtensionError(f"the parameters cell of {notebook} is not valid Python: {exc}") from exc
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments.setdefault(token.start[0], token.string.lstrip("#").strip())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        help_text = next((comments[line] for line in range(node.end_lineno, node.lineno - 1, -1) if line in comments), "")
        found[name] = {"default": ast.get_source_segment(source, value), "help": help_text}
    return found


def papermill_blind_spots(notebook: Path, names: list[str]) -> list[str]:
    """Parameters papermill's parser does not see (``lowrank run -p`` and ``papermill --help-notebook`` miss them)."""
    import logging as std_logging

    import papermill

    # papermill logs a warning per line it cannot parse; the message below says it once, with the cause.
    translator_log = std_logging.getLogger("papermill.translators")
    level = translator_log.level
    translator_log.setLevel(std_logging.ERROR)
    try:
        seen = papermill.inspect_notebook(str(notebook))
    finally:
        translator_log.setLevel(level)
    return [name for name in names if name not in seen]


def parameter_sets(notebook: Path) -> list[str]:
    """Names of the sets ``chapters/params/<set>/<chapter>.yaml`` that exist for this notebook."""
    base = notebook.parent / "params"
    if not base.is_dir():
        return []
    found = [d.name for d in base.iterdir() if (d / f"{notebook.stem}.yaml").is_file()]
    # smallest scale first: the seconds-long smoke set before the full-scale paper set
    return sorted(found, key=lambda name: (SET_ORDER.index(name) if name in SET_ORDER else len(SET_ORDER), name))


def scale_info(notebook: Path, scale: str):
    """The set's :class:`lowrank.book.costs.SetInfo` (hardware, devices, estimate, measured time)."""
    from lowrank.book.sets import set_info

    try:
        return set_info(notebook.parent.parent, notebook, scale)
    except Exception as exc:  # noqa: BLE001 - a build error that names the set and the cause
        raise ExtensionError(f"{notebook.stem}, scale {scale}: {exc}") from exc


def scale_needs(notebook: Path, scale: str) -> tuple[str, str]:
    """(hardware, time) of one scale: the measured time where there is one, and the estimate."""
    info = scale_info(notebook, scale)
    hardware = info.hardware[:1].upper() + info.hardware[1:]
    estimate = info.estimate_text()
    if info.measured.seconds is None and info.measured.done is None:
        if info.measured.source == "not_recorded":
            return hardware, f"seconds; estimated {estimate}"
        return hardware, f"not yet run; estimated {estimate}"
    return hardware, f"{info.measured.text()}; estimated {estimate}"


def scale_rows(notebook: Path, sets: list[str], number: str) -> list[tuple[str, str, str, str]]:
    """(scale, command, hardware, time) for the default run and every set of the chapter."""
    rows = []
    for name in sorted({*sets, "default"}, key=lambda n: (SET_ORDER.index(n) if n in SET_ORDER else 99, n)):
        hardware, time = scale_needs(notebook, name)
        if name == "default":
            command = f"lowrank run {number}"
        elif name in ("smoke", "long", "paper"):
            command = f"lowrank run {number} --scale {name}"
        else:
            command = f"lowrank run {number} -f chapters/params/{name}/{notebook.stem}.yaml"
        rows.append((name, command, hardware, time))
    return rows


def _empty_table(kind: str, headings: tuple[str, ...]) -> tuple[nodes.table, nodes.tbody]:
    """A table with its heading row, and the body to fill."""
    table = nodes.table(classes=["colwidths-auto", f"{CSS_CLASS}-{kind}"])
    group = nodes.tgroup(cols=len(headings))
    table += group
    for _ in headings:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    header = nodes.row()
    for text in headings:
        header += nodes.entry("", nodes.paragraph(text=text))
    head += header
    return table, body


def _scales_table(rows: list[tuple[str, str, str, str]], differs: set[str]) -> nodes.table:
    table, body = _empty_table("scales", ("Scale", "Command", "Hardware", "Time (measured, estimated)"))
    for name, command, hardware, time in rows:
        purpose = SCALE_PURPOSE.get(name, "")
        if name in differs:
            purpose = "paper-scale sizes, not the paper's data or setup: the set file lists the differences"
        row = nodes.row()
        scale = nodes.paragraph("", "", nodes.strong(name, name))
        if purpose:
            scale += nodes.Text(f": {purpose}")
        row += nodes.entry("", scale)
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(command, command)))
        row += nodes.entry("", nodes.paragraph(text=hardware))
        row += nodes.entry("", nodes.paragraph(text=time))
        body += row
    return table


def differs_from_paper(notebook: Path, scale: str = "paper") -> bool:
    """The set's metadata names how it departs from the paper's data or setup (``departs_from_paper``)."""
    from lowrank.book.costs import read_metadata

    try:
        meta = read_metadata(notebook.parent / "params" / scale / f"{notebook.stem}.yaml")
    except Exception as exc:  # noqa: BLE001 - a build error that names the set and the cause
        raise ExtensionError(f"{notebook.stem}, scale {scale}: {exc}") from exc
    return bool(meta.get("departs_from_paper"))


def _literal(text: str) -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = "bash"
    return block


def _paragraph(*parts: str | nodes.Node) -> nodes.paragraph:
    para = nodes.paragraph()
    for part in parts:
        para += nodes.Text(part) if isinstance(part, str) else part
    return para


def _table(rows: list[tuple[str, str, str]]) -> nodes.table:
    table, body = _empty_table("parameters", ("Parameter", "Default", "Meaning"))
    for name, default, help_text in rows:
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(name, name)))
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(default, default)))
        row += nodes.entry("", nodes.paragraph(text=help_text))
        body += row
    return table


def rerun_box(notebook: Path, source_root: Path) -> nodes.admonition:
    """The admonition for one chapter notebook (paths in the commands relative to ``source_root``)."""
    from source_archive import archive_reference  # sibling extension in _ext/

    params = chapter_parameters(notebook)
    if not params:
        raise ExtensionError(f"the parameters cell of {notebook} defines no parameter")
    number = notebook.stem.split("_", 1)[0]
    rel = PurePosixPath(notebook.relative_to(source_root).as_posix())
    example = "seed" if "seed" in params else next(iter(params))
    # Every chapter has a seed (CONVENTIONS.md); another seed is the natural first re-run.
    example_value = "1" if example == "seed" else shlex.quote(params[example]["default"])
    sets = parameter_sets(notebook)
    differs = {name for name in sets if name == "paper" and differs_from_paper(notebook, name)}

    # Short lines: the box is narrow, and what differs between the commands sits at their end.
    lowrank_lines = [f"lowrank run {number} -p {example} {example_value}"]
    papermill_lines = [f"papermill {rel} out.ipynb \\\n    --cwd {rel.parent} -k python3 -p {example} {example_value}"]
    for name in sets:
        lowrank_lines.append(f"lowrank run {number} --scale {name}" if name in ("smoke", "long", "paper")
                             else f"lowrank run {number} -f {rel.parent}/params/{name}/{rel.stem}.yaml")
        papermill_lines.append(f"papermill {rel} out.ipynb \\\n    --cwd {rel.parent} -k python3 "
                               f"-f {rel.parent}/params/{name}/{rel.stem}.yaml")

    box = nodes.admonition(classes=["tip", "dropdown", CSS_CLASS])
    box += nodes.title(text=f"Re-run this chapter: lowrank run {number} -p NAME VALUE")
    box += _paragraph(
        "Every number on this page comes from a run at the defaults in the parameter table below. "
        "Get the project first: ",
        archive_reference(),
        " holds the lowrank package, every chapter and its parameter sets; unpack it and run ",
        nodes.literal(text="make setup"),
        " once (it creates ",
        nodes.literal(text=".venv"),
        "; see ",
        _doc_link("appendix/running", "Running it yourself"),
        "). Then, from the project folder with ",
        nodes.literal(text=".venv"),
        " active, each scale of this chapter is one command:",
    )
    box += _scales_table(scale_rows(notebook, sets, number), differs)
    box += _paragraph(
        "To change single values, give ",
        nodes.literal(text="-p NAME VALUE"),
        " once per parameter (VALUE is read as YAML: ",
        nodes.literal(text="64"), ", ", nodes.literal(text="1e-3"), ", ",
        nodes.literal(text="'[1, 2, 4]'"),
        "). A run goes to a new folder under ",
        nodes.literal(text="runs/"),
        " and prints its headline numbers; the committed notebook is left as it is.",
    )
    box += _literal("\n".join(lowrank_lines))
    box += _paragraph(
        "To see the re-rendered page, open the executed notebook in the run folder with Jupyter, or "
        "render the whole book at one scale: ",
        nodes.literal(text="lowrank book --scale paper"),
        " (or ", nodes.literal(text="smoke"), ") writes it to ",
        nodes.literal(text="runs/book-paper/_build/html/index.html"),
        ", reusing finished runs.",
    )
    box += _paragraph(
        "The same with papermill directly (its ", nodes.literal(text="-p"),
        " takes numbers and strings; give a list as ", nodes.literal(text="-y 'NAME: [1, 2]'"), "):")
    box += _literal("\n".join(papermill_lines))
    box += _paragraph(f"Parameters of {rel.name} (its cell tagged ", nodes.literal(text="parameters"), "):")
    box += _table([(name, info["default"], info["help"]) for name, info in params.items()])
    return box


def _doc_link(docname: str, text: str, explicit: bool = True) -> nodes.Node:
    """A cross-reference to another page of the book (resolved by Sphinx, a warning if it is missing).

    ``explicit=False`` shows the page's title instead of ``text``.
    """
    from sphinx.addnodes import pending_xref

    ref = pending_xref("", nodes.inline(text, text), refdomain="std", reftype="doc", reftarget=f"/{docname}",
                       refexplicit=explicit, refwarn=True)
    return ref


def _insert_after_summary(doctree: nodes.document, box: nodes.Node) -> None:
    section = doctree.next_node(nodes.section)
    if section is None:
        raise ExtensionError("a chapter needs a title (`# Title` in its first cell) for the re-run box")
    index = 1  # after the title
    while index < len(section.children) and isinstance(section[index], (nodes.paragraph, nodes.target)):
        index += 1
    section.insert(index, box)


def add_rerun_box(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    source = Path(env.doc2path(env.docname))
    if source.suffix != ".ipynb" or not env.docname.startswith(f"{CHAPTER_FOLDER}/"):
        return
    for name in parameter_sets(source):
        env.note_dependency(str(source.parent / "params" / name / f"{source.stem}.yaml"))
    box = rerun_box(source, Path(app.srcdir))
    from sphinx.addnodes import pending_xref
    for ref in box.findall(pending_xref):
        ref["refdoc"] = env.docname
    _insert_after_summary(doctree, box)
    blind = papermill_blind_spots(source, list(chapter_parameters(source)))
    if blind:
        LOGGER.warning(
            f"papermill cannot parse the line of {', '.join(blind)} in the parameters cell, so "
            "`lowrank run -p` and papermill's notebook inspection do not know them; the usual cause "
            "is a '=' inside the comment (CONVENTIONS.md, update 2)",
            location=env.docname, type="rerun_box", subtype="papermill")


class ScalesOverview(Directive):
    """``{scales-overview}``: every chapter's long and paper sets with hardware, device, estimate and
    measured time, from the sets' metadata blocks and the chapters' cost models."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        folder = Path(env.srcdir) / CHAPTER_FOLDER
        table, body = _empty_table("overview", ("Chapter", "Set", "Hardware", "Device", "Time (measured, estimated)"))
        for notebook in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            sets = [name for name in parameter_sets(notebook) if name not in ("smoke", "default")]
            for name in sets:
                env.note_dependency(str(notebook.parent / "params" / name / f"{notebook.stem}.yaml"))
                info = scale_info(notebook, name)
                hardware, time = scale_needs(notebook, name)
                row = nodes.row()
                link = _doc_link(f"{CHAPTER_FOLDER}/{notebook.stem}", notebook.stem, explicit=False)
                link["refdoc"] = env.docname
                row += nodes.entry("", nodes.paragraph("", "", link))
                label = name + (" (not the paper's data or setup: see the set file)"
                                if name == "paper" and differs_from_paper(notebook, name) else "")
                row += nodes.entry("", nodes.paragraph(text=label))
                row += nodes.entry("", nodes.paragraph(text=hardware))
                row += nodes.entry("", nodes.paragraph(text="GPU" if info.devices == "cuda" else "CPU"))
                row += nodes.entry("", nodes.paragraph(text=time))
                body += row
        return [table]


class PaperScale(Directive):
    """``{paper-scale}``: per chapter, the paper set's device, estimated and measured time, disk and
    what it gives, and the whole book's total on one GPU machine (GPU sets on its GPU, CPU sets on
    its CPU, one after another), from the sets' metadata and the chapters' cost models."""

    has_content = False

    def run(self):
        from lowrank.book.costs import duration, read_metadata

        env = self.state.document.settings.env
        folder = Path(env.srcdir) / CHAPTER_FOLDER
        table, body = _empty_table("paper", ("Chapter", "Device", "Estimate", "Measured", "Disk", "What you get"))
        total, hours = 0.0, {"cpu": 0.0, "cuda": 0.0}
        for notebook in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            path = notebook.parent / "params" / "paper" / f"{notebook.stem}.yaml"
            if not path.is_file():
                continue
            env.note_dependency(str(path))
            info = scale_info(notebook, "paper")
            meta = read_metadata(path)
            row = nodes.row()
            link = _doc_link(f"{CHAPTER_FOLDER}/{notebook.stem}", notebook.stem, explicit=False)
            link["refdoc"] = env.docname
            row += nodes.entry("", nodes.paragraph("", "", link))
            row += nodes.entry("", nodes.paragraph(text="GPU" if info.devices == "cuda" else "CPU"))
            row += nodes.entry("", nodes.paragraph(text=info.estimate_text()))
            measured = info.measured.text()
            row += nodes.entry("", nodes.paragraph(text=measured))
            row += nodes.entry("", nodes.paragraph(text=info.disk or "a few MB (the run folder)"))
            row += nodes.entry("", nodes.paragraph(text=str(meta.get("gives", ""))))
            body += row
            if info.cost is not None:
                total += info.cost.wall_s
                hours[info.cost.device] += info.cost.device_s / 3600
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph("", "", nodes.strong("the whole book", "the whole book")))
        row += nodes.entry("", nodes.paragraph(text="one GPU machine"))
        row += nodes.entry("", nodes.paragraph(
            text=f"about {duration(total)}, one chapter after another ({hours['cuda']:,.1f} GPU hours, "
                 f"{hours['cpu']:,.1f} CPU hours)"))
        for _ in range(3):
            row += nodes.entry("", nodes.paragraph(text=""))
        body += row
        return [table]


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", add_rerun_box)
    app.add_directive("scales-overview", ScalesOverview)
    app.add_directive("paper-scale", PaperScale)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
