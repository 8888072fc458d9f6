"""Sweeps sharing a store run each key once, and pool workers never outlive their sweep."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lowrank.stores.sweep import ResultStore

from helpers import default_sigint

ROOT = Path(__file__).resolve().parents[1]

RUN_FN = textwrap.dedent("""
    import os, time
    from pathlib import Path

    def run(config, *, run_dir):
        log = Path(os.environ["SWEEP_LOG"])
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{os.getpid()} {config['i']}\\n".encode())
        os.close(fd)
        time.sleep(float(os.environ.get("SWEEP_SLEEP", "0.5")))
        return {"v": float(config["i"])}
""")

SWEEP = textwrap.dedent("""
    import sys
    from lowrank.stores.sweep import sweep
    import slow_run

    if __name__ == "__main__":  # spawned workers import this file again
        sweep([{"i": i} for i in range(int(sys.argv[3]))], experiment="t", store=sys.argv[1],
              runs_dir=sys.argv[2], run_fn=slow_run.run, workers=int(sys.argv[4]), progress=False)
""")


def _setup(tmp_path: Path, sleep: float) -> tuple[Path, dict]:
    (tmp_path / "slow_run.py").write_text(RUN_FN)
    script = tmp_path / "sweep.py"
    script.write_text(SWEEP)
    path = os.pathsep.join(filter(None, [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "SWEEP_LOG": str(tmp_path / "log"), "SWEEP_SLEEP": str(sleep)}
    return script, env


def _log(tmp_path: Path) -> list[tuple[int, int]]:
    log = tmp_path / "log"
    return [tuple(map(int, line.split())) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.slow
def test_two_sweeps_on_one_store_run_each_key_once(tmp_path):
    script, env = _setup(tmp_path, 0.5)
    store, runs = tmp_path / "s.jsonl", tmp_path / "runs"
    procs = [subprocess.Popen([sys.executable, str(script), str(store), str(runs), "4", "1"], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()[-2000:]
    ran = [i for _, i in _log(tmp_path)]
    assert sorted(ran) == [0, 1, 2, 3], f"a key ran twice (each sweep in the same run folder): {ran}"
    assert sorted(r["config"]["i"] for r in ResultStore(store).records()) == [0, 1, 2, 3]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; its new parent has yet to reap it


@pytest.mark.slow
def test_pool_workers_die_with_their_sweep_and_append_nothing(tmp_path):
    script, env = _setup(tmp_path, 6.0)
    store, runs = tmp_path / "s.jsonl", tmp_path / "runs"
    parent = subprocess.Popen([sys.executable, str(script), str(store), str(runs), "4", "2"], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while len(_log(tmp_path)) < 2 and time.time() < deadline and parent.poll() is None:
            time.sleep(0.2)
        workers = {pid for pid, _ in _log(tmp_path)}
        assert len(workers) == 2, parent.stderr.read()[-2000:] if parent.poll() is not None else workers
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.time() + 5
        while any(_alive(p) for p in workers) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "pool workers outlived the killed sweep"
        time.sleep(7)  # past the end of the runs the workers had started
        assert not store.exists() or ResultStore(store).records() == []
    finally:
        for pid in {pid for pid, _ in _log(tmp_path)}:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_an_interrupted_sweep_stops_its_workers_and_runs_nothing_more(tmp_path):
    script, env = _setup(tmp_path, 3.0)
    store, runs = tmp_path / "s.jsonl", tmp_path / "runs"
    parent = subprocess.Popen([sys.executable, str(script), str(store), str(runs), "8", "2"], env=env,
                              stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        deadline = time.time() + 90
        while len(_log(tmp_path)) < 2 and time.time() < deadline and parent.poll() is None:
            time.sleep(0.2)
        workers = {pid for pid, _ in _log(tmp_path)}
        assert len(workers) == 2, parent.stderr.read()[-2000:] if parent.poll() is not None else workers
        started = time.time()
        parent.send_signal(signal.SIGINT)  # to the sweep alone, as a scheduler's signal would be
        parent.wait(30)
        assert time.time() - started < 10, "the sweep ran its queued runs before it stopped"
        time.sleep(4)  # past the end of the runs the workers had started
        assert len(_log(tmp_path)) == 2, f"runs started after the interrupt: {_log(tmp_path)}"
        assert not any(_alive(p) for p in workers)
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in {pid for pid, _ in _log(tmp_path)}:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
