"""W&B: one W&B run per run across its attempts, and only project names wandb itself takes.

NeMo-RL calls `wandb.init(**logger.wandb, dir=log_dir)` (nemo_rl/utils/logger.py WandbLogger, v0.4.0 L172, v0.7.0
L209): without an `id` every attempt of a run (a preemption, a retry) opens a new W&B run. The oracle is wandb itself
(0.21.1, the version v0.4.0 and v0.5.0 lock): its Settings validate the project, the run id and the resume mode as
`wandb.init` does, and the configs come from the releases' own loader.
"""

from __future__ import annotations

import pytest
from wandb.errors import UsageError
from wandb.sdk.wandb_settings import Settings

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config

pytestmark = pytest.mark.unit

GEMMA, QWEN = "gemma3-27b-gsm8k", "qwen2.5-72b-deepscaler"


def wandb_accepts(**settings) -> bool:
    try:
        Settings(**settings)
    except UsageError:
        return False
    return True


def job(recipe: str, overrides: dict) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": recipe, "jobOverrides": overrides})


def wandb_section(recipe: str, overrides: dict, tag: str = "v0.5.0") -> dict:
    release = NEMO_RL_RELEASES[tag]
    j = job(recipe, overrides)
    r = recipes.resolve_recipe(j, release)
    run = recipes.default_run_name(j, "dev", release)
    words = recipes.render_overrides(r, release, mount_path="/lustre", run_name=run)
    return lookup(nemo_rl_config(tag, r.config_path, words), "logger.wandb")[1]


@pytest.mark.parametrize("tag", ["v0.5.0", "v0.7.0"])
def test_every_attempt_of_a_run_resumes_one_wandb_run(tag):
    first = wandb_section(GEMMA, {}, tag)
    assert first["resume"] == "allow" and wandb_accepts(run_id=first["id"], resume=first["resume"])
    assert wandb_section(GEMMA, {"save_period": 20}, tag)["id"] == first["id"]  # the same run, resubmitted
    assert wandb_section(GEMMA, {"policy.optimizer.kwargs.lr": 1e-7}, tag)["id"] != first["id"]  # a new run


def test_a_long_run_name_gives_an_id_wandb_takes():
    long = "r" * 100
    run_id = recipes.wandb_run_id(long)
    assert len(run_id) <= 64 and run_id != recipes.wandb_run_id("r" * 99) and wandb_accepts(run_id=run_id)


def test_a_run_without_wandb_renders_no_wandb_id():
    assert "id" not in wandb_section(QWEN, {}, "v0.4.0")


PROJECTS = ["grpo-lab", "a/b", "a\\b", "team#1", "why?", "100%", "a:b", "p" * 128, "p" * 129, "with space", "ünï"]


@pytest.mark.parametrize("project", PROJECTS)
def test_wandb_project_is_refused_exactly_where_wandb_refuses_it(project):
    refused = []
    try:
        recipes.resolve_recipe(job(GEMMA, {"wandb_project": project}), NEMO_RL_RELEASES["v0.5.0"])
    except recipes.RecipeError as e:
        refused = e.problems
    assert (not refused) == wandb_accepts(project=project), refused
    if refused:
        assert len(refused) == 1 and refused[0].startswith("nemo-rl-gke:jobOverrides.wandb_project: ")


@pytest.mark.parametrize("key", ["logger.wandb.id", "+logger.wandb.id", "+logger.wandb.resume"])
def test_the_wandb_run_id_is_the_programs(key):
    with pytest.raises(recipes.RecipeError, match="by the program"):
        recipes.resolve_recipe(job(GEMMA, {key: "x"}), NEMO_RL_RELEASES["v0.5.0"])
