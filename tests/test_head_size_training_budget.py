"""Chapter 04's budget store: its grids, the order and resumption of :func:`budget.run`, the rate
read from the learning-rate check, and the paired comparisons, on a store filled by a fake trainer."""
import json
import math

import pytest

from lowrank.experiments.head_size_training import budget as B
from lowrank.stores.sweep import ResultStore, sweep
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


# The grids the power rule added: six models x 6 more seeds; the trio at 8,000 steps, three Table 2(B)
# models and four Fig. 4 models, each for POWER_SEEDS seeds.
ADDED = [6 * (B.POWER_SEEDS - 3), 3 * B.POWER_SEEDS, 3 * B.POWER_SEEDS, 4 * B.POWER_SEEDS]
# The fair design's sweeps: 11 models x 3 rates x 3 seeds; the grid again with any edge rates; the judged
# rows (10 models x 2 budgets x POWER_SEEDS seeds) at their first seeds, then with the seeds their spreads ask.
FAIR = [99, 99, 10 * 2 * B.POWER_SEEDS, 10 * 2 * B.POWER_SEEDS]


def test_run_trains_in_order_resumes_and_reads_back(tmp_path, fake_sweep):
    store = tmp_path / "budget.jsonl"
    B.run(store)
    # the fake's seed offsets are small: no row's spread asks for more than POWER_SEEDS, so the re-estimate is empty
    # then the fair design: the rate grid, its edges (none: 0.01 wins everywhere), the judged rows twice
    assert [len(c) for c in fake_sweep] == [6, 54, 24, *ADDED, 0, *FAIR]
    man = json.loads(B.manifest_path(store).read_text())
    assert man["budget_steps"] == [1000, 2000, 4000] and man["extended_steps"] == 8000
    assert man["fair"]["lr_grid_rates"] == [0.005, 0.01, 0.02] and man["fair"]["judged_steps"] == [4000, 8000]
    n = len(ResultStore(store).records())
    # new fair runs: the grid's two new rates for 11 models x 3 seeds, and 8,000 steps for the 7 models
    # of the rows that were compared at 4,000 steps only
    assert n == 6 + 54 - 2 + 24 + sum(ADDED) + 66 + 63
    B.run(store)  # resumes: nothing new
    assert len(ResultStore(store).records()) == n
    got = B.read(store)
    assert got["lr"] == 0.01 and len(got["budget"]) == 54 + sum(ADDED) and len(got["factorial"]) == 24
    assert got["n_records"] == n
    comps = B.comparisons(got["budget"])
    gap = comps[(comps.row == "gap") & (comps.split == "validation")].set_index("steps")
    assert gap.loc[1000, "diff"] == pytest.approx(-0.2 - 0.001, abs=1e-9)
    assert gap.loc[4000, "diff"] == pytest.approx(-0.05 - 0.001 * (B.POWER_SEEDS - 1) / 2, abs=1e-9)
    assert gap.loc[4000, "change_diff"] == pytest.approx(0.05, abs=1e-9) and gap.loc[4000, "change_n"] == 3
    assert math.isnan(gap.loc[1000, "change_diff"]) and gap.loc[4000, "runs"] == gap.loc[4000, "planned"] == 18
    assert gap.loc[8000, "n"] == B.POWER_SEEDS and gap.loc[8000, "change_n"] == B.POWER_SEEDS
    assert set(comps[comps.row == "pastn"].steps) == {4000}
    eff = B.factorial_effects(got["factorial"]).set_index(["effect", "split"])
    assert eff.loc[("interaction", "validation"), "diff"] == pytest.approx(0.0, abs=1e-9)
    assert eff.loc[("characters, bert init", "test"), "n"] == 3
    # what each effect compares travels as columns, never to be read back out of its label
    tok = eff.loc[("tokenizer: characters minus BPE 512", "validation")]
    assert (tok.factor, tok.level_a, tok.level_b) == ("tokenizer", "characters", "BPE 512")
    assert eff.loc[("interaction", "test"), "level_a"] == "" and set(eff.factor) == {
        "cell", "tokenizer", "initialisation", "interaction"}


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


def test_the_command_says_what_is_left_then_each_run_it_stores(tmp_path, fake_sweep, capsys):
    """A store grown in the background says in its log how far it is and what each stored run was."""
    store = tmp_path / "budget.jsonl"
    B.run(store)
    lines = store.read_text().splitlines()
    total = B.read(store)["planned"]["distinct"]
    assert B.read(store)["n_records"] == total == len(lines)
    store.write_text("\n".join(lines[:-2]) + "\n")
    gone = [json.loads(line) for line in lines[-2:]]
    capsys.readouterr()
    assert B.main(["--store", str(store), "--workers", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3, out
    assert out[0][5:] == (f" {total - 2} of {total} planned runs stored; 2 left, about 0.0 CPU-hours (0.0 hours on 2 "
                          "workers) at each model's measured time per step")
    for line in out[1:]:
        assert " stored " in line and ", seed " in line and ", rate " in line and " steps in 0 min; " in line
    stored = sorted(line.split(" stored ")[1].split(" in ")[0] for line in out[1:])
    labels = {run_key(c): lab["model"] for g in (B.fair.lr_grid(), *B.fair.fair_grids(B._latest(store))[1:])
              for lab, c in g}
    expect = sorted(f"{labels[r['key']]}, seed {r['config']['seed']}, rate {r['config']['lr']:g}, "
                    f"{r['config']['steps']:,} steps" for r in gone)
    assert stored == expect
    assert out[-1].endswith(f"; {total} of {total} planned runs stored; none left")


def test_a_new_store_says_that_more_runs_are_planned_once_the_rates_are_chosen(tmp_path):
    line = B.status_line(tmp_path / "new.jsonl", workers=2)
    total = B.read(tmp_path / "new.jsonl")["planned"]["distinct"]
    assert line.startswith(f"0 of {total} planned runs stored; {total} left, about ")
    assert line.endswith(" on 2 workers) at each model's measured time per step; more are planned once every "
                         "model's learning rate is chosen")


def test_figures_and_tables_render_full_and_empty_stores(tmp_path, fake_sweep):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from lowrank.book import training_figures as TF
    from lowrank.experiments.head_size_training import plots
    from lowrank.experiments.head_size_training import tables as T

    empty = B.read(tmp_path / "none.jsonl")
    store = tmp_path / "budget.jsonl"
    B.run(store)
    full = B.read(store)
    for got in (empty, full):
        comps, eff = B.comparisons(got["budget"]), B.factorial_effects(got["factorial"])
        fig, axes = plt.subplots(1, len(B.ROWS))
        TF.plot_budget_gaps(axes, **plots.budget_gaps(comps))
        fig2, (a, b, c) = plt.subplots(1, 3)
        TF.plot_lr_check(a, **plots.lr_check(got["lr_check"], got["lr"]))
        TF.plot_factorial(b, eff)
        TF.plot_one_budget(c, **plots.one_budget(comps))
        plt.close("all")
        t = T.budget_display(comps)
        assert len(t) == sum(len(v) for v in B.ROW_STEPS.values())
        assert list(t["steps"][:4]) == ["1,000", "2,000", "4,000", "8,000"]
        assert len(T.factorial_display(eff)) == 7
    assert T.budget_display(B.comparisons(empty["budget"]))["validation (nats, 95 % interval)"].eq("not stored yet").all()
    shown = T.budget_display(B.comparisons(full["budget"]))["runs stored"]
    assert shown.isin(["6 of 6", f"{2 * B.POWER_SEEDS} of {2 * B.POWER_SEEDS}"]).all()
    lr = T.lr_check_display(full["lr_check"], full["lr_table"])
    assert lr["chosen"].eq("yes").sum() == 2 and lr["regret (nats)"].min() == 0
    assert T.lr_check_display(empty["lr_check"], None).shape == (1, 1)


def test_power_seeds_follow_from_the_spread_the_committed_store_measured_first():
    """POWER_SEEDS is required_seeds of the largest paired standard deviation of the four original
    rows at 4,000 steps over the seeds the store held before the power rule (0, 1, 2)."""
    from lowrank.experiments.head_size_training.rules import required_seeds
    from lowrank.core.files import BOOK_ROOT

    runs = B.read(BOOK_ROOT / "data/results/04_head_size_budget.jsonl")["budget"]
    sd = max(B.planning_sd(runs, row, seeds=B.SEEDS, steps=B.BUDGET_STEPS[-1])
             for row in ("gap", "match", "stdheads", "fixedheads"))
    assert sd == pytest.approx(0.0385, abs=5e-5)
    assert required_seeds(sd) == B.POWER_SEEDS == 9


def test_required_seeds_reach_the_margin_and_stop_at_the_cap():
    from lowrank.experiments.head_size_training.rules import MARGIN, MAX_SEEDS, POWER_SEEDS, required_seeds
    from lowrank.experiments.shared.intervals import t_quantile

    assert required_seeds(float("nan")) == required_seeds(0.0) == POWER_SEEDS
    for sd in (0.01, 0.04, 0.045, 0.05):
        n = required_seeds(sd)
        assert t_quantile(0.975, n - 1) * sd / math.sqrt(n) <= MARGIN
        if n > POWER_SEEDS:
            assert t_quantile(0.975, n - 2) * sd / math.sqrt(n - 1) > MARGIN  # the smallest such n
    assert required_seeds(0.04) == 10 and required_seeds(1.0) == MAX_SEEDS
    assert [required_seeds(x) for x in (0.03, 0.04, 0.05, 0.06)] == sorted(required_seeds(x) for x in (0.03, 0.04, 0.05, 0.06))


def test_a_row_whose_own_spread_is_larger_asks_for_more_seeds_from_the_spread_alone(tmp_path, monkeypatch):
    """A fake whose Table 2(B) d_p = 128 model scatters by 0.1 nats from seed to seed: after the first
    POWER_SEEDS seeds, the pastn row asks for more, the other rows do not; shifting every loss of
    that model (the mean) changes nothing."""
    def scattered(shift):
        def run(cfg, *, run_dir):
            out = _fake_run(cfg, run_dir=run_dir)
            if cfg["head_dim"] == 128:
                for k in ("val_loss", "test_loss"):
                    out[k] += shift + (0.1 if cfg["seed"] % 2 else -0.1)
            return out
        return run

    grids = {}
    for shift in (0.0, 0.5):
        monkeypatch.setattr(B, "sweep", lambda configs, _s=shift, **kw: sweep(list(configs), run_fn=scattered(_s), **kw))
        store = tmp_path / f"budget{shift}.jsonl"
        B.run(store)
        runs = B.read(store)["budget"]
        grids[shift] = {(lab["model"], c["seed"]) for lab, c in B.reestimate_grid(0.01, runs)}
        assert B.row_seeds(runs, "pastn") > B.POWER_SEEDS and B.row_seeds(runs, "gap") == B.POWER_SEEDS
        got = B.read(store)
        assert len(got["budget"]) == got["planned"]["budget"]  # the re-estimated seeds were trained
    assert grids[0.0] == grids[0.5] and {m for m, _ in grids[0.0]} == {"fixed h = 4, d_p = 64", "fixed h = 4, d_p = 128"}


def _fair_fake(best: dict[str, float]):
    """A fake trainer whose model ``m`` does best at rate ``best[m]`` (0.01 for the others), a factor
    2 in rate costing 0.05 nats; d_p = 64 is 0.02 nats better than the standard h = 4 model."""
    def run(cfg, *, run_dir):
        out = _fake_run(cfg, run_dir=run_dir)
        name = next(m[0] for m in B.ALL_MODELS if (m[2], m[3], m[4]) == (cfg["n_heads"], cfg["head_dim"], cfg["d_model"]))
        shift = 0.05 * abs(math.log2(cfg["lr"] / best.get(name, 0.01))) - 0.1 * abs(math.log10(cfg["lr"] / 0.01))
        shift -= 0.02 * (cfg["head_dim"] == 64)
        for k in ("val_loss", "test_loss"):
            out[k] += shift
        return out
    return run


def test_each_model_takes_its_own_rate_and_a_winning_end_gets_one_rate_beyond(tmp_path, monkeypatch):
    from lowrank.experiments.head_size_training import fair as F

    best = {"fixed h = 4, d_p = 64": 0.02, "standard h = 4": 0.0025, "fixed h = 4, d_p = 128": 0.005}
    monkeypatch.setattr(B, "sweep", lambda configs, **kw: sweep(list(configs), run_fn=_fair_fake(best), **kw))
    store = tmp_path / "budget.jsonl"
    B.run(store)
    f = B.read(store)["fair"]
    rates = f["rates"]
    # 0.02 wins the grid, 0.04 is tried and loses; 0.005 wins, 0.0025 is tried and wins (still the end)
    assert rates["fixed h = 4, d_p = 64"].rate == 0.02 and rates["fixed h = 4, d_p = 64"].rates == (0.005, 0.01, 0.02, 0.04)
    assert not rates["fixed h = 4, d_p = 64"].at_edge
    assert rates["standard h = 4"].rate == 0.0025 and rates["standard h = 4"].at_edge
    assert rates["fixed h = 4, d_p = 128"].rate == 0.005 and rates["standard h = 32"].rate == 0.01
    assert rates["fixed h = 4, d_p = 128"].rates == (0.0025, 0.005, 0.01, 0.02)
    # the capacity row compares each model at its own rate, at both budgets, paired by seed
    c = f["judged_comparisons"]
    cap = c[(c.row == "capacity") & (c.split == "validation")].set_index("steps")
    assert list(cap.index) == [4000, 8000] and (cap.lr_a == 0.0025).all() and (cap.lr_b == 0.02).all()
    assert (cap.n == B.POWER_SEEDS).all() and cap.loc[8000, "change_n"] == B.POWER_SEEDS
    assert (cap.runs == cap.planned).all()
    # both at their best rates: the fake's fixed-head cost (0.2 nats x 1,000 / steps) less d_p = 64's 0.02, and
    # the seed offsets (0.001 seed more for the fixed head, mean seed 4); at a shared 0.01 it would be 0.05 nats lower
    assert cap.loc[4000, "diff"] == pytest.approx(-(0.05 - 0.02) - 0.004, abs=1e-9)
    assert cap.loc[8000, "diff"] == pytest.approx(-(0.025 - 0.02) - 0.004, abs=1e-9)
    # the grid never reads the test split: a fake whose test losses favour another rate changes nothing
    assert F.select_rates(f["lr_grid"].assign(test_loss=0.0))["standard h = 4"].rate == 0.0025


def test_rates_wait_for_every_grid_run(tmp_path):
    from lowrank.experiments.head_size_training import fair as F

    store = tmp_path / "budget.jsonl"
    for lab, c in F.lr_grid()[:8]:
        ResultStore(store).append({"key": run_key(c), "config": c, "metrics": _fake_run(c, run_dir=None),
                                   "wall_s": 1.0})
    f = B.read(store)["fair"]
    first = f["rates"][F.LR_GRID_MODELS[0]]
    assert first.rate is None and (first.stored, first.planned) == (8, 9)
    assert f["judged_planned"] == 0 and f["judged_comparisons"]["n"].eq(0).all()


def test_the_fair_figure_and_tables_render_empty_partial_and_full_stores(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from lowrank.book import training_figures as TF
    from lowrank.experiments.head_size_training import fair as F
    from lowrank.experiments.head_size_training import plots
    from lowrank.experiments.head_size_training import tables as T

    empty = B.read(tmp_path / "none.jsonl")["fair"]
    partial_store = tmp_path / "partial.jsonl"
    for _, c in F.lr_grid()[:5]:
        ResultStore(partial_store).append({"key": run_key(c), "config": c, "metrics": _fake_run(c, run_dir=None),
                                           "wall_s": 1.0})
    partial = B.read(partial_store)["fair"]
    monkeypatch.setattr(B, "sweep", lambda configs, **kw: sweep(list(configs), run_fn=_fair_fake({"fixed h = 32": 0.02}),
                                                                **kw))
    B.run(tmp_path / "full.jsonl")
    full = B.read(tmp_path / "full.jsonl")["fair"]
    for got in (empty, partial, full):
        fig, axes = plt.subplots(2, 1)
        TF.plot_lr_grid(axes, **plots.lr_grid(got["rates"]))
        plt.close(fig)
        t = T.lr_grid_display(got["rates"])
        assert list(t.model) == list(F.LR_GRID_MODELS)
        j = T.judged_display(got["judged_comparisons"])
        assert len(j) == 2 * len(B.ROWS)
    assert T.lr_grid_display(partial["rates"])["runs stored"].iloc[0] == "5 of 9"
    assert T.lr_grid_display(empty["rates"])["chosen rate"].eq("not yet").all()
    # the figure's two panels hold every model of the grid, once each
    assert [m for _, models in plots.GRID_PANELS for m in models] == list(F.LR_GRID_MODELS)
    t = T.lr_grid_display(full["rates"]).set_index("model")
    assert t.loc["fixed h = 32", "chosen rate"] == "0.02" and t.loc["fixed h = 32", "rate 0.04"] != "-"
    j = T.judged_display(full["judged_comparisons"])
    assert j["rates"].str.contains("0.01 and 0.02").any() and j["runs stored"].eq(f"{2 * B.POWER_SEEDS} of {2 * B.POWER_SEEDS}").all()
    assert T.judged_display(empty["judged_comparisons"])["rates"].eq("not chosen yet").all()


def test_a_models_time_per_step_is_its_stored_median_once_it_has_enough_runs():
    model = "standard h = 4"
    labelled = [(B._labels(model, steps=100, lr=0.01), B._config(model, steps=100, seed=s, lr=0.01)) for s in range(4)]
    latest = {}
    for (lab, cfg), wall in zip(labelled, (10.0, 30.0, 900.0)):
        latest[run_key(cfg)] = {"wall_s": wall}
        got = B.seconds_per_step(latest, labelled)
        if len(latest) < B.MIN_TIMED_RUNS:
            assert got[model] == B.STEP_COST_S[model]
    assert got[model] == pytest.approx(0.3)  # the median of 0.1, 0.3 and 9 s a step
    assert got["fixed h = 32"] == B.STEP_COST_S["fixed h = 32"]


def test_the_left_sentence_counts_the_runs_and_halves_the_hours_for_two_cores():
    from lowrank.experiments.head_size_training.headlines import _left_text

    assert _left_text(0, 0.0) == "No planned run is left to train."
    said = _left_text(111, 20.3)
    assert said.startswith("The 111 runs still planned would take about 20 hours of one core") and "(10 hours on two" in said
