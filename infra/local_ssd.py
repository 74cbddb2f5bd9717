"""Node ephemeral storage on the GPU machines' bundled local SSDs (Standard node pools).

a4-highgpu-8g and a3-ultragpu-8g come with 32 local SSDs (catalog.LOCAL_SSD_COUNT). Backing ephemeral storage
(container images, writable layers, emptyDirs) with them keeps the ~30 GB NeMo-RL image and Ray's spill and
logs off the Hyperdisk boot disk. A GPU pool passes `ephemeral_storage_local_ssd(machine_type)` as
`node_config.ephemeral_storage_local_ssd_config` and, like Cluster Toolkit's gke-node-pool (which ignores
changes to it "as they are tied to machine types"), lists LOCAL_SSD_IGNORE_CHANGES in `ignore_changes`.
Autopilot has no node pools; see docs/operations.md for what it does with local SSDs.
"""

from __future__ import annotations

from typing import Optional

import pulumi_gcp as gcp

from core import catalog

# Pulumi property path of the setting inside a NodePool, for ignore_changes.
LOCAL_SSD_IGNORE_CHANGES = "nodeConfig.ephemeralStorageLocalSsdConfig"


def ephemeral_storage_local_ssd(
    machine_type: str,
) -> Optional[gcp.container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs]:
    """The pool's ephemeral-storage config for this machine type, or None when it bundles no local SSDs."""
    count = catalog.LOCAL_SSD_COUNT.get(machine_type)
    if not count:
        return None
    return gcp.container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(local_ssd_count=count)
