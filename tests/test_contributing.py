"""CONTRIBUTING.md's recipe names only things that exist: every dotted lowrank name it gives
resolves, and every test it says follows the recipe exists."""
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf8")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_lowrank_name_in_the_recipe_exists():
    names = sorted(set(re.findall(r"`(lowrank(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", TEXT)))
    assert len(names) >= 5, names
    for dotted in names:
        _resolve(dotted)


def test_every_test_the_recipe_names_exists():
    named = re.findall(r"`(tests/[a-z_]+\.py)(?:::([a-z_0-9]+))?`", TEXT)
    assert named
    for path, test in named:
        assert (ROOT / path).is_file(), path
        if test:
            assert f"def {test}(" in (ROOT / path).read_text(encoding="utf8"), f"{path}::{test}"
