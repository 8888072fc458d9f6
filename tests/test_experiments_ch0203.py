"""Chapters 02 and 03: run functions at tiny sizes, headline() keys and values, the bounds."""
import math

import pytest
import torch

from lowrank.experiments import multihead as M
from lowrank.experiments import representation as R


@pytest.fixture(scope="module")
def ch02_tables():
    t = R.run_construction([3, 5], d_extra=2, seed=0)
    t.update(R.run_counterexample(seed=0, draws=200))
    t.update(R.run_threshold([4, 5], [1.0], n_targets=1, near=1, coarse=1, restarts=1, max_iter=300,
                             vanish_tol=1e-5, seed=0))
    t.update(R.run_sparse([6], ["permutation", "dense"], ranks=[1, 2], n_targets=1, restarts=1, max_iter=60,
                          tol=0.01, seed=0))
    return t


def test_ch02_headline_keys_and_values(ch02_tables):
    h = R.headline(ch02_tables)
    assert set(h) == set(R.HEADLINE_KEYS)
    assert h["ch02_construction_error"] < 1e-12 and h["ch02_construction_nmax"] == 5
    assert h["ch02_counterexample_tv"] == pytest.approx(0.25)
    assert h["ch02_ns_list"] == "4, 5"
    assert h["ch02_all_generic"] == "all"
    assert all(isinstance(line, str) for line in R.summary(ch02_tables))


@pytest.fixture(scope="module")
def ch03_tables():
    t = M.run_head_count(8, 4, [1, 2, 4], restarts=1, max_iter=200, seed=0)
    t.update(M.run_embedding(6, 2, 4, n=3, batch=2, seed=0))
    t.update(M.run_theorem2(6, 3, 3, n=3, samples=3, std_restarts=1, fixed_restarts=1, std_max_iter=50,
                            fixed_max_iter=50, seed=0))
    t.update(M.run_costs([64], [4], [16]))
    return t


def test_ch03_headline_keys_and_values(ch03_tables):
    h = M.headline(ch03_tables)
    assert set(h) == set(M.HEADLINE_KEYS)
    assert h["ch03_embed_error"] < 1e-10 and h["ch03_embed_naive_error"] > 1e-3
    assert h["ch03_sep_case"] in (1, 2, 3) and h["ch03_sep_gap"] > 0
    assert h["ch03_cost_ratio"] == pytest.approx(4 * 16 / 64)
    assert h["ch03_paper_h"] == pytest.approx(2.0)
    assert all(isinstance(line, str) for line in M.summary(ch03_tables))
