import json
import multiprocessing as mp

import pandas as pd
import pytest

from lowrank.stores.sweep import ResultStore, parse_shard, run_key, shard_of, store_path, sweep


def test_run_key_is_order_free_and_seed_sensitive():
    a = run_key({"d_model": 64, "seed": 0, "head_dim": None})
    assert a == run_key({"seed": 0, "head_dim": None, "d_model": 64}) and len(a) == 16
    assert a != run_key({"d_model": 64, "seed": 1, "head_dim": None})
    with pytest.raises(ValueError, match="must be a dict"):
        run_key([1, 2])


def test_store_path_uses_data_root(tmp_path, monkeypatch):
    assert store_path("fig3a", root=tmp_path) == tmp_path / "results" / "fig3a.jsonl"
    monkeypatch.setenv("LOWRANK_DATA", str(tmp_path / "env"))
    assert store_path("x") == tmp_path / "env" / "results" / "x.jsonl"
    with pytest.raises(ValueError, match="plain file name"):
        store_path("../escape")


def _fake_run(config, *, run_dir):
    return {"val_ppl": 100.0 / config["n_heads"] + config["seed"]}


def test_sweep_runs_each_key_once_and_returns_tidy_frame(tmp_path):
    calls = []

    def run(config, *, run_dir):
        calls.append(run_dir.name)
        return _fake_run(config, run_dir=run_dir)

    configs = [{"n_heads": h, "seed": s} for h in (1, 2, 4) for s in (0, 1)]
    store = tmp_path / "s.jsonl"
    df = sweep(configs + configs[:2], experiment="t", store=store, run_fn=run, runs_dir=tmp_path, progress=False)
    assert len(calls) == 6 and len(df) == 6
    assert list(df.columns[:3]) == ["key", "n_heads", "seed"]
    assert df.loc[(df.n_heads == 4) & (df.seed == 1), "val_ppl"].item() == 26.0
    assert set(calls) == {run_key(c) for c in configs}
    again = sweep(configs, experiment="t", store=store, run_fn=run, runs_dir=tmp_path, progress=False)
    assert len(calls) == 6
    pd.testing.assert_frame_equal(again, df)


def test_each_stored_run_is_reported_in_this_process_and_its_line_printed(tmp_path, capsys):
    seen = []

    def on_stored(key):
        assert key in ResultStore(tmp_path / "s.jsonl").keys()  # reported once its record is stored
        seen.append(key)
        return f"stored {key}" if len(seen) == 1 else None

    configs = [{"n_heads": h, "seed": 0} for h in (1, 2)]
    sweep(configs, experiment="t", store=tmp_path / "s.jsonl", run_fn=_fake_run, runs_dir=tmp_path, progress=False,
          on_stored=on_stored)
    assert seen == [run_key(c) for c in configs]
    assert capsys.readouterr().out == f"stored {seen[0]}\n"
    sweep(configs, experiment="t", store=tmp_path / "s.jsonl", run_fn=_fake_run, runs_dir=tmp_path, progress=False,
          on_stored=on_stored)
    assert len(seen) == 2  # nothing left to run, nothing reported


def test_a_report_that_fails_says_so_and_the_sweep_goes_on(tmp_path, capsys):
    def on_stored(key):
        raise OSError("disk full")

    configs = [{"n_heads": h, "seed": 0} for h in (1, 2)]
    df = sweep(configs, experiment="t", store=tmp_path / "s.jsonl", run_fn=_fake_run, runs_dir=tmp_path,
               progress=False, on_stored=on_stored)
    assert len(df) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"run {run_key(c)} is stored; reporting it failed: OSError: disk full" for c in configs]


def test_shards_split_the_work_and_share_the_store(tmp_path):
    configs = [{"n_heads": h, "seed": s} for h in range(1, 8) for s in (0, 1)]
    store = tmp_path / "s.jsonl"
    ran = {0: [], 1: []}

    def runner(shard):
        def run(config, *, run_dir):
            ran[shard].append(run_key(config))
            return _fake_run(config, run_dir=run_dir)
        return run

    part = sweep(configs, experiment="t", store=store, shard=(1, 2), run_fn=runner(1), runs_dir=tmp_path,
                 progress=False)
    assert sorted(part.key) == sorted(ran[1]) and all(shard_of(k, 2) == 1 for k in ran[1])
    # The other shard, given the grid in another order and as a string: together exactly once.
    whole = sweep(configs[::-1], experiment="t", store=store, shard="0/2", run_fn=runner(0), runs_dir=tmp_path,
                  progress=False)
    assert not set(ran[0]) & set(ran[1])
    assert sorted(ran[0] + ran[1]) == sorted(run_key(c) for c in configs) and len(whole) == len(configs)
    assert len(ResultStore(store).records()) == len(configs)
    # A rerun without a shard finds everything done.
    again = sweep(configs, experiment="t", store=store, run_fn=runner(0), runs_dir=tmp_path, progress=False)
    assert len(ran[0]) + len(ran[1]) == len(configs) and len(again) == len(configs)
    with pytest.raises(ValueError, match="shard"):
        sweep(configs, experiment="t", store=store, shard=(2, 2), run_fn=_fake_run, progress=False)


def test_shard_assignment_depends_only_on_the_config():
    keys = [run_key({"n_heads": h, "seed": s}) for h in range(1, 40) for s in range(3)]
    for n in (1, 2, 3, 5):
        shards = [shard_of(k, n) for k in keys]
        assert set(shards) == set(range(n))  # 117 keys fill every shard
        assert shards == [shard_of(k, n) for k in keys]
    assert parse_shard("1/4") == (1, 4) and parse_shard(None) == (0, 1) and parse_shard((0, 2)) == (0, 2)
    for bad in ("4/4", "-1/3", "1/0", "a/b", "1", (1,), (True, 2)):
        with pytest.raises(ValueError, match="shard"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="n_shards"):
        shard_of(keys[0], 0)


def _sweep_shard(store, runs_dir, shard):
    configs = [{"n_heads": h, "seed": s, "pad": "x" * 3000} for h in range(1, 21) for s in (0, 1)]
    sweep(configs, experiment="t", store=store, shard=shard, run_fn=_fake_run, runs_dir=runs_dir,
          progress=False)


def test_concurrent_shards_write_one_store_safely(tmp_path):
    store = tmp_path / "s.jsonl"
    ctx = mp.get_context("fork")  # the fake runs only append; spawn would re-import torch
    procs = [ctx.Process(target=_sweep_shard, args=(store, tmp_path, (i, 3))) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    records = [json.loads(l) for l in store.read_text().splitlines()]
    assert len(records) == 40 and len({r["key"] for r in records}) == 40
    assert all(r["config"]["pad"] == "x" * 3000 for r in records)


def _append_many(path, worker):
    store = ResultStore(path)
    for i in range(100):
        store.append({"key": f"{worker}-{i}", "config": {}, "metrics": {}, "payload": "x" * 5000})


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "s.jsonl"
    ctx = mp.get_context("fork")  # workers only append; spawn would re-import torch
    procs = [ctx.Process(target=_append_many, args=(path, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    lines = path.read_text().splitlines()
    assert len(lines) == 300 and all(json.loads(l)["payload"] == "x" * 5000 for l in lines)


def test_a_line_cut_by_a_crash_is_skipped_and_the_next_append_survives(tmp_path):
    path = tmp_path / "s.jsonl"
    store = ResultStore(path)
    a, c = run_key({"k": "a"}), run_key({"k": "c"})
    store.append({"key": a, "config": {"k": "a"}, "metrics": {"v": 1}})
    with open(path, "a") as f:
        f.write('{"key": "b", "v"')  # killed mid-write
    assert [r["key"] for r in store.records()] == [a]  # an unterminated last line: silently skipped
    store.append({"key": c, "config": {"k": "c"}, "metrics": {"v": 3}})
    with pytest.warns(RuntimeWarning, match=r"s.jsonl, line 2: not JSON"):
        assert [r["key"] for r in store.records()] == [a, c]
    with pytest.raises(ValueError, match="needs a 'key'"):
        store.append({"v": 1})


def test_default_runner_trains_and_resumes_through_the_store(tmp_path, tiny_corpus):
    cfg = dict(corpus=str(tiny_corpus), vocab_size=280, seq_len=8, d_model=8, n_layers=1, n_heads=2, batch_size=4,
               steps=4, warmup_steps=1, eval_interval=0, checkpoint_every=0, num_threads=1, seed=0)
    df = sweep([cfg, dict(cfg, seed=1)], experiment="tiny", progress=False)
    assert len(df) == 2 and df.val_ppl.gt(1).all() and df.seed.tolist() == [0, 1]
    assert (tmp_path / "data" / "results" / "tiny.jsonl").is_file()
    assert (tmp_path / "data" / "runs" / "tiny" / run_key(cfg) / "result.json").is_file()


@pytest.mark.slow
def test_workers_run_in_parallel_processes_into_one_store(tmp_path):
    configs = [{"n_heads": h, "seed": 0} for h in range(1, 5)]
    seen = []
    df = sweep(configs, experiment="t", store=tmp_path / "s.jsonl", run_fn=_fake_run, runs_dir=tmp_path,
               progress=False, workers=2, on_stored=seen.append)
    assert sorted(df.val_ppl) == sorted(100.0 / h for h in range(1, 5))
    assert sorted(seen) == sorted(run_key(c) for c in configs)  # each worker's run reported here, once
    assert len(ResultStore(tmp_path / "s.jsonl").records()) == 4
    with pytest.raises(ValueError, match="workers"):
        sweep(configs, experiment="t", store=tmp_path / "s.jsonl", run_fn=_fake_run, progress=False, workers=0)
