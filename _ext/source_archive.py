"""Sphinx extension: the book offers the source of the whole project at the commit it was built from.

A reader who downloads one chapter notebook cannot run it without the ``lowrank`` package, its
lock file and the parameter sets. This extension writes ``_downloads/lowrank-<commit>.tar.gz``
into the HTML output (``git archive`` of the commit the build ran from, made offline; when the
working tree has uncommitted changes to tracked files, ``git stash create`` makes a commit object
that holds them, and the label says so). Outside a git checkout (a staged copy, an unpacked
archive) it falls back to a tarball of the source folder without build outputs, caches, data and
virtual environments.

Pages link to the archive with the ``{source-archive}`` directive (a paragraph with the link, the
commit and the size) or, from Python, :func:`archive_reference`; the link is resolved per page and
per builder, so it works in the multi-page HTML and in the single page that ``make pdf`` prints.
"""
from __future__ import annotations

import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

FOLDER = "_downloads"
PROJECT = "lowrank"
# Never in the fallback tarball: build outputs, caches, fetched data, run folders, environments.
EXCLUDE = {".git", ".venv", "_build", "runs", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "cache",
           ".jupyter_cache", "node_modules"}


@dataclass(frozen=True)
class Source:
    commit: str      # full hash, or "" outside git
    dirty: bool      # uncommitted changes to tracked files are included
    tree: str        # what git archive is given (HEAD or a stash commit)
    root: Path

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit else "working-tree"

    @property
    def filename(self) -> str:
        return f"{PROJECT}-{self.short}{'-dirty' if self.dirty else ''}.tar.gz"

    @property
    def label(self) -> str:
        if not self.commit:
            return "the source folder the book was built from (not a git checkout)"
        return f"commit {self.short}" + (" with the uncommitted changes it was built with" if self.dirty else "")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def find_source(root: Path) -> Source:
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel"))
        commit = _git(top, "rev-parse", "HEAD")
        stash = _git(top, "stash", "create")  # empty when no tracked file differs from HEAD
    except (OSError, subprocess.CalledProcessError):
        return Source("", False, "", root)
    return Source(commit, bool(stash), stash or commit, top)


def write_archive(source: Source, dest: Path) -> Path:
    """Write the tarball to ``dest`` (a folder); reuse it when it is already there."""
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / source.filename
    if path.is_file() and path.stat().st_size > 0 and source.commit and not source.dirty:
        return path
    prefix = path.name.removesuffix(".tar.gz")
    tmp = path.with_suffix(".tmp")
    if source.commit:
        with tmp.open("wb") as out:
            subprocess.run(["git", "-C", str(source.root), "archive", "--format=tar.gz", f"--prefix={prefix}/",
                            source.tree], check=True, stdout=out)
    else:
        with tarfile.open(tmp, "w:gz") as tar:
            for item in sorted(source.root.iterdir()):
                if item.name in EXCLUDE or item.name.startswith(".") or item.name == "data":
                    continue
                tar.add(item, arcname=f"{prefix}/{item.name}",
                        filter=lambda info: None if set(Path(info.name).parts) & EXCLUDE else info)
    tmp.replace(path)
    return path


class source_archive_ref(nodes.Inline, nodes.TextElement):
    """A link to the archive, resolved per page once the builder is known."""


def archive_reference(text: str | None = None) -> source_archive_ref:
    node = source_archive_ref()
    if text:
        node["text"] = text
    return node


class SourceArchiveDirective(Directive):
    has_content = False

    def run(self):
        para = nodes.paragraph()
        para += nodes.Text("Download the source of the whole project: ")
        para += archive_reference()
        para += nodes.Text(". It holds the lowrank package, the chapters with their outputs and parameter sets, "
                           "the tests, the lock files and this book's configuration, as they were when this "
                           "page was built.")
        return [para]


def _source(app: Sphinx) -> Source:
    if not hasattr(app, "_lowrank_source"):
        app._lowrank_source = find_source(Path(__file__).resolve().parents[1])
    return app._lowrank_source


def resolve_links(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    source = _source(app)
    prefix = "" if app.builder.name == "singlehtml" else "../" * docname.count("/")
    for node in list(doctree.findall(source_archive_ref)):
        text = node.get("text") or f"{source.filename}"
        ref = nodes.reference("", "", nodes.literal(text, text), refuri=f"{prefix}{FOLDER}/{source.filename}",
                              internal=False, classes=["source-archive"])
        node.replace_self([ref, nodes.Text(f" ({source.label})")] if not node.get("text") else ref)


def build_archive(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source = _source(app)
    path = write_archive(source, Path(app.outdir) / FOLDER)
    LOGGER.info(f"source archive: {path} ({path.stat().st_size / 1e6:.1f} MB, {source.label})")


def setup(app: Sphinx) -> dict:
    app.add_node(source_archive_ref)
    app.add_directive("source-archive", SourceArchiveDirective)
    app.connect("doctree-resolved", resolve_links)
    app.connect("build-finished", build_archive)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
