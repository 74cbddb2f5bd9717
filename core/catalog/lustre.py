"""Managed Lustre: performance tiers and capacities, ports, the CSI driver, root squash. Each fact names its
source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


# --- Managed Lustre -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LustreTier:
    throughput_mbps_per_tib: int
    min_gib: int
    step_gib: int
    step_until_gib: int  # up to this capacity the step is step_gib ...
    large_step_gib: int  # ... above it, large_step_gib
    max_gib: int

    def is_valid_capacity(self, gib: int) -> bool:
        if gib < self.min_gib or gib > self.max_gib:
            return False
        if gib <= self.step_until_gib:
            return gib % self.step_gib == 0
        # Above the threshold: multiples of the large step (the reading that makes the maxima valid, below).
        return gib % self.large_step_gib == 0

    def next_valid_capacity(self, gib: int) -> Optional[int]:
        """Smallest valid capacity >= gib, or None above the maximum."""
        if gib <= self.min_gib:
            return self.min_gib
        if gib <= self.step_until_gib:
            c = -(-gib // self.step_gib) * self.step_gib
        else:
            c = -(-gib // self.large_step_gib) * self.large_step_gib
        return c if c <= self.max_gib else None

    def throughput_bytes_per_s(self, gib: int) -> float:
        """Aggregate throughput: capacity in TiB x tier (MB/s per TiB)."""
        return gib / 1024 * self.throughput_mbps_per_tib * 1e6


# Managed Lustre tiers as published on the "Performance tiers" page (read 2026-11-30:
# https://cloud.google.com/managed-lustre/docs/performance-tiers, and .../increase-capacity). Columns:
# tier (MB/s per TiB), min GiB, max GiB, small step, threshold, large step. The page gives one step up to the
# threshold and a large step above it, without saying what the large steps count from. Every documented
# maximum is a multiple of its large step (10,008,000 = 139 x 72,000; 20,016,000 = 139 x 144,000;
# 40,032,000 = 139 x 288,000) while no threshold is (1,530,000 / 72,000 = 21.25), so the reading that makes
# the maxima valid is "multiples of the large step above the threshold" -- an inference, not a quote.
# An instance created at or below the threshold can only grow up to the threshold ("Limitations on
# increasing capacity"), and capacity never shrinks. The Dynamic tier (25 MB/s per TiB aggregate, 472,000 to
# 84,016,000 GiB in steps of 472,000) is set with dynamic_tier_options, not per_unit_storage_throughput.
LUSTRE_TIER_TABLE_2026_11: tuple[tuple[int, int, int, int, Optional[int], Optional[int]], ...] = (
    (1000, 9_000, 10_008_000, 9_000, 1_530_000, 72_000),
    (500, 18_000, 20_016_000, 18_000, 3_060_000, 144_000),
    (250, 36_000, 40_032_000, 36_000, 6_120_000, 288_000),
    (125, 72_000, 12_240_000, 72_000, None, None),
)
LUSTRE_DYNAMIC_TIER = (25, 472_000, 84_016_000, 472_000)

LUSTRE_TIERS: dict[int, LustreTier] = {
    tier: LustreTier(tier, lo, step, threshold or hi, large or step, hi)
    for tier, lo, hi, step, threshold, large in LUSTRE_TIER_TABLE_2026_11
}

# LNet ports: 988 by default; an instance created with gke_support_enabled listens on 6988 and the cluster
# must then set enable_legacy_lustre_port (Managed Lustre CSI driver, "Lustre communication ports":
# https://cloud.google.com/managed-lustre/docs/lustre-csi-driver-new-volume; the GKE version floor: gke.py).
LUSTRE_PORT = 988
LUSTRE_LEGACY_PORT = 6988
LUSTRE_CSI_DRIVER = "lustre.csi.storage.gke.io"

# Root squash (pulumi-gcp 10.2.0 lustre.InstanceAccessRulesOptionsArgs; GoogleCloudPlatform/magic-modules
# mmv1/products/lustre/Instance.yaml @055860eaab28e39a5e68d92e49ed6ddd334c2787: accessRulesOptions is not
# `immutable`, so turning it on for an existing instance is an in-place PATCH, never a replacement). Every client
# that reaches the PSA range would otherwise mount as root. The job cannot run squashed: the NeMo-RL image runs as
# root (NVIDIA-NeMo/RL docker/Dockerfile @00d2af95f9e1b567ff058c15840787a36128aaa0: "USER root", "It is more
# convenient for users to run as root"), the pods set no runAsUser, and the prefetch writes the HF cache as root
# too. The Lustre client is the node's kernel (the GKE Lustre CSI driver mounts on the node), and the instance is
# reached over the primary VPC only, so its NID is the node's primary address: the primary subnet is exempt
# (NO_SQUASH) and every other address is squashed to nobody. Rule names: at most 16 alphanumerics or '_'.
LUSTRE_NO_SQUASH_RULE = "gke_nodes"
# Squashed root becomes nobody / nogroup (65534 on Ubuntu, the NeMo-RL image's base: cuda-dl-base ...-ubuntu24.04 in
# the same Dockerfile); 0, the API's default, would squash nothing.
LUSTRE_SQUASH_ID = 65534

# --- Importing from Cloud Storage (weightsPath: bucket-import) -------------------------------------------------
# projects.locations.instances.importData (https://cloud.google.com/managed-lustre/docs/reference/rest/v1/
# projects.locations.instances/importData, read 2026-12): `POST https://lustre.googleapis.com/v1/{name}:importData`
# with `{requestId, gcsPath: {uri}, lustrePath: {path}}`, answered with a long-running operation, polled at `GET
# /v1/{name=projects/*/locations/*/operations/*}` (googleapis/googleapis google/cloud/lustre/v1/lustre_v1.yaml at
# 6c345acd, http rules). From the request's proto (google/cloud/lustre/v1/transfer.proto at 6c345acd): a gcsPath with
# a path inside the bucket "must end with a forward slash"; lustrePath "Must start with `/`. Default is `/`. If you're
# importing data into Managed Lustre, any path other than the default must already exist on the file system";
# requestId is a UUID4; the operation's metadata carries TransferCounters (objects/bytes found, copied, skipped,
# failed) and ErrorSummary entries (errorCode, errorCount, up to 5 errorLogEntries with uri and errorDetails).
# No Terraform or Pulumi resource calls it (terraform-provider-google-beta@93c65b2d google-beta/services/lustre/ holds
# only the instance resource and its data source; pulumi-gcp 10.2.0 lustre/ only instance.py and get_instance.py).
LUSTRE_API = "https://lustre.googleapis.com/v1"
LUSTRE_API_HOSTS = ("lustre.googleapis.com",)
# Managed Lustre "Transfer data to and from Cloud Storage" (https://cloud.google.com/managed-lustre/docs/transfer-data,
# ja copy read 2026-12), "Performance": transfers reach "up to 100 GBps for files larger than 32 MB", limited by the
# instance's maximum throughput (capacity x tier); transfers are incremental (only files missing at the destination or
# changed are copied); Cloud Storage gives a default egress of up to 200 Gbps per project and region (25 GB/s: it does
# not bind below that).
LUSTRE_IMPORT_MAX_BYTES_PER_S = 100e9
LUSTRE_IMPORT_LARGE_FILE_BYTES = 32e6
GCS_DEFAULT_EGRESS_BYTES_PER_S = 200e9 / 8
# Permissions (same page, "Required permissions"): the caller needs lustre.instances.importData ("both are granted by
# roles/lustre.admin; you can also create a custom role"); polling the operation needs lustre.operations.get (IAM
# "Google Cloud Managed Lustre roles and permissions", https://cloud.google.com/iam/docs/roles-permissions/lustre:
# importData is in roles/lustre.admin only, which also creates and deletes instances, so the import runs under a
# custom role holding exactly these two). The Managed Lustre service agent reads the bucket: roles/storage.objectViewer
# on the bucket "to transfer from Cloud Storage only" (roles/storage.objectUser for both directions). The agent is
# service-<project number>@gcp-sa-lustre.iam.gserviceaccount.com, "Primary service agent for lustre.googleapis.com",
# with no role granted by default (IAM "Service agents", https://cloud.google.com/iam/docs/service-agents); it may
# have to be created first (`gcloud beta services identity create --service=lustre.googleapis.com`).
LUSTRE_IMPORT_PERMISSIONS = ("lustre.instances.importData", "lustre.operations.get")
LUSTRE_AGENT_BUCKET_ROLE = "roles/storage.objectViewer"
LUSTRE_SERVICE = "lustre.googleapis.com"


def lustre_service_agent(project_number: str) -> str:
    return f"service-{project_number}@gcp-sa-lustre.iam.gserviceaccount.com"


def lustre_import_bytes_per_s(capacity_gib: int, tier: int) -> float:
    """What an import can reach on an instance: its throughput (capacity x tier), at most importData's ceiling."""
    t = LUSTRE_TIERS.get(tier)
    per_tib = t.throughput_mbps_per_tib if t is not None else LUSTRE_DYNAMIC_TIER[0]
    return min(capacity_gib / 1024 * per_tib * 1e6, LUSTRE_IMPORT_MAX_BYTES_PER_S)
