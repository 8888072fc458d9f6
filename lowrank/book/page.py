"""A finished run read as the chapter's page: ``lowrank run NN ... --html``.

The executed notebook of a run is rendered alone, with the book's own configuration, theme and
Sphinx extensions, so the page is the one the reader knows: every ``{glue}`` role and directive
is resolved to the run's own values (the sentences, verdicts and tables), the figures are the run's.
A note under the title gives the scale and every parameter that differs from the chapter's default.

The run folder receives ``page.html`` and ``page_files/`` (the theme's assets and the figures),
so the page opens from the folder without a server. Nothing is executed: the notebook already
holds its outputs. Links to other chapters are not resolved (the book is not there) and read as
plain text. The render happens in a temporary folder inside the run folder, removed on every exit
path, so a failed render leaves the run as it was.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..core.glued import literal_value
from .errors import RunError

__all__ = ["PAGE", "ASSETS", "changed_parameters", "run_note", "render_page"]

PAGE = "page.html"
ASSETS = "page_files"
# The page's links into the book's build folder, rewritten to its assets folder beside the page.
_RELATIVE = re.compile(r'((?:href|src|data-url_root)=")\.\./')


class PageFailed(RunError):
    """The run finished but its page did not render (exit status 1; the run folder is kept)."""

    status = 1


def changed_parameters(injected: Mapping[str, Any], defaults: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple]:
    """name -> (value, default) for every injected value that differs from the notebook's default."""
    out = {}
    for name, value in injected.items():
        info = defaults.get(name)
        default = literal_value(info["default_text"]) if info else None
        if info is None or default != value:
            out[name] = (value, info["default_text"] if info else None)
    return out


def _shown(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def run_note(scale: str, changed: Mapping[str, tuple], command: str | None = None) -> str:
    """The Markdown of the note under the title: scale, changed parameters, the command."""
    lines = [":::{admonition} This page is your run", ":class: note", ""]
    scale_text = {"default": "the chapter's default parameters", "smoke": "the smoke-test set (seconds, for tests)",
                  "long": "the long CPU set", "paper": "the paper-scale set"}.get(scale, f"the {scale} set")
    lines.append(f"Every number, verdict, table and figure on this page comes from this run, at {scale_text}.")
    if changed:
        lines += ["", "Parameters that differ from the chapter's defaults:", ""]
        lines += [f"- `{n}` = {_shown(v)}" + (f" (default {d})" if d is not None else "")
                  for n, (v, d) in changed.items()]
    else:
        lines += ["", "No parameter differs from the chapter's defaults."]
    if command:
        lines += ["", f"Command: `{command}`"]
    lines.append(":::")
    return "\n".join(lines)


def _with_note(executed: Path, dest: Path, note: str) -> None:
    """The executed notebook with the note as a Markdown cell after the cell holding the title."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    at = next((i + 1 for i, c in enumerate(nb.cells)
               if c.cell_type == "markdown" and any(line.startswith("# ") for line in c.source.splitlines())), 0)
    nb.cells.insert(at, nbformat.v4.new_markdown_cell(note))
    for cell in nb.cells:  # papermill's injected values: the note lists those that matter
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, dest)


def _config(root: Path) -> dict:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf8")) or {}
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    config["only_build_toc_files"] = True
    local = (config.get("sphinx") or {}).get("local_extensions") or {}
    for name, folder in local.items():
        local[name] = str((root / folder).resolve())
    return config


def render_page(root: Path, executed: Path, outdir: Path, *, scale: str, changed: Mapping[str, tuple],
                command: str | None = None, timeout: int = 600) -> Path:
    """Render the executed notebook ``executed`` of the book at ``root`` into ``outdir/page.html``
    and ``outdir/page_files/``; return the page. Raises PageFailed with the renderer's last lines."""
    root, executed, outdir = Path(root), Path(executed), Path(outdir)
    stem = executed.stem
    with tempfile.TemporaryDirectory(prefix=".page-", dir=outdir) as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"
        (src / "chapters").mkdir(parents=True)
        config = _config(root)
        (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf8")
        for bib in config.get("bibtex_bibfiles", []):
            if (root / bib).is_file():
                shutil.copy2(root / bib, src / bib)
        (src / "_toc.yml").write_text(f"format: jb-book\nroot: chapters/{stem}\n", encoding="utf8")
        _with_note(executed, src / "chapters" / executed.name, run_note(scale, changed, command))
        jb = Path(sys.executable).with_name("jupyter-book")
        command_line = [str(jb if jb.exists() else "jupyter-book"), "build", str(src), "--path-output", str(out)]
        done = subprocess.run(command_line, cwd=src, capture_output=True, text=True, timeout=timeout)
        html = out / "_build" / "html"
        page = html / "chapters" / f"{stem}.html"
        if done.returncode != 0 or not page.is_file():
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])[:400]
            raise PageFailed(f"the run finished (its folder is kept), but its page did not render: {tail}")
        assets = outdir / ASSETS
        if assets.exists():
            shutil.rmtree(assets)
        # the theme's assets and the figures; not the book's other pages, sources or source archive
        shutil.copytree(html, assets, ignore=shutil.ignore_patterns(
            "*.html", "_sources", "_downloads", ".doctrees", ".buildinfo", "objects.inv", "chapters"))
        text = _RELATIVE.sub(lambda m: f"{m.group(1)}{ASSETS}/", page.read_text(encoding="utf8"))
        # the page's download button: the run's own executed notebook, beside the page
        text = text.replace(f"{ASSETS}/_sources/chapters/{executed.name}", executed.name)
        # the book's source archive is not copied into every run: its link becomes its text
        text = re.sub(rf'<a [^>]*href="{ASSETS}/_downloads/[^"]*"[^>]*>(.*?)</a>', r"\1", text, flags=re.S)
        target = outdir / PAGE
        target.write_text(text, encoding="utf8")
    return target
