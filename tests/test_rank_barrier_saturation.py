"""Chapters 05 and 06: run functions at tiny sizes; headline() keys and values; their figures."""
import ast
import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch

from lowrank.book import barrier_figures, saturation_figures
from lowrank.book.bands import band_lines
from lowrank.experiments import rank_barrier as E
from lowrank.experiments import rank_saturation as S
from lowrank.experiments.registry import MODULES
from lowrank.experiments.shared.montecarlo import seeded
from lowrank.theory import expected_distinct_columns, saturation_head_dim

P05 = dict(seed=0, device="cpu", ns=[16, 32], head_dims=[1, 4, 64], n_trials=6, n_setting=24,
           setting_head_dims=[1, 8, 64], setting_trials=4, scales=[1.0, 64.0], rtols=[0.0, 0.001], energy=0.99,
           inputs=["orthonormal", "gaussian", "anisotropic"], d_model=64, key_set_n=16, key_head_dims=[1, 16],
           key_sets=3, query_sets=20, heads=[1, 4], heads_d_model=16, near_ns=[32, 64], near_cs=[1.0],
           near_head_dims=[4], near_trials=3, mla_ns=[16], mla_latents=[1, 4, 16], mla_head_dim=4, mla_rope_dims=[0, 2],
           mla_trials=3)
P06 = dict(seed=0, device="cpu", ns=[16, 32, 64], max_head_dim=64, points_per_octave=2, rows_per_cell=256,
           min_trials=8, fractions=[0.5, 0.75, 0.9], increment=0.01, n_boot=2000, softmax_ns=[16, 32],
           softmax_max_head_dim=16, softmax_points_per_octave=2, softmax_trials=4, softmax_rtols=[0.0, 0.001])


@pytest.fixture(scope="module")
def t05():
    return E.run(P05)


@pytest.fixture(scope="module")
def t06():
    return S.run(P06)


def test_barrier_headline_keys_and_values(t05):
    t = t05
    h = E.headline(t)
    assert set(h) == set(E.HEADLINE_KEYS) and len(h) == len(E.HEADLINE_KEYS)
    assert h["ch05_nmax"] == 32 and h["ch05_bound_frac_nmax"] == pytest.approx(expected_distinct_columns(32) / 32)
    assert 0 < h["ch05_frac_dh1_nmax"] < h["ch05_frac_dhmax_nmax"] <= 1
    assert h["ch05_inside_cells"] == 6 and h["ch05_bonferroni_z"] > 1.96
    assert h["ch05_counter_min"] == 1.0
    s = t["summary"]
    assert list(dict.fromkeys(s["group"]))[0] == E.GROUPS[0]
    assert set(s["group"]) <= set(E.GROUPS)
    # Q = K = X is the identity, far above the bound: weight structure must be among the broken
    assert "weight structure" in h["ch05_outside_broken"]
    assert h["ch05_verdict_barrier"].split(":")[0] in {"holds only under stated conditions",
                                                       "reproduced in a weaker form", "inconclusive"}
    view = E.summary_table(s)
    assert not view.isna().any().any() and "bound respected" in view.columns


def test_nested_table_matches_the_bound_and_is_seeded():
    t = S.nested_hardmax_table([16, 64], [1, 4, 256], n_trials=[40, 10], seed=0)
    assert len(t) == 3 * 40 + 3 * 10
    m = t.groupby(["n", "head_dim"])["rank"].mean()
    assert m[(16, 1)] == pytest.approx(2.0, abs=0.05)  # d_h = 1: only the largest and smallest key win
    assert m[(64, 256)] < expected_distinct_columns(64) + 3
    assert t.equals(S.nested_hardmax_table([16, 64], [1, 4, 256], n_trials=[40, 10], seed=0))


def test_law_comparison_recovers_polylog_and_flags_log():
    ns = np.array([32, 64, 128, 256, 512, 1024, 2048, 4096])
    rng = np.random.default_rng(0)
    y = 0.9 * np.log(ns) ** 2.3
    pts = pd.DataFrame({"criterion": "c", "n": ns, "head_dim": y, "se": 0.02 * y, "estimable": True})
    boot = pd.DataFrame([{"boot": b, "n": n, "criterion": "c", "head_dim": v * (1 + 0.02 * rng.standard_normal())}
                         for b in range(200) for n, v in zip(ns, y)])
    r = S.law_comparison(pts, boot, "c")
    laws = r["laws"].set_index("law")
    assert laws.loc["c (ln n)^beta", "p2"] == pytest.approx(2.3, abs=0.01)
    assert laws.loc["c (ln n)^beta", "dbic"] == 0
    assert laws.loc["a + b ln n", "pred_z"] > 2 and laws.loc["c n^alpha", "pred_z"] < -2
    assert r["fit_nmax"] == 362 or r["fit_nmax"] == 256


def test_saturation_heuristic():
    assert saturation_head_dim(4096, 0.75) == pytest.approx(66.0, rel=0.02)
    with pytest.raises(ValueError):
        saturation_head_dim(1, 0.5)


def test_saturation_headline_keys_and_values(t06):
    t = t06
    h = S.headline(t)
    assert set(h) == set(S.HEADLINE_KEYS) and len(h) == len(S.HEADLINE_KEYS)
    assert h["ch06_nmax"] == 64 and h["ch06_n_boot"] == 2000
    # three n over a factor 4: the rule must not decide
    assert h["ch06_verdict"].startswith("inconclusive")
    assert isinstance(h["ch06_not_estimable"], str) and h["ch06_not_estimable"]
    view = S.points_table(t)
    assert len(view) == 3 and not view.isna().any().any()
    assert not S.laws_table(t).isna().any().any()


def test_runs_are_seeded_on_one_thread_and_give_the_callers_threads_back():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with seeded(3):
            assert torch.get_num_threads() == 1
            a = torch.rand(4)
        assert torch.get_num_threads() == 2
        with seeded(3):
            assert torch.equal(torch.rand(4), a)
    finally:
        torch.set_num_threads(before)


def test_law_value_is_each_laws_formula():
    assert S.law_value(S.LOG, (1.0, 2.0), math.e) == pytest.approx(3.0)
    assert S.law_value(S.POWER, (2.0, 0.5), 16.0) == pytest.approx(8.0)
    assert S.law_value(S.POLYLOG, (3.0, 2.0), math.e ** 2) == pytest.approx(12.0)
    assert np.allclose(S.law_value(S.LOG, (0.0, 1.0), [1.0, math.e]), [0.0, 1.0])


def test_law_curves_draw_each_fitted_law_over_the_range(t06):
    assert t06["law_curves"].equals(S.law_curves(t06))
    curves = S.law_curves(t06, points=50)
    fitted = {(c, law) for c, res in t06["laws"].items() if not c.startswith("increment")
              for law in res["laws"].get("law", [])}
    assert set(zip(curves["criterion"], curves["law"])) == fitted
    for (crit, law), line in curves.groupby(["criterion", "law"]):
        assert len(line) == 50 and line["n"].min() == pytest.approx(16) and line["n"].max() == pytest.approx(64)
        r = t06["laws"][crit]["laws"].set_index("law").loc[law]
        assert np.allclose(line["head_dim"], S.law_value(law, (r["p1"], r["p2"]), line["n"]))


def test_band_lines_draw_a_line_a_band_and_a_reference_per_group():
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    band = pd.DataFrame({"g": [2, 2, 1, 1], "head_dim": [1, 2, 1, 2], "mean": [0.5, 0.6, 0.2, 0.3],
                         "lo": [0.4, 0.5, 0.1, 0.2], "hi": [0.6, 0.7, 0.3, 0.4]})
    fig, ax = plt.subplots()
    band_lines(ax, band, "g", label=lambda g: f"g = {g}", reference=lambda g: g / 10)
    assert [l.get_label() for l in ax.lines if not l.get_label().startswith("_")] == ["g = 1", "g = 2"]
    assert len(ax.collections) == 2
    assert sorted(l.get_ydata()[0] for l in ax.lines if l.get_label().startswith("_")) == [0.1, 0.2]
    fig2, ax2 = plt.subplots()
    band_lines(ax2, band, "g", [2], x_of=lambda d, g: d * 10)
    assert list(ax2.lines[0].get_xdata()) == [10, 20] and len(ax2.collections) == 1
    plt.close(fig)
    plt.close(fig2)


def test_every_chapter_figure_draws_from_the_run_tables(t05, t06):
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figures = [barrier_figures.coupon(), saturation_figures.laws(t06)]
    figures += [getattr(barrier_figures, name)(t05) for name in barrier_figures.__all__ if name != "coupon"]
    figures += [saturation_figures.curves(t06), saturation_figures.softmax(t06)]
    mc = barrier_figures.montecarlo(t05).axes[0]
    assert len(mc.collections) == len(P05["ns"]) and len(mc.lines) == 2 * len(P05["ns"])
    assert len(saturation_figures.softmax(t06).axes) == 2
    for fig in figures:
        assert fig.axes and all(ax.has_data() for ax in fig.axes)
    plt.close("all")


def chapters_imported(source: str, own: str | None) -> set[str]:
    """The chapter modules a module of experiments/<own>/ (or experiments/shared/) imports."""
    chapters, found = set(MODULES.values()), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and (module + ".").startswith("lowrank.experiments."):
                parts = module.split(".")[2:]
            elif node.level == 2:
                parts = module.split(".") if module else []
            else:
                continue
            found |= {parts[0]} if parts else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("lowrank.experiments.")}
    return (found & chapters) - {own}


def test_shared_tools_and_chapters_05_06_import_no_other_chapter():
    assert chapters_imported("from ..rank_barrier import mean_band", "rank_saturation") == {"rank_barrier"}
    assert chapters_imported("from lowrank.experiments import rank_barrier", None) == {"rank_barrier"}
    root = Path(S.__file__).resolve().parents[1]
    files = {own: sorted((root / (own or "shared")).glob("*.py")) for own in (None, "rank_barrier", "rank_saturation")}
    assert all(files.values())
    for own, paths in files.items():
        for path in paths:
            assert not chapters_imported(path.read_text(encoding="utf8"), own), path


def _decoy(chapter):
    """A claim inserted at the front of a chapter's CLAIMS: a verdict wired by position would be its."""
    from lowrank.experiments.verdicts import MIN_LI, Claim
    return Claim("decoy-first", MIN_LI, chapter, "sec-decoy", "A claim inserted first", None,
                 untested="nothing: it only takes the first place")


def test_barrier_verdicts_follow_their_claims_keys_not_their_places(t05, monkeypatch):
    from lowrank.experiments.verdicts import claim_of
    before = {k: v for k, v in E.headline(t05).items() if k.startswith("ch05_verdict_")}
    monkeypatch.setattr(E.rules, "CLAIMS", (_decoy("05"),) + E.rules.CLAIMS[::-1])
    after = {k: v for k, v in E.headline(t05).items() if k.startswith("ch05_verdict_")}
    assert after == before and not any(str(v).startswith("not tested") for v in after.values())
    for name, key in E.rules.VERDICT_CLAIMS.items():
        assert before[f"ch05_verdict_{name}_evidence"] == claim_of(E.rules.CLAIMS, key).judge(E.headline(t05)).evidence


def test_saturation_verdict_follows_its_claims_key_not_its_place(t06, monkeypatch):
    before = S.headline(t06)["ch06_verdict"]
    monkeypatch.setattr(S.rules, "CLAIMS", (_decoy("06"),) + S.rules.CLAIMS[::-1])
    assert S.headline(t06)["ch06_verdict"] == before and not before.startswith("not tested")
