"""The rendered job against the real NeMo-RL: each release's own configs and config loader (kept copies in
nemo-rl-reference), real hydra-core and OmegaConf in struct mode, and the argv the real /bin/sh hands to
the entry script. No expected value here comes from our own parsing: the intent is `hydra_overrides()` (what
the recipe means), the outcome is what NeMo-RL builds from the entrypoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import loader, lookup, nemo_rl_config, parsed_overrides, training_argv

MOUNT = "/lustre"
RUN = "run-1"
QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"


def resolved(name: str, tag: str, overrides: dict | None = None):
    return recipes.resolve_recipe(
        JobSettings.model_validate({"jobRecipe": name, "jobOverrides": overrides or {}}), NEMO_RL_RELEASES[tag]
    )


def accepted(name: str, tag: str) -> bool:
    try:
        resolved(name, tag)
    except recipes.RecipeError:
        return False
    return True


# Every (built-in recipe, release) pair the program accepts: what a stack may run.
ACCEPTED = [(name, tag) for name in sorted(recipes.RECIPES) for tag in sorted(NEMO_RL_RELEASES) if accepted(name, tag)]

# Valid jobOverrides that switch on every key the rendering can produce, on the releases that take them: the other
# dataset, the other generation placement, the optional fields, and each catalog config of the release.
VARIANTS = [
    (QWEN, "v0.4.0", {"dataset": "gsm8k"}),
    # 4 of its 8 nodes generate: TP 4 x PP 4 trains on the other 32 GPUs with a data-parallel size 2 (batch 256)
    (QWEN, "v0.4.0", {"colocated_generation": False, "generation_nodes": 4}),
    (
        QWEN,
        "v0.5.0",
        {
            "tensorboard_enabled": True,
            "vllm_tensor_parallel_size": 4,
            "vllm_gpu_memory_utilization": 0.5,
            "metric_name": "train:loss",
            "wandb_enabled": True,
            "wandb_name": "qwen 72b: run #1",
        },
    ),
    (GEMMA, "v0.5.0", {"metric_name": "val:pass_at_k", "higher_is_better": True}),
    (
        QWEN,
        "v0.4.0",
        {
            "config_path": "examples/configs/grpo_math_1B.yaml",
            "model_name": "Qwen/Qwen2.5-1.5B",
            "model_revision": "8faed761d45a263340a0528343f099c05c9a4323",  # outside the catalog: pinned here
            "train_backend": "dtensor",
            "converter_type": None,
            "dtensor_tensor_parallel_size": 8,
        },
    ),
    (GEMMA, "v0.5.0", {"dataset": "DeepScaler"}),
    (
        GEMMA,
        "v0.5.0",
        {
            "colocated_generation": True,
            "generation_nodes": None,
            "generation_gpus_per_node": None,
            "train_global_batch_size": 512,
        },
    ),
    (
        GEMMA,
        "v0.5.0",
        {
            "config_path": "examples/configs/grpo_math_70B_megatron.yaml",
            # its TP 4 x PP 4 needs 16 training GPUs: 2 training nodes beside the generation node
            "num_nodes": 3,
            "train_backend": "megatron",
            "dtensor_tensor_parallel_size": None,
            "converter_type": "Gemma3ForCausalLM",
        },
    ),
    (GEMMA, "v0.5.0", {"config_path": "examples/configs/grpo_math_1B.yaml"}),
    # v0.7.0's data.train / data.validation layout, both datasets, each catalog config.
    (QWEN, "v0.7.0", {"dataset": "gsm8k"}),
    (GEMMA, "v0.7.0", {"dataset": "DeepScaler"}),
    (GEMMA, "v0.7.0", {"config_path": "examples/configs/grpo_math_1B.yaml"}),
]
CASES = [(name, tag, {}) for name, tag in ACCEPTED] + VARIANTS
CASE_IDS = [f"{name}-{tag}-{'+'.join(sorted(o)) or 'builtin'}" for name, tag, o in CASES]


def job_of(name: str, tag: str, overrides: dict):
    """(recipe, argv uv gets from /bin/sh, the intent: config key -> value)."""
    recipe = resolved(name, tag, overrides)
    entrypoint = recipes.entrypoint(
        recipe, NEMO_RL_RELEASES[tag], recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN)
    )
    intent = recipes.hydra_overrides(recipe, mount_path=MOUNT, run_name=RUN, release=NEMO_RL_RELEASES[tag])
    if not lookup(nemo_rl_config(tag, recipe.config_path, []), "policy.megatron_cfg.converter_type")[0]:
        intent.pop("policy.megatron_cfg.converter_type", None)  # no reader at any release; v0.7.0 dropped the key
    return recipe, training_argv(entrypoint), intent


def same(actual, intended) -> bool:
    """Equal with the same type: None stays null, a bool is no int, '123' is no 123."""
    return type(actual) is type(intended) and actual == intended


@pytest.mark.unit
@pytest.mark.parametrize("tag,config_path", sorted((t, c) for t, r in NEMO_RL_RELEASES.items() for c in r.configs))
def test_every_catalog_config_loads_with_its_own_release_loader(tag, config_path):
    config = nemo_rl_config(tag, config_path, [])
    for section in ("grpo", "policy", "data", "checkpointing", "logger", "cluster"):
        assert isinstance(config.get(section), dict), section


@pytest.mark.unit
def test_each_release_is_loaded_by_its_own_loader():
    # v0.7.0 resolves `defaults:` relative to each parent and honours `_override_`; v0.4.0/v0.5.0 do not.
    assert loader("v0.4.0") is not loader("v0.5.0")
    assert not hasattr(loader("v0.5.0"), "merge_with_override")
    assert all(hasattr(loader("v0.7.0"), f) for f in ("merge_with_override", "register_omegaconf_resolvers"))


@pytest.mark.unit
@pytest.mark.parametrize("tag", sorted(NEMO_RL_RELEASES))
def test_each_release_record_states_what_its_own_loader_does_with_nested_defaults_and_override_markers(tag, tmp_path):
    # A chain where the two readings differ: the parent's own `defaults: grand.yaml` names a file in the parent's
    # directory and another in the top file's, and the top file marks a section `_override_: true`.
    (tmp_path / "sub").mkdir()
    (tmp_path / "top.yaml").write_text("defaults: sub/parent.yaml\nsec:\n  _override_: true\n  only: 1\n")
    (tmp_path / "sub" / "parent.yaml").write_text("defaults: grand.yaml\nsec:\n  a: 1\n")
    (tmp_path / "sub" / "grand.yaml").write_text("grand: parent-dir\n")
    (tmp_path / "grand.yaml").write_text("grand: top-dir\n")
    config = OmegaConf.to_container(loader(tag).load_config(str(tmp_path / "top.yaml")))
    release = NEMO_RL_RELEASES[tag]
    assert config["grand"] == ("parent-dir" if release.loader_parent_dirs else "top-dir")
    assert (config["sec"] == {"only": 1}) is release.loader_override_marker, config["sec"]
    # And the program's own reading of the same chain follows the record.
    tree = recipes.config_tree._inherit(tag, "top.yaml", "", _files(tmp_path), ())
    assert tree == config


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.yaml")}


@pytest.mark.unit
@pytest.mark.parametrize("tag", sorted(NEMO_RL_RELEASES))
def test_each_release_record_names_the_resolvers_its_loader_registers_or_the_entry_script_line_that_does(tag):
    module, release = loader(tag), NEMO_RL_RELEASES[tag]
    names = ("mul", "div", "max")
    for name in names:
        OmegaConf.clear_resolver(name)
    if hasattr(module, "register_omegaconf_resolvers"):  # v0.7.0: the entry script calls the loader's function
        module.register_omegaconf_resolvers()
        assert set(release.resolvers) == {n for n in names if OmegaConf.has_resolver(n)}
    else:  # the entry script registers them at import (not kept here): the record cites its line
        assert not any(OmegaConf.has_resolver(n) for n in names)
        assert re.search(r"examples/run_grpo_math\.py L[0-9]+", release.sources["resolvers"])
    assert all(release.sources.get(k) for k in ("loader_parent_dirs", "loader_override_marker", "resolvers"))


# --- the rendered job on the real config ------------------------------------------------------------------
@pytest.mark.unit
def test_program_accepts_qwen_on_every_release_and_gemma_where_its_config_ships():
    # v0.4.0 does not ship the Gemma 3 recipe config.
    assert ACCEPTED == [(GEMMA, "v0.5.0"), (GEMMA, "v0.7.0"), (QWEN, "v0.4.0"), (QWEN, "v0.5.0"), (QWEN, "v0.7.0")]


@pytest.mark.unit
def test_cases_cover_every_config_of_every_release_the_recipes_run_on():
    covered = {(tag, resolved(name, tag, overrides).config_path) for name, tag, overrides in CASES}
    assert covered == {(tag, c) for tag in NEMO_RL_RELEASES for c in NEMO_RL_RELEASES[tag].configs}


@pytest.mark.unit
@pytest.mark.parametrize("name,tag,overrides", CASES, ids=CASE_IDS)
def test_every_rendered_override_applies_to_the_release_config_with_its_intended_value_and_type(name, tag, overrides):
    recipe, argv, intent = job_of(name, tag, overrides)
    release = NEMO_RL_RELEASES[tag]
    assert argv[:6] == ["uv", "run", "python", release.grpo_entry, "--config", recipe.config_path]
    words = argv[6:]
    assert sorted(o.key_or_group for o in parsed_overrides(words)) == sorted(intent)
    config = nemo_rl_config(tag, recipe.config_path, words)
    wrong = {
        key: (lookup(config, key), value)
        for key, value in intent.items()
        if not (lookup(config, key)[0] and same(lookup(config, key)[1], value))
    }
    assert wrong == {}


@pytest.mark.graph
@pytest.mark.parametrize("name,tag,overrides", CASES, ids=CASE_IDS)
def test_plus_marks_exactly_the_keys_the_release_config_lacks(name, tag, overrides):
    recipe, argv, intent = job_of(name, tag, overrides)
    words = argv[6:]
    base = nemo_rl_config(tag, recipe.config_path, [])
    absent = {key for key in intent if not lookup(base, key)[0]}
    added = {o.key_or_group for o in parsed_overrides(words) if o.is_add()}
    assert added == absent
    # NeMo-RL applies overrides in struct mode: without its `+`, an absent key is refused; with a `+`, a key
    # holding a value is refused. A key present with null takes `+` too (hydra-core 1.3.2
    # hydra/_internal/config_loader_impl.py `_apply_overrides_to_config`: `+` adds where select() is None).
    errors = loader(tag).OverridesError
    as_rendered = nemo_rl_config(tag, recipe.config_path, words)
    for i, override in enumerate(parsed_overrides(words)):
        key, word = override.key_or_group, words[i]
        flipped = words[:i] + [word[1:] if override.is_add() else "+" + word] + words[i + 1 :]
        if lookup(base, key) == (True, None):
            assert nemo_rl_config(tag, recipe.config_path, flipped) == as_rendered, word
        else:
            with pytest.raises(errors, match=re.escape(f"'{key}'")):
                nemo_rl_config(tag, recipe.config_path, flipped)


@pytest.mark.unit
def test_release_layouts_match_flat_data_releases():
    # The refusal of v0.7.0 (and any release outside FLAT_DATA_RELEASES) rests on this: its GRPO configs have no
    # `data.dataset_name`; datasets moved under `data.train` (NeMo-RL PR #1649).
    for tag, release in NEMO_RL_RELEASES.items():
        for config_path in release.configs:
            data = nemo_rl_config(tag, config_path, [])["data"]
            if tag in recipes.FLAT_DATA_RELEASES:
                assert isinstance(data.get("dataset_name"), str) and "train" not in data, (tag, config_path)
            else:
                assert "dataset_name" not in data and "dataset_name" in data["train"], (tag, config_path)


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(recipes.RECIPES))
@pytest.mark.parametrize("dataset", ["gsm8k", "DeepScaler"])
def test_v070_trains_both_datasets_in_its_train_validation_layout(name, dataset):
    # NeMo-RL PR #1649's layout, through v0.7.0's own loader: ResponseDataset on the prepared JSONL files (no 5 %
    # held out of the training file), or DeepScaler validated on AIME 2024 (recipes/llm/grpo-deepscaler-1.5b-8K.yaml).
    recipe, argv, _ = job_of(name, "v0.7.0", {"dataset": dataset})
    assert argv[3] == "examples/run_grpo.py"
    data = nemo_rl_config("v0.7.0", recipe.config_path, argv[6:])["data"]
    assert "dataset_name" not in data
    if dataset == "gsm8k":
        assert data["train"] == {
            "dataset_name": "ResponseDataset",
            "data_path": recipes.gsm8k_paths(MOUNT)["train"],
            "split_validation_size": 0,
            "seed": data["train"]["seed"],
        }
        assert data["validation"] == {
            "dataset_name": "ResponseDataset",
            "data_path": recipes.gsm8k_paths(MOUNT)["validation"],
        }
        assert (data["default"]["input_key"], data["default"]["output_key"]) == ("question", "answer")
    else:
        assert data["train"]["dataset_name"] == "DeepScaler" and data["validation"] == {"dataset_name": "AIME2024"}
    assert data["default"]["env_name"] == "math"


# --- values of every kind reach NeMo-RL unchanged -----------------------------------------------------------
# Strings Hydra's grammar keeps bare (rendered bare, test_recipes.py) and strings it would read as another type,
# refuse, or split; plus quoting edge cases for both the shell and Hydra.
STRINGS = [
    "ResponseDataset",
    "question",
    "/lustre/checkpoints/run",
    "google/gemma-3-27b-it",
    "qwen2.5-72b-deepscaler",
    "Qwen2ForCausalLM",
    "_private",
    "/",
    "/123",
    "e5",
    "nullable",
    "truel",
    "a@b+c",
    "x-1.5e3",
    "null",
    "NULL",
    "true",
    "True",
    "FALSE",
    "inf",
    "NaN",
    "Infinity",
    "123",
    "1_000",
    "7b",
    "-x",
    "+x",
    "two words",
    "a:b",
    "gs://b/c",
    "a=b",
    "a,b",
    "[x]",
    "f(x)",
    "$HOME",
    "~x",
    "a*b",
    "it's",
    "ünï",
    "run\n",
    'say "hi"',
    "back\\slash",
    "trailing\\",
    "\\'",
    "'",
    "\\\\'",
    "a=b,c",
    "$HOME;rm -rf /",
    "`id`",
    "ünï cödé",
    "tab\there",
    "new\nline",
    "{a: 1}",
    "a\\,b",
    "%d",
    "a#b",
    " padded ",
]


@pytest.mark.unit
@pytest.mark.parametrize("value", STRINGS)
def test_any_wandb_name_reaches_nemo_rl_as_the_same_string(value):
    recipe = recipes.RECIPES[QWEN].model_copy(update={"wandb_name": value})
    argv = training_argv(
        recipes.entrypoint(recipe, NEMO_RL_RELEASES["v0.4.0"], recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN))
    )
    config = nemo_rl_config("v0.4.0", recipe.config_path, argv[6:])
    assert same(config["logger"]["wandb"]["name"], value)


@pytest.mark.unit
@pytest.mark.parametrize(
    "field,value,key",
    [
        ("vllm_gpu_memory_utilization", 0.9, "policy.generation.vllm_cfg.gpu_memory_utilization"),
        ("vllm_gpu_memory_utilization", 1.0, "policy.generation.vllm_cfg.gpu_memory_utilization"),
        ("vllm_gpu_memory_utilization", 1e-05, "policy.generation.vllm_cfg.gpu_memory_utilization"),
        ("vllm_gpu_memory_utilization", 0.1 + 0.2, "policy.generation.vllm_cfg.gpu_memory_utilization"),
        ("max_num_steps", 1, "grpo.max_num_steps"),
        ("max_num_steps", 10**18, "grpo.max_num_steps"),
        ("metric_name", None, "checkpointing.metric_name"),
        ("metric_name", "val:accuracy", "checkpointing.metric_name"),
        ("metric_name", "train:loss", "checkpointing.metric_name"),
        ("higher_is_better", None, "checkpointing.metric_name"),
        ("wandb_enabled", False, "logger.wandb_enabled"),
        ("tensorboard_enabled", True, "logger.tensorboard_enabled"),
    ],
)
def test_numbers_booleans_and_null_keep_their_type_in_nemo_rl(field, value, key):
    recipe = resolved(GEMMA, "v0.5.0", {field: value})
    argv = training_argv(
        recipes.entrypoint(recipe, NEMO_RL_RELEASES["v0.5.0"], recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN))
    )
    config = nemo_rl_config("v0.5.0", recipe.config_path, argv[6:])
    assert same(lookup(config, key)[1], value)


@pytest.mark.unit
def test_each_release_resolves_its_config_with_only_the_resolvers_its_entry_script_registers():
    # OmegaConf resolvers are process-wide; the oracle gives each load the set of the release it runs
    # (v0.7.0 run_grpo.py: mul, div, max; v0.4.0/v0.5.0 run_grpo_math.py: mul), not what another release left.
    nemo_rl_config("v0.7.0", "examples/configs/grpo_math_1B.yaml", [])
    assert all(OmegaConf.has_resolver(r) for r in ("mul", "div", "max"))
    nemo_rl_config("v0.5.0", "examples/configs/grpo_math_1B.yaml", [])
    assert OmegaConf.has_resolver("mul") and not OmegaConf.has_resolver("div") and not OmegaConf.has_resolver("max")


# --- the ranking direction -----------------------------------------------------------------------------------------
# Rule: NeMo-RL's CheckpointManager prunes to keep_top_k and names the best checkpoint by checkpointing.metric_name
# in the direction of checkpointing.higher_is_better (nemo_rl/utils/checkpoint.py at v0.4.0, v0.5.0, v0.7.0:
# `self.higher_is_better = config["higher_is_better"]`); the base configs set it true. A lower-is-better metric
# rendered without the flag keeps the WORST checkpoints, and the export would call the worst one "best".
@pytest.mark.unit
@pytest.mark.parametrize("name,tag", ACCEPTED)
def test_a_lower_is_better_metric_reaches_nemo_rl_and_the_export_in_one_direction(
    name, tag, tmp_path, nemo_rl_checkpoint
):
    from core import export

    CheckpointManager = nemo_rl_checkpoint.CheckpointManager

    recipe = resolved(name, tag, {"metric_name": "train:loss"})
    argv = training_argv(
        recipes.entrypoint(recipe, NEMO_RL_RELEASES[tag], recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN))
    )
    ckpt = nemo_rl_config(tag, recipe.config_path, argv[6:])["checkpointing"]
    assert (ckpt["metric_name"], ckpt["higher_is_better"]) == ("train:loss", False)
    # NeMo-RL's own pruning with that config keeps the lowest losses (plus the newest step)...
    losses = {2: 0.9, 4: 0.2, 6: 0.5, 8: 0.7}
    for step, loss in losses.items():
        d = tmp_path / f"step_{step}"
        d.mkdir()
        (d / "training_info.json").write_text(f'{{"train:loss": {loss}}}')
    cm = CheckpointManager({**ckpt, "checkpoint_dir": str(tmp_path), "keep_top_k": 2})
    cm.remove_old_checkpoints()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_4", "step_6", "step_8"]
    assert Path(cm.get_best_checkpoint_path()).name == "step_4"
    # ...and the export ranks the same way.
    words = export.export_argv(
        scripts_dir="/s",
        checkpoint_dir="/c",
        prefix="p",
        run_name=RUN,
        metric_name=recipe.metric_name,
        higher_is_better=recipes.higher_is_better(recipe),
    )
    assert words[words.index("--metric") :] == ["--metric", "train:loss", "--lower-is-better"]


@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides,problem",
    [
        ({"metric_name": "val_reward"}, "must be 'val:<key>' or 'train:<key>'"),
        ({"metric_name": "val:pass_at_k"}, "has no known direction; set higher_is_better"),
        (
            {"metric_name": "train:loss", "higher_is_better": True},
            "contradicts 'train:loss', for which lower is better",
        ),
        ({"higher_is_better": False}, "only applies when metric_name ranks the checkpoints"),
    ],
)
def test_a_metric_without_a_matching_direction_is_refused_in_one_line(overrides, problem):
    with pytest.raises(recipes.RecipeError) as e:
        resolved(GEMMA, "v0.5.0", overrides)
    [line] = e.value.problems
    assert problem in line and line.startswith("nemo-rl-gke:jobOverrides.")
