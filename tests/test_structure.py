"""The package's layers, measured from its imports: the library's folders (core -> measure ->
layers -> data -> train -> probes -> tasks -> stores), then theory -> experiments -> book.

Every import counts, also one inside a function, through ``importlib.import_module`` (under any
name) or reached as an attribute of an imported package: a lazy import still ties two modules
together. The checks are functions of source text, so the tests at the bottom inject each kind of
violation into a scratch source and show that it is caught.
"""
import ast
import json
from pathlib import Path

import pytest

from lowrank.experiments.registry import MODULES

ROOT = Path(__file__).resolve().parents[1] / "lowrank"
CHAPTERS = ROOT.parent / "chapters"
# The library's folders in layer order, from what every layer leans on to the result stores; a
# module may import its own folder and the folders before it, never one after it.
LIBRARY = ("core", "measure", "layers", "data", "train", "probes", "tasks", "stores")
LAYERS = {name: rank for rank, name in enumerate((*LIBRARY, "theory", "experiments", "book"))}
# The experiment modules `book/` may import: the chapter registry (schemas, estimates), the judging
# machinery (with the evidence files it reads) and the cost model, never a chapter's module by name.
BOOK_MAY_IMPORT = {"lowrank.experiments", "lowrank.experiments.registry", "lowrank.experiments.synthesis",
                   "lowrank.experiments.ledger", "lowrank.experiments.verdicts", "lowrank.experiments.costs",
                   "lowrank.experiments.evidence"}
# Modules that may import by a computed name (the registry and the claim collector, which load
# chapters by their names).
DYNAMIC_IMPORTERS = {"lowrank", "lowrank.experiments.registry", "lowrank.experiments.claims"}
# Each chapter's module or package; tools several chapters use live outside them (experiments.shared).
CHAPTER_MODULES = {f"lowrank.experiments.{name}" for name in MODULES.values()}
MAX_MODULE_LINES = 600


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or base.is_dir()


def _package(mod: str, is_package: bool) -> str:
    return mod if is_package else mod.rsplit(".", 1)[0]


def _relative(name: str, level: int, package: str) -> str:
    """The absolute name of `from <level dots><name> import ...` inside ``package``."""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - level + 1] + ([name] if name else []))


def _import_callers(tree: ast.AST) -> set[str]:
    """Local names that import a module by a string: import_module (under any alias) and __import__."""
    names = {"import_module", "__import__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            names |= {a.asname or a.name for a in node.names if a.name == "import_module"}
    return names


def _imported_by_call(node: ast.AST, callers: set[str], package: str) -> str | None:
    """The module a call such as ``importlib.import_module("lowrank.x")`` loads: its name, "" for
    a module outside lowrank, "<computed>" for a name computed at run time, None for another call."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    f = node.func
    is_import = (isinstance(f, ast.Name) and f.id in callers) or \
        (isinstance(f, ast.Attribute) and f.attr in ("import_module", "__import__"))
    if not is_import:
        return None
    arg = node.args[0]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return "<computed>"
    name = arg.value
    if name.startswith("."):  # import_module(".x", __package__): relative to the caller's package
        level = len(name) - len(name.lstrip("."))
        name = _relative(name.lstrip("."), level, package)
    return name if name.startswith("lowrank") else ""


def module_aliases(source: str, mod: str, *, is_package: bool = False, root: Path = ROOT) -> dict[str, str]:
    """{local name: lowrank module} for every name a source binds to one of the package's modules:
    `import lowrank.x` (binds lowrank), `import lowrank.x as y`, `from lowrank import x`, relative
    imports, and `y = importlib.import_module("lowrank.x")`."""
    package = _package(mod, is_package)
    tree = ast.parse(source)
    callers = _import_callers(tree)
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _relative(node.module or "", node.level, package) if node.level else (node.module or "")
            for a in node.names:
                full = f"{target}.{a.name}"
                if full.startswith("lowrank") and _is_module(full, root):
                    out[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lowrank"):
                    out[a.asname or "lowrank"] = a.name if a.asname else "lowrank"
        elif isinstance(node, ast.Assign):
            loaded = _imported_by_call(node.value, callers, package)
            if loaded and loaded != "<computed>":
                out.update({t.id: loaded for t in node.targets if isinstance(t, ast.Name)})
    return out


def _dotted(node: ast.AST) -> list[str]:
    """["a", "b", "c"] for the expression a.b.c, [] for anything not rooted at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


def attribute_reaches(source: str, mod: str, *, root: Path = ROOT, **kw) -> set[tuple[str, str]]:
    """(module, attribute) for every `alias.attr...` chain rooted at a name bound to a lowrank module:
    the module is the longest prefix of the chain that is a module of the package, the attribute
    the name taken from it ("" when the chain ends at the module)."""
    aliases = module_aliases(source, mod, root=root, **kw)
    found = set()
    for node in ast.walk(ast.parse(source)):
        chain = _dotted(node) if isinstance(node, ast.Attribute) else []
        if not chain or chain[0] not in aliases:
            continue
        full = aliases[chain[0]].split(".") + chain[1:]
        depth = len(aliases[chain[0]].split("."))
        while depth < len(full) and _is_module(".".join(full[: depth + 1]), root):
            depth += 1
        found.add((".".join(full[:depth]), full[depth] if depth < len(full) else ""))
    return found


def imports(source: str, mod: str, *, is_package: bool = False, root: Path = ROOT):
    """(absolute lowrank module, names imported from it, how) for every import in a source text;
    how is "import", "from", "importlib" ("importlib?" for a name computed at run time) or
    "attribute" (a submodule reached as `package.module`)."""
    package = _package(mod, is_package)
    tree = ast.parse(source)
    callers = _import_callers(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _relative(node.module or "", node.level, package) if node.level else (node.module or "")
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
        else:
            loaded = _imported_by_call(node, callers, package)
            if loaded == "<computed>":
                found.append((loaded, [], "importlib?"))
            elif loaded:
                found.append((loaded, [], "importlib"))
    found += [(m, [], "attribute") for m, _ in attribute_reaches(source, mod, is_package=is_package, root=root)]
    return found


def private_reaches(source: str, mod: str, **kw) -> list[str]:
    """`module._name` uses of another lowrank module's private names (also `lowrank.x._name`)."""
    return sorted(f"{m}.{attr}" for m, attr in attribute_reaches(source, mod, **kw)
                  if attr.startswith("_") and not attr.startswith("__") and m != mod)


def layer_name(module: str) -> str | None:
    """The layer folder holding ``module`` ("core" for the package itself, which holds only its
    version and the lazy top-level names), None for a module outside every layer folder."""
    parts = module.split(".")
    if len(parts) == 1:
        return "core"
    return parts[1] if parts[1] in LAYERS else None


def layer(module: str) -> int | None:
    name = layer_name(module)
    return None if name is None else LAYERS[name]


def violations(source: str, mod: str, **kw) -> list[str]:
    """Every layer rule a module's source breaks, as sentences."""
    out = []
    top = mod == "lowrank" or mod.endswith("__main__")  # the lazy top-level names sit above the layers
    if not top and layer(mod) is None:
        out.append(f"{mod} sits outside the layer folders {', '.join(LAYERS)}")
    for target, names, how in imports(source, mod, **kw):
        if how == "importlib?":
            if mod not in DYNAMIC_IMPORTERS:
                out.append(f"{mod} imports a module by a computed name")
            continue
        # a target outside every folder is reported at its own file
        if not top and None not in (layer(mod), layer(target)) and layer(target) > layer(mod):
            out.append(f"{mod} ({layer_name(mod)}) imports {target} ({layer_name(target)}), a later layer")
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        if private:
            out.append(f"{mod} imports private {private} from {target}")
        if mod.startswith("lowrank.book") and target.startswith("lowrank.experiments") and target not in BOOK_MAY_IMPORT:
            out.append(f"{mod} imports the chapter module {target}; book/ uses chapters through the registry")
    out += [f"{mod} reaches the private name {p}" for p in private_reaches(source, mod, **kw)]
    return out


def chapter_of(module: str) -> str | None:
    """The chapter module (or package) that ``module`` belongs to, None outside every chapter."""
    return next((c for c in CHAPTER_MODULES if module == c or module.startswith(c + ".")), None)


def chapter_violations(source: str, mod: str, **kw) -> list[str]:
    """A chapter module importing another chapter's module (shared tools belong outside chapters)."""
    own = chapter_of(mod)
    if own is None:
        return []
    return sorted({f"{mod} imports {t}, a module of another chapter" for t, _, how in imports(source, mod, **kw)
                   if chapter_of(t) not in (None, own)})


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the lowrank modules it imports} for every module file under ``root``."""
    graph = {}
    for p in sorted(root.rglob("*.py")):
        mod = module_name(p, root)
        found = imports(p.read_text(encoding="utf8"), mod, is_package=p.name == "__init__.py", root=root)
        graph[mod] = {t for t, _, how in found if t != mod and not how.endswith("?")}
    return graph


def graph_problems(graph: dict[str, set[str]]) -> list[str]:
    """Why a module graph cannot be the package's: too few modules or edges, experiments missing.
    Every rule above passes on an empty graph, so an empty graph must fail on its own."""
    out = []
    if len(graph) < 30:
        out.append(f"only {len(graph)} modules found under {ROOT} (the package moved, or the walk found nothing)")
    if sum(len(v) for v in graph.values()) < 50:
        out.append("fewer than 50 imports between the package's modules")
    if "lowrank.experiments.synthesis" not in graph:
        out.append("lowrank.experiments.synthesis is not in the graph")
    return out


FILES = sorted(ROOT.rglob("*.py"))
GRAPH = module_graph()


def _files_or_failure(files):
    # an empty parameter list would make pytest skip the test: one failing case instead
    return files or [pytest.param(None, id="no-modules-found")]


def test_the_module_graph_is_not_empty():
    problems = graph_problems(GRAPH)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", _files_or_failure(FILES), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_module_follows_the_layer_rules(path):
    assert path is not None, f"no module found under {ROOT}"
    found = violations(path.read_text(encoding="utf8"), module_name(path), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


CHAPTER_FILES = [p for p in FILES if chapter_of(module_name(p))]


@pytest.mark.parametrize("path", _files_or_failure(CHAPTER_FILES), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chapter_module_imports_another_chapter(path):
    assert path is not None, f"no chapter module found under {ROOT}"
    found = chapter_violations(path.read_text(encoding="utf8"), module_name(path), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_every_chapter_has_its_module():
    assert CHAPTER_FILES and all(_is_module(c, ROOT) for c in CHAPTER_MODULES), sorted(CHAPTER_MODULES)


def too_long(text: str, limit: int = MAX_MODULE_LINES) -> str | None:
    n = len(text.splitlines())
    return f"{n} lines (the limit is {limit}): split it along its jobs" if n > limit else None


@pytest.mark.parametrize("path", _files_or_failure(FILES), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_600_lines(path):
    assert path is not None, f"no module found under {ROOT}"
    problem = too_long(path.read_text(encoding="utf8"))
    assert problem is None, f"{path.relative_to(ROOT.parent)}: {problem}"


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

    assert GRAPH, f"no module found under {ROOT}"
    for m in GRAPH:
        visit(m)


# --- notebooks ---------------------------------------------------------------------------------

def notebook_code(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return "\n".join(l for src in cells for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))


def notebook_experiment_imports(source: str) -> set[str]:
    """The experiment modules a notebook imports (by module, whatever the import form)."""
    return {target for target, _, _ in imports(source, "chapters.notebook") if target.startswith("lowrank.experiments")}


def _own_module(stem: str) -> str:
    return f"lowrank.experiments.{MODULES[stem]}"


def notebook_problems(source: str, stem: str) -> list[str]:
    """The experiment modules a chapter's code imports besides its own (the verdicts, and the
    evidence file every judging chapter writes)."""
    own = _own_module(stem)
    allowed = {"lowrank.experiments", own, "lowrank.experiments.verdicts", "lowrank.experiments.evidence"}
    return sorted(f"{stem} imports {t}, another chapter's module" for t in notebook_experiment_imports(source)
                  if t not in allowed and not t.startswith(own + "."))


NOTEBOOKS = sorted(p for p in CHAPTERS.glob("[0-9]*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS or [pytest.param(None, id="no-notebooks")],
                         ids=lambda p: getattr(p, "stem", None))
def test_a_notebook_imports_only_its_own_chapter_module(path):
    assert path is not None, f"no notebook found in {CHAPTERS}"
    problems = notebook_problems(notebook_code(path), path.stem)
    assert not problems, "\n".join(problems)


# --- the checks catch what they are meant to catch ----------------------------------------------

@pytest.mark.parametrize("source, mod, expected", [
    ("from lowrank.book import runner", "lowrank.measure.rank", "imports lowrank.book.runner (book)"),
    ("import importlib\nimportlib.import_module('lowrank.book.cli')", "lowrank.measure.rank", "(book)"),
    ("import importlib\nimportlib.import_module('lowrank.book')", "lowrank.measure.rank", "imports lowrank.book (book)"),
    ("from importlib import import_module as load\nload('lowrank.book.cli')", "lowrank.measure.rank", "(book)"),
    ("__import__('lowrank.book.cli')", "lowrank.measure.rank", "(book)"),
    ("import importlib\nimportlib.import_module('..book.cli', __package__)", "lowrank.theory.barrier",
     "imports lowrank.book.cli (book)"),
    ("import lowrank.book.runner", "lowrank.experiments.rank_barrier", "(book)"),
    ("from importlib import import_module\nimport_module(f'lowrank.{x}')", "lowrank.measure.rank", "computed name"),
    ("from lowrank.measure.stats import _t_quantile", "lowrank.tasks.fit", "imports private"),
    ("from lowrank.measure import stats as st\nst._t_quantile(3)", "lowrank.tasks.fit",
     "private name lowrank.measure.stats._t_quantile"),
    ("import lowrank.measure.stats\nlowrank.measure.stats._t_quantile(3)", "lowrank.tasks.fit",
     "private name lowrank.measure.stats._t_quantile"),
    ("from ..measure import stats\nstats._t_quantile(3)", "lowrank.tasks.fit", "private name lowrank.measure.stats._t_quantile"),
    ("import importlib\nst = importlib.import_module('lowrank.measure.stats')\nst._t_quantile(3)", "lowrank.tasks.fit",
     "private name lowrank.measure.stats._t_quantile"),
    # the library's folders among themselves
    ("from ..layers.models import Block", "lowrank.core.files", "imports lowrank.layers.models (layers), a later layer"),
    ("from ..tasks.plateau import PlateauConfig", "lowrank.probes.probe", "imports lowrank.tasks.plateau (tasks)"),
    ("from ..stores.sweep import sweep", "lowrank.train.loop", "imports lowrank.stores.sweep (stores)"),
    ("from lowrank.probes import probe", "lowrank.data.corpora", "imports lowrank.probes.probe (probes)"),
    ("from ..theory.barrier import expected_distinct_columns", "lowrank.tasks.retrieval", "(theory)"),
    ("x = 1", "lowrank.helpers", "lowrank.helpers sits outside the layer folders"),
    ("from lowrank.experiments import head_size_training", "lowrank.book.runner", "imports the chapter module"),
    ("from lowrank.experiments.head_size_training import headline", "lowrank.book.runner", "imports the chapter module"),
    ("from ..experiments import rank_barrier", "lowrank.book.cells", "imports the chapter module"),
    ("import lowrank.experiments as E\nE.rank_barrier.headline({})", "lowrank.book.runner",
     "imports the chapter module lowrank.experiments.rank_barrier"),
    ("import importlib\nimportlib.import_module('lowrank.experiments.rank_barrier')", "lowrank.book.runner",
     "imports the chapter module"),
])
def test_each_injected_violation_is_caught(source, mod, expected):
    found = violations(source, mod)
    assert any(expected in f for f in found), found


def test_allowed_imports_are_not_flagged():
    assert not violations("from lowrank.experiments import synthesis\nfrom lowrank.measure import rank",
                          "lowrank.book.synthesis_figures")
    assert not violations("from lowrank.experiments import registry\nregistry.module('05')", "lowrank.book.params")
    assert not violations("from . import verdicts as _v\n_v.need({}, 'x')\n_v.__doc__", "lowrank.experiments.rank_barrier")
    assert not violations("from . import stats\nstats._t_quantile(3)", "lowrank.measure.stats")  # its own private names
    assert not violations("from .attention import causal_mask\nfrom ..measure.rank import hardmax_rank\n"
                          "from ..core.files import atomic_write", "lowrank.layers.mla")  # its own folder, earlier ones
    assert not violations("from .. import __version__\nfrom ..train import TrainConfig", "lowrank.probes.run")
    assert not violations("import importlib\nimportlib.import_module(f'{__package__}.{n}')",
                          "lowrank.experiments.claims")


@pytest.mark.parametrize("source, mod", [
    ("from .rank_barrier import attention_rank_table", "lowrank.experiments.rank_saturation"),
    ("from lowrank.experiments import rank_saturation", "lowrank.experiments.trained_attention.rules"),
    ("from ..rank_saturation import fit_laws", "lowrank.experiments.trained_attention.rules"),
    ("import importlib\nimportlib.import_module('lowrank.experiments.rank_barrier')", "lowrank.experiments.rank_saturation"),
    ("from .. import head_size_training as hs\nhs.run_long({})", "lowrank.experiments.trained_attention.reduction"),
])
def test_a_chapter_importing_another_chapter_is_caught(source, mod):
    assert chapter_violations(source, mod), source


def test_a_chapter_may_import_its_own_modules_and_shared_tools():
    assert not chapter_violations("from .rules import CLAIMS\nfrom ..shared.laws import law_value\n"
                                  "from ..verdicts import REPRODUCED", "lowrank.experiments.trained_attention.reduction")
    assert not chapter_violations("from lowrank.experiments.shared import montecarlo", "lowrank.experiments.rank_barrier")
    assert not chapter_violations("from .rank_barrier import x", "lowrank.experiments.costs")  # not a chapter


def test_an_empty_module_graph_fails(tmp_path):
    assert graph_problems(module_graph(tmp_path / "lowrank")) and graph_problems({})
    (tmp_path / "lowrank").mkdir()
    (tmp_path / "lowrank" / "rank.py").write_text("from . import stats\n")
    assert any("only 1 modules" in p for p in graph_problems(module_graph(tmp_path / "lowrank")))
    assert _files_or_failure([])[0].values == (None,)  # the parametrised tests then fail instead of skipping


def test_a_module_over_the_limit_is_caught():
    assert too_long("x = 1\n" * (MAX_MODULE_LINES + 1)) and not too_long("x = 1\n" * MAX_MODULE_LINES)


@pytest.mark.parametrize("src, stem, reached", [
    ("from lowrank.experiments import rank_saturation as S\nfrom lowrank.experiments.rank_barrier import run",
     "05_rank_barrier", "rank_saturation"),
    ("from lowrank.experiments.rank_barrier import run", "06_rank_saturation", "rank_barrier"),
    ("import lowrank.experiments as E\nE.rank_barrier.run({})", "06_rank_saturation", "rank_barrier"),
    ("import importlib\nimportlib.import_module('lowrank.experiments.synthesis')", "07_trained_attention", "synthesis"),
    ("from lowrank.experiments import ledger", "05_rank_barrier", "ledger"),
])
def test_a_notebook_reaching_another_chapter_is_caught(src, stem, reached):
    assert any(f"lowrank.experiments.{reached}," in p for p in notebook_problems(src, stem)), notebook_problems(src, stem)


def test_a_notebook_may_import_its_own_chapter_and_the_verdicts():
    assert not notebook_problems("from lowrank.experiments import rank_barrier as ch\n"
                                 "from lowrank.experiments.verdicts import REPRODUCED", "05_rank_barrier")
    assert not notebook_problems("from lowrank.experiments.trained_attention.rules import CLAIMS", "07_trained_attention")
