"""The workload namespace's network policies, as manifest dicts (no Pulumi resources): nothing enters or leaves a
pod that the pod does not need (docs/research/harden2.md).

Ray 2.46/2.49 authenticate nothing: whoever reaches the dashboard (8265), a Ray pod's dashboard agent (52365),
GCS (6379) or Ray Client (10001) can run code on the cluster (Ray's security docs). So:

- `default-deny`: every pod of the namespace refuses ingress and egress that no other policy allows.
- `ray-nodes-internal`: the Ray head and GPU workers reach each other on every port, both ways (Ray's raylet
  and worker ports, NCCL's bootstrap, Gloo and vLLM use ports Ray cannot pin). Nothing else reaches a Ray port:
- `dashboard-from-submitter` / `submitter-to-dashboard`: the RayJob's submitter pod reaches the head's 8265 only.
- `dashboard-from-operator`: the head's 8265 from the operator's status path only (`dashboard_peer()`): GKE's
  hosted operator calls through the API server's service proxy, which enters the cluster through the
  konnectivity agents (docs/research/harden.md §1); the KubeRay this program installs runs as pods of its own
  namespace.
- `metrics-from-managed-prometheus`: the metrics port (8080) from Google Managed Prometheus' collectors.
- `dns`: the pods that resolve names reach kube-dns (Standard), Cloud DNS on 169.254.169.254 (Autopilot) and
  NodeLocal DNSCache (169.254.20.10 and its `node-local-dns` pods; always on on Autopilot) on port 53; the GPU
  placeholders and the image pre-pull reach nothing at all. The FQDN network policies carry no DNS rule of their
  own: their pods resolve through this one (`export-dns` for the export Job).
- `export-metadata-server`: only the checkpoint export Job (`export_job`, a CPU pod of its own in either job mode)
  and, with gs:// data, the data staging Job (`data-staging-metadata-server`) get Google credentials: their GCS FUSE
  sidecars take their Workload Identity tokens from the node's metadata server. No Ray pod does: the head mounts no
  bucket. With weightsPath bucket-import the weights staging and import Jobs get the same (`weights-metadata-server`,
  and `weights-dns`): the staging's sidecar writes the bucket, the import calls Lustre's API.
- Outside hosts by name (`fqdn_policies()`, GKE FQDNNetworkPolicy): the prefetch reaches Hugging Face and, for
  its install step, PyPI; the data staging Job Hugging Face and, with gs:// data, Cloud Storage; the head reaches
  Hugging Face (without the prefetch Job its entrypoint downloads the pinned weights), and W&B (with the Cloud
  Storage URLs it hands out) when the recipe logs there; the GPU workers never reach the Hub (they load the pinned
  snapshot from Lustre); the weights staging Job reaches Hugging Face, PyPI and Cloud Storage, the weights import
  Job the Managed Lustre API. Without FQDN policies (`fqdn=False`) those pods get HTTPS to public
  addresses instead (`<role>-public-https`).

Image pulls are the kubelet's and the Lustre mount is the node's: neither is pod traffic. `kubectl
port-forward` enters the pod's own network namespace through the kubelet and is not ingress: it is never
filtered, which is why the right to port-forward (or exec, or create pods) in the namespace is the right to run
code on the cluster (docs/security.md). The RDMA and gVNIC NICs of the GPU workers are Device networks, which these
policies do not cover; only this stack's GPU nodes are on them (infra/networks.py).

Pods are selected by labels our templates carry (workloads/manifests/pod_security.py): KubeRay adds its `ray.io/*`
labels only when it creates the pods.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Sequence

from core import catalog
from core.catalog import (
    GMP_NAMESPACE,
    KONNECTIVITY_AGENT_LABELS,
    KUBE_SYSTEM_NAMESPACE,
    RAY_DASHBOARD_PORT,
    RAY_METRICS_PORT,
)
from workloads.manifests.pod_security import (
    RAY_HEAD_LABELS,
    RAY_NODE_ROLES,
    RAY_WORKER_LABELS,
    ROLE_EXPORT,
    ROLE_HEAD,
    ROLE_LABEL,
    ROLE_PREFETCH,
    ROLE_STAGING,
    ROLE_SUBMITTER,
    ROLE_WEIGHTS_IMPORT,
    ROLE_WEIGHTS_STAGE,
    ROLE_WORKER,
    SUBMITTER_LABELS,
    WORKLOAD_LABELS,
)

API_VERSION = "networking.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace (>= 1.22)
PART_OF = {"app.kubernetes.io/part-of": "nemo-rl-gke"}

# Values of the dashboard-peer setting besides CIDRs.
PEER_KONNECTIVITY = "konnectivity"
PEER_KUBE_SYSTEM = "kube-system"
PEER_OPERATOR = "kuberay-operator"
NAMED_PEERS = (PEER_KONNECTIVITY, PEER_KUBE_SYSTEM, PEER_OPERATOR)


class PeerError(ValueError):
    pass


def _namespace(name: str) -> dict:
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}


def _roles(*roles: str) -> dict:
    return {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": list(roles)}]}


RAY_NODES = {"matchLabels": dict(WORKLOAD_LABELS), **_roles(*RAY_NODE_ROLES)}
HEAD = {"matchLabels": dict(RAY_HEAD_LABELS)}
WORKERS = {"matchLabels": dict(RAY_WORKER_LABELS)}
SUBMITTER = {"matchLabels": dict(SUBMITTER_LABELS)}
PREFETCH = {"matchLabels": {ROLE_LABEL: ROLE_PREFETCH}}
EXPORT = {"matchLabels": {ROLE_LABEL: ROLE_EXPORT}}
STAGING = {"matchLabels": {ROLE_LABEL: ROLE_STAGING}}
# weightsPath bucket-import: the staging Job (Hugging Face, PyPI for its install, Cloud Storage for its GCS FUSE
# sidecar) and the import Job (the Managed Lustre API), both with Google credentials from the metadata server.
WEIGHTS_STAGE = {"matchLabels": {ROLE_LABEL: ROLE_WEIGHTS_STAGE}}
WEIGHTS_IMPORT = {"matchLabels": {ROLE_LABEL: ROLE_WEIGHTS_IMPORT}}
WEIGHTS_JOBS = _roles(ROLE_WEIGHTS_STAGE, ROLE_WEIGHTS_IMPORT)
# Pods that resolve names: the Ray pods (the workers join GCS by the head Service's name), the submitter and the
# prefetch.
NAME_RESOLVERS = _roles(ROLE_HEAD, ROLE_WORKER, ROLE_SUBMITTER, ROLE_PREFETCH)
SELECTORS = {
    ROLE_HEAD: HEAD,
    ROLE_WORKER: WORKERS,
    ROLE_PREFETCH: PREFETCH,
    ROLE_EXPORT: EXPORT,
    ROLE_STAGING: STAGING,
    ROLE_WEIGHTS_STAGE: WEIGHTS_STAGE,
    ROLE_WEIGHTS_IMPORT: WEIGHTS_IMPORT,
}


def dashboard_peer(spec: str, operator_namespace: str = catalog.KUBERAY_OPERATOR_NAMESPACE) -> dict:
    """One `from` entry for a dashboard-peer setting value: a named peer or a CIDR."""
    if spec == PEER_KONNECTIVITY:
        # Namespace AND pod selector in ONE entry: the agents of kube-system, not any pod of kube-system and not
        # a pod labelled like them elsewhere.
        return {
            "namespaceSelector": _namespace(KUBE_SYSTEM_NAMESPACE),
            "podSelector": {"matchLabels": dict(KONNECTIVITY_AGENT_LABELS)},
        }
    if spec == PEER_OPERATOR:
        return {
            "namespaceSelector": _namespace(operator_namespace),
            "podSelector": {"matchLabels": dict(catalog.KUBERAY_OPERATOR_POD_LABELS)},
        }
    if spec == PEER_KUBE_SYSTEM:
        return {"namespaceSelector": _namespace(KUBE_SYSTEM_NAMESPACE)}
    try:
        net = ipaddress.ip_network(spec, strict=True)
    except ValueError:
        raise PeerError(
            f"{spec!r} is neither {', '.join(repr(p) for p in NAMED_PEERS)} nor a CIDR (e.g. 172.16.0.0/28)"
        ) from None
    return {"ipBlock": {"cidr": str(net)}}


@dataclass(frozen=True)
class PolicyArgs:
    """What the namespace's pods need to reach (derived from the settings by WorkloadIdentityArgs)."""

    namespace: str
    dashboard_peers: Sequence[str]
    operator_namespace: str = catalog.KUBERAY_OPERATOR_NAMESPACE
    head_wandb: bool = False  # the recipe logs to W&B from the driver on the head
    head_hub: bool = True  # the driver and the data preparation call the Hub
    # The GPU workers never download (they train from the pinned snapshot on Lustre); kept for the contract's key.
    workers_hub: bool = False
    prefetch: bool = False  # the prefetch Job exists
    prefetch_pypi: bool = False  # ... and installs its client from PyPI
    export_job: bool = False  # the export Jobs, this stack's and its experiment stacks' (CPU pool, GCS FUSE)
    staging: bool = False  # the data staging Jobs (CPU pool): the Hub, for Hub datasets and the built-in ones
    staging_storage: bool = False  # ... and gs:// data (GCS FUSE, Workload Identity)
    weights_staging: bool = False  # weightsPath bucket-import: the staging and import Jobs
    fqdn: bool = True  # outside hosts by name (GKE FQDNNetworkPolicy)
    labels: dict = field(default_factory=lambda: dict(PART_OF))

    def egress(self) -> dict[str, bool]:
        """What the experiment stacks of a platform read from its contract (core/settings/platform.py)."""
        return {
            "prefetch": self.prefetch,
            "prefetchPypi": self.prefetch_pypi,
            "headWandb": self.head_wandb,
            "workersHub": self.workers_hub,
            "staging": self.staging,
            "stagingStorage": self.staging_storage,
        }

    def outside_hosts(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """role -> {host group -> hosts} of every pod that leaves the cluster."""
        hub = dict(catalog.HF_HOST_GROUPS)
        head: dict[str, tuple[str, ...]] = {f"hf-{g}": h for g, h in hub.items()} if self.head_hub else {}
        if self.head_wandb:
            # W&B uploads run files to Cloud Storage URLs its API hands out.
            head["storage"] = catalog.GOOGLE_STORAGE_HOSTS
        if self.head_wandb:
            head["wandb"] = catalog.WANDB_HOSTS
        out: dict[str, dict[str, tuple[str, ...]]] = {}
        if head:
            out[ROLE_HEAD] = head
        if self.workers_hub:
            out[ROLE_WORKER] = {f"hf-{g}": h for g, h in hub.items()}
        if self.prefetch:
            pf = {f"hf-{g}": h for g, h in hub.items()}
            if self.prefetch_pypi:
                pf["pypi"] = catalog.PYPI_HOSTS
            out[ROLE_PREFETCH] = pf
        if self.export_job:
            out[ROLE_EXPORT] = {"storage": catalog.GOOGLE_STORAGE_HOSTS}
        if self.staging:
            st = {f"hf-{g}": h for g, h in hub.items()}
            if self.staging_storage:
                st["storage"] = catalog.GOOGLE_STORAGE_HOSTS
            out[ROLE_STAGING] = st
        if self.weights_staging:
            out[ROLE_WEIGHTS_STAGE] = {
                **{f"hf-{g}": h for g, h in hub.items()},
                "pypi": catalog.PYPI_HOSTS,
                "storage": catalog.GOOGLE_STORAGE_HOSTS,
            }
            out[ROLE_WEIGHTS_IMPORT] = {"lustre": catalog.LUSTRE_API_HOSTS}
        return out


def _policy(
    name: str, a: PolicyArgs, pod_selector: dict, *, ingress: list[dict] | None = None, egress: list[dict] | None = None
) -> dict:
    types: list[str] = []
    spec: dict[str, Any] = {"podSelector": pod_selector}
    if ingress is not None:
        types.append("Ingress")
        spec["ingress"] = ingress
    if egress is not None:
        types.append("Egress")
        spec["egress"] = egress
    spec["policyTypes"] = types
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": a.namespace, "labels": dict(a.labels)},
        "spec": spec,
    }


def _ports(*ports: int, protocols: Sequence[str] = ("TCP",)) -> list[dict]:
    return [{"protocol": proto, "port": p} for p in ports for proto in protocols]


def _dns_rule() -> list[dict]:
    """Port 53 (UDP and TCP) to every resolver a GKE pod may meet: the kube-dns pods, Cloud DNS on the metadata
    address, and NodeLocal DNSCache (always on on Autopilot, on by default on new Standard versions) both as its
    link-local address and as its pods (catalog.NODE_LOCAL_DNS_ADDRESS: public reports differ on which one Dataplane
    V2 evaluates). Each pod peer pairs its namespace and pod selectors in one entry (those pods of kube-system)."""
    dns_ports = _ports(catalog.DNS_PORT, protocols=("UDP", "TCP"))
    return [
        {
            "to": [
                {
                    "namespaceSelector": _namespace(KUBE_SYSTEM_NAMESPACE),
                    "podSelector": {"matchLabels": dict(labels)},
                }
                for labels in (catalog.KUBE_DNS_LABELS, catalog.NODE_LOCAL_DNS_LABELS)
            ],
            "ports": dns_ports,
        },
        {
            "to": [{"ipBlock": {"cidr": cidr}} for cidr in (catalog.CLOUD_DNS_ADDRESS, catalog.NODE_LOCAL_DNS_ADDRESS)],
            "ports": dns_ports,
        },
    ]


def network_policies(args: PolicyArgs) -> list[dict]:
    """The namespace's NetworkPolicies: default deny, then the allowed paths (in a stable order)."""
    if not args.dashboard_peers:
        raise PeerError("at least one dashboard peer is needed, or the operator cannot read job status")
    a = args
    peers = [dashboard_peer(p, a.operator_namespace) for p in a.dashboard_peers]
    dashboard = _ports(RAY_DASHBOARD_PORT)
    out = [
        _policy("default-deny", a, {}, ingress=[], egress=[]),
        _policy(
            "ray-nodes-internal",
            a,
            RAY_NODES,
            ingress=[{"from": [{"podSelector": RAY_NODES}]}],
            egress=[{"to": [{"podSelector": RAY_NODES}]}],
        ),
        _policy(
            "dashboard-from-submitter", a, HEAD, ingress=[{"from": [{"podSelector": SUBMITTER}], "ports": dashboard}]
        ),
        _policy("submitter-to-dashboard", a, SUBMITTER, egress=[{"to": [{"podSelector": HEAD}], "ports": dashboard}]),
        _policy("dashboard-from-operator", a, HEAD, ingress=[{"from": peers, "ports": dashboard}]),
        _policy(
            "metrics-from-managed-prometheus",
            a,
            RAY_NODES,
            ingress=[{"from": [{"namespaceSelector": _namespace(GMP_NAMESPACE)}], "ports": _ports(RAY_METRICS_PORT)}],
        ),
        _policy("dns", a, NAME_RESOLVERS, egress=_dns_rule()),
    ]
    metadata_server = [
        {"to": [{"ipBlock": {"cidr": cidr}}], "ports": _ports(*ports)} for cidr, ports in catalog.METADATA_SERVER_EGRESS
    ]
    if a.export_job:
        out.append(_policy("export-dns", a, EXPORT, egress=_dns_rule()))
        out.append(_policy("export-metadata-server", a, EXPORT, egress=metadata_server))
    if a.staging:
        out.append(_policy("data-staging-dns", a, STAGING, egress=_dns_rule()))
    if a.staging and a.staging_storage:
        out.append(_policy("data-staging-metadata-server", a, STAGING, egress=metadata_server))
    if a.weights_staging:
        out.append(_policy("weights-dns", a, WEIGHTS_JOBS, egress=_dns_rule()))
        out.append(_policy("weights-metadata-server", a, WEIGHTS_JOBS, egress=metadata_server))
    if not a.fqdn:
        public = {"ipBlock": {"cidr": "0.0.0.0/0", "except": list(catalog.NON_PUBLIC_RANGES)}}
        for role in a.outside_hosts():
            out.append(
                _policy(
                    f"{role}-public-https",
                    a,
                    SELECTORS[role],
                    egress=[{"to": [public], "ports": _ports(catalog.HTTPS_PORT)}],
                )
            )
    return out


def _match(host: str) -> dict:
    return {"pattern": host} if "*" in host else {"name": host}


def fqdn_policies(args: PolicyArgs) -> list[dict]:
    """GKE FQDNNetworkPolicies: each pod's outside hosts by name, HTTPS only, one host group per policy (GKE
    programs at most catalog.FQDN_POLICY_MAX_ADDRESSES resolved addresses per policy)."""
    if not args.fqdn:
        return []
    out = []
    for role, groups in args.outside_hosts().items():
        for group, hosts in groups.items():
            out.append(
                {
                    "apiVersion": catalog.FQDN_POLICY_API_VERSION,
                    "kind": catalog.FQDN_POLICY_KIND,
                    "metadata": {"name": f"{role}-{group}", "namespace": args.namespace, "labels": dict(args.labels)},
                    "spec": {
                        "podSelector": SELECTORS[role],
                        "egress": [
                            {
                                "matches": [_match(h) for h in hosts],
                                "ports": [{"protocol": "TCP", "port": catalog.HTTPS_PORT}],
                            }
                        ],
                    },
                }
            )
    return out
