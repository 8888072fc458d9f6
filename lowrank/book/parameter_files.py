"""Parameter values as a user writes them: ``-p`` values and YAML parameter files.

Values are read as YAML 1.1 (safe loading), with two differences a user would expect: ``1e-3``
without a dot is a float, as in Python, and an octal or base-60 number (``010``, ``1:10``), a YAML
1.1 boolean word (``yes``, ``no``, ``on``, ``off``) or a name set twice is refused instead of read
silently as something else (``-p corpus no`` would be the boolean False). A file's leading comments
may declare what its run needs (``# requires: gpu``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..core.files import InputFileError, read_regular
from .costs import METADATA_KEY
from .errors import UsageError
from .params import short_repr

__all__ = ["KNOWN_REQUIREMENTS", "MAX_PARAMETER_FILE", "load_yaml", "parse_value", "load_parameter_file",
           "parameter_file_header"]

KNOWN_REQUIREMENTS = ("gpu",)
_REQUIRES = re.compile(r"^#\s*requires\s*:\s*(.*?)\s*$", re.IGNORECASE)
MAX_PARAMETER_FILE = 1 << 20  # bytes; a parameter file is a few lines


class _Loader(yaml.SafeLoader):
    """YAML 1.1 safe loading, plus floats written without a dot (``1e-3``), as Python reads them."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

# YAML 1.1 reads a leading-zero int as octal (010 -> 8, 0777 -> 511) and a colon-separated one as
# base 60 (1:10 -> 70); nobody typing a parameter means either, so such a value is refused.
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if _OCTAL.match(text) or ":" in text:
        kind = "octal" if _OCTAL.match(text) else "base 60 (sexagesimal)"
        value = yaml.SafeLoader.construct_yaml_int(loader, node)
        raise yaml.constructor.ConstructorError(
            None, None, f"{short_repr(text, 30)} would be read by YAML 1.1 as the {kind} number {value}; write "
            f"{value} if you mean that, or quote it (\"{text[:30]}\") for a string", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    if ":" in str(node.value):
        raise yaml.constructor.ConstructorError(
            None, None, f"{short_repr(str(node.value), 30)} would be read by YAML 1.1 as a base 60 (sexagesimal) "
            "number; write the number itself, or quote it for a string", node.start_mark)
    return yaml.SafeLoader.construct_yaml_float(loader, node)


# YAML 1.1 reads these words as booleans; only true and false mean one to a reader (and to YAML 1.2).
_BOOLEANS = {"true": True, "false": False}


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    text = str(node.value)
    value = yaml.SafeLoader.construct_yaml_bool(loader, node)
    if text.lower() not in _BOOLEANS:
        raise yaml.constructor.ConstructorError(
            None, None, f"{short_repr(text, 30)} would be read by YAML 1.1 as the boolean {value}; write "
            f"{str(value).lower()} if you mean that, or quote it (\"{text[:30]}\") for a string", node.start_mark)
    return value


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict:
    """A mapping whose keys are all different: with a key given twice YAML keeps the last one,
    so one of the two values a user wrote would be dropped without a word."""
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key: the base constructor names it
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"found the key {short_repr(key, 40)} twice (first at line {seen[key].line + 1}); "
                "each name may be set once", key_node.start_mark)
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def load_yaml(text: str) -> Any:
    """The one YAML reading of parameters (``lowrank run``, ``lowrank book``, the smoke tests):
    YAML 1.1 safe loading, with ``1e-3`` a float as in Python."""
    return yaml.load(text, Loader=_Loader)


def _yaml_problem(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = getattr(e, "problem", None) or type(e).__name__
    return f"{' '.join(str(what).split())[:240]}{where}"


def parse_value(text: str) -> Any:
    """Read one ``-p`` value as YAML: ``"48"`` -> 48, ``"[1, 2]"`` -> [1, 2], ``"1e-3"`` -> 0.001."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as e:
        raise UsageError(f"cannot read value {short_repr(text)} as YAML ({_yaml_problem(e)}); "
                         "quote strings and lists, e.g. -p head_dims '[1, 2, 4]'") from None


def load_parameter_file(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return (name -> value, requirements declared by ``# requires:`` in the leading comments)."""
    path = Path(path)
    text = _read_parameter_file(path)
    requires: list[str] = []
    for line in _header_lines(text):
        m = _REQUIRES.match(line)
        if m:
            requires += [r.strip().lower() for r in m.group(1).split(",") if r.strip()]
    unknown = sorted(set(requires) - set(KNOWN_REQUIREMENTS))
    if unknown:
        raise UsageError(f"{path}: unknown requirement(s) {', '.join(unknown)} in '# requires:'; "
                         f"known: {', '.join(KNOWN_REQUIREMENTS)}")
    try:
        values = load_yaml(text)
    except yaml.YAMLError as e:
        raise UsageError(f"parameter file {path} is not valid YAML ({_yaml_problem(e)})") from None
    values = {} if values is None else values
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise UsageError(f"parameter file {path} must be a mapping of parameter names to values, "
                         f"got {short_repr(values)}")
    values.pop(METADATA_KEY, None)  # what the set needs and costs (lowrank.book.costs), not a parameter
    return values, tuple(dict.fromkeys(requires))


def _read_parameter_file(path: Path) -> str:
    try:
        raw = read_regular(path, MAX_PARAMETER_FILE)
    except InputFileError as e:
        hint = "a parameter file is a few lines" if "larger" in str(e) else "expected a YAML file"
        raise UsageError(f"parameter file {path} {e}; {hint}") from None
    try:
        return raw.decode("utf8")
    except UnicodeDecodeError as e:
        raise UsageError(f"parameter file {path} is not UTF-8 text (byte {raw[e.start]:#04x} at offset "
                         f"{e.start}); expected a YAML file") from None


def parameter_file_header(path: Path) -> str:
    """The comment block at the top of a parameter file, without the ``#`` marks."""
    lines = _header_lines(_read_parameter_file(Path(path)))
    return "\n".join(line.lstrip("#").strip() for line in lines).strip()


def _header_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            break
        if line.strip():
            lines.append(line.strip())
    return lines
