"""Files written whole or not at all, and the book's root folder."""
import json
import os
from pathlib import Path

import pytest

from lowrank.core import files


def test_the_book_root_holds_the_package_and_the_chapters():
    assert files.BOOK_ROOT == files.PACKAGE_ROOT.parent
    assert (files.BOOK_ROOT / "lowrank" / "core" / "files.py").is_file() and (files.BOOK_ROOT / "chapters").is_dir()


def test_atomic_writes_replace_the_file_and_leave_nothing_beside_it(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("old")
    assert files.atomic_write_json(path, {"b": 1, "a": [1, 2]}) == path
    assert path.read_text() == json.dumps({"b": 1, "a": [1, 2]}, indent=1) + "\n"
    files.atomic_write_json(path, {"x": object()}, indent=2, default=repr)
    assert json.loads(path.read_text())["x"].startswith("<object object")
    files.atomic_write_text(path, "näive\n")
    assert path.read_text(encoding="utf8") == "näive\n"
    assert os.listdir(tmp_path) == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"last good")

    def half_then_fail(tmp):
        tmp.write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        files.atomic_write(path, half_then_fail)
    assert path.read_bytes() == b"last good"
    assert os.listdir(tmp_path) == ["checkpoint.pt"]
    with pytest.raises(TypeError):  # not JSON: nothing written either
        files.atomic_write_json(path, {"x": object()})
    assert path.read_bytes() == b"last good" and os.listdir(tmp_path) == ["checkpoint.pt"]


def test_in_book_keeps_absolute_and_existing_paths_and_resolves_the_rest_against_the_book(tmp_path, monkeypatch):
    assert files.in_book(tmp_path / "x.jsonl") == tmp_path / "x.jsonl"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.jsonl").write_text("")
    assert files.in_book("here.jsonl") == Path("here.jsonl")
    assert files.in_book("data/results/none.jsonl") == files.BOOK_ROOT / "data/results/none.jsonl"
