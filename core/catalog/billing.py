"""Google's Cloud Billing Catalog API and how its SKUs map to what a stack runs (read by infra/price_catalog.py).

The API (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list, and the how-to
https://cloud.google.com/billing/v1/how-tos/catalog-api, read 2026-12-02):
- `GET /v1/services` lists the public services (`serviceId`, `displayName`); `GET /v1/services/{id}/skus` their
  public SKUs. Both are paginated: "limited to 5000 SKUs per page", a `nextPageToken` for the next page, no token
  once everything is listed; `pageSize` lowers the page, `currencyCode` picks the currency.
- A SKU: `skuId`, `description`, `category {resourceFamily, resourceGroup, usageType}`, `serviceRegions`,
  `pricingInfo[] {pricingExpression {usageUnit, tieredRates[] {startUsageAmount, unitPrice {currencyCode, units,
  nanos}}}}`. A price is `units + nanos / 1e9` of the currency per `usageUnit` ("h", "GiBy.h", "GiBy.mo"); a tier's
  rate applies past its `startUsageAmount` (in usage units).
- Who may call it: the how-to asks for "the Cloud Billing API" enabled and "an API key"; the method lists "all
  publicly available SKUs" and names no IAM permission, only OAuth scopes (cloud-billing.readonly, cloud-billing,
  cloud-platform). So any authenticated principal may read it; with user credentials the request is accounted to
  their quota project, where the Cloud Billing API must be enabled.

How a SKU is found (knowledge taken from SkyPilot's GCP catalog fetcher, skypilot-org/skypilot
`sky/catalog/data_fetchers/fetch_gcp.py` @21fd55418804a41d20fe7563db9c808763159722: `get_skus` keeps
`resourceFamily` "Compute" with `usageType` "OnDemand" or "Preemptible" and drops "custom", "premium", "reserved"
and "sole tenancy" SKUs; `get_vm_df` prices a machine as vCPUs x its series' CPU SKU + GiB x its RAM SKU, the
series named in the description ('A3 Instance', 'N2 Instance', 'N1 Predefined Instance', ...), the region in
`serviceRegions`, spot being `usageType` "Preemptible"; `get_gpu_df` adds GPUs x the GPU SKU (`resourceGroup`
"GPU"), H200 as 'H200 141GB GPU' and B200 as 'Nvidia B200 (1 gpu slice)'; `_get_unit_price` reads
`tieredRates[0].unitPrice` as units + nanos; and it notes "GCP does not have A4 instance in SKUs API yet"). The
code here is our own. Descriptions are compared with case, spaces and punctuation removed, because the catalog
spells one series both "A3Ultra" and "A3 Ultra" (SKU descriptions quoted by public catalog readers, e.g.
SpareCores/sc-crawler's tests and billing-export notes: "Spot Preemptible A3 Instance Core running in Americas",
"H200 141GB GPU running in Netherlands", "DWS Defined Duration A3 Ultra Instance Core", "Managed Lustre Capacity
500-Perf Iowa", "Autopilot Pod mCPU Requests (us-central1)").

Unverified here (no credentials in this sandbox): the flex-start spelling ("DWS Defined Duration ..."), the
Managed Lustre and Autopilot GPU Pod SKUs. Where a rule finds nothing the estimate names the SKU it looked for and
falls back to `prices` and the dated catalog, so a wrong rule shows as a named gap, never as a wrong price.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional

CATALOG_API = "https://cloudbilling.googleapis.com/v1"
CATALOG_SCOPE = "https://www.googleapis.com/auth/cloud-billing.readonly"
CATALOG_PAGE_SIZE = 5000  # the how-to's page limit
CATALOG_REFERENCE = "https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list"
# A read at preview must not hold the preview up: one budget for every page of every service, then the estimate
# falls back. Compute Engine alone is several pages of 5,000 SKUs; the day's cache makes later previews instant.
CATALOG_READ_SECONDS = 30.0
CATALOG_REQUEST_SECONDS = 10.0
CATALOG_CACHE_HOURS = 24

# The services read, by their catalog display names (services.list). Managed Lustre's display name was not read
# here: the service whose display name contains "Lustre".
SERVICE_NAMES = MappingProxyType({"compute": "Compute Engine", "gke": "Kubernetes Engine", "storage": "Cloud Storage"})
SERVICE_NAME_CONTAINS = MappingProxyType({"lustre": "lustre"})

# Capacity models as the catalog spells them. SkyPilot: spot = usageType "Preemptible" (descriptions "Spot
# Preemptible ..." / "... attached to Spot Preemptible VMs ..."); on-demand = "OnDemand" without a qualifier.
# Flex-start (Dynamic Workload Scheduler) SKUs are "DWS Defined Duration ..." ("DWS Flex Start" on some series);
# "DWS Calendar Mode", commitments, reservations, sole tenancy, custom machines and premiums are other prices.
LIST = "list"
SPOT = "spot"
FLEX_START = "flex-start"
FLEX_START_WORDS = ("dwsdefinedduration", "dwsflexstart")
SPOT_WORDS = ("spotpreemptible", "preemptible", "spot")
NOT_THESE = ("custom", "soletenancy", "premium", "commitment", "reserved", "calendarmode", "capacityoptimized")


def normalized(text: str) -> str:
    """A description as the rules compare it: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def capacity_model(description: str, usage_type: str) -> Optional[str]:
    """LIST, SPOT or FLEX_START for a SKU's description and usageType, or None for every other price."""
    d = normalized(description)
    if any(w in d for w in NOT_THESE) or usage_type.startswith("Commit"):
        return None
    if any(w in d for w in FLEX_START_WORDS):
        return FLEX_START
    if usage_type == "Preemptible" or any(w in d for w in SPOT_WORDS):
        return SPOT
    if usage_type == "OnDemand" and "dws" not in d:
        return LIST
    return None


@dataclass(frozen=True)
class SkuRule:
    """One SKU a price is made of: the service, a normalized fragment of its description, the unit it is priced
    in here (vcpu-hour, gib-hour, gpu-hour, gib-month) and the name the estimate gives it when it is missing."""

    name: str
    service: str  # a key of SERVICE_NAMES
    contains: tuple[str, ...]
    per: str
    group: Optional[str] = None  # category.resourceGroup, where the catalog sets one we rely on
    anchored: bool = False  # the description starts with contains[0]
    required: bool = True  # False: priced when the catalog has it, named when it has not, the price stands


def _compute(series: str, part: str) -> SkuRule:
    token = normalized(f"{series} Instance {part}")
    return SkuRule(f"{series} Instance {part}", "compute", (token,), "vcpu-hour" if part == "Core" else "gib-hour")


@dataclass(frozen=True)
class MachineSkus:
    """The SKUs one machine type is billed by: vCPUs x core + GiB x RAM (+ GPUs x the GPU SKU)."""

    core: SkuRule
    ram: SkuRule
    gpu: Optional[SkuRule] = None


def _gpu(name: str) -> SkuRule:
    return SkuRule(name, "compute", (normalized(name),), "gpu-hour", group="GPU")


# GPU machines, keyed by machine type. A3 Ultra: 'A3Ultra Instance Core/Ram' (SkyPilot's 'A3 Instance' rule
# would also match them, so the series is spelled whole) + 8 x 'H200 141GB GPU'. A4: 8 x 'Nvidia B200 (1 gpu
# slice)'; SkyPilot found no 'A4 Instance' core or RAM SKU, so they are looked for and named when absent, and the
# node is then priced from its slices alone.
GPU_MACHINE_SKUS: Mapping[str, MachineSkus] = MappingProxyType(
    {
        "a3-ultragpu-8g": MachineSkus(
            _compute("A3 Ultra", "Core"), _compute("A3 Ultra", "Ram"), _gpu("H200 141GB GPU")
        ),
        "a4-highgpu-8g": MachineSkus(
            SkuRule("A4 Instance Core", "compute", ("a4instancecore",), "vcpu-hour", required=False),
            SkuRule("A4 Instance Ram", "compute", ("a4instanceram",), "gib-hour", required=False),
            _gpu("Nvidia B200 (1 gpu slice)"),
        ),
    }
)
# The token each GPU is named by in other services' SKUs (Autopilot GPU Pods).
GPU_TOKENS: Mapping[str, str] = MappingProxyType({"a3-ultragpu-8g": "h200", "a4-highgpu-8g": "b200"})

# CPU machine series (the system pool, the Ray heads on Standard), SkyPilot's SERIES_TO_DESCRIPTION for the
# series core/node_fit.py decodes; N1's SKUs share the resourceGroup "N1Standard" and differ by Core / Ram.
CPU_SERIES: Mapping[str, str] = MappingProxyType(
    {"n1": "N1 Predefined", "n2": "N2", "n2d": "N2D AMD", "e2": "E2", "c3": "C3"}
)


def cpu_machine_skus(machine_type: str) -> Optional[MachineSkus]:
    series = CPU_SERIES.get(machine_type.split("-", 1)[0])
    if series is None:
        return None
    return MachineSkus(_compute(series, "Core"), _compute(series, "Ram"))


# Autopilot (Kubernetes Engine service): general-purpose Pods bill their requests, "Autopilot Pod mCPU Requests
# (<region>)" per mCPU-hour (the SKU's name says mCPU; public readers convert x 1000 to a vCPU-hour) and "Autopilot
# Pod Memory Requests (<region>)" per GiB-hour. The Spot, Balanced and Scale-Out SKUs spell their class in the
# middle, so the fragment matches the general-purpose class only.
AUTOPILOT_POD_CPU = SkuRule("Autopilot Pod mCPU Requests", "gke", ("autopilotpodmcpurequests",), "vcpu-hour")
AUTOPILOT_POD_MEMORY = SkuRule("Autopilot Pod Memory Requests", "gke", ("autopilotpodmemoryrequests",), "gib-hour")


def autopilot_gpu_pod(machine_type: str) -> Optional[SkuRule]:
    """An Autopilot GPU Pod's GPU SKU (regular, Spot or flex-start by its description), per GPU-hour."""
    token = GPU_TOKENS.get(machine_type)
    if token is None:
        return None
    return SkuRule(f"Autopilot {token.upper()} GPU Pod", "gke", ("autopilot", token), "gpu-hour")


def lustre_capacity(tier: int) -> SkuRule:
    """Managed Lustre capacity at a throughput tier ("Managed Lustre Capacity 500-Perf Iowa"), per GiB-month."""
    return SkuRule(f"Managed Lustre Capacity {tier}-Perf", "lustre", (f"managedlustrecapacity{tier}perf",), "gib-month")


# Cloud Storage Standard class at rest in a region ("Standard Storage <location>"); multi- and dual-region SKUs
# start with their kind ("Multi-Region Standard Storage US"), hence anchored.
GCS_STANDARD = SkuRule("Standard Storage", "storage", ("standardstorage",), "gib-month", anchored=True)
