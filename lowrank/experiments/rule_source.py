"""What a verdict rests on, read from the source: the code of a claim's rule and of its measure, every
function and class of ``lowrank.experiments`` they reach, and the constants those read; and the
rule's printed sentence, with its constants filled in.

The walk follows a name (``need``), an attribute of a module or a class (``latent.paired_saturation``,
``_v.Judgement``, ``fair.JUDGED_STEPS``) and a placeholder of a docstring (``{MARGIN}``), transitively,
to every function and class defined in ``lowrank.experiments``. A function of another package
(numpy, torch, ``lowrank.measure.stats``) is not followed: the ledger fingerprints the book's own code. A
constant is a module-level or class-level value of plain data (numbers, texts, tuples and dicts of
them); it is named as its reader sees it, qualified by its module (``verdicts.REPRODUCED``) unless
it is read in the rule's own module.

A rule's docstring may name a constant in braces: ``{MARGIN}``, ``{fair.JUDGED_STEPS[1]:,}``,
``{RULE_LEVEL:percent}``. The name resolves in the rule's module, or names a module of the rule's
package (``fair`` beside ``rules``) that the package imports, looked up when the sentence is
rendered, so a rule may name a constant of a module that imports the rule's own. Besides Python's format specifications, a
placeholder takes ``percent`` (0.1 -> "10 %"), ``coverage`` (a level 0.05 -> "95 %"), ``word`` (2 -> "two"),
``count`` (a tuple's length)
and, for a tuple, a specification applied to each item, joined as "a, b and c".
"""
from __future__ import annotations

import ast
import inspect
import string
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["PACKAGE", "Reached", "walk", "render", "first_paragraph", "syntax_text"]

PACKAGE = "lowrank.experiments"
# Values a constant may take: plain data that prints and compares the same on every machine.
_PLAIN = (bool, int, float, str, type(None))
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def _plain(x: Any) -> bool:
    if isinstance(x, _PLAIN):
        return True
    if isinstance(x, (tuple, list, frozenset)):
        return all(_plain(v) for v in x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in x.items())
    return False


def _ours(obj: Any) -> bool:
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return isinstance(name, str) and (name == PACKAGE or name.startswith(PACKAGE + "."))


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def _followed(obj: Any) -> Any:
    """The function or class of ours that ``obj`` is (a decorated function unwrapped), else None."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    elif isinstance(obj, property):
        obj = obj.fget
    if callable(obj) and hasattr(obj, "__wrapped__"):
        obj = inspect.unwrap(obj)
    if isinstance(obj, (types.FunctionType, type)) and _ours(obj):
        return obj
    return None


def syntax_text(node: Any) -> str:
    """A syntax tree as text, the same on every Python from 3.11 on: a field that is empty (None or
    an empty list) is left out, as 3.13's ``ast.dump`` does, so a field a later version adds empty
    (3.12's ``type_params``) changes no fingerprint; so is an empty text part of an f-string (3.12
    writes one after a nested format specification)."""
    if isinstance(node, ast.JoinedStr):
        node = ast.JoinedStr(values=[v for v in node.values if not (isinstance(v, ast.Constant) and v.value == "")])
    if isinstance(node, ast.AST):
        fields = ((name, getattr(node, name, None)) for name in node._fields)
        return f"{type(node).__name__}(" + ", ".join(
            f"{name}={syntax_text(value)}" for name, value in fields if value is not None and value != []) + ")"
    if isinstance(node, list):
        return "[" + ", ".join(syntax_text(x) for x in node) + "]"
    return repr(node)


@dataclass(frozen=True)
class Reached:
    """What a walk found: the syntax-tree dumps of every function and class reached (sorted), each
    constant read, by name, with the module or class that holds it, and the qualified names of the
    functions and classes reached."""
    code: tuple[str, ...]
    constants: dict[str, Any]
    owners: dict[str, tuple[Any, str]]
    names: tuple[str, ...]


def _placeholders(doc: str | None) -> list[list[str]]:
    """The dotted names (as lists) the docstring's ``{...}`` placeholders read."""
    chains = []
    for _, field, _, _ in string.Formatter().parse(doc or ""):
        if field:
            head = field.split("[", 1)[0]
            chains.append(head.split("."))
    return chains


def _chains(tree: ast.AST) -> list[list[str]]:
    """Every name read in the tree, with the attributes taken of it (``a.b.c`` -> [a, b, c])."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.append([node.id])
        elif isinstance(node, ast.Attribute):
            parts, base = [], node
            while isinstance(base, ast.Attribute):
                parts.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                out.append([base.id, *reversed(parts)])
    return out


def _sibling(namespace: dict, name: str) -> Any:
    """The module ``name`` of the package holding the namespace's module, when it is imported (a
    package's ``__init__`` runs before any of its modules, so a module it imports is always there)."""
    package = namespace.get("__package__") or ""
    if not package.startswith(PACKAGE):
        return None
    return sys.modules.get(f"{package}.{name}")


def _namespace(obj: Any) -> dict:
    if isinstance(obj, types.FunctionType):
        return obj.__globals__
    module = sys.modules.get(obj.__module__)
    return vars(module) if module is not None else {}


def walk(*roots: Callable | None) -> Reached:
    """Everything the functions ``roots`` (None skipped) reach in lowrank.experiments; constants
    read in the first root's module keep their bare name."""
    roots = tuple(r for r in roots if r is not None)
    home = roots[0].__module__ if roots else ""
    code: list[str] = []
    names: list[str] = []
    consts: dict[str, Any] = {}
    owners: dict[str, tuple[Any, str]] = {}
    seen: set[int] = set()
    todo = list(roots)

    def keep(holder: Any, name: str, value: Any) -> None:
        where = f"{holder.__module__}.{holder.__qualname__}" if isinstance(holder, type) else holder.__name__
        key = name if where == home else f"{_short(where)}.{name}"
        consts[key] = value
        owners[key] = (holder, name)

    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        except (OSError, TypeError) as e:
            raise ValueError(f"cannot read the source of {getattr(obj, '__qualname__', obj)!r}: {e}") from None
        # Named by qualified name alone: moving a function to another module changes no decision.
        code.append(f"{obj.__qualname__}:{syntax_text(tree)}")
        names.append(f"{obj.__module__}.{obj.__qualname__}")
        ns = _namespace(obj)
        # The module whose names the code reads (a module loaded from a file and dropped from
        # sys.modules, as a test does, is named by its name alone).
        module = sys.modules.get(obj.__module__) or types.SimpleNamespace(__name__=obj.__module__)
        # A placeholder may name a module of the package; a name in the code only what the module binds.
        for chain, sibling in [(c, False) for c in _chains(tree)] + [(c, True) for c in _placeholders(obj.__doc__)]:
            if chain[0] in ns:
                value, holder = ns[chain[0]], module
            else:
                value, holder = (_sibling(ns, chain[0]) if sibling else None), None
                if value is None:
                    continue
            for depth, name in enumerate(chain):
                if depth:
                    if not ((isinstance(value, types.ModuleType) or isinstance(value, type)) and _ours(value)):
                        break
                    holder, value = value, inspect.getattr_static(value, name, None) if isinstance(value, type) \
                        else getattr(value, name, None)
                found = _followed(value)
                if found is not None:
                    todo.append(found)
                elif holder is not None and not isinstance(value, types.ModuleType) and _plain(value):
                    keep(holder, name, value)
    return Reached(tuple(sorted(code)), dict(sorted(consts.items())), owners, tuple(sorted(names)))


# --- the printed sentence ----------------------------------------------------------------------

def first_paragraph(doc: str | None) -> str:
    """A docstring up to its first blank line, on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


class _Sentence(string.Formatter):
    """Fills a rule's placeholders from the constants of its module (or of a module of its package)."""

    def __init__(self, rule: Callable):
        self.ns = getattr(inspect.unwrap(rule), "__globals__", {})

    def get_value(self, key, args, kwargs):
        if isinstance(key, int):
            raise ValueError("a rule's sentence names its constants; a positional {} names none")
        if key in self.ns:
            return self.ns[key]
        found = _sibling(self.ns, key)
        if found is None:
            raise KeyError(f"the rule's sentence names {key!r}, which is neither a name of "
                           f"{self.ns.get('__name__')} nor an imported module of its package")
        return found

    def format_field(self, value, spec):
        if isinstance(value, types.ModuleType) or not _plain(value):
            raise ValueError(f"a rule's sentence may print plain constants only, not {type(value).__name__}")
        if spec == "count":
            return str(len(value))
        if isinstance(value, (tuple, list)):
            items = [self.format_field(v, spec) for v in value]
            return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
        if spec == "percent":
            return f"{value * 100:g} %"
        if spec == "coverage":
            return f"{(1 - value) * 100:g} %"
        if spec == "word":
            return _WORDS[value] if isinstance(value, int) and 0 <= value < len(_WORDS) else format(value, "")
        return format(value, spec)


def render(rule: Callable) -> str:
    """The rule's sentence: its docstring's first paragraph on one line, placeholders filled in."""
    text = first_paragraph(rule.__doc__)
    return _Sentence(rule).format(text) if "{" in text or "}" in text else text
