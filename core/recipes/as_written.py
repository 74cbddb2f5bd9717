"""jobRecipe none: a NeMo-RL config run as written, and the recipe that describes it.

Pure code. With `jobRecipe: none` the chosen config (jobOverrides.config_path: one the release ships, or the user's
own through jobConfigFiles) runs as NeMo-RL would run it from the command line: the program renders only the keys
the infrastructure decides (core.recipes.model.AS_WRITTEN_KEYS, core.recipes.overrides.as_written_overrides), and the
user's dotted jobOverrides change any other key. Everything the rest of the program reads of a run (its layout for
the Ray workers, the batch shape and parallel sizes the fit rules check, steps and checkpointing for the deadline,
sizing and warnings, W&B for the secret) is read here from the config resolved through its defaults: chain with the
user's dotted keys applied, into the same `Recipe` a built-in recipe is, so no rule reads a value the run does not
have.

What the program does not change it refuses instead, one line naming the key that set it: a config that does not
checkpoint (a run on spot capacity resumes from its checkpoints and is exported from them), one that stops itself
early at checkpoint_must_save_by (NeMo-RL then exits 0 like a finished run, and the export would take a partial
run), one that saves no optimizer state (every resume would restart the optimizer), and a tokenizer that is another
Hub artefact than the model (the prefetch pins the model's snapshot, which the tokenizer then loads from).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import ValidationError

import core.recipes.config_tree as config_tree
from core.catalog import NemoRlRelease
from core.keys import key as _key
from core.recipes.model import AS_WRITTEN, AS_WRITTEN_KEYS, RECIPE_FIELD_KEYS, Recipe

# huggingface_hub's own repo-id rule (huggingface_hub/utils/_validators.py REPO_ID_REGEX, 0.34.4: an optional
# namespace and a name of at most 96 of [\w.-]); the model is downloaded by that id at its pinned commit.
HUB_REPO_ID_RE = re.compile(r"(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b")


def resolved_config(tree: config_tree.ConfigTree, config_overrides: dict[str, Any]) -> dict:
    """The config with the user's dotted keys Hydra takes, but those of the keys the program sets (the others are
    refused by core.recipes.resolve, each in its own line)."""
    accepted = {
        k.lstrip("+"): config_tree.render_value(tree, k, v)
        for k, v in config_overrides.items()
        if not k.startswith("~")
        and k.lstrip("+") not in AS_WRITTEN_KEYS
        and config_tree.override_problem(tree, k, v) is None
    }
    return config_tree.with_overrides(tree, accepted)


def _get(config: dict, k: str, default: Any = None) -> Any:
    present, value = config_tree.lookup(config, k)
    return value if present else default


def recipe_values(config: dict) -> dict[str, Any]:
    """The Recipe fields of a config run as written, read from the resolved config (RECIPE_FIELD_KEYS: the key each
    field stands for). Only what the program reads of a run: keys it never renders here (converter_type, W&B's
    project, name and entity, TensorBoard) stay the config's and are not copied."""
    megatron = _get(config, "policy.megatron_cfg.enabled") is True
    colocated = _get(config, "policy.generation.colocated.enabled", True) is not False
    val_period = _get(config, "grpo.val_period")
    return {
        "name": AS_WRITTEN,
        "model_name": _get(config, "policy.model_name"),
        "train_backend": "megatron" if megatron else "dtensor",
        "dataset": None,
        "num_nodes": _get(config, "cluster.num_nodes"),
        "gpus_per_node": _get(config, "cluster.gpus_per_node"),
        "max_num_steps": _get(config, "grpo.max_num_steps"),
        "num_prompts_per_step": _get(config, "grpo.num_prompts_per_step"),
        "num_generations_per_prompt": _get(config, "grpo.num_generations_per_prompt"),
        "train_global_batch_size": _get(config, "policy.train_global_batch_size"),
        "colocated_generation": colocated,
        "generation_nodes": None if colocated else _get(config, "policy.generation.colocated.resources.num_nodes"),
        "generation_gpus_per_node": (
            None if colocated else _get(config, "policy.generation.colocated.resources.gpus_per_node")
        ),
        "vllm_tensor_parallel_size": _get(config, "policy.generation.vllm_cfg.tensor_parallel_size"),
        "vllm_gpu_memory_utilization": _get(config, "policy.generation.vllm_cfg.gpu_memory_utilization"),
        "dtensor_tensor_parallel_size": None if megatron else _get(config, "policy.dtensor_cfg.tensor_parallel_size"),
        # NeMo-RL validates when val_period > 0 (grpo.py grpo_train); -1 and 0 both mean never.
        "val_period": val_period if isinstance(val_period, int) and val_period >= 0 else None,
        "save_period": _get(config, "checkpointing.save_period"),
        "keep_top_k": _get(config, "checkpointing.keep_top_k"),
        "metric_name": _get(config, "checkpointing.metric_name"),
        "higher_is_better": _get(config, "checkpointing.higher_is_better"),
        "wandb_enabled": _get(config, "logger.wandb_enabled") is True,
        # Absent before v0.7.0, where every checkpoint holds the optimizer (nemo_rl/utils/checkpoint.py).
        "save_optimizer": _get(config, "checkpointing.save_optimizer", True) is not False,
        "precision": _get(config, "policy.precision"),
    }


def build(
    values: dict[str, Any], config: dict, config_path: str, release: NemoRlRelease, where: str
) -> tuple[Optional[Recipe], list[str]]:
    """The Recipe of the config (values: recipe_values() with the AS_WRITTEN_FIELDS the user set over them), or one
    line per value of the config that is not a runnable one, naming `where` (the setting that chose the config)."""
    try:
        return Recipe.model_validate(values), []
    except ValidationError as e:
        out = []
        for err in e.errors():
            field = str(err["loc"][0]) if err["loc"] else "name"
            k = RECIPE_FIELD_KEYS.get(field, field)
            out.append(
                f"{where}: {config_path} (NeMo-RL {release.tag}) sets {k} to {err.get('input')!r}: "
                f"{err['msg'][0].lower()}{err['msg'][1:]}"
            )
        return None, out


def problems(recipe: Recipe, config: dict, release: NemoRlRelease, origin) -> list[str]:
    """What a config run as written must have for the program to run it, one line each naming `origin(key)` (the
    setting the key's value came from: core.recipes.fit.Provenance)."""
    where = f"(NeMo-RL {release.tag})"
    p = []
    if not HUB_REPO_ID_RE.fullmatch(str(recipe.model_name)):
        p.append(
            f"{origin('policy.model_name')}: policy.model_name {recipe.model_name!r} {where} is not a Hugging Face "
            f"model id; set {_key('jobOverrides.model_name')} (with jobOverrides.model_revision, its commit)"
        )
    model = _get(config, "policy.model_name")
    tokenizer = _get(config, "policy.tokenizer.name", model)
    if tokenizer != model:
        p.append(
            f"{origin('policy.tokenizer.name')}: policy.tokenizer.name {tokenizer!r} is another Hub artefact than "
            f"policy.model_name {model!r} {where}: the run loads its tokenizer from the model's pinned snapshot, so "
            "remove the tokenizer's own name (or set it to ${policy.model_name})"
        )
    if _get(config, "checkpointing.enabled") is not True:
        p.append(
            f"{origin('checkpointing.enabled')}: checkpointing.enabled is not true {where}: a run resumes from its "
            "checkpoints after a preemption or a failed attempt and is exported from them; set "
            'jobOverrides["checkpointing.enabled"] to true'
        )
    if _get(config, "checkpointing.checkpoint_must_save_by") is not None:
        # NeMo-RL saves and leaves the GRPO loop like a finished run at that time ("Timeout has been reached,
        # stopping training early", nemo_rl/algorithms/grpo.py grpo_train, v0.4.0 L1389-1391, v0.7.0 L3123-3126).
        p.append(
            f"{origin('checkpointing.checkpoint_must_save_by')}: checkpointing.checkpoint_must_save_by is set "
            f"{where}: NeMo-RL then stops at that time like a finished run (exit 0) and the job would export a "
            'partial run; set jobOverrides["checkpointing.checkpoint_must_save_by"] to null (jobDeadlineSeconds '
            "bounds an attempt)"
        )
    if not recipe.save_optimizer:
        p.append(
            f"{origin('checkpointing.save_optimizer')}: checkpointing.save_optimizer is false {where}: every resume "
            'after a preemption would start a fresh optimizer; set jobOverrides["checkpointing.save_optimizer"] to '
            "true"
        )
    return p
