"""GPU networking inside the cluster: the 9 GKENetworkParamSet + Network pairs and the gIB NCCL installer.

The objects come from `workloads.manifests.rdma` (one definition shared with the pod annotations) and
`workloads.manifests.nccl_installer` (the upstream DaemonSet, rendered here with a pinned image, never applied from a
URL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from core.settings import Settings
from workloads.manifests.nccl_installer import installer_daemonset, namespace_manifest
from workloads.manifests.rdma import network_objects


@dataclass(frozen=True)
class GpuVpcNames:
    """Names of the GPU VPCs and subnets (outputs of infra:Networks, wired in __main__.py); flowing from the
    network resources, they make these objects wait for the VPCs to exist."""

    gvnic_network: pulumi.Input[str]
    gvnic_subnet: pulumi.Input[str]
    rdma_network: pulumi.Input[str]
    rdma_subnets: Sequence[pulumi.Input[str]]


@dataclass(frozen=True)
class GpuNetworkingArgs:
    autopilot: bool  # which upstream installer variant

    @classmethod
    def of(cls, s: Settings) -> "GpuNetworkingArgs":
        return cls(autopilot=s.autopilot)


class GpuNetworking(pulumi.ComponentResource):
    objects: list[k8s.apiextensions.CustomResource]
    installer: k8s.apps.v1.DaemonSet

    def __init__(
        self,
        name: str,
        args: GpuNetworkingArgs,
        vpcs: GpuVpcNames,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:GpuNetworking", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        manifests = network_objects(vpcs.gvnic_network, vpcs.gvnic_subnet, vpcs.rdma_network, list(vpcs.rdma_subnets))
        self.objects = [
            k8s.apiextensions.CustomResource(
                f"{m['kind'].lower()}-{m['metadata']['name']}",
                api_version=m["apiVersion"],
                kind=m["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(name=m["metadata"]["name"]),
                spec=m["spec"],
                opts=child,
            )
            for m in manifests
        ]
        ds = installer_daemonset("autopilot" if args.autopilot else "standard", catalog.NCCL_GIB_INSTALLER_IMAGE)
        metadata = dict(ds["metadata"])
        if args.autopilot:
            # Upstream's Autopilot variant runs in its own `rdma-system` namespace, shipped with it.
            ns = namespace_manifest()
            self.installer_namespace = k8s.core.v1.Namespace(
                "rdma-system", metadata=k8s.meta.v1.ObjectMetaArgs(**ns["metadata"]), opts=child
            )
            metadata["namespace"] = self.installer_namespace.metadata.name
        self.installer = k8s.apps.v1.DaemonSet("nccl-rdma-installer", metadata=metadata, spec=ds["spec"], opts=child)
        self.register_outputs({"networks": sorted({m["metadata"]["name"] for m in manifests})})
