"""GRPO job recipes: the `Recipe` model (a typed GRPO run) and the built-in recipes that reproduce the seeds.

Pure code. A recipe names a model, a NeMo-RL config and dataset, the layout, steps, checkpointing and logging;
`jobOverrides` change any field but the name (resolve.py applies them and checks the result).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any, Literal, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field

from core import catalog
from core.data import HYDRA_KEYS, DataSpec
from core.keys import key as _key

DEFAULT_RECIPE = "gemma3-27b-gsm8k"


class JobSpec(Protocol):
    """What the recipe functions read of the job settings (core.settings.job.JobSettings), read-only."""

    @property
    def enabled(self) -> bool: ...
    @property
    def recipe(self) -> Optional[str]: ...
    @property
    def overrides(self) -> dict[str, Any]: ...
    @property
    def run_name(self) -> Optional[str]: ...
    @property
    def config_files(self) -> dict[str, str]: ...
    @property
    def start_from(self) -> Optional[str]: ...
    @property
    def data(self) -> Optional[dict[str, Any]]: ...


# --- recipes ------------------------------------------------------------------------------------------
class Recipe(BaseModel):
    """One GRPO run. Optional fields left None keep the base config's value (they are not rendered)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Recipe name (jobRecipe).")
    model_name: str = Field(description="policy.model_name (Hugging Face id).")
    model_revision: Optional[str] = Field(
        None,
        description=(
            "Hugging Face revision of the model the weights prefetch downloads and the job trains from, its "
            "tokenizer and reference model included: a 40-hex commit id (branches and tags move and are refused). "
            "Built-in recipes pin their model's commit (core.catalog.MODELS); a model outside the catalog needs one."
        ),
    )
    config_path: str = Field(description="NeMo-RL base config, relative to /opt/nemo-rl (--config).")
    train_backend: Literal["megatron", "dtensor"] = Field(description="Training backend the base config enables.")
    converter_type: Optional[str] = Field(
        None,
        description=(
            "policy.megatron_cfg.converter_type (Megatron only), rendered where the config has the key (v0.4.0, "
            "v0.5.0). NeMo-RL reads it at no release; PR #2640 removed it from v0.7.0's configs."
        ),
    )
    dataset: Optional[Literal["DeepScaler", "gsm8k"]] = Field(
        description=(
            "DeepScaler (NeMo-RL built-in, its Hub datasets staged at their pinned commits) or gsm8k (prepared as "
            "JSONL on Lustre, read by ResponseDataset); null (jobRecipe none): the config's own data section, as "
            "written; jobData replaces either with your own data."
        )
    )
    num_nodes: int = Field(ge=1, description="cluster.num_nodes: GPU nodes the run uses.")
    gpus_per_node: int = Field(ge=1, description="cluster.gpus_per_node.")
    max_num_steps: int = Field(ge=1, description="grpo.max_num_steps.")
    num_prompts_per_step: int = Field(ge=1, description="grpo.num_prompts_per_step.")
    num_generations_per_prompt: int = Field(ge=1, description="grpo.num_generations_per_prompt.")
    train_global_batch_size: Optional[int] = Field(None, ge=1, description="policy.train_global_batch_size.")
    colocated_generation: bool = Field(
        True,
        description=("policy.generation.colocated.enabled: vLLM shares the training GPUs (false: dedicated nodes)."),
    )
    generation_nodes: Optional[int] = Field(
        None,
        ge=1,
        description=("policy.generation.colocated.resources.num_nodes: nodes dedicated to vLLM (non-colocated only)."),
    )
    generation_gpus_per_node: Optional[int] = Field(
        None, ge=1, description=("policy.generation.colocated.resources.gpus_per_node (non-colocated only).")
    )
    vllm_tensor_parallel_size: Optional[int] = Field(
        None, ge=1, description="policy.generation.vllm_cfg.tensor_parallel_size."
    )
    vllm_gpu_memory_utilization: Optional[float] = Field(
        None, gt=0, le=1, description=("policy.generation.vllm_cfg.gpu_memory_utilization.")
    )
    dtensor_tensor_parallel_size: Optional[int] = Field(
        None, ge=1, description=("policy.dtensor_cfg.tensor_parallel_size (DTensor only).")
    )
    val_period: Optional[int] = Field(
        None,
        ge=0,
        description=(
            "grpo.val_period: steps between validations (0: none); null keeps the config's (resolved "
            "through its defaults: chain)."
        ),
    )
    step_budget_seconds: Optional[int] = Field(
        None,
        ge=1,
        description=(
            "Upper bound of one GRPO step (rollouts, training, checkpoint) for the RayJob's deadline: "
            "activeDeadlineSeconds = startup allowance + max_num_steps x step_budget_seconds (jobDeadlineSeconds "
            "overrides the result). Null (jobRecipe none unless set): no deadline from the recipe."
        ),
    )
    save_period: int = Field(ge=1, description="checkpointing.save_period: steps between checkpoints.")
    keep_top_k: int = Field(ge=1, description="checkpointing.keep_top_k: checkpoints kept.")
    metric_name: Optional[str] = Field(
        None,
        description=(
            "checkpointing.metric_name (val:<key> or train:<key>); null keeps the newest keep_top_k checkpoints, "
            "which is what resuming after a preemption needs."
        ),
    )
    higher_is_better: Optional[bool] = Field(
        None,
        description=(
            "checkpointing.higher_is_better, with metric_name: whether a higher value of the metric is better (for "
            "keep_top_k pruning and the exported best checkpoint); null takes the known direction of val:accuracy, "
            "train:reward (higher) or train:loss (lower), and must be set for any other metric."
        ),
    )
    wandb_enabled: bool = Field(False, description="logger.wandb_enabled (needs the wandbApiKey secret).")
    wandb_name: Optional[str] = Field(None, description="logger.wandb.name; default: the run name.")
    wandb_project: Optional[str] = Field(None, description="logger.wandb.project; null keeps the config's.")
    wandb_entity: Optional[str] = Field(
        None,
        description=(
            "The W&B team or user the run logs to: +logger.wandb.entity (no shipped config has the key; NeMo-RL "
            "passes logger.wandb whole to wandb.init). Null: W&B's default entity of the API key."
        ),
    )
    tensorboard_enabled: Optional[bool] = Field(None, description="logger.tensorboard_enabled.")
    save_optimizer: bool = Field(
        True, description=("Checkpoints include the optimizer state (policy/optimizer/); used for checkpoint sizing.")
    )
    ignore_tp_accuracy_check: bool = Field(
        False,
        description=(
            "Accept NeMo-RL's known batch-variant accuracy issue at tensor parallelism >= 4: the job's environment "
            "gets NRL_IGNORE_TP_ACCURACY_CHECK=1 on releases whose Policy asserts policy.train_micro_batch_size == "
            "policy.logprob_batch_size there (v0.7.0 lm_policy.py); without it such a run is refused. The Gemma 3 "
            "recipe sets it, as NVIDIA's own test script for its config does."
        ),
    )
    precision: Literal["bfloat16"] = Field("bfloat16", description="policy.precision of the base configs (sizing).")
    model_params: Optional[int] = Field(
        None,
        ge=1,
        description=(
            "Parameter count of a model outside the catalog (its model card's figure), for checkpoint sizing; "
            "catalog models keep the catalog's."
        ),
    )
    config_files: dict[str, str] = Field(
        default_factory=dict,
        description="The user's own config files (jobConfigFiles): install path under /opt/nemo-rl -> content.",
    )
    data: Optional[DataSpec] = Field(
        None,
        description="Your own training (and validation) data (jobData), staged on Lustre and read by ResponseDataset.",
    )
    config_overrides: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Any key of the release's config, as jobOverrides.<dotted.key> (a leading '+' adds a key the config "
            "lacks), checked against the config resolved through its defaults: chain."
        ),
    )


# Source: the codelab's run_nemo_rl.sh ("Scale RL with GKE and Managed Lustre",
# https://codelabs.developers.google.com/next26/rl-gke-lustre) on NeMo-RL v0.4.0, with one deliberate difference: the
# codelab saves every 2 steps while grpo_math_70B_megatron.yaml inherits grpo.val_period 10 (from
# grpo_math_1B_megatron.yaml in v0.4.0, v0.5.0 and v0.7.0), so 8 of its 10 checkpoints are
# written at steps without validation, which on the Megatron backend hits NVIDIA-NeMo/RL #1137 (CUDA OOM after such a
# save). Here the run saves every 10 steps, at the validation steps 10 and 20 (see megatron_save_without_validation()).
_QWEN_72B = Recipe(
    name="qwen2.5-72b-deepscaler",
    model_name="Qwen/Qwen2.5-72B-Instruct",
    model_revision=catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].revision,
    config_path="examples/configs/grpo_math_70B_megatron.yaml",
    train_backend="megatron",
    converter_type="Qwen2ForCausalLM",
    dataset="DeepScaler",
    num_nodes=8,
    gpus_per_node=8,
    max_num_steps=20,
    num_prompts_per_step=32,
    num_generations_per_prompt=8,
    train_global_batch_size=256,
    # Nominal estimate (no published step time): generous, so only a hung run meets the deadline (~14 h with the
    # startup allowance).
    step_budget_seconds=1800,
    save_period=10,
    keep_top_k=2,
    metric_name=None,
    wandb_enabled=False,
)

# Source: the GKE tutorial's gemma3-27b-gsm8k.sh ("Optimize and scale RL with NVIDIA NeMo RL on GKE",
# https://docs.cloud.google.com/kubernetes-engine/docs/tutorials/nemo-rl-gke) on NeMo-RL v0.5.0. The seed leaves
# checkpointing to the base config; its output shows `step_10`, i.e. the base save_period 10 (keep_top_k 3 there too).
_GEMMA3_27B = Recipe(
    name="gemma3-27b-gsm8k",
    model_name="google/gemma-3-27b-it",
    model_revision=catalog.MODELS["google/gemma-3-27b-it"].revision,
    config_path="examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml",
    train_backend="dtensor",
    dataset="gsm8k",
    num_nodes=2,
    gpus_per_node=8,
    max_num_steps=300,
    num_prompts_per_step=16,
    num_generations_per_prompt=64,
    colocated_generation=False,
    generation_nodes=1,
    generation_gpus_per_node=8,
    vllm_tensor_parallel_size=8,
    vllm_gpu_memory_utilization=0.9,
    dtensor_tensor_parallel_size=8,
    # Nominal estimate (no published step time): 300 steps x 15 min + the startup allowance, ~79 h.
    step_budget_seconds=900,
    save_period=10,
    keep_top_k=3,
    metric_name=None,
    wandb_enabled=True,
    tensorboard_enabled=False,
    # v0.7.0's Policy asserts train_micro_batch_size (1) == logprob_batch_size (4) at DTensor TP 8 (lm_policy.py
    # L178-195); NVIDIA's test script for this config sets the variable (tests/test_suites/llm/grpo-gemma3-27b-it-8n4g-
    # fsdp2tp4-actckpt-long.sh L5 at v0.7.0). v0.5.0, the tutorial's release, has no such check.
    ignore_tp_accuracy_check=True,
)

RECIPES: dict[str, Recipe] = {r.name: r for r in (_QWEN_72B, _GEMMA3_27B)}

# jobRecipe none: the chosen config (jobOverrides.config_path: a shipped config, or the user's own through
# jobConfigFiles) runs as written. The Recipe is then a view of the resolved config (core.recipes.as_written), and the
# program renders only the keys the infrastructure decides (AS_WRITTEN_KEYS).
AS_WRITTEN = "none"
# Recipe fields a jobOverrides entry may still set with jobRecipe none: none of them renders a key of the config but
# the pinned model (model_name, model_revision: policy.model_name and the tokenizer, the snapshot the prefetch pins),
# and the others are the program's own: checkpoint sizing, the RayJob deadline, the accepted TP accuracy issue.
AS_WRITTEN_FIELDS = (
    "config_path",
    "model_name",
    "model_revision",
    "model_params",
    "step_budget_seconds",
    "ignore_tp_accuracy_check",
)
# The config key each other recipe field renders (or stands for): with jobRecipe none the config's own key is set
# instead, dotted (jobOverrides["cluster.num_nodes"]).
RECIPE_FIELD_KEYS: dict[str, str] = {
    "train_backend": "policy.megatron_cfg.enabled",
    "converter_type": "policy.megatron_cfg.converter_type",
    "dataset": "data",
    "num_nodes": "cluster.num_nodes",
    "gpus_per_node": "cluster.gpus_per_node",
    "max_num_steps": "grpo.max_num_steps",
    "num_prompts_per_step": "grpo.num_prompts_per_step",
    "num_generations_per_prompt": "grpo.num_generations_per_prompt",
    "train_global_batch_size": "policy.train_global_batch_size",
    "colocated_generation": "policy.generation.colocated.enabled",
    "generation_nodes": "policy.generation.colocated.resources.num_nodes",
    "generation_gpus_per_node": "policy.generation.colocated.resources.gpus_per_node",
    "vllm_tensor_parallel_size": "policy.generation.vllm_cfg.tensor_parallel_size",
    "vllm_gpu_memory_utilization": "policy.generation.vllm_cfg.gpu_memory_utilization",
    "dtensor_tensor_parallel_size": "policy.dtensor_cfg.tensor_parallel_size",
    "val_period": "grpo.val_period",
    "save_period": "checkpointing.save_period",
    "keep_top_k": "checkpointing.keep_top_k",
    "metric_name": "checkpointing.metric_name",
    "higher_is_better": "checkpointing.higher_is_better",
    "wandb_enabled": "logger.wandb_enabled",
    "wandb_name": "logger.wandb.name",
    "wandb_project": "logger.wandb.project",
    "wandb_entity": "logger.wandb.entity",
    "tensorboard_enabled": "logger.tensorboard_enabled",
    "save_optimizer": "checkpointing.save_optimizer",
    "precision": "policy.precision",
}
_ONE_WANDB_RUN = "the program (one W&B run per run, resumed by every attempt)"
# The keys the program renders with jobRecipe none, and what decides each (docs/operations.md "A config as written"
# lists them; tests/test_as_written.py keeps the two in step): where the run keeps its checkpoints and logs on Lustre,
# the pinned snapshot the model and its tokenizer load from, one W&B run across attempts where the config logs to W&B.
# The staged data paths join them where jobData names the data.
AS_WRITTEN_KEYS: dict[str, str] = {
    "policy.model_name": "jobOverrides.model_name (the pinned snapshot; default: the config's own policy.model_name)",
    "policy.tokenizer.name": "jobOverrides.model_name (the tokenizer follows the pinned snapshot)",
    "checkpointing.checkpoint_dir": "runName",
    "logger.log_dir": "runName",
    "logger.wandb.id": _ONE_WANDB_RUN,
    "logger.wandb.resume": _ONE_WANDB_RUN,
}


def as_written(r: Recipe) -> bool:
    """The recipe is jobRecipe none: its config runs as written."""
    return r.name == AS_WRITTEN


def rendered_key_owners(r: Recipe) -> dict[str, str]:
    """Config key -> the setting that decides it, for every key the program may render for this recipe (with jobData,
    a config run as written gets the staged data's keys too)."""
    if not as_written(r):
        return SETTING_OF_KEY
    return {**AS_WRITTEN_KEYS, **({k: "jobData" for k in HYDRA_KEYS} if r.data is not None else {})}


# Recipe fields a jobOverrides entry may set (the name selects the recipe: jobRecipe; config_overrides holds the
# dotted keys).
OVERRIDABLE = tuple(f for f in Recipe.model_fields if f not in ("name", "config_overrides", "config_files", "data"))

# Config keys the program renders, and the setting that decides each: a dotted jobOverrides entry for one of them
# is refused naming that setting (two spellings of one value would contradict each other).
_DATA = "jobData (your own data; jobOverrides.dataset picks a built-in one)"
SETTING_OF_KEY: dict[str, str] = {
    "policy.model_name": "jobOverrides.model_name (the pinned snapshot)",
    "policy.tokenizer.name": "jobOverrides.model_name (the tokenizer follows the pinned snapshot)",
    "cluster.num_nodes": "jobOverrides.num_nodes",
    "cluster.gpus_per_node": "jobOverrides.gpus_per_node",
    "grpo.max_num_steps": "jobOverrides.max_num_steps",
    "grpo.num_prompts_per_step": "jobOverrides.num_prompts_per_step",
    "grpo.num_generations_per_prompt": "jobOverrides.num_generations_per_prompt",
    "grpo.val_period": "jobOverrides.val_period",
    "checkpointing.enabled": "the program (always true: resuming after a preemption needs checkpoints)",
    "checkpointing.checkpoint_dir": "runName",
    "checkpointing.checkpoint_must_save_by": (
        "the program (null where a config sets it: at that time NeMo-RL stops like a finished run, exit 0, and the job "
        "would export a partial run; jobDeadlineSeconds bounds an attempt)"
    ),
    "checkpointing.save_optimizer": (
        "the program (always true: a resume without the optimizer state starts a fresh optimizer)"
    ),
    "checkpointing.save_period": "jobOverrides.save_period",
    "checkpointing.keep_top_k": "jobOverrides.keep_top_k",
    "checkpointing.metric_name": "jobOverrides.metric_name",
    "checkpointing.higher_is_better": "jobOverrides.higher_is_better",
    "logger.log_dir": "runName",
    "logger.wandb_enabled": "jobOverrides.wandb_enabled",
    "logger.wandb.name": "jobOverrides.wandb_name",
    "logger.wandb.project": "jobOverrides.wandb_project",
    "logger.wandb.entity": "jobOverrides.wandb_entity",
    "logger.wandb.id": "the program (one W&B run per run, resumed by every attempt)",
    "logger.wandb.resume": "the program (one W&B run per run, resumed by every attempt)",
    "logger.tensorboard_enabled": "jobOverrides.tensorboard_enabled",
    "policy.megatron_cfg.converter_type": "jobOverrides.converter_type",
    "policy.train_global_batch_size": "jobOverrides.train_global_batch_size",
    "policy.dtensor_cfg.tensor_parallel_size": "jobOverrides.dtensor_tensor_parallel_size",
    "policy.generation.vllm_cfg.tensor_parallel_size": "jobOverrides.vllm_tensor_parallel_size",
    "policy.generation.vllm_cfg.gpu_memory_utilization": "jobOverrides.vllm_gpu_memory_utilization",
    "policy.generation.colocated.enabled": "jobOverrides.colocated_generation",
    "policy.generation.colocated.resources.num_nodes": "jobOverrides.generation_nodes",
    "policy.generation.colocated.resources.gpus_per_node": "jobOverrides.generation_gpus_per_node",
    # The dataset route, both layouts (v0.4.0/v0.5.0 flat; v0.7.0 data.train / data.validation / data.default).
    **{
        k: _DATA
        for k in (
            "data.dataset_name",
            "data.train_data_path",
            "data.val_data_path",
            "data.input_key",
            "data.output_key",
            "data.train_split",
            "data.val_split",
            "data.train.dataset_name",
            "data.train.data_path",
            "data.train.split_validation_size",
            "data.train.split",
            "data.validation.split",
            "data.default.split",
            "data.validation",
            "data.validation.dataset_name",
            "data.validation.data_path",
            "data.default.input_key",
            "data.default.output_key",
            "data.train.input_key",
            "data.train.output_key",
            "data.validation.input_key",
            "data.validation.output_key",
        )
    },
}


def higher_is_better(r: Recipe) -> bool:
    """The direction the run ranks checkpoints in: the recipe's, else the metric's known one (true without a
    metric, NeMo-RL's base default)."""
    if r.higher_is_better is not None:
        return r.higher_is_better
    return catalog.METRIC_HIGHER_IS_BETTER.get(r.metric_name or "", True)


RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def run_name_problem(name: str) -> Optional[str]:
    if RUN_NAME_RE.fullmatch(name) and ".." not in name:  # fullmatch: `$` alone accepts a final "\n"
        return None
    return (
        f"{_key('runName')}: {name!r} is not usable as a directory name under <lustreMountPath>/checkpoints "
        "(1-100 letters, digits, '.', '_' or '-', starting with a letter or digit, no '..')"
    )


def user_config_key(install_path: str, text: str) -> str:
    """The file's key in the job-scripts ConfigMap: content-addressed, so a stale mount is detected (install_configs.py
    checks the hash) and an edit is a new key. ConfigMap keys allow letters, digits, '-', '_' and '.'."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"user-config-{digest}-{posixpath.basename(install_path)}"
