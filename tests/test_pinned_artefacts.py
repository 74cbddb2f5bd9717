"""Every artefact a recipe's config loads by name is the one the prefetch pinned.

Oracle: the releases' real GRPO configs (nemo-rl-reference, copies of NVIDIA-NeMo/RL examples/configs at the
commits in its SOURCES.md) loaded with NeMo-RL's own loader and hydra-core (tests/nemo_rl_oracle.py). The scan
finds every key whose value names a Hub repository (`<org>/<name>`) or whose name says it names a model, tokenizer
or dataset; each must be classified in core.catalog.NEMO_RL_HUB_KEYS, so a key a new release or config adds cannot
be missed silently. Then each built-in recipe is rendered with a prefetched model path and loaded the way its
release loads it: every "model" key must be that path (NeMo-RL v0.5.0's Gemma 3 recipe sets
`policy.tokenizer.name: google/gemma-3-27b-it` literally, so overriding policy.model_name alone loaded the
tokenizer and chat template from the Hub at `main`, online and gated).
"""

from __future__ import annotations

import json
import re

import pytest

from core import catalog, data, prefetch, recipes
from tests.nemo_rl_oracle import lookup, nemo_rl_config

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
ARTEFACT_KEY = re.compile(
    r"(model_name|tokenizer\.name|name_or_path|dataset_name|data_path|reward_model|"
    r"reference_model|repo_id|_dir)$"
)
MOUNT, RUN = "/lustre", "run-1"


def _leaves(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, node


def _configs():
    return [(tag, cfg) for tag, rel in sorted(catalog.NEMO_RL_RELEASES.items()) for cfg in sorted(rel.configs)]


@pytest.mark.unit
@pytest.mark.parametrize("tag,config_path", _configs())
def test_every_key_that_names_an_artefact_in_the_real_configs_is_classified(tag, config_path):
    config = nemo_rl_config(tag, config_path, [])
    found = {k for k, v in _leaves(config) if (isinstance(v, str) and HUB_ID.fullmatch(v)) or ARTEFACT_KEY.search(k)}
    assert {"policy.model_name", "policy.tokenizer.name"} <= found  # the scan sees what it must
    unclassified = sorted(found - set(catalog.NEMO_RL_HUB_KEYS))
    assert not unclassified, (
        f"{tag} {config_path}: keys naming a model, tokenizer, dataset or path that "
        f"core.catalog.NEMO_RL_HUB_KEYS does not classify: {unclassified}"
    )


def _recipe_runs():
    for name, recipe in sorted(recipes.RECIPES.items()):
        for tag, rel in sorted(catalog.NEMO_RL_RELEASES.items()):
            if recipe.config_path in rel.configs:
                yield name, tag


@pytest.mark.unit
@pytest.mark.parametrize("name,tag", list(_recipe_runs()))
def test_the_rendered_run_loads_every_artefact_from_what_the_prefetch_pinned(name, tag):
    recipe = recipes.RECIPES[name]
    plan = prefetch.plan(model_name=recipe.model_name, revision=recipe.model_revision, mount_path=MOUNT)
    release = catalog.NEMO_RL_RELEASES[tag]
    staging = data.staging_plan(
        None,
        tag=tag,
        mount_path=MOUNT,
        builtins=recipes.recipe_dataset_loads(recipe, release),
        gsm8k=recipe.dataset == "gsm8k",
    )
    words = recipes.render_overrides(
        recipe, catalog.NEMO_RL_RELEASES[tag], mount_path=MOUNT, run_name=RUN, model_path=plan.model_path
    )
    config = nemo_rl_config(tag, recipe.config_path, words)
    for k, (kind, _) in catalog.NEMO_RL_HUB_KEYS.items():
        present, value = lookup(config, k)
        if not present:
            continue
        if kind == "model":
            assert value == plan.model_path, f"{k} = {value!r}: not the pinned snapshot {plan.model_path}"
        elif kind == "disabled":
            assert value is None, f"{k} = {value!r}"
        elif kind == "local":
            assert str(value).startswith(MOUNT + "/"), f"{k} = {value!r}"
        elif kind == "dataset":
            if value == "ResponseDataset":
                # The flat layout names both files next to data.dataset_name; v0.7.0 one per dataset section.
                flat = ("data.train_data_path", "data.val_data_path")
                for path_key in flat if k == "data.dataset_name" else (k.replace("dataset_name", "data_path"),):
                    assert lookup(config, path_key)[1].startswith(MOUNT + "/"), path_key
            else:
                # A built-in loader: the Hub datasets it reads are all in the staging Job's cache, at the catalog's
                # commits (the job reads that cache offline: core.data.training_env).
                cached = {(d["repo_id"], d["config"], d["revision"]) for d in staging["builtin"]["datasets"]}
                for repo, config in catalog.BUILTIN_DATASET_LOADS[tag][value]:
                    assert (repo, config, catalog.DATASETS[repo].revision) in cached, (k, value, repo)


@pytest.mark.unit
def test_without_the_prefetch_the_tokenizer_still_follows_the_model():
    recipe = recipes.RECIPES["gemma3-27b-gsm8k"].model_copy(update={"model_name": "acme/other-model"})
    config = nemo_rl_config(
        "v0.5.0",
        recipe.config_path,
        recipes.render_overrides(recipe, catalog.NEMO_RL_RELEASES["v0.5.0"], mount_path=MOUNT, run_name=RUN),
    )
    assert lookup(config, "policy.tokenizer.name") == (True, "acme/other-model")


@pytest.mark.graph
def test_the_gsm8k_staging_is_at_the_catalogs_commit_and_the_entrypoint_prepares_nothing(synth):
    # GSM8K is prepared by the data staging Job (pod_programs/prepare_gsm8k.py through stage_data.py) at the catalog's
    # commit of openai/gsm8k, with or without the weights prefetch; the RayJob's entrypoint has no data step.
    for overrides in ({}, {"prefetchWeights": "false"}):
        r = synth("dev", overrides)
        plan = json.loads(
            r.get("kubernetes:batch/v1:Job", "data-staging").inputs["spec"]["template"]["spec"]["containers"][0][
                "command"
            ][-1]
        )
        assert plan["gsm8k"]["revision"] == catalog.DATASETS["openai/gsm8k"].revision
        entry = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").inputs["spec"]["entrypoint"]
        assert recipes.GSM8K_SCRIPT not in entry and recipes.STAGE_DATA_SCRIPT not in entry
