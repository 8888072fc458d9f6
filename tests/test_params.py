import pytest

from lowrank.book.params import SCHEMAS, chapter_name, schema, validate
from lowrank.core.params import Choice, Float, FloatList, Int, IntList, ParameterError


@pytest.fixture(autouse=True)
def test_chapter(monkeypatch):
    monkeypatch.setitem(SCHEMAS, "99_test_chapter", dict(seed=Int(0), n=Int(2, 100, doc="sequence length"),
                                                         lr=Float(0, 1), dims=IntList(1), scales=FloatList(0.1),
                                                         kind=Choice("a", "b")))

GOOD = dict(seed=0, n=8, lr=0.5, dims=[1, 2], scales=[1, 2.5], kind="a")


def test_valid_parameters_are_normalised():
    out = validate("99_test_chapter", dict(GOOD, unrelated=3))
    assert out["lr"] == 0.5 and out["scales"] == [1.0, 2.5] and isinstance(out["scales"][0], float)


@pytest.mark.parametrize("name, value, words", [
    ("n", 1, ["'n'", "1", "in [2, 100]", "sequence length"]),
    ("n", 2.5, ["'n'", "2.5", "an int"]),
    ("n", True, ["'n'", "True"]),
    ("lr", float("nan"), ["'lr'", "nan"]),
    ("dims", [], ["'dims'", "1 to 1024 items"]),
    ("dims", [1, 0], ["'dims'", "in [1, 4294967295]"]),
    ("dims", list(range(1, 2000)), ["'dims'", "1 to 1024 items", "..."]),
    ("seed", 99999999999999999999999, ["'seed'", "in [0, 4294967295]"]),
    ("kind", "c", ["'kind'", "'c'", "one of 'a', 'b'"]),
    ("scales", "1.0", ["'scales'", "list"]),
])
def test_bad_values_name_parameter_value_and_rule(name, value, words):
    with pytest.raises(ParameterError) as err:
        validate("99_test_chapter", dict(GOOD, **{name: value}))
    for w in words:
        assert w in str(err.value)


def test_missing_and_unknown():
    with pytest.raises(ParameterError, match="missing parameter.*'kind'"):
        validate("99_test_chapter", {k: v for k, v in GOOD.items() if k != "kind"})
    with pytest.raises(ParameterError, match="unknown parameter.*'bogus'"):
        validate("99_test_chapter", {"bogus": 1}, partial=True)
    assert validate("99_test_chapter", {"n": 5}, partial=True) == {"n": 5}


def test_chapter_name_resolution():
    assert chapter_name("99") == "99_test_chapter"
    assert chapter_name("chapters/99_test_chapter.ipynb") == "99_test_chapter"
    assert "seed" in schema("99")
    with pytest.raises(ParameterError, match="unknown chapter"):
        chapter_name("77")


def test_every_registered_chapter_has_a_notebook_with_matching_parameters():
    import json
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[1] / "chapters"
    for name, spec in SCHEMAS.items():
        if name.startswith("99_"):
            continue
        nb = json.loads((root / f"{name}.ipynb").read_text())
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        names = {line.split("=")[0].strip() for line in "".join(cell["source"]).splitlines()
                 if "=" in line and not line.lstrip().startswith("#")}
        assert names == set(spec), f"{name}: parameters cell {sorted(names)} vs schema {sorted(spec)}"
