"""What one training row of chapter 04 measured, as a typed record.

:class:`RowEvidence` is what the shared training rule (:func:`.rules.judge`) reads: the two models
(:class:`Arms`), the budget, the runs stored and planned, each model's rate and parameter count,
the paired effect on each split at the largest budget and its change over the last doubling, each
an :class:`..verdicts.Effect`. The chapter carries it as plain values (its glue and evidence file):
:meth:`RowEvidence.values` writes them under one key prefix, :meth:`RowEvidence.read` reads them
back, so what travels between chapters is data, never text to be parsed again.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..verdicts import Effect, need

__all__ = ["SPLITS", "FIELDS", "Arms", "RowEvidence", "GapRow", "MatchRow", "StdHeadsRow", "FixedHeadsRow", "CapacityRow",
           "PastNRow", "FewHeadsRow"]

# (key, name) of each split, in the order the rule reads and the evidence names them.
SPLITS = (("val", "validation"), ("test", "test"))
# Every value a row carries, under its prefix ``ch04_rule_<src>_<row>_``.
FIELDS = ("arm_a", "arm_b", "arm_shared", "steps", "tokens", "planned", "stored", "prev_steps",
          "param_gap", "plan_sd", "params_a", "params_b", "lr_a", "lr_b", "lr_edge", "lr_stored", "lr_planned",
          *(f"{s}_{x}" for s, _ in SPLITS for x in ("diff", "lo", "hi", "n")),
          *(f"{s}_change_{x}" for s, _ in SPLITS for x in ("diff", "lo", "hi", "n")))


@dataclass(frozen=True)
class Arms:
    """The two models a row compares, its loss being ``a``'s minus ``b``'s, and what they share
    ("h = 32"; "" when the names say it all)."""
    a: str
    b: str
    shared: str = ""

    @property
    def what(self) -> str:
        """'at h = 32, standard (d_h = 2) minus fixed (d_p = 16) loss'."""
        return (f"at {self.shared}, " if self.shared else "") + f"{self.a} minus {self.b} loss"


@dataclass(frozen=True)
class RowEvidence:
    """One row's measurement. ``effects`` and ``changes`` hold one :class:`Effect` per split (in
    :data:`SPLITS` order): the paired difference at ``steps`` and its change from ``prev_steps``
    (NaN, with changes of 0 seeds, when the row was measured at one budget). ``params`` and
    ``rates`` are the two models' (NaN when not known); ``lr_edge`` names a model whose best rate
    is the end of its grid; ``lr_stored`` of ``lr_planned`` runs of the rate grid are stored."""
    arms: Arms
    steps: int
    tokens: float
    planned: int
    stored: int
    prev_steps: float
    param_gap: float
    plan_sd: float
    params: tuple[float, float]
    rates: tuple[float, float]
    lr_edge: str
    lr_stored: int
    lr_planned: int
    effects: tuple[Effect, ...]
    changes: tuple[Effect, ...]
    # The key prefix of the row a subclass reads by default (one subclass per row a claim judges).
    PREFIX: ClassVar[str] = ""

    def values(self, prefix: str) -> dict[str, Any]:
        """The plain values of :data:`FIELDS` under ``prefix``, as the chapter glues them."""
        out: dict[str, Any] = {
            "arm_a": self.arms.a, "arm_b": self.arms.b, "arm_shared": self.arms.shared,
            "steps": int(self.steps), "tokens": float(self.tokens), "planned": int(self.planned),
            "stored": int(self.stored), "prev_steps": float(self.prev_steps), "param_gap": float(self.param_gap),
            "plan_sd": float(self.plan_sd), "params_a": float(self.params[0]), "params_b": float(self.params[1]),
            "lr_a": float(self.rates[0]), "lr_b": float(self.rates[1]), "lr_edge": str(self.lr_edge),
            "lr_stored": int(self.lr_stored), "lr_planned": int(self.lr_planned)}
        for (s, _), e, c in zip(SPLITS, self.effects, self.changes):
            out.update({f"{s}_diff": float(e.estimate), f"{s}_lo": float(e.lo), f"{s}_hi": float(e.hi),
                        f"{s}_n": int(e.seeds), f"{s}_change_diff": float(c.estimate),
                        f"{s}_change_lo": float(c.lo), f"{s}_change_hi": float(c.hi), f"{s}_change_n": int(c.seeds)})
        return {prefix + k: out[k] for k in FIELDS}

    @classmethod
    def keys(cls) -> dict[str, str]:
        """Each field of :data:`FIELDS` and the key it is read from under the class's prefix."""
        return {f: cls.PREFIX + f for f in FIELDS}

    @classmethod
    def read(cls, values: Mapping[str, Any], prefix: str | None = None) -> RowEvidence:
        """The record under ``prefix`` (default: the class's :attr:`PREFIX`, so that a claim names one
        row's record as its evidence); a value the rule cannot do without raises MissingEvidence
        naming its key. The rates, parameter counts and the rate grid's counts default to unknown
        (NaN) and none (0): a row without a rate grid or parameter counts."""
        prefix = cls.PREFIX if prefix is None else prefix
        if not prefix:
            raise ValueError(f"{cls.__name__}: which row? give a prefix, or read a subclass that names one")
        def must(field: str) -> Any:
            return need(values, prefix + field)

        def may(field: str, default: Any) -> Any:
            return values.get(prefix + field, default)

        def effect(name: str, s: str) -> Effect:
            return Effect(name, float(must(f"{s}_diff")), float(must(f"{s}_lo")), float(must(f"{s}_hi")),
                          int(must(f"{s}_n")))

        def change(name: str, s: str) -> Effect:
            return Effect(name, float(must(f"{s}_change_diff")), float(must(f"{s}_change_lo")),
                          float(must(f"{s}_change_hi")), int(must(f"{s}_change_n")))

        return cls(arms=Arms(str(must("arm_a")), str(must("arm_b")), str(may("arm_shared", "") or "")),
                   steps=int(must("steps")), tokens=float(must("tokens")), planned=int(must("planned")),
                   stored=int(must("stored")), prev_steps=float(must("prev_steps")),
                   param_gap=float(may("param_gap", math.nan)), plan_sd=float(must("plan_sd")),
                   params=(float(may("params_a", math.nan)), float(may("params_b", math.nan))),
                   rates=(float(may("lr_a", math.nan)), float(may("lr_b", math.nan))),
                   lr_edge=str(may("lr_edge", "") or ""),
                   lr_stored=int(may("lr_stored", 0)), lr_planned=int(may("lr_planned", 0)),
                   effects=tuple(effect(name, s) for s, name in SPLITS),
                   changes=tuple(change(name, s) for s, name in SPLITS))


# The rows of the budget store that chapter 04's claims judge, one record class each: a claim names
# its row's class as its evidence.
@dataclass(frozen=True)
class GapRow(RowEvidence):
    """At h = 32, standard minus fixed head size."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_gap_"


@dataclass(frozen=True)
class MatchRow(RowEvidence):
    """Standard d = 112 minus fixed h = 32, parameter-matched."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_match_"


@dataclass(frozen=True)
class StdHeadsRow(RowEvidence):
    """Standard head size, h = 32 minus h = 4."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_stdheads_"


@dataclass(frozen=True)
class FixedHeadsRow(RowEvidence):
    """Fixed head size, h = 4 minus h = 32."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_fixedheads_"


@dataclass(frozen=True)
class CapacityRow(RowEvidence):
    """At h = 4, head size n / 4 minus n."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_capacity_"


@dataclass(frozen=True)
class PastNRow(RowEvidence):
    """At h = 4, head size n minus 2 n."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_pastn_"


@dataclass(frozen=True)
class FewHeadsRow(RowEvidence):
    """At head size 32, h = 1 minus h = 2 (the smallest halving)."""
    PREFIX: ClassVar[str] = "ch04_rule_budget_fewheads1_"
