"""Job recipes: checks naming their config key, deterministic, readable and shell-safe rendering, the seeds'
values, a secret-free runtime env, and the GSM8K preparation program (run against an offline `datasets`).

What NeMo-RL makes of the rendered overrides (real configs, real loader, real hydra-core) is checked in
test_nemo_rl_configs.py; here the rendered words are read with hydra-core's own override parser."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core import catalog, data, recipes
from core.catalog import NEMO_RL_RELEASES, NEMO_RL_WORKDIR
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import parsed_overrides
from tests.standin import fake_datasets
from workloads import job_scripts as scripts

pytestmark = pytest.mark.unit

V040, V050, V070 = (NEMO_RL_RELEASES[t] for t in ("v0.4.0", "v0.5.0", "v0.7.0"))
QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"
HOME_RELEASE = {QWEN: V040, GEMMA: V050}  # the release each seed ran
MOUNT = "/lustre"


def job(**config) -> JobSettings:
    return JobSettings.model_validate(config)


def problems(config: dict, *, release=V050, workers=2, gpus=8, stack="dev") -> list[str]:
    return recipes.check_job(
        job(**config), release=release, worker_replicas=workers, gpus_per_node=gpus, stack_name=stack
    )


def rendered(name: str, overrides=None, run_name="run-1") -> dict:
    """Rendered Hydra overrides as hydra-core reads them: key (with '+' when it adds the key) -> value."""
    release = HOME_RELEASE[name]
    recipe = recipes.resolve_recipe(job(jobRecipe=name, jobOverrides=overrides or {}), release)
    args = recipes.render_args(recipe, release, mount_path=MOUNT, run_name=run_name)
    out = {("+" if o.is_add() else "") + o.key_or_group: o.value() for o in parsed_overrides(args[3:])}
    return {"entry": args[0], "config": args[2], **out}


# --- checks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [QWEN, GEMMA])
def test_each_builtin_recipe_fits_the_cluster_its_seed_used(name):
    recipe = recipes.RECIPES[name]
    assert problems({"jobRecipe": name}, release=HOME_RELEASE[name], workers=recipe.num_nodes) == []


def test_default_recipe_is_gemma_and_fits_the_default_two_workers():
    assert recipes.recipe_name(job()) == GEMMA
    assert problems({}) == []


CONTRADICTIONS = [
    (
        "num_nodes above worker replicas",
        {"jobRecipe": GEMMA, "jobOverrides": {"num_nodes": 10}},
        {},
        "nemo-rl-gke:jobOverrides.num_nodes: 10 nodes (recipe 'gemma3-27b-gsm8k') but only 2 GPU workers "
        "(nemo-rl-gke:workerReplicas)",
    ),
    (
        "recipe nodes above worker replicas",
        {"jobRecipe": QWEN},
        {"release": V040},
        "nemo-rl-gke:jobRecipe: 8 nodes (recipe 'qwen2.5-72b-deepscaler') but only 2 GPU workers",
    ),
    (
        "GPU type with other than 8 GPUs",
        {},
        {"gpus": 4},
        "nemo-rl-gke:jobRecipe: 8 GPUs per node but the GPU type has 4 (nemo-rl-gke:gpuType)",
    ),
    (
        "gpus_per_node overridden away from the catalog",
        {"jobOverrides": {"gpus_per_node": 4}},
        {},
        "nemo-rl-gke:jobOverrides.gpus_per_node: 4 GPUs per node but the GPU type has 8",
    ),
    (
        "gemma config on v0.4.0",
        {"jobRecipe": GEMMA},
        {"release": V040},
        "nemo-rl-gke:jobRecipe: config 'examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long"
        ".yaml' of recipe 'gemma3-27b-gsm8k' is not shipped by NeMo-RL v0.4.0 (nemo-rl-gke:nemoRlRelease)",
    ),
    (
        "config path overridden to one no release ships",
        {"jobOverrides": {"config_path": "examples/configs/nope.yaml"}},
        {},
        "nemo-rl-gke:jobOverrides.config_path: config 'examples/configs/nope.yaml'",
    ),
    (
        "a key of v0.4.0/v0.5.0's flat data layout on v0.7.0",
        {"jobOverrides": {"data.prompt_file": "examples/prompts/cot.txt"}},
        {"release": V070},
        "nemo-rl-gke:jobOverrides.data.prompt_file: is not a key of examples/configs/recipes/llm/grpo-gemma3-27b-it-"
        "8n4g-fsdp2tp4-actckpt-long.yaml (NeMo-RL v0.7.0); closest: data.default.prompt_file",
    ),
    (
        "generation on every node",
        {"jobOverrides": {"generation_nodes": 2}},
        {},
        "nemo-rl-gke:jobOverrides.generation_nodes: non-colocated generation on 2 of num_nodes=2 node(s) leaves no "
        "node for training",
    ),
    (
        "single node with non-colocated generation",
        {"jobOverrides": {"num_nodes": 1}},
        {},
        "nemo-rl-gke:jobOverrides.num_nodes: non-colocated generation on 1 of num_nodes=1 node(s) leaves no node",
    ),
    (
        "non-colocated generation without generation nodes",
        {"jobOverrides": {"generation_nodes": None}},
        {},
        "nemo-rl-gke:jobOverrides.generation_nodes: non-colocated generation needs generation_nodes",
    ),
    (
        "generation nodes with colocated generation",
        {"jobRecipe": QWEN, "jobOverrides": {"generation_nodes": 1}},
        {"release": V040, "workers": 8},
        "nemo-rl-gke:jobOverrides.generation_nodes: generation_nodes only applies to non-colocated generation",
    ),
    (
        "vLLM tensor parallelism not dividing the GPUs",
        {"jobOverrides": {"vllm_tensor_parallel_size": 3}},
        {},
        "nemo-rl-gke:jobOverrides.vllm_tensor_parallel_size: vLLM TP 3 x PP 1 = 3 does not divide the 8 generation "
        "GPUs",
    ),
    (
        "DTensor tensor parallelism not dividing the training GPUs",
        {"jobOverrides": {"dtensor_tensor_parallel_size": 16}},
        {},
        "nemo-rl-gke:jobOverrides.dtensor_tensor_parallel_size: the 8 training GPUs are not a multiple of TP 16 x PP 1 "
        "x CP 1 = 16",
    ),
    (
        "Megatron converter on the DTensor backend",
        {"jobOverrides": {"converter_type": "Qwen2ForCausalLM"}},
        {},
        "nemo-rl-gke:jobOverrides.converter_type: converter_type applies to the Megatron backend, not dtensor",
    ),
    (
        "checkpoints without optimizer state",
        {"jobOverrides": {"save_optimizer": False}},
        {},
        "nemo-rl-gke:jobOverrides.save_optimizer: the rendered run always checkpoints the optimizer state",
    ),
    (
        "unknown override field",
        {"jobOverrides": {"max_steps": 5}},
        {},
        "nemo-rl-gke:jobOverrides.max_steps: is not a recipe field; did you mean 'max_num_steps'?",
    ),
    (
        "override of the wrong type",
        {"jobOverrides": {"max_num_steps": "many"}},
        {},
        "nemo-rl-gke:jobOverrides.max_num_steps: max_num_steps: Input should be a valid integer",
    ),
    (
        "override out of range",
        {"jobOverrides": {"save_period": 0}},
        {},
        "nemo-rl-gke:jobOverrides.save_period: save_period: Input should be greater than or equal to 1",
    ),
    (
        "override of the recipe name",
        {"jobOverrides": {"name": "x"}},
        {},
        "nemo-rl-gke:jobOverrides.name: the recipe is chosen with nemo-rl-gke:jobRecipe",
    ),
    ("jobOverrides not an object", {"jobOverrides": "[1, 2]"}, None, None),
    (
        "unknown recipe",
        {"jobRecipe": "gemma3-27b-gsm8"},
        {},
        "nemo-rl-gke:jobRecipe: unknown recipe 'gemma3-27b-gsm8'; valid: gemma3-27b-gsm8k, qwen2.5-72b-deepscaler, "
        "none (a config as written); did you mean 'gemma3-27b-gsm8k'?",
    ),
    ("run name with a slash", {"runName": "a/b"}, {}, "nemo-rl-gke:runName: 'a/b' is not usable as a directory"),
    ("run name climbing up", {"runName": "..x"}, {}, "nemo-rl-gke:runName: '..x' is not usable"),
    ("run name with a space", {"runName": "my run"}, {}, "nemo-rl-gke:runName: 'my run' is not usable"),
    ("empty run name", {"runName": ""}, {}, "nemo-rl-gke:runName: '' is not usable"),
    ("run name with a trailing newline", {"runName": "run\n"}, {}, "nemo-rl-gke:runName: 'run\\n' is not usable"),
]


@pytest.mark.parametrize("config,kw,expected", [c[1:] for c in CONTRADICTIONS], ids=[c[0] for c in CONTRADICTIONS])
def test_contradictory_job_settings_are_rejected_naming_the_config_key(config, kw, expected):
    if kw is None:  # not even a JSON object: pydantic refuses the field itself (settings reports it)
        with pytest.raises(Exception, match="jobOverrides"):
            job(**config)
        return
    found = problems(config, **kw)
    assert any(p.startswith(expected) for p in found), found
    assert all(p.startswith("nemo-rl-gke:") and "\n" not in p for p in found), found


def test_resolve_recipe_raises_the_same_problems_check_job_reports():
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(job(jobRecipe=GEMMA, jobOverrides={"converter_type": "Qwen2ForCausalLM"}), V040)
    assert [p.split(":")[1] for p in e.value.problems] == ["jobOverrides.converter_type", "jobRecipe"]


def test_disabled_job_is_not_checked_against_cluster_or_release():
    assert problems({"jobEnabled": False, "jobRecipe": QWEN}, release=V070, workers=0, gpus=4) == []
    assert problems({"jobEnabled": False, "jobRecipe": "nope"})[0].startswith("nemo-rl-gke:jobRecipe: unknown")


@pytest.mark.parametrize(
    "values, required",
    [
        ({"jobRecipe": GEMMA}, True),
        ({"jobRecipe": GEMMA, "jobOverrides": {"wandb_enabled": False}}, False),
        ({"jobRecipe": QWEN, "gpuNodes": 8, "nemoRlRelease": "v0.4.0"}, False),
        ({"jobRecipe": GEMMA, "jobEnabled": False}, False),
    ],
)
def test_wandb_key_is_required_exactly_when_the_job_logs_to_wandb(values, required):
    from core.settings import SettingsError, load_settings

    try:
        load_settings("dev", "example-project", values=values, secret_state={"hfToken": "secret"})
        problems = []
    except SettingsError as e:
        problems = e.problems
    assert (
        any(p.startswith("nemo-rl-gke:wandbApiKey: the recipe logs to Weights & Biases") for p in problems) == required
    ), problems


def test_job_overrides_given_as_pulumi_json_string_are_parsed():
    assert job(jobOverrides='{"max_num_steps": 7}').overrides == {"max_num_steps": 7}
    assert recipes.resolve_recipe(job(jobOverrides='{"max_num_steps": "7"}'), V050).max_num_steps == 7


# --- rendering ----------------------------------------------------------------------------------------
def test_rendering_is_deterministic_whatever_the_override_order():
    a = job(jobOverrides={"max_num_steps": 5, "save_period": 1, "wandb_name": "w"})
    b = job(jobOverrides={"wandb_name": "w", "save_period": 1, "max_num_steps": 5})
    ra, rb = recipes.resolve_recipe(a, V050), recipes.resolve_recipe(b, V050)

    def ep(r):
        return recipes.entrypoint(r, V050, recipes.EntrypointArgs(mount_path=MOUNT, run_name="r"))

    assert ep(ra) == ep(rb) == ep(recipes.resolve_recipe(a, V050))
    keys = list(recipes.hydra_overrides(ra, mount_path=MOUNT, run_name="r"))
    assert keys == sorted(keys)


# Strings Hydra keeps as the same string without quotes: rendered bare, as the entrypoint's reader sees them.
BARE = [
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
]
# Strings Hydra would read bare as another type (null, bool, int, float, list, sweep) or refuse.
NOT_STRINGS_BARE = [
    "null",
    "NULL",
    "true",
    "True",
    "FALSE",
    "inf",
    "NaN",
    "123",
    "1_000",
    "a=b",
    "a,b",
    "[x]",
    "f(x)",
    "~x",
    "it's",
    "ünï",
    "run\n",
]
# Strings Hydra would read bare unchanged, but outside the deliberately narrow bare class (a leading digit or sign,
# a word Python reads as a number, characters the shell or a reader could take otherwise).
QUOTED_BY_CHOICE = ["Infinity", "7b", "-x", "+x", "two words", "a:b", "gs://b/c", "$HOME", "a*b", ""]


def hydra_reads_bare(value: str):
    """What hydra-core makes of `value` written bare as an override value (an exception if it refuses it)."""
    try:
        return parsed_overrides([f"k={value}"])[0].value()
    except Exception as e:  # hydra.errors.OverrideParseException
        return e


@pytest.mark.parametrize("value", BARE)
def test_plain_strings_render_bare_and_hydra_reads_them_back(value):
    assert recipes.hydra_value(value) == value
    assert hydra_reads_bare(value) == value


@pytest.mark.parametrize("value", NOT_STRINGS_BARE)
def test_strings_hydra_would_read_as_another_value_render_quoted(value):
    bare = hydra_reads_bare(value)
    assert not (isinstance(bare, str) and bare == value)  # the oracle: bare would not be this string
    rendered_value = recipes.hydra_value(value)
    assert rendered_value.startswith("'") and rendered_value.endswith("'")
    assert parsed_overrides([f"k={rendered_value}"])[0].value() == value


@pytest.mark.parametrize("value", QUOTED_BY_CHOICE)
def test_strings_outside_the_bare_class_render_quoted(value):
    rendered_value = recipes.hydra_value(value)
    assert rendered_value.startswith("'") and rendered_value.endswith("'")
    assert parsed_overrides([f"k={rendered_value}"])[0].value() == value


def test_interpolation_syntax_is_refused_rather_than_resolved():
    recipe = recipes.RECIPES[QWEN].model_copy(update={"wandb_name": "${oc.env:HF_TOKEN}"})
    with pytest.raises(ValueError, match="interpolation"):
        recipes.render_args(recipe, V040, mount_path=MOUNT, run_name="r")


@pytest.mark.parametrize("name", [QWEN, GEMMA])
def test_entrypoint_survives_kuberay_submit_command_line(name):
    # KubeRay's submitter runs `bash -ce "... ray job submit ... -- <entrypoint> ; ..."` and the Ray CLI
    # re-joins the words after `--` with shlex.join: emulate both and compare with what Ray runs via the SDK.
    release = HOME_RELEASE[name]
    ep = recipes.entrypoint(recipes.RECIPES[name], release, recipes.EntrypointArgs(mount_path=MOUNT, run_name="r"))
    ray_cli = (
        f'{shlex.quote(sys.executable)} -c \'import shlex, sys; assert sys.argv[1] == "--"; '
        f"print(shlex.join(sys.argv[2:]))'"
    )
    out = subprocess.run(
        ["bash", "-ce", f"{ray_cli} -- {ep} ; echo submitted"], capture_output=True, text=True, check=True
    ).stdout
    rejoined, tail = out.rsplit("\n", 2)[0], out.rsplit("\n", 2)[1]
    assert tail == "submitted"
    assert shlex.split(rejoined) == shlex.split(ep)


@pytest.mark.parametrize("name", [QWEN, GEMMA])
def test_entrypoint_creates_checkpoint_dir_then_runs_nemo_rl_from_its_workdir(name):
    release, recipe = HOME_RELEASE[name], recipes.RECIPES[name]
    script = shlex.split(
        recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path="/lustre/", run_name="r"))
    )[2]
    lines = [shlex.split(line) for line in script.splitlines()]
    assert lines[:3] == [["set", "-eu"], ["mkdir", "-p", "/lustre/checkpoints/r"], ["cd", NEMO_RL_WORKDIR]]
    assert lines[-1][:5] == ["exec", "uv", "run", "python", release.grpo_entry]
    # The datasets are on Lustre before the RayJob exists (the data staging Job): no data step here. A Megatron run
    # checks for an interrupted weight conversion right before training (tests/test_megatron_import_guard.py), in a
    # conversion directory of its own, exported first (commands.py MEGATRON_DIR_ENV).
    own = recipes.megatron_run_dir("/lustre/", "r")
    guard = recipes.megatron_guard_command(
        recipe.model_name,
        own=own,
        shared=recipes.megatron_shared_dir("/lustre/"),
        hf_overrides_hash=recipes.megatron_hf_overrides_hash(recipe, release),
    )
    megatron = recipe.train_backend == "megatron"
    export = [["export", f"{recipes.MEGATRON_DIR_ENV}={own}"]] if megatron else []
    assert lines[3:-1] == export + ([guard] if megatron else [])


@pytest.mark.parametrize("name", [QWEN, GEMMA])
def test_entrypoint_reads_as_one_plain_command_per_line(name):
    # What a reviewer of `pulumi preview` sees: no inlined program, no nested quoting, every override key=value.
    release, recipe = HOME_RELEASE[name], recipes.RECIPES[name]
    run = recipes.default_run_name(job(jobRecipe=name), "dev", release)
    ep = recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path=MOUNT, run_name=run))
    sh, dash_c, script = shlex.split(ep)
    assert ep == f"sh -c '{script}'"  # one pair of quotes around the script, none inside it
    assert not set("'\"\\$`") & set(script)
    assert "'\"'\"'\"'\"'" not in ep and "import " not in ep and "load_dataset" not in ep
    lines = script.split("\n")
    # set -eu, mkdir, cd, training; a Megatron run's conversion directory and its guard.
    assert len(lines) == 4 + 2 * (recipe.train_backend == "megatron")
    for line in lines:
        words = shlex.split(line)
        assert words and " ".join(words) == line and not any("\n" in w for w in words), line
    words = lines[-1].split(" ")
    assert f"checkpointing.checkpoint_dir={MOUNT}/checkpoints/{run}" in words
    assert f"policy.model_name={recipe.model_name}" in words
    assert f"logger.wandb.name={run}" in words
    if recipe.dataset == "gsm8k":
        assert "data.dataset_name=ResponseDataset" in words
        assert f"+data.train_data_path={recipes.gsm8k_paths(MOUNT)['train']}" in words
        assert "+data.input_key=question" in words
    else:
        assert "data.dataset_name=DeepScaler" in words


def test_checkpoint_dir_is_the_run_name_on_lustre_and_stable_across_resubmissions():
    # The default run name ends with the fingerprint of what makes a checkpoint incompatible (
    # tests/test_checkpoint_runs.py checks both directions).
    j, rel = job(jobRecipe=QWEN), HOME_RELEASE[QWEN]
    fp = recipes.checkpoint_fingerprint(recipes.RECIPES[QWEN], rel)
    assert (
        recipes.default_run_name(j, "dev", rel)
        == recipes.default_run_name(j, "dev", rel)
        == f"qwen2.5-72b-deepscaler-dev-{fp}"
    )
    assert recipes.default_run_name(job(runName="exp7"), "dev", rel) == "exp7"
    gemma_fp = recipes.checkpoint_fingerprint(recipes.RECIPES[GEMMA], HOME_RELEASE[GEMMA])
    assert (
        recipes.default_run_name(job(), "team/prod stack", HOME_RELEASE[GEMMA])
        == f"gemma3-27b-gsm8k-team-prod-stack-{gemma_fp}"
    )
    assert recipes.default_run_name(job(), "a...b", HOME_RELEASE[GEMMA]) == f"gemma3-27b-gsm8k-a.b-{gemma_fp}"
    values = rendered(QWEN, run_name="qwen2.5-72b-deepscaler-dev")
    assert values["checkpointing.checkpoint_dir"] == "/lustre/checkpoints/qwen2.5-72b-deepscaler-dev"
    assert values["logger.log_dir"] == "/lustre/logs/qwen2.5-72b-deepscaler-dev"


def test_qwen_recipe_reproduces_the_codelab_run():
    # the codelab's run_nemo_rl.sh, except checkpoint every 10 steps (the codelab's 2 saves at steps without
    # validation, NVIDIA-NeMo/RL #1137; docs/operations.md "How the codelab recipe differs from the codelab")
    v = rendered(QWEN)
    assert v["entry"] == "examples/run_grpo_math.py"
    assert v["config"] == "examples/configs/grpo_math_70B_megatron.yaml"
    assert {
        k: v[k]
        for k in (
            "policy.model_name",
            "policy.megatron_cfg.converter_type",
            "logger.wandb_enabled",
            "cluster.num_nodes",
            "cluster.gpus_per_node",
            "grpo.max_num_steps",
            "grpo.num_generations_per_prompt",
            "grpo.num_prompts_per_step",
            "policy.train_global_batch_size",
            "checkpointing.enabled",
            "checkpointing.save_period",
            "checkpointing.keep_top_k",
            "checkpointing.metric_name",
            "data.dataset_name",
        )
    } == {
        "policy.model_name": "Qwen/Qwen2.5-72B-Instruct",
        "policy.megatron_cfg.converter_type": "Qwen2ForCausalLM",
        "logger.wandb_enabled": False,
        "cluster.num_nodes": 8,
        "cluster.gpus_per_node": 8,
        "grpo.max_num_steps": 20,
        "grpo.num_generations_per_prompt": 8,
        "grpo.num_prompts_per_step": 32,
        "policy.train_global_batch_size": 256,
        "checkpointing.enabled": True,
        "checkpointing.save_period": 10,
        "checkpointing.keep_top_k": 2,
        "checkpointing.metric_name": None,
        "data.dataset_name": "DeepScaler",
    }
    assert v["logger.wandb.name"] == "run-1"
    assert not any(k.startswith("+") or "colocated" in k for k in v)


def test_gemma_recipe_reproduces_the_tutorial_run_on_prepared_gsm8k():
    # the GKE tutorial's gemma3-27b-gsm8k.sh, with GSM8K read from Lustre instead of the patched hub loader
    v = rendered(GEMMA)
    assert v["entry"] == "examples/run_grpo_math.py"
    assert v["config"] == "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml"
    expected = {
        "cluster.num_nodes": 2,
        "cluster.gpus_per_node": 8,
        "grpo.max_num_steps": 300,
        "data.dataset_name": "ResponseDataset",
        "+data.input_key": "question",
        "+data.output_key": "answer",
        # GSM8K at the catalog's commit of openai/gsm8k, as the data staging Job writes it.
        "+data.train_data_path": f"/lustre/datasets/gsm8k@{catalog.DATASETS['openai/gsm8k'].revision}/train.jsonl",
        "+data.val_data_path": f"/lustre/datasets/gsm8k@{catalog.DATASETS['openai/gsm8k'].revision}/test.jsonl",
        "+data.train_split": "train",
        "+data.val_split": "train",
        "logger.tensorboard_enabled": False,
        "logger.wandb_enabled": True,
        "grpo.num_prompts_per_step": 16,
        "grpo.num_generations_per_prompt": 64,
        "policy.generation.colocated.enabled": False,
        "policy.generation.colocated.resources.num_nodes": 1,
        "policy.generation.colocated.resources.gpus_per_node": 8,
        "policy.generation.vllm_cfg.tensor_parallel_size": 8,
        "policy.generation.vllm_cfg.gpu_memory_utilization": 0.9,
        "policy.dtensor_cfg.tensor_parallel_size": 8,
        "policy.model_name": "google/gemma-3-27b-it",
        "checkpointing.enabled": True,
        "checkpointing.save_period": 10,
        "checkpointing.keep_top_k": 3,
    }
    assert {k: v[k] for k in expected} == expected


def test_job_overrides_reach_the_rendered_overrides():
    v = rendered(GEMMA, {"max_num_steps": 4, "save_period": 2, "num_prompts_per_step": 8})
    assert (v["grpo.max_num_steps"], v["checkpointing.save_period"], v["grpo.num_prompts_per_step"]) == (4, 2, 8)


def test_runtime_env_and_job_carry_no_secret(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_canary_7f3a")
    monkeypatch.setenv("WANDB_API_KEY", "wandb_canary_91c2")
    for name in (QWEN, GEMMA):
        recipe, release = recipes.RECIPES[name], HOME_RELEASE[name]
        env = recipes.runtime_env(recipe, mount_path=MOUNT)
        assert set(env) == {"env_vars"}
        assert env["env_vars"]["HF_HOME"] == "/lustre/huggingface_cache"
        assert env["env_vars"]["RAY_OVERRIDE_JOB_RUNTIME_ENV"] == "1"
        assert env["env_vars"]["NCCL_SOCKET_IFNAME"] == env["env_vars"]["GLOO_SOCKET_IFNAME"] == "eth0"
        assert not [k for k in env["env_vars"] if re.search(r"TOKEN|KEY|SECRET|PASSW|CRED", k, re.I)]
        blob = json.dumps(
            [
                env,
                recipes.runtime_env_yaml(recipe, mount_path=MOUNT),
                recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path=MOUNT, run_name="r")),
                recipes.job_metadata(recipe, run_name="r", stack_name="dev"),
            ]
        )
        assert "canary" not in blob and "HF_TOKEN" not in blob and "WANDB_API_KEY" not in blob


def test_runtime_env_yaml_is_the_runtime_env():
    import yaml

    recipe = recipes.RECIPES[GEMMA]
    text = recipes.runtime_env_yaml(recipe, mount_path=MOUNT)
    assert yaml.safe_load(text) == recipes.runtime_env(recipe, mount_path=MOUNT)
    assert text == recipes.runtime_env_yaml(recipe, mount_path=MOUNT)


# --- GSM8K preparation --------------------------------------------------------------------------------
def install_scripts(root: Path) -> Path:
    """`scripts.job_scripts()` written under `root`, as the ConfigMap volume holds them under SCRIPTS_DIR."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.job_scripts().items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run_prep(
    tmp_path: Path,
    mount: Path,
    fake_dir: Path,
    calls: Path,
    *,
    hf_home: bool = True,
) -> subprocess.CompletedProcess:
    """Run the data staging Job's program on the GSM8K recipe's plan (core.data.staging_plan: GSM8K only, no built-in
    loader), with the scripts from job_scripts() and the Job's HF_HOME (`uv run python` is NeMo-RL's Python; here the
    test's, with the offline `datasets` stand-in)."""
    plan = data.staging_plan(None, tag="v0.5.0", mount_path=str(mount), builtins=[], gsm8k=True)
    script = install_scripts(tmp_path / "scripts") / recipes.STAGE_DATA_SCRIPT
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_TOKEN_PATH")}
    env.update(PYTHONPATH=str(fake_dir), **{fake_datasets.CALLS_ENV: str(calls)})
    if hf_home:
        env["HF_HOME"] = recipes.runtime_env(recipes.RECIPES[GEMMA], mount_path=str(mount))["env_vars"]["HF_HOME"]
    return subprocess.run(
        [sys.executable, str(script), "--plan", json.dumps(plan)], env=env, capture_output=True, text=True, timeout=60
    )


def test_job_scripts_are_the_same_for_every_stack_and_take_paths_from_argv():
    files = scripts.job_scripts()
    assert set(files) == {
        recipes.GSM8K_SCRIPT,
        recipes.STAGE_DATA_SCRIPT,
        recipes.GATE_SCRIPT,
        recipes.GATE_MODULE,
        "prefetch_hf.py",
        "prefetch-requirements.txt",
        "export_checkpoints.py",
        recipes.MEGATRON_GUARD_SCRIPT,
        recipes.ATTEMPTS_SCRIPT,
        recipes.USER_CONFIGS_SCRIPT,
        "stage_weights.py",
        "lustre_import.py",
    }
    assert files == scripts.job_scripts()
    for name, text in files.items():
        # The mount path as a path (neither a module such as pod_programs/lustre_import.py nor a URL's host is one).
        assert not re.search(r"(?<![\w./])/lustre\b", text), name
        assert "huggingface_cache" not in text and recipes.SCRIPTS_DIR not in text, name
        if name.endswith(".py"):
            compile(text, name, "exec")
    a = data.staging_plan(None, tag="v0.5.0", mount_path="/lustre", builtins=[], gsm8k=True)
    b = data.staging_plan(None, tag="v0.5.0", mount_path="/mnt/other/", builtins=[], gsm8k=True)
    commit = catalog.DATASETS["openai/gsm8k"].revision
    assert (a["gsm8k"]["dir"], b["gsm8k"]["dir"]) == (
        f"/lustre/datasets/gsm8k@{commit}",
        f"/mnt/other/datasets/gsm8k@{commit}",
    )


def test_gsm8k_prep_writes_response_dataset_jsonl_once(tmp_path):
    fake = fake_datasets.install(tmp_path / "fake")
    mount, calls = tmp_path / "lustre", tmp_path / "calls.jsonl"
    first = run_prep(tmp_path, mount, fake, calls)
    assert first.returncode == 0, first.stderr
    paths = recipes.gsm8k_paths(str(mount))

    def read(p):
        return [json.loads(line) for line in Path(p).read_text(encoding="utf-8").splitlines()]

    train, test = read(paths["train"]), read(paths["validation"])
    assert [(r["answer"], set(r)) for r in train] == [
        ("72", {"question", "answer"}),
        ("10", {"question", "answer"}),
        ("3000", {"question", "answer"}),
    ]
    assert train[2]["question"] == fake_datasets.SAMPLE_GSM8K["train"][2]["question"]
    assert [r["answer"] for r in test] == ["18"]
    assert json.loads(Path(paths["marker"]).read_text()) == {"train": 3, "test": 1}
    assert sorted(os.listdir(paths["dir"])) == ["_SUCCESS", "test.jsonl", "train.jsonl"]
    # At the catalog's pinned commit, never the Hub's `main`.
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        {
            "path": "openai/gsm8k",
            "name": "main",
            "revision": catalog.DATASETS["openai/gsm8k"].revision,
            "hf_home": f"{mount}/huggingface_cache",
        }
    ]

    stamps = {n: os.stat(os.path.join(paths["dir"], n)).st_mtime_ns for n in os.listdir(paths["dir"])}
    second = run_prep(tmp_path, mount, fake, calls)
    assert second.returncode == 0 and "already prepared" in second.stdout, second.stderr
    assert len(calls.read_text().splitlines()) == 1
    assert {n: os.stat(os.path.join(paths["dir"], n)).st_mtime_ns for n in os.listdir(paths["dir"])} == stamps


def test_gsm8k_prep_fails_without_marker_on_a_row_missing_its_final_answer(tmp_path):
    bad = {"train": [{"question": "q?", "answer": "#### 1"}], "test": [{"question": "q", "answer": "no final line"}]}
    fake = fake_datasets.install(tmp_path / "fake", bad)
    mount = tmp_path / "lustre"
    result = run_prep(tmp_path, mount, fake, tmp_path / "calls")
    # A problem with the data: one line, and the exit code the Job fails at once on (no retry).
    assert result.returncode == 3 and "test row 0" in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert not os.path.exists(recipes.gsm8k_paths(str(mount))["marker"])
    assert not os.path.exists(recipes.gsm8k_paths(str(mount))["train"])  # nothing written before all rows passed


def test_gsm8k_prep_without_hf_home_is_a_one_line_error(tmp_path):
    fake = fake_datasets.install(tmp_path / "fake")
    mount, calls = tmp_path / "lustre", tmp_path / "calls.jsonl"
    result = run_prep(tmp_path, mount, fake, calls, hf_home=False)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.strip() == "stage_data: HF_HOME is not set; the Job sets it to the cache on Lustre"
    assert not calls.exists() and not mount.exists()  # nothing downloaded into a default cache


def test_the_staging_program_refuses_a_missing_or_malformed_plan(tmp_path):
    script = install_scripts(tmp_path / "scripts") / recipes.STAGE_DATA_SCRIPT
    for argv, line in (
        ([], "usage: stage_data.py --plan '<json>'"),
        (["--plan"], "usage: stage_data.py --plan '<json>'"),
        (["--plan", "{"], "--plan is not JSON"),
        (["--plan", '{"version": 99}'], "--plan is not a version 1 staging plan"),
    ):
        result = subprocess.run(
            [sys.executable, str(script), *argv],
            env={**os.environ, "HF_HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert result.returncode == 1, argv
        assert result.stderr.strip() == f"stage_data: {line}"
    assert sorted(os.listdir(tmp_path)) == ["scripts"]
