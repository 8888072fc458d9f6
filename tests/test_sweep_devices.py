"""Several GPUs on one machine: each sweep worker takes a device of its own, tested on a CPU with
fake device names (the worker only records which device it was given and what CUDA it may see)."""
from __future__ import annotations

import os
import time

import pytest

from lowrank.stores.sweep import DEVICES_ENV, WORKER_DEVICE_ENV, ResultStore, parse_devices, sweep


def _where_am_i(config, *, run_dir):
    time.sleep(0.3)  # long enough that every worker takes a share of the runs
    return {"device": os.environ.get(WORKER_DEVICE_ENV, "none"), "pid": os.getpid(),
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "unset")}


@pytest.mark.slow
def test_each_worker_gets_one_device_of_its_own(tmp_path):
    configs = [{"run": i} for i in range(8)]
    df = sweep(configs, experiment="d", store=tmp_path / "s.jsonl", run_fn=_where_am_i, runs_dir=tmp_path,
               progress=False, devices=["cuda:0", "cuda:1", "cuda:3"])
    assert len(df) == 8
    by_pid = df.groupby("pid")["device"].agg(set)
    assert all(len(devices) == 1 for devices in by_pid), "a worker changed device between runs"
    assert len(df.groupby("device")["pid"].nunique()) == len(by_pid), "two workers shared a device"
    assert set(df.device) <= {"cuda:0", "cuda:1", "cuda:3"} and len(set(df.device)) >= 2
    # each worker sees only its own GPU, so a run's `device: cuda` lands there
    assert all(row.visible == row.device.split(":")[1] for row in df.itertuples())


@pytest.mark.slow
def test_devices_come_from_the_environment_when_not_given(tmp_path, monkeypatch):
    monkeypatch.setenv(DEVICES_ENV, "fake:a,fake:b")
    df = sweep([{"run": i} for i in range(4)], experiment="d", store=tmp_path / "s.jsonl", run_fn=_where_am_i,
               runs_dir=tmp_path, progress=False)
    assert set(df.device) <= {"fake:a", "fake:b"} and set(df.visible) == {"unset"}
    assert len(ResultStore(tmp_path / "s.jsonl").records()) == 4


def test_without_devices_runs_stay_in_this_process(tmp_path, monkeypatch):
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    df = sweep([{"run": 0}], experiment="d", store=tmp_path / "s.jsonl", run_fn=_where_am_i, runs_dir=tmp_path,
               progress=False)
    assert df.device.tolist() == ["none"] and df.pid.tolist() == [os.getpid()]


@pytest.mark.parametrize("given, expected", [
    ("0,1", ["cuda:0", "cuda:1"]), ([2, "cuda:3"], ["cuda:2", "cuda:3"]), ("", []), (None, []),
    (" cpu , fake:x ", ["cpu", "fake:x"]),
])
def test_device_lists_are_read_as_documented(given, expected):
    assert parse_devices(given) == expected


@pytest.mark.parametrize("bad, words", [("0,0", "one twice"), (["cuda 0"], "look like")])
def test_bad_device_lists_are_refused(bad, words):
    with pytest.raises(ValueError, match=words):
        parse_devices(bad)


@pytest.fixture
def tiny_config(tiny_corpus) -> dict:
    return dict(corpus=str(tiny_corpus), vocab_size=280, seq_len=8, d_model=8, n_layers=1, n_heads=2, batch_size=4,
                steps=4, warmup_steps=1, eval_interval=0, checkpoint_every=2, num_threads=1, seed=0)


@pytest.mark.parametrize("keep", [None, "1"])
def test_finished_runs_checkpoints_are_pruned_unless_asked_to_keep(tmp_path, monkeypatch, tiny_config, keep):
    from lowrank.stores.sweep import KEEP_CHECKPOINTS_ENV
    from lowrank.train import run_key

    cfg = tiny_config
    if keep:
        monkeypatch.setenv(KEEP_CHECKPOINTS_ENV, keep)
    else:
        monkeypatch.delenv(KEEP_CHECKPOINTS_ENV, raising=False)
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    df = sweep([cfg], experiment="tiny", progress=False)
    run = tmp_path / "data" / "runs" / "tiny" / run_key(cfg)
    assert len(df) == 1 and (run / "result.json").is_file()
    assert (run / "checkpoint.pt").is_file() == bool(keep)
    again = sweep([cfg], experiment="tiny", progress=False)  # a rerun reads the store, trains nothing
    assert again.val_ppl.tolist() == df.val_ppl.tolist()
