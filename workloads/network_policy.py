"""NetworkPolicies of the workload namespace, as manifest dicts (no Pulumi resources).

Ingress only (egress stays open: pods pull from NGC and Hugging Face through Cloud NAT, read GCS, resolve DNS):
- `default-deny-ingress`: every pod of the namespace refuses ingress that no other policy allows.
- `workload-internal`: pods carrying the workload label accept everything from each other. Ray (GCS, raylets,
  object manager, workers' dynamic ports) and NCCL's bootstrap over eth0 use many dynamic ports, so this is by
  label, not by port. The RDMA NICs are separate Device networks that these policies do not cover.
- `metrics-from-managed-prometheus`: the metrics port from Google Managed Prometheus' collectors.
- `dashboard-from-control-plane`: the head's dashboard port from where the GKE add-on's KubeRay operator really
  calls it (the API server's path into the cluster; core/catalog.py "Hardening" and the README).
Users reach the dashboard with `kubectl port-forward`, which enters the pod's own network namespace and is not
ingress; it is never exposed through a LoadBalancer.

Pods are selected by labels our templates carry (workloads/pod_security.py): KubeRay adds its `ray.io/*`
labels only when it creates the pods.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Sequence

from core.catalog import (GMP_NAMESPACE, KONNECTIVITY_AGENT_LABELS, KUBE_SYSTEM_NAMESPACE, RAY_DASHBOARD_PORT,
                          RAY_METRICS_PORT)
from workloads.pod_security import RAY_HEAD_LABELS, WORKLOAD_LABELS

API_VERSION = "networking.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"   # set by the API server on every namespace (>= 1.22)

# Values of the dashboard-peer setting besides CIDRs.
PEER_KONNECTIVITY = "konnectivity"
PEER_KUBE_SYSTEM = "kube-system"
NAMED_PEERS = (PEER_KONNECTIVITY, PEER_KUBE_SYSTEM)


class PeerError(ValueError):
    pass


def _namespace(name: str) -> dict:
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}


def dashboard_peer(spec: str) -> dict:
    """One `from` entry for a dashboard-peer setting value: a named peer or a CIDR."""
    if spec == PEER_KONNECTIVITY:
        # Namespace AND pod selector in ONE entry: the agents of kube-system, not any pod of kube-system and not
        # a pod labelled like them elsewhere.
        return {"namespaceSelector": _namespace(KUBE_SYSTEM_NAMESPACE),
                "podSelector": {"matchLabels": dict(KONNECTIVITY_AGENT_LABELS)}}
    if spec == PEER_KUBE_SYSTEM:
        return {"namespaceSelector": _namespace(KUBE_SYSTEM_NAMESPACE)}
    try:
        net = ipaddress.ip_network(spec, strict=True)
    except ValueError:
        raise PeerError(f"{spec!r} is neither {' nor '.join(repr(p) for p in NAMED_PEERS)} nor a CIDR "
                        f"(e.g. 172.16.0.0/28)") from None
    return {"ipBlock": {"cidr": str(net)}}


@dataclass(frozen=True)
class PolicyArgs:
    namespace: str
    dashboard_peers: Sequence[str]


def _policy(name: str, namespace: str, pod_selector: dict, ingress: list[dict]) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"}},
        "spec": {"podSelector": pod_selector, "policyTypes": ["Ingress"], "ingress": ingress},
    }


def network_policies(args: PolicyArgs) -> list[dict]:
    """The namespace's policies: default deny, then the allowed paths (in a stable order)."""
    if not args.dashboard_peers:
        raise PeerError("at least one dashboard peer is needed, or the operator cannot read job status")
    ns = args.namespace
    workload = {"matchLabels": dict(WORKLOAD_LABELS)}
    return [
        _policy("default-deny-ingress", ns, {}, []),
        _policy("workload-internal", ns, workload, [{"from": [{"podSelector": workload}]}]),
        _policy("metrics-from-managed-prometheus", ns, workload, [{
            "from": [{"namespaceSelector": _namespace(GMP_NAMESPACE)}],
            "ports": [{"protocol": "TCP", "port": RAY_METRICS_PORT}]}]),
        _policy("dashboard-from-control-plane", ns, {"matchLabels": dict(RAY_HEAD_LABELS)}, [{
            "from": [dashboard_peer(p) for p in args.dashboard_peers],
            "ports": [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}]}]),
    ]
