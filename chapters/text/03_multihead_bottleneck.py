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
# # The multi-head bottleneck and a fixed head size
#
# Heads of size $d/h$ can no longer fit dense attention once $d/h$ drops below $n - 1$; heads of a fixed size $d_p \ge n - 1$ still can.
#
# Splitting a width $d$ into $h$ heads of size $d/h$ caps every head's logit rank at $d/h$.
# We measure that boundary on both sides, check that a fixed head size contains the standard layer, build the witness of Theorem 2 of {cite}`bhojanapalli2020lowrank` and compare it with standard layers at the same parameter count, and work out what all this means at the paper's own settings.

# %% tags=["parameters", "hide-input"]
seed = 0  # random seed
d_model = 60  # model width d for the head-count sweep (divisible by n, n - 1 and n - 2)
n = 6  # sequence length n for the head-count sweep
heads = [1, 2, 4, 6, 10, 12, 15, 20, 30]  # head counts h (each must divide d_model)
concentration = 1.0  # Dirichlet concentration of the dense target rows
restarts = 2  # L-BFGS restarts per head fit
max_iter = 1000  # L-BFGS iteration cap, head fits
vanish_tol = 1e-5  # max row total variation below which a head fits
embed_d_model = 12  # width of the standard layer embedded in a fixed one
embed_heads = 4  # heads of that layer (must divide embed_d_model)
embed_head_dim = 5  # head size d_p of the fixed layer (at least embed_d_model / embed_heads)
embed_n = 7  # tokens per random input for the embedding check
embed_batch = 64  # random inputs for the embedding check
t2_d = 6  # Theorem 2: width d
t2_heads = 3  # Theorem 2: heads h (h > d / d_p, h divides d)
t2_head_dim = 3  # Theorem 2: fixed head size d_p (between d / h, exclusive, and d)
t2_n = 4  # Theorem 2: tokens per input
t2_samples = 16  # Theorem 2: inputs the layers are fitted on
t2_std_restarts = 8  # Theorem 2: restarts of the standard-layer fit
t2_fixed_restarts = 4  # Theorem 2: restarts of the fixed-layer fits
t2_std_max_iter = 2000  # Theorem 2: L-BFGS cap, standard layer
t2_fixed_max_iter = 3000  # Theorem 2: L-BFGS cap, fixed layer
cost_d_models = [256, 512, 1024]  # widths d for the cost table
cost_heads = [4, 8, 16, 32]  # head counts h for the cost table
cost_seq_lens = [128, 512]  # sequence lengths n for the cost table (fixed head size n)
paper_d = 1024  # width of the paper's worked numbers (Table 1: BERT-large)
paper_heads = [8, 16, 32]  # head counts of Table 1
paper_ns = [128, 512]  # the two pre-training stages' sequence lengths

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from lowrank.book import theory_figures, theory_tables
from lowrank.book.params import validate
from lowrank.book.plotting import use_style
from lowrank.experiments import multihead_bottleneck as ch
from lowrank.experiments.evidence import write_evidence

use_style()

# %% tags=["hide-input"]
P = validate("03_multihead_bottleneck", globals())
tables = ch.run(P)
H = ch.headline(tables)
for key, value in H.items():
    glue(key, value, display=False)
write_evidence("03_multihead_bottleneck", H, P)

# %% [markdown]
# (ch03-boundary)=
# ## More heads, smaller heads
#
# A standard layer (the paper's class $\mathcal{F}$) splits $d$ into $h$ heads of size $d/h$; head $i$ computes $\operatorname{softmax}_{\text{row}}\!\big(X W_q^i (X W_k^i)^\top/\sqrt{d/h}\big)$, whose logits have rank at most $d/h$. By {prf:ref}`prop-sharp-threshold` ({doc}`02_representation_theorem`), a head reproduces a generic dense $P$ on $n$ independent tokens if and only if its size is at least $n - 1$. The paper's informal version (its Section 2.3): "When the number of heads $h$ is larger than $d/n$, the attention unit inside each head projects onto a dimension smaller than $n$, creating a low-rank bottleneck".
#
# We take one input $X \in \mathbb{R}^{n \times d}$ (Gaussian, $n$ = {glue:text}`ch03_hc_n`, $d$ = {glue:text}`ch03_hc_d`), give every head of the layer its own dense target (Dirichlet({glue:text}`ch03_hc_concentration`) rows) and fit all $W_q^i, W_k^i$ by L-BFGS on the mean row KL ({glue:text}`ch03_hc_restarts` starts per head), for $h$ = {glue:text}`ch03_hc_heads`. The width is chosen so that $d/h$ takes the values $n$, $n - 1$ and $n - 2$: both sides of the boundary are tested. Next to it, a fixed-head-size layer (class $\mathcal{G}$) with $d_p = n$ gets the same targets. A layer fits when its worst head's best max-row TV is below {glue:text}`ch03_hc_tol`.

# %% tags=["hide-input"]
theory_tables.head_count(tables["per_layer"], P["d_model"], P["n"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch03-heads
#
# Standard heads fail once their size $d/h$ drops below $n - 1$; fixed-size heads fit at every head count. The worst head's best max-row TV for each number of heads $h$ (head size $d/h$), for the standard layer and for the fixed head size $d_p = n$.
# ```

# %% tags=["hide-input"]
fig = theory_figures.head_count(tables)
glue("ch03_fig_heads", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch03_fig_heads
# :name: fig-ch03-heads
#
# The standard layer stops fitting its heads once their size falls below $n - 1$, while the fixed-head-size layer fits them at every $h$. The worst head's best max-row TV against the number of heads $h$ (head size $d/h$ under each tick) at $d$ = {glue:text}`ch03_hc_d`, $n$ = {glue:text}`ch03_hc_n`. Dotted: the paper's boundary $h = d/n$; dashed: $h = d/(n-1)$; horizontal: the tolerance.
# ```
#
# The standard layer fits every head up to $h$ = {glue:text}`ch03_h_last_fit` (head size {glue:text}`ch03_dh_last_fit`, which is $n - 1$ = {glue:text}`ch03_hc_n_minus_1`); the first head count at which it fails is $h$ = {glue:text}`ch03_h_first_fail` (head size {glue:text}`ch03_dh_first_fail`), where the worst head's error is at least {glue:text}`ch03_fail_error:.1e` ({numref}`fig-ch03-heads`). The fixed layer's worst head stays at {glue:text}`ch03_fixed_worst:.1e` for every $h$. The paper's condition puts the bottleneck at $h > d/n$ = {glue:text}`ch03_paper_h:.0f`; heads of size $n - 1$ still fit, so the exact boundary is $h > d/(n-1)$ = {glue:text}`ch03_boundary_h:.0f`, and both of its neighbours were tested ({glue:text}`ch03_both_sides`).
#
# (ch03-f-in-g)=
# ## A standard layer inside a fixed one
#
# Section 3.1 of the paper states, without proof, that a FixedMultiHead layer with $d_p \ge d/h$ can represent every MultiHead layer: $\mathcal{F} \subseteq \mathcal{G}$. The construction: pad each head's $W_q^i, W_k^i, W_v^i$ with zero columns to $d_p$ and its block of $W_o$ with zero rows. The zero columns add nothing to the logits, the values or the output, with one catch: the softmax scale changes from $1/\sqrt{d/h}$ to $1/\sqrt{d_p}$, so the padded $W_q^i$ must be multiplied by $\sqrt{d_p/(d/h)}$. `lowrank.theory.embed_standard_in_fixed` does this; we compare on {glue:text}`ch03_embed_inputs` random inputs a standard layer (random weights and biases, $d$ = {glue:text}`ch03_embed_d`, $h$ = {glue:text}`ch03_embed_h`) with its embedding at $d_p$ = {glue:text}`ch03_embed_dp`, with and without the rescaling.

# %%
emb = tables["embedding"].iloc[0]
print(f"max |f(X) - g(X)| over {embed_batch} inputs: {emb['max_abs_error']:.1e} with the rescaled queries, "
      f"{emb['max_abs_error_unscaled']:.2f} with zero-padding alone")

# %% [markdown]
# The embedded layer matches the standard one to {glue:text}`ch03_embed_error:.1e` (float64); zero-padding without the rescaling is off by {glue:text}`ch03_embed_naive_error:.2f`. So a fixed head size loses nothing: every standard layer with head size at most $d_p$ is one of its parameter settings.
#
# (ch03-theorem2)=
# ## Theorem 2: the inclusion is strict, at a fixed number of heads
#
# ```{prf:theorem} FixedMultiHead is strictly more expressive
# :label: thm-fixed-head-strict
#
# ({cite}`bhojanapalli2020lowrank`, Theorem 2, in row convention.) Let $n \ge 2$, $d \ge d_p$ and $h > d/d_p$. Let $g_V$ be a FixedMultiHead layer with $h$ heads whose heads all share one bilinear form, $V_q^i (V_k^i)^\top = U$ with $\operatorname{rank} U = d_p$, and for which $\sum_i V_v^i V_o^i$ is a full-rank $d \times d$ matrix. Then for every MultiHead layer $f_W$ with $h$ heads (head size $d/h < d_p$) there is an $X \in \mathbb{R}^{n \times d}$ with $f_W(X) \ne g_V(X)$.
# ```
#
# The statement is pointwise: it says that each $f_W$ differs from $g_V$ at some input, not that $f_W$ is far from $g_V$ on the inputs one happens to fit. The proof (the paper's Appendix B) has three cases. (1) If $\sum_i W_v^i W_o^i \ne \sum_i V_v^i V_o^i$, all-equal tokens $X = \mathbf{1} v^\top$ separate: every attention matrix maps them to themselves, so only the value maps are compared. (2) Otherwise, if some head's scaled form $W_q^i (W_k^i)^\top/\sqrt{d/h}$ differs from $U/\sqrt{d_p}$ by more than a skew-symmetric matrix, a single non-zero token $X = e_1 v^\top$ separates. (3) Otherwise two non-zero tokens, one of them large, separate, because the rank of $U/\sqrt{d_p} - W_q^1 (W_k^1)^\top/\sqrt{d/h}$ is at least $d_p - d/h \ge 1$. Cases 2 and 3 compare the attention. The layers here have no residual connection and no LayerNorm, as in the theorem.
#
# `lowrank.theory.theorem2_layer` builds such a $g_V$ with $d$ = {glue:text}`ch03_t2_d`, $h$ = {glue:text}`ch03_t2_h`, $d_p$ = {glue:text}`ch03_t2_dp` (the heads' weights differ by random rotations; $U$ is shared). We fit it on {glue:text}`ch03_t2_samples` random inputs of $n$ = {glue:text}`ch03_t2_n` tokens (rows on the unit sphere), minimising the relative squared error $\|f(X) - g_V(X)\|_F^2 / \|g_V(X)\|_F^2$ with L-BFGS in float64, with three layers:
#
# - the standard layer with the same $h$ = {glue:text}`ch03_t2_h` heads, of size $d/h$ = {glue:text}`ch03_t2_dh` ({glue:text}`ch03_t2_std_restarts` starts);
# - a fixed-head-size layer like $g_V$ ($h$ heads of size $d_p$, {glue:text}`ch03_t2_params_fixed` parameters, {glue:text}`ch03_t2_fixed_restarts` starts);
# - the **parameter-matched** comparison: a standard layer with fewer, larger heads, {glue:text}`ch03_t2_fewer_heads` heads of size $d_p$, with the same {glue:text}`ch03_t2_params_std` parameters as the $h$-head standard layer ({glue:text}`ch03_t2_fixed_restarts` starts).
#
# Errors are relative Frobenius errors on the fitting inputs and on as many fresh ones.

# %% tags=["hide-input"]
theory_tables.theorem2(tables["t2"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch03-theorem2
#
# The fixed-head-size layer fits Theorem 2's $g_V$ and the standard layer with $h$ heads does not, with or without the parameters matched. Relative Frobenius error of the best fit on the fitting inputs and on fresh inputs, with each layer's heads, head size and parameters.
# ```

# %% tags=["hide-input"]
fig = theory_figures.theorem2_restarts(tables)
glue("ch03_fig_t2_restarts", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch03_fig_t2_restarts
# :name: fig-ch03-t2-restarts
#
# No restart of the standard layer comes close to Theorem 2's $g_V$; the fixed-head-size layer fits it. Fits to $g_V$, one dot per restart: relative error $\|f(X)-g_V(X)\|_F / \|g_V(X)\|_F$ on the fitting inputs for the standard layer with $h$ heads and for the fixed-head-size layer.
# ```
#
# No restart of the $h$-head standard layer gets below a relative error of {glue:text}`ch03_t2_floor:.3f` (worst restart {glue:text}`ch03_t2_std_max:.3f`; {glue:text}`ch03_t2_floor_test:.3f` on fresh inputs), while the best fixed-head-size fit reaches {glue:text}`ch03_t2_fixed:.1e` ({numref}`fig-ch03-t2-restarts`). The floor is what an optimiser finds, an upper bound on how close $\mathcal{F}$ gets on these inputs; the theorem itself only says that no $f_W$ equals $g_V$ everywhere.
#
# The parameter-matched layer settles what the gap is about. With {glue:text}`ch03_t2_fewer_heads` heads of size $d_p$ and the same parameter count as the failing standard layer it fits $g_V$ to {glue:text}`ch03_t2_fewer_fit:.1e` ({glue:text}`ch03_t2_fewer_test:.1e` on fresh inputs), and an exact construction exists (`lowrank.theory.theorem2_in_fewer_heads`, error {glue:text}`ch03_t2_fewer_exact:.0e`): because all heads of $g_V$ share $U$, they all compute the same attention, and $g_V(X) = A(X)\,X \sum_i V_v^i V_o^i$; two heads of size $d_p$ with that attention split the full-rank value map into two halves of rank $d_p$. So $g_V$'s {glue:text}`ch03_t2_params_fixed` parameters are redundant, and what the $h$-head standard layer lacks is head size, not parameters. Theorem 2 is a statement at a **fixed number of heads**.
#
# Now the separating input of the proof for the best fitted $h$-head standard layer. `lowrank.theory.separating_input` searches inputs of each case's form (directions from the proof's matrices and random ones; rows of norm up to 2, and in case 3 the second token up to four times larger, so rows of norm up to 8) and picks the case by the outputs: the first family, in the proof's order, on which the layers differ by more than $10^{-6}$ relative, so that round-off differences in the weights cannot choose a case.

# %% tags=["hide-input"]
sep = tables["separation"]
print(f"the proof's case for the fitted f_W: {sep.case}; max |f(X) - g(X)| = {sep.gap:.3f}, relative {sep.rel_gap:.3f}")
theory_tables.separation_by_case(tables["by_case"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch03-separation
#
# The proof's separating inputs tell the fitted standard layer from $g_V$. For each input family (the case of the proof): the largest output difference $\max|f(X) - g(X)|$ and its size relative to $g$.
# ```

# %% tags=["hide-input"]
fig = theory_figures.separation(tables)
glue("ch03_fig_separation", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch03_fig_separation
# :name: fig-ch03-separation
#
# Where the proof points, the best fitted standard layer is far from $g_V$. The separating input of the proof's case for that layer (left), the fitted layer's output on it (middle) and $g_V$'s (right).
# ```
#
# The fitted $f_W$ falls into case {glue:text}`ch03_sep_case` of the proof: on the input shown in {numref}`fig-ch03-separation` the two layers differ by {glue:text}`ch03_sep_gap:.3f` in the largest entry ({glue:text}`ch03_sep_rel_gap:.2f` relative). Case 1 compares only the value maps, so it says little about attention; the relative gaps of the three families are {glue:text}`ch03_sep_case_gaps`, and on the families that probe attention (cases 2 and 3) the largest is {glue:text}`ch03_sep_attention_gap:.2f`: the fit that looked close on typical inputs is far off where the proof points.
#
# ## What a fixed head size costs
#
# Per layer (Q, K, V, O projections, no biases) a standard layer has $4d \cdot h \cdot (d/h) = 4d^2$ parameters, a fixed one $4 d h d_p$; FLOPs are $2nd \cdot 3hd_h + 2n \cdot hd_h \cdot d$ for the projections plus $4hn^2d_h$ for the two $n \times n$ products (a multiply-add counted as 2, softmax left out). With $d_p = n$, the ratio fixed/standard is $hn/d$ for both, so a fixed head size is cheap only where $h n \lesssim d$, exactly where the standard layer had no bottleneck to begin with. The paper's argument is that a smaller $d$ then suffices; {doc}`04_head_size_training` tests that in training.

# %% tags=["hide-input"]
theory_tables.cost_ratios(tables["costs"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch03-costs
#
# A fixed head size $d_p = n$ costs $hn/d$ times the parameters of a standard layer: cheap only where the standard layer had no bottleneck. Parameter count of the fixed layer relative to the standard one with the same $d$ and $h$, for each sequence length.
# ```
#
# {numref}`tab-ch03-costs` gives the fixed layer's parameter count relative to the standard one with the same $d$ and $h$ (FLOPs scale the same way up to the $n^2$ terms). At $d$ = {glue:text}`ch03_cost_d`, $h$ = {glue:text}`ch03_cost_h` and $d_p = n$ = {glue:text}`ch03_cost_n`, one fixed-head-size layer has {glue:text}`ch03_cost_ratio:.1f` times the parameters of a standard one.
#
# (ch03-paper-settings)=
# ## The paper's own settings, worked out
#
# Table 1 of the paper trains BERT-large ($d$ = {glue:text}`ch03_paper_d`) with 8, 16 and 32 heads, mostly at $n = 128$ and then at $n = 512$. With the thresholds of {doc}`02_representation_theorem` (bidirectional $n - 1$, causal $\lfloor n/2 \rfloor$):

# %% tags=["hide-input"]
theory_tables.paper_settings(tables["paper"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch03-paper
#
# At the paper's settings most rows of its Table 1 sit in the bottleneck regime. For BERT-large's width and each head count and sequence length: the head size against the thresholds $n - 1$ and $\lfloor n/2 \rfloor$, the most heads without a bottleneck, what a dense target loses (share of centred logits out of reach, TV of the truncated SVD) and the cost of $d_p = n$.
# ```
#
# At $n = 128$ at most {glue:text}`ch03_paper_heads_128` heads keep head size $\ge n - 1$, which matches the paper's observation that BERT-large degrades beyond 8 heads; at the $n = 512$ stage at most {glue:text}`ch03_paper_heads_512`, so every row of Table 1 is in the bottleneck regime there. For one dense Dirichlet(1) target, the 16-head model's heads (size 64) cannot reach {glue:text}`ch03_paper_missed_128:.0%` of the centred logits at $n = 128$ and {glue:text}`ch03_paper_missed_512:.0%` at $n = 512$ (Eckart–Young, exact). A causal head of size 64 would suffice at $n = 128$ ({glue:text}`ch03_paper_causal_128`), by {prf:ref}`prop-causal-threshold`. Fixing $d_p = n = 128$ for 16 heads costs {glue:text}`ch03_paper_cost_128:.0f` times the attention parameters of the standard layer.

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print("\n".join(ch.summary(tables)))

# %% [markdown]
# ## What to take away
#
# - At $d$ = {glue:text}`ch03_hc_d` and $n$ = {glue:text}`ch03_hc_n`, standard heads fit dense targets up to $h$ = {glue:text}`ch03_h_last_fit` (head size {glue:text}`ch03_dh_last_fit`) and fail from $h$ = {glue:text}`ch03_h_first_fail` (error {glue:text}`ch03_fail_error:.1e`): the boundary is $h > d/(n-1)$, one head size below the paper's $d/n$. Heads of fixed size $n$ fit at every $h$ ({glue:text}`ch03_fixed_worst:.0e`).
# - A fixed head size contains the standard layer exactly ({glue:text}`ch03_embed_error:.0e`), provided the softmax scale is moved into the queries; padding alone is off by {glue:text}`ch03_embed_naive_error:.2f`.
# - Theorem 2's witness $g_V$ is out of reach for the standard layer with the same number of heads (best fit {glue:text}`ch03_t2_floor:.3f` relative error; attention-probing separating inputs at {glue:text}`ch03_sep_attention_gap:.2f`), but a standard layer with {glue:text}`ch03_t2_fewer_heads` larger heads and the same parameter count represents it exactly: head size, not parameter count, is the constraint.
# - At the paper's BERT-large settings the bottleneck-free head count is {glue:text}`ch03_paper_heads_128` at $n = 128$ and {glue:text}`ch03_paper_heads_512` at $n = 512$; a fixed head size $n$ costs $hn/d$ times the standard layer, {glue:text}`ch03_cost_ratio:.0f` at $d$ = {glue:text}`ch03_cost_d`, $h$ = {glue:text}`ch03_cost_h`, $n$ = {glue:text}`ch03_cost_n`.
