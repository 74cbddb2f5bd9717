"""The training command's arguments: entry script, `--config` and the Hydra overrides, in Hydra's own grammar.

Pure code. `hydra_overrides()` maps the recipe to NeMo-RL config keys (sorted), `hydra_value()` writes each value so
Hydra reads back exactly it, with its type, `render_overrides()` puts `+` exactly on the keys the base config lacks,
and `render_args()` is the training program's argv after `python`.

GSM8K without patching NeMo-RL
------------------------------
The GKE tutorial trains Gemma 3 on `openai/gsm8k` by pulling NeMo-RL's main branch on the head pod and
`sed`-patching two source files, because NeMo-RL v0.4.0/v0.5.0 cannot pass the dataset's config name
(`main`) to `load_dataset`. This project leaves the image untouched instead:

1. A preparation step runs in the same image, before the RayJob is created: the data staging Job on the CPU pool
   (workloads/data_staging.py) runs `pod_programs/prepare_gsm8k.py` through `stage_data.py`. It calls
   `datasets.load_dataset("openai/gsm8k", "main", revision=<the catalog's commit>)` (HF_HOME on Lustre) and writes
   `<mount>/datasets/gsm8k@<commit>/train.jsonl` and `test.jsonl`, one `{"question", "answer"}` object per line,
   each file written to a temporary name and renamed, then a `_SUCCESS` marker. With the marker present it does
   nothing, so every later run on the same commit skips it.
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

import hashlib
import re
from typing import Any, Optional

import core.recipes.config_tree as config_tree
from core import data
from core.catalog import NemoRlRelease
from core.lustre_paths import mount_root
from core.recipes.model import AS_WRITTEN_KEYS, Recipe, as_written, higher_is_better, run_name_problem

CHECKPOINTS_DIR = "checkpoints"  # under the Lustre mount
LOGS_DIR = "logs"  # under the Lustre mount


def checkpoint_dir(mount_path: str, run_name: str) -> str:
    return f"{mount_root(mount_path)}/{CHECKPOINTS_DIR}/{run_name}"


def gsm8k_paths(mount_path: str) -> dict[str, str]:
    """GSM8K's JSONL at the catalog's commit of openai/gsm8k, as the data staging Job writes it."""
    d = data.gsm8k_dir(mount_path)
    return {"dir": d, "train": f"{d}/train.jsonl", "validation": f"{d}/test.jsonl", "marker": f"{d}/_SUCCESS"}


def hydra_overrides(
    recipe: Recipe,
    *,
    mount_path: str,
    run_name: str,
    model_path: Optional[str] = None,
    release: Optional[NemoRlRelease] = None,
    tree: Optional[config_tree.ConfigTree] = None,
) -> dict[str, Any]:
    """Config key -> value, in a stable (sorted) order; None renders as null. `model_path`: the local
    directory of the prefetched, pinned model (NeMo-RL accepts a path as policy.model_name). With the recipe's config
    `tree`, also the keys the program pins only where that config holds another value (config_pins)."""
    problem = run_name_problem(run_name)
    if problem:
        raise ValueError(problem)
    if as_written(recipe):
        return as_written_overrides(
            recipe, mount_path=mount_path, run_name=run_name, model_path=model_path, release=release
        )
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
    if recipe.wandb_enabled:
        # One W&B run per run, across its attempts: NeMo-RL calls wandb.init(**logger.wandb, dir=...) (nemo_rl/utils/
        # logger.py WandbLogger at v0.4.0 L172, v0.7.0 L209), which without an id opens a new W&B run at every attempt.
        # A stable id with resume "allow" continues the run's W&B run, or creates it the first time (wandb.init).
        o["logger.wandb.id"] = wandb_run_id(run_name)
        o["logger.wandb.resume"] = "allow"
    if recipe.wandb_project is not None:
        o["logger.wandb.project"] = recipe.wandb_project
    if recipe.wandb_entity is not None:
        # No shipped config has logger.wandb.entity: an explicit addition (`+`, computed by render_overrides).
        # NeMo-RL passes logger.wandb whole to wandb.init(**cfg) (nemo_rl/utils/logger.py WandbLogger at v0.4.0,
        # v0.5.0, v0.7.0), and an init argument beats the WANDB_ENTITY variable (wandb_settings.py
        # update_from_env_vars, then the init settings on top), so the key is the one spelling that always wins.
        o["logger.wandb.entity"] = recipe.wandb_entity
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
        o["policy.generation.colocated.resources.gpus_per_node"] = (
            recipe.generation_gpus_per_node or recipe.gpus_per_node
        )
    if recipe.data is not None:
        if release is None:
            raise ValueError("jobData is rendered for a release (its layout and its staged files)")
        o.update(data.hydra_keys(recipe.data, release.tag, release.flat_data, mount_path))
    elif release is not None and not release.flat_data:
        o.update(_train_validation_data(recipe, mount_path))
    elif recipe.dataset == "DeepScaler":
        o["data.dataset_name"] = "DeepScaler"
    else:
        paths = gsm8k_paths(mount_path)
        o.update(
            {
                "data.dataset_name": "ResponseDataset",
                "data.train_data_path": paths["train"],
                "data.val_data_path": paths["validation"],
                "data.input_key": "question",
                "data.output_key": "answer",
                # A local .jsonl loads as a single split named "train" (see the module docstring).
                "data.train_split": "train",
                "data.val_split": "train",
            }
        )
    if tree is not None:
        o.update(config_pins(recipe, release, tree))
    return dict(sorted(o.items()))


def as_written_overrides(
    recipe: Recipe,
    *,
    mount_path: str,
    run_name: str,
    model_path: Optional[str] = None,
    release: Optional[NemoRlRelease] = None,
) -> dict[str, Any]:
    """jobRecipe none: only the keys the infrastructure decides (model.AS_WRITTEN_KEYS), everything else stays the
    config's: the pinned snapshot for the model and its tokenizer (core.catalog.NEMO_RL_HUB_KEYS; the config's
    tokenizer is its model, which core.recipes.as_written checks), the run's checkpoint and log directories on
    Lustre, and one W&B run per run where the config logs to W&B (wandb_run_id). `data_overrides` is where staged
    data joins them."""
    o: dict[str, Any] = {
        "policy.model_name": model_path or recipe.model_name,
        "policy.tokenizer.name": model_path or recipe.model_name,
        "checkpointing.checkpoint_dir": checkpoint_dir(mount_path, run_name),
        "logger.log_dir": f"{mount_root(mount_path)}/{LOGS_DIR}/{run_name}",
    }
    if recipe.wandb_enabled:
        o["logger.wandb.id"] = wandb_run_id(run_name)
        o["logger.wandb.resume"] = "allow"
    o.update(data_overrides(recipe, mount_path, release))
    assert set(o) - set(AS_WRITTEN_KEYS) <= _DATA_KEYS_RENDERED, o  # every key it renders is listed
    return dict(sorted(o.items()))


# The data keys a config run as written may get from the program: the staged files of jobData, in either layout
# (core.data.hydra_keys), whose paths then replace the config's dataset route.
_DATA_KEYS_RENDERED: frozenset[str] = data.HYDRA_KEYS


def data_overrides(recipe: Recipe, mount_path: str, release: Optional[NemoRlRelease]) -> dict[str, Any]:
    """The staged data's keys for a config run as written (empty without jobData: the config's own data section, as
    written, whose built-in datasets the staging Job pins: core.recipes.resolve _dataset_problems)."""
    if recipe.data is None:
        return {}
    if release is None:
        raise ValueError("jobData is rendered for a release (its layout and its staged files)")
    return data.hydra_keys(recipe.data, release.tag, release.flat_data, mount_path)


def wandb_run_id(run_name: str) -> str:
    """The W&B run id of a run: its run name (letters, digits, '.', '_', '-': none of the characters wandb reserves,
    wandb_settings.py validate_run_id `:;,#?/'`), shortened with a digest of the whole name past 64 characters."""
    if len(run_name) <= 64:
        return run_name
    return f"{run_name[:55]}-{hashlib.sha256(run_name.encode()).hexdigest()[:8]}"


def config_pins(recipe: Recipe, release: Optional[NemoRlRelease], tree: config_tree.ConfigTree) -> dict[str, Any]:
    """Keys the program sets only where the recipe's config holds another value, so a job on a config without them
    renders (and is named) as before:

    - checkpointing.checkpoint_must_save_by -> null: at that time NeMo-RL saves and returns from the GRPO loop like a
      finished run ("Timeout has been reached, stopping training early", nemo_rl/algorithms/grpo.py `grpo_train`,
      v0.4.0 L1389-1391, v0.7.0 L3123-3126), so the entry script exits 0 and the job would mark a partial run trained
      and export it. An attempt is bounded by the RayJob's deadline instead (jobDeadlineSeconds), and a
      resubmission resumes from the newest checkpoint.
    - checkpointing.save_optimizer -> true (v0.7.0, nemo_rl/utils/checkpoint.py CheckpointingConfig, "Default: True";
      grpo.py passes optimizer_path=None when it is false): without it every resume after a preemption starts a fresh
      optimizer while the run name says it continues.
    - data.<train|validation>.split -> "train" for GSM8K on the data.train/data.validation layout, where the config
      names a split (v0.7.0 gdpo_math_1B.yaml: data.validation.split: test): ResponseDataset loads a .jsonl file with
      load_dataset("json", data_files=...), whose only split is `train`, then takes raw_dataset[split]
      (nemo_rl/data/datasets/utils.py load_dataset_from_path at v0.7.0), so `test` is a KeyError.
    """
    pins: dict[str, Any] = {}
    present, value = tree.lookup("checkpointing.checkpoint_must_save_by", resolved=True)
    if present and value is not None:
        pins["checkpointing.checkpoint_must_save_by"] = None
    present, value = tree.lookup("checkpointing.save_optimizer", resolved=True)
    if present and value is not True:
        pins["checkpointing.save_optimizer"] = True
    if release is not None and not release.flat_data and recipe.dataset == "gsm8k" and recipe.data is None:
        default_split = tree.lookup("data.default.split", resolved=True)[0]
        for which in ("train", "validation"):
            present, value = tree.lookup(f"data.{which}.split", resolved=True)
            if (present and value not in (None, "train")) or (default_split and not present):
                pins[f"data.{which}.split"] = "train"
    return pins


def _train_validation_data(recipe: Recipe, mount_path: str) -> dict[str, Any]:
    """The dataset route in the layout of NeMo-RL PR #1649 (v0.7.0 examples/configs/grpo_math_1B.yaml: data.train,
    data.validation, data.default; nemo_rl/data/utils.py setup_response_data builds each from DATASET_REGISTRY and
    fills the keys it lacks from data.default). DeepScaler as v0.7.0's recipes/llm/grpo-deepscaler-1.5b-8K.yaml
    does it: DeepScalerDataset trains, AIME 2024 validates (deepscaler.py no longer builds a validation split).
    GSM8K: our prepared JSONL through ResponseDataset (data_path; a .jsonl loads as the split `train`, taken when
    `split` is null), the test file as the validation dataset, and no 5 % of the training file held out as well
    (the base config's split_validation_size 0.05)."""
    if recipe.dataset == "DeepScaler":
        return {"data.train.dataset_name": "DeepScaler", "data.validation.dataset_name": "AIME2024"}
    paths = gsm8k_paths(mount_path)
    return {
        "data.train.dataset_name": "ResponseDataset",
        "data.train.data_path": paths["train"],
        "data.train.split_validation_size": 0,
        "data.default.input_key": "question",
        "data.default.output_key": "answer",
        "data.validation.dataset_name": "ResponseDataset",
        "data.validation.data_path": paths["validation"],
    }


# Strings Hydra's override grammar reads back unchanged without quotes (hydra/grammar/OverrideLexer.g4 of Hydra
# 1.1-1.3, which NeMo-RL's parse_hydra_overrides uses): a run of ID tokens (letters, digits, `_`, `-`) and the
# unquoted characters `/ . @ + -`, joined as written. The first character is a letter, `_` or `/`, so no word
# starts like a number or a sign. Not bare: `:` `=` `,` spaces, quotes, brackets and parentheses (lists, dicts,
# sweeps, functions), `$` (interpolation), `\` (escapes), `~`, `*`, `?`, `|`, `%`, non-ASCII.
_BARE_STRING = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+-]*")  # fullmatch: `$` would accept a final "\n"
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
    if isinstance(value, list):
        # Hydra's list grammar, each element in the same grammar.
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
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


def render_overrides(
    recipe: Recipe,
    release: NemoRlRelease,
    *,
    mount_path: str,
    run_name: str,
    model_path: Optional[str] = None,
) -> list[str]:
    """Hydra overrides as command-line words: the program's keys (`+` exactly on those the release's config
    lacks: Hydra refuses to set a missing key without `+` and refuses `+` on a key that is set), then the user's
    dotted jobOverrides as written (their `+` is theirs; core.recipes.resolve checked each against the config)."""
    tree = config_tree.load(release.tag, recipe.config_path, recipe.config_files)
    words = []
    rendered = hydra_overrides(
        recipe, mount_path=mount_path, run_name=run_name, model_path=model_path, release=release, tree=tree
    )
    for k, v in rendered.items():
        if k == "policy.megatron_cfg.converter_type" and not tree.lookup(k)[0]:
            continue  # v0.7.0 dropped the key (no reader at any release)
        words.append(("" if tree.lookup(k)[0] else "+") + f"{k}={hydra_value(v)}")
    for k, v in sorted(recipe.config_overrides.items()):
        words.append(f"{k}={hydra_value(config_tree.render_value(tree, k, v))}")
    return words


def render_args(
    recipe: Recipe,
    release: NemoRlRelease,
    *,
    mount_path: str,
    run_name: str,
    model_path: Optional[str] = None,
    entry: Optional[str] = None,
) -> list[str]:
    """The training program's argv after `python`: entry script (the release's GRPO entry, or `entry`, the jobEntry
    script of the user's image, which takes the same arguments), --config, Hydra overrides."""
    return [
        entry or release.grpo_entry,
        "--config",
        recipe.config_path,
        *render_overrides(recipe, release, mount_path=mount_path, run_name=run_name, model_path=model_path),
    ]
