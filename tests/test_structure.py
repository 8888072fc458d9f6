"""The package's layers, measured from its imports: library -> theory -> experiments -> book.

Every import counts, also one inside a function: a lazy import still ties two modules together.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "lowrank"
LAYERS = {"theory": 1, "experiments": 2, "book": 3}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, names imported from it) for every lowrank import in a file."""
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            if target.startswith("lowrank"):
                # "from . import runner" names a module, not an attribute
                subs = [f"{target}.{n}" for n in names if (ROOT.parent / f"{target}.{n}".replace(".", "/")).with_suffix(".py").exists()
                        or (ROOT.parent / f"{target}.{n}".replace(".", "/")).is_dir()]
                found += [(s, []) for s in subs]
                rest = [n for n in names if f"{target}.{n}" not in subs]
                if rest or not subs:
                    found.append((target, rest))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("lowrank")]
    return found


FILES = sorted(p for p in ROOT.rglob("*.py"))
GRAPH = {_module(p): {t for t, _ in _imports(p) if t != _module(p)} for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_layers_import_only_earlier_layers(path):
    mod = _module(path)
    if mod == "lowrank" or path.name == "__main__.py":
        return  # the package's lazy names and `python -m lowrank` sit above the layers
    for target, _ in _imports(path):
        assert _layer(target) <= _layer(mod), f"{mod} (layer {_layer(mod)}) imports {target} (layer {_layer(target)})"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_no_private_names_across_modules(path):
    for target, names in _imports(path):
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private, f"{_module(path)} imports private {private} from {target}"


def test_book_uses_experiments_only_through_run_functions_and_headline():
    for path in (ROOT / "book").rglob("*.py"):
        for target, names in _imports(path):
            if target.startswith("lowrank.experiments"):
                # costs: every chapter's estimate, counted from the grids the chapters build
                assert (target in ("lowrank.experiments.synthesis", "lowrank.experiments.costs")
                        or set(names) <= {"headline"}), (path, target, names)


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
