"""Each chapter's evidence as data: the values its claims are judged on, written as JSON when the
chapter is executed for keeps, and read back by chapter 08 and the landing page by chapter.

A chapter that judges claims ends its headline cell with :func:`write_evidence`. The file,
``evidence/<stem>.json`` beside the executed notebooks, holds

- ``values``: every headline value of the chapter (``chNN_*``), as JSON values: text, numbers
  (a number the experiment could not estimate is written as ``NaN``, which Python's ``json``
  reads back), booleans, null, lists and objects;
- ``verdicts``: for each claim of the chapter, by key, the verdict and qualifier the chapter
  itself printed, so a test can see that chapter 08 judges the same values the same way;
- ``params``: the parameters the chapter ran with, and ``scale``: the set they came from;
- ``stores``: the sha256 and size of every results store the chapter read, so a store that
  changed after the chapter ran makes its evidence stale (:func:`stale_stores`).

Only an execution that keeps its outputs writes the file: the executor names the folder in
:data:`EVIDENCE_DIR_ENV` (``tools/execute_notebooks.py`` and ``make notebooks``: the committed
``chapters/evidence/``; ``lowrank run``: the run's ``files/evidence/``) and the scale in
:data:`SCALE_ENV`. Under nbval or a cached book build nothing is written. Chapter 08 never reads
another notebook, so the order in which chapters execute does not matter.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.files import atomic_write_text, sha256_file
from .verdicts import NOT_JUDGED, MissingEvidence

__all__ = ["EVIDENCE_DIR_ENV", "SCALE_ENV", "FOLDER", "FORMAT", "StoreStamp", "ChapterEvidence",
           "plain_value", "evidence_path", "store_stamps", "write_evidence", "read_evidence",
           "read_book_evidence", "stale_stores", "same_value"]

EVIDENCE_DIR_ENV = "LOWRANK_EVIDENCE_DIR"
SCALE_ENV = "LOWRANK_SCALE"
# The folder, beside the executed notebooks, that holds one evidence file per chapter.
FOLDER = "evidence"
# Bumped when the file's layout changes; a reader refuses a layout it does not know.
FORMAT = 1
# The kinds of path parameters (a chapter module's PATHS) that name a results store it reads.
_STORE_KINDS = ("store", "read_store")


@dataclass(frozen=True)
class StoreStamp:
    """A results store a chapter read: its parameter, its path as given, its sha256 and size."""
    param: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class ChapterEvidence:
    stem: str
    scale: str
    values: dict[str, Any]
    verdicts: dict[str, dict[str, str]]
    params: dict[str, Any]
    stores: tuple[StoreStamp, ...]

    @property
    def chapter(self) -> str:
        return self.stem[:2]


def plain_value(value: Any, where: str = "value") -> Any:
    """``value`` as JSON data (numpy scalars as Python numbers, tuples as lists); TypeError naming
    ``where`` for anything else (a figure, a table, an object), which does not belong in evidence."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return plain_value(item(), where)
    if isinstance(value, (list, tuple)):
        return [plain_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where} has the key {k!r}, not text")
            out[k] = plain_value(v, f"{where}[{k!r}]")
        return out
    raise TypeError(f"{where} is a {type(value).__name__}, not text, a number or a list: "
                    "evidence holds plain values only")


def evidence_path(folder: str | os.PathLike, stem: str) -> Path:
    return Path(folder) / FOLDER / f"{stem}.json"


def store_stamps(stem: str, params: Mapping[str, Any], base: str | os.PathLike = ".") -> tuple[StoreStamp, ...]:
    """The stores the chapter's parameters name (relative paths from ``base``) that exist, stamped."""
    from . import registry

    stamps = []
    for name, kind in sorted(registry.paths(stem).items()):
        value = params.get(name)
        if kind not in _STORE_KINDS or not value:
            continue
        path = Path(base) / str(value)
        if path.is_file():
            stamps.append(StoreStamp(name, str(value), sha256_file(path), path.stat().st_size))
    return tuple(stamps)


def _verdicts(stem: str, values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    from . import registry

    out = {}
    for claim in getattr(registry.module(stem), "CLAIMS", ()):
        try:
            j = claim.judge(values)
        except MissingEvidence as e:  # chapter 08 shows the row as not judged, naming the value
            out[claim.key] = {"verdict": NOT_JUDGED, "qualifier": f"no value {e.key}"}
            continue
        out[claim.key] = {"verdict": j.verdict, "qualifier": j.qualifier, "detail": j.detail}
    return out


def write_evidence(stem: str, values: Mapping[str, Any], params: Mapping[str, Any], *,
                   folder: str | os.PathLike | None = None, scale: str | None = None) -> None:
    """Write the chapter's evidence file, ``<stem>.json``, into ``folder`` (default: the folder
    :data:`EVIDENCE_DIR_ENV` names; when neither is given, write nothing). The values must all be
    plain (:func:`plain_value`). Returns nothing, so a notebook cell that ends with the call shows
    no output."""
    folder = folder if folder is not None else os.environ.get(EVIDENCE_DIR_ENV)
    if not folder:
        return None
    data = {
        "format": FORMAT,
        "stem": stem,
        "scale": scale or os.environ.get(SCALE_ENV) or "default",
        "params": plain_value({k: v for k, v in params.items()}, "params"),
        "stores": [vars(s) for s in store_stamps(stem, params)],
        "verdicts": _verdicts(stem, values),
        "values": plain_value(dict(values), "values"),
    }
    path = Path(folder) / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_evidence(path: str | os.PathLike) -> ChapterEvidence:
    """One evidence file, checked: ValueError naming the file for a layout it does not know."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"evidence file {path.name} is not JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"evidence file {path.name} has format {data.get('format') if isinstance(data, dict) else None!r}, "
                         f"not {FORMAT}: re-execute its chapter")
    missing = [k for k in ("stem", "scale", "values", "verdicts", "params", "stores") if k not in data]
    if missing:
        raise ValueError(f"evidence file {path.name} lacks {', '.join(missing)}: re-execute its chapter")
    return ChapterEvidence(stem=data["stem"], scale=data["scale"], values=dict(data["values"]),
                           verdicts=dict(data["verdicts"]), params=dict(data["params"]),
                           stores=tuple(StoreStamp(**s) for s in data["stores"]))


def read_book_evidence(folder: str | os.PathLike, stems: Iterable[str]) -> dict[str, ChapterEvidence]:
    """{stem: evidence} for each listed chapter whose evidence file exists under ``folder``."""
    found = {}
    for stem in stems:
        path = evidence_path(folder, stem)
        if path.is_file():
            found[stem] = read_evidence(path)
    return found


def stale_stores(evidence: ChapterEvidence, base: str | os.PathLike) -> list[str]:
    """What changed in the stores the evidence was computed from (paths relative to ``base``):
    one phrase per store that is gone or whose content differs; empty when none did."""
    out = []
    for s in evidence.stores:
        path = Path(base) / s.path
        if not path.is_file():
            out.append(f"{s.path} (parameter {s.param}) is gone")
        elif path.stat().st_size != s.size or sha256_file(path) != s.sha256:
            out.append(f"{s.path} (parameter {s.param}) changed after chapter {evidence.chapter} ran")
    return out


def same_value(a: Any, b: Any) -> bool:
    """Equality that counts NaN equal to NaN and a tuple equal to the list JSON gives back."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b
