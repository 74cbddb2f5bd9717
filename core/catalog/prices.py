"""Prices the cost estimate may use without the user: only figures read on a Google page, each with the page and the
date it was read (docs/research/platform.md §5). Every other price (GPU nodes per capacity model, CPU nodes,
Autopilot Pods, Managed Lustre) had no authoritative source at that date: the estimate prints such a line as unknown
and names the `prices.<key>` setting that supplies it, never a guessed number.
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
# 1-second increments; the free tier's monthly credit covers one zonal Standard or Autopilot cluster per billing
# account and never a regional one (the estimate applies no credit and says so).
GKE_CLUSTER_FEE = Price(
    0.10,
    "cluster-hour",
    "https://cloud.google.com/kubernetes-engine/pricing#cluster_management_fee_and_free_tier",
    "2026-12-01",
    note="Standard and Autopilot alike; free-tier credit not applied; extended-support surcharge not included",
)
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
    "autopilotGpuPodHour": "one Autopilot GPU Pod filling a node, per hour",
    "lustreGibMonth": "one GiB of Managed Lustre at the stack's tier, per month",
    "storageGibMonth": "one GiB of Cloud Storage Standard in the stack's region, per month (default: the catalog's)",
}
PRICE_PAGES = {
    "gpuNodeSpot": "https://cloud.google.com/spot-vms/pricing",
    "gpuNodeFlexStart": "https://cloud.google.com/compute/vm-instance-pricing",
    "gpuNodeList": "https://cloud.google.com/compute/vm-instance-pricing",
    "cpuNode": "https://cloud.google.com/compute/vm-instance-pricing",
    "autopilotGpuPodHour": "https://cloud.google.com/kubernetes-engine/pricing",
    "lustreGibMonth": "https://cloud.google.com/managed-lustre/pricing",
    "storageGibMonth": "https://cloud.google.com/storage/pricing",
}
