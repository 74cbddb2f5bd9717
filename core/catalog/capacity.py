"""GPU capacity: the consumption models, their version floors and the ComputeClass that orders them (read
2026-11-30, each fact with its source). Used by core/capacity.py, the GPU capacity component and
workloads/manifests/compute_class.py.
"""

from __future__ import annotations

from typing import Optional

# The capacity models a stack may list; the list's order is the order GKE tries them in.
CAPACITY_MODELS: tuple[str, ...] = ("spot", "flex-start", "reservation")

# Which machine types have plain on-demand capacity, support flex-start, and flex-start compact placement: the GPU
# records (gpus.py: NO_ON_DEMAND_MACHINES, FLEX_START_MACHINES, FLEX_START_WORKLOAD_POLICY_MACHINES, with sources).

# Flex-start (Dynamic Workload Scheduler) for GPUs needs GKE >= 1.32.2-gke.1652000 (GKE "About GPU, TPU and H4D
# consumption with flex-start", kubernetes-engine/docs/concepts/dws, read 2026-11-30).
FLEX_START_GPU_MIN_GKE = "1.32.2-gke.1652000"
# Flex-start VMs run for at most seven days; GKE's default maxRunDuration is those seven days (same page;
# Compute Engine "About Flex-start VMs").
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
# gcp.compute.ResourcePolicyWorkloadPolicyArgs.max_topology_distance (pulumi-gcp 10.2.0 docstring).
WORKLOAD_POLICY_TOPOLOGY_DISTANCES: tuple[str, ...] = ("SUBBLOCK", "BLOCK", "CLUSTER")
# Flex-start pools: no static nodes and node auto-repair off (Cluster Toolkit gke-node-pool preconditions
# "enable_flex_start does not work with static_node_count", "enable_flex_start needs node auto_repair set to
# false", and reservation affinity NO_RESERVATION; same commit). Spot pools: NO_RESERVATION too.

# Spot VMs: 30 s preemption notice (Compute Engine "Spot VMs"); Compute Engine may preempt them at any time.
SPOT_NOTICE_SECONDS = 30

# Custom ComputeClass (`cloud.google.com/v1`): GKE >= 1.30.3-gke.1451000 in Standard and Autopilot (GKE "About
# custom ComputeClasses", kubernetes-engine/docs/concepts/about-custom-compute-classes, read 2026-11-30).
COMPUTE_CLASS_MIN_GKE = "1.30.3-gke.1451000"
COMPUTE_CLASS_API_VERSION = "cloud.google.com/v1"
COMPUTE_CLASS_KIND = "ComputeClass"
# Pods select a class with this node selector; manually created pools join a class with this label and a
# NoSchedule taint of the same key (GKE "About custom ComputeClasses": configure manually created node pools).
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
# Names GKE reserves for its own classes: "the name can't start with gke or autopilot" (GKE "About custom
# ComputeClasses", https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes).
COMPUTE_CLASS_RESERVED_PREFIXES: tuple[str, ...] = ("gke", "autopilot")
# `priorities[].capacityCheckWaitTimeSeconds` (how long a flex-start priority is tried before the next one):
# 1..86400 s, flex-start (or multi-host TPU) priorities only. The field is absent from the CRD as published in
# May 2025 and present in the CRD taken from a GKE 1.33 cluster (datreeio/CRDs-catalog
# cloud.google.com/computeclass_v1.json @a2770aa3be4603a35db36e4c301d560720061895, 2026-02-26): we require 1.33
# because no earlier floor is documented. A `nodepools` priority may carry no other field (CRD rule "Nodepool
# field cannot be set along with other fields"), so on Standard the wait cannot be set.
COMPUTE_CLASS_WAIT_MIN_GKE = "1.33"
COMPUTE_CLASS_WAIT_RANGE_SECONDS = (1, 86400)

# Specific reservations: node pool reservation affinity key and the value form for a block of a reservation
# (Cluster Toolkit modules/compute/gke-node-pool/reservation_definitions.tf builds
# "projects/<p>/reservations/<r>/reservationBlocks/<b>"; xpk src/xpk/core/reservation.py parses the same form,
# @367c838253bea41e7d7716145ad6513f44c1a21e).
RESERVATION_AFFINITY_KEY = "compute.googleapis.com/reservation-name"


def reservation_path(project: str, name: str, block: Optional[str] = None) -> str:
    """`projects/<p>/reservations/<r>[/reservationBlocks/<b>]`, the reservation affinity value GKE takes."""
    path = f"projects/{project}/reservations/{name}"
    return f"{path}/reservationBlocks/{block}" if block else path
