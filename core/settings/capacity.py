"""GPU capacity: the ordered capacity models (spot, flex-start, a specific reservation), their parameters,
placement and the ComputeClass name, and their rules (core/capacity.py holds the logic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from core import capacity, catalog
from core.settings.base import Section
from core.settings.record import AUTOPILOT, IN_PLACE, ON_AUTOPILOT, PLATFORM, STANDARD, STOPS_THE_JOB, DayTwo, setting

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class CapacitySettings(Section):
    """Where the GPU nodes come from, in the order GKE tries them."""

    models: list[str] = setting(
        ["spot", "flex-start"],
        key="capacity",
        description=(
            "GPU capacity models in the order GKE tries them: spot, flex-start, reservation (JSON list, e.g. "
            '["reservation", "spot", "flex-start"]). '
            f"{catalog.one_of(catalog.families(lambda a: not a.on_demand), 'and')} have no plain on-demand capacity."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
            note="the ComputeClass's order of capacity models and the pools it names",
        ),
        bad=("[]", '["x"]', '["spot", "spot"]'),
        alternatives=({"capacity": ["flex-start", "spot"]},),
        rule="core.capacity",
    )
    reservation: Optional[str] = setting(
        None,
        key="reservation",
        description=(
            "The specific reservation the 'reservation' model consumes (in `zone`): <name>, "
            "<name>/reservationBlocks/<block>, or projects/<project>/reservations/<name>[/reservationBlocks/<block>] "
            "for a shared one."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE, touches=("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement")
        ),
        bad=("UPPER",),
        alternatives=({"reservation": "my-reservation", "capacity": ["reservation", "spot"]},),
        rule="core.capacity",
    )
    reservation_start_nodes: int = setting(
        0,
        key="reservationStartNodes",
        description=(
            "Nodes the reservation pool keeps from creation on (reserved capacity is paid for "
            "anyway); 0 also suits a reservation that is not active yet."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE, touches=("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement")
        ),
        bad=(5,),
        alternatives=(
            {"reservation": "my-reservation", "capacity": ["reservation", "spot"], "reservationStartNodes": 1},
        ),
        modes=STANDARD,
        rule="core.capacity",
    )
    flex_start_max_run_hours: int = setting(
        capacity.DEFAULT_MAX_RUN_HOURS,
        key="flexStartMaxRunHours",
        description="How long flex-start nodes run, at most 168 (7 days).",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_AUTOPILOT: IN_PLACE},
            touches=("ComputeClass gpu-compute-class", "NodePool gpu-flex"),
            note="the flex-start pool's run duration (Autopilot: a field of the ComputeClass)",
        ),
        bad=(0, 200),
        alternatives=({"flexStartMaxRunHours": 24},),
        rule="core.capacity",
    )
    flex_start_wait_minutes: Optional[int] = setting(
        None,
        key="flexStartWaitMinutes",
        description=(
            "How long the flex-start step waits for capacity before GKE tries the next model "
            "(GKE >= 1.33); default: GKE's own."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("ComputeClass gpu-compute-class",), note="a field of the ComputeClass"),
        bad=(30, -1),
        alternatives=({"flexStartWaitMinutes": 60, "capacity": ["flex-start", "spot"]},),
        modes=AUTOPILOT,
        rule="core.capacity",
    )
    placement: str = setting(
        "auto",
        key="gpuPlacement",
        description=(
            "auto (compact for multi-node spot pools, a workload policy for multi-node flex-start pools), compact "
            "(also for a single node) or none."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_AUTOPILOT: IN_PLACE},
            touches=("NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
        ),
        bad=("x",),
        alternatives=({"gpuPlacement": "none"},),
        rule="core.capacity",
    )
    placement_distance: str = setting(
        capacity.DEFAULT_TOPOLOGY_DISTANCE,
        key="gpuPlacementDistance",
        description="Flex-start workload policy's maximum topology distance: SUBBLOCK, BLOCK or CLUSTER.",
        owner=PLATFORM,
        day_two=DayTwo(STOPS_THE_JOB, where={ON_AUTOPILOT: IN_PLACE}, touches=("ResourcePolicy gpu-flex-placement",)),
        bad=("x",),
        alternatives=({"gpuPlacementDistance": "BLOCK"},),
        rule="core.capacity",
    )
    compute_class: str = setting(
        capacity.DEFAULT_COMPUTE_CLASS,
        key="computeClass",
        description="Name of the custom ComputeClass the GPU workers select (not starting with gke or autopilot).",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("ComputeClass *", "Job placeholders", "NodePool gpu-*", "RayCluster raycluster", "RayJob rayjob"),
        ),
        bad=("gke-x", "Bad_x"),
        alternatives=({"computeClass": "nemo-rl-gpu2"},),
        rule="core.capacity",
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
