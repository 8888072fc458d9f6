# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags
#     notebook_metadata_filter: kernelspec,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Synthesis: what holds, and where
#
# What each paper's claims come to, every claim with its evidence and verdict, and what to take from them when choosing a head size.

# %% tags=["parameters", "hide-input"]
chapters_dir = "."   # folder whose evidence/ holds the evidence files of the chapters that judge claims
practitioner_ns = [512, 4096]  # sequence lengths n at which the answer states the head size a head needs

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from lowrank.book.params import validate
from lowrank.book.plotting import use_style
from lowrank.book.found_view import answers_html, counts_html
from lowrank.book.synthesis_figures import verdict_chart
from lowrank.book.verdict_view import verdict_cards
from lowrank.experiments import synthesis as ch

use_style()

# %% tags=["hide-input"]
P = validate("08_synthesis", globals())
tables = ch.run(P)
H = ch.headline(tables, cards=verdict_cards, prose=answers_html, counts=counts_html)
for key, value in H.items():
    glue(key, value, display=False)

# %% [markdown]
# ```{glue} ch08_answers
# ```
#
# Each paper's paragraph is written from the verdicts below: the corrections, the conditions, the contradicted claims, and how many claims stay open and why, are those of the table's rows, and the head sizes are the theory's threshold at the sequence lengths {glue:text}`ch08_practitioner_ns` (a parameter of this chapter: re-run it with your own). The rest of the chapter says how each verdict was reached ({ref}`sec-ch08-how`), lists every claim with its evidence ({ref}`sec-ch08-table`), and sets the two papers side by side ({ref}`sec-ch08-papers`).
#
# (sec-ch08-how)=
# ## How the verdicts are reached
#
# Each row of the verdict table below gives a claim of the two papers, tested or not, or one of the book's own findings (apart), with the paper and the place it is made, the kind of evidence it rests on, the evidence with its uncertainty, the verdict and the scale it was judged at, the rule that turned the evidence into the verdict, and what the rules ledger records about that rule; each links to the section that tests it.
#
# Each chapter that tests a claim states it, with the paper it comes from, in its experiment module (`lowrank.experiments`), together with a **rule**: a short function of the chapter's headline numbers whose thresholds are named constants, each with its reason (a float64 round-off tolerance, a 95 % interval, an equivalence margin fixed in advance). Each rule is unit-tested on synthetic numbers on both sides of every threshold and registered in the **rules ledger** (`data/rules_ledger.jsonl`): a fingerprint of its code and of the code that measures what it reads, its printed sentence and its thresholds, with the commit that registered it, read from git. A test fails when a rule differs from its ledger entry, so no threshold can move unseen. A rule changed after its data existed is an **amendment**, recorded with its date, its reason, whether the data had been seen, and the verdict before and after; the row says so beside its verdict ({glue:text}`ch08_n_amended` rows do). The ledger was started after most rules had already judged their data: those entries are marked back-filled and point to the commit that first held the rule, where git holds its history. This chapter collects those claims, reads each chapter's numbers from the evidence file that chapter wrote when it was executed (`chapters/evidence/`, with the stores it read, so a stale file fails a test), and applies the rules: nothing in the table is typed by hand, and no notebook is read. Under `make book` the evidence comes from the default runs; under `lowrank book --scale paper` from the paper-scale ones, and each row names its scale in its folded record.
#
# A verdict is one of seven ({numref}`tab-ch08-verdicts`), and each claim names the kind of evidence it rests on ({numref}`tab-ch08-kinds`): the totals never add one kind to another, since a proof check that an identity holds is not empirical support for a paper.

# %% tags=["hide-input"]
ch.style_table(tables["meanings"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch08-verdicts
#
# Seven verdicts, each with one meaning: a correction that sharpens a claim is not a weakening, and a claim the book does not test is listed, not dropped. The verdicts and what each means.
# ```

# %% tags=["hide-input"]
ch.style_table(ch.kinds_table())

# %% [markdown]
# ```{table-caption}
# :name: tab-ch08-kinds
#
# Four kinds of evidence, counted apart. What each kind of claim rests on.
# ```
#
# The evidence folded under each row carries the uncertainty that decides the verdict: intervals or standard errors, and the number of seeds or draws behind each number. One seed never yields a standard error, so a comparison that needs one is inconclusive. The rule is printed under the evidence in its own first sentence, with the ledger's record of it. Claims the book does not test are listed too, with the verdict *not tested* and what testing them would take, so that a missing row means nothing was forgotten.

# %% [markdown]
# (sec-ch08-table)=
# ## The verdict table

# %% tags=["hide-input"]
verdict_cards(ch.card_rows(tables["rows"]), base="../")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch08-table
#
# Every claim of both papers and the book's own findings, with its verdict beside it and the reason in one line; open a row for the evidence with its uncertainty, the rule and its ledger record. Claim (paper, where it is made; kind of evidence), verdict, reason, and the section that tests it.
# ```
#
# (sec-ch08-counts)=
# ### The count
#
# {glue:text}`ch08_totals` {glue:text}`ch08_silent` {numref}`tab-ch08-counts` counts them by kind.

# %% tags=["hide-input"]
counts_html(ch.counts_by_kind(tables["rows"]))

# %% [markdown]
# ```{table-caption}
# :name: tab-ch08-counts
#
# Proof checks, empirical claims and the book's own findings, counted apart. Claims by kind of evidence (rows) and verdict (columns).
# ```
#
# ```{glue:figure} ch08_fig_verdicts
# :name: fig-ch08-verdicts
#
# The verdicts of {ref}`the table <sec-ch08-table>`, counted by paper and kind: proof checks and empirical claims are separate bars, and the book's own findings have their own.
# ```
#
# {numref}`fig-ch08-verdicts` counts the rows; the evidence behind each, with its uncertainty, is in the table and in the section each row links to.

# %% tags=["remove-cell"]
fig = verdict_chart(tables["rows"])
glue("ch08_fig_verdicts", fig, display=False)
plt.close(fig)

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
for row in tables["rows"]:
    print(f"[{row.chapter}] {row.verdict:<36} {row.scale:<8} {(row.key or row.evidence)[:60]}")
print(ch.verdict_counts(tables["rows"]))

# %% [markdown]
# (sec-ch08-papers)=
# ## The two papers side by side
#
# The papers seem to disagree. {cite:t}`bhojanapalli2020lowrank` say a head needs a size near the sequence length $n$ or it cannot represent what attention should; {cite:t}`min2025limitation` say the rank of attention saturates at a small head size and stays below about $(1-1/e)\,n$, so large heads are redundant. Read side by side ({numref}`tab-ch08-papers`), they answer different questions about different matrices.
#
# ```{table} The two papers answer different questions about different matrices: exact representability of the logits against the typical rank of random zero-temperature attention.
# :name: tab-ch08-papers
#
# | | {cite:t}`bhojanapalli2020lowrank` | {cite:t}`min2025limitation` |
# |---|---|---|
# | Question | can *some* weights of head size $d_h$ produce a given attention pattern? (exact representability) | what rank does attention *typically* have? |
# | Matrix | the logits $S$, of rank at most $d_h$ | the attention matrix $A$ itself |
# | Setting | any input, any target, softmax at temperature 1 | random inputs and weights, zero temperature (hardmax) |
# | Central result | below $d_h = n$ some patterns cannot be represented; a fixed head size $d_p$ removes the bottleneck (Theorems 1 and 2) | the mean hardmax rank stays below $(1 - (1-1/n)^n)\,n$, about $0.63\,n$, and saturates in $d_h$ |
# | Tested in | {doc}`02_representation_theorem`, {doc}`03_multihead_bottleneck`, {doc}`04_head_size_training` | {doc}`05_rank_barrier`, {doc}`06_rank_saturation` |
# | In trained models | {doc}`07_trained_attention` | {doc}`07_trained_attention` |
# ```
#
# **Exact representability against typical rank.** Theorem 1 is an existence statement about the logits: for one input and one target, weights of head size $d_h$ reproduce the target exactly only if the logits can have the rank the target needs. Min & Li's statement is about the typical rank of the probabilities of random heads. A typical random head lying below $0.63\,n$ says nothing about what the best head of the same size can represent, and the bottleneck on the logits says nothing about what random heads do.
#
# **Logits against probabilities.** The softmax undoes the low rank of the logits: random heads give numerically full-rank attention at the standard temperature from small head sizes on ({numref}`fig-ch01-rank-vs-head-size` in {doc}`01_attention_and_rank`). The $0.63\,n$ cap is a property of zero-temperature attention with random weights; how far it reaches outside that setting is what the barrier and saturation rows of the table judge.
#
# **Training.** Neither theory settles what a trained model does with its head size; the training rows of the table say what the book's runs could detect at their scale, and the paper-scale parameter sets exist to test it further.
#
# ## What a practitioner choosing `head_dim` should take away
#
# - If a head must be able to express an arbitrary dense attention pattern over $n$ tokens, its logits need rank close to $n$: the bottleneck is exact ({doc}`02_representation_theorem`, {doc}`03_multihead_bottleneck`). Sparse and near-permutation patterns need far less.
# - Decoupling `head_dim` from `d_model // n_heads` is free to implement and strictly more expressive, but it costs $4\,d\,h\,d_p$ weights per layer instead of $4d^2$ ({doc}`01_attention_and_rank`, {doc}`03_multihead_bottleneck`).
# - A measured "rank of attention" says little about a head-size bottleneck unless it names the matrix (logits or probabilities), the temperature and the tolerance ({doc}`01_attention_and_rank`, {doc}`05_rank_barrier`, {doc}`06_rank_saturation`).
# - Whether larger heads pay off in training is an empirical question. The answer at the top of this page gives the book's measurement at about equal parameters, then what a fixed head size buys at more parameters, each with its interval, seeds and verdict; {doc}`04_head_size_training` shows every comparison at both budgets, each model at its own learning rate.
#
# ## What to take away
#
# - {glue:text}`ch08_totals`
# - Every verdict follows from the chapters' numbers by a rule registered in the rules ledger; where a rule was written or changed after its data had been seen, the ledger and the row say so. Re-running the chapters at paper scale re-judges the claims.
# - {glue:text}`ch08_found_bhojanapalli`
# - {glue:text}`ch08_found_min_li`
# - The two papers answer different questions (exact representability of logits against the typical rank of random zero-temperature attention) and, read that way, do not contradict each other.
