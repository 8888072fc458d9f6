"""The package's layers, measured from its imports: library -> theory -> experiments -> book.

Every import counts, also one inside a function or through ``importlib.import_module``: a lazy
import still ties two modules together. The checks are functions of source text, so the tests
at the bottom inject each kind of violation into a scratch module and show that it is caught.
"""
import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "lowrank"
CHAPTERS = ROOT.parent / "chapters"
LAYERS = {"theory": 1, "experiments": 2, "book": 3}
# The experiment modules `book/` may import: the chapter registry (schemas, estimates), the judging
# machinery and the cost model, never a chapter's module by name.
BOOK_MAY_IMPORT = {"lowrank.experiments", "lowrank.experiments.registry", "lowrank.experiments.synthesis",
                   "lowrank.experiments.ledger", "lowrank.experiments.verdicts", "lowrank.experiments.costs"}
# Modules that may import by a computed name (the registry, which loads chapters by their names).
DYNAMIC_IMPORTERS = {"lowrank", "lowrank.experiments.registry", "lowrank.experiments.synthesis"}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or base.is_dir()


def imports(source: str, mod: str, *, is_package: bool = False, root: Path = ROOT):
    """(absolute lowrank module, names imported from it, how) for every import in a source text;
    how is "import", "from" or "importlib" ("importlib?" for a name computed at run time)."""
    package = mod if is_package else mod.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            if target.startswith("lowrank"):
                # "from . import runner" names a module, not an attribute
                subs = [f"{target}.{n}" for n in names if _is_module(f"{target}.{n}", root)]
                found += [(s, [], "from") for s in subs]
                rest = [n for n in names if f"{target}.{n}" not in subs]
                if rest or not subs:
                    found.append((target, rest, "from"))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], "import") for a in node.names if a.name.startswith("lowrank")]
        elif isinstance(node, ast.Call) and _callee(node) == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.startswith("lowrank"):
                    found.append((arg.value, [], "importlib"))
            else:
                found.append(("<computed>", [], "importlib?"))
    return found


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def module_aliases(source: str, mod: str, *, is_package: bool = False, root: Path = ROOT) -> dict[str, str]:
    """{local name: lowrank module} for every name a source binds to one of the package's modules."""
    package = mod if is_package else mod.rsplit(".", 1)[0]
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = (".".join(package.split(".")[: len(package.split(".")) - node.level + 1]) if node.level else "")
            target = ".".join(p for p in (base, node.module or "") if p)
            for a in node.names:
                full = f"{target}.{a.name}"
                if full.startswith("lowrank") and _is_module(full, root):
                    out[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lowrank") and a.asname:
                    out[a.asname] = a.name
    return out


def private_reaches(source: str, mod: str, **kw) -> list[str]:
    """`module._name` uses of another lowrank module's private names."""
    aliases = module_aliases(source, mod, **kw)
    return [f"{aliases[n.value.id]}.{n.attr}" for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases
            and n.attr.startswith("_") and not n.attr.startswith("__") and aliases[n.value.id] != mod]


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def violations(source: str, mod: str, **kw) -> list[str]:
    """Every rule a module's source breaks, as sentences."""
    out = []
    top = mod == "lowrank" or mod.endswith("__main__")  # the lazy top-level names sit above the layers
    for target, names, how in imports(source, mod, **kw):
        if how == "importlib?":
            if mod not in DYNAMIC_IMPORTERS:
                out.append(f"{mod} imports a module by a computed name")
            continue
        if not top and layer(target) > layer(mod):
            out.append(f"{mod} (layer {layer(mod)}) imports {target} (layer {layer(target)})")
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        if private:
            out.append(f"{mod} imports private {private} from {target}")
        if mod.startswith("lowrank.book") and target.startswith("lowrank.experiments") and target not in BOOK_MAY_IMPORT:
            out.append(f"{mod} imports the chapter module {target}; book/ uses chapters through their notebooks")
    out += [f"{mod} reaches the private name {p}" for p in private_reaches(source, mod, **kw)]
    return out


FILES = sorted(ROOT.rglob("*.py"))
GRAPH = {module_name(p): {t for t, _, how in imports(p.read_text(encoding="utf8"), module_name(p),
                                                         is_package=p.name == "__init__.py")
                          if t != module_name(p) and not how.endswith("?")} for p in FILES}


def test_the_module_graph_is_not_empty():
    # if the package moved, every test below would pass on nothing
    assert len(FILES) >= 30 and "lowrank.experiments.synthesis" in GRAPH
    assert sum(len(v) for v in GRAPH.values()) >= 50


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_module_follows_the_layer_rules(path):
    found = violations(path.read_text(encoding="utf8"), module_name(path), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_no_import_cycles():
    seen, stack = set(), []

    def visit(m):
        if m in stack:
            cycle = stack[stack.index(m):] + [m]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if m in seen:
            return
        stack.append(m)
        for t in GRAPH.get(m, ()):
            # a package's __init__ is not an edge back to its own modules
            if t in GRAPH and not (m.startswith(t + ".") and t != "lowrank"):
                visit(t)
        stack.pop()
        seen.add(m)

    for m in GRAPH:
        visit(m)


# --- notebooks ---------------------------------------------------------------------------------

def notebook_code(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return "\n".join(l for src in cells for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))


def notebook_experiment_imports(source: str) -> set[str]:
    """The experiment modules a notebook imports (by module, whatever the import form)."""
    found = set()
    for target, names, _ in imports(source, "chapters.notebook"):
        if target.startswith("lowrank.experiments"):
            found.add(target)
    return found


def _own_module(stem: str) -> str:
    from lowrank.experiments.registry import MODULES

    return f"lowrank.experiments.{MODULES[stem]}"


NOTEBOOKS = sorted(p for p in CHAPTERS.glob("[0-9]*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_imports_only_its_own_chapter_module(path):
    own = _own_module(path.stem)
    allowed = {"lowrank.experiments", own, "lowrank.experiments.verdicts"}
    if path.stem == "08_synthesis":
        allowed.add("lowrank.experiments.ledger")
    bad = {t for t in notebook_experiment_imports(notebook_code(path))
           if t not in allowed and not t.startswith(own + ".")}
    assert not bad, f"{path.stem} imports other chapters' modules: {sorted(bad)}"


# --- the checks catch what they are meant to catch ----------------------------------------------

@pytest.mark.parametrize("source, mod, expected", [
    ("from lowrank.book import runner", "lowrank.rank", "imports lowrank.book.runner (layer 3)"),
    ("import importlib\nimportlib.import_module('lowrank.book.cli')", "lowrank.rank", "(layer 3)"),
    ("from importlib import import_module\nimport_module(f'lowrank.{x}')", "lowrank.rank", "computed name"),
    ("from lowrank.stats import _t_quantile", "lowrank.fit", "imports private"),
    ("from lowrank import stats as st\nst._t_quantile(3)", "lowrank.fit", "private name lowrank.stats._t_quantile"),
    ("from lowrank.experiments import head_size_training", "lowrank.book.runner", "imports the chapter module"),
    ("from lowrank.experiments.head_size_training import headline", "lowrank.book.runner", "imports the chapter module"),
])
def test_each_injected_violation_is_caught(source, mod, expected):
    found = violations(source, mod)
    assert any(expected in f for f in found), found


def test_allowed_imports_are_not_flagged():
    assert not violations("from lowrank.experiments import synthesis\nfrom lowrank import rank", "lowrank.book.glued")
    assert not violations("from . import verdicts as _v\n_v.need({}, 'x')\n_v.__doc__", "lowrank.experiments.rank_barrier")
    assert not violations("import importlib\nimportlib.import_module(f'{__package__}.{n}')",
                          "lowrank.experiments.synthesis")


def test_a_notebook_reaching_another_chapter_is_caught():
    src = "from lowrank.experiments import rank_saturation as S\nfrom lowrank.experiments.rank_barrier import run"
    assert notebook_experiment_imports(src) == {"lowrank.experiments.rank_saturation", "lowrank.experiments.rank_barrier"}
