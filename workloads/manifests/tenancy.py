"""An experiment's namespace on a team platform, as manifest dicts (no Pulumi resources): the namespace, its Lustre
PV and claim, the Role its people get, and the admission policy that keeps every experiment's pods inside their own
Lustre directories and off the node.

Threat model (docs/security.md "Experiments on one platform"): an experimenter's code runs as root in its own pods, and
its `pulumi up` credentials create Jobs and a RayJob, whose pods run whatever they are given. The namespace must
enforce Pod Security `privileged` (the GPU workers mount the node's driver and gIB libraries), which on its own
admits a pod with any host path, host network or privileged container: root on the node, and every other pod's
volumes on it. The admission policy (`lustre_admission_policy`) therefore refuses, in experiment namespaces only:

- a Lustre mount outside the experiment's own directory `experiments/<name>` (any depth below it) and the shared
  Hugging Face cache; a mount of the volume's root (no `subPath`) or one by `subPathExpr` (expanded from the pod's
  environment at run time, so it cannot be judged at admission);
- the shared cache mounted read-write, except by a container of the pinned prefetch image;
- a Lustre volume declared inline (CSI) instead of through the experiment's claim, and generic ephemeral volumes
  (their claim is created by a controller, not by the experimenter, and could provision storage);
- host paths other than the two library directories the GPU workers mount, and those only read-only; host network,
  PID or IPC; privileged containers; added capabilities.

What admission cannot decide is in docs/security.md (a command run in the prefetch image writes the cache; reading
is not restricted below the volume: each experiment sees only what its subPath shows).

The experimenters' Role (`experimenter_role`) covers exactly the kinds an experiment stack creates (MANAGED_KINDS: a
test compares them with every experiment stack's registrations) with what pulumi-kubernetes does to them, and reads
of what it reports on (its pods, their logs, events, its RayJob's RayCluster, Kueue's Workloads); exec and
port-forward into its own pods for the commands the stack exports (the readiness gate's summary, the dashboard).
No wildcard, no ServiceAccounts, Roles, NetworkPolicies or PVCs (the platform's), nothing cluster-wide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from core import catalog
from core.lustre_paths import HF_CACHE_DIR, experiment_dir
from core.naming import LUSTRE_PVC
from core.settings.tenancy import PRINCIPAL
from workloads.manifests.pod_security import namespace_labels

PART_OF = {"app.kubernetes.io/part-of": "nemo-rl-gke"}
ADMISSION_POLICY = "nemo-rl-experiment-pods"
KUEUE_GROUP = catalog.KUEUE_API_VERSION.split("/", 1)[0]
# (API group, resource) an experiment stack registers: pulumi-kubernetes creates, reads, patches and deletes them.
MANAGED_KINDS: tuple[tuple[str, str], ...] = (
    ("", "configmaps"),
    ("", "secrets"),
    ("batch", "jobs"),
    ("ray.io", "rayjobs"),
)
# What it reads, never writes: its pods and their logs (jobLogsCommand), the events that say why a pod waits, the
# RayCluster its RayJob creates (the gate summary command reads its name), and Kueue's view of its job and queue.
READ_KINDS: tuple[tuple[str, str], ...] = (
    ("", "events"),
    ("", "pods"),
    ("", "pods/log"),
    ("events.k8s.io", "events"),
    (KUEUE_GROUP, "localqueues"),
    (KUEUE_GROUP, "workloads"),
    ("ray.io", "rayclusters"),
)
# The commands the experiment stack exports: `kubectl exec` (gateSummaryCommand) and `kubectl ray session` /
# port-forward (rayDashboardCommand), into the pods of its own namespace. kubectl sends both as WebSocket upgrades
# (GET) from 1.31, which the API server authorizes as `create` (KEP-4006, feature AuthorizePodWebsocketUpgrade-
# CreatePermission): both verbs.
CONNECT_KINDS: tuple[tuple[str, str], ...] = (("", "pods/exec"), ("", "pods/portforward"))
CONNECT_VERBS = ("create", "get")
# `python -m cli.team --namespace <its namespace>`: the pending Workloads of its LocalQueue in queue order, through
# Kueue's visibility API, as Kueue's own Role for it grants (config/components/rbac/pending_workloads_lq_viewer_role
# .yaml at kueue 14a3f57e: visibility.kueue.x-k8s.io localqueues/pendingworkloads, get/list/watch). Read only.
KUEUE_VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_KINDS: tuple[tuple[str, str], ...] = ((KUEUE_VISIBILITY_GROUP, "localqueues/pendingworkloads"),)


def namespace_manifest(name: str, experiment: str, psa_enforce: str, queue_labels: Optional[dict] = None) -> dict:
    """`queue_labels`: where the platform queues (workloads/manifests/kueue.py queue_namespace_labels), the label its
    ClusterQueue's namespaceSelector matches, so the namespace's LocalQueue submits to it."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                **PART_OF,
                catalog.EXPERIMENT_NAMESPACE_LABEL: experiment,
                **namespace_labels(psa_enforce),
                **(queue_labels or {}),
            },
        },
    }


def _rules(kinds: Iterable[tuple[str, str]], verbs: Sequence[str]) -> list[dict]:
    by_group: dict[str, list[str]] = {}
    for group, resource in kinds:
        by_group.setdefault(group, []).append(resource)
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": sorted(verbs)}
        for group, resources in sorted(by_group.items())
    ]


def experimenter_role(name: str, namespace: str) -> dict:
    return {
        "apiVersion": f"{catalog.RBAC_API_GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(PART_OF)},
        "rules": [
            *_rules(MANAGED_KINDS, catalog.PULUMI_MANAGES),
            *_rules(READ_KINDS, catalog.READ_ONLY),
            *_rules(VISIBILITY_KINDS, catalog.READ_ONLY),
            *_rules(CONNECT_KINDS, CONNECT_VERBS),
        ],
    }


def subject(principal: str) -> dict:
    """`user:<email>` / `group:<email>` as a RoleBinding subject (GKE authenticates users by their Google account's
    e-mail and, with Google Groups for RBAC, groups by the group's e-mail)."""
    m = PRINCIPAL.match(principal)
    if m is None:
        raise ValueError(f"{principal!r} is not user:<email> or group:<email>")
    kind = "User" if m.group(1) == "user" else "Group"
    return {"kind": kind, "name": m.group(2), "apiGroup": catalog.RBAC_API_GROUP}


def experimenter_role_binding(name: str, namespace: str, principals: Sequence[str]) -> dict:
    return {
        "apiVersion": f"{catalog.RBAC_API_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(PART_OF)},
        "roleRef": {"apiGroup": catalog.RBAC_API_GROUP, "kind": "Role", "name": name},
        "subjects": [subject(p) for p in sorted(set(principals))],
    }


# --- the Lustre PV of one experiment ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class LustreClaim:
    pv_name: str
    namespace: str
    capacity_gib: int


def lustre_pv_spec(c: LustreClaim) -> dict:
    """The PV's spec without its CSI source, which carries the platform instance's outputs (the component adds it:
    the same volumeHandle as the platform's own PV, core/catalog/tenancy.py)."""
    return {
        "capacity": {"storage": f"{c.capacity_gib}Gi"},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
        "storageClassName": "",
        "claimRef": {"namespace": c.namespace, "name": LUSTRE_PVC},
    }


# --- admission: every experiment's pods in their own Lustre directories, and off the node -------------------------
@dataclass(frozen=True)
class AdmissionArgs:
    cache_writer_image: str  # the pinned prefetch image: the only one that may mount the cache read-write
    host_paths: tuple[str, ...]  # the host directories the GPU workers mount read-only
    claim: str = LUSTRE_PVC
    lustre_driver: str = catalog.LUSTRE_CSI_DRIVER


def _q(text: str) -> str:
    """A CEL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def admission_variables(a: AdmissionArgs) -> list[dict]:
    """The policy's variables, in order (each may use the ones before it)."""
    own_prefix = experiment_dir("")  # "experiments/"
    return [
        {"name": "volumes", "expression": "has(object.spec.volumes) ? object.spec.volumes : []"},
        {
            "name": "containers",
            "expression": "object.spec.containers + "
            "(has(object.spec.initContainers) ? object.spec.initContainers : [])",
        },
        {
            "name": "own",
            "expression": (
                f"{_q(own_prefix)} + namespaceObject.metadata.labels[{_q(catalog.EXPERIMENT_NAMESPACE_LABEL)}]"
            ),
        },
        {
            "name": "lustreVolumes",
            "expression": "variables.volumes.filter(v, has(v.persistentVolumeClaim) && "
            f"v.persistentVolumeClaim.claimName == {_q(a.claim)}).map(v, v.name)",
        },
        {
            "name": "hostPathVolumes",
            "expression": "variables.volumes.filter(v, has(v.hostPath)).map(v, v.name)",
        },
    ]


def admission_validations(a: AdmissionArgs) -> list[dict]:
    cache = HF_CACHE_DIR
    in_dir = "(m.subPath == {d} || m.subPath.startsWith({d} + '/'))"
    own = in_dir.format(d="variables.own")
    shared = in_dir.format(d=_q(cache))
    read_only = "(has(m.readOnly) && m.readOnly)"
    lustre_mount_ok = (
        "!(m.name in variables.lustreVolumes) || (has(m.subPath) && !has(m.subPathExpr) && "
        f"!m.subPath.contains('..') && ({own} || ({shared} && ({read_only} || c.image == {_q(a.cache_writer_image)}))))"
    )
    per_mount = "variables.containers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, {}))"
    no_privilege = (
        "variables.containers.all(c, !has(c.securityContext) || "
        "((!has(c.securityContext.privileged) || !c.securityContext.privileged) && "
        "(!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
        "size(c.securityContext.capabilities.add) == 0)))"
    )
    host = "(has(object.spec.{f}) && object.spec.{f})"
    return [
        {
            "expression": per_mount.format(lustre_mount_ok),
            "message": (
                "an experiment's pods mount the Lustre claim only at their own directory (subPath experiments/<name>) "
                f"and the shared cache ({cache}) read-only; only the pinned prefetch image writes the cache"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": "variables.volumes.all(v, !has(v.ephemeral) && "
            f"(!has(v.csi) || v.csi.driver != {_q(a.lustre_driver)}))",
            "message": "no inline Lustre (CSI) or generic ephemeral volume in an experiment's namespace",
            "reason": "Forbidden",
        },
        {
            "expression": f"variables.volumes.all(v, !has(v.hostPath) || v.hostPath.path in {_list(a.host_paths)}) && "
            + per_mount.format(f"!(m.name in variables.hostPathVolumes) || {read_only}"),
            "message": (
                "host paths in an experiment's namespace: only the GPU workers' driver and gIB library directories, "
                "read-only"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": " && ".join(f"!{host.format(f=f)}" for f in ("hostNetwork", "hostPID", "hostIPC"))
            + f" && {no_privilege}",
            "message": (
                "no host network, PID or IPC, privileged container or added capability in an experiment's namespace"
            ),
            "reason": "Forbidden",
        },
    ]


def lustre_admission_policy(a: AdmissionArgs) -> dict:
    return {
        "apiVersion": catalog.VALIDATING_ADMISSION_POLICY_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": ADMISSION_POLICY, "labels": dict(PART_OF)},
        "spec": {
            # An error evaluating the policy refuses the pod rather than admitting it unchecked.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": admission_variables(a),
            "validations": admission_validations(a),
        },
    }


def lustre_admission_binding() -> dict:
    return {
        "apiVersion": catalog.VALIDATING_ADMISSION_POLICY_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": ADMISSION_POLICY, "labels": dict(PART_OF)},
        "spec": {
            "policyName": ADMISSION_POLICY,
            "validationActions": ["Deny"],
            # Every experiment namespace and nothing else: the platform labels them (namespace_manifest); only
            # cluster-wide rights can change a namespace's labels.
            "matchResources": {
                "namespaceSelector": {
                    "matchExpressions": [{"key": catalog.EXPERIMENT_NAMESPACE_LABEL, "operator": "Exists"}]
                }
            },
        },
    }
