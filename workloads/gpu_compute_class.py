"""The custom ComputeClass that orders the GPU capacity models, as a Kubernetes object of the cluster.

The manifest comes from workloads/manifests/compute_class.py (a pure builder, validated in tests against the CRD schema
GKE installs). The class is cluster-scoped; the Ray GPU workers select it by name, so the RayCluster and the
RayJob wait for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core.capacity import CapacityPlan
from core.settings import Settings
from core.settings import capacity as capacity_settings
from workloads.manifests.compute_class import compute_class_manifest


@dataclass(frozen=True)
class GpuComputeClassArgs:
    plan: CapacityPlan

    @classmethod
    def of(cls, s: Settings) -> "GpuComputeClassArgs":
        return cls(plan=capacity_settings.plan(s))


class GpuComputeClass(pulumi.ComponentResource):
    compute_class: k8s.apiextensions.CustomResource

    def __init__(
        self,
        name: str,
        args: GpuComputeClassArgs,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:GpuComputeClass", name, None, opts)
        manifest = compute_class_manifest(args.plan)
        meta = manifest["metadata"]
        self.name = meta["name"]
        self.compute_class = k8s.apiextensions.CustomResource(
            "gpu-compute-class",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=k8s.meta.v1.ObjectMetaArgs(name=meta["name"], labels=meta.get("labels")),
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.register_outputs({"name": self.name, "chain": list(args.plan.models)})
