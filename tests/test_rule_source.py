"""What the rules ledger fingerprints (lowrank.experiments.rule_source): the rule, its measure and
everything of lowrank.experiments they reach, through names, module and class attributes and
docstring placeholders; and rule sentences built from the constants they name."""
import html
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from lowrank.experiments import ledger as L
from lowrank.experiments import rule_source as R
from lowrank.experiments.claims import collect_claims
from lowrank.experiments.verdicts import Claim

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def load(tmp_path, monkeypatch):
    """load(name, source): a module lowrank.experiments.<name> from source, importable by that name
    for the rest of the test."""
    count = iter(range(1000))

    def make(name, source):
        folder = tmp_path / str(next(count))  # a fresh file each time: inspect caches sources by path
        folder.mkdir()
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(f"lowrank.experiments.{name}", path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        return module
    return make


HELPER = '''
LIMIT = 0.5  # the pre-stated margin

def scale(x):
    return x * 2

class Box:
    FLOOR = 1

    def value(self, x):
        return max(x, self.FLOOR)
'''

RULE = '''
import numpy as np
from lowrank.experiments import {helper} as hx
from lowrank.experiments.verdicts import Judgement, REPRODUCED, CONTRADICTED

def measure(tables):
    return {{"x": float(np.mean(tables["x"]))}}

def rule(h):
    """Reproduced when twice x exceeds the limit."""
    ok = hx.scale(h["x"]) > hx.LIMIT and hx.Box().value(h["x"]) > 0
    return Judgement(REPRODUCED if ok else CONTRADICTED, "x")
'''


def _rule(load, name, helper_source=HELPER, rule_source=RULE):
    load(f"{name}_helper", helper_source)
    return load(f"{name}_rule", rule_source.format(helper=f"{name}_helper"))


def test_a_helper_reached_only_through_a_module_attribute_is_fingerprinted(load):
    first = L.fingerprint(_rule(load, "e").rule)
    assert L.fingerprint(_rule(load, "e").rule) == first  # the same source, loaded again
    assert L.fingerprint(_rule(load, "e", HELPER.replace("x * 2", "x * 3")).rule) != first


def test_a_method_of_a_class_of_lowrank_experiments_is_fingerprinted(load):
    first = L.fingerprint(_rule(load, "m").rule)
    second = L.fingerprint(_rule(load, "m", HELPER.replace("max(x, self.FLOOR)", "min(x, self.FLOOR)")).rule)
    assert first != second


def test_a_constant_read_through_a_module_attribute_is_a_threshold(load):
    rule = _rule(load, "k").rule
    assert L.thresholds(rule)["k_helper.LIMIT"] == 0.5
    # A class's own constants are in its source, which the walk fingerprints whole.
    base = L.fingerprint(rule)
    assert L.fingerprint(_rule(load, "k", HELPER.replace("FLOOR = 1", "FLOOR = 2")).rule) != base
    other = _rule(load, "k", HELPER.replace("LIMIT = 0.5", "LIMIT = 0.6")).rule
    assert L.fingerprint(other) != L.fingerprint(_rule(load, "k").rule)
    assert L.fingerprint(_rule(load, "k").rule) == L.fingerprint(_rule(load, "k").rule)


def test_a_change_to_the_measure_changes_the_fingerprint(load):
    mod = _rule(load, "s")
    base = L.fingerprint(mod.rule, mod.measure)
    assert base != L.fingerprint(mod.rule)
    other = _rule(load, "s", rule_source=RULE.replace("np.mean", "np.median"))
    assert L.fingerprint(other.rule, other.measure) != base
    assert L.fingerprint(other.rule) == L.fingerprint(mod.rule)  # the rule alone did not change
    claim = Claim("x", "Paper", "05", "sec", "x is large", other.rule, measure=other.measure)
    assert L.claim_fingerprint(claim) == L.fingerprint(other.rule, other.measure)


def test_functions_outside_lowrank_experiments_do_not_enter(load, monkeypatch):
    mod = _rule(load, "n")
    reached = R.walk(mod.rule, mod.measure)
    assert reached.names == ("lowrank.experiments.n_helper.Box", "lowrank.experiments.n_helper.scale",
                             "lowrank.experiments.n_rule.measure", "lowrank.experiments.n_rule.rule",
                             "lowrank.experiments.verdicts.Effect", "lowrank.experiments.verdicts.Judgement")
    assert not any("numpy" in key or key.startswith("np.") for key in reached.constants)
    before = L.fingerprint(mod.rule, mod.measure)
    import numpy as np

    monkeypatch.setattr(np, "e", 3.0)  # a constant of numpy read through np. is not the book's
    assert L.fingerprint(mod.rule, mod.measure) == before


def test_every_chapter_01_to_06_claim_names_a_measure_of_its_own_chapter():
    for c in collect_claims().claims:
        if c.rule is None or c.chapter not in ("02", "03", "04", "05", "06"):
            continue
        assert c.measure is not None, f"{c.key} has no measure"
        assert c.measure.__module__.rsplit(".", 1)[0] in (c.rule.__module__.rsplit(".", 1)[0], c.rule.__module__), \
            f"{c.key}: its measure {c.measure.__qualname__} is not of its chapter's module"


# --- sentences from constants -------------------------------------------------------------------

SENTENCE = '''
from lowrank.experiments.verdicts import Judgement, REPRODUCED
MARGIN = 0.03
LEVEL = 0.05
STEPS = (4000, 8000)
DOUBLINGS = 2

def rule(h):
    """Reproduced inside +-{MARGIN} nats at {STEPS:,} steps ({STEPS[1]:,} last, {STEPS:count} budgets),
    a {LEVEL:coverage} interval, {LEVEL:percent} level, {DOUBLINGS:word} doublings.

    Not printed: {MARGIN}.
    """
    return Judgement(REPRODUCED, "x")
'''


def test_a_sentence_is_built_from_the_constants_it_names(load, monkeypatch):
    mod = load("sentence_a", SENTENCE)
    assert R.render(mod.rule) == ("Reproduced inside +-0.03 nats at 4,000 and 8,000 steps (8,000 last, 2 budgets), "
                                  "a 95 % interval, 5 % level, two doublings.")
    before = L.fingerprint(mod.rule)
    monkeypatch.setattr(mod, "MARGIN", 0.05)
    assert "+-0.05 nats" in R.render(mod.rule)
    assert L.fingerprint(mod.rule) != before  # a constant the sentence names is in the fingerprint


def test_a_sentence_naming_no_constant_refuses():
    def rule(h):
        """Reproduced at {NO_SUCH_NAME}."""

    with pytest.raises(KeyError, match="NO_SUCH_NAME"):
        R.render(rule)


def test_changing_the_margin_changes_chapter_04s_printed_rule(monkeypatch):
    from lowrank.experiments.head_size_training import fair, rules

    claim = next(c for c in rules.CLAIMS if c.key == "bhojanapalli-fixed-heads-training")
    assert "+-0.03 nats" in claim.rule_sentence and "at most 16)" in claim.rule_sentence
    monkeypatch.setattr(rules, "MARGIN", 0.05)
    monkeypatch.setattr(rules, "MAX_SEEDS", 20)
    monkeypatch.setattr(fair, "LR_GRID_RATES", (0.001, 0.01))
    sentence = claim.rule_sentence
    assert "+-0.05 nats" in sentence and "half-width of 0.05 nats" in sentence and "0.03" not in sentence
    assert "at most 20)" in sentence and "among the rates 0.001 and 0.01," in sentence


def _outputs(stem: str) -> str:
    nb = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text(encoding="utf8"))
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts += ["".join(v) if isinstance(v, list) else str(v) for v in out.get("data", {}).values()]
    return "\n".join(parts)


@pytest.mark.parametrize("stem", ["04_head_size_training", "05_rank_barrier", "06_rank_saturation"])
def test_rendered_sentences_are_the_ones_the_committed_chapters_print(stem):
    from lowrank.book.verdict_view import text_html

    own, synthesis = _outputs(stem), _outputs("08_synthesis")
    claims = [c for c in collect_claims().claims if c.rule is not None and c.chapter == stem[:2]]
    assert claims
    for c in claims:
        # As the verdict cards (text_html) or a table (escaped) or plain text print it.
        forms = (text_html(c.rule_sentence), html.escape(c.rule_sentence, quote=False), c.rule_sentence)
        assert any(f in own for f in forms), f"{c.key}: chapter {stem[:2]} prints another rule sentence"
        assert any(f in synthesis for f in forms), f"{c.key}: chapter 08 prints another rule sentence"
