"""The GKE cluster (both modes) and its rules: GKE version floors, the maintenance window."""

from __future__ import annotations

import datetime
import re
from typing import TYPE_CHECKING, Literal, Optional

from core import catalog, node_fit
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    CLUSTER_PROTECTED,
    IN_PLACE,
    PLATFORM,
    REFUSED_BY_ENGINE,
    STANDARD,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

_HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
# Compute Engine machine type names: lowercase series, then hyphen-separated words and numbers
# (e.g. n2-standard-16, c3-highmem-88, n2-custom-8-32768; compute/docs/machine-resource).
_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")


class ClusterSettings(Section):
    """The GKE cluster (both modes)."""

    mode: Literal["standard", "autopilot"] = setting(
        "standard",
        key="clusterMode",
        description="GKE mode: standard or autopilot.",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={CLUSTER_PROTECTED: REFUSED_BY_ENGINE},
            touches=("*",),
            note="Standard and Autopilot are two clusters: everything in it is created again",
        ),
        bad=("kubernetes",),
        alternatives=({"clusterMode": "autopilot", "machineType": ""}, {"clusterMode": "standard"}),
        stack_alternatives={
            "codelab": {"clusterMode": "autopilot", "machineType": None, "gpuNodes": None, "workerReplicas": 8},
            "dev": {"clusterMode": "autopilot", "machineType": None, "gpuNodes": None, "workerReplicas": 2},
        },
    )
    control_plane: Literal["regional", "zonal"] = setting(
        "regional",
        key="controlPlane",
        description="Regional (3 control-plane replicas) or zonal control plane (in `zone`).",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={CLUSTER_PROTECTED: REFUSED_BY_ENGINE},
            touches=("Cluster cluster", "Dashboard dashboard", "NodePool *", "kubernetes k8s"),
            note="another cluster, with everything in it",
        ),
        bad=("x",),
        alternatives=({"controlPlane": "zonal"},),
        modes=STANDARD,
    )
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = setting(
        "REGULAR",
        key="releaseChannel",
        description="GKE release channel.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=("x",),
        alternatives=({"releaseChannel": "RAPID"},),
    )
    gke_version: Optional[str] = setting(
        None,
        key="gkeVersion",
        description="Minimum GKE version (e.g. 1.33 or 1.33.2-gke.4780000); default: the channel's default.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=("latest",),
        alternatives=({"gkeVersion": "1.34"},),
    )
    maintenance_start: str = setting(
        "03:00",
        key="maintenanceStart",
        description="Start (HH:MM, UTC) of the daily 4-hour maintenance window.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=("3am",),
        alternatives=({"maintenanceStart": "04:00"},),
    )
    maintenance_exclusion_start: Optional[str] = setting(
        None,
        key="maintenanceExclusionStart",
        description=(
            "First day (YYYY-MM-DD, UTC) of a window in which GKE does not drain nodes for minor or node upgrades "
            "(NO_MINOR_OR_NODE_UPGRADES), e.g. the start of a long run; unset: no exclusion, nodes get GKE's "
            "patches in the maintenance window. Does not stop host maintenance, spot preemption or auto-repair."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=("tomorrow", "2026-13-01"),
        alternatives=({"maintenanceExclusionStart": "2027-01-10"},),
    )
    maintenance_exclusion_days: int = setting(
        14,
        key="maintenanceExclusionDays",
        description="Length of that window in days, at most 30: node security patches wait at most this long.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=(0, 31),
        alternatives=({"maintenanceExclusionStart": "2027-01-10", "maintenanceExclusionDays": 7},),
    )
    system_machine_type: str = setting(
        "n2-standard-16",
        key="systemMachineType",
        description=(
            "Machine type of both CPU pools: the system pool (GKE's and the operators' pods) and the autoscaling CPU "
            "pool of the Ray heads, submitters and CPU Jobs, which grows to what the platform and every job its GPUs "
            "can run need, summed node by node."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("NodePool system", "NodePool cpu", "ClusterQueue kueue-*"),
            note="updated in place, but GKE recreates every node of both pools: the Ray heads are evicted",
        ),
        bad=("$x", "N2 standard"),
        alternatives=({"systemMachineType": "n2-standard-32"},),
        modes=STANDARD,
    )
    system_nodes: int = setting(
        1,
        key="systemNodes",
        description=(
            "Nodes of the CPU system pool (in `zone`), for GKE's and the operators' pods; the Ray heads, submitters "
            "and CPU Jobs have the autoscaling CPU pool."
        ),
        ge=1,
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("NodePool system",)),
        bad=(0, 1001),
        alternatives=({"systemNodes": 2},),
        modes=STANDARD,
    )


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    c = s.cluster
    if c.gke_version is not None:
        try:
            catalog.parse_gke_version(c.gke_version)
        except ValueError:
            p.append(f"{key('gkeVersion')}: {c.gke_version!r} is not a GKE version like 1.33 or 1.33.2-gke.4780000")
        else:
            floors = [(catalog.RAY_OPERATOR_MIN_GKE, "the RayOperator add-on")]
            acc = catalog.ACCELERATORS.get(s.gpu.gpu_type)
            if acc is not None:
                floors.append((acc.min_gke_version, f"{acc.gpu_type} ({acc.machine_type})"))
            if s.lustre.port_mode == "modern":
                floors.append(
                    (
                        catalog.LUSTRE_MODERN_PORT_MIN_GKE,
                        f"Lustre port mode 'modern' ({key('lustrePortMode')}; or use 'legacy')",
                    )
                )
            if s.startup.export_checkpoints and s.job.enabled:
                floors.append(
                    (
                        catalog.GCSFUSE_STREAMING_WRITES_DEFAULT_MIN_GKE,
                        f"the checkpoint export's streaming writes to the bucket ({key('exportCheckpoints')}; "
                        "its sidecar has no room to stage a checkpoint file)",
                    )
                )
            if s.image_streaming:
                floors.append(
                    (
                        catalog.IMAGE_STREAMING_MIN_GKE_AUTOPILOT
                        if s.autopilot
                        else catalog.IMAGE_STREAMING_MIN_GKE_STANDARD,
                        f"image streaming ({key('imagePath')})",
                    )
                )
            for floor, why in floors:
                if not catalog.version_at_least(c.gke_version, floor):
                    p.append(f"{key('gkeVersion')}: {c.gke_version} is older than {floor}, needed by {why}")
    if not s.autopilot:
        # The Ray head runs on one system node: its requests must fit what that node offers (core/node_fit.py).
        p.extend(
            node_fit.head_problems(
                node_fit.Resources(s.workload.head_cpu, s.workload.head_memory_gib), c.system_machine_type
            )
        )
    # Autopilot has no system pool: a value set there is reported once, as a Standard-only key.
    if not system_nodes_valid(s):
        # The system pool lives in `zone` (infra/cluster.py); GKE's per-pool-per-zone node limit (core.catalog).
        p.append(
            f"{key('systemNodes')}: {c.system_nodes} nodes exceed GKE's {catalog.GKE_MAX_NODES_PER_POOL_ZONE} "
            f"nodes per node pool per zone; the system pool is one pool in {key('zone')}"
        )
    if not s.autopilot and not _MACHINE_TYPE.match(c.system_machine_type):
        p.append(
            f"{key('systemMachineType')}: {c.system_machine_type!r} is not a Compute Engine machine type name "
            "such as n2-standard-16"
        )
    if not _HHMM.match(c.maintenance_start):
        p.append(f"{key('maintenanceStart')}: {c.maintenance_start!r} must be HH:MM (UTC), e.g. 03:00")
    p.extend(_exclusion_problems(c))
    return p


def system_nodes_valid(s: "UncheckedSettings") -> bool:
    return s.autopilot or s.cluster.system_nodes <= catalog.GKE_MAX_NODES_PER_POOL_ZONE


def _exclusion_problems(c: ClusterSettings) -> list[str]:
    days = c.maintenance_exclusion_days
    if not 1 <= days <= catalog.MAINTENANCE_EXCLUSION_MAX_DAYS:
        return [
            f"{key('maintenanceExclusionDays')}: {days} is outside 1..{catalog.MAINTENANCE_EXCLUSION_MAX_DAYS}: "
            "a longer window holds back node security patches for longer"
        ]
    if c.maintenance_exclusion_start is not None and exclusion_window(c) is None:
        return [
            f"{key('maintenanceExclusionStart')}: {c.maintenance_exclusion_start!r} is not a date like "
            "2026-12-01 (YYYY-MM-DD, UTC)"
        ]
    return []


def exclusion_window(c: ClusterSettings) -> Optional[tuple[str, str]]:
    """(start, end) as RFC 3339 UTC timestamps of the maintenance exclusion, or None without a valid start."""
    if c.maintenance_exclusion_start is None:
        return None
    try:
        start = datetime.date.fromisoformat(c.maintenance_exclusion_start)
    except ValueError:
        return None
    if start.isoformat() != c.maintenance_exclusion_start:
        return None
    end = start + datetime.timedelta(days=c.maintenance_exclusion_days)
    return f"{start.isoformat()}T00:00:00Z", f"{end.isoformat()}T00:00:00Z"


def exclusion_warnings(c: ClusterSettings, today: Optional[datetime.date] = None) -> list[str]:
    """A window that has already ended protects nothing; `pulumi preview` says so."""
    window = exclusion_window(c)
    if window is None:
        return []
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    end = datetime.date.fromisoformat(window[1][:10])
    if end <= today:
        return [
            f"{key('maintenanceExclusionStart')}: the node-upgrade freeze ended on {end.isoformat()}; nodes "
            "take GKE's upgrades again (set a new start date for the next run, or unset it)"
        ]
    return []
