"""Config values NeMo-RL would run with that break the job, pinned by the program where a config holds them.

Each case renders a job on a real shipped config and reads what the release's own loader makes of it
(tests/nemo_rl_oracle.py): the GSM8K files load as their only split, a timed-out run never ends like a finished one,
and checkpoints always keep the optimizer. A dotted jobOverrides entry for one of these keys is refused naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config
from tests.standin.grpo_trainer import StandInError, check_response_dataset

pytestmark = pytest.mark.unit

V070 = NEMO_RL_RELEASES["v0.7.0"]
GEMMA, QWEN = "gemma3-27b-gsm8k", "qwen2.5-72b-deepscaler"
# A 1-node layout for the small shipped configs (a model outside the catalog, pinned).
SMALL = {
    "model_name": "Qwen/Qwen2.5-1.5B-Instruct",
    "model_revision": "a" * 40,
    "model_params": 1_500_000_000,
    "num_nodes": 1,
    "colocated_generation": True,
    "generation_nodes": None,
    "generation_gpus_per_node": None,
    "vllm_tensor_parallel_size": 1,
}


def job(recipe: str, overrides: dict) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": recipe, "jobOverrides": overrides})


def nemo_rl_sees(recipe: str, overrides: dict, mount: str = "/lustre") -> dict:
    r = recipes.resolve_recipe(job(recipe, overrides), V070)
    words = recipes.render_overrides(r, V070, mount_path=mount, run_name="run")
    return nemo_rl_config(V070.tag, r.config_path, words)


def test_gsm8k_on_a_config_that_validates_on_the_test_split_loads_the_prepared_files(tmp_path):
    # v0.7.0 gdpo_math_1B.yaml keeps data.validation.split: test; the prepared JSONL files have the split `train` only.
    gdpo = {**SMALL, "config_path": "examples/configs/gdpo_math_1B.yaml", "dtensor_tensor_parallel_size": 1}
    config = nemo_rl_sees(GEMMA, gdpo, mount=str(tmp_path))
    assert lookup(config, "data.validation.split") == (True, "train")
    gsm8k = Path(recipes.gsm8k_paths(str(tmp_path))["dir"])  # where the data staging Job writes GSM8K
    gsm8k.mkdir(parents=True)
    for name in ("train.jsonl", "test.jsonl"):
        (gsm8k / name).write_text(json.dumps({"question": "1+1?", "answer": "2"}) + "\n")
    check_response_dataset(config)  # NeMo-RL's ResponseDataset path, as the stand-in trainer runs it
    # What the config alone would have given NeMo-RL:
    config["data"]["validation"]["split"] = "test"
    with pytest.raises(StandInError, match="KeyError 'test'"):
        check_response_dataset(config)


def test_a_config_without_a_split_renders_as_before():
    r = recipes.resolve_recipe(job(GEMMA, {}), V070)
    words = recipes.render_overrides(r, V070, mount_path="/lustre", run_name="run")
    assert not [w for w in words if ".split=" in w], words


DAPO = "examples/configs/recipes/llm/grpo-qwen3-8b-base-dapo-2n8g-long-megatron-qa-nvfp4-w4a16.yaml"


def test_a_config_that_stops_at_a_time_runs_without_the_timeout():
    # That config sets checkpoint_must_save_by 00:03:45:00: NeMo-RL would return from grpo_train at that time and
    # the job would take the partial run as trained.
    from core.recipes import config_tree

    assert config_tree.load(V070.tag, DAPO).lookup("checkpointing.checkpoint_must_save_by", resolved=True) == (
        True,
        "00:03:45:00",
    )
    dapo = {**SMALL, "config_path": DAPO, "num_nodes": 2, "model_name": "Qwen/Qwen3-8B-Base", "model_params": 8 * 10**9}
    config = nemo_rl_sees(QWEN, dapo)
    assert lookup(config, "checkpointing.checkpoint_must_save_by") == (True, None)


def test_checkpoints_keep_the_optimizer_on_every_config_of_the_release():
    assert lookup(nemo_rl_sees(GEMMA, {}), "checkpointing.save_optimizer") == (True, True)


@pytest.mark.parametrize(
    "key, value",
    [
        ("checkpointing.save_optimizer", False),
        ("checkpointing.checkpoint_must_save_by", "00:03:00:00"),
        ("data.validation.split", "test"),
        ("data.default.split", "test"),
    ],
)
def test_the_pinned_keys_are_refused_as_overrides_naming_them(key, value):
    with pytest.raises(recipes.RecipeError) as e:
        recipes.resolve_recipe(job(GEMMA, {key: value}), V070)
    assert [p for p in e.value.problems if f"jobOverrides.{key}: is " in p and "by the program" in p], e.value.problems
