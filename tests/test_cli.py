"""The ``lowrank`` command: runs, parameter checks, error paths, parameter sets, ``list`` and ``book``.

Only chapter 01 is executed here (its smoke set, through ``python -m lowrank``); every chapter's
smoke run is in test_chapters_smoke.py. Failing cells and the book are exercised on a throwaway
chapter in a temporary book, with a schema registered for the test only.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lowrank.core import provenance
from lowrank.book import planning, runner, staging
from lowrank.book.cli import main
from lowrank.book.params import SCHEMAS, validate
from lowrank.core.params import Bool, Float, Int, Str

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
KERNEL_ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
TEST_CHAPTER = "99_cli_test"


def _ids(p):
    return p.stem


# --- a throwaway chapter in a temporary book ------------------------------------------------

def _throwaway_notebook(path: Path) -> None:
    params = new_code_cell("x = 1           # how many items\nfail = False    # raise in the last cell")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [
        new_markdown_cell("# A throwaway chapter"),
        params,
        new_code_cell("from myst_nb import glue\nfrom lowrank.book.runner import results_dir"),
        new_code_cell("out = results_dir()\nif out is not None:\n    (out / 'table.csv').write_text(f'x\\n{x}\\n')\n"
                      "glue('ch99_x', x, display=False)"),
        new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(f'x is {x}')"),
        new_code_cell("if fail:\n    raise RuntimeError(f'failing on purpose with x {x}')"),
        new_code_cell("print('last cell')"),
    ]
    nbformat.write(nb, path)


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A book with one chapter (smoke set x 7, paper set x 9 requiring a GPU) and its schema."""
    root = tmp_path / "book"
    (root / "chapters" / "params" / "smoke").mkdir(parents=True)
    (root / "chapters" / "params" / "paper").mkdir(parents=True)
    (root / "_config.yml").write_text("title: Tiny\nonly_build_toc_files: true\n"
                                      "execute:\n  execute_notebooks: force\n")
    (root / "_toc.yml").write_text(f"format: jb-book\nroot: intro\nchapters:\n  - file: chapters/{TEST_CHAPTER}\n")
    (root / "intro.md").write_text("# Tiny\n\nA test book.\n")
    _throwaway_notebook(root / "chapters" / f"{TEST_CHAPTER}.ipynb")
    (root / "chapters" / "params" / "smoke" / f"{TEST_CHAPTER}.yaml").write_text("# seconds\nx: 7\n")
    (root / "chapters" / "params" / "paper" / f"{TEST_CHAPTER}.yaml").write_text(
        "# Full scale, for the test.\n# requires: gpu\nx: 9\n")
    monkeypatch.setitem(SCHEMAS, TEST_CHAPTER, {"x": Int(0, 10, doc="items"), "fail": Bool()})
    for key, value in KERNEL_ENV.items():
        monkeypatch.setenv(key, value)
    return root


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# --- values and headers -----------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("48", 48), ("0.5", 0.5), ("1e-3", 1e-3), ("-2E+2", -200.0), ("[1, 2, 4]", [1, 2, 4]),
    ("[0.5, 1e-6]", [0.5, 1e-6]), ("true", True), ("wikitext", "wikitext"), ("null", None),
])
def test_values_are_read_as_yaml(text, value):
    got = runner.parse_value(text)
    assert got == value and type(got) is type(value)


def test_requires_header_is_read_from_the_leading_comments(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("# What it reproduces.\n# requires: gpu\n\nn: 1e-3\n# requires: nothing-checked-here\n")
    assert runner.load_parameter_file(f) == ({"n": 1e-3}, ("gpu",))
    f.write_text("# requires: tpu\nn: 1\n")
    with pytest.raises(runner.UsageError, match="unknown requirement.*tpu.*known: gpu"):
        runner.load_parameter_file(f)
    f.write_text("- 1\n- 2\n")
    with pytest.raises(runner.UsageError, match="must be a mapping"):
        runner.load_parameter_file(f)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids)
def test_chapter_is_found_by_number_name_file_and_path(chapter):
    number = chapter.stem.split("_")[0]
    for spec in (number, str(int(number)), chapter.stem, chapter.name, str(chapter)):
        assert runner.resolve_chapter(spec, ROOT).path == chapter.resolve(), spec


def test_book_root_is_found_from_inside_it_and_results_dir_follows_the_environment(book, monkeypatch):
    assert runner.find_root(book / "chapters" / "params" / "smoke") == book
    monkeypatch.setenv(runner.RUN_DIR_ENV, str(book / "out"))
    assert runner.results_dir() == book / "out"
    monkeypatch.delenv(runner.RUN_DIR_ENV)
    assert runner.results_dir() is None


def test_default_run_folder_is_timestamp_and_parameter_hash(book):
    ch = runner.resolve_chapter(TEST_CHAPTER, book)
    plan = runner.plan_run(ch, scale="smoke", overrides=[("fail", False)])
    assert plan.parameters == {"x": 7, "fail": False} and plan.sources["x"].startswith("in ")
    same = runner.plan_run(ch, overrides=[("x", 7)])
    assert same.params_hash == plan.params_hash  # same effective parameters, however they were set
    assert runner.plan_run(ch, scale="smoke", overrides=[("x", 8)]).params_hash != plan.params_hash
    out = runner.default_outdir(plan, book)
    assert out.parent == book / "runs" / TEST_CHAPTER
    assert re.fullmatch(rf"\d{{8}}-\d{{6}}-{plan.params_hash}", out.name)
    out.mkdir(parents=True)
    again = runner.default_outdir(plan, book)  # a second run, even in the same second, gets its own folder
    assert again != out and not again.exists() and again.parent == out.parent


# --- every chapter's parameter sets, without executing anything -----------------------------

@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids)
def test_parameter_sets_are_valid_for_the_notebook_and_the_schema(chapter, monkeypatch):
    monkeypatch.setattr(planning, "cuda_available", lambda: True)  # paper sets name device cuda
    ch = runner.resolve_chapter(str(chapter), ROOT)
    assert ch.name in SCHEMAS, f"no schema for {ch.name} (lowrank/experiments/registry.py)"
    defaults = {k: v["default"] for k, v in runner.notebook_parameters(ch).items()}
    assert set(SCHEMAS[ch.name]) == set(defaults), "schema and parameters cell name different parameters"
    validate(ch.name, defaults)  # the notebook's own defaults pass its schema
    assert {"smoke", "paper"} <= set(ch.param_sets())
    for scale in ch.param_sets():
        plan = runner.plan_run(ch, scale=scale, allow_cpu=True)  # unknown names and bad values raise
        assert plan.injected, f"{ch.param_file(scale)} sets no parameter"
    header = ch.param_file("paper").read_text().splitlines()
    assert header and header[0].startswith("#"), "the paper set needs a header comment (what, hardware, time, memory)"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids)
def test_papermill_reads_every_parameter_of_the_cell(chapter):
    params = runner.notebook_parameters(runner.resolve_chapter(str(chapter), ROOT))
    unread = [name for name, info in params.items() if not info["papermill"]]
    assert not unread, (f"papermill's parser skips the lines of {unread} in the parameters cell of "
                        f"{chapter.name} (an '=' in the comment): `papermill --help-notebook` and "
                        "papermill's own checks miss them; reword those comments without '='")


def test_parameters_papermill_cannot_parse_are_still_known(book, monkeypatch):
    path = book / "chapters" / f"{TEST_CHAPTER}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source += "\nk: float = 0.5   # scale, k = 1 is standard\nmodel = dict(a=1)"
    nbformat.write(nb, path)
    monkeypatch.setitem(SCHEMAS, TEST_CHAPTER, {**SCHEMAS[TEST_CHAPTER], "k": Float(0, 2),
                                                "model": Str()})
    params = runner.notebook_parameters(runner.resolve_chapter(TEST_CHAPTER, book))
    assert list(params) == ["x", "fail", "k", "model"]
    assert params["x"] == {"default_text": "1", "default": 1, "help": "how many items", "papermill": True}
    assert params["k"] == {"default_text": "0.5", "default": 0.5, "help": "scale, k = 1 is standard", "papermill": False}
    assert params["model"]["default"] == "dict(a=1)"  # not a literal: kept as its source text
    plan = runner.plan_run(runner.resolve_chapter(TEST_CHAPTER, book), overrides=[("k", 1.5)])
    assert plan.injected == {"k": 1.5}


def test_list_shows_chapters_parameters_defaults_and_sets(capsys):
    assert main(["list", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    for chapter in CHAPTERS:
        ch = runner.resolve_chapter(str(chapter), ROOT)
        assert f"{ch.name[:2]}  {ch.title()}" in out
        for name, info in runner.notebook_parameters(ch).items():
            assert f"{name} = {' '.join(info['default_text'].split())} # {info['help']}" in words
        assert f"scales (lowrank run {ch.name[:2]} --scale SCALE" in out
        for scale in ch.param_sets():  # each set's first clause: what it is, never its run-book
            assert re.search(rf"\n      {scale}: \S", out)
    assert len(out.splitlines()) < 40 * len(CHAPTERS)


# --- chapter 01 through the command ---------------------------------------------------------

@pytest.mark.slow
def test_chapter_01_smoke_run_reflects_an_injected_parameter(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "lowrank", "run", "01", "--scale", "smoke", "-p", "n", "24",
                           "-o", str(out), "--root", str(ROOT), "--no-progress"],
                          capture_output=True, text=True, env={**os.environ, **KERNEL_ENV}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "n = 24," in done.stdout  # the headline cell, printed by the command
    record = json.loads((out / "params.json").read_text())
    assert record["status"] == "ok" and record["injected"]["n"] == 24
    assert record["parameters"]["n_trials"] == 3  # from the smoke set, overridden only where -p says
    # the same revision and code hash a stored result carries (lowrank.core.provenance)
    assert (record["git"], record["code_hash"]) == (provenance.git_revision(ROOT / "chapters"), provenance.code_hash())
    nb = nbformat.read(out / "01_attention_and_rank.ipynb", as_version=4)
    headline = next(c for c in nb.cells if c.source.startswith("# NBVAL_CHECK_OUTPUT"))
    printed = "".join(o.get("text", "") for o in headline.outputs)
    assert printed.startswith("n = 24, d_h = ") and "mean over 3 random heads" in printed
    assert json.loads((out / "results.json").read_text())["ch01_n"] == 24
    assert nb.metadata["lowrank_execution"]["scale"] == "smoke"  # chapter 08 reads each row's scale here


@pytest.mark.parametrize("args, message", [
    (["-p", "nope", "3"], "unknown parameter 'nope' = 3 (set by -p nope 3) for chapter 01_attention_and_rank; "
                          "its parameters cell defines: seed, n,"),
    (["-p", "head_dim", "4"], "unknown parameter 'head_dim' = 4 (set by -p head_dim 4) for chapter "
                              "01_attention_and_rank (did you mean 'head_dims'?)"),
    (["-p", "n", "abc"], "parameter 'n' = 'abc' is not allowed: expected an int"),
    (["-p", "n", "4.5"], "parameter 'n' = 4.5 is not allowed: expected an int"),
    (["-p", "head_dims", "4"], "parameter 'head_dims' = 4 is not allowed: expected a list of ints"),
    (["-p", "n", "1"], "parameter 'n' = 1 is not allowed: expected an int in [4, 4096] (sequence length) [set by -p n 1]"),
    (["-p", "scales", "[1, 0]"], "parameter 'scales' = [1, 0] is not allowed: expected a list of numbers in [0.001, 10000]"),
    (["--scale", "smoke", "-f", "{bad}"], "parameter 'n' = 2 is not allowed"),
], ids=["unknown", "misspelt", "wrong-type-str", "wrong-type-float", "wrong-type-list", "invalid-value", "invalid-item", "bad-file"])
def test_bad_parameters_exit_2_before_any_kernel(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text("n: 2\n")
    out = tmp_path / "run"
    args = [a.replace("{bad}", str(bad)) for a in args]
    assert main(["run", "01", *args, "-o", str(out), "--root", str(ROOT)]) == 2
    err = capsys.readouterr().err
    assert message in err
    if "-f" in args:
        assert f"[set in {bad}]" in err
    assert _leftovers(tmp_path) == ["bad.yaml"]  # no run folder, no .failed, no temporary folder


@pytest.mark.parametrize("spec", ["98", "98_nothing", "nothing.ipynb"])
def test_missing_chapter_exits_2_and_lists_the_chapters(capsys, spec):
    assert main(["run", spec, "--root", str(ROOT)]) == 2
    err = capsys.readouterr().err
    assert f"chapter {spec!r} not found" in err and CHAPTERS[0].stem in err


def test_argparse_usage_errors_return_2(capsys):
    assert main(["run"]) == 2
    assert main(["run", "01", "-p", "n"]) == 2
    assert main(["run", "01", "--scale", "huge"]) == 2
    assert "invalid choice: 'huge'" in capsys.readouterr().err


# --- the throwaway chapter: results, failures, refusals -------------------------------------

def test_failing_cell_exits_1_names_the_cell_and_keeps_only_the_partial_notebook(book, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", TEST_CHAPTER, "--root", str(book), "-p", "fail", "true", "-p", "x", "5",
                 "-o", str(out), "--no-progress", "--log-output"]) == 1
    captured = capsys.readouterr()
    assert "x is 5" in captured.out  # --log-output: what the cells print, as they run
    err = captured.err
    assert "Passed unknown parameter" not in err and "Unable to parse" not in err
    assert (f"chapter {TEST_CHAPTER} failed: cell 6 of {TEST_CHAPTER}.ipynb (In [6], starting 'if fail:') "
            "raised RuntimeError: failing on purpose with x 5") in err
    failed = tmp_path / "run.failed"
    assert f"partial notebook kept: {failed / (TEST_CHAPTER + '.ipynb')}" in err
    assert "Traceback" in err  # the cell's traceback is shown before the summary
    assert not out.exists()
    assert _leftovers(tmp_path) == ["book", "run.failed"]
    assert _leftovers(failed) == sorted(["FAILED", "params.json", f"{TEST_CHAPTER}.ipynb"])  # no files/, no results.json
    assert "RuntimeError: failing on purpose" in (failed / "FAILED").read_text()
    record = json.loads((failed / "params.json").read_text())
    assert record["status"] == "failed" and "cell 6" in record["error"] and record["injected"] == {"x": 5, "fail": True}
    nb = nbformat.read(failed / f"{TEST_CHAPTER}.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["RuntimeError"]
    assert nb.cells[-1].source == "print('last cell')" and nb.cells[-1].execution_count is None


def test_interrupted_run_exits_130_and_leaves_only_the_failed_folder(book, tmp_path, monkeypatch, capsys):
    import papermill

    def interrupted(input_path, output_path, **kw):
        Path(output_path).write_text(Path(input_path).read_text())  # papermill saves as it goes
        (Path(output_path).parent / "files" / "half.csv").write_text("x\n")  # results_dir() in the kernel
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM through the command's handler

    monkeypatch.setattr(papermill, "execute_notebook", interrupted)
    assert main(["run", TEST_CHAPTER, "--root", str(book), "-o", str(tmp_path / "run")]) == 130
    assert "failed: interrupted" in capsys.readouterr().err
    assert _leftovers(tmp_path) == ["book", "run.failed"]
    assert _leftovers(tmp_path / "run.failed") == sorted(["FAILED", "params.json", f"{TEST_CHAPTER}.ipynb"])
    assert runner.RUN_DIR_ENV not in os.environ


def test_output_folder_that_is_not_empty_is_refused(book, tmp_path, capsys):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["run", TEST_CHAPTER, "--root", str(book), "-o", str(out)]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert _leftovers(out) == ["keep.txt"]


def test_unknown_kernel_and_missing_parameter_set_are_refused(book, capsys):
    assert main(["run", TEST_CHAPTER, "--root", str(book), "--kernel", "no-such-kernel"]) == 2
    assert "no Jupyter kernel named 'no-such-kernel'; installed kernels:" in capsys.readouterr().err
    (book / "chapters" / "params" / "paper" / f"{TEST_CHAPTER}.yaml").unlink()
    assert main(["run", TEST_CHAPTER, "--root", str(book), "--scale", "paper"]) == 2
    assert f"chapter {TEST_CHAPTER} has no 'paper' parameter set" in capsys.readouterr().err
    assert not (book / "runs").exists()


def test_chapter_without_schema_is_refused(book, monkeypatch, capsys):
    monkeypatch.delitem(SCHEMAS, TEST_CHAPTER)
    assert main(["run", TEST_CHAPTER, "--root", str(book)]) == 2
    assert f"chapter {TEST_CHAPTER} has no parameter schema: list its module in" in capsys.readouterr().err


def test_gpu_set_needs_cuda_or_allow_cpu(book, monkeypatch, capsys):
    run = ["run", TEST_CHAPTER, "--root", str(book), "--scale", "paper", "--dry-run"]
    monkeypatch.setattr(planning, "cuda_available", lambda: False)
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "declares '# requires: gpu' and no CUDA device is visible" in err and "--allow-cpu" in err
    assert main([*run, "--allow-cpu"]) == 0
    captured = capsys.readouterr()
    assert "warning: --allow-cpu" in captured.err and "set:        x = 9" in captured.out
    monkeypatch.setattr(planning, "cuda_available", lambda: True)
    assert main(run) == 0
    assert not (book / "runs").exists()  # a dry run writes nothing


@pytest.mark.slow
def test_book_runs_every_chapter_into_a_staged_copy_and_renders_it(book, tmp_path, monkeypatch, capsys):
    staged = tmp_path / "staged"
    source = (book / "chapters" / f"{TEST_CHAPTER}.ipynb").read_bytes()
    (book / "chapters" / "98_draft.ipynb").write_bytes(source)  # not in the toc: neither run nor rendered
    assert main(["book", "--root", str(book), "--scale", "smoke", "--out", str(staged), "--no-progress"]) == 0
    assert "not in _toc.yml, not run: 98_draft" in capsys.readouterr().err
    assert _leftovers(staged / "runs") == [TEST_CHAPTER]
    assert (book / "chapters" / f"{TEST_CHAPTER}.ipynb").read_bytes() == source  # the book itself is untouched
    assert yaml.safe_load((staged / "src" / "_config.yml").read_text())["execute"]["execute_notebooks"] == "off"
    page = (staged / "_build" / "html" / "chapters" / f"{TEST_CHAPTER}.html").read_text()
    assert "x is 7" in page and "injected-parameters" in page
    (run,) = (staged / "runs" / TEST_CHAPTER).iterdir()
    assert (run / "files" / "table.csv").read_text() == "x\n7\n"  # what the chapter wrote to results_dir()
    assert json.loads((run / "results.json").read_text()) == {"ch99_x": 7}

    # A second build reuses the finished run instead of executing the chapter again.
    monkeypatch.setattr(staging, "execute", lambda *a, **k: pytest.fail("a finished run was executed again"))
    monkeypatch.setattr(staging.subprocess, "call", lambda *a, **k: 0)
    # fail=False is the default: the effective parameters, hence the run's key, are unchanged.
    assert main(["book", "--root", str(book), "--scale", "smoke", "--out", str(staged), "-p", "fail", "false"]) == 0
    assert f"{TEST_CHAPTER}: reusing {run}" in capsys.readouterr().err


def test_book_refuses_gpu_chapters_before_running_any(book, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(planning, "cuda_available", lambda: False)
    assert main(["book", "--root", str(book), "--out", str(tmp_path / "staged")]) == 2
    assert "requires: gpu" in capsys.readouterr().err
    assert main(["book", "--root", str(book), "--out", str(tmp_path / "staged"), "--allow-cpu", "-p", "nope", "1"]) == 2
    assert "no chapter has a parameter 'nope'; lowrank list CHAPTER" in capsys.readouterr().err
    assert not (tmp_path / "staged").exists()
