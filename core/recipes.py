"""NeMo-RL GRPO job recipes: what the RayJob runs, rendered from the stack settings.

Pure code, no Pulumi resources. It builds:

- `JobSpec` (what these functions read of the job settings in core.settings.job) and `check_job()`, which
  returns every problem of a job against the cluster and the NeMo-RL release, one line per problem naming
  its config key;
- `Recipe`, a typed GRPO run (model, config, data, layout, steps, checkpointing, logging), the two built-in
  recipes that reproduce the seeds, and `resolve_recipe()` applying `jobOverrides`;
- the job itself: `render_args()` (entry script, `--config`, Hydra overrides), `entrypoint()` (the shell
  command the RayJob runs), `runtime_env()` (non-secret environment only) and `job_metadata()`;
- the GSM8K preparation step: `gsm8k_prep_command()` (how the entrypoint runs the program that
  `workloads/job_scripts.py` ships as a ConfigMap mounted at `SCRIPTS_DIR` on the Ray head).

Preemption recovery relies on NeMo-RL resuming from the newest `step_N` in `checkpointing.checkpoint_dir`
(FACTS.md §7): the checkpoint directory is `<mount>/checkpoints/<run name>` on Lustre, and the run name is
stable across resubmissions (default `<recipe>-<stack>-<fingerprint of what makes a checkpoint incompatible>`,
`default_run_name()`), so resubmitting the same recipe resumes and a changed model or layout starts fresh.

Secrets never appear here: HF_TOKEN and WANDB_API_KEY reach the driver and the workers through the Ray pods'
environment (Kubernetes Secret, `secretKeyRef`); a Ray runtime env is shown in the Ray dashboard.

GSM8K without patching NeMo-RL
------------------------------
The GKE tutorial trains Gemma 3 on `openai/gsm8k` by pulling NeMo-RL's main branch on the head pod and
`sed`-patching two source files, because NeMo-RL v0.4.0/v0.5.0 cannot pass the dataset's config name
(`main`) to `load_dataset`. This project leaves the image untouched instead:

1. A preparation step runs in the same image, before training, from the same RayJob entrypoint:
   `pod_programs/prepare_gsm8k.py`, mounted on the head from a ConfigMap so the entrypoint runs it in one short
   line. It calls `datasets.load_dataset("openai/gsm8k", "main")` (HF_HOME on Lustre, so the download
   happens once) and writes `<mount>/datasets/gsm8k/train.jsonl` and `test.jsonl`, one
   `{"question", "answer"}` object per line, each file written to a temporary name and renamed, then a
   `_SUCCESS` marker. With the marker present it does nothing, so every resubmission after a preemption skips
   it; the training starts only after it succeeded (`set -e`).
2. Training uses NeMo-RL's generic `ResponseDataset` on those files:
   `data.dataset_name=ResponseDataset +data.train_data_path=... +data.val_data_path=... +data.input_key=question
   +data.output_key=answer +data.train_split=train +data.val_split=train`. In v0.4.0/v0.5.0 `ResponseDataset`
   takes exactly `train_data_path, val_data_path, input_key, output_key, train_split, val_split`, and
   `load_dataset_from_path` loads a `.jsonl` path with `load_dataset("json", data_files=path)`, which puts
   every row in a split named `train`; hence both split keys are `train` (the validation file is a file of
   its own). The keys are absent from the base configs, hence the `+`.
3. `answer` holds GSM8K's final answer (the number after `####`, thousands separators removed), not the
   worked solution: NeMo-RL's math environment wraps the ground truth in `\\boxed{...}` and compares it with
   the model's boxed answer, so a whole solution as ground truth would score almost every response as wrong.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import pod_programs
from core import catalog, prefetch, shell
from core.catalog import BASE_VAL_PERIOD, NEMO_RL_RELEASES, NEMO_RL_WORKDIR, NemoRlRelease
from core.keys import key as _key
from core.lustre_paths import hf_home, mount_root

DEFAULT_RECIPE = "gemma3-27b-gsm8k"


class JobSpec(Protocol):
    """What the recipe functions read of the job settings (core.settings.job.JobSpec)."""

    enabled: bool
    recipe: Optional[str]
    overrides: dict[str, Any]
    run_name: Optional[str]


# --- recipes ------------------------------------------------------------------------------------------
class Recipe(BaseModel):
    """One GRPO run. Optional fields left None keep the base config's value (they are not rendered)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Recipe name (jobRecipe).")
    model_name: str = Field(description="policy.model_name (Hugging Face id).")
    model_revision: Optional[str] = Field(None, description=(
        "Hugging Face revision of the model the weights prefetch downloads and the job trains from: a 40-hex "
        "commit id or a version tag (branches move and are refused). Built-in recipes pin their model's "
        "commit (core.catalog.MODELS)."))
    config_path: str = Field(description="NeMo-RL base config, relative to /opt/nemo-rl (--config).")
    train_backend: Literal["megatron", "dtensor"] = Field(description="Training backend the base config enables.")
    converter_type: Optional[str] = Field(None, description="policy.megatron_cfg.converter_type (Megatron only).")
    dataset: Literal["DeepScaler", "gsm8k"] = Field(description=(
        "DeepScaler (NeMo-RL built-in) or gsm8k (prepared as JSONL on Lustre, read by ResponseDataset)."))
    num_nodes: int = Field(ge=1, description="cluster.num_nodes: GPU nodes the run uses.")
    gpus_per_node: int = Field(ge=1, description="cluster.gpus_per_node.")
    max_num_steps: int = Field(ge=1, description="grpo.max_num_steps.")
    num_prompts_per_step: int = Field(ge=1, description="grpo.num_prompts_per_step.")
    num_generations_per_prompt: int = Field(ge=1, description="grpo.num_generations_per_prompt.")
    train_global_batch_size: Optional[int] = Field(None, ge=1, description="policy.train_global_batch_size.")
    colocated_generation: bool = Field(True, description=(
        "policy.generation.colocated.enabled: vLLM shares the training GPUs (false: dedicated nodes)."))
    generation_nodes: Optional[int] = Field(None, ge=1, description=(
        "policy.generation.colocated.resources.num_nodes: nodes dedicated to vLLM (non-colocated only)."))
    generation_gpus_per_node: Optional[int] = Field(None, ge=1, description=(
        "policy.generation.colocated.resources.gpus_per_node (non-colocated only)."))
    vllm_tensor_parallel_size: Optional[int] = Field(None, ge=1,
                                                     description="policy.generation.vllm_cfg.tensor_parallel_size.")
    vllm_gpu_memory_utilization: Optional[float] = Field(None, gt=0, le=1, description=(
        "policy.generation.vllm_cfg.gpu_memory_utilization."))
    dtensor_tensor_parallel_size: Optional[int] = Field(None, ge=1, description=(
        "policy.dtensor_cfg.tensor_parallel_size (DTensor only)."))
    val_period: Optional[int] = Field(None, ge=0, description=(
        "grpo.val_period: steps between validations (0: none); null keeps the base config's (catalog "
        "BASE_VAL_PERIOD)."))
    step_budget_seconds: int = Field(ge=1, description=(
        "Upper bound of one GRPO step (rollouts, training, checkpoint) for the RayJob's deadline: "
        "activeDeadlineSeconds = startup allowance + max_num_steps x step_budget_seconds (jobDeadlineSeconds "
        "overrides the result)."))
    save_period: int = Field(ge=1, description="checkpointing.save_period: steps between checkpoints.")
    keep_top_k: int = Field(ge=1, description="checkpointing.keep_top_k: checkpoints kept.")
    metric_name: Optional[str] = Field(None, description=(
        "checkpointing.metric_name (val:<key> or train:<key>); null keeps the newest keep_top_k checkpoints, "
        "which is what resuming after a preemption needs."))
    higher_is_better: Optional[bool] = Field(None, description=(
        "checkpointing.higher_is_better, with metric_name: whether a higher value of the metric is better (for "
        "keep_top_k pruning and the exported best checkpoint); null takes the known direction of val:accuracy, "
        "train:reward (higher) or train:loss (lower), and must be set for any other metric."))
    wandb_enabled: bool = Field(False, description="logger.wandb_enabled (needs the wandbApiKey secret).")
    wandb_name: Optional[str] = Field(None, description="logger.wandb.name; default: the run name.")
    tensorboard_enabled: Optional[bool] = Field(None, description="logger.tensorboard_enabled.")
    save_optimizer: bool = Field(True, description=(
        "Checkpoints include the optimizer state (policy/optimizer/); used for checkpoint sizing."))
    precision: Literal["bfloat16"] = Field("bfloat16", description="policy.precision of the base configs (sizing).")


# Source: the codelab's run_nemo_rl.sh (seed 000) on NeMo-RL v0.4.0, with one deliberate difference: the codelab
# saves every 2 steps while grpo_math_70B_megatron.yaml inherits grpo.val_period 10 (from grpo_math_1B_megatron.yaml
# in v0.4.0, v0.5.0 and v0.7.0; catalog BASE_VAL_PERIOD), so 8 of its 10 checkpoints are written at steps without
# validation, which on the Megatron backend hits NVIDIA-NeMo/RL #1137 (CUDA OOM after such a save). Here the run
# saves every 10 steps, at the validation steps 10 and 20 (see megatron_save_without_validation()).
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

# Source: the GKE tutorial's gemma3-27b-gsm8k.sh (seed 004) on NeMo-RL v0.5.0. The seed leaves checkpointing
# to the base config; its output shows `step_10`, i.e. the base save_period 10 (keep_top_k 3 there too).
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
)

RECIPES: dict[str, Recipe] = {r.name: r for r in (_QWEN_72B, _GEMMA3_27B)}

# Recipe fields a jobOverrides entry may set (the name selects the recipe: jobRecipe).
OVERRIDABLE = tuple(f for f in Recipe.model_fields if f != "name")

# Releases whose GRPO configs keep the flat `data.dataset_name` / `data.train_data_path` layout the recipes
# render: the release records' `flat_data` (core/catalog/nemo_rl.py, NeMo-RL PR #1649).
FLAT_DATA_RELEASES = catalog.FLAT_DATA_RELEASES


class RecipeError(ValueError):
    """The job settings do not resolve to a runnable recipe; one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def recipe_name(job: JobSpec) -> str:
    return job.recipe or DEFAULT_RECIPE


def _origin(job: JobSpec, *fields: str) -> str:
    """The config key a problem about these recipe fields is reported against: the first one overridden."""
    for field in fields:
        if field in job.overrides:
            return _key(f"jobOverrides.{field}")
    return _key("jobRecipe")


def _suggest(word: str, known) -> str:
    m = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {m[0]!r}?" if m else ""


def _apply_overrides(job: JobSpec) -> tuple[Optional[Recipe], list[str]]:
    name = recipe_name(job)
    base = RECIPES.get(name)
    if base is None:
        return None, [f"{_key('jobRecipe')}: unknown recipe {name!r}; valid: {', '.join(sorted(RECIPES))}"
                      f"{_suggest(name, RECIPES)}"]
    problems = []
    values = base.model_dump()
    for field, value in sorted(job.overrides.items()):
        if field == "name":
            problems.append(f"{_key('jobOverrides.name')}: the recipe is chosen with {_key('jobRecipe')}, "
                            "not overridden")
        elif field not in Recipe.model_fields:
            problems.append(f"{_key(f'jobOverrides.{field}')}: is not a recipe field{_suggest(field, OVERRIDABLE)}"
                            f"; fields: {', '.join(OVERRIDABLE)}")
        elif isinstance(value, str) and shell.unsafe_characters(value):
            # The value reaches NeMo-RL through KubeRay's bash, the image's Ray CLI (list2cmdline) and /bin/sh
            # (core/shell.py); tests/test_entrypoint_shells.py runs that chain.
            chars = " ".join(shell.unsafe_characters(value))
            problems.append(f"{_key(f'jobOverrides.{field}')}: {value!r} contains {chars}, which the job's shells "
                            "(KubeRay's bash, the image's ray job submit, /bin/sh) would change or run; "
                            "remove $ ` \\ \" and ' from the value")
        else:
            values[field] = value
    if "model_name" in job.overrides and "model_revision" not in job.overrides:
        # The base recipe's pin belongs to its own model: another model takes the catalog's pin or none.
        values["model_revision"] = prefetch.default_revision(values["model_name"])
    if problems:
        return None, problems
    try:
        return Recipe.model_validate(values), []
    except ValidationError as e:
        out = []
        for err in e.errors():
            field = str(err["loc"][0]) if err["loc"] else "name"
            out.append(f"{_origin(job, field)}: {field}: {err['msg']} (got {err.get('input')!r})")
        return None, out


def _consistency(r: Recipe) -> list[tuple[tuple[str, ...], str]]:
    """Contradictions inside one recipe, as (fields involved, message)."""
    p: list[tuple[tuple[str, ...], str]] = []
    if r.converter_type is not None and r.train_backend != "megatron":
        p.append((("converter_type", "train_backend"),
                  f"converter_type applies to the Megatron backend, not {r.train_backend}"))
    if r.dtensor_tensor_parallel_size is not None and r.train_backend != "dtensor":
        p.append((("dtensor_tensor_parallel_size", "train_backend"),
                  f"dtensor_tensor_parallel_size applies to the DTensor backend, not {r.train_backend}"))
    train_gpus = r.num_nodes * r.gpus_per_node
    if r.colocated_generation:
        for f in ("generation_nodes", "generation_gpus_per_node"):
            if getattr(r, f) is not None:
                p.append(((f, "colocated_generation"),
                          f"{f} only applies to non-colocated generation (colocated_generation is true)"))
    else:
        if r.generation_nodes is None:
            p.append((("generation_nodes", "colocated_generation"),
                      "non-colocated generation needs generation_nodes (nodes dedicated to vLLM)"))
        elif r.generation_nodes >= r.num_nodes:
            p.append((("generation_nodes", "num_nodes", "colocated_generation"),
                      f"non-colocated generation on {r.generation_nodes} of num_nodes={r.num_nodes} node(s) leaves "
                      "no node for training; lower generation_nodes or raise num_nodes"))
            train_gpus = 0
        else:
            train_gpus = (r.num_nodes - r.generation_nodes) * r.gpus_per_node
        if r.generation_gpus_per_node is not None and r.generation_gpus_per_node != r.gpus_per_node:
            p.append((("generation_gpus_per_node", "gpus_per_node"),
                      f"generation_gpus_per_node={r.generation_gpus_per_node} differs from gpus_per_node="
                      f"{r.gpus_per_node}; dedicated generation nodes use all their GPUs"))
    tp = r.vllm_tensor_parallel_size
    if tp is not None and r.gpus_per_node % tp:
        p.append((("vllm_tensor_parallel_size", "gpus_per_node"),
                  f"vLLM tensor parallelism {tp} does not divide the {r.gpus_per_node} GPUs of a node"))
    dtp = r.dtensor_tensor_parallel_size
    if dtp is not None and train_gpus and train_gpus % dtp:
        p.append((("dtensor_tensor_parallel_size", "num_nodes", "generation_nodes"),
                  f"DTensor tensor parallelism {dtp} does not divide the {train_gpus} training GPUs"))
    if not r.save_optimizer:
        p.append((("save_optimizer",), "the rendered run always checkpoints the optimizer state "
                                       "(policy/optimizer/), which resuming after a preemption needs"))
    p.extend(_metric_problems(r))
    if r.model_revision is not None and prefetch.revision_problem(r.model_revision):
        p.append((("model_revision",), f"model_revision {prefetch.revision_problem(r.model_revision)}"))
    return p


def _metric_problems(r: Recipe) -> list[tuple[tuple[str, ...], str]]:
    """metric_name in NeMo-RL's form and a ranking direction that matches it (catalog METRIC_HIGHER_IS_BETTER)."""
    if r.metric_name is None:
        if r.higher_is_better is not None:
            return [(("higher_is_better", "metric_name"),
                     "higher_is_better only applies when metric_name ranks the checkpoints (metric_name is null)")]
        return []
    if not r.metric_name.startswith(catalog.METRIC_PREFIXES) or r.metric_name.endswith(":"):
        return [(("metric_name",), f"metric_name {r.metric_name!r} must be 'val:<key>' or 'train:<key>' (NeMo-RL "
                                   "asserts it at the first checkpoint save), e.g. 'val:accuracy'")]
    known = catalog.METRIC_HIGHER_IS_BETTER.get(r.metric_name)
    if r.higher_is_better is None and known is None:
        return [(("higher_is_better", "metric_name"),
                 f"metric_name {r.metric_name!r} has no known direction; set higher_is_better (true when a higher "
                 "value is better), or NeMo-RL's keep_top_k and the exported best checkpoint may keep the worst")]
    if r.higher_is_better is not None and known is not None and r.higher_is_better != known:
        return [(("higher_is_better", "metric_name"),
                 f"higher_is_better {str(r.higher_is_better).lower()} contradicts {r.metric_name!r}, for which "
                 f"{'higher' if known else 'lower'} is better; remove higher_is_better or set it to "
                 f"{str(known).lower()}")]
    return []


def higher_is_better(r: Recipe) -> bool:
    """The direction the run ranks checkpoints in: the recipe's, else the metric's known one (true without a
    metric, NeMo-RL's base default)."""
    if r.higher_is_better is not None:
        return r.higher_is_better
    return catalog.METRIC_HIGHER_IS_BETTER.get(r.metric_name or "", True)


def _consistency_problems(r: Recipe, job: JobSpec) -> list[str]:
    return [f"{_origin(job, *fields)}: {msg}" for fields, msg in _consistency(r)]


def _release_problems(r: Recipe, job: JobSpec, release: NemoRlRelease) -> list[str]:
    p = []
    if r.config_path not in release.configs:
        p.append(f"{_origin(job, 'config_path')}: config {r.config_path!r} of recipe {r.name!r} is not shipped by "
                 f"NeMo-RL {release.tag} ({_key('nemoRlRelease')}); releases with it: "
                 f"{', '.join(_releases_with(r.config_path)) or 'none known'}")
    if release.tag not in FLAT_DATA_RELEASES:
        p.append(f"{_key('nemoRlRelease')}: NeMo-RL {release.tag} keeps datasets under data.train/data.validation; "
                 f"the recipes render the data.* layout of {', '.join(sorted(FLAT_DATA_RELEASES))}; use one of "
                 f"those or set {_key('jobEnabled')} to false")
    return p


def _releases_with(config_path: str) -> list[str]:
    return sorted(t for t, rel in NEMO_RL_RELEASES.items() if config_path in rel.configs)


_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def _run_name_problem(name: str) -> Optional[str]:
    if _RUN_NAME.fullmatch(name) and ".." not in name:   # fullmatch: `$` alone accepts a final "\n"
        return None
    return (f"{_key('runName')}: {name!r} is not usable as a directory name under <lustreMountPath>/checkpoints "
            "(1-100 letters, digits, '.', '_' or '-', starting with a letter or digit, no '..')")


# What makes a checkpoint the wrong one to resume from, besides the NeMo-RL release that wrote it (checkpoint
# layout, Megatron-Core and PyTorch DCP versions change between releases, and NeMo-RL promises no compatibility
# across them):
# - the weights and their architecture: model_name, config_path (which also fixes the Megatron parallel layout and
#   the optimizer), converter_type, precision;
# - the checkpoint format: train_backend (Megatron torch_dist vs DTensor DCP under policy/weights);
# - how the weights and the distributed optimizer state are sharded: the training world size (num_nodes,
#   gpus_per_node, minus the nodes given to non-colocated generation) and dtensor_tensor_parallel_size;
# - dataset: train_dataloader.pt holds the position in this dataset.
# Everything else resumes: steps, periods, keep_top_k, logging, batch shape and the vLLM settings (generation
# weights are refreshed from the policy at every refit).
CHECKPOINT_IDENTITY = ("model_name", "config_path", "converter_type", "precision", "train_backend", "num_nodes",
                       "gpus_per_node", "colocated_generation", "generation_nodes", "generation_gpus_per_node",
                       "dtensor_tensor_parallel_size", "dataset")


def checkpoint_fingerprint(recipe: Recipe, release: NemoRlRelease) -> str:
    """8 hex digits naming what the recipe's checkpoints are compatible with (CHECKPOINT_IDENTITY + release)."""
    identity = {"nemo_rl": release.tag, **{f: getattr(recipe, f) for f in CHECKPOINT_IDENTITY}}
    if not recipe.colocated_generation:
        # Rendered as gpus_per_node when unset (hydra_overrides), so both spellings are one layout.
        identity["generation_gpus_per_node"] = recipe.generation_gpus_per_node or recipe.gpus_per_node
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]


def default_run_name(job: JobSpec, stack_name: str, release: NemoRlRelease) -> str:
    """The run name: `runName`, else `<recipe>-<stack>-<fingerprint>`.

    NeMo-RL resumes from the newest `step_N` under `<mount>/checkpoints/<run name>`. The fingerprint changes with
    what makes those checkpoints incompatible (CHECKPOINT_IDENTITY, the release), so resubmitting the same recipe
    (or one with more steps, other periods, other logging) resumes, and a changed model, layout, backend or
    release starts fresh in a directory of its own. An explicit `runName` is used as given."""
    if job.run_name is not None:
        return job.run_name
    recipe, _ = _apply_overrides(job)
    base = f"{recipe_name(job)}-{stack_name}"
    slug = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", base)).lstrip("._-")
    if recipe is None:
        return slug[:100] or "run"
    fingerprint = checkpoint_fingerprint(recipe, release)
    return f"{slug[:91]}-{fingerprint}" if slug else f"run-{fingerprint}"


def effective_val_period(recipe: Recipe, release: NemoRlRelease) -> Optional[int]:
    """grpo.val_period the run validates at: the recipe's, else its base config's (None if not known)."""
    if recipe.val_period is not None:
        return recipe.val_period
    return BASE_VAL_PERIOD.get((release.tag, recipe.config_path))


def megatron_save_without_validation(recipe: Recipe, release: NemoRlRelease) -> list[int]:
    """Steps at which a Megatron run saves a checkpoint without having validated first (empty when safe).

    NeMo-RL's GRPO loop (nemo_rl/algorithms/grpo.py `grpo_train` at v0.4.0 and v0.5.0) validates when
    `val_period > 0 and (step + 1) % val_period == 0` and saves when `is_last_step or (step + 1) % save_period ==
    0` (1-based steps here; the last step is max_num_steps, or the end of the data, which is not known here).
    Megatron runs that save at a step without validation hit NVIDIA-NeMo/RL #1137 (CUDA OOM at the step after
    the next validated save; reported 2025-09-16 against main between v0.3.1 and v0.4.0, still open, no fix in
    NeMo-RL's history through 2026-08) and, before v0.4.0, #834 (segfault after such a save; fixed by PR #844,
    in v0.4.0 and later)."""
    val_period = effective_val_period(recipe, release)
    if recipe.train_backend != "megatron" or val_period is None:
        return []
    saves = set(range(recipe.save_period, recipe.max_num_steps + 1, recipe.save_period)) | {recipe.max_num_steps}
    return sorted(s for s in saves if val_period == 0 or s % val_period)


def job_warnings(job: JobSpec, release: NemoRlRelease) -> list[str]:
    """Runnable but risky job settings, one line each naming the config key (shown by preview, not refused)."""
    if not job.enabled:
        return []
    try:
        recipe = resolve_recipe(job, release)
    except RecipeError:
        return []   # reported as problems by check_job()
    steps = megatron_save_without_validation(recipe, release)
    if not steps:
        return []
    val_period = effective_val_period(recipe, release)
    shown = ", ".join(str(s) for s in steps[:6]) + (", ..." if len(steps) > 6 else "")
    return [f"{_origin(job, 'save_period', 'val_period', 'max_num_steps')}: the Megatron run saves checkpoints "
            f"at steps without validation ({shown}; save_period {recipe.save_period}, val_period "
            f"{val_period}, max_num_steps {recipe.max_num_steps}); such runs can run out of GPU memory "
            f"after the save (NVIDIA-NeMo/RL #1137, reported before v0.4.0, open; #834, a segfault, fixed in "
            f"v0.4.0); make save_period and max_num_steps multiples of val_period"]


def resolve(job: JobSpec, release: NemoRlRelease, stack_name: str) -> tuple[Optional[Recipe], list[str]]:
    """The recipe the job runs (built-in recipe + jobOverrides) and every problem of the job settings by
    themselves: unknown fields, contradictions, the run name and, for an enabled job, what `release` lacks.
    The recipe is None only when it cannot be built at all (unknown recipe or field, invalid value); with other
    problems it is returned too, so the cluster-fit rules can report theirs in the same run. The settings
    resolve it once per run (core.settings) and refuse to go on while any problem remains."""
    recipe, problems = _apply_overrides(job)
    run_problem = _run_name_problem(default_run_name(job, stack_name, release))
    if run_problem:
        problems.append(run_problem)
    if recipe is not None:
        problems.extend(_consistency_problems(recipe, job))
        if job.enabled:
            problems.extend(_release_problems(recipe, job, release))
    return recipe, problems


def fit_problems(recipe: Recipe, job: JobSpec, *, worker_replicas: int, gpus_per_node: int) -> list[str]:
    """What the recipe asks of the cluster that the cluster does not have."""
    problems = []
    if recipe.num_nodes > worker_replicas:
        problems.append(f"{_origin(job, 'num_nodes')}: {recipe.num_nodes} nodes (recipe {recipe.name!r}) but only "
                        f"{worker_replicas} GPU workers ({_key('workerReplicas')})")
    if recipe.gpus_per_node != gpus_per_node:
        problems.append(f"{_origin(job, 'gpus_per_node')}: {recipe.gpus_per_node} GPUs per node but the GPU type "
                        f"has {gpus_per_node} ({_key('gpuType')})")
    return problems


def job_deadline_seconds(recipe: Recipe) -> int:
    """The RayJob's activeDeadlineSeconds the recipe asks for: startup allowance + max_num_steps x step budget."""
    return int(catalog.NOMINAL_JOB_STARTUP_SECONDS.seconds) + recipe.max_num_steps * recipe.step_budget_seconds


def deadline_problems(recipe: Recipe, job: JobSpec) -> list[str]:
    """The recipe's deadline must fit KubeRay's int32 activeDeadlineSeconds (catalog K8S_INT32_MAX)."""
    seconds = job_deadline_seconds(recipe)
    if seconds <= catalog.K8S_INT32_MAX:
        return []
    return [f"{_origin(job, 'max_num_steps', 'step_budget_seconds')}: the RayJob deadline of {seconds} s "
            f"(startup allowance + {recipe.max_num_steps} steps x {recipe.step_budget_seconds} s) exceeds KubeRay's "
            f"int32 activeDeadlineSeconds ({catalog.K8S_INT32_MAX}); lower them or set {_key('jobDeadlineSeconds')} "
            "(0: no deadline)"]


def check_job(job: JobSpec, *, release: NemoRlRelease, worker_replicas: int, gpus_per_node: int,
              stack_name: str) -> list[str]:
    """Every problem of the job settings, one line each, naming the config key. Empty when runnable.

    A disabled job (jobEnabled false) is only checked for its own shape, not against the cluster or release.
    """
    recipe, problems = resolve(job, release, stack_name)
    if recipe is not None and job.enabled:
        problems.extend(fit_problems(recipe, job, worker_replicas=worker_replicas, gpus_per_node=gpus_per_node))
    return problems


def resolve_recipe(job: JobSpec, release: NemoRlRelease) -> Recipe:
    """The recipe the job runs on `release`, or RecipeError with every problem (for callers outside the
    settings, which have already resolved it: tests and tools)."""
    recipe, problems = _apply_overrides(job)
    if recipe is not None:
        problems.extend(_consistency_problems(recipe, job))
        problems.extend(_release_problems(recipe, job, release))
    if problems:
        raise RecipeError(problems)
    return recipe


# --- rendering ---------------------------------------------------------------------------------------------
GSM8K_DIR = "datasets/gsm8k"          # under the Lustre mount
CHECKPOINTS_DIR = "checkpoints"       # under the Lustre mount
LOGS_DIR = "logs"                     # under the Lustre mount

# Override keys the GRPO base configs of v0.4.0/v0.5.0 do not define: their `data` section names a built-in
# dataset and lists ResponseDataset's keys only in a comment (examples/configs/grpo_math_1B.yaml). Hydra refuses
# to set a missing key without `+` and refuses `+` on a key that exists, so this set must be exact.
KEYS_ABSENT_FROM_BASE = frozenset({
    "data.train_data_path", "data.val_data_path", "data.input_key", "data.output_key",
    "data.train_split", "data.val_split",
})


def checkpoint_dir(mount_path: str, run_name: str) -> str:
    return f"{mount_root(mount_path)}/{CHECKPOINTS_DIR}/{run_name}"


def gsm8k_paths(mount_path: str) -> dict[str, str]:
    d = f"{mount_root(mount_path)}/{GSM8K_DIR}"
    return {"dir": d, "train": f"{d}/train.jsonl", "validation": f"{d}/test.jsonl", "marker": f"{d}/_SUCCESS"}


def hydra_overrides(recipe: Recipe, *, mount_path: str, run_name: str,
                    model_path: Optional[str] = None) -> dict[str, Any]:
    """Config key -> value, in a stable (sorted) order; None renders as null. `model_path`: the local
    directory of the prefetched, pinned model (NeMo-RL accepts a path as policy.model_name)."""
    if _run_name_problem(run_name):
        raise ValueError(_run_name_problem(run_name))
    o: dict[str, Any] = {
        "policy.model_name": model_path or recipe.model_name,
        # The tokenizer and chat template come from the same snapshot (core.catalog.NEMO_RL_HUB_KEYS): the Gemma 3
        # recipes set this key literally, so overriding policy.model_name alone would leave it on the Hub at main.
        "policy.tokenizer.name": model_path or recipe.model_name,
        "cluster.num_nodes": recipe.num_nodes,
        "cluster.gpus_per_node": recipe.gpus_per_node,
        "grpo.max_num_steps": recipe.max_num_steps,
        "grpo.num_prompts_per_step": recipe.num_prompts_per_step,
        "grpo.num_generations_per_prompt": recipe.num_generations_per_prompt,
        "checkpointing.enabled": True,
        "checkpointing.checkpoint_dir": checkpoint_dir(mount_path, run_name),
        "checkpointing.save_period": recipe.save_period,
        "checkpointing.keep_top_k": recipe.keep_top_k,
        "checkpointing.metric_name": recipe.metric_name,
        "logger.log_dir": f"{mount_root(mount_path)}/{LOGS_DIR}/{run_name}",
        "logger.wandb_enabled": recipe.wandb_enabled,
        "logger.wandb.name": recipe.wandb_name or run_name,
    }
    optional = {
        "policy.megatron_cfg.converter_type": recipe.converter_type,
        "policy.train_global_batch_size": recipe.train_global_batch_size,
        "policy.dtensor_cfg.tensor_parallel_size": recipe.dtensor_tensor_parallel_size,
        "policy.generation.vllm_cfg.tensor_parallel_size": recipe.vllm_tensor_parallel_size,
        "policy.generation.vllm_cfg.gpu_memory_utilization": recipe.vllm_gpu_memory_utilization,
        "logger.tensorboard_enabled": recipe.tensorboard_enabled,
        "grpo.val_period": recipe.val_period,
    }
    o.update({k: v for k, v in optional.items() if v is not None})
    if recipe.metric_name is not None:
        # The same direction the export ranks the best checkpoint by (core.export export_argv).
        o["checkpointing.higher_is_better"] = higher_is_better(recipe)
    if not recipe.colocated_generation:
        o["policy.generation.colocated.enabled"] = False
        o["policy.generation.colocated.resources.num_nodes"] = recipe.generation_nodes
        o["policy.generation.colocated.resources.gpus_per_node"] = (recipe.generation_gpus_per_node
                                                                   or recipe.gpus_per_node)
    if recipe.dataset == "DeepScaler":
        o["data.dataset_name"] = "DeepScaler"
    else:
        paths = gsm8k_paths(mount_path)
        o.update({
            "data.dataset_name": "ResponseDataset",
            "data.train_data_path": paths["train"],
            "data.val_data_path": paths["validation"],
            "data.input_key": "question",
            "data.output_key": "answer",
            # A local .jsonl loads as a single split named "train" (see the module docstring).
            "data.train_split": "train",
            "data.val_split": "train",
        })
    return dict(sorted(o.items()))


# Strings Hydra's override grammar reads back unchanged without quotes (hydra/grammar/OverrideLexer.g4 of Hydra
# 1.1-1.3, which NeMo-RL's parse_hydra_overrides uses): a run of ID tokens (letters, digits, `_`, `-`) and the
# unquoted characters `/ . @ + -`, joined as written. The first character is a letter, `_` or `/`, so no word
# starts like a number or a sign. Not bare: `:` `=` `,` spaces, quotes, brackets and parentheses (lists, dicts,
# sweeps, functions), `$` (interpolation), `\` (escapes), `~`, `*`, `?`, `|`, `%`, non-ASCII.
_BARE_STRING = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+-]*")   # fullmatch: `$` would accept a final "\n"
# Single tokens Hydra converts instead of keeping a string: NULL, BOOL and the FLOAT spellings inf / nan (any
# case). Anything Python reads as a number is quoted too (float() accepts "infinity"), whatever Hydra does.
_HYDRA_KEYWORDS = frozenset({"null", "true", "false", "inf", "nan"})


def _is_bare_string(value: str) -> bool:
    if not _BARE_STRING.fullmatch(value) or value.lower() in _HYDRA_KEYWORDS:
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar that Hydra reads back as exactly `value`, with its type.

    Strings stay strings: bare when the grammar keeps them unchanged (`ResponseDataset`, `/lustre/x`,
    `google/gemma-3-27b-it`), so the entrypoint stays readable; quoted otherwise (`'123'`, `'null'`,
    `'two words'`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if "${" in value:
            raise ValueError(f"{value!r}: '${{' would be resolved as an OmegaConf interpolation")
        if _is_bare_string(value):
            return value
        # Hydra quoted strings: \' is a quote; backslashes are escaped only where they precede a quote or
        # the closing quote; all other backslashes are literal.
        out, i = [], 0
        while i < len(value):
            j = i
            while j < len(value) and value[j] == "\\":
                j += 1
            if j > i:
                run = j - i
                out.append("\\" * (2 * run if j == len(value) or value[j] == "'" else run))
                i = j
                continue
            out.append("\\'" if value[i] == "'" else value[i])
            i += 1
        return "'" + "".join(out) + "'"
    raise TypeError(f"cannot render {type(value).__name__} as a Hydra value")


def render_overrides(recipe: Recipe, *, mount_path: str, run_name: str,
                     model_path: Optional[str] = None) -> list[str]:
    """Hydra overrides as command-line words, `+` exactly on the keys the base config lacks."""
    return [("+" if k in KEYS_ABSENT_FROM_BASE else "") + f"{k}={hydra_value(v)}"
            for k, v in hydra_overrides(recipe, mount_path=mount_path, run_name=run_name,
                                        model_path=model_path).items()]


def render_args(recipe: Recipe, release: NemoRlRelease, *, mount_path: str, run_name: str,
                model_path: Optional[str] = None) -> list[str]:
    """The training program's argv after `python`: entry script, --config, Hydra overrides."""
    return [release.grpo_entry, "--config", recipe.config_path,
            *render_overrides(recipe, mount_path=mount_path, run_name=run_name, model_path=model_path)]


@dataclass(frozen=True)
class ImagePaths:
    """Where the image keeps NeMo-RL and where the head mounts the job's programs. Fixed in a real pod; tests
    run the entrypoint against directories of their own, as an ordinary user."""

    workdir: str = NEMO_RL_WORKDIR
    scripts_dir: str = "/etc/nemo-rl-gke"


IMAGE_PATHS = ImagePaths()


def job_script(recipe: Recipe, release: NemoRlRelease, *, mount_path: str, run_name: str,
               paths: ImagePaths = IMAGE_PATHS, gate: Optional[list[str]] = None,
               model_path: Optional[str] = None, before: tuple[list[str], ...] = (),
               after: tuple[list[str], ...] = (), prefetch_marker: Optional[str] = None) -> str:
    """The script `entrypoint()` runs with `sh -c`, one command per line (see entrypoint()).

    `model_path`: the prefetched, pinned model directory (policy.model_name); `before`: commands run before
    training (own-cluster mode waits there for the weights prefetch's marker); `after`: commands run once
    training succeeded (the checkpoint export). With nothing after, NeMo-RL is exec'd; otherwise `set -e` runs
    the export only after a successful training. A Megatron run first removes an interrupted weight conversion
    (megatron_guard_command)."""
    script = [
        "set -eu",
        shlex.join(["mkdir", "-p", checkpoint_dir(mount_path, run_name)]),
        shlex.join(["cd", paths.workdir]),
    ]
    if gate:
        script.append(shlex.join(gate_command(gate, paths.scripts_dir)))
    script.extend(shlex.join(cmd) for cmd in before)
    if recipe.dataset == "gsm8k":
        script.append(shlex.join(gsm8k_prep_command(mount_path, paths.scripts_dir, prefetch_marker)))
    if recipe.train_backend == "megatron":
        script.append(shlex.join(megatron_guard_command(model_path or recipe.model_name, paths.scripts_dir)))
    train = shlex.join(["uv", "run", "python", *render_args(recipe, release, mount_path=mount_path,
                                                             run_name=run_name, model_path=model_path)])
    script.append(train if after else "exec " + train)
    script.extend(shlex.join(cmd) for cmd in after)
    return "\n".join(script)


def entrypoint(recipe: Recipe, release: NemoRlRelease, *, mount_path: str, run_name: str,
               paths: ImagePaths = IMAGE_PATHS, gate: Optional[list[str]] = None,
               model_path: Optional[str] = None, before: tuple[list[str], ...] = (),
               after: tuple[list[str], ...] = (), prefetch_marker: Optional[str] = None) -> str:
    """The shell command the RayJob runs: `sh -c '<script>'`, one simple command.

    KubeRay's submitter pastes the entrypoint into a bash command line after `ray job submit --`, so a
    top-level `;` or `&&` would end the submit command instead of running in the job; the image's Ray CLI
    re-joins the words with `subprocess.list2cmdline` and the job supervisor runs that with /bin/sh, which
    expands `$` and backticks and eats backslashes inside list2cmdline's double quotes (core/shell.py has the
    chain with its sources). Settings refuse such characters in every input the script carries (overrides,
    run name, mount path); tests/test_entrypoint_shells.py runs the chain with real shells. The script creates
    the checkpoint directory on Lustre, runs the readiness gate when `gate` gives its options (core.gate: under
    `set -e` a failed gate ends the job before training), prepares GSM8K when the recipe needs it (the programs
    are files under SCRIPTS_DIR, not inlined), then runs NeMo-RL from its working directory. One command per
    line, and with bare Hydra strings the built-in recipes need no quote inside the script, so `pulumi preview`
    shows every override as plain `key=value`.
    """
    return shlex.join(["sh", "-c", job_script(recipe, release, mount_path=mount_path, run_name=run_name,
                                              paths=paths, gate=gate, model_path=model_path, before=before,
                                              after=after, prefetch_marker=prefetch_marker)])


# The runtime-env variable that carries the gateRerun token: part of the RayJob's spec in both modes, so a new
# value replaces the RayJob (spec.metadata, which would carry it too, is never rendered with a clusterSelector:
# workloads/manifests/rayjob.py).
GATE_RERUN_ENV = "NEMO_RL_GKE_GATE_RERUN"


def runtime_env(recipe: Recipe, *, mount_path: str, gate_rerun: Optional[str] = None) -> dict[str, Any]:
    """The Ray runtime env of the job: non-secret variables only (it is shown in the Ray dashboard)."""
    env = {
        # Model and dataset downloads land on Lustre once for every node (FACTS.md §7).
        "HF_HOME": hf_home(mount_path),
        # NeMo-RL starts its actors with the driver's whole environment as their runtime env; without this
        # Ray rejects it as conflicting with the job's runtime env (the codelab sets it for that reason).
        "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1",
        # Both seeds pin NCCL's and Gloo's bootstrap sockets to the pod's primary interface.
        "NCCL_SOCKET_IFNAME": "eth0",
        "GLOO_SOCKET_IFNAME": "eth0",
    }
    if gate_rerun:
        env[GATE_RERUN_ENV] = gate_rerun
    return {"env_vars": env}


def runtime_env_yaml(recipe: Recipe, *, mount_path: str, gate_rerun: Optional[str] = None) -> str:
    """runtime_env() as the RayJob's runtimeEnvYAML (JSON is YAML; stable key order)."""
    return json.dumps(runtime_env(recipe, mount_path=mount_path, gate_rerun=gate_rerun), sort_keys=True, indent=2)


def job_metadata(recipe: Recipe, *, run_name: str, stack_name: str,
                 gate_rerun: Optional[str] = None) -> dict[str, str]:
    """Ray job metadata (string map, shown by `ray job list`): which recipe and run a submission belongs to.

    `gate_rerun` (setting gateRerun) is listed here too; what makes a new value replace the RayJob (and so run
    the job and its readiness gate again) is the runtime env (GATE_RERUN_ENV), present in both job modes."""
    meta = {"recipe": recipe.name, "run": run_name, "stack": stack_name, "model": recipe.model_name}
    if gate_rerun:
        meta["gateRerun"] = gate_rerun
    return meta


# --- GSM8K preparation --------------------------------------------------------------------------------
# Files the job runs besides NeMo-RL, shipped in the `nemo-rl-scripts` ConfigMap (infra.naming.JOB_SCRIPTS,
# workloads/job_scripts.py) and mounted read-only at SCRIPTS_DIR on the Ray head, where the job's driver (the
# entrypoint) runs. Outside /opt/nemo-rl and every image path, so the mount never hides a file of the image.
SCRIPTS_DIR = IMAGE_PATHS.scripts_dir
GSM8K_SCRIPT = pod_programs.GSM8K_PREP.name


def gsm8k_prep_command(mount_path: str, scripts_dir: str = SCRIPTS_DIR,
                       prefetch_marker: Optional[str] = None) -> list[str]:
    """argv of the preparation step (pod_programs/prepare_gsm8k.py, writing `<mount>/datasets/gsm8k`). Run from
    NEMO_RL_WORKDIR so `uv run` uses NeMo-RL's environment, which has `datasets`; HF_HOME comes from the pod
    and the runtime env. With the weights prefetch, `prefetch_marker` makes it load the dataset at the commit the
    prefetch downloaded (core.catalog.NEMO_RL_HUB_KEYS: every artefact the job loads is the pinned one)."""
    pinned = ["--pinned-by", prefetch_marker] if prefetch_marker else []
    return ["uv", "run", "python", f"{scripts_dir}/{GSM8K_SCRIPT}", gsm8k_paths(mount_path)["dir"], *pinned]


# --- Interrupted HF -> Megatron conversions --------------------------------------------------------------
# NeMo-RL takes its one-time conversion as done once `iter_0000000` exists, which Megatron-Bridge creates first
# (pod_programs/megatron_import_guard.py has the write order and its sources): a Megatron run first checks for a
# partial conversion and removes it, so NeMo-RL converts again instead of loading half a checkpoint.
MEGATRON_GUARD_SCRIPT = pod_programs.MEGATRON_GUARD.name


def megatron_guard_command(model_name: str, scripts_dir: str = SCRIPTS_DIR) -> list[str]:
    """argv of the check, with the policy.model_name NeMo-RL receives (HF_HOME comes from the pod)."""
    return ["uv", "run", "python", f"{scripts_dir}/{MEGATRON_GUARD_SCRIPT}", "--model-name", model_name]


# --- Readiness gate ----------------------------------------------------------------------------------
# The gate program and its decision module, side by side in the same ConfigMap (the program imports the module
# by name from its own directory). Its options come from core.gate.options().
GATE_SCRIPT = pod_programs.READINESS_GATE.name
GATE_MODULE = pod_programs.GATE_CHECKS.name


def gate_command(options: list[str], scripts_dir: str = SCRIPTS_DIR) -> list[str]:
    """argv of the readiness gate, run from the NeMo-RL work directory with its `uv run python` like the GSM8K
    step: NeMo-RL's environment has Ray, torch and NVML's binding, all the gate imports."""
    return ["uv", "run", "python", f"{scripts_dir}/{GATE_SCRIPT}", *options]
