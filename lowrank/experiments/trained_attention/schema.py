"""The chapter's parameters: what its notebook's parameters cell sets, checked before any run."""
from __future__ import annotations

from ...core.params import (Param, Int, Float, Bool, Str, Choice, IntList, FloatList, ChoiceList, Constraint, ascending,
                       same_length)

SCHEMA = dict(
    seed=Int(0, doc="random seed (text windows, initialisations, training)"),
    threads=Int(0, 1024, doc="torch CPU threads; 0 leaves torch's default"),
    minilm_corpora=ChoiceList("shakespeare", "bbcnews", doc="real text fed to MiniLM"),
    minilm_seq_lens=IntList(3, 512, doc="sequence lengths n for MiniLM, [CLS] and [SEP] included (512 positions)"),
    minilm_counts=IntList(1, 1_000_000, distinct=False,
                          doc="windows per corpus at each n, one entry per minilm_seq_lens entry"),
    minilm_batch=Int(1, 4096, doc="windows per forward pass (memory: one layer of one batch)"),
    rtols=FloatList(0.0, 0.5, doc="relative tolerances for the numerical rank (0 means the default max(m,n)*eps)"),
    energy=Float(0.5, 1.0, doc="fraction of sum sigma^2 for the energy rank"),
    retrieval_ns=IntList(2, 4096, doc="sequence lengths n of the retrieval task (context pairs = queries)"),
    retrieval_head_dims=IntList(1, 4096, doc="query/key sizes d_h of the retrieval head, ascending"),
    retrieval_seeds=Int(1, 1000, doc="seeds per (n, d_h) of the one-key retrieval task"),
    retrieval_pair_ns=IntList(2, 4096, doc="sequence lengths n of the two-key retrieval task"),
    retrieval_pair_seeds=Int(0, 1000, doc="seeds per (n, d_h) of the two-key retrieval task (0: not run)"),
    retrieval_max_steps=Int(1, 10_000_000, doc="step cap of a retrieval run (it stops earlier at its loss plateau)"),
    retrieval_min_steps=Int(1, 10_000_000, doc="steps before a retrieval run's first plateau check"),
    retrieval_extended_cap=Int(2, 10_000_000, allow_none=True,
                               doc="step cap of a second training of every run that reached retrieval_max_steps "
                                   "without a plateau (same seed, so the same steps and then more); None: no second run"),
    retrieval_d_model=Int(1, 65536, doc="width of the retrieval model"),
    retrieval_values=Int(2, 65536, doc="number of distinct values (classes) in the retrieval task"),
    retrieval_lr=Float(1e-6, 1.0, doc="learning rate of the retrieval runs (Adam: warm-up, constant to the plateau, linear decay)"),
    retrieval_tokens=Int(1, 10_000_000, doc="queries per optimiser step (batch = this // n sequences)"),
    retrieval_test_sequences=Int(1, 10_000_000, doc="fresh test sequences per retrieval run"),
    retrieval_rank_sequences=Int(1, 100_000, doc="held-out sequences whose attention is ranked per run"),
    retrieval_rtol=Float(0.0, 0.5, doc="relative tolerance of the numerical rank of the retrieval head's attention"),
    retrieval_run=Bool(doc="True trains the retrieval grid (into retrieval_store); False reads retrieval_long_store"),
    retrieval_store=Param("str", allow_none=True,
                          doc="your results store for retrieval runs (appended, resumable); None: a temporary file"),
    retrieval_long_store=Str(doc="the committed long-scale retrieval store, read only (never written)"),
    truncation_run=Bool(doc="True measures MiniLM's head truncation here (into retrieval_store); False reads retrieval_long_store"),
    truncation_ns=IntList(3, 512, doc="sequence lengths n (tokens, [CLS] and [SEP] included) of the truncated MiniLM"),
    truncation_ranks=IntList(1, 32, doc="logit ranks r each head is cut to, ascending (32 = the full head)"),
    truncation_per_class=Int(2, 10_000, doc="BBC News documents per topic for the probe"),
    truncation_folds=Int(2, 100, doc="cross-validation folds of the linear probe (stratified)"),
    truncation_l2=Float(0.0, 100.0, doc="L2 penalty of the probe's logistic regression"),
    truncation_layer_n=Int(3, 512, doc="the length n at which MiniLM is cut one layer at a time (one of truncation_ns)"),
    truncation_layer_ranks=IntList(1, 32, doc="logit ranks r of the one-layer-at-a-time cut"),
    classifiers_run=Bool(doc="True trains the classifier grid (into classifiers_store); False reads classifiers_long_store"),
    classifiers_store=Param("str", allow_none=True,
                            doc="your results store for classifier runs (appended, resumable); None: a temporary file"),
    classifiers_long_store=Str(doc="the committed long-scale classifier store, read only (never written)"),
    classifiers_image_set=Choice("mnist5k", "digits", doc="the packaged image set of the vision transformers"),
    classifiers_head_dims=IntList(1, 4096, doc="head sizes d_h of the classifiers, ascending"),
    classifiers_seeds=Int(1, 1000, doc="seeds per head size and data set"),
    classifiers_vit_layers=Int(1, 64, doc="blocks of the vision transformer"),
    classifiers_text_layers=Int(1, 64, doc="blocks of the BBC News classifier"),
    mla_kv_latents=IntList(1, 4096, doc="latent sizes kv_latent of the MLA language models, ascending (at least two)"),
    mla_seeds=Int(1, 1000, doc="seeds per kv_latent of the MLA language models"),
    mla_head_dim=Int(1, 4096, doc="content query/key (and value) size d_h of every MLA head"),
    mla_rope_dim=Int(0, 4096, doc="size of the decoupled rotary query and key of every MLA head (even)"),
    mla_d_model=Int(1, 4096, doc="width of the MLA language models"),
    mla_heads=Int(1, 256, doc="heads per block of the MLA language models"),
    mla_layers=Int(1, 64, doc="blocks of the MLA language models"),
    mla_seq_len=Int(2, 4096, doc="tokens per sequence n of the MLA language models"),
    mla_steps=Int(1, 10_000_000, doc="optimiser steps of every MLA language model"),
    mla_batch=Int(1, 65536, doc="sequences per optimiser step"),
    mla_lr=Float(1e-6, 1.0, doc="peak learning rate (AdamW, warm-up then cosine decay)"),
    mla_rank_windows=Int(1, 100_000, doc="held-out windows of the test split whose attention is ranked per model"),
    models_run=Bool(doc="True measures SmolLM2-135M-Instruct and all-mpnet-base-v2 here (make models first, into "
                        "models_store); False reads models_long_store"),
    models_store=Param("str", allow_none=True,
                       doc="your results store for the two models' measurements; None: a temporary file"),
    models_long_store=Str(doc="the committed long-scale store of the two models, read only (never written)"),
    models_lengths=IntList(3, 512, doc="sequence lengths n at which the two models' heads are ranked"),
    models_windows=Int(1, 10_000, doc="windows per corpus at each of models_lengths"),
    models_cut_ns=IntList(3, 512, doc="sequence lengths n at which the two models' heads are cut"),
    models_cut_ranks=IntList(1, 64, doc="logit ranks r every head of the two models is cut to, ascending (64: the full head)"),
    models_cut_per_class=Int(2, 10_000, doc="BBC News documents per topic for the encoder's cut"),
    models_loss_windows=Int(2, 10_000, doc="BBC News windows on which the decoder's next-token loss is compared"),
)
CONSTRAINTS = (
    Constraint(("minilm_seq_lens", "minilm_counts"), same_length("minilm_seq_lens", "minilm_counts")),
    Constraint(("truncation_ranks",), ascending("truncation_ranks")),
    Constraint(("models_cut_ranks",), ascending("models_cut_ranks")),
    Constraint(("models_lengths",), ascending("models_lengths")),
    Constraint(("retrieval_head_dims",), ascending("retrieval_head_dims")),
    Constraint(("retrieval_ns",), ascending("retrieval_ns")),
    Constraint(("classifiers_head_dims",), ascending("classifiers_head_dims")),
    Constraint(("mla_kv_latents",), ascending("mla_kv_latents")),
    Constraint(("mla_kv_latents",), lambda p: None if len(p["mla_kv_latents"]) >= 2 else
               f"mla_kv_latents = {p['mla_kv_latents']} needs at least two latent sizes (a rise and an increment)"),
    Constraint(("mla_rope_dim",), lambda p: None if p["mla_rope_dim"] % 2 == 0 else
               f"mla_rope_dim = {p['mla_rope_dim']} must be even (RoPE rotates pairs of columns)"),
    Constraint(("retrieval_max_steps", "retrieval_extended_cap"), lambda p: None if p["retrieval_extended_cap"] is None
               or p["retrieval_extended_cap"] > p["retrieval_max_steps"] else
               f"retrieval_extended_cap = {p['retrieval_extended_cap']} must exceed retrieval_max_steps = "
               f"{p['retrieval_max_steps']} (or be None)"),
    Constraint(("retrieval_min_steps", "retrieval_max_steps"), lambda p: None if p["retrieval_min_steps"] <= p[
        "retrieval_max_steps"] else f"retrieval_min_steps = {p['retrieval_min_steps']} exceeds retrieval_max_steps = "
                                    f"{p['retrieval_max_steps']}"),
    Constraint(("truncation_layer_n", "truncation_ns"), lambda p: None if p["truncation_layer_n"] in p[
        "truncation_ns"] else f"truncation_layer_n = {p['truncation_layer_n']} must be one of truncation_ns"),
    Constraint(("truncation_folds", "truncation_per_class"), lambda p: None if (
        p["truncation_folds"] <= p["truncation_per_class"]) else (
        f"truncation_folds = {p['truncation_folds']} must not exceed truncation_per_class = "
        f"{p['truncation_per_class']} (every fold of the stratified probe needs a document of each topic)")),
)
# Parameters that name files or folders (lowrank.book.runner resolves them): a results store
# written, a store only read, a folder read, or a corpus name or path.
PATHS = {"retrieval_store": "store", "retrieval_long_store": "read_store", "classifiers_store": "store",
         "classifiers_long_store": "read_store", "models_store": "store", "models_long_store": "read_store"}
# The experiments whose runs the chapter's stores hold (one store may hold the first three; the two
# more pretrained models have a store of their own).
STORE_EXPERIMENTS = ("ch07_retrieval", "ch07_classifiers", "ch07_truncation", "ch07_pretrained_models")
