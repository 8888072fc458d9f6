"""Chapter 07's run: its validated parameters mapped onto the three experiments, run in the notebook's order."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from .classifiers import classifier_configs, run_classifiers
from .latent import latent_configs, run_latent
from .minilm import run_pretrained
from .pretrained_models import models_configs, run_models
from .reduction import run_retrieval
from .truncation import run_truncation

__all__ = ["retrieval_arguments", "truncation_arguments", "classifier_arguments", "latent_arguments",
           "models_arguments", "run"]


def retrieval_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """The retrieval grid's keywords (of :func:`.reduction.grid_configs`) from the chapter's parameters."""
    return dict(ns=p["retrieval_ns"], pair_ns=p["retrieval_pair_ns"], head_dims=p["retrieval_head_dims"],
                n_seeds=p["retrieval_seeds"], pair_seeds=p["retrieval_pair_seeds"], seed=p["seed"],
                max_steps=p["retrieval_max_steps"], min_steps=p["retrieval_min_steps"],
                d_model=p["retrieval_d_model"], n_values=p["retrieval_values"], lr=p["retrieval_lr"],
                tokens_per_step=p["retrieval_tokens"], test_sequences=p["retrieval_test_sequences"],
                rank_sequences=p["retrieval_rank_sequences"], rank_rtol=p["retrieval_rtol"])


def truncation_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """The truncation grid's keywords (of :func:`.truncation.truncation_configs`) from the chapter's parameters."""
    return dict(ns=p["truncation_ns"], ranks=p["truncation_ranks"], per_class=p["truncation_per_class"],
                folds=p["truncation_folds"], seed=p["seed"], l2=p["truncation_l2"],
                layer_n=p["truncation_layer_n"], layer_ranks=p["truncation_layer_ranks"])


def classifier_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """The classifier grid's keywords (of :func:`.classifiers.classifier_configs`) from the chapter's parameters."""
    return dict(image_set=p["classifiers_image_set"], head_dims=p["classifiers_head_dims"],
                seeds=p["classifiers_seeds"], vit_layers=p["classifiers_vit_layers"],
                text_layers=p["classifiers_text_layers"], seed=p["seed"])


def latent_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """The MLA grid's keywords (of :func:`.latent.latent_configs`) from the chapter's parameters."""
    return dict(kv_latents=p["mla_kv_latents"], seeds=p["mla_seeds"], seed=p["seed"], head_dim=p["mla_head_dim"],
                rope_dim=p["mla_rope_dim"], d_model=p["mla_d_model"], n_heads=p["mla_heads"],
                n_layers=p["mla_layers"], seq_len=p["mla_seq_len"], steps=p["mla_steps"],
                batch_size=p["mla_batch"], lr=p["mla_lr"])


def models_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """The two pretrained models' configs' keywords (of :func:`.pretrained_models.models_configs`)."""
    return dict(models=("mpnet", "smollm2"), lengths=p["models_lengths"], windows=p["models_windows"],
                cut_ns=p["models_cut_ns"], cut_ranks=p["models_cut_ranks"], per_class=p["models_cut_per_class"],
                loss_windows=p["models_loss_windows"], seed=p["seed"])


def run(P: Mapping[str, Any]) -> dict[str, Any]:
    """Every table chapter 07 shows and :func:`headline` reads, from its validated parameters.

    MiniLM's ranks are measured here. The retrieval grid is trained into ``retrieval_store`` when
    ``retrieval_run`` (finished runs are skipped by run key, so an interrupted run resumes; None: a
    temporary file) and then read back, or read from ``retrieval_long_store`` (never written); the
    truncation likewise with ``truncation_run``, into the same store. The MLA language models are
    trained here at every scale (seconds each at the default). SmolLM2-135M-Instruct and
    all-mpnet-base-v2 are measured into ``models_store`` when ``models_run``, or read from
    ``models_long_store``.
    """
    if P["threads"]:
        torch.set_num_threads(P["threads"])
    tables = run_pretrained(corpora=P["minilm_corpora"], seq_lens=P["minilm_seq_lens"], counts=P["minilm_counts"],
                            batch_size=P["minilm_batch"], seed=P["seed"], rtols=P["rtols"], energy=P["energy"])
    tables.update(run_retrieval(**retrieval_arguments(P), run=P["retrieval_run"], store=P["retrieval_store"],
                                read_store=P["retrieval_long_store"], threads=P["threads"],
                                extended_cap=P["retrieval_extended_cap"]))
    tables.update(run_truncation(**truncation_arguments(P), run=P["truncation_run"], store=P["retrieval_store"],
                                 read_store=P["retrieval_long_store"]))
    tables.update(run_classifiers(classifier_configs(**classifier_arguments(P)), run=P["classifiers_run"],
                                  store=P["classifiers_store"], read_store=P["classifiers_long_store"]))
    tables.update(run_latent(latent_configs(**latent_arguments(P)), rank_windows=P["mla_rank_windows"]))
    tables.update(run_models(models_configs(**models_arguments(P)), run=P["models_run"], store=P["models_store"],
                             read_store=P["models_long_store"]))
    return tables
