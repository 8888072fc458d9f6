"""Item 7: the training engine end to end against a minimal causal LM written for the comparison.

Ours is ``lowrank.train.train`` on a config of chapter 04's budget store (everything a stored run
pays: batches drawn per (seed, step), the learning-rate schedule, logging, evaluations,
checkpoints, the final validation and test evaluation, the result file). The baseline is the
loop a user would write in plain PyTorch for the same run: the same shape of model (pre-LN, one
fused qkv projection, ``scaled_dot_product_attention``, untied head), AdamW with the same betas,
weight decay and clipping, the same warm-up + cosine rate, random windows of the same training
stream, and the same evaluation work. Both run with one torch thread, as the store's runs do.
Both must end with validation losses of the same magnitude, or the row is an error.

Two information rows come with the full run: what ``torch.compile`` costs and saves per step on
this CPU, and whether two one-thread runs at once (two processes) train faster than one run
with two threads.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from harness import ERROR, SKIPPED, Result, compare

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The baseline's final validation loss over ours must lie in this band: the same model and data
# trained the same way, differing only in initial weights and the order of the random windows.
LOSS_BAND = (0.8, 1.25)


class MinimalBlock(nn.Module):
    def __init__(self, d: int, heads: int, head_dim: int):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * heads * head_dim)
        self.proj = nn.Linear(heads * head_dim, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, n, self.heads * self.head_dim))
        return x + self.mlp(self.ln2(x))


class MinimalLM(nn.Module):
    """Token + position embeddings, pre-LN blocks, final LayerNorm, untied head: ids -> logits."""

    def __init__(self, vocab: int, d: int, layers: int, heads: int, head_dim: int, n: int):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(n, d)
        self.blocks = nn.ModuleList(MinimalBlock(d, heads, head_dim) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def minimal_model(cfg: dict, vocab: int) -> MinimalLM:
    """The baseline model in the shape of a TrainConfig dict (d_ff = 4 d, pre-LN, untied)."""
    if cfg["norm"] != "pre" or cfg["tie_embeddings"] or cfg.get("d_ff") not in (None, 4 * cfg["d_model"]):
        raise ValueError("the minimal model is pre-LN with an untied head and d_ff = 4 d")
    head_dim = cfg["head_dim"] or cfg["d_model"] // cfg["n_heads"]
    return MinimalLM(vocab, cfg["d_model"], cfg["n_layers"], cfg["n_heads"], head_dim, cfg["seq_len"])


def warmup_cosine(step: int, cfg: dict) -> float:
    w, lr = cfg["warmup_steps"], cfg["lr"]
    if w and step <= w:
        return lr * step / w
    progress = min(1.0, (step - w) / max(1, cfg["steps"] - w))
    return lr * (cfg["min_lr_ratio"] + (1 - cfg["min_lr_ratio"]) * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def mean_loss(model, stream: torch.Tensor, max_tokens: int, n: int, batch: int) -> float:
    """Mean next-token loss over max_tokens // n evenly spaced non-overlapping windows."""
    model.eval()
    total = (len(stream) - 1) // n
    starts = torch.linspace(0, total - 1, max(1, min(total, max_tokens // n))).long() * n
    offsets = torch.arange(n + 1)
    loss_sum, count = 0.0, 0
    for b in range(0, len(starts), batch):
        win = stream[starts[b:b + batch, None] + offsets].long()
        logits = model(win[:, :-1])
        loss_sum += float(F.cross_entropy(logits.flatten(0, 1), win[:, 1:].flatten(), reduction="sum"))
        count += win[:, 1:].numel()
    model.train()
    return loss_sum / count


def minimal_run(cfg: dict, tokens) -> dict:
    """Train the baseline for cfg's steps on tokens (a lowrank.data.corpora.LMTokens); its final losses."""
    torch.manual_seed(cfg["seed"])
    model = minimal_model(cfg, tokens.vocab_size)
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg["weight_decay"]},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]))
    g = torch.Generator().manual_seed(cfg["seed"])
    n, B, train = cfg["seq_len"], cfg["batch_size"], tokens.train
    offsets = torch.arange(n + 1)
    losses = []
    for step in range(1, cfg["steps"] + 1):
        for group in opt.param_groups:
            group["lr"] = warmup_cosine(step, cfg)
        win = train[torch.randint(len(train) - n - 1, (B, 1), generator=g) + offsets].long()
        loss = F.cross_entropy(model(win[:, :-1]).flatten(0, 1), win[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg["grad_clip"])
        opt.step()
        losses.append(loss.item())
        if cfg["eval_interval"] and step % cfg["eval_interval"] == 0 and step < cfg["steps"]:
            mean_loss(model, tokens.validation, cfg["eval_tokens"], n, B)
    return {"train_loss": losses[-1],
            "val_loss": mean_loss(model, tokens.validation, cfg["test_tokens"], n, B),
            "test_loss": mean_loss(model, tokens.test, cfg["test_tokens"], n, B)}


def engine_run(cfg: dict) -> dict:
    """One stored-style run of lowrank's engine in a fresh folder (deleted afterwards)."""
    from lowrank.train import train

    with tempfile.TemporaryDirectory(prefix="bench-engine-") as out:
        return train(cfg, out_dir=out, progress=False)


def loss_check(ours: float, base: float) -> str | None:
    """None when the two validation losses are of the same magnitude, else why not."""
    if math.isfinite(ours) and math.isfinite(base) and LOSS_BAND[0] <= base / ours <= LOSS_BAND[1]:
        return None
    return (f"validation losses differ in magnitude: ours {ours:.3f}, baseline {base:.3f} "
            f"(ratio must be in [{LOSS_BAND[0]}, {LOSS_BAND[1]}])")


def _row_config(cfg: dict, name: str, threads: int) -> dict:
    head = {"fixed_head_dim": cfg["head_dim"]} if cfg["head_dim"] else {
        "head_dim": cfg["d_model"] // cfg["n_heads"]}
    return {"model": name, "d_model": cfg["d_model"], "heads": cfg["n_heads"], **head,
            "layers": cfg["n_layers"], "n": cfg["seq_len"], "batch": cfg["batch_size"],
            "vocab": cfg["vocab_size"], "steps": cfg["steps"], "threads": threads}


@contextlib.contextmanager
def torch_threads(n: int):
    """Run the block with n torch threads (train() sets its run's count in this process)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _tokens_per_s(cfg: dict, seconds: float) -> float:
    return cfg["steps"] * cfg["batch_size"] * cfg["seq_len"] / seconds


def budget_config(name: str, steps: int) -> dict:
    from lowrank.experiments.head_size_training import budget

    return budget._config(name, steps=steps, seed=0, lr=0.01)


def bench_engine_row(name: str, steps: int, *, timing: dict, cfg: dict | None = None) -> Result:
    """The item-7 row of one model: train() end to end against minimal_run, one thread each."""
    from lowrank.train import TrainConfig
    from lowrank.train.tasks import Task

    cfg = cfg or budget_config(name, steps)
    threads = cfg["num_threads"] or 1
    key = "engine_" + re.sub(r"\W+", "_", name).strip("_")
    tokens = Task(TrainConfig.from_dict(cfg), None).tokens
    ours_label, base_label = f"lowrank.train.train ({name})", "minimal causal LM (plain PyTorch)"
    last = {}

    def ours():
        last["ours"] = engine_run(cfg)

    def baseline():
        last["baseline"] = minimal_run(cfg, tokens)

    with torch_threads(threads):
        row = compare(key, 7, config=_row_config(cfg, name, threads), target=1.10,
                      ours=(ours_label, ours), baseline=(base_label, baseline), **timing)
    l_ours, l_base = last["ours"]["val_loss"], last["baseline"]["val_loss"]
    tps = {"ours": _tokens_per_s(cfg, row.timings["ours"]["median_s"]),
           "baseline": _tokens_per_s(cfg, row.timings["baseline"]["median_s"])}
    row.extra = {"tokens_per_s": tps, "engine_train_tokens_per_s": last["ours"]["tokens_per_s"],
                 "val_loss": {"ours": l_ours, "baseline": l_base},
                 "test_loss": {"ours": last["ours"]["test_loss"], "baseline": last["baseline"]["test_loss"]}}
    why = loss_check(l_ours, l_base)
    if why is not None:
        row.status, row.note = ERROR, why
        return row
    row.note = (f"{cfg['steps']} steps end to end: {tps['ours']:,.0f} tokens/s ours, {tps['baseline']:,.0f} "
                f"baseline; validation loss ours {l_ours:.3f}, baseline {l_base:.3f}")
    return row


@contextlib.contextmanager
def fresh_inductor_cache():
    """An empty inductor cache for the block, so a first compiled call pays the whole
    compilation, as on a new machine; dynamo forgets the block's compiled graphs afterwards."""
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
            torch._dynamo.reset()
            yield
    finally:
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
        torch._dynamo.reset()


def bench_compile(name: str, *, timing: dict, cfg: dict | None = None) -> Result:
    """torch.compile of the engine's model on this CPU: time of the first (compiling) training
    step in a fresh inductor cache, and the per-step time ratio compiled / eager."""
    from lowrank.train import TrainConfig
    from lowrank.train.tasks import Task

    cfg = cfg or budget_config(name, 1)
    config = {k: v for k, v in _row_config(cfg, name, 1).items() if k != "steps"}
    label = f"CausalLM training step ({name})"
    task = Task(TrainConfig.from_dict(cfg), None)
    torch.manual_seed(0)
    model = task.build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = task.train_batch(1, 0, 1)

    def step(net):
        def run():
            loss, count, _ = task.loss_sum(net, batch, count_correct=False)
            (loss / count).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
            opt.step()
            opt.zero_grad(set_to_none=True)
        return run

    with torch_threads(1), fresh_inductor_cache():
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        try:
            step(compiled)()
        except Exception as e:  # noqa: BLE001  - no compiler on this machine is a finding, not a failure
            return Result(key="engine_compile", item=7, ours=f"{label}, torch.compile",
                          baseline=f"{label}, eager", config=config, status=SKIPPED,
                          note=f"torch.compile failed here: {type(e).__name__}: {str(e)[:200]}")
        first = time.perf_counter() - t0
        row = compare("engine_compile", 7, config=config, target=None,
                      ours=(f"{label}, torch.compile", step(compiled)), baseline=(f"{label}, eager", step(model)),
                      **timing)
    compile_s = first - row.timings["ours"]["median_s"]
    saving = row.timings["baseline"]["median_s"] - row.timings["ours"]["median_s"]
    row.extra = {"compile_s": compile_s, "first_step_s": first}
    row.note = (f"compiling took {compile_s:.1f} s (first step {first:.1f} s, fresh inductor cache); "
                f"per step compiled / eager {row.ratio:.3g}, so compiling pays after "
                + (f"{compile_s / saving:,.0f} steps" if saving > 0 else "no number of steps"))
    return row


class Worker:
    """A process that runs train(cfg) with a given thread count each time it is asked, so that
    timings exclude the interpreter's start-up and imports."""

    def __init__(self, cfg: dict, threads: int):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")]))
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "worker", str(threads),
                                      json.dumps(cfg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, env=env, cwd=ROOT)

    def start(self, runs: int) -> None:
        self.proc.stdin.write(f"{runs}\n")
        self.proc.stdin.flush()

    def wait(self) -> None:
        if self.proc.stdout.readline().strip() != "done":
            self.proc.wait(timeout=30)
            self.err.seek(0)
            raise RuntimeError(f"benchmark worker exited ({self.proc.returncode}): "
                               f"{self.err.read().decode()[-500:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def bench_processes(name: str, steps: int, *, timing: dict, cfg: dict | None = None) -> Result:
    """Two one-thread runs at once (two processes) against one two-thread run, twice in a row:
    the same tokens on both sides, so the ratio of times is the inverse ratio of throughputs."""
    cfg = cfg or budget_config(name, steps)
    config = _row_config(cfg, name, 1)
    del config["threads"]
    workers = []
    try:
        workers = [Worker({**cfg, "num_threads": 1}, 1), Worker({**cfg, "num_threads": 1}, 1),
                   Worker({**cfg, "num_threads": 2}, 2)]
        singles, double = workers[:2], workers[2]

        def two_processes():
            for w in singles:
                w.start(1)
            for w in singles:
                w.wait()

        def two_threads():
            double.start(2)
            double.wait()

        row = compare("engine_processes_vs_threads", 7, config=config, target=None,
                      ours=("2 runs at once, 1 thread each (2 processes)", two_processes),
                      baseline=("1 run at a time with 2 threads, twice", two_threads), **timing)
    finally:
        for w in workers:
            w.close()
    tps = {"processes": 2 * _tokens_per_s(cfg, row.timings["ours"]["median_s"]),
           "threads": 2 * _tokens_per_s(cfg, row.timings["baseline"]["median_s"])}
    row.extra = {"tokens_per_s": tps}
    row.note = (f"{cfg['steps']} steps a run, end to end: {tps['processes']:,.0f} tokens/s from two one-thread "
                f"processes, {tps['threads']:,.0f} from one two-thread run")
    return row


def bench_engine(models: list[str], steps: int, *, timing: dict, info: dict | None = None) -> list[Result]:
    """Item 7's rows: one per model, then (when ``info`` is given) the compile and processes rows.

    ``info``: dict(compile_timing=..., process_steps=..., process_timing=...), or None (quick mode).
    """
    rows = [bench_engine_row(name, steps, timing=timing) for name in models]
    if info is not None:
        rows.append(bench_compile(models[0], timing=info["compile_timing"]))
        rows.append(bench_processes(models[0], info["process_steps"], timing=info["process_timing"]))
    return rows


def _worker(threads: int, cfg_json: str) -> None:
    cfg = json.loads(cfg_json)
    torch.set_num_threads(threads)
    for line in sys.stdin:
        for _ in range(int(line)):
            engine_run(cfg)
        print("done", flush=True)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "worker":
    _worker(int(sys.argv[2]), sys.argv[3])
