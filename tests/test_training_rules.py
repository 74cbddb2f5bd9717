"""Runs NeMo-RL would stop at start, refused or fixed before anything is created, against the releases' configs.

- v0.7.0's Policy asserts `policy.train_micro_batch_size == policy.logprob_batch_size` at tensor parallelism >= 4
  unless NRL_IGNORE_TP_ACCURACY_CHECK is set (nemo_rl/models/policy/lm_policy.py L178-195 at v0.7.0; the tp of the
  active backend, L115 / L162; loss_fn.force_on_policy_ratio sets the variable itself, grpo.py L429-437). NVIDIA's
  test script for the Gemma 3 27B config sets it (tests/test_suites/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-
  long.sh L5 at v0.7.0). v0.4.0 and v0.5.0 have no such check. The configs are read with each release's own loader.
"""

from __future__ import annotations

import json

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config

pytestmark = pytest.mark.unit

GEMMA = "gemma3-27b-gsm8k"
ENV = "NRL_IGNORE_TP_ACCURACY_CHECK"


def job(overrides: dict) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": GEMMA, "jobOverrides": overrides})


def loaded(tag: str, overrides: dict) -> tuple[dict, dict]:
    """(the config NeMo-RL `tag` runs with, the job's runtime env variables) for the rendered job."""
    release = NEMO_RL_RELEASES[tag]
    r = recipes.resolve_recipe(job(overrides), release)
    words = recipes.render_overrides(r, release, mount_path="/lustre", run_name="run")
    env = json.loads(recipes.runtime_env_yaml(r, mount_path="/lustre", release=release))["env_vars"]
    return nemo_rl_config(tag, r.config_path, words), env


def asserts_at_policy_init(config: dict, env: dict) -> bool:
    """lm_policy.py L178-184 at v0.7.0, on the loaded config and the job's environment."""
    policy = config["policy"]
    tp = (
        policy["megatron_cfg"]["tensor_model_parallel_size"]
        if policy["megatron_cfg"]["enabled"]
        else policy["dtensor_cfg"]["tensor_parallel_size"]
    )
    ignored = bool(env.get(ENV)) or config["loss_fn"].get("force_on_policy_ratio") is True
    return (
        not ignored
        and "logprob_batch_size" in policy
        and tp >= 4
        and (policy["train_micro_batch_size"] != policy["logprob_batch_size"])
    )


def test_the_gemma_recipe_passes_v070s_policy_check_as_nvidias_test_of_its_config_does():
    config, env = loaded("v0.7.0", {})
    assert (config["policy"]["dtensor_cfg"]["tensor_parallel_size"], config["policy"]["train_micro_batch_size"]) == (
        8,
        1,
    )
    assert config["policy"]["logprob_batch_size"] == 4
    assert env.get(ENV) == "1" and not asserts_at_policy_init(config, env)


def test_the_variable_is_rendered_only_where_the_release_checks_and_the_config_hits_it():
    assert ENV not in loaded("v0.5.0", {})[1]  # the tutorial's release: no check, the RayJob is unchanged
    config, env = loaded("v0.7.0", {"policy.logprob_batch_size": 1})
    assert ENV not in env and not asserts_at_policy_init(config, env)


@pytest.mark.parametrize(
    "overrides, accepted",
    [
        ({"ignore_tp_accuracy_check": False}, False),
        ({"ignore_tp_accuracy_check": False, "policy.logprob_batch_size": 1}, True),
        ({"ignore_tp_accuracy_check": False, "dtensor_tensor_parallel_size": 2}, True),
        (
            {"ignore_tp_accuracy_check": False, "loss_fn.force_on_policy_ratio": True, "train_global_batch_size": 1024},
            True,
        ),
    ],
)
def test_a_run_that_would_stop_at_policy_init_is_refused_in_one_line(overrides, accepted):
    try:
        config, env = loaded("v0.7.0", overrides)
    except recipes.RecipeError as e:
        assert not accepted
        assert len(e.problems) == 1 and e.problems[0].startswith("nemo-rl-gke:jobOverrides.ignore_tp_accuracy_check: ")
        assert "policy.train_micro_batch_size 1 != policy.logprob_batch_size 4" in e.problems[0]
        return
    assert accepted and not asserts_at_policy_init(config, env)


def test_another_config_does_not_inherit_the_recipes_acceptance():
    # A DTensor config of v0.7.0 with other batch sizes at the recipe's TP 8 is refused unless accepted again.
    path = "examples/configs/grpo_math_8B.yaml"
    with pytest.raises(recipes.RecipeError, match="stops at Policy init"):
        recipes.resolve_recipe(job({"config_path": path}), NEMO_RL_RELEASES["v0.7.0"])
    config, env = loaded("v0.7.0", {"config_path": path, "ignore_tp_accuracy_check": True})
    assert not asserts_at_policy_init(config, env)
    assert lookup(config, "policy.dtensor_cfg.tensor_parallel_size") == (True, 8)
