"""Figures on a phone: the narrow variant, the smallest-text measure and the book's <picture> wrapper."""
from __future__ import annotations

import base64
import hashlib
import json
import struct
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from docutils import nodes  # noqa: E402
from docutils.utils import new_document  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from lowrank.book import figures as F  # noqa: E402
from lowrank.book.plotting import subplots  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import book_figures  # noqa: E402


def _size(b64: str) -> tuple[int, int]:
    png = base64.b64decode(b64)
    return struct.unpack(">II", png[16:24])


def _panels(ncols: int, *, fontsize: float | None = None, sharey: bool = False):
    fig, axes = subplots(1, ncols, width=7.5, height=2.6, sharey=sharey)
    for ax in axes[0]:
        ax.plot([1, 2, 3], [1, 4, 9], label="series")
        ax.set(xlabel="x", ylabel="y")
    if fontsize is not None:
        axes[0, 0].text(1.5, 5, "tiny note", fontsize=fontsize)
    return fig


def test_multi_panel_figure_gets_a_stacked_narrow_variant():
    fig = _panels(3, sharey=True)
    data, meta = F.figure_png(fig)
    info = meta[F.META_KEY]
    w, h = _size(data)
    nw, nh = _size(info["narrow"])
    assert (meta["width"], meta["height"]) == (w // 2, h // 2)
    assert info["width"] == meta["width"] and info["narrow_width"] == nw // 2
    # Three panels side by side become three stacked: narrower and taller than the original.
    assert nw < w and nh > 2.5 * h
    assert nw // 2 == pytest.approx(F.NARROW_WIDTH * fig.dpi, rel=0.1)
    # The original figure is untouched (the narrow variant is drawn on a copy).
    assert tuple(fig.get_size_inches()) == (7.5, 2.6)
    assert [ax.get_subplotspec().colspan.start for ax in fig.axes] == [0, 1, 2]
    plt.close(fig)


def test_narrow_variant_is_legible_on_a_phone_where_the_wide_one_is_not():
    fig = _panels(3)
    _, meta = F.figure_png(fig)
    info = meta[F.META_KEY]
    assert F.shown_text_px(info["text_px"], info["width"], F.PHONE_COLUMN_PX) < F.MIN_TEXT_PX
    assert F.shown_text_px(info["narrow_text_px"], info["narrow_width"], F.PHONE_COLUMN_PX) >= F.MIN_TEXT_PX
    plt.close(fig)


def test_smallest_text_finds_a_small_annotation():
    fig = _panels(1)
    normal = F.smallest_text_px(fig)
    fig.axes[0].text(1.5, 5, "tiny note", fontsize=4)
    assert F.smallest_text_px(fig) == pytest.approx(4 * fig.dpi / 72)
    assert normal > 4 * fig.dpi / 72
    plt.close(fig)


def test_side_legend_moves_below_in_the_narrow_variant():
    fig = _panels(1)
    fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    narrow = F.narrow_copy(fig)
    legend = narrow.axes[0].get_legend()
    anchor = legend.get_bbox_to_anchor().transformed(narrow.axes[0].transAxes.inverted())
    assert anchor.x0 < 1 and anchor.y0 < 0
    plt.close(narrow)
    plt.close(fig)


def test_narrow_variant_keeps_errorbar_legend_entries_and_shared_x_tick_labels():
    """A legend rebuilt under the stacked panels shows each errorbar series as drawn (marker and
    line style, not the bars alone), and panels that shared an x axis each get its tick labels."""
    fig, axes = subplots(2, 2, width=7.5, height=2.6, sharex=True, layout="constrained")
    for ax in axes.flat:
        ax.errorbar([1, 2, 3], [1, 4, 9], yerr=[0.5, 0.5, 0.5], marker="s", linestyle="--", label="series")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center")
    narrow = F.narrow_copy(fig)
    drawn = {(line.get_marker(), line.get_linestyle()) for line in narrow.legends[0].findobj(Line2D)}
    assert {marker for marker, _ in drawn} & {"s"} and {style for _, style in drawn} & {"--"}
    narrow.canvas.draw()
    assert all(any(t.get_visible() and t.get_text() for t in ax.get_xticklabels()) for ax in narrow.axes)
    plt.close(narrow)
    plt.close(fig)


def _notebook(tmp_path: Path, data: str, meta: dict) -> Path:
    out = {"output_type": "display_data", "data": {"application/papermill.record/image/png": data},
           "metadata": {"image/png": meta, "scrapbook": {"name": "k", "mime_prefix": "application/papermill.record/"}}}
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [out], "metadata": {}}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "ch.ipynb"
    path.write_text(json.dumps(nb), encoding="utf8")
    return path


def test_extension_wraps_known_figures_in_a_picture_with_a_narrow_source(tmp_path):
    fig = _panels(2)
    data, meta = F.figure_png(fig)
    plt.close(fig)
    sha = hashlib.sha256(base64.b64decode(data)).hexdigest()
    index = book_figures.figure_index([_notebook(tmp_path, data, meta)])
    assert set(index) == {sha}

    doc = new_document("page")
    figure = nodes.figure()
    figure += nodes.image(uri=f"../jupyter_execute/{sha}.png")
    figure += nodes.image(uri="other.png")
    doc += figure
    images = tmp_path / "_images"
    assert book_figures.wrap_figures(doc, index, images) == 1
    holder = figure[0]
    assert isinstance(holder, book_figures.picture) and isinstance(holder[0], nodes.image)
    assert isinstance(figure[1], nodes.image)  # an image without metadata is left alone
    narrow = images / f"{sha}-narrow.png"
    assert narrow.read_bytes() == base64.b64decode(meta[F.META_KEY]["narrow"])
    tag = book_figures.picture_open_tag(holder, "../_images")
    assert f'srcset="../_images/{sha}-narrow.png"' in tag and "max-width" in tag
    assert f'data-text-px="{meta[F.META_KEY]["text_px"]}"' in tag
    assert f'data-narrow-width="{meta[F.META_KEY]["narrow_width"]}"' in tag
    assert f'data-plot-frac="{meta[F.META_KEY]["plot_frac"]}"' in tag and 'data-narrow-overlaps="[]"' in tag


def test_plot_fraction_and_text_overlaps_can_fail():
    fig = _panels(2)
    assert F.plot_fraction(fig) > F.MIN_PLOT_FRAC and F.text_overlaps(fig) == []
    plt.close(fig)
    # a chart whose legend, outside on the right, is wider than its plotting area
    fig, axes = subplots(1, 1, width=4.0, height=2.5)
    ax = axes[0, 0]
    for i in range(3):
        ax.plot([0, 1], [i, i + 1], label=f"a series with a very long descriptive legend label {i}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    assert F.plot_fraction(fig) < F.MIN_PLOT_FRAC
    # two notes drawn over each other, one of them in a box
    ax.text(0.5, 1.0, "first note", ha="center")
    ax.text(0.52, 1.02, "second note", ha="center", bbox=dict(boxstyle="round,pad=0.3", facecolor="white"))
    assert ("first note", "second note") in F.text_overlaps(fig)
    plt.close(fig)


def test_book_style_displays_figures_with_their_narrow_variant():
    from IPython.core.interactiveshell import InteractiveShell

    from lowrank.book.plotting import use_style

    shell = InteractiveShell.instance()
    try:
        use_style()
        fig = _panels(2)
        data, meta = shell.display_formatter.format(fig)
        plt.close(fig)
        assert "image/png" in data
        info = meta["image/png"][F.META_KEY]
        assert info["narrow_width"] < info["width"] == meta["image/png"]["width"]
    finally:
        InteractiveShell.clear_instance()
        matplotlib.rcdefaults()


def test_rendered_html_puts_source_and_img_directly_in_the_picture(tmp_path):
    """A browser uses a <source> only for the picture's own <img>, so the link Sphinx puts around a
    scaled image must end up outside the picture."""
    import re

    from sphinx.application import Sphinx

    fig = _panels(2)
    data, meta = F.figure_png(fig)
    plt.close(fig)
    png = base64.b64decode(data)
    sha = hashlib.sha256(png).hexdigest()
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{sha}.png").write_bytes(png)
    (src / "index.rst").write_text(f"Page\n====\n\n.. figure:: {sha}.png\n   :width: 400px\n\n   Caption.\n",
                                   encoding="utf8")
    ext = Path(book_figures.__file__).parent
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ext)!r})\nextensions = ['book_figures']\n"
        f"def setup(app):\n    app.{book_figures._INDEX} = {{{sha!r}: {meta[F.META_KEY]!r}}}\n", encoding="utf8")
    out = tmp_path / "html"
    Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None, warning=None,
           freshenv=True).build()
    page = (out / "index.html").read_text(encoding="utf8")
    assert re.search(r'<a [^>]*image-reference[^>]*><picture class="book-figure"[^>]*>'
                     rf'<source media="[^"]+" srcset="_images/{sha}-narrow.png"><img [^>]*src="_images/{sha}.png"',
                     page), page[page.find("<figure"):][:800]
    assert (out / "_images" / f"{sha}-narrow.png").is_file()


def test_rate_grid_stops_its_loss_axis_above_the_lowest_loss_and_labels_what_lies_beyond():
    from lowrank.book import training_figures as TF

    models = [("fixed h = 4, d_p = 64", 0.005, [(0.0025, 3.04), (0.005, 3.01), (0.01, 3.12), (0.02, 3.92)]),
              ("standard h = 4", None, [(0.005, 3.05), (0.01, 3.02)])]
    fig, axes = plt.subplots(2, 1)
    TF.plot_lr_grid(axes, [("diverging", models), ("close", models[1:])], grid_rates=(0.005, 0.01, 0.02))
    low, top = axes[0].get_ylim()
    assert top == pytest.approx(3.01 + TF.LOSS_SPAN) and low < 3.01
    assert [t.get_text() for t in axes[0].texts] == ["3.92"]
    assert axes[1].get_ylim()[1] < 3.06 + TF.LOSS_SPAN and not axes[1].texts  # nothing beyond: no cap
    plt.close(fig)


def test_a_png_saved_with_its_measures_carries_them_in_the_file(tmp_path):
    from lowrank.core.figure_measures import png_measures, save_png

    fig, ax = plt.subplots(figsize=(4.2, 3))
    ax.plot([1, 2], [3, 4])
    ax.set_title("title", fontsize=7)
    info = save_png(fig, tmp_path / "a.png", dpi=150)
    save_png(fig, tmp_path / "b.png", dpi=300)
    fig.savefig(tmp_path / "plain.png")
    plt.close(fig)
    assert png_measures(tmp_path / "a.png") == info and info["text_px"] == pytest.approx(7 * 150 / 72, abs=0.01)
    twice = png_measures(tmp_path / "b.png")
    # Text and width scale together with the dpi: the size a page draws the text at does not change.
    assert twice["width"] == pytest.approx(2 * info["width"], abs=3)
    assert twice["text_px"] == pytest.approx(2 * info["text_px"], abs=0.02)
    assert png_measures(tmp_path / "plain.png") is None and png_measures(tmp_path / "missing.png") is None
    fig, ax = plt.subplots(figsize=(4.2, 3))
    ax.plot([1, 2], [3, 4])
    ax.set_title("title", fontsize=7)
    save_png(fig, tmp_path / "again.png", dpi=150)
    plt.close(fig)
    assert (tmp_path / "again.png").read_bytes() == (tmp_path / "a.png").read_bytes()


def test_a_static_png_with_measures_gets_them_on_the_page_and_a_plain_one_does_not(tmp_path):
    from sphinx.application import Sphinx

    from lowrank.core.figure_measures import save_png

    src = tmp_path / "src"
    (src / "figs").mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(4.2, 3))
    ax.plot([1, 2], [3, 4])
    info = save_png(fig, src / "figs" / "measured.png")
    fig.savefig(src / "figs" / "plain.png")
    plt.close(fig)
    (src / "index.rst").write_text("Page\n====\n\n.. figure:: figs/measured.png\n\n   One.\n\n"
                                   ".. figure:: figs/plain.png\n\n   Two.\n", encoding="utf8")
    ext = Path(book_figures.__file__).parent
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ext)!r})\nextensions = ['book_figures']\n",
                                 encoding="utf8")
    out = tmp_path / "html"
    Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None, warning=None,
           freshenv=True).build()
    page = (out / "index.html").read_text(encoding="utf8")
    assert page.count('<picture class="book-figure"') == 1 and "<source" not in page
    assert f'data-width="{info["width"]}" data-text-px="{info["text_px"]}"' in page
    assert 'data-text-px' not in page[page.find("plain.png") - 300:page.find("plain.png")]
