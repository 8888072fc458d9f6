import json

import pytest

from lowrank.core.glued import read_glue


def _nb(path, items):
    outputs = [{"output_type": "display_data", "metadata": {"scrapbook": {"name": k, "mime_prefix": "application/papermill.record/"}},
                "data": {"application/papermill.record/text/plain": v}} for k, v in items]
    outputs.append({"output_type": "stream", "name": "stdout", "text": "noise"})
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": outputs, "source": ""}]}))


def test_read_glue_parses_literals_and_keeps_other_reprs(tmp_path):
    _nb(tmp_path / "02_x.ipynb", [("ch02_a", "3"), ("ch02_b", "0.25"), ("ch02_c", "'text'"),
                                  ("ch02_d", "array([1, 2])"), ("ch02_a", "4")])
    got = read_glue(tmp_path / "02_x.ipynb")
    assert got == {"ch02_a": 4, "ch02_b": 0.25, "ch02_c": "text", "ch02_d": "array([1, 2])"}


def test_missing_notebook_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no executed notebook"):
        read_glue(tmp_path / "nope.ipynb")


def test_reads_the_committed_chapter_01():
    from pathlib import Path
    got = read_glue(Path(__file__).resolve().parents[1] / "chapters" / "01_attention_and_rank.ipynb")
    assert got["ch01_n"] == 64 and got["ch01_logit_excess"] == 0


def test_a_glued_float_that_is_not_finite_reads_back_as_a_float():
    import math

    from lowrank.core.glued import literal_value

    assert math.isnan(literal_value("nan")) and literal_value("inf") == float("inf") and literal_value("-inf") == float("-inf")
    assert literal_value("'nan'") == "nan"  # the text "nan", glued as a string, stays a string
