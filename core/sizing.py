"""Checkpoint I/O sizing: how big one NeMo-RL checkpoint is and how fast Managed Lustre can take it.

Pure arithmetic over `catalog.MODEL_PARAMS` and `catalog.LUSTRE_TIERS`; nothing here builds resources.
Settings validation and the sizing report (synth/sizing_report.py) call it.

Checkpoint size (NeMo-RL `<checkpoint_dir>/step_N/`, nemo_rl/utils/checkpoint.py: tests/oracles), per model parameter:
  * weights in bf16 ........................................... 2 B
  * with the optimizer saved (Adam with fp32 master weights):
      fp32 master copy 4 B + first moment 4 B + second moment 4 B = 12 B
  => 2 B/param weights only, 2 + 12 = 14 B/param with the optimizer.
The rest of a step directory (tokenizer files, train_dataloader.pt, config.yaml, training_info.json) is
a few tens of MB: about 0.01% of a checkpoint with optimizer state (384 GB for the smallest catalog
model) and under 0.1% of a weights-only one (55 GB); ignored.

Write time: the floor is checkpoint bytes / the instance's aggregate throughput, which Managed Lustre
provisions as capacity (TiB) x tier (MB/s per TiB) and which is the ceiling for all clients together.
The clients are not the limit at these sizes: every GPU worker writes its own shard in parallel over its
node's primary NIC (200 Gbps-class on A4 / A3 Ultra, ~25 GB/s per node), while the seed instances top out
near 8.8 GB/s; that only flips for instances faster than (writing nodes x ~25 GB/s). Real writes are
slower still (metadata, stragglers, serialisation), so the figure is a lower bound.

Disk: NeMo-RL writes `tmp_step_N` and only then removes the oldest of the `keep_top_k` it keeps, so
`keep_top_k + 1` checkpoints sit on the instance at the peak, next to HF_HOME and the datasets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from core import catalog
from core.keys import key

KEY_BUDGET = key("checkpointBudgetSeconds")
KEY_CAPACITY = key("lustreCapacityGib")
KEY_TIER = key("lustreTier")
KEY_PARAMS = key("jobOverrides.model_params")

WEIGHT_DTYPE_BYTES = 2  # bf16
OPTIMIZER_BYTES_PER_PARAM = 4 + 4 + 4  # fp32 master weights + Adam exp_avg + exp_avg_sq

# Above this share of the instance the checkpoints crowd out HF_HOME, datasets and Lustre's own headroom.
CAPACITY_WARN_FRACTION = 0.90

GIB = 1024**3


class SizingError(ValueError):
    """The inputs cannot be sized; `problems` holds one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def checkpoint_bytes(params: int, *, save_optimizer: bool, weight_dtype_bytes: int = WEIGHT_DTYPE_BYTES) -> int:
    """Bytes of one NeMo-RL checkpoint: weights, plus fp32 master weights and Adam moments if saved."""
    per_param = weight_dtype_bytes + (OPTIMIZER_BYTES_PER_PARAM if save_optimizer else 0)
    return params * per_param


def min_write_seconds(nbytes: int, capacity_gib: int, tier: int) -> float:
    """Lower bound on writing `nbytes` to an instance of `capacity_gib` at `tier` MB/s per TiB."""
    return nbytes / _tier(tier).throughput_bytes_per_s(capacity_gib)


@dataclass(frozen=True)
class CheckpointSizing:
    model_name: str
    params: int
    save_optimizer: bool
    checkpoint_bytes: int
    capacity_gib: int
    tier: int
    throughput_bytes_per_s: float
    min_write_seconds: float
    keep_top_k: Optional[int]  # None: NeMo-RL keeps every checkpoint
    budget_seconds: Optional[float]

    @property
    def checkpoints_on_disk(self) -> Optional[int]:
        """Peak number of step directories: the kept ones plus the tmp_step_N being written."""
        return None if self.keep_top_k is None else self.keep_top_k + 1

    @property
    def on_disk_bytes(self) -> Optional[int]:
        n = self.checkpoints_on_disk
        return None if n is None else n * self.checkpoint_bytes

    @property
    def capacity_bytes(self) -> int:
        return self.capacity_gib * GIB

    @property
    def capacity_fraction(self) -> Optional[float]:
        b = self.on_disk_bytes
        return None if b is None else b / self.capacity_bytes

    @property
    def within_budget(self) -> bool:
        return self.budget_seconds is None or self.min_write_seconds <= self.budget_seconds

    def summary(self) -> str:
        what = "weights + optimizer" if self.save_optimizer else "weights only"
        per_param = self.checkpoint_bytes // self.params
        line = (
            f"{self.model_name}: {fmt_bytes(self.checkpoint_bytes)} per checkpoint ({what}, {per_param} B/param); "
            f">= {fmt_seconds(self.min_write_seconds)} s at {fmt_bytes(self.throughput_bytes_per_s)}/s "
            f"({self.capacity_gib} GiB @ {self.tier} MB/s/TiB)"
        )
        on_disk, fraction = self.on_disk_bytes, self.capacity_fraction
        if on_disk is None or fraction is None:
            line += "; keep_top_k unset: checkpoints accumulate"
        else:
            line += (
                f"; keep_top_k={self.keep_top_k} -> {self.checkpoints_on_disk} on disk = "
                f"{fmt_bytes(on_disk)} ({fmt_fraction(fraction)} of {fmt_bytes(self.capacity_bytes)})"
            )
        if self.budget_seconds is not None:
            verdict = "within" if self.within_budget else "OVER"
            line += f"; {verdict} the {self.budget_seconds:g} s budget"
        return line


@dataclass(frozen=True)
class CheckpointInputs:
    """What sizing one recipe's checkpoints on one Lustre instance reads: the model (its catalog size, else
    `params`), whether the optimizer is saved, the instance, how many checkpoints are kept, and the write budget."""

    model_name: str
    save_optimizer: bool
    capacity_gib: int
    tier: int
    keep_top_k: Optional[int]  # None: NeMo-RL keeps every checkpoint
    budget_seconds: Optional[float]  # None: no budget
    params: Optional[int] = None  # the parameter count of a model outside the catalog


def size_checkpoints(c: CheckpointInputs) -> CheckpointSizing:
    """Size one recipe's checkpoints on one Lustre instance. Raises SizingError for unknown inputs."""
    problems = []
    params = catalog.MODEL_PARAMS.get(c.model_name, c.params)
    if params is None:
        problems.append(
            f"{KEY_PARAMS}: model {c.model_name!r} is not in the catalog, so its checkpoints cannot be sized against "
            f"{KEY_BUDGET}; set {KEY_PARAMS} to its parameter count (its model card's figure, e.g. 8200000000), "
            "or set checkpointBudgetSeconds to 0"
        )
    if c.tier not in catalog.LUSTRE_TIERS:
        problems.append(
            f"{KEY_TIER}: {c.tier} is not a tier; valid: "
            f"{', '.join(str(t) for t in sorted(catalog.LUSTRE_TIERS))} (MB/s per TiB)"
        )
    if c.keep_top_k is not None and c.keep_top_k < 1:
        problems.append(f"checkpointing.keep_top_k: must be >= 1 or unset (got {c.keep_top_k})")
    if c.budget_seconds is not None and c.budget_seconds <= 0:
        problems.append(f"{KEY_BUDGET}: must be > 0 seconds (got {c.budget_seconds:g})")
    if problems or params is None:  # an unknown model is one of the problems
        raise SizingError(problems)

    nbytes = checkpoint_bytes(params, save_optimizer=c.save_optimizer)
    throughput = _tier(c.tier).throughput_bytes_per_s(c.capacity_gib)
    return CheckpointSizing(
        model_name=c.model_name,
        params=params,
        save_optimizer=c.save_optimizer,
        checkpoint_bytes=nbytes,
        capacity_gib=c.capacity_gib,
        tier=c.tier,
        throughput_bytes_per_s=throughput,
        min_write_seconds=nbytes / throughput,
        keep_top_k=c.keep_top_k,
        budget_seconds=c.budget_seconds,
    )


def check_budget(c: CheckpointInputs) -> list[str]:
    """Problems (errors): unknown inputs, or a checkpoint that cannot be written within the budget. Without a
    budget, a model whose size is not known has nothing to be checked against (a user's own model)."""
    if c.budget_seconds is None and c.model_name not in catalog.MODEL_PARAMS and c.params is None:
        return []
    try:
        s = size_checkpoints(c)
    except SizingError as e:
        return list(e.problems)
    return budget_problems(s)


def warnings(c: CheckpointInputs) -> list[str]:
    """Warnings (not errors): the kept checkpoints would fill or overflow the instance."""
    try:
        s = size_checkpoints(c)
    except SizingError:
        return []  # check_budget() reports these as problems
    return capacity_warnings(s)


def budget_problems(s: CheckpointSizing) -> list[str]:
    budget = s.budget_seconds
    if budget is None or s.within_budget:
        return []
    head = (
        f"{KEY_BUDGET}: a {fmt_bytes(s.checkpoint_bytes)} checkpoint needs >= {fmt_seconds(s.min_write_seconds)} s "
        f"at {s.capacity_gib} GiB @ {s.tier} MB/s/TiB, over the {budget:g} s budget"
    )
    bigger = smallest_capacity_within(s.checkpoint_bytes, s.tier, budget)
    faster = slowest_faster_tier_within(s.checkpoint_bytes, s.capacity_gib, s.tier, budget)

    parts = [head]
    if bigger is None:
        top = _tier(s.tier).max_gib
        parts.append(
            f"no capacity in tier {s.tier} meets it (its maximum, {top} GiB, needs "
            f">= {fmt_seconds(min_write_seconds(s.checkpoint_bytes, top, s.tier))} s)"
        )
    fixes = []
    if bigger is not None:
        fixes.append(f"{KEY_CAPACITY} to {bigger} (tier {s.tier})")
    if faster is not None:
        # Google: "You cannot change an instance's performance tier after it has been created"
        # (https://cloud.google.com/managed-lustre/docs/create-instance); perUnitStorageThroughput is ForceNew
        # (core/catalog/replacements.py). On a deployed stack that means a new instance.
        fixes.append(
            f"{KEY_TIER} to {faster[0]} with {faster[1]} GiB (the tier cannot change in place: on a deployed "
            "stack that replaces the Lustre instance and its checkpoints; lustreOnDestroy protect refuses it)"
        )
    if fixes:
        parts.append("set " + " or ".join(fixes))
    else:
        parts.append(
            f"no faster tier does at {s.capacity_gib} GiB either; raise {KEY_BUDGET} or checkpoint fewer bytes"
        )
    head = "; ".join(parts)
    return [head]


def capacity_warnings(s: CheckpointSizing) -> list[str]:
    on_disk, fraction = s.on_disk_bytes, s.capacity_fraction
    if on_disk is None or fraction is None:  # keep_top_k unset
        fit = int(CAPACITY_WARN_FRACTION * s.capacity_bytes // s.checkpoint_bytes) - 1
        return [
            f"checkpointing.keep_top_k: unset, so NeMo-RL keeps every {fmt_bytes(s.checkpoint_bytes)} "
            f"checkpoint until the {s.capacity_gib} GiB instance is full; set it to at most {max(fit, 1)} "
            f"to stay under {CAPACITY_WARN_FRACTION:.0%} of the instance"
        ]
    if fraction <= CAPACITY_WARN_FRACTION:
        return []
    verdict = "do not fit in" if fraction > 1 else "would fill"
    max_k = int(CAPACITY_WARN_FRACTION * s.capacity_bytes // s.checkpoint_bytes) - 1
    need_gib = math.ceil(on_disk / CAPACITY_WARN_FRACTION / GIB)
    cap = _tier(s.tier).next_valid_capacity(need_gib)
    fixes = []
    if max_k >= 1:
        fixes.append(f"lower checkpointing.keep_top_k to {max_k}")
    if cap is not None:
        fixes.append(f"set {KEY_CAPACITY} to {cap}")
    fix = "; " + " or ".join(fixes) if fixes else ""
    return [
        f"{KEY_CAPACITY}: keep_top_k={s.keep_top_k} keeps {s.checkpoints_on_disk} checkpoints on disk while "
        f"the next one is written ({s.checkpoints_on_disk} x {fmt_bytes(s.checkpoint_bytes)} = "
        f"{fmt_bytes(on_disk)}), which {verdict} {fmt_fraction(fraction)} of the "
        f"{s.capacity_gib} GiB ({fmt_bytes(s.capacity_bytes)}) instance that also holds HF_HOME and the "
        f"data{fix}"
    ]


def smallest_capacity_within(nbytes: int, tier: int, budget_seconds: float) -> Optional[int]:
    """Smallest valid capacity of `tier` that writes `nbytes` within the budget, or None if none does."""
    t = _tier(tier)
    need_gib = math.ceil(nbytes / budget_seconds / (t.throughput_mbps_per_tib * 1e6) * 1024)
    cap = t.next_valid_capacity(need_gib)
    # The ceiling above can land a hair short after float rounding; step up until the check itself passes.
    while cap is not None and min_write_seconds(nbytes, cap, tier) > budget_seconds:
        cap = t.next_valid_capacity(cap + 1)
    return cap


def slowest_faster_tier_within(
    nbytes: int, capacity_gib: int, tier: int, budget_seconds: float
) -> Optional[tuple[int, int]]:
    """(tier, capacity) of the slowest tier above `tier` that meets the budget at the current capacity,
    rounded up to that tier's min/step table; None if no faster tier does."""
    for other in sorted(t for t in catalog.LUSTRE_TIERS if t > tier):
        cap = catalog.LUSTRE_TIERS[other].next_valid_capacity(capacity_gib)
        if cap is not None and min_write_seconds(nbytes, cap, other) <= budget_seconds:
            return other, cap
    return None


def fmt_bytes(n: float) -> str:
    """Decimal units, three significant digits: 1017800000000 -> '1.02 TB'."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 999.5 or unit == "PB":  # 999.7 would print as "1e+03"
            return f"{n:.3g} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def fmt_fraction(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else "<1%"


def fmt_seconds(s: float) -> str:
    """Rounded up, since it is a lower bound: 115.8 -> '116', 0.681 -> '0.69'."""
    if s >= 10:
        return str(math.ceil(s))
    return f"{math.ceil(s * 100) / 100:g}"


def _tier(tier: int) -> catalog.LustreTier:
    try:
        return catalog.LUSTRE_TIERS[tier]
    except KeyError:
        raise SizingError(
            [
                f"{KEY_TIER}: {tier} is not a tier; valid: "
                f"{', '.join(str(t) for t in sorted(catalog.LUSTRE_TIERS))} (MB/s per TiB)"
            ]
        ) from None
