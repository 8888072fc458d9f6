"""Chapter 07's cost: the MiniLM windows, the retrieval trainings and the truncated models its
parameters make."""
from __future__ import annotations

from .classifiers import classifier_configs
from .reduction import grid_configs
from .latent import latent_configs
from .pretrained_models import models_configs
from .runs import classifier_arguments, latent_arguments, models_arguments, retrieval_arguments, truncation_arguments
from .truncation import truncation_configs

__all__ = ["models_units", "models_seconds", "MODEL_SHAPES", "retrieval_configs_at", "truncation_configs_at", "classifier_configs_at", "classifier_seconds", "estimate", "memory", "run_keys", "PLATEAU_SHARE"]


def retrieval_configs_at(p) -> list[dict]:
    return grid_configs(**retrieval_arguments(p)) if p["retrieval_run"] else []


def classifier_configs_at(p) -> list[dict]:
    return classifier_configs(**classifier_arguments(p)) if p["classifiers_run"] else []


# CPU seconds of one classifier run to its plateau, from the pilots (one thread, seed 0): the vision
# transformer on mnist5k at 2 blocks took 104 s at d_h = 1 and 385 s at d_h = 64, on digits 47 and
# 68 s; the one-block BBC News classifier 28 and 48 s. Deeper models cost in proportion to their blocks.
def classifier_seconds(c: dict) -> float:
    if c["kind"] == "vit":
        base, slope = (104.0, 4.4) if c["dataset"] == "mnist5k" else (47.0, 0.33)
        return (base + slope * c["head_dim"]) * c["n_layers"] / 2
    return (28.0 + 0.31 * c["head_dim"]) * c["n_layers"]


def truncation_configs_at(p) -> list[dict]:
    return truncation_configs(**truncation_arguments(p)) if p["truncation_run"] else []


# A retrieval run stops at its loss plateau, checked from min_steps on; the estimate charges
# min_steps plus this share of the rest, then the cool-down the config adds after the stop. A step
# costs more beyond n = 128 (every query attends over n keys), in proportion to n.
PLATEAU_SHARE = 1 / 3


# (layers, heads, parameters) of the two more pretrained models, as their configs give them.
MODEL_SHAPES = {"mpnet": (12, 12, 109.5e6), "smollm2": (30, 9, 134.5e6)}


def models_units(p) -> dict[str, float]:
    """The two more models' work when ``models_run``: every head's ranks (two SVDs per head and
    window), the tokens of every forward pass (ranked windows, the encoder's articles and the
    decoder's windows under every cut and the full model), and SmolLM2's one load."""
    if not p["models_run"]:
        return {}
    out = {"pretrained_svd": 0.0, "pretrained_token": 0.0, "encoder_cut_token": 0.0, "decoder_cut_token": 0.0,
           "gguf_load": 1.0}
    for c in models_configs(**models_arguments(p)):
        layers, heads, params = MODEL_SHAPES[c["model"]]
        if c["part"] == "ranks":
            count = c["windows"] * len(c["corpora"])
            out["pretrained_svd"] += count * layers * heads * sum(n ** 3 for n in c["lengths"])
            out["pretrained_token"] += count * sum(c["lengths"]) * params / 1e8
        elif c["model"] == "mpnet":
            out["encoder_cut_token"] += 5 * c["per_class"] * c["n"] * (1 + len(c["ranks"])) * params / 1e8
        else:
            out["decoder_cut_token"] += c["loss_windows"] * c["n"] * (1 + len(c["ranks"])) * params / 1e8
    return out


def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    # every window: one forward pass and the SVDs of all 72 heads' logits and probabilities
    windows = len(p["minilm_corpora"]) * sum(k * n ** 3 for n, k in zip(p["minilm_seq_lens"], p["minilm_counts"]))
    out = {"minilm": windows}
    what = ["MiniLM ranks"]
    configs = retrieval_configs_at(p)
    if configs:
        steps = lambda c: (c["min_steps"] + PLATEAU_SHARE * (c["max_steps"] - c["min_steps"])) * (1 + c["cooldown"])
        out["retrieval"] = sum(steps(c) * c["tokens_per_step"] / 2048 * (c["d_model"] / 64) * max(1.0, c["n"] / 128)
                               for c in configs)
        out["retrieval_run"] = sum(c["test_sequences"] * c["n"] / 160_000 for c in configs)
        what.append(f"{len(configs)} retrieval trainings")
    classifiers = classifier_configs_at(p)
    if classifiers:
        out["classifier"] = sum(classifier_seconds(c) for c in classifiers)
        what.append(f"{len(classifiers)} classifier trainings")
    mla = latent_configs(**latent_arguments(p))
    # per step, scaled from the pilot's batch of 16 x 32 tokens at width 32 by tokens and width
    out["mla_step"] = sum(c["steps"] * c["batch_size"] * c["seq_len"] / 512 * max(1.0, c["d_model"] / 32)
                          * c["n_layers"] for c in mla)
    what.append(f"{len(mla)} MLA language models")
    truncated = truncation_configs_at(p)
    if truncated:
        docs = 5 * p["truncation_per_class"]
        # every n: the full model and one model per rank; at layer_n also one per (layer, rank)
        out["truncation"] = sum(docs * c["n"] * (1 + len(c["ranks"]) + 6 * len(c["layer_ranks"])) for c in truncated)
        what.append(f"MiniLM truncated at {len(p['truncation_ranks'])} ranks")
    more = models_units(p)
    if more:
        out.update(more)
        what.append("SmolLM2-135M-Instruct and all-mpnet-base-v2 ranked and cut")
    return out, ", ".join(what)


def memory(p) -> float:
    """Bytes of one MiniLM layer's attention over a batch of the longest windows (float32); with
    ``models_run``, SmolLM2 in float32 (0.54 GB) twice over while its GGUF file is dequantised, and
    MPNet (0.44 GB) beside it."""
    minilm = 4.0 * p["minilm_batch"] * 12 * max(p["minilm_seq_lens"]) ** 2 * 4
    return max(minilm, 2 * 0.54e9 + 0.44e9 if p["models_run"] else 0.0)


def run_keys(p) -> set[str]:
    from ...train import run_key

    models = models_configs(**models_arguments(p)) if p["models_run"] else []
    return {run_key(c) for c in retrieval_configs_at(p) + truncation_configs_at(p) + classifier_configs_at(p) + models}


def models_seconds(p) -> float:
    """Estimated CPU seconds of the two more models' measurement at ``p`` (its rates from lowrank.experiments.costs)."""
    from ..costs import CPU_RATES

    return sum(CPU_RATES[k] * v for k, v in models_units(p).items())
