import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lowrank.train import NonFiniteLossError, TrainConfig, lr_at, main, train

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("the king queen lord lady sword crown night day love death war peace speak hear go come "
         "fair foul good ill heart blood honour grace").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A small folder corpus (30 documents) and a data root holding its tokenizer cache."""
    base = tmp_path_factory.mktemp("corpus")
    rng = random.Random(0)
    docs = base / "docs"
    docs.mkdir()
    for i in range(30):
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(40))
        (docs / f"{i:02d}.txt").write_text(text)
    return docs, base / "data"


def _cfg(docs, **kw):
    base = dict(corpus=str(docs), vocab_size=300, seq_len=16, d_model=16, n_layers=1, n_heads=2,
                batch_size=8, steps=12, lr=3e-3, warmup_steps=3, eval_interval=4, eval_tokens=256,
                test_tokens=512, log_interval=2, checkpoint_every=5, num_threads=1)
    base.update(kw)
    return TrainConfig(**base)


def _lines(path):
    return [{k: v for k, v in json.loads(l).items() if k != "tokens_per_s"} for l in path.read_text().splitlines()]


def _metrics(res):
    return {k: v for k, v in res.items() if k not in ("train_wall_s", "tokens_per_s")}


def test_lr_schedules():
    cfg = TrainConfig(lr=1.0, warmup_steps=10, steps=110, min_lr_ratio=0.1)
    assert lr_at(5, cfg) == 0.5 and lr_at(10, cfg) == 1.0
    assert lr_at(60, cfg) == pytest.approx(0.55) and lr_at(110, cfg) == pytest.approx(0.1)
    inv = TrainConfig(lr=1.0, warmup_steps=10, steps=110, schedule="inverse_sqrt")
    assert lr_at(40, inv) == pytest.approx(0.5)
    assert lr_at(50, TrainConfig(lr=0.3, warmup_steps=0, steps=100, schedule="constant")) == 0.3


def test_training_lowers_loss_writes_files_and_is_deterministic(corpus, tmp_path):
    docs, root = corpus
    cfg = _cfg(docs, steps=30, dropout=0.1)
    a = train(cfg, out_dir=tmp_path / "a", progress=False, data_root=root)
    b = train(cfg, out_dir=tmp_path / "b", progress=False, data_root=root)
    assert _metrics(a) == _metrics(b)
    assert _lines(tmp_path / "a" / "metrics.jsonl") == _lines(tmp_path / "b" / "metrics.jsonl")
    c = train(_cfg(docs, steps=30, dropout=0.1, seed=1), out_dir=tmp_path / "c", progress=False, data_root=root)
    assert c["val_loss"] != a["val_loss"]
    first = _lines(tmp_path / "a" / "metrics.jsonl")[0]
    assert first["split"] == "train" and a["val_loss"] < first["loss"] - 0.5
    assert a["val_ppl"] == pytest.approx(math.exp(a["val_loss"])) and 0 < a["test_acc"] < 1
    assert json.loads((tmp_path / "a" / "config.json").read_text()) == cfg.to_dict()
    assert json.loads((tmp_path / "a" / "result.json").read_text())["val_loss"] == a["val_loss"]
    ckpt = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)
    assert ckpt["step"] == 30
    # The final evaluation (on more tokens) comes last; the curve before it ends on the last step.
    *interval, final = a["val_curve"]
    assert final == [30, pytest.approx(a["val_loss"])] and [s for s, _ in interval] == [*range(4, 30, 4), 30]


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_skipping_the_correct_count_in_training_changes_no_number(corpus, tmp_path, monkeypatch, task):
    """The training loop asks loss_sum for no correct count; a run that computes it anyway must
    write bit-identical losses, gradient norms, results and checkpoint."""
    from lowrank.train.tasks import Task

    docs, root = corpus
    cfg = _cfg(docs, task=task, dropout=0.1)
    fast = train(cfg, out_dir=tmp_path / "fast", progress=False, data_root=root)
    loss_sum = Task.loss_sum
    monkeypatch.setattr(Task, "loss_sum", lambda self, model, batch, count_correct=True:
                        loss_sum(self, model, batch, count_correct=True))
    counted = train(cfg, out_dir=tmp_path / "counted", progress=False, data_root=root)
    assert _metrics(fast) == _metrics(counted)
    assert _lines(tmp_path / "fast" / "metrics.jsonl") == _lines(tmp_path / "counted" / "metrics.jsonl")
    a, b = (torch.load(tmp_path / run / "checkpoint.pt", weights_only=True) for run in ("fast", "counted"))
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert a["optimizer"]["state"].keys() == b["optimizer"]["state"].keys()
    assert all(torch.equal(a["optimizer"]["state"][i][k], b["optimizer"]["state"][i][k])
               for i in a["optimizer"]["state"] for k in a["optimizer"]["state"][i])


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_resume_after_kill_gives_identical_metrics(corpus, tmp_path, task):
    docs, root = corpus
    cfg = _cfg(docs, task=task, dropout=0.1)
    full = train(cfg, out_dir=tmp_path / "full", progress=False, data_root=root)
    # Killed at step 8: the last checkpoint is step 5, steps 6-8 are lost and redone.
    part = train(cfg, out_dir=tmp_path / "killed", progress=False, data_root=root, stop_after=8)
    assert part == {"finished": False, "step": 8}
    assert torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)["step"] == 5
    resumed = train(cfg, out_dir=tmp_path / "killed", progress=False, data_root=root, resume=True)
    assert _metrics(resumed) == _metrics(full)
    assert _lines(tmp_path / "killed" / "metrics.jsonl") == _lines(tmp_path / "full" / "metrics.jsonl")
    again = train(cfg, out_dir=tmp_path / "killed", progress=False, data_root=root, resume=True)
    assert again == resumed  # a finished run returns its stored result


def test_resume_with_a_different_config_is_refused(corpus, tmp_path):
    docs, root = corpus
    train(_cfg(docs), out_dir=tmp_path / "r", progress=False, data_root=root, stop_after=6)
    with pytest.raises(ValueError, match="different config"):
        train(_cfg(docs, lr=1e-2), out_dir=tmp_path / "r", progress=False, data_root=root, resume=True)


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(corpus, tmp_path):
    docs, root = corpus

    def poison(step, model):
        if step == 7:
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))

    with pytest.raises(NonFiniteLossError, match=r"non-finite training loss \(nan\) at step 8.*step 5"):
        train(_cfg(docs), out_dir=tmp_path / "nan", progress=False, data_root=root, callbacks=[poison])
    state = torch.load(tmp_path / "nan" / "checkpoint.pt", weights_only=True)
    assert state["step"] == 5 and all(torch.isfinite(v).all() for v in state["model"].values())
    assert not (tmp_path / "nan" / "result.json").exists()


def test_classification_task(tmp_path):
    root = tmp_path / "data"
    folder = tmp_path / "labelled"
    rng = random.Random(1)
    for label, vocab in (("a", WORDS[:10]), ("b", WORDS[10:])):
        (folder / label).mkdir(parents=True)
        for i in range(20):
            (folder / label / f"{i}.txt").write_text(" ".join(rng.choice(vocab) for _ in range(30)))
    cfg = TrainConfig(task="classify", corpus=str(folder), vocab_size=300, seq_len=16, d_model=16, n_layers=1,
                      n_heads=2, batch_size=8, steps=40, lr=3e-3, warmup_steps=4, eval_interval=0,
                      checkpoint_every=0, num_threads=1)
    res = train(cfg, out_dir=tmp_path / "clf", progress=False, data_root=root)
    assert res["val_acc"] == 1.0 and res["val_n"] == 2 and "val_ppl" not in res


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="task must be one of"):
        TrainConfig(task="seq2seq")
    with pytest.raises(ValueError, match="unknown training config key"):
        TrainConfig.from_dict({"learning_rate": 1.0})
    with pytest.raises(ValueError, match="divide d_model"):
        TrainConfig(d_model=10, n_heads=3)


@pytest.mark.slow
def test_two_process_ddp_matches_one_process(corpus, tmp_path):
    docs, root = corpus
    cfg = _cfg(docs, steps=6, eval_interval=0, checkpoint_every=0)
    (tmp_path / "cfg.json").write_text(json.dumps(cfg.to_dict()))
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "lowrank.train", "--config", str(tmp_path / "cfg.json"), "--out-dir", str(tmp_path / "ddp"),
           "--data-root", str(root), "--no-progress"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    ddp = json.loads((tmp_path / "ddp" / "result.json").read_text())
    assert ddp["n_processes"] == 2
    assert main(["--config", str(tmp_path / "cfg.json"), "--out-dir", str(tmp_path / "one"),
                 "--data-root", str(root), "--no-progress"]) == 0
    one = json.loads((tmp_path / "one" / "result.json").read_text())
    assert one["n_processes"] == 1
    train_ddp = [l["loss"] for l in _lines(tmp_path / "ddp" / "metrics.jsonl") if l["split"] == "train"]
    train_one = [l["loss"] for l in _lines(tmp_path / "one" / "metrics.jsonl") if l["split"] == "train"]
    assert len(train_one) == 3 and train_ddp == pytest.approx(train_one, abs=1e-5)
    assert ddp["val_loss"] == pytest.approx(one["val_loss"], abs=1e-5)
    assert ddp["test_loss"] == pytest.approx(one["test_loss"], abs=1e-5)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the error is for machines without CUDA")
def test_cuda_requested_without_cuda_is_a_clear_error(corpus, tmp_path):
    docs, root = corpus
    with pytest.raises(ValueError, match="device='cuda'.*no CUDA device"):
        train(_cfg(docs, device="cuda"), out_dir=tmp_path / "c", progress=False, data_root=root)
