"""jobRecipe none: a NeMo-RL config run as written, and the fit rules on the config NeMo-RL resolves.

Oracles: NeMo-RL's own config loader of each release (nemo-rl-reference/<tag>) with real hydra-core, fed the argv the
real /bin/sh hands the entry script (tests/nemo_rl_oracle.py); the engine's records for what a stack renders. The
refusals are one line naming the setting the deciding value came from: a dotted jobOverrides key, a jobConfigFiles
file, a recipe field or the chosen config.
"""

from __future__ import annotations

import json

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.recipes import config_tree
from core.recipes.model import AS_WRITTEN_KEYS
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config, parsed_overrides, script_calls, training_argv

MOUNT, RUN = "/lustre", "run-1"
MATH_8B = "examples/configs/grpo_math_8B.yaml"
# The config's own model, gated on the Hub and outside the catalog: its commit (the `main` snapshot many public HF
# caches hold, models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e39f2...) and its size (the model card's 8B).
LLAMA_REV = "0e9e39f249a16976918f6564b8830bc894c89659"
LLAMA = {"model_revision": LLAMA_REV, "model_params": 8_030_000_000}
GEMMA = "gemma3-27b-gsm8k"
# Keys of the rendered job that only the infrastructure decides: the run's paths and the pinned snapshot.
PROGRAM_KEYS = {"checkpointing.checkpoint_dir", "logger.log_dir", "policy.model_name", "policy.tokenizer.name"}


def job(overrides: dict, recipe: str = "none", files: dict | None = None) -> JobSettings:
    values = {"jobRecipe": recipe, "jobOverrides": overrides, **({"jobConfigFiles": files} if files else {})}
    return JobSettings.model_validate(values)


def as_written(overrides: dict, tag: str = "v0.5.0", files: dict | None = None):
    return recipes.resolve_recipe(
        job({"config_path": MATH_8B, **LLAMA, **overrides}, files=files), NEMO_RL_RELEASES[tag]
    )


def refusal(overrides: dict, tag: str = "v0.5.0", recipe: str = "none", files: dict | None = None) -> list[str]:
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(job(overrides, recipe, files), NEMO_RL_RELEASES[tag])
    return e.value.problems


def flat(config: dict) -> dict:
    return config_tree.flatten(config)


# --- the config runs as written ---------------------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize("tag", sorted(NEMO_RL_RELEASES))
def test_grpo_math_8b_as_written_renders_no_training_key_the_program_chose(tag):
    release = NEMO_RL_RELEASES[tag]
    recipe = as_written({}, tag)
    # The weights prefetch's snapshot directory, as the job renders it (core.prefetch).
    snapshot = f"{MOUNT}/models/meta-llama/Llama-3.1-8B-Instruct@{LLAMA_REV}"
    args = recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN, model_path=snapshot)
    argv = training_argv(recipes.entrypoint(recipe, release, args))
    assert argv[3:6] == [release.grpo_entry, "--config", MATH_8B]
    words = argv[6:]
    # What Hydra's own parser reads: exactly the infrastructure's keys, no '+' (the config has each).
    assert {o.key_or_group for o in parsed_overrides(words)} == PROGRAM_KEYS
    ran, alone = nemo_rl_config(tag, MATH_8B, words), nemo_rl_config(tag, MATH_8B, [])
    changed = {k for k in set(flat(ran)) | set(flat(alone)) if flat(ran).get(k) != flat(alone).get(k)}
    assert changed == PROGRAM_KEYS
    # Its own batch shape, layout and parallel sizes survive.
    for k, v in {
        "grpo.num_prompts_per_step": 64,
        "grpo.num_generations_per_prompt": 32,
        "cluster.num_nodes": 1,
        "cluster.gpus_per_node": 8,
        "policy.generation.vllm_cfg.tensor_parallel_size": 1,
        "policy.dtensor_cfg.tensor_parallel_size": 1,
        "policy.train_global_batch_size": 512,
    }.items():
        assert lookup(ran, k) == (True, v), k
    assert lookup(ran, "policy.model_name")[1] == lookup(ran, "policy.tokenizer.name")[1] == snapshot


@pytest.mark.unit
def test_a_recipe_on_the_same_config_sets_its_own_layout_and_batch_shape_over_it():
    # The contrast: the built-in recipe's 2 nodes, 16 x 64 and TP 8 replace the config's 1 node, 64 x 32 and TP 1.
    release = NEMO_RL_RELEASES["v0.5.0"]
    recipe = recipes.resolve_recipe(job({"config_path": MATH_8B}, GEMMA), release)
    words = recipes.render_overrides(recipe, release, mount_path=MOUNT, run_name=RUN)
    ran = nemo_rl_config("v0.5.0", MATH_8B, words)
    assert lookup(ran, "cluster.num_nodes") == (True, 2)
    assert lookup(ran, "grpo.num_prompts_per_step") == (True, 16)
    assert lookup(ran, "policy.generation.vllm_cfg.tensor_parallel_size") == (True, 8)


@pytest.mark.unit
def test_the_recipe_of_a_config_run_as_written_is_what_nemo_rl_resolves_with_the_users_keys():
    # A dotted key changes the config's own value, and everything the program reads follows it.
    recipe = as_written({"grpo.num_prompts_per_step": 32, "cluster.num_nodes": 2, "grpo.max_num_steps": 40})
    assert (recipe.num_prompts_per_step, recipe.num_nodes, recipe.max_num_steps) == (32, 2, 40)
    assert (recipe.num_generations_per_prompt, recipe.vllm_tensor_parallel_size, recipe.dataset) == (32, 1, None)
    assert recipe.step_budget_seconds is None and recipes.job_deadline_seconds(recipe) is None


@pytest.mark.unit
def test_a_config_file_of_ones_own_runs_as_written_with_its_own_keys(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("defaults: grpo_math_8B.yaml\ngrpo:\n  seed: 11\n")
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", tmp_path)
    mine = "examples/configs/grpo_math_8B_mine.yaml"
    release = NEMO_RL_RELEASES["v0.5.0"]
    recipe = recipes.resolve_recipe(job({"config_path": mine, **LLAMA}, files={mine: "mine.yaml"}), release)
    words = recipes.render_overrides(recipe, release, mount_path=MOUNT, run_name=RUN)
    assert {o.key_or_group for o in parsed_overrides(words)} == PROGRAM_KEYS
    assert recipe.num_prompts_per_step == 64 and recipe.num_nodes == 1


@pytest.mark.unit
def test_every_key_the_program_renders_as_written_is_listed_in_the_docs():
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "operations.md").read_text(encoding="utf-8")
    section = doc[doc.index("### A config as written") :]
    section = section[: section.index("\n### ", 5)]
    for k in AS_WRITTEN_KEYS:
        assert f"`{k}`" in section, k
    # ... and nothing the program renders is missing from the list, with W&B on.
    recipe = as_written({"logger.wandb_enabled": True})
    rendered = recipes.hydra_overrides(recipe, mount_path=MOUNT, run_name=RUN, release=NEMO_RL_RELEASES["v0.5.0"])
    assert set(rendered) <= set(AS_WRITTEN_KEYS) and {"logger.wandb.id", "logger.wandb.resume"} <= set(rendered)


# --- what a config run as written may not set, and how to set the rest ---------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides,line",
    [
        ({}, "nemo-rl-gke:jobRecipe: none runs a NeMo-RL config as written; name it with"),
        (
            {"config_path": MATH_8B, **LLAMA, "num_nodes": 2},
            "nemo-rl-gke:jobOverrides.num_nodes: jobRecipe none runs the config as written, whose cluster.num_nodes is "
            "the config's; set the config's own key instead: jobOverrides[\"cluster.num_nodes\"]",
        ),
        (
            {"config_path": MATH_8B, **LLAMA, "policy.model_name": "Qwen/Qwen3-8B"},
            "nemo-rl-gke:jobOverrides.policy.model_name: is rendered by the program from jobOverrides.model_name",
        ),
        (
            {"config_path": MATH_8B, "model_params": 8_030_000_000},
            "nemo-rl-gke:jobOverrides.model_revision: model 'meta-llama/Llama-3.1-8B-Instruct' is not in the catalog",
        ),
        (
            {"config_path": MATH_8B, **LLAMA, "checkpointing.enabled": False},
            "nemo-rl-gke:jobOverrides.checkpointing.enabled: checkpointing.enabled is not true",
        ),
        (
            {"config_path": MATH_8B, **LLAMA, "checkpointing.checkpoint_must_save_by": "00:03:45:00"},
            "nemo-rl-gke:jobOverrides.checkpointing.checkpoint_must_save_by: checkpointing.checkpoint_must_save_by is "
            "set",
        ),
        (
            {"config_path": MATH_8B, **LLAMA, "policy.tokenizer.name": "meta-llama/Llama-3.2-1B-Instruct"},
            "nemo-rl-gke:jobOverrides.policy.tokenizer.name: is rendered by the program",
        ),
        (
            {"config_path": "examples/configs/grpo_math_9B.yaml", **LLAMA},
            "nemo-rl-gke:jobOverrides.config_path: config 'examples/configs/grpo_math_9B.yaml' of recipe 'none' is "
            "not shipped by NeMo-RL v0.5.0",
        ),
        (
            {"config_path": "examples/configs/sft.yaml", **LLAMA},
            "nemo-rl-gke:jobOverrides.config_path: examples/configs/sft.yaml (NeMo-RL v0.5.0) is not a GRPO config",
        ),
    ],
)
def test_what_a_config_run_as_written_cannot_take_is_refused_in_one_line_naming_its_key(overrides, line):
    problems = refusal(overrides)
    assert len(problems) == 1 and problems[0].startswith(line), problems


@pytest.mark.unit
def test_a_config_that_stops_early_or_drops_the_optimizer_is_refused_naming_the_file_that_says_so(
    tmp_path, monkeypatch
):
    # v0.7.0 has checkpointing.save_optimizer; a file of the user's turns it off.
    (tmp_path / "mine.yaml").write_text("defaults: grpo_math_8B.yaml\ncheckpointing:\n  save_optimizer: false\n")
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", tmp_path)
    mine = "examples/configs/grpo_math_8B_mine.yaml"
    problems = refusal({"config_path": mine, **LLAMA}, "v0.7.0", files={mine: "mine.yaml"})
    assert len(problems) == 1 and problems[0].startswith(
        f"nemo-rl-gke:jobConfigFiles.{mine}: checkpointing.save_optimizer is false"
    ), problems


# --- the fit rules on the resolved config, whatever set each key -----------------------------------------------------
MINE = "examples/configs/grpo_math_8B_mine.yaml"


def file_problems(tmp_path, monkeypatch, body: str, recipe: str = "none", **extra) -> list[str]:
    """The refusal of a job on the user's own file (inheriting grpo_math_8B.yaml) that sets `body`."""
    (tmp_path / "mine.yaml").write_text("defaults: grpo_math_8B.yaml\n" + body)
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", tmp_path)
    overrides = {"config_path": MINE, **(LLAMA if recipe == "none" else {}), **extra}
    return refusal(overrides, recipe=recipe, files={MINE: "mine.yaml"})


@pytest.mark.unit
@pytest.mark.parametrize(
    "dotted,line",
    [
        # training: the 8 GPUs are not a multiple of TP x CP (lm_policy.py Policy.__init__)
        (
            {"policy.dtensor_cfg.tensor_parallel_size": 3},
            "nemo-rl-gke:jobOverrides.policy.dtensor_cfg.tensor_parallel_size: the 8 training GPUs are not a multiple "
            "of TP 3 x PP 1 x CP 1 = 3",
        ),
        (
            {"policy.dtensor_cfg.context_parallel_size": 16},
            "nemo-rl-gke:jobOverrides.policy.dtensor_cfg.context_parallel_size: the 8 training GPUs are not a multiple",
        ),
        # vLLM: TP x PP must divide the generation GPUs (vllm_generation.py) ...
        (
            {"policy.generation.vllm_cfg.tensor_parallel_size": 16},
            "nemo-rl-gke:jobOverrides.policy.generation.vllm_cfg.tensor_parallel_size: vLLM TP 16 x PP 1 = 16 does not "
            "divide the 8 generation GPUs",
        ),
        # ... and, no larger than a node, the GPUs of each node (24 GPUs take TP 3, a node of 8 does not)
        (
            {
                "cluster.num_nodes": 3,
                "policy.generation.vllm_cfg.tensor_parallel_size": 3,
                "policy.dtensor_cfg.tensor_parallel_size": 3,  # training: 24 GPUs / TP 3, a batch of 512 per 8 ranks
            },
            "nemo-rl-gke:jobOverrides.policy.generation.vllm_cfg.tensor_parallel_size: vLLM TP 3 x PP 1 = 3 does not "
            "divide the 8 generation GPUs of a node",
        ),
        # batch: a step's 64 x 32 rollouts are not a multiple of the global batch (batched_data_dict.py) ...
        (
            {"policy.train_global_batch_size": 500},
            "nemo-rl-gke:jobOverrides.policy.train_global_batch_size: a step's 64 x 32 = 2048 rollouts are not a "
            "multiple of policy.train_global_batch_size 500",
        ),
        # ... nor the global batch a multiple of the data-parallel size (8 GPUs / TP 1)
        (
            {"policy.train_global_batch_size": 4},
            "nemo-rl-gke:jobOverrides.policy.train_global_batch_size: policy.train_global_batch_size 4 is not a "
            "multiple of the data-parallel size 8",
        ),
        # the cluster split of non-colocated generation (grpo.py setup): one node needs its vLLM GPU count
        (
            {"policy.generation.colocated.enabled": False},
            "nemo-rl-gke:jobOverrides.policy.generation.colocated.enabled: non-colocated generation on one node needs "
            "policy.generation.colocated.resources.gpus_per_node > 0",
        ),
    ],
)
def test_each_fit_rule_fails_on_a_bad_resolved_config_set_by_a_dotted_key(dotted, line):
    problems = refusal({"config_path": MATH_8B, **LLAMA, **dotted})
    assert len(problems) == 1 and problems[0].startswith(line), problems


@pytest.mark.unit
@pytest.mark.parametrize(
    "body,fragment",
    [
        ("policy:\n  dtensor_cfg:\n    tensor_parallel_size: 3\n", "the 8 training GPUs are not a multiple of TP 3"),
        (
            "policy:\n  generation:\n    vllm_cfg:\n      tensor_parallel_size: 16\n",
            "vLLM TP 16 x PP 1 = 16 does not divide the 8 generation GPUs",
        ),
        ("grpo:\n  num_prompts_per_step: 10\n", "a step's 10 x 32 = 320 rollouts are not a multiple"),
        (
            "policy:\n  tokenizer:\n    name: meta-llama/Llama-3.2-1B-Instruct\n",
            "policy.tokenizer.name 'meta-llama/Llama-3.2-1B-Instruct' is another Hub artefact than policy.model_name",
        ),
    ],
)
def test_each_fit_rule_fails_on_a_bad_resolved_config_set_by_a_file(tmp_path, monkeypatch, body, fragment):
    problems = file_problems(tmp_path, monkeypatch, body)
    assert len(problems) == 1 and problems[0].startswith(f"nemo-rl-gke:jobConfigFiles.{MINE}: {fragment}"), problems


@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides,line",
    [
        (
            {"num_prompts_per_step": 15},
            "nemo-rl-gke:jobOverrides.num_prompts_per_step: a step's 15 x 64 = 960 rollouts are not a multiple of "
            "policy.train_global_batch_size",
        ),
        (
            {"dtensor_tensor_parallel_size": 3},
            "nemo-rl-gke:jobOverrides.dtensor_tensor_parallel_size: the 8 training GPUs are not a multiple of TP 3",
        ),
        # A config whose own Megatron layout (TP 4 x PP 4) the recipe's 8 training GPUs cannot hold.
        (
            {"config_path": "examples/configs/grpo_math_70B_megatron.yaml", "dtensor_tensor_parallel_size": None},
            "nemo-rl-gke:jobOverrides.config_path: the 8 training GPUs are not a multiple of TP 4 x PP 4 x CP 1 = 16",
        ),
    ],
)
def test_each_fit_rule_fails_on_a_bad_resolved_config_set_by_a_recipe(overrides, line):
    problems = refusal(overrides, recipe=GEMMA)
    assert len(problems) == 1 and problems[0].startswith(line), problems


@pytest.mark.unit
def test_a_file_setting_a_key_a_recipe_renders_loses_to_the_recipe_and_is_not_blamed(tmp_path, monkeypatch):
    # The recipe renders the vLLM TP (8): the file's TP 3 never reaches NeMo-RL, so nothing is refused for it.
    body = "policy:\n  generation:\n    vllm_cfg:\n      tensor_parallel_size: 3\n"
    (tmp_path / "mine.yaml").write_text("defaults: grpo_math_8B.yaml\n" + body)
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", tmp_path)
    recipe = recipes.resolve_recipe(job({"config_path": MINE}, GEMMA, {MINE: "mine.yaml"}), NEMO_RL_RELEASES["v0.5.0"])
    words = recipes.render_overrides(recipe, NEMO_RL_RELEASES["v0.5.0"], mount_path=MOUNT, run_name=RUN)
    assert "policy.generation.vllm_cfg.tensor_parallel_size=8" in words


@pytest.mark.unit
def test_the_setter_of_a_key_is_the_last_file_of_the_defaults_chain_that_sets_it():
    tag = "v0.5.0"
    assert config_tree.setter(tag, MATH_8B, {}, "grpo.num_prompts_per_step") == MATH_8B
    assert config_tree.setter(tag, MATH_8B, {}, "grpo.seed") == "examples/configs/grpo_math_1B.yaml"
    assert config_tree.setter(tag, MATH_8B, {}, "no.such.key") is None


# --- nodes and GPU memory against the platform --------------------------------------------------------------------
@pytest.mark.unit
def test_a_config_needing_more_nodes_than_the_platform_has_is_refused_naming_both_numbers():
    recipe = as_written({"cluster.num_nodes": 4})
    j = job({"config_path": MATH_8B, **LLAMA, "cluster.num_nodes": 4})
    release = NEMO_RL_RELEASES["v0.5.0"]
    (line,) = recipes.fit_problems(recipe, j, worker_replicas=4, gpus_per_node=8, max_nodes=2, release=release)
    assert line.startswith("nemo-rl-gke:jobOverrides.cluster.num_nodes: the config needs cluster.num_nodes 4 GPU nodes")
    assert "scale to at most 2 (nemo-rl-gke:gpuNodes)" in line


@pytest.mark.unit
def test_a_config_for_other_gpus_per_node_than_the_gpu_types_is_refused_with_the_key_to_set():
    release = NEMO_RL_RELEASES["v0.5.0"]
    pinned = {"model_revision": "2" * 40, "model_params": 1_240_000_000}  # its Llama-3.2-1B, at some commit
    j = job({"config_path": "examples/configs/grpo_math_1B.yaml", **pinned})  # its cluster: 1 node x 1 GPU
    recipe = recipes.resolve_recipe(j, release)
    (line,) = recipes.fit_problems(recipe, j, worker_replicas=1, gpus_per_node=8, max_nodes=2, release=release)
    assert line == (
        "nemo-rl-gke:jobOverrides.config_path: 1 GPUs per node but the GPU type has 8 (nemo-rl-gke:gpuType); "
        'set jobOverrides["cluster.gpus_per_node"] to 8'
    )


@pytest.mark.unit
def test_a_model_whose_training_state_cannot_fit_its_gpus_is_refused_and_one_that_fits_is_not():
    release = NEMO_RL_RELEASES["v0.5.0"]
    big = {"model_name": "meta-llama/Llama-3.1-405B-Instruct", "model_revision": "1" * 40, "model_params": 405 * 10**9}
    j = job({"config_path": MATH_8B, **big})
    recipe = recipes.resolve_recipe(j, release)
    (line,) = recipes.fit_problems(recipe, j, worker_replicas=1, gpus_per_node=8, gpu_memory_gib=141, release=release)
    # 16 B x 405e9 over 8 GPUs is 754 GiB each: no sharding helps; 43 H200s at least.
    assert line.startswith("nemo-rl-gke:jobOverrides.config_path: meta-llama/Llama-3.1-405B-Instruct (405.0B")
    assert "754 GiB on each of its 8 training GPUs, which have 141 GiB; train on at least 43 GPUs" in line
    small = recipes.resolve_recipe(job({"config_path": MATH_8B, **LLAMA}), release)
    assert recipes.fit_problems(small, j, worker_replicas=1, gpus_per_node=8, gpu_memory_gib=141, release=release) == []
    # CPU offload lifts the bound.
    off = job({"config_path": MATH_8B, **big, "policy.dtensor_cfg.cpu_offload": True})
    recipe = recipes.resolve_recipe(off, release)
    assert (
        recipes.fit_problems(recipe, off, worker_replicas=1, gpus_per_node=8, gpu_memory_gib=141, release=release) == []
    )


# --- the run fingerprint ---------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_the_run_name_of_a_config_run_as_written_follows_its_training_keys():
    release = NEMO_RL_RELEASES["v0.5.0"]

    def name(**o):
        return recipes.default_run_name(job({"config_path": MATH_8B, **LLAMA, **o}), "dev", release)

    base = name()
    assert base.startswith("grpo_math_8B-dev-")
    assert name(**{"policy.optimizer.kwargs.lr": 1.0e-6}) != base  # a training key: a new run
    assert name(**{"grpo.max_num_steps": 40}) == base  # more steps resume (DTensor)
    assert name(**{"logger.wandb_enabled": True}) == base  # logging observes
    recipe_run = recipes.default_run_name(job({"config_path": MATH_8B}, GEMMA), "dev", release)
    assert recipe_run.split("-")[-1] != base.split("-")[-1]


# --- through the engine ----------------------------------------------------------------------------------------------
AS_WRITTEN_DEV = {"jobRecipe": "none", "jobOverrides": json.dumps({"config_path": MATH_8B, **LLAMA})}


@pytest.mark.graph
def test_the_dev_stack_runs_grpo_math_8b_as_written_on_one_node(synth):
    r = synth("dev", AS_WRITTEN_DEV)
    assert r.error is None, r.error
    entrypoint = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    (argv,) = [c for c in script_calls(entrypoint) if c[3:4] == ["examples/run_grpo_math.py"]]
    words = argv[6:]
    assert {o.key_or_group for o in parsed_overrides(words)} == PROGRAM_KEYS
    ran = nemo_rl_config("v0.5.0", MATH_8B, words)
    assert (lookup(ran, "grpo.num_prompts_per_step"), lookup(ran, "grpo.num_generations_per_prompt")) == (
        (True, 64),
        (True, 32),
    )
    assert lookup(ran, "policy.model_name")[1].endswith(f"meta-llama/Llama-3.1-8B-Instruct@{LLAMA_REV}")
    # The workers are sized from the config's cluster.num_nodes (1), not the platform's 2 GPU nodes.
    cluster = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster")
    assert [g["replicas"] for g in cluster.get("spec.workerGroupSpecs")] == [1]
    assert not [w for w in r.warnings if "sit idle" in w]
    # Preview names every key the program sets, and says the rest is the config's.
    (note,) = [i for i in r.infos if i.startswith("nemo-rl-gke:jobRecipe: none runs")]
    for k in PROGRAM_KEYS:
        assert f"{k}=" in note
    assert note.endswith("every other key is the config's")


@pytest.mark.graph
def test_preview_names_the_keys_a_recipe_sets_over_its_config(synth):
    r = synth("dev")
    (note,) = [i for i in r.infos if i.startswith("nemo-rl-gke:jobRecipe: recipe 'gemma3-27b-gsm8k' sets over")]
    assert "cluster.num_nodes 8 -> 2" in note and "policy.dtensor_cfg.tensor_parallel_size 4 -> 8" in note


@pytest.mark.graph
def test_a_config_larger_than_the_platforms_gpu_pools_is_refused_and_registers_nothing(synth):
    overrides = {**LLAMA, "config_path": MATH_8B, "cluster.num_nodes": 4}
    r = synth("dev", {"jobRecipe": "none", "jobOverrides": json.dumps(overrides)})
    assert r.error is not None and r.resources == []
    lines = [ln.strip()[2:] for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert lines == [
        "nemo-rl-gke:jobOverrides.cluster.num_nodes: the config needs cluster.num_nodes 4 GPU nodes but the platform's "
        "GPU pools scale to at most 2 (nemo-rl-gke:gpuNodes)"
    ]


@pytest.mark.graph
def test_a_bad_resolved_config_is_refused_through_the_engine_and_registers_nothing(synth):
    overrides = {**LLAMA, "config_path": MATH_8B, "policy.train_global_batch_size": 500}
    r = synth("dev", {"jobRecipe": "none", "jobOverrides": json.dumps(overrides)})
    assert r.error is not None and r.resources == [] and "Traceback" not in r.error
    lines = [ln.strip()[2:] for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith("nemo-rl-gke:jobOverrides.policy.train_global_batch_size: ")


@pytest.mark.graph
def test_idle_workers_of_a_config_run_as_written_point_at_the_configs_own_node_count(synth):
    r = synth("dev", {**AS_WRITTEN_DEV, "workerReplicas": 2})
    assert r.error is None, r.error
    (idle,) = [w for w in r.warnings if "sit idle" in w]
    assert idle.endswith('or raise nemo-rl-gke:jobOverrides["cluster.num_nodes"] to use them'), idle
