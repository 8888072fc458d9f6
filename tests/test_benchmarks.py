"""The benchmark harness, its correctness checks and its report files (no timing is asserted)."""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_attention  # noqa: E402
import bench_engine  # noqa: E402
import bench_rank  # noqa: E402
import bench_seeds  # noqa: E402
import bench_training  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402


class FakeClock:
    """Stands in for time.perf_counter; each benchmarked callable advances it by a fixed step."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def work(self, seconds):
        def fn():
            self.now += seconds
        return fn


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(harness.time, "perf_counter", c)
    return c


def test_time_pair_ratio_is_median_of_paired_ratios(clock):
    durations = iter([1.0, 2.0] + [1.0, 4.0, 8.0, 2.0, 3.0, 3.0])  # warm-up pair, then 3 pairs
    calls = []

    def side(name):
        def fn():
            calls.append(name)
            clock.now += next(durations)
        return fn

    ours, base, ratio = harness.time_pair(side("ours"), side("base"), warmup=1, reps=3)
    # Repetitions alternate which side goes first.
    assert calls == ["ours", "base", "ours", "base", "base", "ours", "ours", "base"]
    assert ours.times == [1.0, 2.0, 3.0] and base.times == [4.0, 8.0, 3.0]
    assert ratio == pytest.approx(0.25)  # median of 0.25, 0.25, 1.0
    assert ours.summary()["median_s"] == 2.0 and base.summary()["max_s"] == 8.0


def test_time_pair_budget_caps_repetitions_but_keeps_three(clock):
    ours, base, _ = harness.time_pair(clock.work(1.0), clock.work(1.0), warmup=1, reps=50, budget_s=10)
    assert len(ours.times) == len(base.times) == 5  # a 2 s pair fits 5 times in 10 s
    ours, _, _ = harness.time_pair(clock.work(10.0), clock.work(10.0), warmup=1, reps=50, budget_s=1)
    assert len(ours.times) == harness.MIN_REPS
    ours, _, _ = harness.time_pair(clock.work(1e-3), clock.work(1e-3), warmup=1, reps=4, budget_s=100)
    assert len(ours.times) == 4


@pytest.mark.parametrize("kw", [dict(warmup=0, reps=3), dict(warmup=1, reps=0)])
def test_time_pair_rejects_bad_counts(kw):
    with pytest.raises(ValueError, match="warmup"):
        harness.time_pair(lambda: None, lambda: None, **kw)


def test_judge_and_failed_rows():
    assert harness.judge(0.9, 1.0) == "PASS"
    assert harness.judge(1.2, 1.15) == "FAIL"
    assert harness.judge(None, 1.0) == harness.judge(2.0, None) == "info"
    rows = [harness.Result(key=k, item=1, ours="a", baseline="b", config={}, status=s)
            for k, s in (("p", "PASS"), ("f", "FAIL"), ("e", "error"), ("s", "skipped"), ("i", "info"))]
    assert [r.key for r in report.failed(rows)] == ["f", "e"]


def test_machine_name_is_file_safe():
    name = harness.machine_name(torch.device("cpu"))
    assert name.startswith("cpu-") and all(c.isalnum() or c == "-" for c in name)


def test_fmt_seconds_units():
    assert harness.fmt_seconds(2.5) == "2.5 s"
    assert harness.fmt_seconds(0.0123) == "12.3 ms"
    assert harness.fmt_seconds(4.56e-5) == "45.6 us"


def test_numpy_loop_ranks_hand_values():
    A = np.stack([np.eye(4), np.diag([2.0, 1.0, 0.0, 0.0]), np.ones((4, 4))])
    out = bench_rank.numpy_loop_ranks(A)
    assert out["numerical_rank"].tolist() == [4, 2, 1]
    # effective rank: exp(entropy) of sigma / sum(sigma); stable rank: sum sigma^2 / sigma_1^2
    p = np.array([2 / 3, 1 / 3])
    np.testing.assert_allclose(out["effective_rank"], [4.0, np.exp(-(p * np.log(p)).sum()), 1.0])
    np.testing.assert_allclose(out["stable_rank"], [4.0, 1.25, 1.0])


def test_rank_report_matches_numpy_loop_on_attention(monkeypatch):
    A = bench_rank.attention_batch(6, 24)
    assert A.shape == (6, 24, 24) and A.dtype == torch.float64
    torch.testing.assert_close(A.sum(-1), torch.ones(6, 24, dtype=torch.float64))
    bench_rank.check_same_measures(A)  # raises on any disagreement
    loop = bench_rank.numpy_loop_ranks

    def off_by_one(A_np):
        out = loop(A_np)
        out["numerical_rank"] = out["numerical_rank"] - 1
        return out

    monkeypatch.setattr(bench_rank, "numpy_loop_ranks", off_by_one)
    with pytest.raises(AssertionError, match="numerical rank"):
        bench_rank.check_same_measures(A)


def test_loglog_slope_recovers_power():
    ns = [64, 128, 256, 512]
    assert bench_rank.loglog_slope(ns, [3e-9 * n ** 3 for n in ns]) == pytest.approx(3.0)
    assert bench_rank.loglog_slope(ns, [7e-8 * n ** 2 for n in ns]) == pytest.approx(2.0)


def test_attention_flops_fixed_over_standard_is_width_ratio():
    B, n, d, h = 4, 128, 256, 8
    std, fixed = (bench_attention.attention_flops(B, n, d, h, dh) for dh in (d // h, n))
    assert fixed / std == pytest.approx(h * n / d)
    assert std == 3 * 4 * B * n * d * (2 * d + n)


def test_mha_check_same_output_accepts_loaded_weights_and_rejects_others():
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    x = torch.randn(2, 5, 16)
    ours = bench_attention.MultiHeadAttention(16, 4).load_torch_mha(ref)
    bench_attention.check_same_output(ours, ref, x)
    with pytest.raises(AssertionError):
        bench_attention.check_same_output(bench_attention.MultiHeadAttention(16, 4), ref, x)


def test_masked_batch_masks_and_labels():
    inputs, labels = bench_training.masked_batch(4, 200, 50, seed=1)
    chosen = labels != -100
    assert inputs.shape == labels.shape == (4, 200)
    assert 0.05 < chosen.float().mean() < 0.3
    assert (inputs[chosen] == 0).all() and (inputs[~chosen] > 0).all()
    assert (labels[chosen] > 0).all()


def _rows():
    env = harness.environment(torch.device("cpu"), 1)
    env.update(mode="quick", date="2026-01-01T00:00:00", loadavg_end=[0.5, 0.5, 0.5])
    timing = harness.Timing([1.0, 2.0, 3.0]).summary()
    rows = [harness.Result(key="a", item=1, ours="rank_report", baseline="numpy", config={"n": 8},
                           ratio=0.3, target=0.4, status="PASS", note="x | y",
                           timings={"ours": timing, "baseline": timing}),
            harness.Result(key="b", item=5, ours="probe", baseline="naive", config={}, status="skipped",
                           note="not importable")]
    return rows, env


def test_markdown_table_and_json(tmp_path):
    rows, env = _rows()
    md = report.markdown_table(rows, env)
    assert "| 1a | rank_report vs numpy | n=8 | 0.3 | <= 0.4 | PASS |" in md
    assert "| 5a | probe vs naive |  | - | - | skipped |" in md
    assert "- **1a** x \\| y" not in md and "- **1a** x | y" in md and "- **5a** not importable" in md
    assert "| 1a | n=8 | 2 s [1 s, 3 s] | 2 s [1 s, 3 s] | 3 |" in md
    assert f"{env['torch_threads']} threads" in md and "load average" in md
    path = tmp_path / "m.json"
    report.write_json(path, rows, env)
    data = json.loads(path.read_text())
    assert data["environment"]["versions"]["torch"] == torch.__version__
    assert [r["status"] for r in data["results"]] == ["PASS", "skipped"]
    assert not list(tmp_path.glob("*.tmp"))
    assert path.stat().st_mode & 0o777 == 0o644
    text = report.text_table(rows)
    assert "rank_report vs numpy" in text and "PASS" in text
    summary = report.summary_markdown(rows, env)
    assert "| 1a | rank_report vs numpy | n=8 | 0.3 | <= 0.4 | PASS |" in summary
    assert "Timings" not in summary


def test_row_ids_letter_rows_within_items():
    rows = [harness.Result(key=str(i), item=item, ours="a", baseline="b", config={})
            for i, item in enumerate([1, 1, 2, 3, 3, 3])]
    assert report.row_ids(rows) == ["1a", "1b", "2a", "3a", "3b", "3c"]
    assert report._config_text({"batch": 4, "d_model": 8, "n_heads": 2, "device": "cpu"}) == "B=4, d=8, h=2"


def test_full_run_writes_the_book_files(monkeypatch, tmp_path):
    rows, _ = _rows()
    points = [{"n": n, "method": m, "seconds_per_matrix": 1e-6 * n, "min_s": 1e-6 * n, "max_s": 1e-6 * n}
              for n in (64, 128) for m in ("svd", "hardmax")]
    scaling = harness.Result(key="s", item=2, ours="svd", baseline="hardmax", config={},
                             extra={"points": points, "slopes": {"svd": 1.0, "hardmax": 1.0}, "slope_from_n": 64})
    threads = torch.get_num_threads()
    monkeypatch.setattr(run, "run_items", lambda args, settings, device: rows + [scaling])
    try:
        assert run.main(["--threads", "1", "--out", str(tmp_path)]) == 0
    finally:
        torch.set_num_threads(threads)
    machine = harness.machine_name(torch.device("cpu"))
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {f"{machine}.json", f"{machine}.md", "latest.json", "latest.md", "summary.md", "scaling.png"}
    assert (tmp_path / "latest.md").read_text() == (tmp_path / f"{machine}.md").read_text()
    assert json.loads((tmp_path / f"{machine}.json").read_text())["environment"]["mode"] == "full"
    # --render rebuilds the same tables from the results file alone.
    again = tmp_path / "again"
    assert run.main(["--render", str(tmp_path / f"{machine}.json"), "--out", str(again)]) == 0
    assert (again / "latest.md").read_text() == (tmp_path / "latest.md").read_text()
    assert (again / "scaling.png").exists()
    assert (again / "latest.json").read_text() == (tmp_path / "latest.json").read_text()
    assert run.main(["--render", str(tmp_path / "missing.json"), "--out", str(again)]) == 2


def test_scaling_plot_writes_png(tmp_path):
    points = [{"n": n, "method": m, "seconds_per_matrix": c * n ** k, "min_s": 0.9 * c * n ** k,
               "max_s": 1.1 * c * n ** k}
              for n in (64, 128, 256) for m, c, k in (("svd", 1e-9, 3), ("hardmax", 1e-8, 2))]
    row = harness.Result(key="s", item=2, ours="svd", baseline="hardmax", config={},
                         extra={"points": points, "slopes": {"svd": 3.0, "hardmax": 2.0}, "slope_from_n": 64})
    report.scaling_plot(tmp_path / "s.png", row)
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("check, status, code", [(True, "FAIL", 1), (False, "FAIL", 0), (True, "PASS", 0),
                                                 (True, "error", 1), (True, "skipped", 0)])
def test_run_exit_code(monkeypatch, tmp_path, capsys, check, status, code):
    row = harness.Result(key="k", item=3, ours="a", baseline="b", config={}, ratio=1.0, target=1.0,
                         status=status)
    threads = torch.get_num_threads()
    monkeypatch.setattr(run, "run_items", lambda args, settings, device: [row])
    argv = ["--quick", "--threads", "1", "--out", str(tmp_path)] + (["--check"] if check else [])
    try:
        got = run.main(argv)
    finally:
        torch.set_num_threads(threads)  # main sets the process's thread count
    assert got == code
    out = capsys.readouterr().out
    assert "1 threads" in out and status in out
    saved = json.loads(next(tmp_path.glob("*-quick.json")).read_text())
    assert saved["environment"]["mode"] == "quick" and saved["environment"]["torch_threads"] == 1
    assert not (tmp_path / "latest.md").exists()  # quick runs never replace the book's table


def test_run_rejects_bad_threads():
    with pytest.raises(SystemExit):
        run.parse_args(["--threads", "0"])


def test_settings_cover_every_item():
    keys = {"timing", "numpy_timing", "rank_shapes", "scaling_ns", "scaling_timing", "svd_elements",
            "hardmax_elements", "mha", "train", "train_timing", "probe_n", "probe_timing", "startup_timing",
            "engine", "engine_timing", "engine_info", "seeds", "seeds_timing"}
    for mode in run.SETTINGS.values():
        assert set(mode) == keys
        timings = [t for k, t in mode.items() if k.endswith("timing")]
        timings += [t for k, t in (mode["engine_info"] or {}).items() if k.endswith("timing")]
        assert all(t["warmup"] >= 1 and t["reps"] >= 3 for t in timings)
    assert run.SETTINGS["quick"]["engine_info"] is None  # compiling alone takes longer than quick mode
    assert math.isclose(min(run.SETTINGS["full"]["scaling_ns"]), 64)
    assert max(run.SETTINGS["full"]["scaling_ns"]) == 2048


TINY = dict(warmup=1, reps=3)


def test_bench_functions_run_on_tiny_sizes():
    """Every item's code path, at sizes that take milliseconds; statuses, not timings, are checked."""
    cpu = torch.device("cpu")
    rows = bench_rank.bench_rank_report([(4, 8)], device=cpu, timing=TINY, numpy_timing=TINY)
    assert [r.key for r in rows] == ["rank_report_vs_numpy_4x8x8", "rank_report_vs_svdvals_4x8x8"]
    assert all(r.status in ("PASS", "FAIL") and r.ratio > 0 for r in rows)
    scaling = bench_rank.bench_scaling([8, 16], device=cpu, timing=TINY, svd_elements=512, hardmax_elements=1024)
    assert {(p["n"], p["method"]) for p in scaling.extra["points"]} == {
        (n, m) for n in (8, 16) for m in (bench_rank.SVD_METHOD, bench_rank.HARDMAX_METHOD)}
    assert set(scaling.extra["slopes"]) == {bench_rank.SVD_METHOD, bench_rank.HARDMAX_METHOD}
    assert scaling.extra["slope_from_n"] == 8
    with pytest.raises(ValueError, match="two sizes"):
        bench_rank.bench_scaling([8], device=cpu, timing=TINY)
    mha = bench_attention.bench_mha([dict(batch=2, n=8, d_model=16, n_heads=4)], device=cpu, timing=TINY)
    assert [r.target for r in mha] == [1.0, 1.4, None]
    assert mha[2].extra["flop_ratio"] == pytest.approx(4 * 8 / 16)
    cfg = dict(vocab=50, d_model=16, layers=1, heads=2, d_ff=32, n=8, batch=2, dropout=0.1)
    row = bench_training.bench_training_step(cfg, device=cpu, timing=TINY)
    losses = row.extra["losses"]
    assert row.status in ("PASS", "FAIL") and 0.5 < losses["ours"] / losses["bert"] < 2
    assert abs(losses["ours"] - math.log(50)) < 1.0


@pytest.mark.slow
def test_startup_item_runs_fresh_processes_and_checks_heavy_imports(monkeypatch):
    import bench_startup

    rows = bench_startup.bench_startup(timing=dict(warmup=1, reps=3))
    assert [r.key for r in rows] == ["startup_list", "startup_help"]
    assert all(r.item == 6 and r.target == 1.5 and r.ratio > 0 for r in rows)  # no absolute times
    assert bench_startup.heavy_imports("list") == [] and bench_startup.heavy_imports("--help") == []


def _engine_cfg(docs, **kw):
    """A TrainConfig dict in the shape of chapter 04's runs (pre-LN, untied head), tiny."""
    from lowrank.train import TrainConfig

    base = dict(corpus=str(docs), vocab_size=300, seq_len=16, d_model=16, n_layers=1, n_heads=4, norm="pre",
                tie_embeddings=False, init="scaled", batch_size=4, steps=4, warmup_steps=2, lr=0.01,
                eval_interval=2, eval_tokens=64, test_tokens=128, checkpoint_every=2, num_threads=1,
                device="cpu")
    return TrainConfig(**{**base, **kw}).to_dict()


@pytest.mark.parametrize("name, head_dim", [("standard h = 32", None), ("fixed h = 32", 16)])
def test_minimal_model_has_the_engine_models_shape(name, head_dim):
    from lowrank.experiments.head_size_training import budget
    from lowrank.layers.models import CausalLM, count_parameters
    from lowrank.train import TrainConfig

    cfg = budget._config(name, steps=10, seed=0, lr=0.01)
    assert cfg["head_dim"] == head_dim
    model = bench_engine.minimal_model(cfg, 512)
    d, h, dh = 64, 32, head_dim or 2
    block = model.blocks[0]
    assert len(model.blocks) == 2 and block.qkv.weight.shape == (3 * h * dh, d)
    assert block.proj.weight.shape == (d, h * dh) and block.mlp[0].weight.shape == (4 * d, d)
    assert model.head.weight.shape == (512, d) and model.head.weight is not model.tok.weight
    ours = CausalLM(TrainConfig.from_dict(cfg).model_config(vocab_size=512))
    assert count_parameters(model) == count_parameters(ours)
    ids = torch.randint(512, (2, 64))
    logits = model(ids)
    assert logits.shape == (2, 64, 512)
    changed = ids.clone()
    changed[:, 40:] = (changed[:, 40:] + 1) % 512
    torch.testing.assert_close(model(changed)[:, :40], logits[:, :40])  # causal


def test_minimal_model_refuses_another_shape():
    from lowrank.experiments.head_size_training import budget

    cfg = budget._config("standard h = 32", steps=10, seed=0, lr=0.01)
    for change in (dict(norm="post"), dict(tie_embeddings=True), dict(d_ff=32)):
        with pytest.raises(ValueError, match="pre-LN"):
            bench_engine.minimal_model({**cfg, **change}, 512)


def test_warmup_cosine_is_the_engines_rate():
    from lowrank.train import TrainConfig, lr_at

    cfg = TrainConfig(lr=0.01, warmup_steps=100, steps=300, min_lr_ratio=0.1)
    assert [bench_engine.warmup_cosine(s, cfg.to_dict()) for s in range(1, 301)] == pytest.approx(
        [lr_at(s, cfg) for s in range(1, 301)], rel=1e-12)


def test_mean_loss_reads_the_engines_number_of_windows():
    calls = []

    def model(ids):
        calls.append(ids.shape)
        return torch.zeros(*ids.shape, 10)

    model.eval = model.train = lambda: None
    stream = torch.arange(1000, dtype=torch.int32) % 10
    loss = bench_engine.mean_loss(model, stream, 160, n=16, batch=4)
    assert loss == pytest.approx(math.log(10)) and [c[0] for c in calls] == [4, 4, 2]
    assert all(c[1] == 16 for c in calls)


def test_loss_check():
    assert bench_engine.loss_check(3.0, 3.2) is None
    assert "differ in magnitude" in bench_engine.loss_check(3.0, 6.0)
    assert bench_engine.loss_check(3.0, float("nan")) is not None


def test_engine_row_ratio_tokens_per_s_and_loss_check(clock, tiny_corpus, monkeypatch):
    cfg = _engine_cfg(tiny_corpus)
    losses = {"ours": 3.0, "baseline": 3.1}

    def fake_engine(c):
        clock.now += 2.0
        return {"val_loss": losses["ours"], "test_loss": 3.0, "tokens_per_s": 1.0}

    def fake_minimal(c, tokens):
        clock.now += 1.0
        return {"val_loss": losses["baseline"], "test_loss": 3.0, "train_loss": 3.0}

    monkeypatch.setattr(bench_engine, "engine_run", fake_engine)
    monkeypatch.setattr(bench_engine, "minimal_run", fake_minimal)
    row = bench_engine.bench_engine_row("tiny", 4, timing=TINY, cfg=cfg)
    assert row.item == 7 and row.ratio == pytest.approx(2.0) and row.target == 1.10 and row.status == "FAIL"
    assert row.extra["tokens_per_s"] == pytest.approx({"ours": 4 * 4 * 16 / 2.0, "baseline": 4 * 4 * 16 / 1.0})
    assert "tokens/s" in row.note and row.config["head_dim"] == 4
    losses["baseline"] = 9.0
    bad = bench_engine.bench_engine_row("tiny", 4, timing=TINY, cfg=cfg)
    assert bad.status == "error" and "differ in magnitude" in bad.note
    assert report.failed([bad]) == [bad]


def test_engine_row_runs_both_loops_on_a_tiny_corpus(tiny_corpus):
    cfg = _engine_cfg(tiny_corpus)
    threads = torch.get_num_threads()
    row = bench_engine.bench_engine_row("tiny", 4, timing=TINY, cfg=cfg)
    assert torch.get_num_threads() == threads  # train() set one thread for its runs only
    assert row.status in ("PASS", "FAIL"), row.note
    assert set(row.extra["tokens_per_s"]) == {"ours", "baseline"} and row.extra["engine_train_tokens_per_s"] > 0
    assert all(math.isfinite(v) for v in row.extra["val_loss"].values())


def test_compile_row_reports_compile_time_and_a_failed_compile(tiny_corpus, monkeypatch):
    cfg = _engine_cfg(tiny_corpus)
    monkeypatch.setattr(bench_engine.torch, "compile", lambda model, **kw: model)
    row = bench_engine.bench_compile("tiny", timing=TINY, cfg=cfg)
    assert row.target is None and row.status == "info" and "compiling took" in row.note
    assert set(row.extra) == {"compile_s", "first_step_s"}

    def no_compiler(model, **kw):
        def fail(*a, **k):
            raise RuntimeError("no C++ compiler")
        return fail

    monkeypatch.setattr(bench_engine.torch, "compile", no_compiler)
    row = bench_engine.bench_compile("tiny", timing=TINY, cfg=cfg)
    assert row.status == "skipped" and "no C++ compiler" in row.note


@pytest.mark.slow
def test_processes_row_runs_three_workers(tiny_corpus):
    row = bench_engine.bench_processes("tiny", 4, timing=TINY, cfg=_engine_cfg(tiny_corpus))
    assert row.target is None and row.ratio > 0
    assert set(row.extra["tokens_per_s"]) == {"processes", "threads"}


def test_a_run_of_some_items_keeps_the_other_rows(monkeypatch, tmp_path):
    rows, _ = _rows()
    threads = torch.get_num_threads()
    monkeypatch.setattr(run, "run_items", lambda args, settings, device: rows)
    new = harness.Result(key="e", item=7, ours="train", baseline="minimal", config={}, ratio=1.0, target=1.1,
                         status="PASS")
    try:
        assert run.main(["--threads", "1", "--out", str(tmp_path)]) == 0
        first = json.loads((tmp_path / "latest.json").read_text())
        monkeypatch.setattr(run, "run_items", lambda args, settings, device: [new])
        assert run.main(["--threads", "1", "--out", str(tmp_path), "--items", "7"]) == 0
    finally:
        torch.set_num_threads(threads)
    machine = harness.machine_name(torch.device("cpu"))
    for name in ("latest.json", f"{machine}.json"):
        data = json.loads((tmp_path / name).read_text())
        assert [r["key"] for r in data["results"]] == ["a", "b", "e"]
        earlier = data["environment"]["earlier_runs"]
        assert [run_["items"] for run_ in earlier] == [[1, 5]]
        assert earlier[0]["date"] == first["environment"]["date"]
    md = (tmp_path / "latest.md").read_text()
    assert "Items 1, 5 are from the run of" in md and "| 7a | train vs minimal |" in md
    # Measuring item 1 again leaves only item 5 to the first run.
    monkeypatch.setattr(run, "run_items", lambda args, settings, device: rows[:1])
    try:
        assert run.main(["--threads", "1", "--out", str(tmp_path), "--items", "1"]) == 0
    finally:
        torch.set_num_threads(threads)
    data = json.loads((tmp_path / "latest.json").read_text())
    assert [r["key"] for r in data["results"]] == ["a", "b", "e"]
    assert [run_["items"] for run_ in data["environment"]["earlier_runs"]] == [[5], [7]]


def _tiny_seeds_config() -> dict:
    cfg = bench_engine.budget_config("standard h = 4", 3)
    return {**cfg, "vocab_size": 50, "seq_len": 8, "batch_size": 2, "d_model": 16, "n_heads": 2,
            "grad_clip": 0.05}


def test_stacked_seeds_train_as_their_separate_runs():
    row = bench_seeds.bench_seeds_row("standard h = 4", 3, 3, timing=TINY, cfg=_tiny_seeds_config())
    assert row.item == 8 and row.target is None and row.status == "info" and row.ratio > 0
    assert row.config["seeds"] == 3 and len(row.extra["losses"]["stacked"]) == 3
    assert row.extra["largest_loss_difference"] <= bench_seeds.LOSS_TOLERANCE
    assert "times as long" in row.note


class _SameWindows(bench_seeds.Stacked):
    """A stacked step that feeds every seed the first seed's windows."""

    def step(self, windows):
        super().step(windows[:1].expand_as(windows))


class _SeedsReversed(bench_seeds.Stacked):
    """Weights stacked in the reverse order of the seeds they are compared with."""

    def __init__(self, models, cfg):
        super().__init__(models[::-1], cfg)


@pytest.mark.parametrize("broken", [_SameWindows, _SeedsReversed])
def test_stacked_seeds_that_train_differently_are_an_error(monkeypatch, broken):
    monkeypatch.setattr(bench_seeds, "Stacked", broken)
    row = bench_seeds.bench_seeds_row("standard h = 4", 3, 3, timing=TINY, cfg=_tiny_seeds_config())
    assert row.status == "error" and "trained differently" in row.note
