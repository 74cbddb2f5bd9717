"""GPU capacity: the ordered capacity models (spot, flex-start, a specific reservation), their parameters,
placement and the ComputeClass name, and their rules (core/capacity.py holds the logic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from pydantic import Field

from core import capacity, catalog
from core.settings.base import Section

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class CapacitySettings(Section):
    """Where the GPU nodes come from, in the order GKE tries them."""

    models: list[str] = Field(
        ["spot", "flex-start"],
        alias="capacity",
        description=(
            "GPU capacity models in the order GKE tries them: spot, flex-start, reservation (JSON list, e.g. "
            '["reservation", "spot", "flex-start"]). '
            f"{catalog.one_of(catalog.families(lambda a: not a.on_demand), 'and')} have no plain on-demand capacity."
        ),
    )
    reservation: Optional[str] = Field(
        None,
        alias="reservation",
        description=(
            "The specific reservation the 'reservation' model consumes (in `zone`): <name>, "
            "<name>/reservationBlocks/<block>, or projects/<project>/reservations/<name>[/reservationBlocks/<block>] "
            "for a shared one."
        ),
    )
    reservation_start_nodes: int = Field(
        0,
        alias="reservationStartNodes",
        description=(
            "Standard only: nodes the reservation pool keeps from creation on (reserved capacity is paid for "
            "anyway); 0 also suits a reservation that is not active yet."
        ),
    )
    flex_start_max_run_hours: int = Field(
        capacity.DEFAULT_MAX_RUN_HOURS,
        alias="flexStartMaxRunHours",
        description="How long flex-start nodes run, at most 168 (7 days).",
    )
    flex_start_wait_minutes: Optional[int] = Field(
        None,
        alias="flexStartWaitMinutes",
        description=(
            "Autopilot only: how long the flex-start step waits for capacity before GKE tries the next model "
            "(GKE >= 1.33); default: GKE's own."
        ),
    )
    placement: str = Field(
        "auto",
        alias="gpuPlacement",
        description=(
            "auto (compact for multi-node spot pools, a workload policy for multi-node flex-start pools), compact "
            "(also for a single node) or none."
        ),
    )
    placement_distance: str = Field(
        capacity.DEFAULT_TOPOLOGY_DISTANCE,
        alias="gpuPlacementDistance",
        description="Flex-start workload policy's maximum topology distance: SUBBLOCK, BLOCK or CLUSTER.",
    )
    compute_class: str = Field(
        capacity.DEFAULT_COMPUTE_CLASS,
        alias="computeClass",
        description=("Name of the custom ComputeClass the GPU workers select (not starting with gke or autopilot)."),
    )

    def inputs(self) -> capacity.CapacityInputs:
        return capacity.CapacityInputs(
            models=tuple(self.models),
            reservation=self.reservation,
            reservation_start_nodes=self.reservation_start_nodes,
            flex_start_max_run_hours=self.flex_start_max_run_hours,
            flex_start_wait_minutes=self.flex_start_wait_minutes,
            placement=self.placement,
            placement_distance=self.placement_distance,
            compute_class=self.compute_class,
        )


def nodes_requested(s: "UncheckedSettings") -> int:
    """The GPU nodes the workload asks for: every pool's autoscaling maximum (Standard: gpuNodes)."""
    return s.worker_replicas if s.autopilot else s.gpu.nodes


def plan(s: "UncheckedSettings") -> capacity.CapacityPlan:
    acc = s.gpu.accelerator
    return capacity.plan_capacity(
        s.capacity.inputs(),
        autopilot=s.autopilot,
        machine_type=acc.machine_type,
        gpu_type=acc.gpu_type,
        zone=s.zone,
        nodes=nodes_requested(s),
        project=s.gcp_project,
    )


def check(s: "UncheckedSettings") -> list[str]:
    acc = catalog.ACCELERATORS.get(s.gpu.gpu_type)  # None: the GPU rules report the unknown type
    version = s.cluster.gke_version
    try:
        if version is not None:
            catalog.parse_gke_version(version)
    except ValueError:
        version = None  # the cluster rules report the malformed version
    return capacity.check_capacity(
        s.capacity.inputs(),
        autopilot=s.autopilot,
        machine_type=acc.machine_type if acc else None,
        nodes=nodes_requested(s),
        gke_version=version,
    )
