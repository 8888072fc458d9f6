"""A claim's evidence as a typed record: the values its rule reads, by name and type.

A chapter hands its claims' evidence on as plain values (its headline, glued into the notebook and
written to its evidence file, :mod:`lowrank.experiments.evidence`). A claim's :class:`Record`
subclass names the values its rule reads, each a field with a type; :meth:`Record.read` takes
them from those plain values by key (``PREFIX`` and the field's name, or the key a field names
with :func:`value`), checks each against its type, and hands the rule one frozen object. The rule
reads ``e.inside_max_z``, never ``headline["ch05_inside_max_z"]``: a value it needs and the
chapter did not provide is named before the rule runs (:class:`MissingEvidence`), and a value of the
wrong kind (text where a number belongs) is an error, not a verdict.

A field's type is one of ``int``, ``float``, ``str``, ``bool``, ``tuple[T, ...]`` of those,
``T | None``, or ``Any`` (taken as it is). A float the experiment could not estimate is NaN; one
that a record carries nested (inside a list) comes back as None and reads as NaN. A field with a
default may be absent from the values.
"""
from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..verdicts import MissingEvidence

__all__ = ["Record", "EvidenceTypeError", "value"]


class EvidenceTypeError(TypeError):
    """A value of the chapter's evidence is not of the type its record declares (``key`` names it)."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message)
        self.key = key


def value(key: str = "", *, default: Any = dataclasses.MISSING) -> Any:
    """A field read from ``key`` (default: the record's ``PREFIX`` and the field's name), with an
    optional default used when the values lack it."""
    return dataclasses.field(default=default, metadata={"key": key} if key else {})


def _number(raw: Any, key: str, kind: type) -> Any:
    if raw is None and kind is float:
        return math.nan
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, float, np.number)):
        raise EvidenceTypeError(f"evidence {key!r} is {raw!r}, not a number", key)
    if kind is float:
        return float(raw)
    x = float(raw)
    if not x.is_integer():
        raise EvidenceTypeError(f"evidence {key!r} is {raw!r}, not a whole number", key)
    return int(x)


def _coerce(raw: Any, hint: Any, key: str) -> Any:
    """``raw`` as the type ``hint`` names, or EvidenceTypeError naming ``key``."""
    if hint is Any:
        return raw
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"evidence {key!r}: a field is one type or that type and None, not {hint!r}")
        return _coerce(raw, rest[0], key)
    if origin is tuple:
        if not isinstance(raw, (list, tuple)):
            raise EvidenceTypeError(f"evidence {key!r} is {raw!r}, not a list", key)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(x, args[0], f"{key}[{i}]") for i, x in enumerate(raw))
        if len(args) != len(raw):
            raise EvidenceTypeError(f"evidence {key!r} has {len(raw)} items, not {len(args)}", key)
        return tuple(_coerce(x, a, f"{key}[{i}]") for i, (x, a) in enumerate(zip(raw, args)))
    if hint in (int, float):
        return _number(raw, key, hint)
    if hint is bool:
        if isinstance(raw, (bool, np.bool_)):
            return bool(raw)
        raise EvidenceTypeError(f"evidence {key!r} is {raw!r}, not true or false", key)
    if hint is str:
        if isinstance(raw, str):
            return raw
        raise EvidenceTypeError(f"evidence {key!r} is {raw!r}, not text", key)
    raise TypeError(f"evidence {key!r}: a record field cannot be of type {hint!r}")


def _plain(x: Any) -> Any:
    if isinstance(x, tuple):
        return [_plain(v) for v in x]
    return x


class Record:
    """Base of a claim's evidence: subclass it as a frozen dataclass whose fields are the values the
    rule reads, and set ``PREFIX`` (``"ch05_"``) so that a field ``inside_max_z`` reads the value
    ``ch05_inside_max_z``."""
    PREFIX: ClassVar[str] = ""

    @classmethod
    def keys(cls) -> dict[str, str]:
        """Each field's name and the key of the value it reads, in field order."""
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} is not a dataclass: decorate it with @dataclass(frozen=True)")
        return {f.name: f.metadata.get("key") or cls.PREFIX + f.name for f in dataclasses.fields(cls)}

    @classmethod
    def read(cls, values: Mapping[str, Any]):
        """The record from ``values``: MissingEvidence names the first key a field needs and the
        values lack; EvidenceTypeError a value of the wrong type."""
        hints = typing.get_type_hints(cls)
        out = {}
        for f in dataclasses.fields(cls):
            key = f.metadata.get("key") or cls.PREFIX + f.name
            if key in values:
                out[f.name] = _coerce(values[key], hints[f.name], key)
            elif f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            else:
                hint = f": run chapter {key[2:4]} first" if re.match(r"ch\d\d_", key) else ""
                raise MissingEvidence(f"{cls.__name__} needs the value {key!r}, which the chapter did not provide"
                                      f"{hint}", key)
        return cls(**out)

    def values(self) -> dict[str, Any]:
        """The record as the plain values it was read from, by key (tuples as lists)."""
        keys = self.keys()
        return {keys[f.name]: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
