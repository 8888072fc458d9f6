"""Chapter parameters: their types, ranges and the rules between them.

A chapter module declares ``SCHEMA`` (name -> :class:`Param`) and ``CONSTRAINTS`` (rules over
several parameters); :func:`validate` checks a mapping of values against both and returns them
normalised. A bad value raises :class:`ParameterError` naming the parameter, the value and what
is allowed, so a papermill run stops at once instead of computing with nonsense.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["ParameterError", "Param", "short_repr", "SCALES", "MAX_LIST", "INT_CEILING", "Constraint", "check_constraints",
           "validate", "Int", "Float", "Bool", "Choice", "Str", "IntList", "FloatList", "ChoiceList", "divides",
           "shard_problem", "as_list", "contains", "distinct_at_least", "ascending", "same_length"]


class ParameterError(ValueError):
    """A chapter parameter is unknown, of the wrong type, or out of range."""


# The parameter sets of every chapter, smallest first: ``smoke`` (seconds, for tests), ``default``
# (the notebook's own parameters cell), ``long`` (hours on a CPU, stored) and ``paper`` (GPU).
SCALES = ("smoke", "default", "long", "paper")
MAX_LIST = 1024          # longest list a parameter accepts (a sweep over more values is a mistake)
INT_CEILING = 2**32 - 1  # an int parameter without an upper bound (a seed) stays below this:
                         # seeds are offset and passed to torch/NumPy, which overflow past int64


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, never expanding more of a nested or
    self-sharing value (a YAML "billion laughs" file) than it prints."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 2, 8, 8, 4, 4
    r.maxstring, r.maxother, r.maxlong = limit, limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class Param:
    kind: str  # int, float, bool, str, choice, int_list, float_list, choice_list
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    doc: str = ""
    min_len: int = 1
    allow_none: bool = False
    max_len: int = MAX_LIST
    distinct: bool = True  # lists: a value given twice would be run, and counted, twice

    def allowed(self) -> str:
        if self.kind in ("choice", "choice_list"):
            what = "one of " + ", ".join(repr(c) for c in self.choices)
            what = what if self.kind == "choice" else f"a non-empty list of {what}"
        else:
            base = {"int": "an int", "float": "a number", "bool": "True or False", "str": "a string",
                    "int_list": "a list of ints", "float_list": "a list of numbers"}[self.kind]
            rng = _range_text(self.lo, self._hi())
            what = f"{base}{' ' + rng if rng else ''}"
        if self.kind.endswith("_list"):
            what = f"{what} ({self.min_len} to {self.max_len} items{', no value twice' if self.distinct else ''})"
        return what + (" or None" if self.allow_none else "")

    def _hi(self):
        return INT_CEILING if self.hi is None and self.kind in ("int", "int_list") else self.hi

    def check(self, name: str, value: Any) -> Any:
        if value is None and self.allow_none:
            return None
        hi = self._hi()
        n_min, n_max = self.min_len, self.max_len
        ok = {
            "int": lambda v: _is_int(v) and _in_range(v, self.lo, hi),
            "float": lambda v: _is_num(v) and _in_range(v, self.lo, hi),
            "bool": lambda v: isinstance(v, bool),
            "str": lambda v: isinstance(v, str) and v != "" and len(v) <= 4096 and "\x00" not in v,
            "choice": lambda v: _is_scalar(v) and v in self.choices,
            "int_list": lambda v: _is_list(v, n_min, n_max) and all(_is_int(x) and _in_range(x, self.lo, hi) for x in v),
            "float_list": lambda v: _is_list(v, n_min, n_max) and all(_is_num(x) and _in_range(x, self.lo, hi) for x in v),
            "choice_list": lambda v: _is_list(v, n_min, n_max) and all(_is_scalar(x) and x in self.choices for x in v),
        }[self.kind]
        try:
            good = ok(value)
        except TypeError:
            good = False
        if not good:
            raise ParameterError(f"parameter {name!r} = {short_repr(value)} is not allowed: expected {self.allowed()}"
                                 + (f" ({self.doc})" if self.doc else ""))
        if self.kind.endswith("_list") and self.distinct:
            seen: set = set()
            twice = next((x for x in value if x in seen or seen.add(x)), None)
            if len(seen) < len(value):
                raise ParameterError(f"parameter {name!r} = {short_repr(value)} is not allowed: {short_repr(twice)} "
                                     f"is given more than once; expected {self.allowed()}")
        if self.kind == "float":
            return float(value)
        if self.kind == "float_list":
            return [float(x) for x in value]
        if self.kind.endswith("_list"):
            return list(value)
        return value


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _is_list(v, min_len: int, max_len: int = MAX_LIST) -> bool:
    return isinstance(v, (list, tuple)) and min_len <= len(v) <= max_len


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _in_range(v, lo, hi) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def _num_text(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"in [{_num_text(lo)}, {_num_text(hi)}]"
    if lo is not None:
        return f">= {_num_text(lo)}"
    if hi is not None:
        return f"<= {_num_text(hi)}"
    return ""


def Int(lo=None, hi=None, doc="", allow_none=False) -> Param:
    return Param("int", lo, hi, doc=doc, allow_none=allow_none)


def Float(lo=None, hi=None, doc="", allow_none=False) -> Param:
    return Param("float", lo, hi, doc=doc, allow_none=allow_none)


def Bool(doc="") -> Param:
    return Param("bool", doc=doc)


def Str(doc="") -> Param:
    return Param("str", doc=doc)


def Choice(*choices, doc="") -> Param:
    return Param("choice", choices=tuple(choices), doc=doc)


def IntList(lo=None, hi=None, doc="", min_len=1, max_len=MAX_LIST, distinct=True) -> Param:
    return Param("int_list", lo, hi, doc=doc, min_len=min_len, max_len=max_len, distinct=distinct)


def FloatList(lo=None, hi=None, doc="", min_len=1, max_len=MAX_LIST) -> Param:
    return Param("float_list", lo, hi, doc=doc, min_len=min_len, max_len=max_len)


def ChoiceList(*choices, doc="", min_len=1, max_len=MAX_LIST) -> Param:
    return Param("choice_list", choices=tuple(choices), doc=doc, min_len=min_len, max_len=max_len)


@dataclass(frozen=True)
class Constraint:
    """A rule over several parameters: ``rule(p)`` returns what is wrong (one line) or None."""

    names: tuple[str, ...]
    rule: Callable[[Mapping[str, Any]], str | None]


def divides(names_h: str, name_d: str):
    def rule(p):
        bad = [h for h in as_list(p[names_h]) if p[name_d] % h]
        return (f"{names_h} {short_repr(bad)} must divide {name_d} = {p[name_d]}" if bad else None)
    return rule


def shard_problem(value) -> str | None:
    """What is wrong with a ``shard`` value ('i/N', 0 <= i < N), or None (also for None: no shard)."""
    if value is None:
        return None
    parts = str(value).strip().split("/")
    if len(parts) == 2 and all(x.strip().isdigit() for x in parts):
        i, n = (int(x) for x in parts)
        if 0 <= i < n <= 1_000_000:
            return None
    return f"shard = {short_repr(value)} must look like 'i/N' with integers 0 <= i < N, e.g. '0/2'"


def as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def contains(name: str, value, why: str):
    return lambda p: None if value in p[name] else f"{name} must include {value!r} ({why}); got {short_repr(p[name])}"


def distinct_at_least(name: str, k: int, why: str):
    return lambda p: (None if len(set(p[name])) >= k
                      else f"{name} needs at least {k} different values ({why}); got {short_repr(p[name])}")


def ascending(name: str):
    return lambda p: (None if list(p[name]) == sorted(set(p[name]))
                      else f"{name} must be strictly ascending; got {short_repr(p[name])}")


def same_length(a: str, b: str):
    return lambda p: (None if len(p[a]) == len(p[b]) else
                      f"{b} needs one entry per {a} entry: {len(p[b])} given for {len(p[a])}")


def check_constraints(label: str, constraints, params: Mapping[str, Any]) -> None:
    """Apply ``constraints`` to a parameter set; raise ParameterError on the first broken one
    (naming the parameters and what is allowed). Rules whose names are not all in ``params``
    are skipped (a partial check)."""
    for c in constraints:
        if all(n in params for n in c.names):
            try:
                problem = c.rule(params)
            except (TypeError, ValueError, ZeroDivisionError):
                problem = None  # single-value checks report a value of the wrong type
            if problem:
                err = ParameterError(f"{label}: {problem}")
                err.names = c.names
                raise err


def validate(schema: Mapping[str, Param], values: Mapping[str, Any], *, constraints=(), label: str = "",
             partial: bool = False) -> dict[str, Any]:
    """Check values against ``schema`` (and ``constraints``); return them normalised (floats as
    float, lists as list).

    ``values`` may be a notebook's ``globals()``: only the schema's names are read from it, and
    every one must be present. With ``partial=True`` (overrides on a command line) only the
    given names are checked, unknown names are an error and constraints are not applied.
    """
    given = dict(values) if partial else {k: values[k] for k in schema if k in values}
    unknown = sorted((k for k in given if k not in schema), key=str)
    if unknown:
        raise ParameterError(f"unknown parameter(s) {', '.join(short_repr(k, 40) for k in unknown[:5])} for "
                             f"{label or 'this schema'}; allowed: {', '.join(schema)}")
    if not partial:
        missing = [k for k in schema if k not in given]
        if missing:
            raise ParameterError(f"missing parameter(s) {', '.join(map(repr, missing))} for {label or 'this schema'}")
    checked = {name: schema[name].check(name, value) for name, value in given.items()}
    if not partial:
        check_constraints(label, constraints, checked)
    return checked
