"""The custom ComputeClass (`cloud.google.com/v1`) that orders the GPU capacity models, as a plain dict.

Standard: one `nodepools` priority per capacity model, in the stack's order, naming the manually created GPU
pools (each labelled and tainted with the class, each carrying the RDMA node networks); node auto-creation is
off, because pools GKE creates cannot carry the nine additional node networks.

Autopilot: there are no pools. Each model is a machine priority (A4 / A3 Ultra machine type, its 8 GPUs, the
RoCE zone) with `spot`, `flexStart` (plus the run limit and, if set, how long to wait before the next priority)
or a specific `reservations` entry (block included). Autopilot creates the nodes.

Both: `whenUnsatisfiable: DoNotScaleUp` (workers wait rather than land on capacity outside the list) and
`activeMigration.optimizeRulePriority: false` (GKE must not move running training workers to a
higher-priority model when it frees up: that would restart the job). The workers select the class with the
node selector `cloud.google.com/compute-class` and tolerate its taint (`worker_scheduling()`).

Validated in tests against the ComputeClass CRD schema published from GKE clusters, CEL rules included.
"""

from __future__ import annotations

from core import catalog
from core.capacity import FLEX_START, POOL_NAMES, RESERVATION, SPOT, CapacityPlan, describe_chain


def _autopilot_priority(plan: CapacityPlan, model: str) -> dict:
    prio: dict = {
        "machineType": plan.machine_type,
        "gpu": {"type": plan.gpu_type, "count": catalog.accelerator(plan.gpu_type).gpus_per_node},
        # The RoCE network profile is zonal: nodes elsewhere could not attach the RDMA networks.
        "location": {"zones": [plan.zone]},
    }
    if model == SPOT:
        prio["spot"] = True
    elif model == FLEX_START:
        prio["flexStart"] = {"enabled": True}
        prio["maxRunDurationSeconds"] = plan.max_run_seconds
        if plan.wait_seconds is not None:
            prio["capacityCheckWaitTimeSeconds"] = plan.wait_seconds
    elif model == RESERVATION:
        assert plan.reservation is not None
        entry: dict = {"name": plan.reservation.name}
        if plan.reservation.shared:
            entry["project"] = plan.reservation.project
        if plan.reservation.block:
            entry["reservationBlock"] = {"name": plan.reservation.block}
        prio["reservations"] = {"affinity": "Specific", "specific": [entry]}
    return prio


def compute_class_spec(plan: CapacityPlan) -> dict:
    if plan.autopilot:
        priorities = [_autopilot_priority(plan, m) for m in plan.models]
    else:
        # A nodepools priority may carry no other field (CRD rule); each pool holds one model.
        priorities = [{"nodepools": [POOL_NAMES[m]]} for m in plan.models]
    return {
        "description": f"NeMo-RL GPU workers: {describe_chain(plan.models)} ({plan.machine_type}, {plan.zone})",
        "priorities": priorities,
        "nodePoolAutoCreation": {"enabled": plan.autopilot},
        "activeMigration": {"optimizeRulePriority": False},
        "whenUnsatisfiable": "DoNotScaleUp",
    }


def compute_class_manifest(plan: CapacityPlan) -> dict:
    """The full ComputeClass object (cluster-scoped)."""
    return {
        "apiVersion": catalog.COMPUTE_CLASS_API_VERSION,
        "kind": catalog.COMPUTE_CLASS_KIND,
        "metadata": {"name": plan.compute_class, "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"}},
        "spec": compute_class_spec(plan),
    }


# Autopilot taints the Spot VMs it creates (GKE "Run fault-tolerant workloads at lower costs in Spot Pods") and
# adds the toleration only to pods that select `cloud.google.com/gke-spot`; the workers select the class instead.
SPOT_TAINT_KEY = "cloud.google.com/gke-spot"


def worker_scheduling(compute_class: str, spot: bool = False) -> tuple[dict, list[dict]]:
    """(node selector entries, tolerations) that put a GPU worker pod on the class's capacity; `spot`: the
    chain has spot capacity, whose nodes Autopilot taints."""
    selector = {catalog.COMPUTE_CLASS_LABEL: compute_class}
    tolerations = [
        {"key": catalog.COMPUTE_CLASS_LABEL, "operator": "Equal", "value": compute_class, "effect": "NoSchedule"}
    ]
    if spot:
        tolerations.append({"key": SPOT_TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    return selector, tolerations
