"""Typed evidence records: read by key and type, named when missing, refused when of the wrong kind."""
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from lowrank.experiments.shared.record import EvidenceTypeError, Record, value
from lowrank.experiments.verdicts import MissingEvidence


@dataclass(frozen=True)
class _Ev(Record):
    PREFIX: ClassVar[str] = "ch99_"
    count: int
    share: float
    name: str
    held: bool
    grid: tuple[float, ...]
    pair: tuple[int, str]
    upper: float | None
    raw: Any
    total: int = value("ch99_n_total")
    note: str = value(default="none")


def _values(**kw):
    v = dict(ch99_count=3, ch99_share=0.5, ch99_name="a", ch99_held=True, ch99_grid=[1, 2.5], ch99_pair=[4, "x"],
             ch99_upper=None, ch99_raw={"k": [1]}, ch99_n_total=8)
    v.update(kw)
    return v


def test_a_record_reads_each_field_by_key_and_type():
    e = _Ev.read(_values())
    assert e == _Ev(3, 0.5, "a", True, (1.0, 2.5), (4, "x"), None, {"k": [1]}, 8, "none")
    assert isinstance(e.count, int) and isinstance(e.grid[0], float)
    assert _Ev.keys()["total"] == "ch99_n_total" and _Ev.keys()["count"] == "ch99_count"


def test_a_record_survives_a_json_round_trip():
    e = _Ev.read(_values(ch99_note="given", ch99_share=math.nan))
    back = _Ev.read(json.loads(json.dumps(e.values())))
    assert back.values() == json.loads(json.dumps(e.values()))
    assert math.isnan(back.share) and back.note == "given"


def test_a_missing_value_is_named():
    v = _values()
    del v["ch99_n_total"]
    with pytest.raises(MissingEvidence) as err:
        _Ev.read(v)
    assert err.value.key == "ch99_n_total"


@pytest.mark.parametrize("key,bad", [("ch99_count", "3"), ("ch99_count", 2.5), ("ch99_count", True),
                                     ("ch99_share", "nan"), ("ch99_name", 1), ("ch99_held", "yes"),
                                     ("ch99_grid", 1.0), ("ch99_pair", [1, "a", 2]), ("ch99_upper", "open")])
def test_a_value_of_the_wrong_kind_is_refused(key, bad):
    with pytest.raises(EvidenceTypeError) as err:
        _Ev.read(_values(**{key: bad}))
    assert err.value.key.startswith(key)


def test_a_float_read_as_none_is_not_estimated():
    assert math.isnan(_Ev.read(_values(ch99_share=None)).share)
    assert _Ev.read(_values(ch99_count=4.0)).count == 4


def test_numpy_values_read_as_python_values():
    import numpy as np

    e = _Ev.read(_values(ch99_count=np.int64(5), ch99_share=np.float32(0.25), ch99_held=np.bool_(False),
                         ch99_grid=(np.float64(1.5),)))
    assert (e.count, e.share, e.held, e.grid) == (5, 0.25, False, (1.5,))
    assert type(e.count) is int and type(e.share) is float and type(e.held) is bool


def test_a_record_that_is_not_a_dataclass_or_has_an_unreadable_field_type_is_refused():
    class Loose(Record):
        PREFIX: ClassVar[str] = "ch99_"

    with pytest.raises(TypeError, match="not a dataclass"):
        Loose.keys()

    @dataclass(frozen=True)
    class Either(Record):
        x: int | str

    with pytest.raises(TypeError, match="one type or that type and None"):
        Either.read({"x": 1})

    @dataclass(frozen=True)
    class Nested(Record):
        x: dict

    with pytest.raises(TypeError, match="cannot be of type"):
        Nested.read({"x": {}})


def test_values_write_nested_tuples_as_lists_under_their_keys():
    e = _Ev.read(_values())
    v = e.values()
    assert list(v) == list(_Ev.keys().values())
    assert v["ch99_grid"] == [1.0, 2.5] and v["ch99_pair"] == [4, "x"] and v["ch99_n_total"] == 8
    assert v["ch99_note"] == "none"


@pytest.mark.parametrize("key,bad,words", [
    ("ch99_count", "3", "'ch99_count' is '3', not a number"), ("ch99_count", 2.5, "'ch99_count' is 2.5, not a whole number"),
    ("ch99_held", "yes", "'ch99_held' is 'yes', not true or false"), ("ch99_name", 1, "'ch99_name' is 1, not text"),
    ("ch99_grid", 1.0, "'ch99_grid' is 1.0, not a list"), ("ch99_grid", [1.0, "x"], "'ch99_grid[1]' is 'x', not a number"),
    ("ch99_pair", [1, "a", 2], "'ch99_pair' has 3 items, not 2"), ("ch99_pair", [1, 2], "'ch99_pair[1]' is 2, not text")])
def test_a_refused_value_is_named_with_what_it_should_be(key, bad, words):
    with pytest.raises(EvidenceTypeError, match=re.escape(words)):
        _Ev.read(_values(**{key: bad}))


def test_a_missing_chapter_value_says_which_chapter_to_run():
    with pytest.raises(MissingEvidence, match=re.escape("_Ev needs the value 'ch99_count', which the chapter did "
                                                        "not provide: run chapter 99 first")):
        _Ev.read({k: v for k, v in _values().items() if k != "ch99_count"})

    @dataclass(frozen=True)
    class Inner(Record):
        seeds: int

    with pytest.raises(MissingEvidence) as err:
        Inner.read({})
    assert str(err.value).strip("\"'").endswith("did not provide") and err.value.key == "seeds"


def test_unreadable_field_types_name_the_field():
    @dataclass(frozen=True)
    class Either(Record):
        x: int | str

    with pytest.raises(TypeError, match=re.escape("evidence 'x': a field is one type or that type and None")):
        Either.read({"x": 1})

    @dataclass(frozen=True)
    class Nested(Record):
        x: dict

    with pytest.raises(TypeError, match=re.escape("evidence 'x': a record field cannot be of type")):
        Nested.read({"x": {}})

    class Loose(Record):
        pass

    with pytest.raises(TypeError, match="Loose is not a dataclass"):
        Loose.keys()


def _chapter_claims():
    from lowrank.experiments.claims import collect_claims

    return [c for c in collect_claims().claims if c.rule is not None]


def test_every_rule_reads_a_typed_record_of_its_chapters_values():
    """Every rule is handed its claim's record, annotated as such, whose keys are values its
    chapter's headline writes: a Record, or for chapter 04's training rows a row record
    (row_record.RowEvidence) or a record of several rows."""
    import typing

    from lowrank.experiments import registry

    checked = set()
    for c in _chapter_claims():
        assert c.evidence is not None, f"{c.key} has no evidence record"
        assert issubclass(c.evidence, Record) or c.chapter == "04", f"{c.key}: its evidence is not a Record"
        first = next(iter(typing.get_type_hints(c.rule).items()))[1]
        assert isinstance(first, type) and issubclass(c.evidence, first), \
            f"{c.key}: its rule's parameter is annotated {first!r}, not its record {c.evidence.__name__}"
        stem = registry.chapter_name(c.chapter)
        keys = set(getattr(registry.module(stem), "HEADLINE_KEYS", ()))
        if keys:
            assert set(c.evidence.keys().values()) <= keys, \
                f"{c.key} reads values its chapter does not write: {set(c.evidence.keys().values()) - keys}"
        checked.add(c.chapter)
    assert checked == {"02", "03", "04", "05", "06", "07"}


def test_every_committed_evidence_file_reads_into_its_claims_records():
    from lowrank.experiments import registry
    from lowrank.experiments.evidence import read_evidence

    for c in _chapter_claims():
        if c.evidence is None:
            continue
        ev = read_evidence(Path("chapters") / "evidence" / f"{registry.chapter_name(c.chapter)}.json")
        assert isinstance(c.evidence.read(ev.values), c.evidence)
