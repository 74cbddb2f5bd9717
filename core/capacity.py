"""The GPU capacity plan: which consumption models a stack uses, in which order, and what each one needs.

Pure code, no resources. `CapacityInputs` holds the capacity settings as the user wrote them; `check_capacity()`
returns one line per problem, each naming its config key; `plan_capacity()` turns valid inputs into a
`CapacityPlan`, from which the infra component builds one GPU node pool per model (Standard) and
workloads/manifests/compute_class.py renders the ComputeClass that orders them (Standard and Autopilot).

The models (facts and sources in core/catalog/capacity.py and the GPU records, gpus.py):
- `spot`: Spot VMs, cheapest, preemptible at any time with 30 s notice.
- `flex-start`: Dynamic Workload Scheduler flex-start; GKE waits for capacity, nodes live at most 7 days.
- `reservation`: a specific Compute Engine reservation (optionally one block of it), in the RoCE zone.
A4 and A3 Ultra have no plain on-demand capacity, so there is no on-demand model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from core import catalog
from core.gcp_rules import reservation_problems
from core.naming import GPU_POOLS

SPOT = "spot"
FLEX_START = "flex-start"
RESERVATION = "reservation"

# Node pool names inside the cluster (static: the ComputeClass lists them by name).
POOL_NAMES = GPU_POOLS

PLACEMENTS = ("auto", "compact", "none")
DEFAULT_COMPUTE_CLASS = "nemo-rl-gpu"
DEFAULT_MAX_RUN_HOURS = catalog.FLEX_START_MAX_RUN_SECONDS // 3600
# Cluster Toolkit's flex-start compact-placement example uses CLUSTER, the loosest distance: it bounds placement
# without shrinking the capacity flex-start can find (examples/gke-consumption-options/
# dws-flex-start-compact-placement/gke-h4d/gke-h4d.yaml @1047080375afbb44da4b596be314634e7486af4a).
DEFAULT_TOPOLOGY_DISTANCE = "CLUSTER"

# The class name is also the value of the node label cloud.google.com/compute-class: a label value that is also
# a valid object name (RFC 1123 label), at most 63 characters.
_K8S_LABEL_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _key(k: str) -> str:
    return f"nemo-rl-gke:{k}"


@dataclass(frozen=True)
class CapacityInputs:
    """The capacity settings of one stack, as configured (validated by check_capacity)."""

    models: tuple[str, ...] = (SPOT, FLEX_START)
    # `<name>`, `<name>/reservationBlocks/<block>` or `projects/<project>/reservations/<name>[/reservationBlocks/
    # <block>]` (a shared reservation): the forms GKE and xpk take (core/gcp_rules.py checks them).
    reservation: Optional[str] = None
    reservation_start_nodes: int = 0
    flex_start_max_run_hours: int = DEFAULT_MAX_RUN_HOURS
    flex_start_wait_minutes: Optional[int] = None
    placement: str = "auto"
    placement_distance: str = DEFAULT_TOPOLOGY_DISTANCE
    compute_class: str = DEFAULT_COMPUTE_CLASS


@dataclass(frozen=True)
class ReservationTarget:
    project: str
    name: str
    block: Optional[str]
    shared: bool  # owned by another project (a shared reservation)

    @property
    def path(self) -> str:
        return catalog.reservation_path(self.project, self.name, self.block)


@dataclass(frozen=True)
class PoolPlan:
    """One Standard GPU node pool: a single capacity model, 0..max nodes, in the ComputeClass."""

    model: str
    name: str
    max_nodes: int
    initial_nodes: int
    spot: bool
    flex_start: bool
    max_run_duration: Optional[str]  # "<seconds>s", flex-start only
    reservation: Optional[ReservationTarget]
    auto_repair: bool
    compact: bool  # COMPACT group placement (spot)
    workload_policy: bool  # HIGH_THROUGHPUT workload policy (flex-start, where supported)

    @property
    def reservation_affinity(self) -> tuple[str, Optional[str], Optional[list[str]]]:
        """(consume_reservation_type, key, values) for the pool's node config."""
        if self.reservation is None:
            # Spot and flex-start pools must not consume reservations (Cluster Toolkit preconditions).
            return ("NO_RESERVATION", None, None)
        return ("SPECIFIC_RESERVATION", catalog.RESERVATION_AFFINITY_KEY, [self.reservation.path])


@dataclass(frozen=True)
class CapacityPlan:
    """A validated capacity plan: the ordered models and what each needs."""

    models: tuple[str, ...]
    nodes: int  # the workload's request: every pool's autoscaling maximum
    machine_type: str
    gpu_type: str
    zone: str
    autopilot: bool
    compute_class: str
    reservation: Optional[ReservationTarget]
    reservation_start_nodes: int
    max_run_seconds: int
    wait_seconds: Optional[int]
    placement: str
    placement_distance: str

    def has(self, model: str) -> bool:
        return model in self.models

    def compact(self, model: str) -> bool:
        """Whether `model`'s nodes get compact placement (Standard pools only)."""
        if self.autopilot or self.placement == "none" or self.nodes < 2 and self.placement == "auto":
            return False
        if model == SPOT:
            return True
        if model == FLEX_START:
            return self.machine_type in catalog.FLEX_START_WORKLOAD_POLICY_MACHINES
        return False  # reservations bring their own (block) placement

    def pools(self) -> list[PoolPlan]:
        """Standard: one pool per model, in the list's order. Autopilot has none."""
        if self.autopilot:
            return []
        out = []
        for model in self.models:
            flex = model == FLEX_START
            reserved = model == RESERVATION
            out.append(
                PoolPlan(
                    model=model,
                    name=POOL_NAMES[model],
                    max_nodes=self.nodes,
                    initial_nodes=self.reservation_start_nodes if reserved else 0,
                    spot=model == SPOT,
                    flex_start=flex,
                    max_run_duration=f"{self.max_run_seconds}s" if flex else None,
                    reservation=self.reservation if reserved else None,
                    # Flex-start pools need node auto-repair off (Cluster Toolkit precondition).
                    auto_repair=not flex,
                    compact=model == SPOT and self.compact(SPOT),
                    workload_policy=flex and self.compact(FLEX_START),
                )
            )
        return out


def _version_at_least(version: Optional[str], floor: str) -> bool:
    return version is None or catalog.version_at_least(version, floor)


def check_capacity(
    c: CapacityInputs, *, autopilot: bool, machine_type: Optional[str], nodes: int, gke_version: Optional[str]
) -> list[str]:
    """Every problem with the capacity settings, one line each, naming the config key. `gke_version` is the
    pinned minimum GKE version (None: the channel's default) and must already be parseable; `machine_type`
    None (an unknown GPU type, reported elsewhere) skips the machine-dependent rules."""
    return [
        *_chain_problems(c.models),
        *_reservation_problems(c, autopilot=autopilot, nodes=nodes),
        *_flex_start_problems(c, autopilot=autopilot, machine_type=machine_type, gke_version=gke_version),
        *_placement_problems(c, autopilot=autopilot, machine_type=machine_type),
        *_compute_class_problems(c.compute_class, gke_version),
    ]


def _chain_problems(chain: Sequence[str]) -> list[str]:
    """The fallback chain: at least one model, each known, none twice."""
    p: list[str] = []
    valid = ", ".join(catalog.CAPACITY_MODELS)
    models = list(chain)
    if not models:
        p.append(f"{_key('capacity')}: list at least one model ({valid}), in the order GKE should try them")
    for m in models:
        if m not in catalog.CAPACITY_MODELS:
            # The GPU types here have no plain on-demand capacity (their records' `on_demand`, core/catalog/gpus.py).
            no_on_demand = catalog.one_of(catalog.families(lambda a: not a.on_demand), "and")
            hint = (
                f" ({no_on_demand} have no plain on-demand capacity)"
                if m.replace("-", "").lower() in ("ondemand", "standard")
                else ""
            )
            p.append(f"{_key('capacity')}: unknown model {m!r}; valid: {valid}{hint}")
    dups = sorted({m for m in models if models.count(m) > 1})
    if dups:
        p.append(
            f"{_key('capacity')}: {', '.join(repr(d) for d in dups)} listed more than once; each model is one "
            "step of the fallback chain"
        )
    return p


def _reservation_problems(c: CapacityInputs, *, autopilot: bool, nodes: int) -> list[str]:
    """A reservation is named exactly when the chain has one; its start nodes fit the workload (Standard)."""
    p: list[str] = []
    wants_reservation = RESERVATION in c.models
    if wants_reservation and not c.reservation:
        p.append(
            f"{_key('reservation')}: the capacity list has 'reservation' but no reservation name is set; set "
            f"{_key('reservation')} to the specific reservation (<name>, optionally "
            "<name>/reservationBlocks/<block>)"
        )
    if c.reservation and not wants_reservation:
        p.append(
            f"{_key('reservation')}: {c.reservation!r} is set but {_key('capacity')} does not list "
            "'reservation'; add it where GKE should try it, or unset the reservation"
        )
    elif c.reservation:  # a reservation refused as unused is not checked further
        p.extend(reservation_problems(c.reservation))
    if c.reservation_start_nodes:
        if autopilot:
            p.append(f"{_key('reservationStartNodes')}: only applies to Standard clusters (Autopilot has no pools)")
        elif not wants_reservation:
            p.append(f"{_key('reservationStartNodes')}: needs 'reservation' in {_key('capacity')}")
        elif not 0 <= c.reservation_start_nodes <= nodes:
            p.append(
                f"{_key('reservationStartNodes')}: must be between 0 and the workload's {nodes} nodes "
                f"(got {c.reservation_start_nodes})"
            )
    return p


def _flex_start_problems(
    c: CapacityInputs, *, autopilot: bool, machine_type: Optional[str], gke_version: Optional[str]
) -> list[str]:
    """Flex-start's run-time bound, machine types and GKE floor, and the ComputeClass wait (Autopilot only)."""
    p: list[str] = []
    models = list(c.models)
    max_hours = catalog.FLEX_START_MAX_RUN_SECONDS // 3600
    if not 1 <= c.flex_start_max_run_hours <= max_hours:
        p.append(
            f"{_key('flexStartMaxRunHours')}: {c.flex_start_max_run_hours} h is outside 1..{max_hours}: "
            "flex-start nodes run at most 7 days"
        )
    if FLEX_START in models:
        if machine_type is not None and machine_type not in catalog.FLEX_START_MACHINES:
            p.append(
                f"{_key('capacity')}: flex-start does not support machine type {machine_type} (supported: "
                f"{', '.join(sorted(catalog.FLEX_START_MACHINES))})"
            )
        if not _version_at_least(gke_version, catalog.FLEX_START_GPU_MIN_GKE):
            p.append(
                f"{_key('capacity')}: flex-start for GPUs needs GKE {catalog.FLEX_START_GPU_MIN_GKE} or later; "
                f"{_key('gkeVersion')} is {gke_version}"
            )
    if c.flex_start_wait_minutes is None:
        return p
    lo, hi = catalog.COMPUTE_CLASS_WAIT_RANGE_SECONDS
    if not autopilot:
        p.append(
            f"{_key('flexStartWaitMinutes')}: only applies to Autopilot; a Standard ComputeClass orders "
            "pools by name and such a priority cannot carry a wait (GKE's own default applies)"
        )
    elif FLEX_START not in models:
        p.append(f"{_key('flexStartWaitMinutes')}: needs 'flex-start' in {_key('capacity')}")
    elif models[-1] == FLEX_START:
        p.append(
            f"{_key('flexStartWaitMinutes')}: flex-start is the last model, so there is nothing to fall "
            "back to after the wait; unset it or list a model after flex-start"
        )
    elif not lo <= c.flex_start_wait_minutes * 60 <= hi:
        p.append(
            f"{_key('flexStartWaitMinutes')}: must be between 1 and {hi // 60} minutes (got "
            f"{c.flex_start_wait_minutes})"
        )
    elif not _version_at_least(gke_version, catalog.COMPUTE_CLASS_WAIT_MIN_GKE):
        p.append(
            f"{_key('flexStartWaitMinutes')}: the ComputeClass wait field needs GKE "
            f"{catalog.COMPUTE_CLASS_WAIT_MIN_GKE} or later; {_key('gkeVersion')} is {gke_version}"
        )
    return p


def _placement_problems(c: CapacityInputs, *, autopilot: bool, machine_type: Optional[str]) -> list[str]:
    """Compact placement only where a model of the chain can have it; a known topology distance."""
    p: list[str] = []
    if c.placement not in PLACEMENTS:
        p.append(f"{_key('gpuPlacement')}: must be one of {', '.join(PLACEMENTS)} (got {c.placement!r})")
    elif c.placement == "compact":
        if autopilot:
            p.append(
                f"{_key('gpuPlacement')}: compact placement is not available for "
                f"{' / '.join(catalog.families())} on Autopilot "
                "(Autopilot compact placement supports A100, L4 and H100 GPUs only); use auto or none"
            )
        elif machine_type is not None:
            can = [
                m
                for m in c.models
                if m == SPOT or (m == FLEX_START and machine_type in catalog.FLEX_START_WORKLOAD_POLICY_MACHINES)
            ]
            if not can:
                supported = catalog.one_of(catalog.families(lambda a: a.flex_start_workload_policy), "and")
                p.append(
                    f"{_key('gpuPlacement')}: none of {', '.join(c.models) or 'the listed models'} can have "
                    "compact placement (a reservation brings its own block placement; flex-start needs a "
                    f"workload policy, supported on {supported}); use auto or none"
                )
    if c.placement_distance not in catalog.WORKLOAD_POLICY_TOPOLOGY_DISTANCES:
        p.append(
            f"{_key('gpuPlacementDistance')}: must be one of "
            f"{', '.join(catalog.WORKLOAD_POLICY_TOPOLOGY_DISTANCES)} (got {c.placement_distance!r})"
        )
    return p


def _compute_class_problems(name: str, gke_version: Optional[str]) -> list[str]:
    """The class name is an object name and a node label value, outside GKE's reserved prefixes."""
    p: list[str] = []
    if not _K8S_LABEL_NAME.match(name):
        p.append(
            f"{_key('computeClass')}: {name!r} must be a lowercase RFC 1123 label (letters, digits, hyphens; "
            "at most 63): it is both the object's name and a node label value"
        )
    elif name.startswith(catalog.COMPUTE_CLASS_RESERVED_PREFIXES):
        p.append(
            f"{_key('computeClass')}: {name!r} starts with "
            f"{' or '.join(repr(x) for x in catalog.COMPUTE_CLASS_RESERVED_PREFIXES)}, which GKE reserves "
            "for its own classes"
        )
    if not _version_at_least(gke_version, catalog.COMPUTE_CLASS_MIN_GKE):
        p.append(
            f"{_key('gkeVersion')}: {gke_version} is older than {catalog.COMPUTE_CLASS_MIN_GKE}, needed by the "
            "custom ComputeClass that orders the GPU capacity"
        )
    return p


def plan_capacity(
    c: CapacityInputs, *, autopilot: bool, machine_type: str, gpu_type: str, zone: str, nodes: int, project: str
) -> CapacityPlan:
    """The plan for valid inputs (call check_capacity first)."""
    reservation = parse_reservation(c.reservation, project) if c.reservation else None
    return CapacityPlan(
        models=tuple(c.models),
        nodes=nodes,
        machine_type=machine_type,
        gpu_type=gpu_type,
        zone=zone,
        autopilot=autopilot,
        compute_class=c.compute_class,
        reservation=reservation,
        reservation_start_nodes=c.reservation_start_nodes,
        max_run_seconds=c.flex_start_max_run_hours * 3600,
        wait_seconds=c.flex_start_wait_minutes * 60 if c.flex_start_wait_minutes is not None else None,
        placement=c.placement,
        placement_distance=c.placement_distance,
    )


def parse_reservation(value: str, project: str) -> ReservationTarget:
    """A valid `reservation` setting (see CapacityInputs) as project, name and block."""
    parts = value.split("/")
    owner = project
    if parts[0] == "projects":
        owner, parts = parts[1], parts[3:]
    block = parts[2] if len(parts) == 3 else None
    return ReservationTarget(project=owner, name=parts[0], block=block, shared=owner != project)


def describe_chain(models: Sequence[str]) -> str:
    """'spot -> flex-start', for outputs and messages."""
    return " -> ".join(models)
