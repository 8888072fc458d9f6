"""Every number a chapter glues comes from its experiment module's headline() dict.

Read from the committed notebooks: the glued keys (figures aside) are exactly the module's
HEADLINE_KEYS; no code cell defines a function, class or lambda; every glue call is either the
headline loop or a figure (chNN_fig_*); the cell after the parameters cell validates the
parameters and runs the chapter once (`P = validate(...)`, `tables = ch.run(P)`), whose tables give
the headline; and no code cell is over 12 lines. The checks are functions of cell sources, shown
failing on injected violations at the bottom.
"""
import ast
import importlib
import json
from pathlib import Path

import pytest

from lowrank.core.glued import read_glue
from lowrank.experiments.registry import MODULES

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
MAX_CELL_LINES = 12


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


def glue_names(sources) -> set[str]:
    """The names a notebook calls glue by: glue itself and any alias of myst_nb's glue."""
    names = {"glue"}
    for src in sources:
        for n in ast.walk(_parse(src)):
            if isinstance(n, ast.ImportFrom) and n.module == "myst_nb":
                names |= {a.asname or a.name for a in n.names if a.name == "glue"}
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in names:
                names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return names


def _parse(src: str) -> ast.Module:
    return ast.parse("\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!"))))


def _is_glue(call: ast.Call, names) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id in names) or (isinstance(f, ast.Attribute) and f.attr == "glue")


def cell_problems(src: str, names=frozenset({"glue"})) -> list[str]:
    """What a code cell does that a chapter cell must not: define a function, class or lambda, or glue
    anything other than a figure (a literal chNN_fig_ key) or the loop over headline(...).items()
    (``names``: what the notebook calls glue by; ``myst_nb.glue`` counts too)."""
    tree = _parse(src)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    # names bound to a headline(...) result in the same cell: `H = X.headline(tables)`
    bound = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_headline_call(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    out = [f"defines {getattr(n, 'name', 'a lambda')}" for n in ast.walk(tree)
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))]
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_glue(n, names)):
        key = call.args[0] if call.args else None
        value = call.args[1] if len(call.args) > 1 else None
        if isinstance(key, ast.Constant) and "_fig_" in str(key.value):
            continue
        if isinstance(key, ast.Name) and isinstance(value, ast.Name) \
                and _in_headline_loop(call, (key.id, value.id), parents, bound):
            continue
        out.append(f"glue({ast.unparse(key) if key else ''}, ...) is neither a figure nor the headline loop")
    return out


def _is_headline_call(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "headline"


def _in_headline_loop(node, names, parents, bound=frozenset()) -> bool:
    """True when ``node`` sits in `for key, value in <...>headline(...).items():` (or `H.items()` with H
    bound to a headline result) and ``names`` are that loop's (key, value)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.For):
            it, target = node.iter, node.target
            pair = tuple(getattr(t, "id", None) for t in target.elts) if isinstance(target, ast.Tuple) else ()
            source = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and it.func.attr == "items" else None
            from_headline = _is_headline_call(source) or (isinstance(source, ast.Name) and source.id in bound)
            return from_headline and pair == tuple(names)
    return False


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_cells_define_nothing_and_glue_only_headlines_and_figures(stem):
    cells = _code_cells(stem)
    names = glue_names(cells)
    for src in cells:
        problems = cell_problems(src, names)
        assert not problems, f"{stem}: " + "; ".join(problems)


@pytest.mark.parametrize("src, problem", [
    ("f = lambda x: x", "defines a lambda"),
    ("def f():\n    pass", "defines f"),
    ("glue(name, 3.0)", "neither a figure"),
    ("glue('ch04_gap', 0.1)", "neither a figure"),
    ("for k, v in other.items():\n    glue(k, v)", "neither a figure"),
    ("for k, v in M.headline(t).items():\n    glue(v, k)", "neither a figure"),
    ("H = dict(a=1)\nfor k, v in H.items():\n    glue(k, v)", "neither a figure"),
    ("for k, v in M.headline(t).items():\n    glue(k, round(v, 2))", "neither a figure"),
    ("for k, v in M.headline(t).items():\n    glue(k, 3.0)", "neither a figure"),
    ("import myst_nb\nmyst_nb.glue('ch05_gap', 0.1)", "neither a figure"),
    ("g('ch05_gap', 0.1)", "neither a figure"),  # g: glue under another name (see glue_names)
    ("rows.sort(key=lambda r: r[1])", "defines a lambda"),
])
def test_the_cell_check_catches_each_violation(src, problem):
    assert any(problem in p for p in cell_problems(src, {"glue", "g"}))


def test_glue_is_followed_under_another_name():
    assert glue_names(["from myst_nb import glue as g", "paste = g"]) == {"glue", "g", "paste"}


def test_the_cell_check_allows_the_headline_loop_and_figures():
    assert not cell_problems("for key, value in M.headline(tables).items():\n    glue(key, value, display=False)")
    assert not cell_problems("glue('ch04_fig_gap', fig, display=False)")
    assert not cell_problems("H = X.headline(tables)\nfor k, v in H.items():\n    glue(k, v, display=False)")


# --- the top of a notebook: validate, run once, headline ------------------------------------------

def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _module_aliases(trees, module: str) -> set[str]:
    """Names the notebook binds to ``module`` (from lowrank.experiments import x as ch, import ... as ch)."""
    out = set()
    for n in (n for t in trees for n in ast.walk(t)):
        if isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out |= {a.asname or a.name for a in n.names if f"{n.module}.{a.name}" == module}
        elif isinstance(n, ast.Import):
            out |= {a.asname for a in n.names if a.name == module and a.asname}
    return out


def _calls_of(trees, aliases):
    """(function name, call) for every call of an attribute of the chapter's module: ch.run(P), ..."""
    return [(n.func.attr, n) for t in trees for n in ast.walk(t) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and n.func.value.id in aliases]


def top_problems(cells, stem: str) -> list[str]:
    """How a notebook's top differs from the chapter contract: the cell after the parameters cell
    (and after a setup cell of imports and ``use_style()``, if any) holds (after its imports) `P = validate("<stem>", globals())` and then `tables = ch.run(P)`, the
    notebook's one call of a run function of its module; some cell glues `ch.headline(tables)` in
    the headline loop (``cells``: the notebook's cells, as in its JSON)."""
    code = [c for c in cells if c["cell_type"] == "code"]
    first = next((i for i, c in enumerate(code) if "parameters" in _tags(c)), None)
    if first is None or first + 1 == len(code):
        return ["no code cell after a parameters cell"]
    trees = [_parse("".join(c["source"])) for c in code]
    own = f"lowrank.experiments.{MODULES[stem]}"
    aliases = _module_aliases(trees, own)
    if not aliases:
        return [f"the notebook does not import its module {own}"]
    out = []
    after = next((i for i in range(first + 1, len(trees)) if not _is_setup(trees[i])), first + 1)
    top = [ast.unparse(s) for s in trees[after].body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    if not top or top[0] != f"P = validate({stem!r}, globals())":
        out.append(f"the cell after the parameters cell does not start with P = validate({stem!r}, globals())")
    if not any(s == f"tables = {a}.run(P)" for a in sorted(aliases) for s in top[1:]):
        out.append("the cell after the parameters cell does not run tables = <chapter module>.run(P) after validating")
    runs = [name for name, _ in _calls_of(trees, aliases) if name.startswith("run")]
    if runs != ["run"]:
        out.append(f"the notebook calls its module's run functions {runs}; the chapter runs once, through run(P)")
    headlines = [c for name, c in _calls_of(trees, aliases) if name == "headline"]
    if not any(c.args and ast.unparse(c.args[0]) == "tables" for c in headlines):
        out.append("no headline(tables) call on the tables of run(P)")
    sources = ["".join(c["source"]) for c in code]
    looped = any(isinstance(n, ast.For) and any(_is_glue(g, glue_names(sources)) for g in ast.walk(n)
                                                 if isinstance(g, ast.Call))
                 and _loops_over_headline(n, trees) for t in trees for n in ast.walk(t))
    if not looped:
        out.append("no cell glues the headline in a loop: for key, value in H.items(): glue(key, value, display=False)")
    return out


def _is_setup(tree) -> bool:
    """A cell of imports and argument-free calls such as ``use_style()``: it may sit between the
    parameters cell and the top, and holds no logic."""
    return bool(tree.body) and all(isinstance(s, (ast.Import, ast.ImportFrom)) or (
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and not s.value.args and not s.value.keywords)
        for s in tree.body)


def _loops_over_headline(loop: ast.For, trees) -> bool:
    it = loop.iter
    source = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
        and it.func.attr == "items" else None
    bound = {t.id for tree in trees for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_headline_call(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    return _is_headline_call(source) or (isinstance(source, ast.Name) and source.id in bound)


def long_cells(cells, limit: int = MAX_CELL_LINES) -> list[str]:
    """Code cells over ``limit`` lines of source. The parameters cell is exempt: it lists every
    parameter papermill may set, one a line, and holds no logic."""
    code = [c for c in cells if c["cell_type"] == "code"]
    return [f"code cell {i} has {n} lines" for i, c in enumerate(code, 1)
            if (n := len("".join(c["source"]).splitlines())) > limit and "parameters" not in _tags(c)]


def _notebook_cells(stem):
    return json.loads((CHAPTERS / f"{stem}.ipynb").read_text(encoding="utf8"))["cells"]


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_the_notebook_top_validates_runs_once_and_takes_the_headline(stem):
    problems = top_problems(_notebook_cells(stem), stem)
    assert not problems, f"{stem}: " + "; ".join(problems)


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_no_code_cell_is_over_12_lines(stem):
    problems = long_cells(_notebook_cells(stem))
    assert not problems, f"{stem}: " + "; ".join(problems)


def _nb(*sources, params="seed = 0"):
    cells = [{"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": params}]
    return cells + [{"cell_type": "code", "metadata": {}, "source": s} for s in sources]


GOOD_TOP = ("from myst_nb import glue\nfrom lowrank.book.params import validate\n"
            "from lowrank.experiments import rank_barrier as ch\n\n"
            "P = validate('05_rank_barrier', globals())\ntables = ch.run(P)\nH = ch.headline(tables)\n"
            "for key, value in H.items():\n    glue(key, value, display=False)")


def test_the_contract_top_passes():
    assert not top_problems(_nb(GOOD_TOP), "05_rank_barrier")
    split = GOOD_TOP.split("\nH = ")
    assert not top_problems(_nb(split[0], "plot(tables)", "H = " + split[1]), "05_rank_barrier")
    assert not top_problems(_nb("import numpy as np\nuse_style()", GOOD_TOP), "05_rank_barrier")


@pytest.mark.parametrize("cells, problem", [
    ([GOOD_TOP.replace("P = validate('05_rank_barrier', globals())\n", "")], "does not start with P = validate"),
    ([GOOD_TOP.replace("'05_rank_barrier'", "'06_rank_saturation'")], "does not start with P = validate"),
    ([GOOD_TOP.replace("P = validate", "use_style()\nP = validate")], "does not start with P = validate"),
    (["use_style()\nseed = 1", GOOD_TOP], "does not start with P = validate"),
    (["use_style(dpi=200)", GOOD_TOP], "does not start with P = validate"),
    ([GOOD_TOP.replace("tables = ch.run(P)", "tables = ch.run(**P)")], "does not run tables"),
    ([GOOD_TOP.replace("tables = ch.run(P)", "tables = ch.run_barrier(P)")], "run functions ['run_barrier']"),
    ([GOOD_TOP.replace("tables = ch.run(P)\n", ""), "tables = ch.run(P)"], "does not run tables"),
    ([GOOD_TOP, "more = ch.run_counterexamples(seed)"], "run functions ['run', 'run_counterexamples']"),
    ([GOOD_TOP, "again = ch.run(P)"], "run functions ['run', 'run']"),
    ([GOOD_TOP.replace("H = ch.headline(tables)", "H = ch.headline(other)")], "no headline(tables)"),
    ([GOOD_TOP.replace("for key, value in H.items():\n    glue(key, value, display=False)", "H")], "no cell glues"),
    ([GOOD_TOP.replace("rank_barrier as ch", "rank_saturation as ch")], "does not import its module"),
])
def test_the_top_check_catches_each_violation(cells, problem):
    problems = top_problems(_nb(*cells), "05_rank_barrier")
    assert any(problem in p for p in problems), problems


def test_a_notebook_without_a_parameters_cell_is_caught():
    assert top_problems(_nb(GOOD_TOP, params="seed = 0")[1:], "05_rank_barrier") == ["no code cell after a parameters cell"]


def test_a_long_code_cell_is_caught_and_the_parameters_cell_is_exempt():
    lines = "\n".join(f"x{i} = {i}" for i in range(MAX_CELL_LINES + 1))
    assert long_cells(_nb(lines)) == [f"code cell 2 has {MAX_CELL_LINES + 1} lines"]
    assert not long_cells(_nb(lines.rsplit("\n", 1)[0], params=lines))
