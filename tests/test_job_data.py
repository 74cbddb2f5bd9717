"""jobData offline: its rules (one line naming the key), the keys it renders in each release's layout as NeMo-RL's own
loader reads them (tests/nemo_rl_oracle.py, the releases' real configs), the run's fingerprint, and the datasets
environments the staging tests run in (tests/datasets_envs.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core import catalog, data, recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests import datasets_envs
from tests.nemo_rl_oracle import nemo_rl_config

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
TAGS = sorted(NEMO_RL_RELEASES)
QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"
RECIPE_OF = {"v0.4.0": QWEN, "v0.5.0": GEMMA, "v0.7.0": GEMMA}
MOUNT, RUN = "/lustre", "run-1"
COMMIT = "c" * 40
HUB = {"dataset": "acme/math-rl", "revision": COMMIT, "inputKey": "problem", "outputKey": "answer"}
GCS = {"dataset": "gs://acme-data/rl/val.jsonl", "inputKey": "q", "outputKey": "a"}


def job(name: str, job_data, **extra) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": name, "jobData": job_data, **extra})


def resolve(tag: str, job_data, overrides=None):
    return recipes.resolve_recipe(job(RECIPE_OF[tag], job_data, jobOverrides=overrides or {}), NEMO_RL_RELEASES[tag])


# --- the rules ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw,key,says",
    [
        ([1], "jobData", "must be an object"),
        ({"validation": {"dataset": "acme/x", "revision": COMMIT}}, "jobData.train", "is required"),
        ({"train": {"dataset": "acme/x", "revision": COMMIT}, "test": {}}, "jobData.test", "not a part of jobData"),
        ({"train": {"dataset": "acme/x"}}, "jobData.train.revision", "needs the 40-hex commit"),
        ({"train": {"dataset": "acme/x", "revision": "main"}}, "jobData.train.revision", "is not a commit hash"),
        ({"train": {"dataset": "acme/x", "revision": COMMIT, "colum": "x"}}, "jobData.train.colum", "not a field"),
        ({"train": {"dataset": "s3://b/x.jsonl"}}, "jobData.train.dataset", "neither a Hub dataset id"),
        ({"train": {"dataset": "gs://B/x.jsonl"}}, "jobData.train.dataset", "is not gs://<bucket>"),
        ({"train": {"dataset": "gs://b-1/a/../x.jsonl"}}, "jobData.train.dataset", "no '..'"),
        ({"train": {"dataset": "gs://b-1/x.txt"}}, "jobData.train.dataset", "neither a prefix nor a file"),
        ({"train": {"dataset": "gs://b-1/x.jsonl", "revision": COMMIT}}, "jobData.train.revision", "Hub dataset only"),
        ({"train": {"dataset": "gs://b-1/x.jsonl", "split": "test"}}, "jobData.train.split", "Hub dataset only"),
        ({"train": {"dataset": "gs://b-1/x.jsonl", "files": "*.jsonl"}}, "jobData.train.files", "a single file"),
        ({"train": {"dataset": "gs://b-1/d/", "files": "*.txt"}}, "jobData.train.files", "must end in one of"),
        ({"train": {"dataset": "gs://b-1/d/", "files": "../*.jsonl"}}, "jobData.train.files", "not a relative glob"),
        ({"train": {**HUB, "split": "test", "files": "x/*.jsonl"}}, "jobData.train.split", "not both"),
        (
            {"train": HUB, "validation": {"dataset": "acme/math-rl", "revision": COMMIT}},
            "jobData.validation.split",
            "validation split",
        ),
        ({"train": {**HUB, "inputKey": "messages"}}, "jobData.train.inputKey", "changes what NeMo-RL"),
        ({"train": {**HUB, "outputKey": "problem"}}, "jobData.train.outputKey", "same column as inputKey"),
        ({"train": {**HUB, "inputKey": "my prompt"}}, "jobData.train.inputKey", "is not a column name"),
        ({"train": {"dataset": "/lustre/../etc/x.jsonl"}}, "jobData.train.dataset", "no '..'"),
    ],
)
def test_a_bad_job_data_is_one_line_naming_its_key(raw, key, says):
    spec, problems = data.parse(raw, MOUNT)
    assert spec is None and len(problems) == 1, problems
    assert problems[0].startswith(f"nemo-rl-gke:{key}: ") and says in problems[0], problems[0]


def test_a_lustre_dataset_lies_under_the_stacks_mount_outside_the_staged_copies():
    for path, ok in (("/lustre/team/train.jsonl", True), ("/data/train.jsonl", False), ("/lustre/datasets/x/", False)):
        spec, problems = data.parse({"train": {"dataset": path}}, None)
        assert problems == [] and spec is not None
        found = data.lustre_problems(spec, MOUNT)
        assert (found == []) is ok, found
        if not ok:
            assert found[0].startswith("nemo-rl-gke:jobData.train.dataset: ") and "lustreMountPath" in found[0]


def test_job_data_and_a_built_in_dataset_together_are_refused_naming_both():
    with pytest.raises(recipes.RecipeError) as e:
        resolve("v0.5.0", {"train": HUB, "validation": GCS}, {"dataset": "DeepScaler"})
    assert e.value.problems == [
        "nemo-rl-gke:jobOverrides.dataset: nemo-rl-gke:jobData names the data the job trains on; remove one of them"
    ]


@pytest.mark.parametrize("tag", ["v0.4.0", "v0.5.0"])
def test_a_flat_release_that_validates_needs_validation_data(tag):
    # NeMo-RL asserts a validation dataset when grpo.val_period > 0 (nemo_rl/algorithms/grpo.py `setup`); the config of
    # each recipe validates every 10 steps.
    with pytest.raises(recipes.RecipeError) as e:
        resolve(tag, {"train": HUB})
    [line] = e.value.problems
    assert line.startswith("nemo-rl-gke:jobData.validation: the run validates") and "val_period" in line
    # ... and without validation, none is needed.
    assert resolve(
        tag, {"train": HUB}, {"val_period": 0, "+grpo.val_at_start": False} if tag == "x" else {"val_period": 0}
    )


# --- what the training command says, as each release's loader reads it ----------------------------------------------
@pytest.mark.parametrize("tag", TAGS)
def test_the_rendered_keys_point_each_releases_response_dataset_at_the_staged_files(tag):
    spec_raw = {"train": HUB, "validation": GCS}
    recipe = resolve(tag, spec_raw)
    release = NEMO_RL_RELEASES[tag]
    words = recipes.render_overrides(recipe, release, mount_path=MOUNT, run_name=RUN)
    d = nemo_rl_config(tag, recipe.config_path, words)["data"]
    staged = data.staged(recipe.data, tag, MOUNT)
    if release.flat_data:
        assert (d["dataset_name"], d["train_data_path"], d["val_data_path"]) == (
            "ResponseDataset",
            staged.train,
            staged.validation,
        )
        assert (d["input_key"], d["output_key"], d["train_split"], d["val_split"]) == (
            "problem",
            "answer",
            "train",
            "train",
        )
    else:
        # Each entry its own keys: data.default fills only what an entry lacks, and the base data.train names
        # OpenMathInstruct-2 with a 5 % validation share.
        assert d["train"]["dataset_name"] == d["validation"]["dataset_name"] == "ResponseDataset"
        assert (d["train"]["data_path"], d["validation"]["data_path"]) == (staged.train, staged.validation)
        assert d["train"]["split_validation_size"] == 0 and d["train"]["split"] == d["validation"]["split"] == "train"
        assert (d["train"]["input_key"], d["validation"]["output_key"]) == ("problem", "answer")
        assert d["default"]["env_name"] == "math"  # where v0.7.0 finds the environment for a dict entry
        # The task name v0.7.0 derives from the path's last two components, cut at the first '.', names the dataset.
        assert "-".join(staged.train.split("/")[-2:]).split(".")[0] == staged.dir.rsplit("/", 1)[1] + "-train"
    # Nothing of jobData is a Hub id in the command: every data path is a staged file on Lustre.
    assert not [w for w in words if "acme" in w]


def test_the_run_fingerprint_names_the_dataset_and_its_revision():
    rel = NEMO_RL_RELEASES["v0.5.0"]
    fp = lambda raw: recipes.checkpoint_fingerprint(resolve("v0.5.0", raw), rel)  # noqa: E731
    base = {"train": HUB, "validation": GCS}
    assert fp(base) == fp(json.loads(json.dumps(base)))
    assert fp(base) != fp({**base, "train": {**HUB, "revision": "d" * 40}})
    assert fp(base) != fp({**base, "train": {**HUB, "dataset": "acme/other"}})
    assert fp(base) != fp({**base, "validation": {**GCS, "dataset": "gs://acme-data/rl/val2.jsonl"}})
    identity = recipes.run_identity(resolve("v0.5.0", base), rel)
    assert identity["data"]["train"]["dataset"] == "acme/math-rl" and identity["data"]["train"]["revision"] == COMMIT


@pytest.mark.parametrize("name,tag", [(QWEN, "v0.4.0"), (QWEN, "v0.7.0"), (GEMMA, "v0.5.0")])
def test_the_built_in_datasets_and_their_commits_are_in_the_run_identity(name, tag):
    recipe = recipes.resolve_recipe(JobSettings.model_validate({"jobRecipe": name}), NEMO_RL_RELEASES[tag])
    identity = recipes.run_identity(recipe, NEMO_RL_RELEASES[tag])
    if name == QWEN:
        assert identity["datasets"] == {
            "agentica-org/DeepScaleR-Preview-Dataset": catalog.DATASETS[
                "agentica-org/DeepScaleR-Preview-Dataset"
            ].revision,
            "HuggingFaceH4/aime_2024": catalog.DATASETS["HuggingFaceH4/aime_2024"].revision,
        }
    else:
        assert identity["datasets"] == {"openai/gsm8k/main": catalog.DATASETS["openai/gsm8k"].revision}


@pytest.mark.parametrize("tag", TAGS)
def test_the_job_reads_the_built_in_loaders_from_the_staged_cache_offline(tag):
    recipe = recipes.resolve_recipe(JobSettings.model_validate({"jobRecipe": QWEN}), NEMO_RL_RELEASES[tag])
    env = recipes.runtime_env(recipe, mount_path=MOUNT, release=NEMO_RL_RELEASES[tag])["env_vars"]
    loads = recipes.recipe_dataset_loads(recipe, NEMO_RL_RELEASES[tag])
    assert env["HF_DATASETS_OFFLINE"] == "1"
    assert env["HF_DATASETS_CACHE"] == data.builtin_cache_dir(loads, tag, MOUNT)
    # A cache of its own per library version and pins: another release's build is never taken for this one.
    others = {data.builtin_cache_dir(loads, t, MOUNT) for t in TAGS}
    assert len(others) == len(TAGS)


# --- the environments the staging tests run in are the releases' ------------------------------------------------------
@pytest.mark.parametrize("tag", TAGS)
def test_each_datasets_environment_pins_what_the_releases_image_runs(tag):
    pin = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)$", re.M)
    wanted = dict(pin.findall((datasets_envs.REQUIREMENTS / f"{tag}.txt").read_text()))
    image = dict(pin.findall((ROOT / "tests" / "oracles" / "nemo_rl_environment" / f"{tag}.txt").read_text()))
    assert wanted["datasets"] == catalog.DATASETS_LIBRARY[tag]
    # Every package the image's environment lists is at its version; the others are fsspec's `http` extra (aiohttp and
    # its dependencies), which that list leaves out by construction (its header says so).
    assert {n: wanted[n] for n in wanted if n in image} == {n: image[n] for n in wanted if n in image}
    extra = {"aiohappyeyeballs", "aiohttp", "aiosignal", "frozenlist", "multidict", "propcache", "yarl"}
    assert set(wanted) - set(image) <= extra


# --- a config run as written (jobRecipe none) ---------------------------------------------------------------------
MATH_8B = "examples/configs/grpo_math_8B.yaml"
# The config's own gated Llama-3.1-8B-Instruct at a commit (tests/test_as_written.py has its sources).
LLAMA = {
    "config_path": MATH_8B,
    "model_revision": "0e9e39f249a16976918f6564b8830bc894c89659",
    "model_params": 8 * 10**9,
}


@pytest.mark.parametrize("tag", TAGS)
def test_a_config_run_as_written_reads_job_data_through_responsedataset_and_its_own_data_pinned_otherwise(tag):
    release = NEMO_RL_RELEASES[tag]
    spec_raw = {"train": HUB, "validation": GCS}
    mine = recipes.resolve_recipe(job("none", spec_raw, jobOverrides=LLAMA), release)
    words = recipes.render_overrides(mine, release, mount_path=MOUNT, run_name=RUN)
    d = nemo_rl_config(tag, MATH_8B, words)["data"]
    staged = data.staged(mine.data, tag, MOUNT)
    if release.flat_data:
        assert (d["dataset_name"], d["train_data_path"], d["val_data_path"]) == (
            "ResponseDataset",
            staged.train,
            staged.validation,
        )
    else:
        assert (d["train"]["data_path"], d["validation"]["data_path"]) == (staged.train, staged.validation)
    # Preview names the staged data's keys among those the program sets, not as the config's.
    [line] = recipes.override_report(mine, release, mount_path=MOUNT, run_name=RUN)
    assert f"={staged.train!r}" in line
    # Without jobData the config's own dataset (OpenMathInstruct-2 in grpo_math_8B.yaml) is a built-in loader: staged at
    # its pinned commit and read offline, never at the Hub's main.
    own = recipes.resolve_recipe(job("none", None, jobOverrides=LLAMA), release)
    assert recipes.recipe_dataset_loads(own, release) == [("nvidia/OpenMathInstruct-2", None)]
    assert recipes.run_identity(own, release)["datasets"] == {
        "nvidia/OpenMathInstruct-2": catalog.DATASETS["nvidia/OpenMathInstruct-2"].revision
    }


def test_the_keys_job_data_renders_are_the_ones_the_program_claims():
    spec, _ = data.parse({"train": HUB, "validation": GCS}, MOUNT)
    for tag in TAGS:
        assert set(data.hydra_keys(spec, tag, NEMO_RL_RELEASES[tag].flat_data, MOUNT)) <= data.HYDRA_KEYS
