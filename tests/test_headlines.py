"""Every number a chapter glues comes from its experiment module's headline() dict.

Read from the committed notebooks: the glued keys (figures aside) are exactly the module's
HEADLINE_KEYS, no code cell defines a function or class, and every glue call is either the
headline loop or a figure (chNN_fig_*).
"""
import ast
import importlib
import json
from pathlib import Path

import pytest

from lowrank.book.glued import read_glue

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
# chapter notebook stem -> experiment module; a chapter joins once its cells call headline()
MODULES = {
    "01_attention_and_rank": "attention_rank",
    "08_synthesis": "synthesis",
    "07_trained_attention": "trained",
    "05_rank_barrier": "barrier",
    "06_rank_saturation": "saturation",
    "04_head_size_training": "headsize",
    "02_representation_theorem": "representation",
    "03_multihead_bottleneck": "multihead",
}


def _code_cells(stem):
    nb = json.loads((CHAPTERS / f"{stem}.ipynb").read_text(encoding="utf8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_glued_keys_are_the_headline_keys(stem):
    module = importlib.import_module(f"lowrank.experiments.{MODULES[stem]}")
    glued = {k for k in read_glue(CHAPTERS / f"{stem}.ipynb") if "_fig_" not in k}
    assert glued == set(module.HEADLINE_KEYS), (
        f"glued but not in HEADLINE_KEYS: {sorted(glued - set(module.HEADLINE_KEYS))}; "
        f"in HEADLINE_KEYS but not glued: {sorted(set(module.HEADLINE_KEYS) - glued)}")


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_cells_define_nothing_and_glue_only_headlines_and_figures(stem):
    for src in _code_cells(stem):
        tree = ast.parse("\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!"))))
        defs = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda))
                and hasattr(n, "name")]
        assert not defs, f"{stem}: a cell defines {defs}"
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            if getattr(call.func, "id", None) != "glue":
                continue
            key = call.args[0]
            literal_fig = isinstance(key, ast.Constant) and "_fig_" in str(key.value)
            assert literal_fig or isinstance(key, ast.Name), (
                f"{stem}: glue({ast.unparse(key)}, ...) is neither a figure nor the headline loop")
