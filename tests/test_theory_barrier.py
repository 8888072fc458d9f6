import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from lowrank.layers.attention import hardmax
from lowrank.experiments import rank_barrier as E
from lowrank.experiments import rank_saturation as S
from lowrank.theory import barrier as B
from lowrank.theory.sampling import sample_inputs


def _brute_distinct(n: int) -> float:
    """Mean number of distinct values over all n^n maps {1..n} -> {1..n}."""
    return float(np.mean([len(set(f)) for f in itertools.product(range(n), repeat=n)]))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_expected_distinct_columns_brute_force(n):
    assert B.expected_distinct_columns(n) == pytest.approx(_brute_distinct(n), rel=1e-12)


def test_expected_distinct_columns_vectorised_and_limit():
    ns = np.array([1, 10, 100, 10**6])
    v = B.expected_distinct_columns(ns)
    assert isinstance(v, np.ndarray) and v.shape == (4,)
    assert v[2] == pytest.approx(63.39676587267705, rel=1e-12)
    assert isinstance(B.expected_distinct_columns(100), float)
    assert B.expected_distinct_columns(ns, limit=True) == pytest.approx((1 - math.exp(-1)) * ns)
    # Decreases to 1 - 1/e from above, in fraction of n.
    frac = v / ns
    assert np.all(np.diff(frac) < 0) and frac[-1] == pytest.approx(B.BARRIER_FRACTION, abs=1e-6)
    for bad in (0, 2.5, -3, []):
        with pytest.raises(ValueError):
            B.expected_distinct_columns(bad)


def test_given_uniform_is_the_maximum():
    n = 20
    uniform = np.full(n, 1 / n)
    assert B.expected_distinct_columns_given(uniform) == pytest.approx(B.expected_distinct_columns(n))
    p = np.random.default_rng(0).dirichlet(np.full(n, 0.7), size=2000)
    vals = B.expected_distinct_columns_given(p)
    assert vals.shape == (2000,)
    assert vals.max() < B.expected_distinct_columns(n)  # Jensen: uniform p maximises
    point = np.eye(n)[3]
    assert B.expected_distinct_columns_given(point) == pytest.approx(1.0)
    assert B.expected_distinct_columns_given(np.array([0.5, 0.5]), m=3) == pytest.approx(2 * (1 - 0.125))
    with pytest.raises(ValueError, match="sum to 1"):
        B.expected_distinct_columns_given(np.array([0.5, 0.2]))
    with pytest.raises(ValueError, match="non-negative"):
        B.expected_distinct_columns_given(np.array([1.5, -0.5]))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_causal_law_brute_force(n):
    # Row i (1-based) picks uniformly among columns 1..i: enumerate all n! choices.
    counts = [len(set(c)) for c in itertools.product(*[range(i + 1) for i in range(n)])]
    assert B.expected_distinct_columns_causal(n) == pytest.approx(np.mean(counts), rel=1e-12)


def test_argmax_column_distribution_d1():
    # With d_h = 1 only the largest and the smallest key can win, each for half the queries.
    K = torch.tensor([[[0.3], [2.0], [-1.5], [0.1]]], dtype=torch.float64)
    p = B.argmax_column_distribution(K, n_queries=20_000, seed=0)
    assert p.shape == (1, 4) and p.sum().item() == pytest.approx(1.0)
    assert p[0, 0].item() == 0 and p[0, 3].item() == 0
    assert p[0, 1].item() == pytest.approx(0.5, abs=0.02)


def test_key_set_table_respects_the_bound():
    t = E.key_set_table(24, [1, 4, 64], n_key_sets=6, n_query_sets=200, seed=0)
    assert len(t) == 18 and set(t["head_dim"]) == {1, 4, 64}
    assert (t["formula"] <= t["bound"] + 1e-12).all()
    assert (t["mean_rank"] - t["formula"]).abs().max() < 1.0
    assert (t.loc[t.head_dim == 1, "mean_rank"] <= 2).all()
    assert t.loc[t.head_dim == 64, "max_p"].mean() < t.loc[t.head_dim == 1, "max_p"].mean()


def test_hardmax_rank_table_values():
    t = E.hardmax_rank_table([16, 32], [1, 512], n_trials=[40, 60], seed=0)
    assert list(t.columns) == ["n", "head_dim", "trial", "rank", "rank_frac", "bound"]
    assert len(t) == 2 * 40 + 2 * 60
    assert (t.loc[t.head_dim == 1, "rank"] == 2).all()  # argmax or argmin of the keys
    big = t[(t.n == 32) & (t.head_dim == 512)]["rank"]
    assert abs(big.mean() - B.expected_distinct_columns(32)) < 4 * big.std() / math.sqrt(len(big)) + 0.2
    assert t.equals(E.hardmax_rank_table([16, 32], [1, 512], n_trials=[40, 60], seed=0))
    assert not t.equals(E.hardmax_rank_table([16, 32], [1, 512], n_trials=[40, 60], seed=1))
    with pytest.raises(ValueError, match="n_trials"):
        E.hardmax_rank_table([16, 32], [1], n_trials=[4])


def test_causal_hardmax_near_half():
    t = E.hardmax_rank_table([40], [1024], n_trials=150, causal=True, seed=0)["rank"]
    assert abs(t.mean() - B.expected_distinct_columns_causal(40)) < 4 * t.std() / math.sqrt(len(t)) + 0.2


def test_attention_rank_table_settings():
    t = E.attention_rank_table(12, [2, 8], n_trials=5, temperature="hardmax", seed=0)
    wide = t.pivot_table(index=["head_dim", "trial"], columns=["measure", "tolerance"], values="value")
    assert (wide[("numerical_rank", "rtol=max(m,n)eps")] == wide[("hardmax_rank", "")]).all()
    c = E.attention_rank_table(12, [4], n_trials=4, causal=True, rtols=(None,), seed=0)
    assert (c.query("measure == 'numerical_rank'")["value"] == 12).all()  # triangular, positive diagonal
    X = sample_inputs(12, 20, inputs="sphere", seed=0)[0]
    g = E.attention_rank_table(12, [4], n_trials=3, inputs=X, seed=0)
    assert set(g["inputs"]) == {"given"} and set(g["trial"]) == {0, 1, 2}


def test_head_combination_table():
    t = E.head_combination_table(16, [(1, 4), (4, 4)], n_trials=5, seed=0)
    one = t[t.heads == 1].pivot_table(index="trial", columns="combination", values="value")
    assert (one["one head"] == one["head average"]).all() and (one["one head"] == one["heads stacked"]).all()
    four = t[t.heads == 4].pivot_table(index="trial", columns="combination", values="value")
    assert (four["head average"] <= four["heads stacked"]).all()  # sum of heads = stacked @ [I; ...; I]
    assert (four["heads stacked"] >= four["one head"]).all()


@pytest.mark.parametrize("shift", [0, 1])
def test_counterexample_full_rank(shift):
    X = sample_inputs(30, 8, inputs="sphere", seed=2)[0]
    Q, K = B.counterexample_qk(X, shift=shift)
    A = hardmax(Q @ K.T)
    assert torch.equal(A, torch.roll(torch.eye(30, dtype=X.dtype), shifts=shift, dims=0))
    assert torch.linalg.matrix_rank(A).item() == 30
    with pytest.raises(ValueError, match="unit-norm"):
        B.counterexample_qk(2 * X)


def _curve_table(n, d, r, trials=3):
    return pd.DataFrame([{"n": n, "head_dim": dd, "trial": t, "rank": rr}
                         for dd, rr in zip(d, r) for t in range(trials)])


def test_saturation_points_known_curve():
    n = 50
    d = 2.0 ** np.arange(0, 10)
    r = B.expected_distinct_columns(n) * (1 - 1 / d)  # increment per doubling = 1 / (2 (d - 1))
    pts = S.saturation_points(_curve_table(n, d, r)).set_index("criterion")["head_dim"]
    assert pts["50% of bound"] == pytest.approx(2.0)
    assert pts["75% of bound"] == pytest.approx(4.0)
    assert pts["90% of bound"] == pytest.approx(8 * 2 ** 0.4)  # 0.875 at 8, 0.9375 at 16
    inc32, inc64 = 1 / 62, 1 / 126
    expect = 32 * 2 ** ((0.01 - inc32) / (inc64 - inc32))
    assert pts["increment < 0.01"] == pytest.approx(expect)
    plateau = S.saturation_points(_curve_table(n, d, r), reference="plateau", fractions=(0.5,))
    assert plateau["criterion"].tolist() == ["50% of plateau", "increment < 0.01"]
    never = S.saturation_points(_curve_table(n, d, r / 10)).set_index("criterion")["head_dim"]
    assert math.isnan(never["90% of bound"])


def test_bootstrap_of_a_noiseless_table_is_constant():
    d = 2.0 ** np.arange(0, 8)
    table = pd.concat([_curve_table(n, d, B.expected_distinct_columns(n) * (1 - 1 / d)) for n in (20, 40)])
    pts = S.saturation_points(table)
    boot = S.saturation_bootstrap(table, n_boot=5, seed=0)
    assert len(boot) == 5 * len(pts)
    merged = boot.merge(pts, on=["n", "criterion"], suffixes=("", "_point"))
    assert np.allclose(merged["head_dim"], merged["head_dim_point"], equal_nan=True)


@pytest.mark.parametrize("law", ["log", "power"])
def test_fit_saturation_recovers_the_law(law):
    ns = np.array([32, 64, 128, 256, 512])
    truth = 2 + 3 * np.log(ns) if law == "log" else 0.5 * ns ** 0.6
    pts = pd.DataFrame({"n": ns, "criterion": "x", "head_dim": truth})
    rng = np.random.default_rng(0)
    boot = pd.DataFrame([{"boot": b, "n": n, "criterion": "x", "head_dim": y * (1 + 0.01 * rng.standard_normal())}
                         for b in range(50) for n, y in zip(ns, truth)])
    fits = S.fit_saturation(pts, boot).set_index(["model", "quantity"])
    chi_log = fits.loc[("a + b ln n", "chi2"), "estimate"]
    chi_pow = fits.loc[("c n^alpha", "chi2"), "estimate"]
    if law == "log":
        assert fits.loc[("a + b ln n", "b"), "estimate"] == pytest.approx(3.0, rel=1e-9)
        assert chi_log < 1e-12 < chi_pow
    else:
        assert fits.loc[("c n^alpha", "alpha"), "estimate"] == pytest.approx(0.6, abs=1e-3)
        assert chi_pow < 1e-3 < chi_log
        lo, hi = fits.loc[("c n^alpha", "alpha"), ["lo", "hi"]]
        assert lo <= 0.6 <= hi


def test_head_dim_grid():
    assert S.head_dim_grid(16, 1) == [1, 2, 4, 8, 16]
    g = S.head_dim_grid(1024, 4)
    assert g[:8] == [1, 2, 3, 4, 5, 6, 7, 8] and g[-1] == 1024 and len(g) == len(set(g))
    assert S.head_dim_grid(1000, 1)[-1] == 512
    with pytest.raises(ValueError):
        S.head_dim_grid(0)


def test_barrier_verdicts():
    n = 100
    t = pd.DataFrame({"setting": ["a"] * 4 + ["b"] * 4, "n": n,
                      "value": [60, 62, 61, 63, 99, 100, 100, 98]})
    v = E.barrier_verdicts(t).set_index("setting")
    assert v.loc["a", "respected"] and not v.loc["b", "respected"]
    assert v.loc["a", "rank_frac"] == pytest.approx(0.615)
    assert v.loc["b", "bound_frac"] == pytest.approx(B.expected_distinct_columns(n) / n)
    with pytest.raises(ValueError, match="mixes"):
        E.barrier_verdicts(pd.DataFrame({"setting": ["a", "a"], "n": [10, 20], "value": [1, 2]}))


def test_mean_band():
    t = pd.DataFrame({"g": [1, 1, 1, 2, 2], "v": [1.0, 2.0, 3.0, 5.0, 5.0]})
    m = E.mean_band(t, by=["g"], value="v").set_index("g")
    assert m.loc[1, "mean"] == 2.0 and m.loc[1, "se"] == pytest.approx(1 / math.sqrt(3))
    assert m.loc[1, "hi"] - m.loc[1, "lo"] == pytest.approx(2 * 1.96 / math.sqrt(3))
    assert m.loc[2, "lo"] == m.loc[2, "hi"] == 5.0 and m.loc[2, "draws"] == 2
