"""A record's fields as the chapter author declares them, as `make mutation` asks: ``value()`` names
the key a field reads and its default, and a refused value carries the key it names. The records are
declared inside the tests (their class bodies call ``value()`` while the test runs, which the
records declared at import time of tests/test_record.py do not)."""
import math
from dataclasses import dataclass
from typing import ClassVar

import pytest

from lowrank.experiments.shared.record import EvidenceTypeError, Record, value
from lowrank.experiments.verdicts import MissingEvidence


def test_a_field_reads_the_key_value_names_else_its_prefixed_name():
    @dataclass(frozen=True)
    class Sweep(Record):
        PREFIX: ClassVar[str] = "ch05_"
        seeds: int = value("ch05_n_seeds")
        margin: float = value()

    assert Sweep.keys() == {"seeds": "ch05_n_seeds", "margin": "ch05_margin"}
    e = Sweep.read({"ch05_n_seeds": 9, "ch05_margin": 0.03, "ch05_seeds": 2})
    assert (e.seeds, e.margin) == (9, 0.03)
    assert e.values() == {"ch05_n_seeds": 9, "ch05_margin": 0.03}
    with pytest.raises(MissingEvidence) as info:
        Sweep.read({"ch05_seeds": 9, "ch05_margin": 0.03})
    assert info.value.key == "ch05_n_seeds"


def test_a_field_without_a_default_is_needed_and_one_with_a_default_is_not():
    @dataclass(frozen=True)
    class Runs(Record):
        PREFIX: ClassVar[str] = "ch06_"
        runs: int = value()
        label: str = value("ch06_name", default="all runs")
        spread: float = value(default=math.nan)

    e = Runs.read({"ch06_runs": 4})
    assert (e.runs, e.label) == (4, "all runs") and math.isnan(e.spread)
    assert Runs.read({"ch06_runs": 4, "ch06_name": "fast", "ch06_spread": 0.5}).label == "fast"
    with pytest.raises(MissingEvidence) as info:
        Runs.read({"ch06_name": "fast"})
    assert info.value.key == "ch06_runs" and "run chapter 06 first" in str(info.value)
    with pytest.raises(TypeError):
        Runs()          # no default: the record cannot be made without it


def test_a_refused_value_names_its_key_and_a_bare_one_names_none():
    with pytest.raises(EvidenceTypeError) as info:
        @dataclass(frozen=True)
        class Count(Record):
            PREFIX: ClassVar[str] = "ch07_"
            n: int = value()

        Count.read({"ch07_n": "three"})
    assert info.value.key == "ch07_n" and isinstance(info.value, TypeError)
    assert EvidenceTypeError("not a number").key == ""
