"""The evidence files at their edges, as `make mutation` asks: which values are plain and what a
refusal names, the file's layout, where and when it is written, the stores it stamps and finds
stale, and what reading refuses. The chapter is one of the test's own (its claims, its paths), so
every entry of the file is known."""
import enum
import hashlib
import json
import math
import types

import numpy as np
import pytest

from lowrank.experiments import evidence as E
from lowrank.experiments import registry
from lowrank.experiments.verdicts import REPRODUCED, Claim, Judgement, need

STEM = "09_fake"


def rule_x(values):
    """Reproduced when x is measured."""
    return Judgement(REPRODUCED, f"x = {need(values, 'ch09_x')}", qualifier="x is positive", detail="one run")


def rule_y(values):
    """Reproduced when y is measured."""
    return Judgement(REPRODUCED, f"y = {need(values, 'ch09_y')}")


def rule_z(values):
    """Reproduced when z is measured."""
    return Judgement(REPRODUCED, f"z = {need(values, 'ch09_z')}")


# y is missing below before z is: every claim after a missing value is still recorded
CLAIMS = (Claim("claim-y", "p", "09", "s", "Y holds", rule_y), Claim("claim-x", "p", "09", "s", "X holds", rule_x),
          Claim("claim-z", "p", "09", "s", "Z holds", rule_z))
# path parameters in sorted order: a skipped one (not a store, then an empty store) before each stamped one
PATHS = {"a_figure": "figure", "b_empty": "store", "c_runs": "store", "d_read": "read_store", "e_gone": "store"}


@pytest.fixture
def chapter(monkeypatch, tmp_path):
    """The test's chapter as the registry's module for any stem; no evidence folder or scale in the environment."""
    fake = types.SimpleNamespace(CLAIMS=CLAIMS, PATHS=PATHS)
    monkeypatch.setattr(registry, "module", lambda stem: fake)
    monkeypatch.delenv(E.EVIDENCE_DIR_ENV, raising=False)
    monkeypatch.delenv(E.SCALE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return fake


# -- plain values --------------------------------------------------------------------------------

class Level(enum.IntEnum):
    HIGH = 2


class Share(float):
    pass


@pytest.mark.parametrize("value", [None, True, False, "text", "", 0, 3, -1.5])
def test_plain_values_come_back_as_themselves(value):
    got = E.plain_value(value)
    assert got == value and type(got) is type(value)


def test_numbers_come_back_as_python_numbers_never_a_subclass():
    for value, plain in ((Level.HIGH, 2), (Share(0.25), 0.25), (np.float64(0.5), 0.5), (np.float32(0.25), 0.25),
                         (np.int64(7), 7), (np.bool_(True), True), (np.array(1.5), 1.5)):
        got = E.plain_value(value)
        assert got == plain and type(got) is type(plain), (value, got)


def test_nan_and_infinities_are_kept_as_floats():
    got = E.plain_value([float("nan"), np.float64("inf"), -math.inf])
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf] and all(type(x) is float for x in got)


def test_nested_tuples_lists_and_mappings_become_lists_and_dicts():
    value = types.MappingProxyType({"a": (1, [np.int64(2), {"b": (None,)}]), "c": {}})
    got = E.plain_value(value)
    assert got == {"a": [1, [2, {"b": [None]}]], "c": {}} and type(got) is dict
    assert type(got["a"]) is list and type(got["a"][1][1]["b"]) is list


def test_a_refusal_names_where_the_value_stands_and_what_it_is():
    with pytest.raises(TypeError, match=r"^value is a object, not text, a number or a list: evidence holds plain "
                                        r"values only$"):
        E.plain_value(object())
    with pytest.raises(TypeError, match=r"^v\[1\] is a set, not text"):
        E.plain_value([1, {2}], "v")
    with pytest.raises(TypeError, match=r"^v\['a'\]\[0\]\['b'\] is a complex, not text"):
        E.plain_value({"a": [{"b": 1j}]}, "v")
    with pytest.raises(TypeError, match=r"^v\['a'\] has the key 3, not text$"):
        E.plain_value({"a": {3: 1}}, "v")
    with pytest.raises(TypeError, match=r"^value has the key \(1, 2\), not text$"):
        E.plain_value({(1, 2): 1})


def test_an_array_or_an_object_with_an_item_is_not_a_scalar():
    with pytest.raises(TypeError, match=r"^v is a ndarray, not text"):
        E.plain_value(np.array([1.0, 2.0]), "v")

    class Boxed:
        item = 3  # an item that is not a method
        shape = ()

    with pytest.raises(TypeError, match=r"^v is a Boxed, not text"):
        E.plain_value(Boxed(), "v")

    class Shapeless:
        def item(self):
            return 1

    with pytest.raises(TypeError, match=r"^v is a Shapeless, not text"):
        E.plain_value(Shapeless(), "v")


# -- writing -------------------------------------------------------------------------------------

# The committed files diff line by line: keys sorted, one space a level, a final newline.
LAYOUT = """{
 "format": 1,
 "params": {
  "n": 3
 },
 "scale": "smoke",
 "stem": "09_fake",
 "stores": [],
 "values": {
  "ch09_nan": NaN,
  "ch09_x": 2
 },
 "verdicts": {
  "claim-x": {
   "detail": "one run",
   "qualifier": "x is positive",
   "verdict": "reproduced"
  },
  "claim-y": {
   "qualifier": "no value ch09_y",
   "verdict": "not judged"
  },
  "claim-z": {
   "qualifier": "no value ch09_z",
   "verdict": "not judged"
  }
 }
}
"""


def test_the_file_holds_each_claims_verdict_or_the_value_it_lacks(chapter, tmp_path):
    assert E.write_evidence(STEM, {"ch09_x": np.int64(2), "ch09_nan": float("nan")}, {"n": 3},
                            folder=tmp_path, scale="smoke") is None
    assert (tmp_path / f"{STEM}.json").read_text(encoding="utf8") == LAYOUT


def test_a_chapter_without_claims_records_no_verdicts(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "module", lambda stem: types.SimpleNamespace())
    E.write_evidence("01_x", {"ch01_x": 1}, {}, folder=tmp_path)
    found = E.read_evidence(tmp_path / "01_x.json")
    assert found.verdicts == {} and found.values == {"ch01_x": 1} and found.stores == ()


def test_the_file_is_written_only_where_a_folder_or_the_environment_names_one(chapter, tmp_path, monkeypatch):
    monkeypatch.setenv(E.EVIDENCE_DIR_ENV, "")
    assert E.write_evidence(STEM, {}, {}) is None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(E.EVIDENCE_DIR_ENV, str(tmp_path / "env"))
    E.write_evidence(STEM, {}, {})
    assert [p.name for p in (tmp_path / "env").iterdir()] == [f"{STEM}.json"]
    # a folder given wins over the environment's, and may be several levels deep
    E.write_evidence(STEM, {"ch09_x": 1}, {}, folder=tmp_path / "a" / "b")
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == [f"{STEM}.json"]
    assert E.read_evidence(tmp_path / "env" / f"{STEM}.json").values == {}


def test_the_scale_given_wins_over_the_environments_and_default_is_the_last_resort(chapter, tmp_path, monkeypatch):
    def scale(**kwargs):
        E.write_evidence(STEM, {}, {}, folder=tmp_path, **kwargs)
        return E.read_evidence(tmp_path / f"{STEM}.json").scale

    assert scale() == "default"
    monkeypatch.setenv(E.SCALE_ENV, "long")
    assert scale() == "long"
    assert scale(scale="smoke") == "smoke"
    monkeypatch.setenv(E.SCALE_ENV, "")
    assert scale(scale="") == "default"


def test_a_value_that_is_not_plain_leaves_the_file_before_as_it_was(chapter, tmp_path):
    E.write_evidence(STEM, {"ch09_x": 1}, {"n": 1}, folder=tmp_path)
    before = (tmp_path / f"{STEM}.json").read_text()
    with pytest.raises(TypeError, match=r"^values\['ch09_fig'\] is a object"):
        E.write_evidence(STEM, {"ch09_x": 2, "ch09_fig": object()}, {"n": 1}, folder=tmp_path)
    with pytest.raises(TypeError, match=r"^params\['out'\] is a object"):
        E.write_evidence(STEM, {"ch09_x": 2}, {"out": object()}, folder=tmp_path)
    assert (tmp_path / f"{STEM}.json").read_text() == before
    # a second write replaces the file whole, and leaves nothing else beside it
    E.write_evidence(STEM, {"ch09_x": 3}, {"n": 1}, folder=tmp_path)
    assert E.read_evidence(tmp_path / f"{STEM}.json").values == {"ch09_x": 3}
    assert [p.name for p in tmp_path.iterdir()] == [f"{STEM}.json"]


def test_nan_and_infinities_read_back(chapter, tmp_path):
    E.write_evidence(STEM, {"a": float("nan"), "b": math.inf, "c": [-math.inf, 1.5]}, {}, folder=tmp_path)
    values = E.read_evidence(tmp_path / f"{STEM}.json").values
    assert math.isnan(values["a"]) and values["b"] == math.inf and values["c"] == [-math.inf, 1.5]


# -- stores --------------------------------------------------------------------------------------

def _stores(base):
    for name, text in (("fig.png", b"png"), ("runs.jsonl", b'{"a": 1}\n'), ("read.jsonl", b"{}\n")):
        (base / name).write_bytes(text)
    return {"a_figure": "fig.png", "b_empty": "", "c_runs": "runs.jsonl", "d_read": "read.jsonl",
            "e_gone": "gone.jsonl", "n": 3}


def test_the_stores_that_exist_are_stamped_with_their_sha256_and_size(chapter, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    params = _stores(base)
    stamps = E.store_stamps(STEM, params, base)
    assert stamps == (
        E.StoreStamp("c_runs", "runs.jsonl", hashlib.sha256(b'{"a": 1}\n').hexdigest(), 9),
        E.StoreStamp("d_read", "read.jsonl", hashlib.sha256(b"{}\n").hexdigest(), 3))
    # written from the working folder, the file stamps the same stores
    params = _stores(tmp_path)
    E.write_evidence(STEM, {}, params, folder=tmp_path / "ev")
    assert E.read_evidence(tmp_path / "ev" / f"{STEM}.json").stores == stamps


def _evidence(stamps):
    return E.ChapterEvidence(STEM, "default", {}, {}, {}, tuple(stamps))


def test_a_store_is_stale_when_its_size_or_its_sha256_differs_or_it_is_gone(tmp_path):
    (tmp_path / "s.jsonl").write_bytes(b"abc\n")
    sha, size = hashlib.sha256(b"abc\n").hexdigest(), 4
    assert E.stale_stores(_evidence([E.StoreStamp("p", "s.jsonl", sha, size)]), tmp_path) == []
    changed = ["s.jsonl (parameter p) changed after chapter 09 ran"]
    assert E.stale_stores(_evidence([E.StoreStamp("p", "s.jsonl", sha, size + 1)]), tmp_path) == changed
    assert E.stale_stores(_evidence([E.StoreStamp("p", "s.jsonl", "0" * 64, size)]), tmp_path) == changed
    assert E.stale_stores(_evidence([E.StoreStamp("q", "t.jsonl", sha, size),
                                     E.StoreStamp("p", "s.jsonl", sha, size + 1)]), tmp_path) == [
        "t.jsonl (parameter q) is gone", *changed]


# -- reading -------------------------------------------------------------------------------------

GOOD = {"format": E.FORMAT, "stem": STEM, "scale": "long", "values": {"ch09_x": 1}, "params": {"n": 2},
        "verdicts": {"claim-x": {"verdict": "reproduced", "qualifier": "", "detail": ""}},
        "stores": [{"param": "p", "path": "s.jsonl", "sha256": "0" * 64, "size": 4}]}


def _file(tmp_path, data):
    path = tmp_path / f"{STEM}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf8")
    return path


def test_a_good_file_reads_back_field_by_field(tmp_path):
    found = E.read_evidence(_file(tmp_path, GOOD))
    assert found == E.ChapterEvidence(STEM, "long", {"ch09_x": 1}, GOOD["verdicts"], {"n": 2},
                                      (E.StoreStamp("p", "s.jsonl", "0" * 64, 4),))
    assert found.chapter == "09"


def test_a_file_that_is_not_json_is_named_with_the_line(tmp_path):
    with pytest.raises(ValueError, match=rf"^evidence file {STEM}\.json is not JSON: Expecting property name "
                                         r"enclosed in double quotes \(line 2\)$"):
        E.read_evidence(_file(tmp_path, '{\n not json'))


@pytest.mark.parametrize("data, found", [([1, 2], "None"), ({**GOOD, "format": 2}, "2"),
                                         ({k: v for k, v in GOOD.items() if k != "format"}, "None"),
                                         ({**GOOD, "format": "1"}, "'1'")])
def test_a_layout_it_does_not_know_is_refused(tmp_path, data, found):
    with pytest.raises(ValueError, match=rf"^evidence file {STEM}\.json has format {found}, not 1: re-execute its "
                                         r"chapter$"):
        E.read_evidence(_file(tmp_path, data))


@pytest.mark.parametrize("key", ["stem", "scale", "values", "verdicts", "params", "stores"])
def test_each_missing_entry_is_named(tmp_path, key):
    data = {k: v for k, v in GOOD.items() if k != key}
    with pytest.raises(ValueError, match=rf"^evidence file {STEM}\.json lacks {key}: re-execute its chapter$"):
        E.read_evidence(_file(tmp_path, data))


def test_the_missing_entries_are_named_together(tmp_path):
    with pytest.raises(ValueError, match=r" lacks stem, values, stores: "):
        E.read_evidence(_file(tmp_path, {k: v for k, v in GOOD.items() if k not in ("stem", "values", "stores")}))


def test_a_list_equals_only_a_list_and_a_mapping_only_a_mapping():
    assert not E.same_value("ab", ["a", "b"]) and not E.same_value(["a", "b"], "ab")
    assert not E.same_value([1], 1) and not E.same_value({"a": 1}, ["a"]) and not E.same_value(["a"], {"a": 1})
