"""Open recipes: any key of the release's config, any GRPO config the release ships, W&B project and entity.

Oracle: what NeMo-RL's own loader (nemo-rl-reference/<tag>) with real hydra-core builds from the argv the real
/bin/sh hands to the entry script (tests/nemo_rl_oracle.py); the refusals are one line naming `jobOverrides.<key>`.
"""

from __future__ import annotations

import pytest

from core import catalog, recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config, script_calls, training_argv
from tests.sampling import sample, sampled

MOUNT, RUN = "/lustre", "run-1"
QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"


def job(name: str, overrides: dict) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": name, "jobOverrides": overrides})


def nemo_rl_sees(name: str, tag: str, overrides: dict) -> dict:
    """The config NeMo-RL `tag` runs with for this job: the rendered entrypoint through /bin/sh and the loader."""
    release = NEMO_RL_RELEASES[tag]
    recipe = recipes.resolve_recipe(job(name, overrides), release)
    argv = training_argv(recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN)))
    assert argv[3:6] == [release.grpo_entry, "--config", recipe.config_path]
    return nemo_rl_config(tag, recipe.config_path, argv[6:])


def refusal(name: str, tag: str, overrides: dict) -> list[str]:
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(job(name, overrides), NEMO_RL_RELEASES[tag])
    return e.value.problems


# --- any key of the release's config ---------------------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize(
    "name,tag,key,value,seen",
    [
        (GEMMA, "v0.5.0", "policy.optimizer.kwargs.lr", 1.0e-6, 1.0e-6),
        (GEMMA, "v0.5.0", "policy.optimizer.kwargs.lr", 1, 1.0),  # an integer for a float key stays a float
        # `pulumi config set --path` stores 2.0e-6 as the string "2.0e-6": a number for a number key.
        (GEMMA, "v0.5.0", "policy.optimizer.kwargs.lr", "2.0e-6", 2.0e-6),
        (GEMMA, "v0.5.0", "loss_fn.reference_policy_kl_penalty", 0.001, 0.001),
        (GEMMA, "v0.5.0", "policy.max_total_sequence_length", 4096, 4096),
        (GEMMA, "v0.5.0", "grpo.seed", 7, 7),
        (GEMMA, "v0.5.0", "policy.generation.top_k", 50, 50),  # null in the config
        (GEMMA, "v0.5.0", "policy.generation.stop_strings", ["</answer>", "###"], ["</answer>", "###"]),
        (QWEN, "v0.4.0", "policy.megatron_cfg.optimizer.lr", 2.0e-6, 2.0e-6),
        (QWEN, "v0.5.0", "loss_fn.ratio_clip_max", 0.28, 0.28),
    ],
)
def test_any_key_of_the_release_config_reaches_nemo_rl_with_the_configs_type(name, tag, key, value, seen):
    config = nemo_rl_sees(name, tag, {key: value})
    present, got = lookup(config, key)
    assert present and type(got) is type(seen) and got == seen


@pytest.mark.unit
def test_an_explicit_addition_reaches_nemo_rl():
    config = nemo_rl_sees(GEMMA, "v0.5.0", {"+policy.generation.vllm_kwargs.seed": 3})
    assert lookup(config, "policy.generation.vllm_kwargs.seed") == (True, 3)


@pytest.mark.unit
def test_an_interpolated_key_moves_with_its_source():
    # data.max_input_seq_length is ${policy.max_total_sequence_length} in grpo_math_1B.yaml: one override moves both.
    overrides = {"config_path": "examples/configs/grpo_math_1B.yaml", "policy.max_total_sequence_length": 2048}
    config = nemo_rl_sees(GEMMA, "v0.5.0", overrides)
    assert lookup(config, "data.max_input_seq_length") == (True, 2048)


@pytest.mark.unit
@pytest.mark.parametrize(
    "overrides,line",
    [
        (
            {"policy.optimizer.kwargs.learning_rate": 1e-6},
            "nemo-rl-gke:jobOverrides.policy.optimizer.kwargs.learning_rate: is not a key of "
            "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml (NeMo-RL v0.5.0); "
            "closest: policy.optimizer.kwargs.lr, ",
        ),
        ({"policy.optimizer.kwargs.lr": "fast"}, "'fast' is a string, but the config's value (3e-07) is a number"),
        ({"grpo.seed": 1.5}, "1.5 is a number, but the config's value (42) is an integer"),
        ({"+grpo.seed": 7}, "grpo.seed is already in"),
        ({"policy.optimizer": 1}, "is a section of"),
        ({"grpo.max_num_steps": 5}, "is rendered by the program from jobOverrides.max_num_steps; set that instead"),
        ({"checkpointing.checkpoint_dir": "/x"}, "is rendered by the program from runName"),
        ({"logger.wandb.project": "p"}, "from jobOverrides.wandb_project"),
        ({"policy.generation.temperature": "1'"}, "contains '"),
        ({"~policy.generation.top_k": None}, "deleting a key ('~') is not supported"),
    ],
)
def test_a_bad_config_key_or_value_is_refused_in_one_line_naming_it(overrides, line):
    (key,) = overrides
    problems = refusal(GEMMA, "v0.5.0", overrides)
    assert len(problems) == 1 and "\n" not in problems[0]
    assert problems[0].startswith(f"nemo-rl-gke:jobOverrides.{key}: ") and line in problems[0], problems


@pytest.mark.unit
def test_every_key_the_program_renders_names_its_setting():
    # A dotted override of a rendered key is refused naming the setting that decides it: the table must be complete.
    for name, recipe in recipes.RECIPES.items():
        for variant in (
            recipe,
            recipe.model_copy(update={"dataset": "DeepScaler" if recipe.dataset == "gsm8k" else "gsm8k"}),
        ):
            keys = recipes.hydra_overrides(variant, mount_path=MOUNT, run_name=RUN)
            assert set(keys) <= set(recipes.SETTING_OF_KEY), (name, set(keys) - set(recipes.SETTING_OF_KEY))


# --- any GRPO config the release ships -----------------------------------------------------------------------------
@pytest.mark.unit
def test_a_shipped_config_outside_the_catalog_runs_with_its_own_backend():
    # grpo_math_8B.yaml is shipped by every release and is a DTensor config; the Qwen recipe is Megatron.
    recipe = recipes.resolve_recipe(
        job(QWEN, {"config_path": "examples/configs/grpo_math_8B.yaml", "model_name": "Qwen/Qwen2.5-72B-Instruct"}),
        NEMO_RL_RELEASES["v0.5.0"],
    )
    assert recipe.train_backend == "dtensor" and recipe.converter_type is None
    config = nemo_rl_sees(QWEN, "v0.5.0", {"config_path": "examples/configs/grpo_math_8B.yaml"})
    assert lookup(config, "policy.megatron_cfg.enabled") == (True, False)
    assert lookup(config, "data.dataset_name") == (True, "DeepScaler")


@pytest.mark.unit
def test_a_recipe_config_of_the_release_runs_with_its_key_overrides():
    overrides = {
        "config_path": "examples/configs/recipes/llm/grpo-qwen2.5-7b-instruct-4n8g-megatron.yaml",
        "policy.megatron_cfg.optimizer.lr": 1.0e-6,
    }
    config = nemo_rl_sees(QWEN, "v0.5.0", overrides)
    assert lookup(config, "policy.megatron_cfg.optimizer.lr") == (True, 1.0e-6)
    assert lookup(config, "cluster.num_nodes") == (True, 8)


@pytest.mark.unit
@pytest.mark.parametrize(
    "config_path,line",
    [
        ("examples/configs/grpo_math_9B.yaml", "is not shipped by NeMo-RL v0.5.0"),
        ("examples/configs/dpo.yaml", "is not a GRPO config"),
        ("examples/configs/grpo_sliding_puzzle.yaml", "uses env.sliding_puzzle_game"),
        ("examples/configs/grpo_rm_1B.yaml", "uses env.reward_model"),
        ("examples/configs/vlm_grpo_3B.yaml", "vision-language"),
        ("/etc/passwd", "is not shipped"),
    ],
)
def test_a_config_the_release_does_not_ship_or_cannot_run_is_refused_naming_config_path(config_path, line):
    problems = refusal(GEMMA, "v0.5.0", {"config_path": config_path})
    assert len(problems) == 1 and problems[0].startswith("nemo-rl-gke:jobOverrides.config_path: "), problems
    assert line in problems[0]


@pytest.mark.unit
def test_a_backend_that_contradicts_the_config_is_refused():
    problems = refusal(GEMMA, "v0.5.0", {"train_backend": "megatron", "dtensor_tensor_parallel_size": None})
    assert problems == [
        "nemo-rl-gke:jobOverrides.train_backend: examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-"
        "actckpt-long.yaml (NeMo-RL v0.5.0) trains with dtensor (policy.megatron_cfg.enabled), not megatron; set "
        "nemo-rl-gke:jobOverrides.train_backend to dtensor"
    ]


# --- W&B ---------------------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_wandb_project_entity_and_name_reach_nemo_rls_wandb_section():
    config = nemo_rl_sees(
        GEMMA, "v0.5.0", {"wandb_project": "grpo-lab", "wandb_entity": "my-team", "wandb_name": "try-3"}
    )
    # NeMo-RL passes logger.wandb whole to wandb.init(**cfg) (nemo_rl/utils/logger.py WandbLogger).
    # The id and resume mode: one W&B run per run across its attempts (tests/test_wandb_runs.py).
    assert config["logger"]["wandb"] == {
        "project": "grpo-lab",
        "name": "try-3",
        "entity": "my-team",
        "id": RUN,
        "resume": "allow",
    }


@pytest.mark.unit
def test_the_wandb_run_name_follows_the_run_name_by_default():
    config = nemo_rl_sees(GEMMA, "v0.5.0", {})
    assert lookup(config, "logger.wandb.name") == (True, RUN)


# --- a model outside the catalog ----------------------------------------------------------------------------------
QWEN3_8B = {
    "model_name": "Qwen/Qwen3-8B",
    "model_revision": "b968826d9c46dd6066d109eabc6255188de91218",
    "model_params": 8_200_000_000,
    "config_path": "examples/configs/grpo_math_8B.yaml",
    "policy.optimizer.kwargs.lr": 2.0e-6,
}


@pytest.mark.graph
def test_a_model_outside_the_catalog_trains_on_a_shipped_config_with_its_own_learning_rate(synth):
    # The "done when", on the dev stack (NeMo-RL v0.5.0), through the program: no code edited.
    r = synth("dev", {"jobOverrides": QWEN3_8B})
    assert r.error is None, r.error
    entrypoint = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    (argv,) = [c for c in script_calls(entrypoint) if c[:4] == ["uv", "run", "python", "examples/run_grpo_math.py"]]
    assert argv[4:6] == ["--config", "examples/configs/grpo_math_8B.yaml"]
    config = nemo_rl_config("v0.5.0", "examples/configs/grpo_math_8B.yaml", argv[6:])
    snapshot = config["policy"]["model_name"]
    # The model and its tokenizer load from the prefetched snapshot of the pinned commit (the reference model is
    # built from policy.model_name too: nemo_rl/algorithms/grpo.py setup).
    assert snapshot.startswith("/lustre/") and QWEN3_8B["model_revision"] in snapshot
    assert config["policy"]["tokenizer"]["name"] == snapshot
    assert lookup(config, "policy.optimizer.kwargs.lr") == (True, 2.0e-6)


@pytest.mark.graph
@pytest.mark.parametrize(
    "drop,key",
    [("model_params", "jobOverrides.model_params"), ("model_revision", "jobOverrides.model_revision")],
)
def test_what_a_model_outside_the_catalog_lacks_is_refused_naming_the_setting(synth, drop, key):
    r = synth("dev", {"jobOverrides": {k: v for k, v in QWEN3_8B.items() if k != drop}})
    lines = [ln.strip()[2:] for ln in (r.error or "").splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith(f"nemo-rl-gke:{key}: "), r.error
    assert r.resources == []


# --- starting from another run's checkpoint -----------------------------------------------------------------------
@pytest.mark.graph
def test_job_start_from_links_that_checkpoint_into_the_new_runs_directory_before_training(synth):
    r = synth("dev", {"jobStartFrom": "gemma-first/step_40", "jobOverrides": {"policy.optimizer.kwargs.lr": 1e-7}})
    assert r.error is None, r.error
    script = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    run = r.outputs["runName"]
    line = (
        f"ls -d /lustre/checkpoints/{run}/step_* >/dev/null 2>&1 || "
        f"{{ rm -rf /lustre/checkpoints/{run}/.jobStartFrom.tmp; cp -a -l /lustre/checkpoints/gemma-first/step_40"
    )
    assert line in script and script.index(line) < script.index("uv run python")
    assert "cp -a -l" not in synth("dev").get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    # The start point is part of the run's identity: a directory with its own step_* never hides another start.
    other = synth("dev", {"jobStartFrom": "gemma-first/step_30", "jobOverrides": {"policy.optimizer.kwargs.lr": 1e-7}})
    plain = synth("dev", {"jobOverrides": {"policy.optimizer.kwargs.lr": 1e-7}})
    assert len({run, other.outputs["runName"], plain.outputs["runName"]}) == 3


@pytest.mark.graph
@pytest.mark.parametrize(
    "start, steps, line",
    [
        ("gemma-first/step_300", None, "starts at step 300, but the run stops at max_num_steps 300"),
        ("gemma-first/step_40", 40, "starts at step 40, but the run stops at max_num_steps 40"),
        ("gemma-first/step_040", None, "is not '<run name>/step_<N>'"),  # NeMo-RL writes step_40
        ("gemma-first/step_0", None, "is not '<run name>/step_<N>'"),  # the first checkpoint is step_1
    ],
)
def test_a_start_point_that_trains_nothing_or_that_nemo_rl_never_writes_is_refused(synth, start, steps, line):
    overrides = {"jobStartFrom": start, **({"jobOverrides": {"max_num_steps": steps}} if steps else {})}
    r = synth("dev", overrides)
    lines = [ln.strip()[2:] for ln in (r.error or "").splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith("nemo-rl-gke:jobStartFrom: ") and line in lines[0], r.error
    assert r.resources == []


# --- a config file of the user's own ------------------------------------------------------------------------------
MINE = "examples/configs/recipes/llm/grpo-gemma3-27b-mine.yaml"
MINE_TEXT = (
    "defaults: grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml\n"
    "grpo:\n  seed: 11\nloss_fn:\n  reference_policy_kl_penalty: 0.002\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A Pulumi project directory holding the user's file (the program reads jobConfigFiles' sources from it)."""
    from core.recipes import config_tree

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "mine.yaml").write_text(MINE_TEXT)
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", tmp_path)
    return tmp_path


def own_file_job(**overrides) -> JobSettings:
    return JobSettings.model_validate(
        {
            "jobRecipe": GEMMA,
            "jobConfigFiles": {MINE: "configs/mine.yaml"},
            "jobOverrides": {"config_path": MINE, **overrides},
        }
    )


@pytest.mark.unit
def test_a_users_config_file_is_installed_next_to_its_parent_and_read_by_nemo_rls_loader(project, tmp_path):
    release = NEMO_RL_RELEASES["v0.5.0"]
    recipe = recipes.resolve_recipe(own_file_job(**{"policy.optimizer.kwargs.lr": 1.0e-6}), release)
    assert recipe.config_files == {MINE: MINE_TEXT}
    # The install step, run for real: the ConfigMap's files under a scripts dir, the image's tree as workdir.
    import shutil
    import subprocess
    import sys

    from tests.standin import release_tree

    scripts, workdir = tmp_path / "scripts", tmp_path / "opt-nemo-rl"
    scripts.mkdir()
    shutil.copytree(release_tree("v0.5.0"), workdir)
    for key, text in recipes.user_config_files(recipe).items():
        (scripts / key).write_text(text)
    shutil.copy(recipes.pod_programs.DIR / "install_configs.py", scripts)
    paths = recipes.ImagePaths(workdir=str(workdir), scripts_dir=str(scripts))
    argv = recipes.install_configs_command(recipe, paths)
    assert argv[:3] == ["uv", "run", "python"]
    subprocess.run([sys.executable, *argv[3:]], check=True, timeout=60)
    assert (workdir / MINE).read_text() == MINE_TEXT
    # NeMo-RL's own loader on the installed tree, with the rendered overrides.
    words = recipes.render_overrides(recipe, release, mount_path=MOUNT, run_name=RUN)
    import contextlib

    from tests.nemo_rl_oracle import loader
    from tests.standin.grpo_trainer import load_nemo_rl_config

    with contextlib.chdir(workdir):
        config = load_nemo_rl_config(loader("v0.5.0"), MINE, words)
    assert config["grpo"]["seed"] == 11 and config["loss_fn"]["reference_policy_kl_penalty"] == 0.002
    assert config["policy"]["optimizer"]["kwargs"]["lr"] == 1.0e-6
    assert config["policy"]["dtensor_cfg"]["tensor_parallel_size"] == 8  # the parent's layout, via the recipe


@pytest.mark.unit
def test_a_users_config_file_is_validated_like_the_releases_own(project):
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(own_file_job(**{"grpo.sed": 1}), NEMO_RL_RELEASES["v0.5.0"])
    assert e.value.problems[0].startswith("nemo-rl-gke:jobOverrides.grpo.sed: is not a key of " + MINE)


@pytest.mark.unit
def test_the_users_file_ships_in_the_job_scripts_configmap_and_is_installed_before_training(project):
    release = NEMO_RL_RELEASES["v0.5.0"]
    recipe = recipes.resolve_recipe(own_file_job(), release)
    (key,) = recipes.user_config_files(recipe)
    assert key.startswith("user-config-") and key.endswith("-grpo-gemma3-27b-mine.yaml")
    script = recipes.job_script(recipe, release, recipes.EntrypointArgs(mount_path=MOUNT, run_name=RUN))
    install = script.index("install_configs.py")
    assert install < script.index("examples/run_grpo_math.py") and f"{key}={MINE}" in script


@pytest.mark.unit
@pytest.mark.parametrize(
    "files,line",
    [
        ({"configs/mine.yaml": "configs/mine.yaml"}, "the install path must be a .yaml path under examples/configs/"),
        ({"examples/configs/../x.yaml": "configs/mine.yaml"}, "the install path must be"),
        ({"examples/configs/grpo_math_1B.yaml": "configs/mine.yaml"}, "a release ships a file at this path"),
        ({MINE: "configs/missing.yaml"}, "cannot read 'configs/missing.yaml'"),
        ({MINE: "/etc/hostname"}, "must be a file of this Pulumi project"),
        ({MINE: "../outside.yaml"}, "must be a file of this Pulumi project"),
    ],
)
def test_a_bad_config_file_is_refused_naming_its_install_path(project, files, line):
    (install,) = files
    j = JobSettings.model_validate({"jobRecipe": GEMMA, "jobConfigFiles": files})
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(j, NEMO_RL_RELEASES["v0.5.0"])
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith(f"nemo-rl-gke:jobConfigFiles.{install}: ")
    assert line in e.value.problems[0]


@pytest.mark.unit
def test_a_file_whose_defaults_do_not_resolve_on_the_release_is_refused_naming_config_path(project):
    # v0.4.0/v0.5.0 resolve a parent's own defaults against the top file's directory: outside its parent's
    # directory the chain breaks (tests/test_config_tree.py proves it with NeMo-RL's loader).
    (project / "configs" / "far.yaml").write_text("defaults: ../grpo_math_8B.yaml\n")
    far = "examples/configs/mine/far.yaml"
    j = JobSettings.model_validate(
        {"jobRecipe": GEMMA, "jobConfigFiles": {far: "configs/far.yaml"}, "jobOverrides": {"config_path": far}}
    )
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(j, NEMO_RL_RELEASES["v0.5.0"])
    assert e.value.problems[0].startswith(
        "nemo-rl-gke:jobOverrides.config_path: " + far + " does not load on NeMo-RL v0.5.0"
    )


# --- v0.7.0 ------------------------------------------------------------------------------------------------------
@pytest.mark.graph
def test_the_dev_stack_on_v070_submits_run_grpo_with_the_train_validation_layout(synth):
    r = synth("dev", {"nemoRlRelease": "v0.7.0"})
    assert r.error is None, r.error
    entrypoint = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    (argv,) = [c for c in script_calls(entrypoint) if c[:4] == ["uv", "run", "python", "examples/run_grpo.py"]]
    config = nemo_rl_config("v0.7.0", argv[5], argv[6:])
    assert config["data"]["train"]["dataset_name"] == "ResponseDataset"
    # GSM8K as the data staging Job stages it: at its pinned commit of openai/gsm8k (core/catalog/hub.py).
    commit = catalog.DATASETS[catalog.GSM8K_REPO].revision
    assert config["data"]["validation"]["data_path"] == f"/lustre/datasets/gsm8k@{commit}/test.jsonl"


@pytest.mark.unit
@pytest.mark.parametrize(
    "name,key,value,instead",
    [
        (QWEN, "+policy.optimizer.kwargs.lr", 1e-6, "policy.megatron_cfg.optimizer.*"),  # Hydra takes it
        (GEMMA, "policy.megatron_cfg.optimizer.lr", 1e-6, "policy.optimizer.* / policy.scheduler.*"),
        # not only the optimizer: every key of the other backend's section but its `enabled`
        (GEMMA, "policy.megatron_cfg.tensor_model_parallel_size", 2, "policy.dtensor_cfg.*"),
        (GEMMA, "policy.megatron_cfg.scheduler.lr_warmup_iters", 5, "policy.optimizer.* / policy.scheduler.*"),
        (QWEN, "policy.dtensor_cfg.context_parallel_size", 2, "policy.megatron_cfg.*"),
        (QWEN, "policy.dtensor_cfg.activation_checkpointing", True, "policy.megatron_cfg.*"),
    ],
)
def test_a_key_only_the_other_backend_reads_is_refused(name, key, value, instead):
    problems = refusal(name, "v0.5.0", {key: value})
    assert len(problems) == 1 and problems[0].startswith(f"nemo-rl-gke:jobOverrides.{key}: the config trains with")
    assert instead in problems[0]


@pytest.mark.unit
def test_a_shipped_config_whose_shape_cannot_take_the_recipes_keys_is_refused_in_one_line():
    # v0.7.0's grpo_multiple_datasets.yaml lists several datasets under data.train: the dataset route's
    # data.train.* keys cannot apply (Hydra refuses a key under a list), so the refusal comes before submission.
    problems = refusal(GEMMA, "v0.7.0", {"config_path": "examples/configs/grpo_multiple_datasets.yaml"})
    assert len(problems) == 1 and problems[0].startswith("nemo-rl-gke:jobOverrides.config_path: ")
    assert (
        "cannot take data.train." in problems[0] and "jobOverrides.dataset picks a built-in one) renders" in problems[0]
    )


@pytest.mark.graph
@pytest.mark.xdist_group("nemo-rl-all-configs")  # one worker loads each config once for both (nemo_rl_oracle)
@pytest.mark.parametrize("tag", sorted(NEMO_RL_RELEASES))
def test_every_grpo_config_the_program_accepts_takes_the_rendered_job_in_nemo_rls_own_loader(tag):
    # Every shipped config the program accepts for a recipe: its rendered overrides are applied by the release's
    # own loader with real hydra-core (struct mode), each to its intended value. Measured at the time of writing:
    # 30 / 62 / 97 configs per release are accepted under the Gemma 3 recipe's layout (8 training GPUs beside a
    # vLLM node, 16 prompts x 64 generations). Refused: the Megatron configs whose TP x PP x CP does not divide those
    # 8 GPUs (11 / 17 / 26: NeMo-RL's Policy stops on them, core/recipes/fit.py); on v0.7.0 also
    # grpo_multiple_datasets.yaml (a list of datasets under data.train), the three eagle3 recipes (an unpinned draft
    # model), the DTensor configs whose micro and logprob batch sizes differ at the recipe's TP 8 (v0.7.0's Policy
    # asserts) and those whose global batch (2048) exceeds a step's 1024 rollouts.
    from core.recipes import config_tree

    release, accepted, failed = NEMO_RL_RELEASES[tag], 0, []
    for path in sample(config_tree.shipped_configs(tag)):  # all of them unless NEMO_RL_GKE_SAMPLE (tests/sampling.py)
        if recipes.runnable_problem(config_tree.load(tag, path)):
            continue
        try:
            recipe = recipes.resolve_recipe(job(GEMMA, {"config_path": path}), release)
        except recipes.RecipeError:
            continue
        accepted += 1
        words = recipes.render_overrides(recipe, release, mount_path=MOUNT, run_name=RUN)
        try:
            config = nemo_rl_config(tag, path, words)
        except Exception as e:  # noqa: BLE001 - the loader's own error is the finding
            failed.append((path, str(e).splitlines()[0]))
            continue
        assert lookup(config, "checkpointing.checkpoint_dir") == (True, f"{MOUNT}/checkpoints/{RUN}"), path
    assert failed == []
    if not sampled():
        assert accepted >= {"v0.4.0": 30, "v0.5.0": 62, "v0.7.0": 97}[tag]


@pytest.mark.unit
def test_a_config_that_loads_another_hub_artefact_unpinned_is_refused_until_it_is_off():
    # v0.7.0's eagle3 recipes turn on a speculative-decoding draft model NeMo-RL would load by name at the Hub's
    # current revision; the prefetch pins only the policy's model.
    path = "examples/configs/recipes/llm/grpo-qwen3-1.7b-1n4g-megatron-eagle3.yaml"
    problems = refusal(QWEN, "v0.7.0", {"config_path": path})
    assert len(problems) == 1 and problems[0].startswith("nemo-rl-gke:jobOverrides.config_path: ")
    assert "policy.draft.model_name ('AngelSlim/Qwen3-1.7B_eagle3') from the Hub unpinned" in problems[0]
    # With the draft off, vLLM still starts speculative decoding with that drafter (speculative_config.model
    # interpolates policy.draft.model_name): refused naming the key that turns it off.
    problems = refusal(QWEN, "v0.7.0", {"config_path": path, "policy.draft.enabled": False})
    assert len(problems) == 1 and "policy.generation.vllm_kwargs.speculative_config to null" in problems[0]
    assert "drafter 'AngelSlim/Qwen3-1.7B_eagle3' loaded from the Hub unpinned" in problems[0]
    off = {"policy.draft.enabled": False, "policy.generation.vllm_kwargs.speculative_config": None}
    config = nemo_rl_sees(QWEN, "v0.7.0", {"config_path": path, **off})
    assert lookup(config, "policy.draft.enabled") == (True, False)
    assert lookup(config, "policy.generation.vllm_kwargs.speculative_config") == (True, None)
    problems = refusal(QWEN, "v0.7.0", {"config_path": "examples/configs/grpo_math_1B.yaml", "+x.y": 1, "grpo.nope": 2})
    assert all("Traceback" not in p for p in problems) and len(problems) == 1  # '+x.y' is a legal addition
