"""Chapter 08's verdict chart: for each paper's proof checks and empirical claims, and for the
book's own findings, how many claims got each verdict."""
from __future__ import annotations

import textwrap
from collections.abc import Iterable

import numpy as np

from ..experiments.synthesis import NOT_JUDGED, PROOF_CHECK, Row, is_claim
from ..experiments.verdicts import (CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, NEGLIGIBLE, NOT_TESTED,
                                    REPRODUCED, VERDICTS, WEAKER)


def verdict_groups(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """The bars of the verdict chart: each paper's proof checks, then its empirical claims (with the
    untested ones), then the book's own findings; empty groups left out."""
    rows = [r for r in rows if is_claim(r) and r.paper]
    out: dict[str, list[Row]] = {}
    for paper in dict.fromkeys(r.paper for r in rows if not r.own):
        mine = [r for r in rows if r.paper == paper]
        out[f"{paper}: proof checks"] = [r for r in mine if r.kind == PROOF_CHECK]
        out[f"{paper}: empirical claims"] = [r for r in mine if r.kind != PROOF_CHECK]
    out["this book's own findings"] = [r for r in rows if r.own]
    return {k: v for k, v in out.items() if v}


def plot_verdicts_by_paper(rows: Iterable[Row], ax) -> None:
    """Horizontal stacked bars: for each paper's proof checks and empirical claims, and for the book's own
    findings, how many got each verdict (proof checks are never added to empirical results)."""
    groups = verdict_groups(rows)
    papers = list(groups)
    if not papers:
        ax.text(0.5, 0.5, "no claim collected yet", ha="center", va="center", transform=ax.transAxes)
        ax.set(xticks=[], yticks=[])
        return
    # light to dark from contradicted to reproduced, with hatches so the bars stay apart in grey scale
    shades = {REPRODUCED: "#5aae61", CORRECTED: "#1b7837", WEAKER: "#a6dba0", CONDITIONAL: "#fee08b",
              NEGLIGIBLE: "#92c5de", INCONCLUSIVE: "#d9d9d9", CONTRADICTED: "#c2a5cf", NOT_TESTED: "#ffffff", NOT_JUDGED: "#ffffff"}
    hatches = {REPRODUCED: "", CORRECTED: "", WEAKER: "//", CONDITIONAL: "..", NEGLIGIBLE: "||", INCONCLUSIVE: "", CONTRADICTED: "xx",
               NOT_TESTED: "\\\\", NOT_JUDGED: "--"}
    left = np.zeros(len(papers))
    for v in (*VERDICTS, NOT_JUDGED):
        counts = np.array([sum(r.verdict == v for r in groups[p]) for p in papers], float)
        if not counts.any():
            continue
        ax.barh(range(len(papers)), counts, left=left, color=shades[v], hatch=hatches[v],
                edgecolor="black", linewidth=0.6, label=v)
        for i, (c, x) in enumerate(zip(counts, left)):
            if c:
                ax.text(x + c / 2, i, f"{int(c)}", ha="center", va="center", fontsize="small",
                        bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none"))
        left += counts
    ax.set_yticks(range(len(papers)), [textwrap.fill(p, 22) for p in papers])
    ax.invert_yaxis()
    ax.set_xlabel("number of claims")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(axis="y", visible=False)
    ax.legend(title="verdict", fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
