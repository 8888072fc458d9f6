"""Nothing a run did not create is written: committed stores, manifests, other people's files.

Each command test asserts the exit status, one ``lowrank: error:`` line naming the input, and
that the files involved are byte for byte what they were.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lowrank.book import cli, guards, run_folders, runner
from lowrank.stores.sweep import (ResultStore, foreign_store, manifest_conflict, record_problem, sweep,
                           write_manifest)
from lowrank.train import run_key

from helpers import lowrank, refused

ROOT = Path(__file__).resolve().parents[1]
LONG_04 = ROOT / "data" / "results" / "04_head_size_training_long.jsonl"
LONG_07 = ROOT / "data" / "results" / "07_trained_attention_long.jsonl"


def _files(*paths: Path) -> dict:
    out = {}
    for p in paths:
        if p.is_dir():
            out.update(_files(*sorted(p.iterdir())))
        elif p.exists():
            out[str(p)] = p.read_bytes()
        else:
            out[str(p)] = None
    return out


def _record(name, **metrics) -> dict:
    config = {"k": name}
    return {"key": run_key(config), "experiment": "04_head_size_training", "config": config, "metrics": metrics or {"v": 1.0},
            "wall_s": 0.1}


# --- committed stores ----------------------------------------------------------------------------

@pytest.mark.parametrize("chapter, name, store", [
    ("04", "results_store", LONG_04),
    ("07", "retrieval_store", LONG_07),
    ("04", "results_store", ROOT / "data" / "results" / "new_store.jsonl"),
])
def test_a_committed_store_is_refused_for_writing(capsys, chapter, name, store):
    before = _files(store, *guards.sidecars(store))
    for dry in (["--dry-run"], []):  # a real run is refused before its kernel, like the dry run
        rc, err = lowrank(capsys, "run", chapter, "-p", name, str(store), *dry)
        refused(rc, err, repr(name), "committed")
    assert _files(store, *guards.sidecars(store)) == before


def test_the_committed_stores_are_known_to_git():
    # the guard above rests on git: if these were not tracked, the test would prove nothing
    assert guards.tracked(LONG_04) and guards.tracked(LONG_07)
    assert not guards.tracked(ROOT / "runs" / "x.jsonl") and guards.ignored(ROOT / "runs" / "x.jsonl")


def test_the_paper_set_writes_to_a_git_ignored_folder(capsys):
    # the GPU set on a CPU is estimated at months: --force passes the time bound, the store is what is checked
    rc = cli.main(["run", "--root", str(ROOT), "04", "--scale", "paper", "--allow-cpu", "-p", "device", "cpu",
                   "--force", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    [line] = [ln for ln in out.splitlines() if "results_store =" in ln]
    store = Path(line.split("=", 1)[1].split("(")[0].strip().strip("'"))
    assert store.is_absolute() and guards.ignored(store) and not guards.tracked(store)
    assert guards.committed_store(store, ROOT) is None


def test_a_store_read_as_the_long_store_must_exist(capsys, tmp_path):
    rc, err = lowrank(capsys, "run", "04", "--scale", "smoke", "-p", "long_store", str(tmp_path / "no.jsonl"),
                      "--dry-run")
    refused(rc, err, "'long_store'", "no such results store")


# --- manifests -----------------------------------------------------------------------------------

def test_a_run_with_other_parameters_than_the_manifest_is_refused(capsys, tmp_path):
    store = tmp_path / "mine.jsonl"
    store.write_text(json.dumps(_record("a")) + "\n")
    manifest = tmp_path / "mine.params.json"
    manifest.write_text(json.dumps({"steps": 123456, "n_seeds": 1}))
    before = _files(tmp_path)
    rc, err = lowrank(capsys, "run", "04", "--scale", "smoke", "-p", "results_store", str(store), "--dry-run")
    refused(rc, err, "'results_store'", "manifest", "other parameters")
    assert _files(tmp_path) == before


def test_a_file_named_like_a_manifest_is_never_overwritten(capsys, tmp_path):
    store = tmp_path / "mine.jsonl"
    (tmp_path / "mine.params.json").write_text("my notes, not JSON\n")
    before = _files(tmp_path)
    rc, err = lowrank(capsys, "run", "04", "--scale", "smoke", "-p", "results_store", str(store), "--dry-run")
    refused(rc, err, "not a parameter manifest", "never overwritten")
    assert _files(tmp_path) == before


def test_a_manifest_is_written_once(tmp_path):
    path = tmp_path / "s.params.json"
    write_manifest(path, {"steps": 10, "workers": 1, "shard": None})
    first = path.read_bytes()
    write_manifest(path, {"steps": 10, "workers": 4, "shard": "1/2"})  # how it runs, not what: same grid
    assert path.read_bytes() == first
    with pytest.raises(ValueError, match="other parameters.*'steps'"):
        write_manifest(path, {"steps": 11, "workers": 1, "shard": None})
    assert path.read_bytes() == first and manifest_conflict(path, {"steps": 10}) is None


# --- stores that are not ours ---------------------------------------------------------------------

def test_a_jsonl_log_is_not_taken_for_a_store(capsys, tmp_path):
    log = tmp_path / "app.jsonl"
    log.write_text('{"level": "info", "msg": "started"}\n')
    before = _files(tmp_path)
    rc, err = lowrank(capsys, "run", "04", "--scale", "smoke", "-p", "results_store", str(log), "--dry-run")
    refused(rc, err, "'results_store'", "is not a results store", "nothing is appended")
    assert _files(tmp_path) == before  # no app.params.json, no app-runs/
    with pytest.raises(ValueError, match="not a record a sweep wrote"):
        sweep([{"k": 1}], experiment="t", store=log, run_fn=lambda c, run_dir: {"v": 1.0}, progress=False,
              runs_dir=tmp_path / "runs")
    assert _files(tmp_path) == before


@pytest.mark.parametrize("change, why", [
    (lambda r: r.update(key="0" * 16), "is not the hash of its config"),
    (lambda r: r.update(metrics={"v": float("nan")}), "non-finite"),
    (lambda r: r["metrics"].update(curve=[1.0, float("inf")]), "non-finite"),
    (lambda r: r.update(metrics={}), "'metrics' are empty"),
    (lambda r: r.pop("metrics"), "not a record"),
])
def test_store_records_are_checked_when_read(tmp_path, change, why):
    bad = _record("bad")
    change(bad)
    assert why in record_problem(bad)
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_record("good")) + "\n" + json.dumps(bad) + "\n")
    with pytest.warns(RuntimeWarning, match=f"s.jsonl, line 2: .*{why[:12]}"):
        assert [r["config"]["k"] for r in ResultStore(path).records()] == ["good"]
    assert foreign_store(path) is None  # its first line is ours: runs may append
    assert record_problem(_record("good")) is None


def test_a_store_whose_first_record_is_long_is_still_a_store(tmp_path):
    path = tmp_path / "long.jsonl"
    rec = _record("long")
    rec["metrics"]["curve"] = [0.5] * 100_000  # about 500 KiB on one line, as a long grid writes
    path.write_text(json.dumps(rec) + "\n")
    assert len(path.read_text()) > 1 << 16
    assert foreign_store(path) is None


# --- run folders ----------------------------------------------------------------------------------

def test_a_folder_holding_a_file_named_failed_is_not_a_failed_run(capsys, tmp_path):
    failed = tmp_path / "run.failed"
    failed.mkdir()
    (failed / "FAILED").write_text("my own notes on what failed\n")
    before = _files(tmp_path)
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(tmp_path / "run"))
    refused(rc, err, "run.failed", "is not a failed run's folder")
    assert _files(tmp_path) == before
    (failed / "params.json").write_text(json.dumps({"chapter": "01_attention_and_rank", "status": "failed",
                                                    "lowrank_version": "0", "started": "x"}))
    assert runner.check_outdir(tmp_path / "run") == (tmp_path / "run").resolve()  # ours: it may be replaced


@pytest.mark.parametrize("where", ["chapters/myrun", "lowrank/run", ".", "_ext/x"])
def test_an_outdir_inside_the_sources_is_refused(capsys, where):
    before = sorted(p.name for p in (ROOT / "chapters").iterdir())
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "-o", str(ROOT / where), "--dry-run")
    refused(rc, err, "output folder")
    assert sorted(p.name for p in (ROOT / "chapters").iterdir()) == before


# --- python -m lowrank.train --resume ------------------------------------------------------------

def _train(*argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "lowrank.train", *argv], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.slow
def test_resume_needs_a_checkpoint_or_a_result(tmp_path):
    run = tmp_path / "mine"
    run.mkdir()
    (run / "config.json").write_text('{"my": "experiment"}')
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 3.0}\n')
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"steps": 2}')
    before = _files(tmp_path)
    done = _train("--config", str(cfg), "--out-dir", str(run), "--resume", "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "holds no checkpoint.pt or result.json" in done.stderr
    assert _files(tmp_path) == before
    (run / "result.json").write_text(json.dumps({"config": {"steps": 999}}))
    before = _files(tmp_path)
    done = _train("--config", str(cfg), "--out-dir", str(run), "--resume", "--no-progress")
    assert done.returncode == 2 and "result of a different config" in done.stderr, done.stderr
    assert _files(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("config, words", [
    ({"min_lr_ratio": -50}, ["min_lr_ratio must be in [0.0, 1.0]", "-50"]),
    ({"seed": 2**70}, ["seed must be in [0, 4294967295]"]),
    ({"split_seed": -1}, ["split_seed must be in [0, 4294967295]"]),
    ({"beta2": 1.0}, ["beta2 must be in [0.0, 1.0)"]),
    ({"seq_len": 100000}, ["seq_len must be in [2, 65536]"]),
    ({"seq_len": 60000, "batch_size": 64}, ["GiB of memory", "this machine has"]),
])
def test_training_configs_out_of_range_are_refused(tmp_path, config, words):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    done = _train("--config", str(cfg), "--out-dir", str(tmp_path / "run"), "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert all(w in done.stderr for w in words), done.stderr
    assert not (tmp_path / "run").exists()


def test_a_store_in_a_folder_that_cannot_be_written_is_an_input_error(capsys, tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    real_access = os.access
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write anywhere: check what a user would see
        monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
    try:
        rc, err = lowrank(capsys, "run", "04", "--scale", "smoke", "-p", "results_store", str(ro / "s.jsonl"),
                          "--dry-run")
    finally:
        ro.chmod(0o755)
    refused(rc, err, "'results_store'", "cannot write in", "permission denied")
    assert list(ro.iterdir()) == []


def test_a_run_with_nan_metrics_is_named_and_not_stored(tmp_path):
    store = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match=r"non-finite metrics \(acc: NaN or infinity\); it is not stored"):
        sweep([{"k": 1}], experiment="t", store=store, run_fn=lambda c, run_dir: {"acc": float("nan"), "n": 3},
              progress=False, runs_dir=tmp_path / "runs")
    assert not store.exists() or store.read_text() == ""


def test_a_damaged_result_is_named_when_a_sweep_resumes(tmp_path):
    from lowrank.train import CheckpointError, train

    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_text('{"config": ')
    docs = tmp_path / "docs.txt"
    docs.write_text("".join(f"document {i} has a few words in it.\n" for i in range(40)))
    cfg = dict(corpus=str(docs), vocab_size=280, seq_len=8, d_model=8, n_layers=1, n_heads=2, batch_size=4, steps=2,
               warmup_steps=1, eval_interval=0)
    with pytest.raises(CheckpointError, match=r"result .*result.json cannot be read .*delete it"):
        train(cfg, out_dir=run, resume=True, progress=False, data_root=str(tmp_path / "data"))
    assert (run / "result.json").read_text() == '{"config": '


def test_a_run_whose_outdir_was_filled_meanwhile_is_kept_as_our_failed_run(capsys, tmp_path, monkeypatch):
    import papermill

    out = tmp_path / "run"

    def meanwhile(input_path, output_path, **kw):
        Path(output_path).write_text(Path(input_path).read_text())
        out.mkdir()
        (out / "theirs.txt").write_text("someone else's")

    monkeypatch.setattr(papermill, "execute_notebook", meanwhile)
    rc, err = lowrank(capsys, "run", "01", "--scale", "smoke", "--no-progress", "-o", str(out))
    assert rc == 1 and "filled by someone else" in err, err
    assert (out / "theirs.txt").read_text() == "someone else's"
    assert run_folders.our_failed_run(tmp_path / "run.failed")  # a later run may replace it, and only it
