"""Chapter 04's row records name the keys they read, as `make mutation` asks: each row's class reads
every field under its own prefix, and reading the base class without a prefix says which row is
missing."""
import pytest

from lowrank.experiments.head_size_training import row_record as RR
from lowrank.experiments.head_size_training.rules import FewHeadsEvidence


def test_each_rows_class_reads_every_field_under_its_prefix():
    keys = RR.GapRow.keys()
    assert list(keys) == list(RR.FIELDS)
    assert keys["arm_a"] == "ch04_rule_budget_gap_arm_a" and keys["test_change_n"] == "ch04_rule_budget_gap_test_change_n"
    assert set(RR.PastNRow.keys().values()) == {"ch04_rule_budget_pastn_" + f for f in RR.FIELDS}
    assert RR.RowEvidence.keys() == {f: f for f in RR.FIELDS}    # the base class has no prefix of its own


def test_the_few_heads_record_reads_the_first_row_and_every_halvings_lower_ends():
    keys = FewHeadsEvidence.keys()
    assert keys["val_diff"] == "ch04_rule_budget_fewheads1_val_diff"
    assert [k for k in keys if k.startswith("fewheads")] == [
        "fewheads1_val_lo", "fewheads1_test_lo", "fewheads2_val_lo", "fewheads2_test_lo",
        "fewheads4_val_lo", "fewheads4_test_lo"]
    assert keys["fewheads4_test_lo"] == "ch04_rule_budget_fewheads4_test_lo"


def test_reading_the_base_record_without_a_prefix_asks_which_row():
    with pytest.raises(ValueError) as info:
        RR.RowEvidence.read({})
    assert str(info.value) == "RowEvidence: which row? give a prefix, or read a subclass that names one"
    with pytest.raises(ValueError, match="^RowEvidence: which row"):
        RR.RowEvidence.read({}, "")
