"""Chapter 05's near-orthonormal tokens: the sampler of X X^T = I + E, the table, and the rule on
synthetic evidence reaching every verdict it can return."""
import math

import pytest
import torch

from lowrank.experiments import rank_barrier as ch
from lowrank.experiments.verdicts import CONDITIONAL, CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, claim_of
from lowrank.theory import expected_distinct_columns, near_orthonormal_gram, near_orthonormal_qk


# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_near_rule = claim_of(ch.CLAIMS, "minli-near-orthonormal").judge
_mla_rule = claim_of(ch.CLAIMS, "minli-mla").judge
_mla_bound = claim_of(ch.CLAIMS, "mla-logit-bound").judge


@pytest.mark.parametrize("n,c", [(32, 0.1), (64, 10.0), (200, 3.0)])
def test_the_gram_matrix_has_the_stated_perturbation(n, c):
    G = near_orthonormal_gram(n, c, batch=3, seed=1)
    E = G - torch.eye(n, dtype=torch.float64)
    assert torch.equal(G, G.transpose(-2, -1)) and torch.all(torch.diagonal(E, dim1=-2, dim2=-1) == 0)
    off = E[:, ~torch.eye(n, dtype=torch.bool)].abs()
    assert torch.allclose(off, torch.full_like(off, c * n ** -1.5), rtol=1e-12)
    assert float(torch.linalg.eigvalsh(G).min()) > 0


def test_gram_refuses_what_no_tokens_can_have():
    with pytest.raises(ValueError, match="not positive definite"):
        near_orthonormal_gram(16, 100.0)
    for bad in (dict(n=1, c=1.0), dict(n=8, c=-1.0), dict(n=8, c=float("nan"))):
        with pytest.raises(ValueError):
            near_orthonormal_gram(**bad)


def test_queries_have_the_perturbed_covariance_across_tokens():
    n, c = 32, 10.0
    Q, _ = near_orthonormal_qk(n, 4000, c, seed=3)
    cov = Q[0] @ Q[0].T / 4000
    G = near_orthonormal_gram(n, c, seed=3)[0]
    assert (cov - G).abs().max() < 0.1 and (cov.diagonal() - 1).abs().max() < 0.1


def test_the_table_pairs_every_c_with_the_orthonormal_draw_and_stays_under_n():
    t = ch.near_orthonormal_table([32, 64], [0.0, 1.0], [1, 8], n_trials=6, seed=0)
    assert len(t) == 2 * 6 * 2 * 2 and (t["rank"] <= t["n"]).all() and (t["rank"] >= 1).all()
    cells = ch.near_cells(t)
    ref = cells[cells.c == 0]
    assert (ref["shift"] == 0).all()
    # orthonormal tokens: Q, K i.i.d. N(0, 1); the mean at d_h = 8 stays below the coupon bound
    assert (ref["mean"] <= ref["bound"] + 3 * ref["sem"]).all()
    assert cells["bound"].iloc[0] == pytest.approx(expected_distinct_columns(32))
    again = ch.near_orthonormal_table([32, 64], [0.0, 1.0], [1, 8], n_trials=6, seed=0)
    assert again.equals(t)


def _near(**kw):
    h = {"ch05_near_ns": "32, 1024", "ch05_near_cs": "0.1, 1, 10", "ch05_near_dhs": "8, 64", "ch05_near_dh_max": 64, "ch05_near_trials": 20,
         "ch05_near_cells": 12, "ch05_near_max_z": 1.0, "ch05_near_worst": "n = 32, c = 10, d_h = 64",
         "ch05_near_broken_cs": [], "ch05_near_largest_ok_c": 10.0, "ch05_near_gap": 0.02,
         "ch05_near_shift_max": 0.01, "ch05_near_shift_worst": "n = 32, c = 10, d_h = 8"}
    return {**h, **kw}


def test_the_near_orthonormal_rule_reaches_every_verdict():
    rule = _near_rule
    z_crit = ch.rules._bonferroni_z(12)
    assert rule(_near()).verdict == REPRODUCED
    j = rule(_near(ch05_near_gap=ch.NEAR_MARGIN + 0.01))
    # the qualifier names where the grid of head sizes stops, not a value the rank never attains
    assert j.verdict == WEAKER and "at d_h <= 64 (the grid's largest)" in j.reason and "attains" not in j.reason
    j = rule(_near(ch05_near_max_z=z_crit + 1, ch05_near_broken_cs=[10.0], ch05_near_largest_ok_c=1.0))
    assert j.verdict == CONDITIONAL and "at most 1 n^-3/2" in j.reason and "from c = 10 on" in j.reason
    j = rule(_near(ch05_near_max_z=z_crit + 1, ch05_near_broken_cs=[0.1, 10.0], ch05_near_largest_ok_c=float("nan")))
    assert j.verdict == CONTRADICTED
    assert rule(_near(ch05_near_trials=1)).verdict == INCONCLUSIVE
    assert rule(_near(ch05_near_max_z=float("nan"))).verdict == INCONCLUSIVE
    assert f"Bonferroni limit {z_crit:.2f}" in rule(_near()).evidence


def test_the_headline_reads_a_violation_as_the_rule_needs():
    """A table whose c = 10 cells sit far above the bound: the headline names c = 10 as broken and
    1 as the largest c without a violation, so the rule says 'holds only under stated conditions'."""
    import pandas as pd

    rows = []
    for n in (32, 64):
        b = expected_distinct_columns(n)
        for c in (0.0, 1.0, 10.0):
            for t in range(10):
                r = b * (1.3 if c == 10.0 else 0.9) + (t % 2)
                rows.append({"n": n, "c": c, "head_dim": 8, "trial": t, "rank": r, "rank_frac": r / n, "bound": b})
    P = {"near_ns": [32, 64], "near_cs": [1.0, 10.0], "near_head_dims": [8], "near_trials": 10}
    H = ch.rules._near_headline({"P": P, "near": pd.DataFrame(rows)})
    assert H["ch05_near_broken_cs"] == [10.0] and H["ch05_near_largest_ok_c"] == 1.0 and H["ch05_near_cells"] == 4
    assert _near_rule(H).verdict == CONDITIONAL
    assert math.isfinite(H["ch05_near_max_z"]) and H["ch05_near_worst"].endswith("c = 10, d_h = 8")


def _mla(**kw):
    h = {"ch05_mla_cells": 16, "ch05_mla_max_z": -5.0, "ch05_mla_trials": 50, "ch05_mla_max_increment": 0.004,
         "ch05_mla_min_rise_z": 20.0, "ch05_mla_min_rise": 0.2, "ch05_mla_head_dim": 16, "ch05_mla_rope_dims": "0, 8",
         "ch05_mla_latents": "1, 4, 64, 256", "ch05_mla_ns": "64, 128", "ch05_mla_worst": "n = 64",
         "ch05_mla_flat_where": "n = 128", "ch05_mla_logit_excess": 0, "ch05_mla_logit_at": 1.0,
         "ch05_mla_v3_sizes": "kv_latent = 512", "ch05_mla_v3_bound": 192, "ch05_mla_v3_n": 4096}
    return {**h, **kw}


def test_the_mla_rules_reach_every_verdict():
    from lowrank.experiments.verdicts import CONTRADICTED as C

    rule, crit = _mla_rule, ch.rules._bonferroni_z(16)
    assert rule(_mla()).verdict == REPRODUCED
    j = rule(_mla(ch05_mla_max_increment=ch.MLA_INCREMENT))
    assert j.verdict == WEAKER and "no saturation inside the grid" in j.reason
    assert rule(_mla(ch05_mla_max_z=crit + 0.1)).verdict == C
    assert rule(_mla(ch05_mla_min_rise_z=-2.0)).verdict == C
    assert rule(_mla(ch05_mla_min_rise_z=1.9)).verdict == INCONCLUSIVE
    assert rule(_mla(ch05_mla_trials=1)).verdict == INCONCLUSIVE
    assert _mla_bound(_mla()).verdict == REPRODUCED
    j = _mla_bound(_mla(ch05_mla_logit_excess=1))
    assert j.verdict == C and "+1" in j.evidence and "192 at n = 4,096" in j.evidence


def test_the_mla_cells_measure_the_bound_and_the_barrier():
    from lowrank.experiments.rank_barrier.latent import mla_cells, mla_tables, relative_increment

    t = mla_tables([16, 32], [1, 2, 8], head_dim=4, rope_dims=[0, 2], n_trials=6, seed=0)
    cells = mla_cells(t)
    assert len(cells) == 2 * 3 * 2 and (cells["excess"] <= 0).all() and (cells["at"] == 1).all()
    one = cells[(cells.kv_latent == 1) & (cells.rope_dim == 0)]
    assert (one["bound"] == 1).all() and (one["mean"] <= 2).all()  # logit rank 1: at most two argmax columns
    inc = relative_increment(cells)
    assert set(inc.latent_last) == {8} and set(inc.latent_prev) == {2} and len(inc) == 4
