"""Sphinx extension: a numbered, captioned figure or table pasted from another chapter's glue.

myst-nb's ``{glue:figure}`` reads only the current notebook's glue, and ``{glue}`` with ``:doc:``
pastes an image or a table with no number and no caption. The landing page shows chapter 08's
verdict chart and tables like every chapter's, so these directives put a cross-document paste
inside a numbered figure, or under a numbered table caption (``book_tables``' ``table_caption``,
in the same ``book-table`` box as a chapter's table):

::

    ```{glued-figure} ch08_verdict_chart
    :doc: chapters/08_synthesis.ipynb
    :name: fig-intro-verdicts

    Caption: the takeaway first.
    ```

    ```{glued-table} ch08_counts_by_kind
    :doc: chapters/08_synthesis.ipynb
    :name: tab-intro-counts

    Caption: the takeaway first.
    ```
"""
from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from myst_nb.ext.glue.utils import PendingGlueReferenceError, create_pending_glue_ref
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class _Glued(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"doc": directives.unchanged_required, "name": directives.unchanged_required}
    kind = "glued"

    def paste_and_caption(self):
        """The pending paste and the caption's paragraph."""
        for option in ("doc", "name"):
            if option not in self.options:
                raise self.error(f"{self.kind} needs :{option}:")
        try:
            ref = create_pending_glue_ref(self.state.document, self.state.document["source"], self.lineno,
                                          self.options["doc"], self.arguments[0])
        except PendingGlueReferenceError as exc:
            raise self.error(str(exc)) from exc
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        if len(holder.children) != 1 or not isinstance(holder[0], nodes.paragraph):
            raise self.error(f"{self.kind} needs a caption of one paragraph: the takeaway first")
        return ref, holder[0]


class GluedFigure(_Glued):
    kind = "glued-figure"

    def run(self):
        ref, caption = self.paste_and_caption()
        figure = nodes.figure("", ref)
        self.set_source_info(figure)
        self.add_name(figure)
        figure += nodes.caption(caption.rawsource, "", *caption.children)
        return [figure]


class GluedTable(_Glued):
    kind = "glued-table"

    def run(self):
        from book_tables import table_caption  # the book's numbered table caption (loaded before this)

        ref, caption = self.paste_and_caption()
        node = table_caption("", *caption.children)
        self.add_name(node)
        self.set_source_info(node)
        box = nodes.container(classes=["book-table"])
        box += node
        box += ref
        return [box]


def setup(app: Sphinx) -> dict:
    app.add_directive("glued-figure", GluedFigure)
    app.add_directive("glued-table", GluedTable)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
