"""A run resumes only from checkpoints it can load: the run name changes with what a resume cannot take.

- The dataloader: NeMo-RL restores its torchdata `StatefulDataLoader` from the checkpoint's `train_dataloader.pt`
  (nemo_rl/algorithms/grpo.py `setup`, v0.4.0 L252-264), built with `num_workers=data.num_workers`; the real
  torchdata 0.11.0 (every release's uv.lock) refuses a state saved with another worker count.
- The Megatron scheduler: NeMo-RL sets `policy.megatron_cfg.train_iters = min(max_num_steps, max_num_epochs x
  batches)` (grpo.py `setup`, v0.4.0 L478-484, v0.7.0 L815-823); Megatron-Bridge derives the scheduler's step counts
  from it (training/config.py at the v0.4.0 submodule commit 62f4704b, L776-786) and, on resume, Megatron-Core's
  `OptimizerParamScheduler.load_state_dict` asserts every saved value equal to the new one unless
  `override_opt_param_scheduler` (the new values win) or `use_checkpoint_opt_param_scheduler` (the saved ones win)
  is set (megatron/core/optimizer_param_scheduler.py `_check_and_set`, NVIDIA/Megatron-LM). The configs come from
  each release's own loader (tests/nemo_rl_oracle.py).
"""

from __future__ import annotations

import itertools

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import lookup, nemo_rl_config

QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"


def _job(recipe: str, overrides: dict) -> JobSettings:
    return JobSettings.model_validate({"jobRecipe": recipe, "jobOverrides": overrides})


def run_name(recipe: str, overrides: dict, tag: str) -> str:
    j = _job(recipe, overrides)
    release = NEMO_RL_RELEASES[tag]
    recipes.resolve_recipe(j, release)
    return recipes.default_run_name(j, "dev", release)


def nemo_rl_run_config(recipe: str, overrides: dict, tag: str) -> dict:
    """The config NeMo-RL `tag` runs with for the rendered job (its own loader, real hydra-core)."""
    release = NEMO_RL_RELEASES[tag]
    r = recipes.resolve_recipe(_job(recipe, overrides), release)
    words = recipes.render_overrides(r, release, mount_path="/lustre", run_name="run")
    return nemo_rl_config(tag, r.config_path, words)


# --- the dataloader's worker count ------------------------------------------------------------------------------
def torchdata_resumes(saved_with: int, resumed_with: int) -> bool:
    """Whether the real StatefulDataLoader takes a state saved with another worker count (as NeMo-RL resumes it).
    torch and torchdata are imported here, by the graph test that needs them, not at collection (seconds)."""
    import torch
    from torchdata.stateful_dataloader import StatefulDataLoader

    data = list(range(32))
    loader = StatefulDataLoader(data, batch_size=2, num_workers=saved_with)
    it = iter(loader)
    next(it)
    next(it)
    state = loader.state_dict()
    resumed = StatefulDataLoader(data, batch_size=2, num_workers=resumed_with)
    try:
        resumed.load_state_dict(state)
        batch = next(iter(resumed))
    except AssertionError:
        return False
    return bool(torch.equal(batch, torch.tensor([4, 5])))


@pytest.mark.graph
@pytest.mark.parametrize("recipe, tag", [(QWEN, "v0.4.0"), (GEMMA, "v0.5.0"), (GEMMA, "v0.7.0")])
def test_the_run_name_changes_exactly_when_torchdata_cannot_resume_the_dataloader(recipe, tag):
    default = lookup(nemo_rl_run_config(recipe, {}, tag), "data.num_workers")[1]
    counts = sorted({0, 1, 2, default})
    names = {n: run_name(recipe, {} if n == default else {"data.num_workers": n}, tag) for n in counts}
    for a, b in itertools.product(counts, repeat=2):
        assert (names[a] == names[b]) == torchdata_resumes(a, b), (a, b)


@pytest.mark.unit
def test_an_unchanged_worker_count_keeps_the_run_name_it_had():
    # The count is part of the identity only where it differs from the config's own, so deployed runs keep their names.
    assert run_name(GEMMA, {"data.num_workers": 1}, "v0.5.0") == run_name(GEMMA, {}, "v0.5.0")


# --- the Megatron scheduler's state --------------------------------------------------------------------------------
def scheduler_state(config: dict, batches_per_epoch: int) -> dict:
    """What Megatron-Core's OptimizerParamScheduler.state_dict() holds for this config (Megatron-Bridge
    training/config.py _calculate_scheduler_steps; optim.py _get_scheduler passes lr / min_lr from the optimizer)."""
    grpo, meg = config["grpo"], config["policy"]["megatron_cfg"]
    train_iters = min(grpo["max_num_steps"], grpo["max_num_epochs"] * batches_per_epoch)
    gbs = config["policy"]["train_global_batch_size"]
    sched, opt = meg["scheduler"], meg["optimizer"]
    decay_iters = sched.get("lr_decay_iters") or train_iters
    warmup = (
        sched["lr_warmup_fraction"] * decay_iters
        if sched.get("lr_warmup_fraction") is not None
        else sched["lr_warmup_iters"] * gbs
    )
    return {
        "max_lr": float(opt["lr"]),
        "min_lr": opt["min_lr"],
        "lr_warmup_steps": warmup,
        "lr_decay_steps": decay_iters * gbs,
        "lr_decay_style": sched["lr_decay_style"],
        "start_wd": sched["start_weight_decay"],
        "end_wd": sched["end_weight_decay"],
        "wd_incr_steps": train_iters * gbs,
        "wd_incr_style": sched["weight_decay_incr_style"],
    }


def scheduler_resumes(saved: dict, new: dict, batches_per_epoch: int) -> bool:
    """OptimizerParamScheduler._check_and_set over load_state_dict's values: the new run's flags decide."""
    sched = new["policy"]["megatron_cfg"]["scheduler"]
    if sched.get("override_opt_param_scheduler") or sched.get("use_checkpoint_opt_param_scheduler"):
        return True
    a, b = scheduler_state(saved, batches_per_epoch), scheduler_state(new, batches_per_epoch)
    return all(a[k] == b[k] for k in a)


# The batches of one epoch depend on the dataset, which the program does not read: one where the epochs bind, one
# where the steps do.
BATCHES_PER_EPOCH = (5, 10**6)


USE_CHECKPOINT = {"+policy.megatron_cfg.scheduler.use_checkpoint_opt_param_scheduler": True}
OVERRIDE = {"+policy.megatron_cfg.scheduler.override_opt_param_scheduler": True}
# Pairs of runs (before, after); the second resumes the first's checkpoints exactly when the run names are equal.
PAIRS = {
    "more steps": ({}, {"max_num_steps": 40}),
    "more epochs": ({}, {"grpo.max_num_epochs": 10}),
    "more steps, lr_decay_iters set but weight decay follows the steps": (
        {"policy.megatron_cfg.scheduler.lr_decay_iters": 500},
        {"policy.megatron_cfg.scheduler.lr_decay_iters": 500, "max_num_steps": 40},
    ),
    "more steps, checkpoint's schedule": (USE_CHECKPOINT, {**USE_CHECKPOINT, "max_num_steps": 40}),
    "more steps, schedule overridden, nothing depends on the steps": (OVERRIDE, {**OVERRIDE, "max_num_steps": 40}),
    "other periods": ({}, {"save_period": 20, "val_period": 20}),
}


@pytest.mark.unit
@pytest.mark.parametrize("tag", ["v0.4.0", "v0.5.0", "v0.7.0"])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_megatron_run_resumes_under_its_name_exactly_when_the_scheduler_state_loads(pair, tag):
    # The same name: the state loads whatever the dataset's size; another name: there is a dataset it does not load
    # with (a new run is never started for nothing).
    before, after = PAIRS[pair]
    same_name = run_name(QWEN, before, tag) == run_name(QWEN, after, tag)
    saved, new = nemo_rl_run_config(QWEN, before, tag), nemo_rl_run_config(QWEN, after, tag)
    loads = [scheduler_resumes(saved, new, b) for b in BATCHES_PER_EPOCH]
    assert same_name == all(loads), (pair, same_name, loads)


@pytest.mark.unit
def test_the_shipped_megatron_recipe_keeps_its_run_name():
    # The steps are part of a Megatron run's identity only where they differ from the recipe's own.
    assert run_name(QWEN, {"max_num_steps": 20}, "v0.5.0") == run_name(QWEN, {}, "v0.5.0")
