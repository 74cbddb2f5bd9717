"""Checkpoint sizing: the seed recipes' numbers, budget suggestions, disk warnings, unknown models."""

import pytest

from core import sizing

pytestmark = pytest.mark.unit

QWEN = "Qwen/Qwen2.5-72B-Instruct"  # 72.7e9 parameters (catalog.MODEL_PARAMS)
GEMMA = "google/gemma-3-27b-it"  # 27.4e9 parameters

GIB = 1024**3


def size(model=QWEN, *, capacity_gib=9_000, tier=1000, keep_top_k=3, budget_seconds=None, save_optimizer=True):
    return sizing.size_checkpoints(
        sizing.CheckpointInputs(
            model,
            save_optimizer=save_optimizer,
            capacity_gib=capacity_gib,
            tier=tier,
            keep_top_k=keep_top_k,
            budget_seconds=budget_seconds,
        )
    )


def kwargs(**kw):
    base = dict(save_optimizer=True, capacity_gib=9_000, tier=1000, keep_top_k=3, budget_seconds=None)
    base.update(kw)
    return base


def test_bytes_per_param_is_2_for_weights_and_14_with_optimizer():
    # bf16 weights 2 B; optimizer: fp32 master 4 B + Adam m 4 B + Adam v 4 B = 12 B.
    assert sizing.checkpoint_bytes(1, save_optimizer=False) == 2
    assert sizing.checkpoint_bytes(1, save_optimizer=True) == 14
    assert sizing.checkpoint_bytes(10, save_optimizer=True, weight_dtype_bytes=4) == 10 * (4 + 12)


def test_codelab_recipe_qwen72b_on_9000gib_tier1000():
    s = size(QWEN, capacity_gib=9_000, tier=1000, keep_top_k=3)
    # 72_700_000_000 params x 14 B = 1_017_800_000_000 B (1.02 TB)
    assert s.checkpoint_bytes == 1_017_800_000_000
    # 9000 GiB / 1024 = 8.7890625 TiB x 1000 MB/s = 8_789_062_500 B/s
    assert s.throughput_bytes_per_s == pytest.approx(8_789_062_500)
    # 1_017_800_000_000 / 8_789_062_500 = 115.803 s
    assert s.min_write_seconds == pytest.approx(115.803, abs=1e-3)
    # keep_top_k 3 + tmp_step_N = 4 x 1.0178e12 = 4.0712e12 B of 9000 x 2^30 = 9.6637e12 B -> 42.1 %
    assert s.on_disk_bytes == 4 * 1_017_800_000_000
    assert s.capacity_fraction == pytest.approx(4.0712e12 / (9_000 * GIB))
    assert "1.02 TB" in s.summary() and ">= 116 s" in s.summary()


def test_tutorial_recipe_gemma27b_on_18000gib_tier500():
    s = size(GEMMA, capacity_gib=18_000, tier=500, keep_top_k=3)
    # 27_400_000_000 params x 14 B = 383_600_000_000 B (384 GB)
    assert s.checkpoint_bytes == 383_600_000_000
    # 18000 GiB / 1024 = 17.578125 TiB x 500 MB/s = 8_789_062_500 B/s (same aggregate as the codelab)
    assert s.throughput_bytes_per_s == pytest.approx(8_789_062_500)
    # 383_600_000_000 / 8_789_062_500 = 43.645 s
    assert s.min_write_seconds == pytest.approx(43.645, abs=1e-3)


def test_weights_only_checkpoint_is_a_seventh_of_the_full_one():
    # 72_700_000_000 x 2 B = 145_400_000_000 B
    assert size(QWEN, save_optimizer=False).checkpoint_bytes == 145_400_000_000


def test_seed_recipes_fit_a_120s_budget():
    assert sizing.check_budget(sizing.CheckpointInputs(QWEN, **kwargs(budget_seconds=120))) == []
    assert (
        sizing.check_budget(sizing.CheckpointInputs(GEMMA, **kwargs(capacity_gib=18_000, tier=500, budget_seconds=120)))
        == []
    )


def test_over_budget_suggests_next_valid_capacity_and_slowest_faster_tier():
    # 1.0178e12 B in 60 s needs 16.96 GB/s; tier 500 gives 8.79 GB/s per 18000 GiB step, so 36000 GiB
    # (17.58 GB/s -> 57.9 s); tier 1000 at 18000 GiB also gives 17.58 GB/s.
    problems = sizing.check_budget(
        sizing.CheckpointInputs(QWEN, **kwargs(capacity_gib=18_000, tier=500, budget_seconds=60))
    )
    assert problems == [
        "nemo-rl-gke:checkpointBudgetSeconds: a 1.02 TB checkpoint needs >= 116 s at 18000 GiB @ 500 MB/s/TiB, "
        "over the 60 s budget; set nemo-rl-gke:lustreCapacityGib to 36000 (tier 500) or "
        "nemo-rl-gke:lustreTier to 1000 with 18000 GiB (the tier cannot change in place: on a deployed stack that "
        "replaces the Lustre instance and its checkpoints; lustreOnDestroy protect refuses it)"
    ]


def test_a_suggested_tier_says_it_cannot_change_in_place():
    # Google: "You cannot change an instance's performance tier after it has been created" (Managed Lustre,
    # create-instance page); the provider marks per_unit_storage_throughput ForceNew (lustre.go:528-531).
    problems = sizing.check_budget(
        sizing.CheckpointInputs(QWEN, **kwargs(capacity_gib=18_000, tier=500, budget_seconds=60))
    )
    assert "the tier cannot change in place" in problems[0]


def test_over_budget_on_the_fastest_tier_suggests_capacity_only():
    # Tier 1000 steps by 9000 GiB: 18000 GiB -> 17.58 GB/s -> 57.9 s <= 60 s; no tier above 1000.
    problems = sizing.check_budget(
        sizing.CheckpointInputs(QWEN, **kwargs(capacity_gib=9_000, tier=1000, budget_seconds=60))
    )
    assert len(problems) == 1
    assert "set nemo-rl-gke:lustreCapacityGib to 18000 (tier 1000)" in problems[0]
    assert "nemo-rl-gke:lustreTier" not in problems[0]


def test_when_no_capacity_of_the_tier_meets_the_budget_only_a_faster_tier_is_suggested():
    # Tier 125 tops out at 12_240_000 GiB = 11953.125 TiB x 125 MB/s = 1.494e12 B/s -> 0.681 s > 0.5 s.
    # Tier 250 rounds 12_240_000 up to its large step above the 6_120_000 threshold: the next multiple of
    # 288_000 is 43 x 288_000 = 12_384_000 GiB (the reading that makes the documented maxima valid, catalog)
    # = 12093.75 TiB x 250 MB/s = 3.023e12 B/s -> 0.34 s.
    problems = sizing.check_budget(
        sizing.CheckpointInputs(QWEN, **kwargs(capacity_gib=12_240_000, tier=125, budget_seconds=0.5))
    )
    assert len(problems) == 1
    assert "no capacity in tier 125 meets it (its maximum, 12240000 GiB, needs >= 0.69 s)" in problems[0]
    assert "set nemo-rl-gke:lustreTier to 250 with 12384000 GiB" in problems[0]
    assert "lustreCapacityGib" not in problems[0]


def test_when_nothing_meets_the_budget_the_problem_says_so():
    # Tier 500 maximum 20_016_000 GiB -> 9.773e12 B/s -> 0.104 s > 0.05 s; tier 1000 at 18000 GiB -> 57.9 s.
    problems = sizing.check_budget(
        sizing.CheckpointInputs(QWEN, **kwargs(capacity_gib=18_000, tier=500, budget_seconds=0.05))
    )
    assert len(problems) == 1
    assert "no capacity in tier 500 meets it" in problems[0]
    assert "no faster tier does at 18000 GiB either" in problems[0]
    assert problems[0].startswith("nemo-rl-gke:checkpointBudgetSeconds:")


def test_suggested_capacity_is_valid_for_the_tier_and_meets_the_budget():
    from core import catalog

    for tier, t in catalog.LUSTRE_TIERS.items():
        for budget in (30, 60, 120, 600):
            cap = sizing.smallest_capacity_within(1_017_800_000_000, tier, budget)
            if cap is None:
                continue
            assert t.is_valid_capacity(cap)
            assert sizing.min_write_seconds(1_017_800_000_000, cap, tier) <= budget
            smaller = [c for c in range(t.min_gib, cap, t.step_gib) if t.is_valid_capacity(c)]
            assert all(sizing.min_write_seconds(1_017_800_000_000, c, tier) > budget for c in smaller)


def test_keep_top_k_that_fills_the_instance_warns_not_errors():
    # keep_top_k 8 -> 9 on disk x 1.0178e12 = 9.1602e12 B = 94.8 % of 9000 GiB (9.6637e12 B) > 90 %.
    # Fixes: keep_top_k <= floor(0.9 x 9.6637e12 / 1.0178e12) - 1 = 8 - 1 = 7;
    # capacity ceil(9.1602e12 / 0.9 / 2^30) = 9479 GiB -> next valid tier-1000 step 18000.
    args = kwargs(keep_top_k=8, budget_seconds=120)
    assert sizing.check_budget(sizing.CheckpointInputs(QWEN, **args)) == []
    warns = sizing.warnings(sizing.CheckpointInputs(QWEN, **args))
    assert len(warns) == 1
    assert warns[0].startswith("nemo-rl-gke:lustreCapacityGib: keep_top_k=8 keeps 9 checkpoints")
    assert "95%" in warns[0]
    assert "lower checkpointing.keep_top_k to 7 or set nemo-rl-gke:lustreCapacityGib to 18000" in warns[0]


def test_keep_top_k_that_overflows_the_instance_says_it_does_not_fit():
    # keep_top_k 9 -> 10 x 1.0178e12 = 1.0178e13 B > 9.6637e12 B.
    warns = sizing.warnings(sizing.CheckpointInputs(QWEN, **kwargs(keep_top_k=9)))
    assert len(warns) == 1 and "do not fit in 105%" in warns[0]


def test_keep_top_k_within_90_percent_is_quiet():
    assert sizing.warnings(sizing.CheckpointInputs(QWEN, **kwargs(keep_top_k=3))) == []


def test_unset_keep_top_k_warns_that_checkpoints_accumulate():
    warns = sizing.warnings(sizing.CheckpointInputs(QWEN, **kwargs(keep_top_k=None)))
    assert len(warns) == 1 and "keeps every 1.02 TB checkpoint" in warns[0] and "at most 7" in warns[0]


def test_a_model_outside_the_catalog_needs_its_parameter_count_named_by_the_refusal():
    problems = sizing.check_budget(sizing.CheckpointInputs("meta-llama/Llama-3.1-8B", **kwargs(budget_seconds=60)))
    assert len(problems) == 1
    assert problems[0].startswith("nemo-rl-gke:jobOverrides.model_params:")
    assert (
        "'meta-llama/Llama-3.1-8B' is not in the catalog" in problems[0]
        and "checkpointBudgetSeconds to 0" in problems[0]
    )
    assert sizing.warnings(sizing.CheckpointInputs("meta-llama/Llama-3.1-8B", **kwargs())) == []
    with pytest.raises(sizing.SizingError) as e:
        size("meta-llama/Llama-3.1-8B")
    assert e.value.problems == problems


def test_with_its_parameter_count_a_model_outside_the_catalog_is_sized_like_a_catalog_one():
    # 8.03e9 parameters (Llama 3.1 8B's model card): 2 B bf16 weights + 12 B Adam state per parameter.
    s = sizing.size_checkpoints(
        sizing.CheckpointInputs("meta-llama/Llama-3.1-8B", params=8_030_000_000, **kwargs(budget_seconds=60))
    )
    assert s.checkpoint_bytes == 8_030_000_000 * 14
    assert (
        sizing.check_budget(
            sizing.CheckpointInputs("meta-llama/Llama-3.1-8B", params=8_030_000_000, **kwargs(budget_seconds=60))
        )
        == []
    )


def test_unknown_tier_is_a_problem_naming_the_tier_key():
    problems = sizing.check_budget(sizing.CheckpointInputs(QWEN, **kwargs(tier=750)))
    assert problems == ["nemo-rl-gke:lustreTier: 750 is not a tier; valid: 125, 250, 500, 1000 (MB/s per TiB)"]


def test_byte_and_second_formatting_round_as_documented():
    assert sizing.fmt_bytes(1_017_800_000_000) == "1.02 TB"
    assert sizing.fmt_bytes(999_700_000_000) == "1 TB"
    assert sizing.fmt_bytes(383_600_000_000) == "384 GB"
    assert sizing.fmt_seconds(115.803) == "116"
    assert sizing.fmt_seconds(0.6812) == "0.69"
