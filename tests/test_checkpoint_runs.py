"""Which checkpoints a run resumes from, and when a Megatron run saves: the rules, with the real recipe objects.

- NeMo-RL resumes from the newest `step_N` under `checkpointing.checkpoint_dir` (nemo_rl/utils/checkpoint.py
  `CheckpointManager.get_latest_checkpoint_path`, v0.4.0-v0.7.0); the program puts that directory at
  `<mount>/checkpoints/<run name>`. A checkpoint written for another model, backend, layout or release must not
  be picked up, while the same recipe with more steps or other periods continues.
- NeMo-RL's GRPO loop validates when `(step + 1) % val_period == 0` and saves when `is_last_step or (step + 1) %
  save_period == 0` (nemo_rl/algorithms/grpo.py `grpo_train`, v0.4.0 and v0.5.0). Megatron runs that save at a step
  without validation hit NVIDIA-NeMo/RL #1137 (CUDA OOM, reported 2025-09-16 on main after v0.3.1, open) and #834
  (segfault, reported 2025-08-04 after v0.3.1, fixed by NVIDIA-NeMo/RL PR #844, first released in v0.4.0).
"""

from __future__ import annotations

import re

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings

V040, V050 = NEMO_RL_RELEASES["v0.4.0"], NEMO_RL_RELEASES["v0.5.0"]
QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"


def job(**values) -> JobSettings:
    return JobSettings.model_validate(values)


def run_name(recipe: str, overrides: dict, release=V050, stack: str = "dev") -> str:
    j = job(jobRecipe=recipe, jobOverrides=overrides)
    recipes.resolve_recipe(j, release)  # only runnable recipes are compared
    return recipes.default_run_name(j, stack, release)


# --- the default run name follows the run's identity -------------------------------------------------------------
# Changes that only extend or observe the run, or tune memory: NeMo-RL continues from the run's checkpoints.
SAME_RUN = {
    QWEN: [
        {"save_period": 20, "val_period": 20},
        {"keep_top_k": 5},
        {"wandb_enabled": True, "wandb_name": "q", "wandb_project": "p", "wandb_entity": "team"},
        {"vllm_gpu_memory_utilization": 0.7},
        {"metric_name": "val:accuracy"},
        {"logger.monitor_gpus": False},
        {"policy.megatron_cfg.activation_checkpointing": True},
        {"env.math.num_workers": 4},
    ],
    GEMMA: [
        {"max_num_steps": 400},
        {"save_period": 20},
        {"tensorboard_enabled": True},
        {"vllm_tensor_parallel_size": 4},
        {"generation_gpus_per_node": None},  # rendered as gpus_per_node (8) either way
        {"grpo.val_batch_size": 64},
        {"policy.logprob_batch_size": 2},
    ],
}
# Changes that alter training, so the old checkpoints are another experiment's (or do not load).
NEW_RUN = {
    QWEN: {
        "model": {"model_name": "Qwen/Qwen2.5-72B", "model_revision": "0" * 40, "model_params": 72_700_000_000},
        "revision": {"model_revision": "1" * 40},
        "nodes": {"num_nodes": 4},
        "config": {"config_path": "examples/configs/grpo_math_1B.yaml"},
        "megatron lr": {"policy.megatron_cfg.optimizer.lr": 1.0e-6},
        "batch": {"num_prompts_per_step": 16, "train_global_batch_size": 128},
        "generations": {"num_generations_per_prompt": 16},
        "dataset": {"dataset": "gsm8k"},
        # Megatron: the steps size the scheduler state a resume checks (tests/test_resume_identity.py)
        "steps": {"max_num_steps": 40},
        "epochs": {"grpo.max_num_epochs": 3},
        "dataloader workers": {"data.num_workers": 0},
    },
    GEMMA: {
        "backend": {
            "config_path": "examples/configs/grpo_math_70B_megatron.yaml",
            "dtensor_tensor_parallel_size": None,
            "num_nodes": 3,  # its TP 4 x PP 4 needs 16 training GPUs beside the generation node
        },
        "colocated": {"colocated_generation": True, "generation_nodes": None, "generation_gpus_per_node": None},
        "generation nodes": {"num_nodes": 3, "generation_nodes": 2},
        "gpus per node": {
            "gpus_per_node": 4,
            "generation_gpus_per_node": 4,
            "vllm_tensor_parallel_size": 4,
            "dtensor_tensor_parallel_size": 4,
        },
        "dtensor tp": {"dtensor_tensor_parallel_size": 4},
        "dataset": {"dataset": "DeepScaler"},
        "lr": {"policy.optimizer.kwargs.lr": 1.0e-6},
        "kl": {"loss_fn.reference_policy_kl_penalty": 0.001},
        "seed": {"grpo.seed": 7},
        "sequence length": {"policy.max_total_sequence_length": 8192},
        "temperature": {"policy.generation.temperature": 0.7},
        "precision": {"policy.precision": "float32"},
        "added key": {"+policy.generation.vllm_kwargs.seed": 3},
        "dataloader workers": {"data.num_workers": 2},
    },
}


@pytest.mark.unit
@pytest.mark.parametrize("name", [QWEN, GEMMA])
def test_a_change_that_extends_or_observes_the_run_resumes_under_the_same_run_name(name):
    base = run_name(name, {})
    assert re.fullmatch(rf"{re.escape(name)}-dev-[0-9a-f]{{8}}", base)
    for overrides in SAME_RUN[name]:
        assert run_name(name, overrides) == base, overrides


@pytest.mark.unit
@pytest.mark.parametrize("name, change", [(n, c) for n, changes in NEW_RUN.items() for c in changes])
def test_a_change_that_alters_training_starts_a_new_run(name, change):
    assert run_name(name, NEW_RUN[name][change]) != run_name(name, {})


@pytest.mark.graph
def test_the_resume_safe_keys_are_keys_of_the_configs():
    # Each listed key (or section) is in at least one shipped config of a release: no typo makes a list entry dead
    # (an unlisted key only ever starts a new run).
    from core.recipes import config_tree

    keys = set()
    for tag in NEMO_RL_RELEASES:
        for path in config_tree.shipped_configs(tag):
            keys |= set(config_tree.load(tag, path).keys)
    dead = [k for k in recipes.RESUME_SAFE_KEYS if k not in keys]
    assert dead == [], dead


@pytest.mark.unit
def test_more_steps_start_a_new_run_where_they_set_the_learning_rate_horizon():
    # Megatron without lr_decay_iters and a decaying lr: train_iters (from max_num_steps) is the decay horizon.
    decaying = {
        "policy.megatron_cfg.scheduler.lr_decay_iters": None,
        "policy.megatron_cfg.scheduler.lr_decay_style": "cosine",
    }
    assert run_name(QWEN, {**decaying, "max_num_steps": 40}) != run_name(QWEN, decaying)


@pytest.mark.unit
def test_another_release_starts_a_fresh_run():
    # A checkpoint written by NeMo-RL v0.4.0 is not promised to load in v0.5.0 (other Megatron-Core, other layout).
    assert run_name(QWEN, {}, V040) != run_name(QWEN, {}, V050)


@pytest.mark.unit
def test_run_names_are_directory_names_within_the_limit():
    long_stack = "s" * 120
    name = run_name(GEMMA, {}, stack=long_stack)
    assert len(name) == 100 and recipes.run_name_problem(name) is None
    assert name.endswith("-" + recipes.checkpoint_fingerprint(recipes.RECIPES[GEMMA], V050))


@pytest.mark.unit
def test_an_explicit_run_name_is_used_as_given():
    j = job(runName="exp7", jobOverrides={"num_nodes": 1, "generation_nodes": None, "colocated_generation": True})
    assert recipes.default_run_name(j, "dev", V050) == "exp7"


@pytest.mark.graph
def test_stack_outputs_name_the_fingerprinted_checkpoint_dir(synth):
    dev, more_steps, other_layout = (
        synth("dev"),
        synth("dev", {"jobOverrides": {"max_num_steps": 600}}),
        synth("dev", {"jobOverrides": {"dtensor_tensor_parallel_size": 4}}),
    )
    assert dev.error is None and more_steps.error is None and other_layout.error is None
    assert dev.outputs["runName"] == more_steps.outputs["runName"] != other_layout.outputs["runName"]
    assert dev.outputs["checkpointDir"] == f"/lustre/checkpoints/{dev.outputs['runName']}"


# --- item 17: Megatron checkpoints only at validation steps --------------------------------------------------------
@pytest.mark.unit
def test_shipped_recipes_save_only_after_a_validation():
    for name, recipe in recipes.RECIPES.items():
        for release in NEMO_RL_RELEASES.values():
            assert recipes.megatron_save_without_validation(recipe, release) == [], (name, release.tag)


@pytest.mark.unit
def test_codelab_recipe_saves_at_the_validation_steps_10_and_20():
    # The codelab saves every 2 steps while grpo_math_70B_megatron.yaml inherits val_period 10
    # (grpo_math_1B_megatron.yaml, v0.4.0/v0.5.0/v0.7.0, read from the release's config tree): the shipped recipe
    # saves every 10.
    recipe = recipes.RECIPES[QWEN]
    words = recipes.render_overrides(recipe, V040, mount_path="/lustre", run_name="r")
    assert "checkpointing.save_period=10" in words and "grpo.max_num_steps=20" in words
    assert not any(w.startswith("grpo.val_period=") for w in words)  # the base config's 10 applies
    for release in (V040, V050):
        assert recipes.effective_val_period(recipe, release) == 10


@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides, steps",
    [
        ({"save_period": 2}, [2, 4, 6, 8, 12, 14, 16, 18]),  # the codelab's own setting: validation at 10 and 20
        ({"max_num_steps": 25}, [25]),  # the last step always saves
        ({"val_period": 0}, [10, 20]),  # no validation at all
        ({"save_period": 3, "val_period": 3}, [20]),  # aligned periods, but the run ends at step 20
        ({"save_period": 4, "val_period": 4}, []),
        ({"save_period": 20, "val_period": 10}, []),
    ],
)
def test_megatron_saves_between_validations_are_found(overrides, steps):
    recipe = recipes.resolve_recipe(job(jobRecipe=QWEN, jobOverrides=overrides), V050)
    assert recipes.megatron_save_without_validation(recipe, V050) == steps


@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides", [{"save_period": 2}, {"max_num_steps": 25}, {"val_period": 0}, {"save_period": 5, "val_period": 10}]
)
def test_megatron_override_saving_without_validation_warns_naming_the_key(overrides):
    warnings = recipes.job_warnings(job(jobRecipe=QWEN, jobOverrides=overrides), V050)
    assert len(warnings) == 1
    key = next(k for k in ("save_period", "val_period", "max_num_steps") if k in overrides)
    assert warnings[0].startswith(f"nemo-rl-gke:jobOverrides.{key}: ")
    assert "NVIDIA-NeMo/RL #1137" in warnings[0] and "\n" not in warnings[0]


@pytest.mark.unit
@pytest.mark.parametrize(
    "name, overrides",
    [
        (QWEN, {}),
        (QWEN, {"save_period": 20, "val_period": 10}),
        (QWEN, {"save_period": 2, "val_period": 2}),
        (QWEN, {"max_num_steps": 40}),
        (GEMMA, {"save_period": 3}),  # DTensor: neither issue concerns it
    ],
)
def test_aligned_or_non_megatron_runs_do_not_warn(name, overrides):
    assert recipes.job_warnings(job(jobRecipe=name, jobOverrides=overrides), V050) == []
