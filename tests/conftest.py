"""Fixtures shared by the test files (helpers they call directly are in helpers.py)."""
from __future__ import annotations

import signal

import pytest

from helpers import ROOT, Unchanged


@pytest.fixture
def unchanged(tmp_path):
    """Watches the book's chapters/ and the test's folder; the test calls ``check()``."""
    Unchanged.active = Unchanged(ROOT / "chapters", tmp_path)
    yield Unchanged.active
    Unchanged.active = None


@pytest.fixture
def untouched(unchanged):
    """Like ``unchanged``, checked when the test ends."""
    yield unchanged
    unchanged.check()


@pytest.fixture
def tiny_corpus(tmp_path, monkeypatch):
    """A folder of six short documents, with the data root (tokenizer and token caches) in the test's folder."""
    monkeypatch.setenv("LOWRANK_DATA", str(tmp_path / "data"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"{i}.txt").write_text(f"line {i} of a tiny corpus, with words to merge.\n" * 30)
    return docs


@pytest.fixture
def default_sigint():
    """Ctrl-C raises KeyboardInterrupt in this process during the test, as at a terminal, even when
    the tests run in the background with SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
