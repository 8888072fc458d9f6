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
"""
from __future__ import annotations

import ast
import io
import json
import shlex
import tokenize
from pathlib import Path, PurePosixPath

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

CHAPTER_FOLDER = "chapters"
CSS_CLASS = "rerun-chapter"
SET_ORDER = ("smoke", "default", "paper")


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
    table = nodes.table(classes=["colwidths-auto", f"{CSS_CLASS}-parameters"])
    group = nodes.tgroup(cols=3)
    table += group
    for _ in range(3):
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    header = nodes.row()
    for text in ("Parameter", "Default", "Meaning"):
        header += nodes.entry("", nodes.paragraph(text=text))
    head += header
    for name, default, help_text in rows:
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(name, name)))
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(default, default)))
        row += nodes.entry("", nodes.paragraph(text=help_text))
        body += row
    return table


def rerun_box(notebook: Path, source_root: Path) -> nodes.admonition:
    """The admonition for one chapter notebook (paths in the commands relative to ``source_root``)."""
    params = chapter_parameters(notebook)
    if not params:
        raise ExtensionError(f"the parameters cell of {notebook} defines no parameter")
    number = notebook.stem.split("_", 1)[0]
    rel = PurePosixPath(notebook.relative_to(source_root).as_posix())
    example = "seed" if "seed" in params else next(iter(params))
    # Every chapter has a seed (CONVENTIONS.md); another seed is the natural first re-run.
    example_value = "1" if example == "seed" else shlex.quote(params[example]["default"])
    sets = parameter_sets(notebook)

    # Short lines: the box is narrow, and what differs between the commands sits at their end.
    set_note = {"smoke": "seconds: the set the tests use", "paper": "full scale, as in the paper"}
    lowrank_lines = [f"lowrank run {number} -p {example} {example_value}"]
    papermill_lines = [f"papermill {rel} out.ipynb \\\n    --cwd {rel.parent} -k python3 -p {example} {example_value}"]
    for name in sets:
        note = f"   # {set_note[name]}" if name in set_note else ""
        lowrank_lines.append(f"lowrank run {number} --scale {name}{note}")
        papermill_lines.append(f"papermill {rel} out.ipynb \\\n    --cwd {rel.parent} -k python3 "
                               f"-f {rel.parent}/params/{name}/{rel.stem}.yaml")

    box = nodes.admonition(classes=["tip", "dropdown", CSS_CLASS])
    box += nodes.title(text=f"Re-run this chapter: lowrank run {number} -p NAME VALUE")
    box += _paragraph(
        "Every number on this page comes from a run at the defaults in the table below. To re-run the "
        "chapter with other values, from the repository root with ",
        nodes.literal(text=".venv"),
        " active (",
        nodes.literal(text="make setup"),
        " creates it), give ",
        nodes.literal(text="-p NAME VALUE"),
        " once per parameter to change (VALUE is read as YAML: ",
        nodes.literal(text="64"), ", ", nodes.literal(text="1e-3"), ", ",
        nodes.literal(text="'[1, 2, 4]'"),
        "), or a whole parameter set"
        + (f" ({', '.join(sets)}: see chapters/params/)" if sets else "")
        + ". The run goes to a new folder under ",
        nodes.literal(text="runs/"),
        "; the committed notebook is left as it is.",
    )
    box += _literal("\n".join(lowrank_lines))
    box += _paragraph(
        "The same with papermill directly (its ", nodes.literal(text="-p"),
        " takes numbers and strings; give a list as ", nodes.literal(text="-y 'NAME: [1, 2]'"), "):")
    box += _literal("\n".join(papermill_lines))
    box += _paragraph(f"Parameters of {rel.name} (its cell tagged ", nodes.literal(text="parameters"), "):")
    box += _table([(name, info["default"], info["help"]) for name, info in params.items()])
    return box


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
    _insert_after_summary(doctree, rerun_box(source, Path(app.srcdir)))
    blind = papermill_blind_spots(source, list(chapter_parameters(source)))
    if blind:
        LOGGER.warning(
            f"papermill cannot parse the line of {', '.join(blind)} in the parameters cell, so "
            "`lowrank run -p` and papermill's notebook inspection do not know them; the usual cause "
            "is a '=' inside the comment (CONVENTIONS.md, update 2)",
            location=env.docname, type="rerun_box", subtype="papermill")


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", add_rerun_box)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
