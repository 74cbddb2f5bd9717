"""Node image and GKE Image streaming for the Standard node pools (the GPU pools and the system pool).

With `imagePath: streaming` every pool sets `gcfs_config.enabled` and, as pulumi-gcp's docs for `gcfs_config`
ask ("you must specify `image_type = "COS_CONTAINERD"`"), the Container-Optimized OS with containerd image
explicitly (core.catalog, image streaming). Without it the pools leave `image_type` to GKE, whose default is
the same image, so switching streaming on or off changes nothing else. Autopilot needs neither: its nodes use
this image and stream eligible images on their own.
"""

from __future__ import annotations

import pulumi_gcp as gcp

from core import catalog


def streaming_node_config(enabled: bool) -> dict:
    """Keyword arguments for `NodePoolNodeConfigArgs`: empty unless streaming is on."""
    if not enabled:
        return {}
    return {
        "image_type": catalog.IMAGE_STREAMING_NODE_IMAGE,
        "gcfs_config": gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=True),
    }
