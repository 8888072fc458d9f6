"""Sphinx extension: a numbered, captioned figure pasted from another chapter's glue.

myst-nb's ``{glue:figure}`` reads only the current notebook's glue, and ``{glue}`` with ``:doc:``
pastes an image with no figure around it (no number, no caption). The landing page shows chapter
08's verdict chart as a figure, so this directive puts a cross-document paste inside a figure:

::

    ```{glued-figure} ch08_verdict_chart
    :doc: chapters/08_synthesis.ipynb
    :name: fig-intro-verdicts

    Caption: the takeaway first.
    ```
"""
from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from myst_nb.ext.glue.utils import PendingGlueReferenceError, create_pending_glue_ref
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class GluedFigure(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"doc": directives.unchanged_required, "name": directives.unchanged_required}

    def run(self):
        for option in ("doc", "name"):
            if option not in self.options:
                raise self.error(f"glued-figure needs :{option}:")
        try:
            ref = create_pending_glue_ref(self.state.document, self.state.document["source"], self.lineno,
                                          self.options["doc"], self.arguments[0])
        except PendingGlueReferenceError as exc:
            raise self.error(str(exc)) from exc
        figure = nodes.figure("", ref)
        self.set_source_info(figure)
        self.add_name(figure)
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        if len(holder.children) != 1 or not isinstance(holder[0], nodes.paragraph):
            raise self.error("glued-figure needs a caption of one paragraph")
        figure += nodes.caption(holder[0].rawsource, "", *holder[0].children)
        return [figure]


def setup(app: Sphinx) -> dict:
    app.add_directive("glued-figure", GluedFigure)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
