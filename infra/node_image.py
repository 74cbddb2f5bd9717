"""Node image and GKE Image streaming for the Standard node pools (the GPU pools and the system pool).

With `imagePath: streaming` every pool sets `gcfs_config.enabled` and, as pulumi-gcp's docs for `gcfs_config`
ask ("you must specify `image_type = "COS_CONTAINERD"`"), the Container-Optimized OS with containerd image
explicitly (core.catalog, image streaming). Without it the pools leave `image_type` to GKE, whose default is
the same image, so switching streaming on or off changes nothing else, and render the off state explicitly:
`gcfs_config` is Optional+Computed in the provider (terraform-provider-google-beta@93c65b2d
google-beta/services/container/node_config.go:241-257), so an absent block produces no diff and a pool that had
streaming on would keep it. The provider's own acceptance test turns it off the same way
(resource_container_node_pool_test.go:2692-2722, TestAccContainerNodePool_gcfsConfig: `enabled = true`, then
`enabled = false`, each step with an empty plan after apply). Autopilot needs neither: its nodes use this image
and stream eligible images on their own.
"""

from __future__ import annotations

import pulumi_gcp as gcp

from core import catalog


def streaming_node_config(enabled: bool) -> dict:
    """Keyword arguments for `NodePoolNodeConfigArgs`: streaming off is `gcfs_config.enabled = false`."""
    if not enabled:
        return {"gcfs_config": gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=False)}
    return {
        "image_type": catalog.IMAGE_STREAMING_NODE_IMAGE,
        "gcfs_config": gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=True),
    }
