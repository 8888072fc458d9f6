"""``lowrank list [CHAPTER]``: what each chapter is, what each of its scales costs, its parameters.

Per chapter: its number and title, one line saying what it shows (the chapter's own opening
sentence), each parameter set with what it is (the first clause of the set's header), the hardware
it needs and its estimate, and the table of parameters (default, help, allowed values). How a set
was grown or where its store came from is for maintainers (``docs/maintainers.md``), not here.

Estimates load the chapter's module (and torch), so the overview of every chapter leaves them out
and stays instant; ``lowrank list NN`` gives them for one chapter.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

from .chapters import Chapter, list_chapters, notebook_parameters, read_cells, resolve_chapter
from .parameter_files import parameter_file_header

__all__ = ["description", "set_summary", "list_text"]

WIDTH = 100
_MATHS = re.compile(r"\$([^$]+)\$")
_ROLE = re.compile(r"\{[a-z:-]+\}`([^`<]*)(?:<[^`]*>)?`")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")
_GLUE = re.compile(r"\{glue(?::text)?\}`([A-Za-z0-9_]+)(?::[^`]*)?`")
_TEX = {"\\lfloor": "floor(", "\\rfloor": ")", "\\le": "<=", "\\ge": ">=", "\\cdot": "*", "\\times": "x",
        "\\,": " ", "\\log": "log", "\\mathrm": "", "\\operatorname": ""}
# Abbreviations whose full stop does not end a sentence.
_NOT_AN_END = re.compile(r"\b(?:al|e\.g|i\.e|cf|Sec|Fig|Eq|Thm|vs)$")


def _tex(maths: str) -> str:
    for tex, plain in _TEX.items():
        maths = maths.replace(tex, plain)
    return maths.replace("\\", "").replace("{", "").replace("}", "")


def _plain(text: str, glued: dict) -> str:
    """Markdown as terminal text: $d_h$ -> d_h, a glued value as its value, {doc}`x` -> x,
    [x](y) -> x, no emphasis marks."""
    text = _GLUE.sub(lambda m: str(glued.get(m.group(1), "")), text)
    text = _ROLE.sub(lambda m: m.group(1).strip(), text)
    text = _LINK.sub(r"\1", text)
    text = text.replace("**", "")
    text = _MATHS.sub(lambda m: _tex(m.group(1)), text)
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(text.split())))


def _first_sentence(text: str) -> str:
    for m in re.finditer(r"\.(\s|$)", text):
        if not _NOT_AN_END.search(text[:m.start()]):
            return text[:m.start() + 1]
    return text


def description(chapter: Chapter) -> str:
    """The chapter's opening sentence: the first paragraph after its title, up to its first full
    stop, with glued values as the committed notebook holds them."""
    from ..core.glued import read_glue

    for cell in read_cells(chapter.path):
        if cell["cell_type"] != "markdown":
            continue
        lines = cell["source"].splitlines()
        title = next((i for i, ln in enumerate(lines) if ln.startswith("# ")), None)
        if title is None:
            continue
        para = []
        for ln in lines[title + 1:]:
            if ln.strip():
                para.append(ln.strip())
            elif para:
                break
        return _first_sentence(_plain(" ".join(para), read_glue(chapter.path) if "{glue" in " ".join(para) else {}))
    return ""


def set_summary(path: Path) -> str:
    """What a parameter set is: the first clause of its header comment ('Chapter 04 at the long CPU
    scale'), never the run-book that may follow."""
    header = _first_sentence(" ".join(parameter_file_header(path).split()))
    first = re.split(r"[:;]\s", header, maxsplit=1)[0].strip().rstrip(".")
    if first.count("(") > first.count(")"):  # cut inside a parenthesis: end before it
        first = first[:first.rindex("(")].rstrip(" ,")
    return first or "(no header)"


def _hardware(chapter: Chapter, scale: str) -> str:
    """What a scale needs, from its set's metadata alone (no chapter module loaded)."""
    from .parameter_files import load_yaml

    if scale == "default":
        return "a CPU; the book's runs use 2 cores, no GPU"
    try:  # read as YAML only: lowrank.book.costs would load torch
        return str(load_yaml(chapter.param_file(scale).read_text(encoding="utf8"))["metadata"]["hardware"])
    except Exception:  # a malformed block: `lowrank list NN` and the run itself name the problem
        return "see its metadata block"


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def list_text(root: Path | None, chapter: str | None = None, *, estimates: bool | None = None) -> list[str]:
    """The lines ``lowrank list`` prints, for every chapter of ``root`` or only ``chapter`` (with
    estimates unless ``estimates`` is False)."""
    from .params import SCHEMAS

    estimates = bool(chapter) if estimates is None else estimates
    chapters = [resolve_chapter(chapter, root)] if chapter else list_chapters(root)
    out: list[str] = []
    for ch in chapters:
        number = ch.name.split("_")[0]
        out.append(f"{number}  {ch.title()}")
        out += _wrap(description(ch), "    ")
        scales = ["default", *ch.param_sets()]
        hint = "" if estimates else f"; estimates and allowed values: lowrank list {number}"
        out.append(f"    scales (lowrank run {number} --scale SCALE{hint}):")
        book = root or ch.path.parent.parent
        for scale in scales:
            if scale == "smoke":
                out += _wrap("smoke: seconds, for the tests", "      ")
                continue
            what = "the chapter's defaults, the run the book shows" if scale == "default" else \
                set_summary(ch.param_file(scale))
            if estimates and ch.name in SCHEMAS:
                from .sets import set_info

                info = set_info(book, ch.path, scale)
                cost = f"; {info.estimate_text()}; needs {info.hardware}"
            else:
                cost = f"; needs {_hardware(ch, scale)}"
            out += _wrap(f"{scale}: {what}{cost}", "      ")
        spec = SCHEMAS.get(ch.name, {}) if estimates else {}  # a schema loads its chapter's module
        params = notebook_parameters(ch, papermill=False)
        out.append("    parameters (lowrank run {} -p NAME VALUE):".format(number))
        w_name = max((len(n) for n in params), default=0)
        w_default = max((len(p["default_text"]) for p in params.values()), default=0)
        for name, info in params.items():
            allowed = f"  [{spec[name].allowed()}]" if name in spec else ""
            unread = "" if info["papermill"] is not False else \
                "  (papermill's parser skips this line: remove '=' from its comment)"
            default = f"{info['default_text']:<{w_default}}"
            out.append(f"      {name:<{w_name}} = {default}  # {info['help']}{allowed}{unread}")
        if chapter and not spec:
            out.append("    no schema: the chapter is not in lowrank/experiments/registry.py")
        out.append("")
    return out
