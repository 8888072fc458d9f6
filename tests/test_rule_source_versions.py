"""The rules ledger's fingerprints read the syntax of the rules, which must not depend on the Python
that reads it: the README accepts any Python from 3.11 on."""
import ast
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lowrank.experiments.rule_source import syntax_text

ROOT = Path(__file__).resolve().parents[1]

# Prints one digest of every function and class of lowrank/experiments, read by syntax_text's own source.
_SCRIPT = r'''
import ast, hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
src = (root / "lowrank/experiments/rule_source.py").read_text()
fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "syntax_text")
ns = {}
exec("import ast\nfrom typing import Any\n" + ast.get_source_segment(src, fn), ns)
h = hashlib.sha256()
for p in sorted((root / "lowrank/experiments").rglob("*.py")):
    for node in ast.walk(ast.parse(p.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            h.update(ns["syntax_text"](node).encode())
print(h.hexdigest())
'''


def _other_pythons() -> list[str]:
    found = {shutil.which(f"python3.{m}") for m in (12, 13)}
    found |= set(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[23].*/bin/python")))
    out = []
    for exe in sorted(x for x in found if x):
        got = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] > (3, 11))"], capture_output=True,
                             text=True)
        if got.returncode == 0 and got.stdout.strip() == "True":
            out.append(exe)
    return out


def test_empty_fields_and_empty_fstring_parts_are_left_out():
    tree = ast.parse("f'{x:{y}}'\nreturn None", mode="exec")
    plain = syntax_text(tree)
    joined = tree.body[0].value
    joined.values[0].format_spec.values.append(ast.Constant(value=""))
    assert syntax_text(tree) == plain
    assert "kind" not in plain and "Constant()" in syntax_text(ast.parse("None"))
    assert syntax_text(ast.parse("x = 1")) != syntax_text(ast.parse("x = 2"))


@pytest.mark.parametrize("python", _other_pythons() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no Python 3.12 or later on this machine"))])
def test_every_rule_reads_the_same_on_later_pythons(python):
    here = subprocess.run([sys.executable, "-c", _SCRIPT, str(ROOT)], capture_output=True, text=True, check=True)
    there = subprocess.run([python, "-c", _SCRIPT, str(ROOT)], capture_output=True, text=True, check=True)
    assert there.stdout == here.stdout, f"{python} reads the rules' syntax differently"
