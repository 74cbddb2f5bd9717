"""ExperimentAdmission: the ValidatingAdmissionPolicy and its binding that keep every experiment namespace's pods in
their own Lustre directories and off the node (what it refuses and why: workloads/manifests/tenancy.py). One per
platform that hosts experiments; the binding selects the experiment namespaces by their label, so an experiment
added later is covered without a change here. admissionregistration.k8s.io/v1 is served from Kubernetes 1.30, below
every GKE floor of this program (core/catalog/tenancy.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import images
from core.settings import Settings
from workloads.manifests.rdma import GIB_HOST_DIR, NVIDIA_HOST_DIR
from workloads.manifests.tenancy import AdmissionArgs, lustre_admission_binding, lustre_admission_policy


@dataclass(frozen=True)
class ExperimentAdmissionArgs:
    policy: AdmissionArgs

    @classmethod
    def of(cls, s: Settings) -> "ExperimentAdmissionArgs":
        del s  # every experiment namespace gets the same rules; the image and paths are the program's pins
        return cls(
            policy=AdmissionArgs(
                cache_writer_image=images.prefetch_python_image(), host_paths=(NVIDIA_HOST_DIR, GIB_HOST_DIR)
            )
        )


class ExperimentAdmission(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: ExperimentAdmissionArgs,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:ExperimentAdmission", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        p = lustre_admission_policy(args.policy)
        self.policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            "experiment-pods-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(**p["metadata"]),
            spec=p["spec"],
            opts=child,
        )
        b = lustre_admission_binding()
        self.binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            "experiment-pods-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(**b["metadata"]),
            spec=b["spec"],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.policy])),
        )
        self.register_outputs({"policy": self.policy.metadata.name})
