"""The CUDA checks tools/gpu_check.sh runs first on a GPU, and the script itself on a CPU.

On a machine without CUDA every CUDA test skips and the script must exit 0 saying
"no GPU: skipped" (CI runs it in that mode); on a GPU it runs these tests, the smoke sets with a
CUDA device, torchrun on NCCL when there are two GPUs, and the timed slice of chapter 04's paper
config.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lowrank.layers.attention import MultiHeadAttention
from lowrank.measure.rank import hardmax_rank, rank_report

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (tools/gpu_check.sh on a GPU)")


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip path is for machines without CUDA")
def test_the_script_skips_cleanly_without_a_gpu(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GPU_CHECK_OUT": str(tmp_path / "measured.json")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no GPU: skipped" in done.stdout
    assert not (tmp_path / "measured.json").exists(), "a skipped check must not write measurements"


def test_the_script_refuses_an_unknown_option():
    done = subprocess.run(["bash", str(SCRIPT), "--frobnicate"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "unknown option" in done.stderr and "\n" == done.stderr[-1]


def test_the_script_is_documented_as_the_first_thing_to_run_on_a_gpu():
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    assert "tools/gpu_check.sh" in readme and "make gpu-check" in readme
    assert "gpu-check:" in (ROOT / "Makefile").read_text(encoding="utf8")


def _x(b=3, n=17, d=64, dtype=torch.float64, device="cpu"):
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, n, d, generator=g, dtype=dtype).to(device)


@cuda
@pytest.mark.parametrize("dtype, tol", [(torch.bfloat16, 3e-2), (torch.float16, 5e-3)])
@pytest.mark.parametrize("head_dim", [None, 48])
def test_cuda_attention_in_half_precision_matches_a_float64_reference(dtype, tol, head_dim):
    torch.manual_seed(0)
    ref = MultiHeadAttention(64, 4, head_dim=head_dim, causal=True).double()
    x = _x()
    y_ref, w_ref = ref(x, need_weights=True)
    gpu = MultiHeadAttention(64, 4, head_dim=head_dim, causal=True).cuda()
    gpu.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    with torch.autocast("cuda", dtype=dtype):
        y, w = gpu(x.float().cuda(), need_weights=True)
        y_fast, _ = gpu(x.float().cuda())
    scale = y_ref.abs().max().item()
    torch.testing.assert_close(y.double().cpu(), y_ref, atol=tol * scale, rtol=tol)
    torch.testing.assert_close(y_fast.double().cpu(), y_ref, atol=tol * scale, rtol=tol)
    torch.testing.assert_close(w.double().cpu(), w_ref, atol=tol, rtol=tol)


@cuda
def test_cuda_rank_estimators_match_the_cpu_in_float64():
    A = torch.softmax(_x(b=6, n=40, d=40) * 3, dim=-1)
    cpu = rank_report(A, rtols=(None, 1e-6), energies=(0.99,))
    gpu = rank_report(A.cuda(), rtols=(None, 1e-6), energies=(0.99,))
    for col in cpu.columns:
        assert gpu[col].tolist() == pytest.approx(cpu[col].tolist(), rel=1e-6, abs=1e-6), col
    logits = _x(b=8, n=64, d=64, dtype=torch.float32)
    assert hardmax_rank(logits.cuda()).cpu().tolist() == hardmax_rank(logits).tolist()


@cuda
def test_cuda_training_step_lowers_the_loss_and_stays_finite(tmp_path):
    from lowrank.train import train

    cfg = dict(task="lm", corpus="shakespeare", vocab_size=256, seq_len=32, d_model=32, n_layers=1, n_heads=4,
               head_dim=16, batch_size=8, steps=30, warmup_steps=3, eval_interval=15, eval_tokens=2048,
               test_tokens=2048, device="cuda", seed=0)
    res = train(cfg, out_dir=tmp_path / "run", progress=False)
    curve = res["train_curve"]
    assert all(torch.isfinite(torch.tensor(loss)) for _, loss in curve)
    assert curve[-1][1] < curve[0][1]


@cuda
def test_measured_file_has_the_rates_the_estimates_read():
    path = Path(os.environ.get("GPU_CHECK_OUT", ROOT / "data" / "measured" / "gpu_check.json"))
    if not path.is_file():
        pytest.skip("written by tools/gpu_check.sh after these tests")
    data = json.loads(path.read_text())
    from lowrank.experiments.costs import CPU_RATES

    assert set(data["rates"]) <= set(CPU_RATES) and all(v > 0 for v in data["rates"].values())
    assert data["gpu"] and data["date"]


def test_main_of_the_slice_refuses_a_missing_set(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_slice.py"), "--out", str(tmp_path / "m.json"),
                           "--set", str(tmp_path / "nope.yaml")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "nope.yaml" in done.stderr
