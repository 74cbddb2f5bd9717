"""Prices the cost estimate may use without the user or the network: only figures read on a Google page, each with
the page and the date it was read (docs/research/platform.md §5). Every other price (GPU nodes per capacity model, CPU
nodes, Autopilot Pods, Managed Lustre, the Ray heads) had no authoritative page at that date: at preview and up the
program reads them from Google's Cloud Billing Catalog API (core/catalog/billing.py, infra/price_catalog.py); where
that read fails or lacks a SKU the estimate prints the line as unknown and names the `prices.<key>` setting that
supplies it, never a guessed number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Price:
    usd: float
    unit: str
    source: str
    read_on: str
    region: Optional[str] = None  # None: the same everywhere
    note: str = ""


# "$0.10 per cluster per hour ... irrespective of the mode of operation, cluster size, or topology", charged in
# 1-second increments.
GKE_CLUSTER_FEE = Price(
    0.10,
    "cluster-hour",
    "https://cloud.google.com/kubernetes-engine/pricing#cluster_management_fee_and_free_tier",
    "2026-12-01",
    note="Standard and Autopilot alike; free-tier credit not applied; extended-support surcharge not included",
)
# The free tier, same page ("Free tier", read 2026-12-01): "$74.40 in monthly credits per billing account, which is
# equivalent to one free Autopilot or zonal Standard cluster per month. Free tier credits are only applied to zonal
# and Autopilot clusters" (never to a regional Standard cluster, nor to compute). Per billing account, so the
# estimate of one stack cannot know whether another cluster already uses it: it names the credit, applies none.
GKE_FREE_TIER_CREDIT = Price(
    74.40,
    "billing-account-month",
    "https://cloud.google.com/kubernetes-engine/pricing#cluster_management_fee_and_free_tier",
    "2026-12-01",
    note="one zonal Standard or Autopilot cluster per billing account; never a regional Standard cluster",
)
# Autopilot Spot Pods, same page (GPU Pods table, read 2026-12-01): "Spot prices are dynamic and can change up to once
# every 30 days, but always provide discounts of 60-91% off of the corresponding regular price for CPU, memory and
# GPU." A bound, not a price: the estimate states the range from the regular price when the Spot price is unknown.
AUTOPILOT_SPOT_DISCOUNT = (0.60, 0.91)
AUTOPILOT_SPOT_DISCOUNT_SOURCE = "https://cloud.google.com/kubernetes-engine/pricing (GPU Pods, read 2026-12-01)"
# Cloud Storage Standard class, at rest; GB there is 2^30 bytes (GiB).
GCS_STANDARD_GIB_MONTH = {
    "us-central1": Price(0.020, "GiB-month", "https://cloud.google.com/storage/pricing", "2026-12-01", "us-central1"),
}
# Hours in the month the monthly prices are spread over: the usual calculator convention (Google's own free-tier
# arithmetic, $74.40 = 744 h x $0.10, uses a 31-day month): an assumption the estimate states.
HOURS_PER_MONTH = 730

# The prices a user supplies (setting `prices`, USD), with what each one is per.
USER_PRICE_KEYS = {
    "gpuNodeSpot": "one GPU node (the stack's machine type) per hour on Spot VMs",
    "gpuNodeFlexStart": "one GPU node per hour with flex-start (Dynamic Workload Scheduler)",
    "gpuNodeList": "one GPU node per hour at the list price, which a reservation bills whether or not nodes run",
    "cpuNode": "one CPU system-pool node (systemMachineType) per hour",
    "autopilotGpuPodHour": "one Autopilot GPU Pod filling a node, per hour, at the regular price (reservations too)",
    "autopilotGpuPodSpot": "one Autopilot GPU Spot Pod filling a node, per hour (60-91 % below the regular price)",
    "autopilotGpuPodFlexStart": "one Autopilot GPU Pod filling a node, per hour, with flex-start",
    "lustreGibMonth": "one GiB of Managed Lustre at the stack's tier, per month",
    "headVcpuHour": "one vCPU of a Ray head per hour: of the CPU pool's machine series (Standard) or an Autopilot Pod",
    "headMemoryGibHour": "one GiB of a Ray head's memory per hour, the same way",
    "storageGibMonth": "one GiB of Cloud Storage Standard in the stack's region, per month (default: the catalog's)",
}
PRICE_PAGES = {
    "gpuNodeSpot": "https://cloud.google.com/spot-vms/pricing",
    "gpuNodeFlexStart": "https://cloud.google.com/compute/vm-instance-pricing",
    "gpuNodeList": "https://cloud.google.com/compute/vm-instance-pricing",
    "cpuNode": "https://cloud.google.com/compute/vm-instance-pricing",
    "autopilotGpuPodHour": "https://cloud.google.com/kubernetes-engine/pricing",
    "autopilotGpuPodSpot": "https://cloud.google.com/kubernetes-engine/pricing",
    "autopilotGpuPodFlexStart": "https://cloud.google.com/kubernetes-engine/pricing",
    "lustreGibMonth": "https://cloud.google.com/managed-lustre/pricing",
    "headVcpuHour": "https://cloud.google.com/compute/vm-instance-pricing",
    "headMemoryGibHour": "https://cloud.google.com/compute/vm-instance-pricing",
    "storageGibMonth": "https://cloud.google.com/storage/pricing",
}
