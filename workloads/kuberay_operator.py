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
from a URL), with the image the chart pins, watching the workload namespace and the platform's experiment
namespaces only (`singleNamespaceInstall`, `watchNamespace`). Helm installs the chart's CRDs on the first install
and never upgrades them (Helm's rule for `crds/`): a later chart version's CRDs are applied by hand
(docs/operations.md).

RBAC: the chart's Role for a watched namespace is the union of every KubeRay feature (templates/_helpers.tpl
`role.consistentRules` @v1.7.0: Secrets create/update/delete, ServiceAccounts, Roles and RoleBindings for the
autoscaler, NetworkPolicies, Ingresses, Routes, Gateways, cert-manager objects, pods/proxy and services/proxy...).
The chart's own Role is turned off (`crNamespacedRbacEnable: false`; it keeps its leader-election Role in the
operator's namespace) and the program binds `OPERATOR_RULES` instead: what KubeRay 1.7.0 needs for the objects this
program renders, each rule with the KubeRay source that needs it. Secret get/list/watch stays: the RayCluster
controller watches Secrets (an informer over the namespace's Secrets, the token Secrets included) and reads the Ray
token from `authOptions.secretName`.

Status checks: `RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS` (catalog.KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS) on the operator's
environment, so a dashboard away for five minutes (KubeRay 1.7.0's default) does not fail a training run for good.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from core.naming import experiment_namespace
from core.settings import Settings
from workloads.manifests.pod_security import namespace_labels

# Relative to the project directory, where the Pulumi CLI runs the program (and Helm resolves a local chart).
CHART_DIR = catalog.KUBERAY_HELM_CHART_DIR
RELEASE_NAME = "kuberay-operator"
# The chart's ServiceAccount (values.yaml serviceAccount.name @v1.7.0), which the program's Role is bound to; the Role
# is named apart from the chart's own (`kuberay-operator`, templates/multiple_namespaces_role.yaml), so that Helm,
# which deletes what a chart upgrade no longer renders, never deletes it.
OPERATOR_SERVICE_ACCOUNT = "kuberay-operator"
ROLE_NAME = "kuberay-operator-workload"

_ALL = ["create", "delete", "get", "list", "patch", "update", "watch"]
_READ = ["get", "list", "watch"]
_RC, _RJ = "ray-operator/controllers/ray/raycluster_controller.go", "ray-operator/controllers/ray/rayjob_controller.go"
# What KubeRay 1.7.0 (59d663ae) does in the workload namespace for the objects this program renders: a RayCluster
# (standing) or a RayJob with its own cluster, K8sJobMode, token auth through authOptions.secretName, no autoscaler,
# no Ingress, no GCS fault tolerance, the chart's default feature gates (RayCronJob, RayClusterNetworkPolicy,
# RayClusterMTLS off) and no useKubernetesProxy. An informer (`For`/`Owns` in a SetupWithManager) needs list and
# watch, or the manager's caches never sync and the operator does not start. (rule, why)
OPERATOR_RULES: tuple[tuple[dict, str], ...] = (
    (
        {"apiGroups": ["ray.io"], "resources": ["rayclusters", "rayjobs"], "verbs": _ALL},
        f"the RayCluster and RayJob controllers' objects ({_RC} L1943, {_RJ} L866-867); a RayJob creates its cluster",
    ),
    (
        {
            "apiGroups": ["ray.io"],
            "resources": ["rayclusters/status", "rayjobs/status"],
            "verbs": ["get", "patch", "update"],
        },
        f"their status updates ({_RC} L2376, {_RJ} L940)",
    ),
    (
        {"apiGroups": ["ray.io"], "resources": ["rayclusters/finalizers", "rayjobs/finalizers"], "verbs": ["update"]},
        "owner references with blockOwnerDeletion and the RayJob's stop-job finalizer (kubebuilder markers: "
        f"{_RC} L93, {_RJ} L71)",
    ),
    (
        {"apiGroups": ["ray.io"], "resources": ["rayservices"], "verbs": _READ},
        "the RayService controller always runs (ray-operator/main.go L334) and watches RayServices "
        "(rayservice_controller.go L834); this program creates none",
    ),
    (
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        },
        f"the Ray pods ({_RC} L1948; deleteAllPods' DeleteAllOf L149)",
    ),
    (
        {"apiGroups": [""], "resources": ["services"], "verbs": _ALL},
        f"the head Service ({_RC} L1949, {_RJ} L868 reconcileServices)",
    ),
    (
        {"apiGroups": [""], "resources": ["secrets"], "verbs": _READ},
        f"the Secret informer ({_RC} L1950) and the Ray token of authOptions.secretName (utils/util.go L1063-1066); "
        f"with secretName set the operator creates no Secret ({_RC} L436)",
    ),
    (
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": _READ},
        f"the PVC informer ({_RC} L1951); PVCs are written only for embedded GCS fault tolerance ({_RC} L708)",
    ),
    (
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _ALL},
        f"the K8sJobMode submitter Job ({_RJ} L869, createNewK8sJob)",
    ),
    (
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        f"the controllers' events (mgr.GetEventRecorder, {_RC} L60, {_RJ} L63)",
    ),
)
# Left out of the chart's rule set, and why (what would need them): Secrets create/update/delete (the generated token
# Secret, only without authOptions.secretName: L436); serviceaccounts, roles, rolebindings and pods/resize (the
# autoscaler's own identity and Role, only with enableInTreeAutoscaling: L2228, L2285, L2327, common/rbac.go L49);
# ingresses, ingressclasses, routes (enableIngress: L499); networkpolicies (the RayClusterNetworkPolicy gate, main.go
# L361); raycronjobs (the RayCronJob gate, main.go L353); cert-manager certificates and issuers (RayClusterMTLS, main.go
# L323); gateways, httproutes and endpointslices (RayService upgrades, rayservice_controller.go); pods/proxy and
# services/proxy (useKubernetesProxy, utils/util.go L1089, set only by GKE's hosted operator); pods/status and
# services/status (no KubeRay controller writes them); leases in this namespace (leader election uses the operator's
# own namespace, where the chart keeps its leader-election Role).


@dataclass(frozen=True)
class KubeRayOperatorArgs:
    namespace: str  # the operator's own namespace
    watch_namespace: str  # the workload namespace
    # The namespaces of the experiments the platform hosts (core/settings/tenancy.py): their RayJobs need the
    # operator too, with the same Role in each.
    experiment_namespaces: tuple[str, ...] = ()

    @classmethod
    def of(cls, s: Settings) -> "KubeRayOperatorArgs":
        return cls(
            namespace=catalog.KUBERAY_OPERATOR_NAMESPACE,
            watch_namespace=s.storage.namespace,
            experiment_namespaces=tuple(
                experiment_namespace(s.storage.namespace, e) for e in sorted(s.tenancy.experiments)
            ),
        )

    @property
    def watched(self) -> tuple[str, ...]:
        return (self.watch_namespace, *self.experiment_namespaces)


def chart_values(a: KubeRayOperatorArgs) -> dict:
    """The chart values that differ from the chart's defaults (values.yaml @v1.7.0)."""
    pin = catalog.KUBERAY_OPERATOR_IMAGE_PIN
    return {
        # The chart renders `<repository>:<tag>` (templates/deployment.yaml @v1.7.0): the tag carries the digest.
        "image": {"repository": pin.repo, "tag": f"{pin.tag}@{pin.digest}" if pin.digest else pin.tag},
        # Namespaced RBAC instead of a ClusterRole over every namespace, and the operator's caches on one namespace.
        "singleNamespaceInstall": True,
        "watchNamespace": list(a.watched),
        # No chart Role in the watched namespace: the program binds OPERATOR_RULES there (templates/
        # multiple_namespaces_role.yaml renders only with crNamespacedRbacEnable).
        "crNamespacedRbacEnable": False,
        # The operator's environment (templates/deployment.yaml renders `.Values.env` as the container's env).
        "env": [
            {
                "name": catalog.KUBERAY_STATUS_CHECK_TIMEOUT_ENV,
                "value": str(catalog.KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS),
            }
        ],
    }


def operator_role(a: KubeRayOperatorArgs, namespace: Optional[str] = None) -> dict:
    """The Role the operator gets in a namespace it watches (OPERATOR_RULES): the workload namespace by default."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": ROLE_NAME, "namespace": namespace or a.watch_namespace, "labels": dict(PART_OF)},
        "rules": [rule for rule, _why in OPERATOR_RULES],
    }


def operator_role_binding(a: KubeRayOperatorArgs, namespace: Optional[str] = None) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": ROLE_NAME, "namespace": namespace or a.watch_namespace, "labels": dict(PART_OF)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_SERVICE_ACCOUNT, "namespace": a.namespace}],
    }


PART_OF = {"app.kubernetes.io/part-of": "nemo-rl-gke"}


class KubeRayOperator(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    role: k8s.rbac.v1.Role
    role_binding: k8s.rbac.v1.RoleBinding
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: KubeRayOperatorArgs,
        workload_namespace: pulumi.Resource,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
        experiment_namespaces: Sequence[pulumi.Resource] = (),
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
        in_workload = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[workload_namespace])
        role, binding = operator_role(a), operator_role_binding(a)
        self.role = k8s.rbac.v1.Role(
            "operator-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(**role["metadata"]),
            rules=role["rules"],
            opts=in_workload,
        )
        self.role_binding = k8s.rbac.v1.RoleBinding(
            "operator-role-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(**binding["metadata"]),
            role_ref=binding["roleRef"],
            subjects=binding["subjects"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.role]),
        )
        # The same rights in every experiment namespace (named after it: the URNs of one component's children must
        # differ), in place before the operator watches it.
        in_experiments: list[pulumi.Resource] = []
        for ns_name, ns in zip(a.experiment_namespaces, experiment_namespaces, strict=True):
            role, binding = operator_role(a, ns_name), operator_role_binding(a, ns_name)
            r = k8s.rbac.v1.Role(
                f"operator-role-{ns_name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(**role["metadata"]),
                rules=role["rules"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[ns]),
            )
            in_experiments.append(r)
            in_experiments.append(
                k8s.rbac.v1.RoleBinding(
                    f"operator-role-binding-{ns_name}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(**binding["metadata"]),
                    role_ref=binding["roleRef"],
                    subjects=binding["subjects"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[r]),
                )
            )
        self.release = k8s.helm.v3.Release(
            "kuberay-operator",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE_NAME,
                chart=CHART_DIR,
                namespace=self.namespace.metadata.name,
                values=chart_values(a),
            ),
            # The operator starts with its rights in place: a first install, and a deployed stack whose chart Role
            # the upgrade removes, never see it without them.
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                depends_on=[workload_namespace, self.role, self.role_binding, *in_experiments],
            ),
        )
        self.register_outputs({"namespace": self.namespace.metadata.name})
