"""Every number a chapter glues comes from its experiment module's headline() dict.

Read from the committed notebooks: the glued keys (figures aside) are exactly the module's
HEADLINE_KEYS, no code cell defines a function or class, and every glue call is either the
headline loop or a figure (chNN_fig_*).
"""
import ast
import importlib
import json
from pathlib import Path

import pytest

from lowrank.book.glued import read_glue
from lowrank.experiments.registry import MODULES

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def _code_cells(stem):
    nb = json.loads((CHAPTERS / f"{stem}.ipynb").read_text(encoding="utf8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_glued_keys_are_the_headline_keys(stem):
    module = importlib.import_module(f"lowrank.experiments.{MODULES[stem]}")
    glued = {k for k in read_glue(CHAPTERS / f"{stem}.ipynb") if "_fig_" not in k}
    assert glued == set(module.HEADLINE_KEYS), (
        f"glued but not in HEADLINE_KEYS: {sorted(glued - set(module.HEADLINE_KEYS))}; "
        f"in HEADLINE_KEYS but not glued: {sorted(set(module.HEADLINE_KEYS) - glued)}")


def cell_problems(src: str) -> list[str]:
    """What a code cell does that a chapter cell must not: define a function, class or lambda, or glue
    anything other than a figure (a literal chNN_fig_ key) or the loop over headline(...).items()."""
    tree = ast.parse("\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!"))))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    # names bound to a headline(...) result in the same cell: `H = X.headline(tables)`
    bound = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_headline_call(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    out = [f"defines {getattr(n, 'name', 'a lambda')}" for n in ast.walk(tree)
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))]
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "glue"):
        key = call.args[0] if call.args else None
        if isinstance(key, ast.Constant) and "_fig_" in str(key.value):
            continue
        if isinstance(key, ast.Name) and _in_headline_loop(call, key.id, parents, bound):
            continue
        out.append(f"glue({ast.unparse(key) if key else ''}, ...) is neither a figure nor the headline loop")
    return out


def _is_headline_call(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "headline"


def _in_headline_loop(node, name, parents, bound=frozenset()) -> bool:
    """True when ``node`` sits in `for name, ... in <...>headline(...).items():` (or `H.items()` with H
    bound to a headline result)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.For):
            it, target = node.iter, node.target
            first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
            source = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and it.func.attr == "items" else None
            from_headline = _is_headline_call(source) or (isinstance(source, ast.Name) and source.id in bound)
            return from_headline and isinstance(first, ast.Name) and first.id == name
    return False


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_cells_define_nothing_and_glue_only_headlines_and_figures(stem):
    for src in _code_cells(stem):
        problems = cell_problems(src)
        assert not problems, f"{stem}: " + "; ".join(problems)


@pytest.mark.parametrize("src, problem", [
    ("f = lambda x: x", "defines a lambda"),
    ("def f():\n    pass", "defines f"),
    ("glue(name, 3.0)", "neither a figure"),
    ("glue('ch04_gap', 0.1)", "neither a figure"),
    ("for k, v in other.items():\n    glue(k, v)", "neither a figure"),
    ("for k, v in M.headline(t).items():\n    glue(v, k)", "neither a figure"),
    ("H = dict(a=1)\nfor k, v in H.items():\n    glue(k, v)", "neither a figure"),
])
def test_the_cell_check_catches_each_violation(src, problem):
    assert any(problem in p for p in cell_problems(src))


def test_the_cell_check_allows_the_headline_loop_and_figures():
    assert not cell_problems("for key, value in M.headline(tables).items():\n    glue(key, value, display=False)")
    assert not cell_problems("glue('ch04_fig_gap', fig, display=False)")
    assert not cell_problems("H = X.headline(tables)\nfor k, v in H.items():\n    glue(k, v, display=False)")
