"""The counts of the committed stores that docs/operations.md and data/results/README_07.md state in
prose are the stores' own: a store grown without its notes updated fails here."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from lowrank.experiments import trained_attention as ch
from lowrank.experiments.head_size_training import BUDGET_STORE, budget
from lowrank.train import run_key

from helpers import store_records

ROOT = Path(__file__).resolve().parents[1]
README, README_07 = ROOT / "docs/operations.md", ROOT / "data/results/README_07.md"
LONG_07 = yaml.safe_load((ROOT / "chapters/params/long/07_trained_attention.yaml").read_text())


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


def _numbers(pattern: str, path: Path) -> list[tuple[int, ...]]:
    found = [tuple(int(g.replace(",", "")) for g in m.groups()) for m in re.finditer(pattern, _flat(path))]
    assert found, f"{path.name} no longer says {pattern!r}; state the store's counts there again"
    return found


def test_readme_states_the_budget_stores_counts():
    r = budget.read(ROOT / BUDGET_STORE)
    assert _numbers(r"the store holds ([\d,]+) of its ([\d,]+) planned runs", README) == [
        (r["n_records"], r["planned"]["distinct"])]


def _cap_extension() -> tuple[int, int, Counter, Counter]:
    """Runs the extension trains (the grid's runs at its cap without a plateau), how many are stored,
    and per one-key length the stored extended runs and those of them still short of a plateau."""
    recs = [r for r in store_records(ROOT / ch.LONG_STORE) if r["experiment"] == ch.RETRIEVAL_EXPERIMENT]
    latest = {r["key"]: r for r in recs}
    cap, ext = LONG_07["retrieval_max_steps"], LONG_07["retrieval_extended_cap"]
    capped = [r["config"] for r in latest.values()
              if r["config"]["max_steps"] == cap and not r["metrics"]["plateau"]]
    stored = [latest[k] for k in (run_key(ch.extended(c, ext)) for c in capped) if k in latest]
    ran, falling = Counter(), Counter()
    for r in stored:
        if r["config"]["task"] == "single":
            ran[r["config"]["n"]] += 1
            falling[r["config"]["n"]] += not r["metrics"]["plateau"]
    return len(capped), len(stored), ran, falling


def test_the_readmes_state_the_cap_extensions_counts():
    planned, stored, ran, falling = _cap_extension()
    assert planned == 41  # the grid's capped runs are fixed: the long grid is stored whole
    for path in (README, README_07):
        assert _numbers(r"cap extension is stored: (\d+) of its (\d+) runs", path) == [(stored, planned)]
        said = _numbers(r"one-key n = (\d+): (\d+) of (\d+) runs still short of their plateau", path)
        assert {n: (k, m) for n, k, m in said} == {n: (falling[n], ran[n]) for n in ran if falling[n]}, path.name
