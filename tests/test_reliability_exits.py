"""Exit statuses and output under awkward terminals: stdout closed, a reader that quits, twin runs,
a training run ended by SIGTERM or SIGHUP."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lowrank.book import run_folders, runner

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.mark.slow
def test_a_run_with_stdout_closed_finishes(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "lowrank", "run", "01", "--root", str(ROOT), "--scale", "smoke",
                           "--no-progress", "-o", str(out)], env=ENV, stderr=subprocess.PIPE, text=True,
                          timeout=300, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "results.json").is_file()


@pytest.mark.slow
def test_a_reader_that_quits_early_does_not_stop_the_run(tmp_path):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "lowrank", "run", "01", "--root", str(ROOT), "--scale", "smoke",
                          "--no-progress", "--log-output", "-o", str(out)], env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.close()  # `| less`, quit at once
    err = p.stderr.read()
    assert p.wait(300) == 0, err[-2000:]
    assert (out / "results.json").is_file() and "Traceback" not in err


def test_a_twin_run_in_the_same_second_takes_the_next_default_folder(tmp_path, monkeypatch):
    plan = runner.plan_run(runner.resolve_chapter("01", ROOT), scale="smoke", kernel="python3")
    fixed = time.gmtime(0)
    monkeypatch.setattr(run_folders.time, "gmtime", lambda *a: fixed)
    first = runner.default_outdir(plan, tmp_path)
    first.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run_folders.lock_path(first).write_text(str(holder.pid))  # the twin holds the name, its folder not yet made
        second = runner.default_outdir(plan, tmp_path)
        assert second != first and second.name.startswith(first.name)
    finally:
        holder.kill()
        holder.wait()
    assert runner.default_outdir(plan, tmp_path) == first  # a stale lock does not count


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_train_ended_by_a_signal_exits_128_plus_its_number_in_one_line(tmp_path, sig):
    docs = tmp_path / "docs.txt"
    docs.write_text("".join(f"document {i} has a few words in it, more or less.\n" for i in range(200)))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(dict(corpus=str(docs), vocab_size=280, seq_len=8, d_model=8, n_layers=1, n_heads=2,
                                   batch_size=4, steps=10**6, warmup_steps=1, eval_interval=0, log_interval=1,
                                   checkpoint_every=50, num_threads=1)))
    run = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "lowrank.train", "--config", str(cfg), "--out-dir", str(run),
                          "--no-progress", "--data-root", str(tmp_path / "data")], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (run / "checkpoint.pt").exists() and time.time() < deadline and p.poll() is None:
            time.sleep(0.2)
        assert (run / "checkpoint.pt").exists(), p.stderr.read() if p.poll() is not None else "no checkpoint"
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + getattr(signal, sig), err  # 143 for SIGTERM, 129 for SIGHUP
    assert len(err.strip().splitlines()) == 1 and f"terminated by {sig}" in err and "Traceback" not in err, err
    assert (run / "checkpoint.pt").is_file()  # the run resumes from it
