"""GPU networking inside the cluster: the 9 GKENetworkParamSet + Network pairs and the gIB NCCL installer.

The objects come from `workloads.rdma` (one definition shared with the pod annotations) and
`workloads.nccl_installer` (the upstream DaemonSet, rendered here with a pinned image, never applied from a URL).
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from infra.networks import Networks
from core.settings import Settings
from workloads.nccl_installer import installer_daemonset, namespace_manifest
from workloads.rdma import network_objects


class GpuNetworking(pulumi.ComponentResource):
    objects: list[k8s.apiextensions.CustomResource]
    installer: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, settings: Settings, networks: Networks, provider: k8s.Provider,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:GpuNetworking", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        # VPC and subnet names flow from the network resources, so these objects wait for them to exist.
        manifests = network_objects(networks.gvnic.name, networks.gvnic_subnet.name, networks.rdma.name,
                                    [sn.name for sn in networks.rdma_subnets])
        self.objects = [
            k8s.apiextensions.CustomResource(
                f"{m['kind'].lower()}-{m['metadata']['name']}", api_version=m["apiVersion"], kind=m["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(name=m["metadata"]["name"]), spec=m["spec"], opts=child)
            for m in manifests
        ]
        ds = installer_daemonset("autopilot" if settings.autopilot else "standard",
                                 catalog.NCCL_GIB_INSTALLER_IMAGE)
        metadata = dict(ds["metadata"])
        if settings.autopilot:
            # Upstream's Autopilot variant runs in its own `rdma-system` namespace, shipped with it.
            ns = namespace_manifest()
            self.installer_namespace = k8s.core.v1.Namespace(
                "rdma-system", metadata=k8s.meta.v1.ObjectMetaArgs(**ns["metadata"]), opts=child)
            metadata["namespace"] = self.installer_namespace.metadata.name
        self.installer = k8s.apps.v1.DaemonSet(
            "nccl-rdma-installer", metadata=metadata, spec=ds["spec"], opts=child)
        self.register_outputs({"networks": sorted({m["metadata"]["name"] for m in manifests})})
