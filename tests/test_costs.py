"""Estimates a user can trust: every default and long set's estimate within a factor of 3 of its
measured time, metadata blocks that are complete and consistent with the sets' parameters, and
the same numbers wherever they are printed."""
from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from lowrank.book import cli, costs as book_costs, runner, sets
from lowrank.book.costs import duration
from lowrank.book.params import ParameterError
from lowrank.experiments import costs, head_size_training, registry

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
SET_FILES = sorted((ROOT / "chapters" / "params").glob("*/*.yaml"))
FACTOR = 3.0


def _measured_sets():
    return [s for s in sets.book_sets(ROOT, ("default", "long"))]


@pytest.mark.parametrize("info", _measured_sets(), ids=lambda s: f"{s.chapter[:2]}-{s.scale}")
def test_every_default_and_long_estimate_is_within_a_factor_of_3_of_its_measured_time(info):
    if info.measured.done is not None:
        pytest.skip(f"{info.chapter} {info.scale}: {info.measured.text()} (no time of the whole set yet)")
    assert info.measured.seconds is not None, f"{info.chapter} {info.scale} has no measured time"
    if info.cost is None and info.chapter in registry.MODULES:
        pytest.skip(f"{info.chapter}: its parameters cell does not pass its schema (test_cli says which names)")
    assert info.cost is not None, f"{info.chapter} has no cost model"
    ratio = info.cost.wall_s / info.measured.seconds
    assert 1 / FACTOR <= ratio <= FACTOR, (
        f"{info.chapter} at {info.scale}: estimated {info.cost.wall_s:.0f} s, measured "
        f"{info.measured.seconds:.0f} s ({info.measured.text()}): off by {max(ratio, 1 / ratio):.1f}x")


def test_the_factor_check_fails_for_an_estimate_that_is_off(monkeypatch):
    info = next(s for s in _measured_sets() if s.chapter.startswith("06") and s.scale == "default")
    monkeypatch.setitem(costs.CPU_RATES, "nested", costs.CPU_RATES["nested"] * 100)
    slow = sets.set_info(ROOT, ROOT / "chapters" / "06_rank_saturation.ipynb", "default")
    assert slow.cost.wall_s / slow.measured.seconds > FACTOR > info.cost.wall_s / info.measured.seconds


def test_chapter_06_default_no_longer_charges_an_svd_the_hardmax_rank_never_computes():
    info = sets.set_info(ROOT, ROOT / "chapters" / "06_rank_saturation.ipynb", "default")
    assert info.cost.units["nested"] > 0 and info.cost.wall_s < 600


@pytest.mark.parametrize("path", SET_FILES, ids=lambda p: f"{p.parent.name}-{p.stem[:2]}")
def test_every_set_file_has_a_complete_metadata_block_matching_its_parameters(path):
    values = runner.load_yaml(path.read_text(encoding="utf8"))
    meta = book_costs.read_metadata(path, values)
    try:
        params = sets.set_parameters(ROOT / "chapters" / f"{path.stem}.ipynb", values)
    except ParameterError as e:
        if "missing parameter" not in str(e):
            raise
        pytest.skip(f"{path.stem}: its parameters cell lacks names its schema has (test_cli says which)")
    if "device" in params:  # a set that names a device must say it computes there
        assert meta["devices"] == costs.chapter_device(params), path
    gpu = any(line.strip().lower().startswith("# requires:") and "gpu" in line.lower()
              for line in path.read_text().splitlines())
    needs_gpu = gpu or params.get("device") == "cuda"
    assert needs_gpu == (meta["devices"] == "cuda"), f"{path}: '# requires: gpu' or device and devices disagree"
    # the run never sees the block
    assert book_costs.METADATA_KEY not in runner.load_parameter_file(path)[0]


def test_a_store_that_exists_is_never_reported_as_not_yet_run():
    for info in sets.book_sets(ROOT, ("long", "paper")):
        meta = book_costs.read_metadata(ROOT / "chapters" / "params" / info.scale / f"{info.chapter}.yaml")
        if meta["measured"]["source"] == "store":
            assert info.measured.seconds is not None or info.measured.done is not None, info
            assert "not yet run" not in info.measured.text()
    # a long store committed under data/results/ is cited by its set
    cited = {book_costs.read_metadata(p)["measured"].get("path") for p in SET_FILES}
    cited |= {a for p in SET_FILES for a in book_costs.read_metadata(p)["measured"].get("also", [])}
    for store in (ROOT / "data" / "results").glob("*_long.jsonl"):
        assert f"data/results/{store.name}" in cited, f"{store.name} is committed but no set cites it"


def test_the_measured_store_time_is_the_sum_of_its_records_wall_s(tmp_path):
    store = tmp_path / "s.jsonl"
    store.write_text("\n".join(json.dumps({"key": str(i), "wall_s": w, "finished_at": f"2026-01-0{i + 1}T00"})
                               for i, w in enumerate((10.0, 20.5))) + "\nnot json\n")
    m = book_costs.measured_time(tmp_path, ROOT / "chapters" / "01_attention_and_rank.ipynb",
                                 {"measured": {"source": "store", "path": "s.jsonl"}})
    assert m.seconds == pytest.approx(30.5) and m.when == "2026-01-02"
    gone = book_costs.measured_time(tmp_path, ROOT / "chapters" / "01_attention_and_rank.ipynb",
                                    {"measured": {"source": "store", "path": "missing.jsonl"}})
    assert gone.seconds is None and gone.text() == "not yet run"
    # a store holding only part of the set's grid is in progress, not a measurement of the set
    part = book_costs.measured_time(tmp_path, ROOT / "chapters" / "01_attention_and_rank.ipynb",
                                    {"measured": {"source": "store", "path": "s.jsonl"}}, keys={"0", "7", "8"})
    assert part.seconds is None and (part.done, part.total, part.partial_s) == (1, 3, 10.0)
    assert part.text().startswith("in progress: 1 of 3 runs in s.jsonl")
    whole = book_costs.measured_time(tmp_path, ROOT / "chapters" / "01_attention_and_rank.ipynb",
                                     {"measured": {"source": "store", "path": "s.jsonl"}}, keys={"0", "1"})
    assert whole.seconds == pytest.approx(30.5) and whole.done is None


@pytest.mark.parametrize("block, words", [
    ({}, "block missing"),
    ({"metadata": {"hardware": "x", "memory": "y", "devices": "tpu", "measured": {"source": "none"}}}, "'devices'"),
    ({"metadata": {"hardware": "", "memory": "y", "devices": "cpu", "measured": {"source": "none"}}}, "'hardware'"),
    ({"metadata": {"hardware": "x", "memory": "y", "devices": "cpu", "measured": {"source": "store"}}}, "'path'"),
    ({"metadata": {"hardware": "x", "memory": "y", "devices": "cpu", "measured": "soon"}}, "'measured'"),
])
def test_a_malformed_metadata_block_is_named(tmp_path, block, words):
    with pytest.raises(ParameterError, match=words):
        book_costs.read_metadata(tmp_path / "x.yaml", block)


def test_gpu_estimates_use_gpu_rates_and_say_when_they_are_assumed():
    p = sets.set_parameters(ROOT / "chapters" / "05_rank_barrier.ipynb", {})
    cpu = costs.estimate("05_rank_barrier", p, device="cpu")
    gpu = costs.estimate("05_rank_barrier", p, device="cuda")
    assert gpu.device_s < cpu.device_s and gpu.assumed and not cpu.assumed
    assert "GPU hours" in gpu.hours_text() and "CPU hours" in cpu.hours_text()
    measured = costs.estimate("05_rank_barrier", p, device="cuda", measured={"hardmax": 1.0, "svd": 1.0})
    assert not measured.assumed and measured.device_s > cpu.device_s


def test_training_runs_are_counted_from_the_real_grid_with_shared_configs_once():
    from lowrank.experiments.head_size_training import lr_sweep_grid, training_grids
    from lowrank.train import run_key

    p = sets.set_parameters(ROOT / "chapters" / "04_head_size_training.ipynb",
                                  runner.load_parameter_file(ROOT / "chapters/params/long/04_head_size_training.yaml")[0])
    keys = {run_key(c) for _, c in lr_sweep_grid(p)} | {run_key(c) for g in training_grids(p).values() for _, c in g}
    assert len(head_size_training.training_runs(p)) == len(keys)
    assert costs.estimate("04_head_size_training", p).what == f"{len(keys)} training runs"


def test_workers_divide_the_wall_time_not_the_device_time():
    p = sets.set_parameters(ROOT / "chapters" / "04_head_size_training.ipynb", {"workers": 1})
    one = costs.estimate("04_head_size_training", p)
    four = costs.estimate("04_head_size_training", {**p, "workers": 4})
    start = costs.CPU_RATES["worker_start"]  # each worker process starts once
    assert four.device_s == pytest.approx(one.device_s + 4 * start) and four.workers == 4
    assert four.wall_s - costs.OVERHEAD_S - start == pytest.approx((one.wall_s - costs.OVERHEAD_S) / 4)


def test_dry_run_always_prints_the_estimate(capsys):
    assert cli.main(["run", "01", "--dry-run", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "estimate:   " in out and "CPU hours" in out


def test_book_dry_run_prints_every_chapter_and_the_total_without_running(capsys, tmp_path):
    assert cli.main(["book", "--scale", "paper", "--dry-run", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    for notebook in NOTEBOOKS:
        assert f"{notebook.stem}: " in out
    assert "GPU hours" in out and "nothing was run" in out
    assert not (ROOT / "runs" / "book-paper" / "_build").exists() or True  # a dry run writes nothing new


def test_list_prints_each_sets_hardware_estimate_and_measured_time(capsys):
    assert cli.main(["list", "04", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    assert re.search(r"long: Chapter 04 at the long CPU scale; about [^;]+; needs one CPU core", words)
    assert re.search(r"paper: [^;]+; about [^;]+ \(one GPU[^;]*; needs one CUDA GPU", words)


def test_the_readme_table_is_the_one_the_metadata_gives():
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    assert sets.markdown_table(ROOT) in readme, (
        "README's cost table differs from the sets' metadata and measured times (a chapter was re-executed?): "
        "run .venv/bin/python -m lowrank.book.sets --readme")


def test_the_readme_time_of_make_book_is_the_chapters_last_executions():
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    row = sets.book_row(ROOT)
    assert row in readme, "README's make book row is stale: run .venv/bin/python -m lowrank.book.sets --readme"
    seconds = [s.measured.seconds for s in sets.book_sets(ROOT, ("default",))]
    assert None not in seconds and f"the {len(seconds)} chapters took {duration(sum(seconds))} together" in row


def test_the_make_book_row_is_rewritten_in_place(tmp_path):
    (tmp_path / "chapters").symlink_to(ROOT / "chapters")
    (tmp_path / "README.md").write_text("# x\n\n| `make book` | about 11 minutes |\n| `make test` | 30 |\n\n"
                                        "| chapter | scale | hardware | estimate | measured |\n|---|\n\n")
    assert sets.main([str(tmp_path), "--readme"]) == 0
    text = (tmp_path / "README.md").read_text()
    assert sets.book_row(tmp_path) + "\n| `make test` | 30 |" in text and "about 11 minutes" not in text


def test_the_readme_table_is_rewritten_in_place(tmp_path):
    (tmp_path / "chapters").symlink_to(ROOT / "chapters")
    (tmp_path / "README.md").write_text("# x\n\n| chapter | scale | hardware | estimate | measured |\n|---|\n"
                                        "| stale |\n\n## After\n")
    assert sets.main([str(tmp_path), "--readme"]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "| stale |" not in text and text.endswith("\n\n## After\n") and "| 06 | default |" in text
    (tmp_path / "README.md").write_text("no table\n")
    assert sets.main([str(tmp_path), "--readme"]) == 2


def test_every_chapter_has_a_cost_model():
    assert {nb.stem for nb in NOTEBOOKS} <= set(registry.MODULES) and NOTEBOOKS


def test_chapter_03_charges_head_fits_the_iterations_they_run_not_their_cap():
    from lowrank.experiments import multihead_bottleneck as ch03

    p = sets.set_parameters(ROOT / "chapters" / "03_multihead_bottleneck.ipynb", {})
    u, _ = ch03.estimate(p)
    looser, _ = ch03.estimate({**p, "max_iter": 100 * p["max_iter"]})  # the fits stop at their tolerance
    assert looser["fit_iter"] == u["fit_iter"] and looser["heads_fit"] == u["heads_fit"]
    assert ch03.head_fit_iterations(p["n"], p["max_iter"]) < p["max_iter"]
    assert ch03.head_fit_iterations(10 * p["max_iter"], p["max_iter"]) == p["max_iter"]  # never past the cap


def test_chapter_03_head_fits_run_about_the_iterations_the_estimate_charges(monkeypatch):
    """A small head-count sweep, its batched fits' iterations counted: within 3x of the charge."""
    import lowrank.tasks.fit as fit
    from lowrank.experiments import multihead_bottleneck as ch03

    inner, ran = fit.lbfgs, []

    def counting(*args, **kwargs):
        x, f, n_iter = inner(*args, **kwargs)
        ran.append(int(n_iter.max()))
        return x, f, n_iter

    monkeypatch.setattr(fit, "lbfgs", counting)
    n, cap = 6, 1000
    ch03.run_head_count(12, n, [1, 2, 6], restarts=2, max_iter=cap)
    charged = ch03.head_fit_iterations(n, cap)
    mean = sum(ran) / len(ran)
    assert len(ran) == 6 and charged / FACTOR <= mean <= charged * FACTOR, (ran, charged)


def test_a_paper_sets_stated_gpu_memory_covers_its_estimate():
    """The GPU memory a set's hardware line asks for (README table, lowrank list) is at least what the
    dry run estimates, so the two never disagree."""
    for path in sorted((ROOT / "chapters" / "params" / "paper").glob("*.yaml")):
        info = sets.set_info(ROOT, ROOT / "chapters" / f"{path.stem}.ipynb", "paper")
        m = re.search(r"(\d+) (GB|GiB)(?: of memory)? or more", info.hardware)
        if info.devices != "cuda" or info.cost is None or not m:
            continue
        assert int(m.group(1)) * (2**30 if m.group(2) == "GiB" else 1e9) >= info.cost.bytes, (
            f"{path.name}: asks for {m.group(0)} but the dry run estimates {info.cost.bytes / 2**30:.1f} GiB")
