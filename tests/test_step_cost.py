"""The parameter-matched pair's cost per training step, read from the benchmark results: the right
two timed runs (shape, head layout), their ratio, and a plain statement when one is missing."""
from __future__ import annotations

import copy
import json

import pytest

from lowrank.experiments.head_size_training import read_step_cost, step_cost_text
from lowrank.experiments.head_size_training.design import model
from lowrank.experiments.head_size_training.step_cost import BENCHMARKS
from lowrank.core.files import in_book


@pytest.fixture()
def results():
    return json.loads(in_book(BENCHMARKS).read_text(encoding="utf8"))


def _write(tmp_path, data):
    p = tmp_path / "latest.json"
    p.write_text(json.dumps(data))
    return str(p)


def test_the_committed_benchmark_times_both_models_of_the_matched_pair(results):
    c = read_step_cost()
    assert c is not None and (c.model_a, c.model_b) == ("standard d = 112", "fixed h = 32")
    by_key = {r["key"]: r for r in results["results"]}
    fixed = next(r for r in by_key.values()
                 if r["config"].get("fixed_head_dim") == 16 and r["config"].get("heads") == 32)
    base = next(r for r in by_key.values() if r["config"].get("d_model") == model("standard d = 112")[4])
    assert c.seconds_b == fixed["timings"]["ours"]["median_s"] and c.seconds_a == base["timings"]["ours"]["median_s"]
    assert c.ratio == pytest.approx(c.seconds_b / c.seconds_a)
    text = step_cost_text(c)
    assert f"{c.ratio:.2f} times" in text and f"{c.steps} steps" in text and "/" not in text


def test_the_standard_h_32_run_is_never_taken_for_the_fixed_one(tmp_path, results):
    data = copy.deepcopy(results)
    data["results"] = [r for r in data["results"] if "fixed_head_dim" not in r["config"]]
    assert read_step_cost(path=_write(tmp_path, data)) is None
    # the h = 32 pair, whose standard model is still there, loses its fixed model too
    assert read_step_cost("gap", path=_write(tmp_path, data)) is None


def test_a_run_at_another_shape_is_not_the_pairs(tmp_path, results):
    data = copy.deepcopy(results)
    for r in data["results"]:
        if r["config"].get("d_model") == 112:
            r["config"]["batch"] = 16
    assert read_step_cost(path=_write(tmp_path, data)) is None


def test_missing_results_are_said_not_guessed(tmp_path):
    assert read_step_cost(path=str(tmp_path / "absent.json")) is None
    assert read_step_cost(path=_write(tmp_path, {"results": []})) is None
    assert "states no ratio" in step_cost_text(None)
