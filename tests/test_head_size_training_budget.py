"""Chapter 04's budget store: its grids, the order and resumption of :func:`budget.run`, the rate
read from the learning-rate check, and the paired comparisons, on a store filled by a fake trainer."""
import json
import math

import pytest

from lowrank.experiments.head_size_training import budget as B
from lowrank.sweep import ResultStore, sweep
from lowrank.train import run_key


def _fake_loss(cfg: dict) -> float:
    """A loss with a known structure: the fixed head size pays 0.2 nats at 1,000 steps, halving with
    every doubling; lr 0.01 is best for everyone; the seed adds a small offset."""
    fixed = cfg["head_dim"] is not None
    loss = 4.0 - 0.1 * math.log2(cfg["steps"] / 1000) + 0.1 * abs(math.log10(cfg["lr"] / 0.01))
    loss += (0.2 * 1000 / cfg["steps"] if fixed else 0.0) + 0.001 * cfg["seed"] * (1 + fixed)
    return loss - 0.01 * (cfg["d_model"] == 112)


def _fake_run(cfg, *, run_dir):
    v = _fake_loss(cfg)
    return {"val_loss": v, "test_loss": v + 0.01, "n_params": 1000 if cfg["d_model"] == 64 else 1050,
            "train_wall_s": 1.0, "val_curve": [[cfg["steps"], v]], "finished": True}


@pytest.fixture
def fake_sweep(monkeypatch):
    calls = []

    def fake(configs, **kw):
        configs = list(configs)
        calls.append([run_key(c) for c in configs])
        return sweep(configs, run_fn=_fake_run, **kw)

    monkeypatch.setattr(B, "sweep", fake)
    return calls


def test_grids_have_the_stated_sizes_and_share_the_seed0_h32_runs():
    assert len(B.lr_check_grid()) == 6 and len(B.budget_grid(0.01)) == 54 and len(B.factorial_grid()) == 24
    check = {run_key(c) for _, c in B.lr_check_grid()}
    shared = check & {run_key(c) for _, c in B.budget_grid(0.01)}
    assert len(shared) == 2  # seed 0, h = 32, both families, 1,000 steps, lr 0.01
    steps = [c["steps"] for _, c in B.budget_grid(0.01)]
    assert steps == sorted(steps)  # smallest budget first
    chars = [c for lab, c in B.factorial_grid() if lab["tokenizer"] == "characters"]
    assert {c["vocab_size"] for c in chars} == {260} and {c["lr"] for _, c in B.factorial_grid()} == {B.FACTORIAL_LR}
    assert {c["init"] for _, c in B.factorial_grid() if "init" in c} == {"scaled"}  # 'bert' is the default, left out


def test_run_trains_in_order_resumes_and_reads_back(tmp_path, fake_sweep):
    store = tmp_path / "budget.jsonl"
    B.run(store)
    assert [len(c) for c in fake_sweep] == [6, 54, 24]
    assert json.loads(B.manifest_path(store).read_text())["budget_steps"] == [1000, 2000, 4000]
    n = len(ResultStore(store).records())
    assert n == 6 + 54 - 2 + 24
    B.run(store)  # resumes: nothing new
    assert len(ResultStore(store).records()) == n
    got = B.read(store)
    assert got["lr"] == 0.01 and len(got["budget"]) == 54 and len(got["factorial"]) == 24
    assert got["n_records"] == n
    comps = B.comparisons(got["budget"])
    gap = comps[(comps.row == "gap") & (comps.split == "validation")].set_index("steps")
    assert gap.loc[1000, "diff"] == pytest.approx(-0.2 - 0.001, abs=1e-9)
    assert gap.loc[4000, "diff"] == pytest.approx(-0.05 - 0.001, abs=1e-9)
    assert gap.loc[4000, "change_diff"] == pytest.approx(0.05, abs=1e-9) and gap.loc[4000, "change_n"] == 3
    assert math.isnan(gap.loc[1000, "change_diff"]) and gap.loc[4000, "runs"] == 6
    eff = B.factorial_effects(got["factorial"]).set_index(["effect", "split"])
    assert eff.loc[("interaction", "validation"), "diff"] == pytest.approx(0.0, abs=1e-9)
    assert eff.loc[("characters, bert init", "test"), "n"] == 3


def test_a_partial_store_reads_as_partial(tmp_path, fake_sweep):
    store = tmp_path / "budget.jsonl"
    got = B.read(store)
    assert got["lr"] is None and got["budget"].empty and got["n_records"] == 0
    for _, c in B.lr_check_grid()[:3]:
        ResultStore(store).append({"key": run_key(c), "config": c, "metrics": _fake_run(c, run_dir=None),
                                   "wall_s": 1.0})
    got = B.read(store)
    assert got["lr"] is None and len(got["lr_check"]) == 3


def test_bad_command_line_exits_2(tmp_path, capsys):
    assert B.main(["--store", str(tmp_path / "x.txt")]) == 2
    assert B.main(["--store", str(tmp_path / "x.jsonl"), "--shard", "3/2"]) == 2
    assert "shard" in capsys.readouterr().err


def test_figures_and_tables_render_full_and_empty_stores(tmp_path, fake_sweep):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from lowrank.experiments.head_size_training import figures as F

    empty = B.read(tmp_path / "none.jsonl")
    store = tmp_path / "budget.jsonl"
    B.run(store)
    full = B.read(store)
    for got in (empty, full):
        comps, eff = B.comparisons(got["budget"]), B.factorial_effects(got["factorial"])
        fig, axes = plt.subplots(1, 4)
        F.plot_budget_gaps(axes, comps)
        fig2, (a, b) = plt.subplots(1, 2)
        F.plot_lr_check(a, got["lr_check"], got["lr"])
        F.plot_factorial(b, eff)
        plt.close("all")
        t = F.budget_display(comps)
        assert len(t) == 12 and list(t["steps"][:3]) == ["1,000", "2,000", "4,000"]
        assert len(F.factorial_display(eff)) == 7
    assert F.budget_display(B.comparisons(empty["budget"]))["validation (nats, 95 % interval)"].eq("not stored yet").all()
    assert F.budget_display(B.comparisons(full["budget"]))["runs stored"].eq("6 of 6").all()
    lr = F.lr_check_display(full["lr_check"], full["lr_table"])
    assert lr["chosen"].eq("yes").sum() == 2 and lr["regret (nats)"].min() == 0
    assert F.lr_check_display(empty["lr_check"], None).shape == (1, 1)
