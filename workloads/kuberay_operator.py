"""KubeRayOperator: KubeRay 1.7.0 installed by the stack itself (`kubeRayOperator: helm`), for Ray token auth.

Why (docs/research/harden2.md; sources in core/catalog/security.py): the operator must send the Ray token on
its job-status and StopJob calls, or a token-protected dashboard answers 401 and a RayJob never finishes (KubeRay
1.4.2) or is marked Failed while training runs on (1.7.0), and a deleted RayJob's Ray job keeps its GPUs.
KubeRay sends a token only from 1.5.1 (`authOptions`) and reads a user-supplied one, keeping it out of the Ray
containers' environment, only from 1.6.0 (`authOptions.secretName`); GKE does not publish the KubeRay of its
hosted add-on. So a stack that wants token auth turns the add-on off (infra/cluster.py; GKE: the open-source
operator must not run beside it) and installs a KubeRay whose version it knows.

What it creates: the operator's namespace with Pod Security `restricted` enforced (the chart's Deployment runs
non-root, read-only, without capabilities, values.yaml securityContext @v1.7.0), and a Helm Release of the chart
kept in the repository (charts/kuberay-operator, verbatim from ray-project/kuberay at the tag; never fetched
from a URL), with the image the chart pins, and namespaced RBAC for the workload namespace only
(`singleNamespaceInstall`, `watchNamespace`): the operator can manage Ray objects there and nowhere else. Helm
installs the chart's CRDs on the first install and never upgrades them (Helm's rule for `crds/`): a later chart
version's CRDs are applied by hand (docs/operations.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from core.settings import Settings
from workloads.manifests.pod_security import namespace_labels

# Relative to the project directory, where the Pulumi CLI runs the program (and Helm resolves a local chart).
CHART_DIR = catalog.KUBERAY_HELM_CHART_DIR
RELEASE_NAME = "kuberay-operator"


@dataclass(frozen=True)
class KubeRayOperatorArgs:
    namespace: str  # the operator's own namespace
    watch_namespace: str  # the workload namespace, the only one it manages

    @classmethod
    def of(cls, s: Settings) -> "KubeRayOperatorArgs":
        return cls(namespace=catalog.KUBERAY_OPERATOR_NAMESPACE, watch_namespace=s.storage.namespace)


def chart_values(a: KubeRayOperatorArgs) -> dict:
    """The chart values that differ from the chart's defaults (values.yaml @v1.7.0)."""
    pin = catalog.KUBERAY_OPERATOR_IMAGE_PIN
    return {
        # The chart renders `<repository>:<tag>` (templates/deployment.yaml @v1.7.0): the tag carries the digest.
        "image": {"repository": pin.repo, "tag": f"{pin.tag}@{pin.digest}" if pin.digest else pin.tag},
        # Roles and RoleBindings in the watched namespace instead of a ClusterRole over every namespace.
        "singleNamespaceInstall": True,
        "watchNamespace": [a.watch_namespace],
    }


class KubeRayOperator(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: KubeRayOperatorArgs,
        workload_namespace: pulumi.Resource,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:KubeRayOperator", name, None, opts)
        a = args
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            "operator-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.namespace, labels={"app.kubernetes.io/part-of": "nemo-rl-gke", **namespace_labels("restricted")}
            ),
            opts=child,
        )
        self.release = k8s.helm.v3.Release(
            "kuberay-operator",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE_NAME,
                chart=CHART_DIR,
                namespace=self.namespace.metadata.name,
                values=chart_values(a),
                # The Roles go into the workload namespace, which must exist first.
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[workload_namespace]),
        )
        self.register_outputs({"namespace": self.namespace.metadata.name})
