"""GPU nodes: type, node count, driver, and their rules (where the nodes come from: core/settings/capacity.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional

from core import catalog
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    IN_PLACE,
    INT32_ABOVE,
    ON_EXPERIMENT,
    PLATFORM,
    STANDARD,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class GpuSettings(Section):
    """GPU nodes: type, node count, driver."""

    gpu_type: str = setting(
        "nvidia-b200",
        key="gpuType",
        description=(f"GPU type: {catalog.one_of([f'{g} ({a.family})' for g, a in catalog.ACCELERATORS.items()])}."),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "ComputeClass *",
                "NodePool gpu-*",
                "Job placeholders",
                "RayCluster raycluster",
                "RayJob rayjob",
                # The GPU flavor's node label and the quota, updated in place: a flavor's nodeLabels are immutable
                # only with topologyName set, which ours never is (kueue apis/kueue/v1beta2/resourceflavor_types.go:49
                # @v0.19.2).
                "ResourceFlavor kueue-*",
                "ClusterQueue kueue-*",
            ),
            note="the GPU pools, the ComputeClass and the Ray workers",
        ),
        bad=("nvidia-h100",),
        alternatives=(
            {"gpuType": "nvidia-h200-141gb", "machineType": "a3-ultragpu-8g"},
            {"gpuType": "nvidia-b200", "machineType": "a4-highgpu-8g"},
        ),
    )
    machine_type: Optional[str] = setting(
        None,
        key="machineType",
        description="Machine type; default and only valid value: the GPU type's.",
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("NodePool gpu-*",),
            note="its one valid value is the GPU type's machine, also its default: set to it, nothing changes",
        ),
        bad=("a4-highgpu-8g",),
        alternatives=({"machineType": ""}, {"machineType": "a4-highgpu-8g"}),
    )
    # Every GPU pool starts at zero nodes (capacity that has to be obtained; a pool created with N spot nodes
    # waits for them and fails on a stockout: terraform-provider-google resource_container_node_pool.go) and scales up
    # to this many for the workload.
    nodes: int = setting(
        2,
        key="gpuNodes",
        description="GPU nodes the workload asks for; every GPU pool scales from 0 up to this many.",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=(
                "NodePool gpu-*",
                "Job placeholders",
                "RayCluster raycluster",
                "RayJob rayjob",
                "NodePool cpu",  # the CPU pool's maximum: one job per GPU node at once
                "ClusterQueue kueue-*",  # the quota
            ),
            note="the pools' size; across 1 and 2 nodes under automatic placement the pools are replaced",
        ),
        bad=(-1, 1001, "x", INT32_ABOVE),
        alternatives=({"gpuNodes": 4},),
        stack_alternatives={"codelab": {"gpuNodes": 16}},
        modes=STANDARD,
    )
    driver_version: Literal["LATEST", "DEFAULT"] = setting(
        "LATEST",
        key="gpuDriverVersion",
        description="GPU driver GKE installs (LATEST or DEFAULT).",
        owner=PLATFORM,
        day_two=DayTwo(STOPS_THE_JOB, touches=("NodePool gpu-*",)),
        bad=("x",),
        alternatives=({"gpuDriverVersion": "DEFAULT"},),
        modes=STANDARD,
    )

    @property
    def accelerator(self) -> catalog.Accelerator:
        return catalog.accelerator(self.gpu_type)


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    g = s.gpu
    acc = catalog.ACCELERATORS.get(g.gpu_type)
    if acc is None:
        p.append(f"{key('gpuType')}: unknown GPU type {g.gpu_type!r}; valid: {', '.join(sorted(catalog.ACCELERATORS))}")
    elif g.machine_type is not None and g.machine_type != acc.machine_type:
        p.append(
            f"{key('machineType')}: {g.machine_type!r} does not carry {acc.gpu_type}; use "
            f"{acc.machine_type} (or unset it)"
        )
    if s.autopilot:
        pass  # gpuNodes is Standard-only: a value set on Autopilot is reported once, as such
    elif g.nodes < 0:
        p.append(f"{key('gpuNodes')}: must be >= 0 (got {g.nodes})")
    elif g.nodes > catalog.GKE_MAX_NODES_PER_POOL_ZONE:
        # Every GPU pool is in one zone and scales up to gpuNodes (core.catalog, GKE quotas page).
        p.append(
            f"{key('gpuNodes')}: {g.nodes} GPU nodes exceed GKE's {catalog.GKE_MAX_NODES_PER_POOL_ZONE} nodes per "
            f"node pool per zone, and every GPU pool is in {key('zone')}; lower it"
        )
    return p


def nodes_valid(s: "UncheckedSettings") -> bool:
    """gpuNodes passed its rules (the node-count rules elsewhere only run on a value that did)."""
    return s.autopilot or 0 <= s.gpu.nodes <= catalog.GKE_MAX_NODES_PER_POOL_ZONE
