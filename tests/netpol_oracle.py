"""Who may talk to whom under a set of network policies: the semantics of Kubernetes NetworkPolicy
(networking.k8s.io/v1) and GKE's FQDNNetworkPolicy, written from their documentation, for judging what the
program renders (not a copy of workloads/manifests/network_policy.py).

Kubernetes ("Network Policies", kubernetes.io/docs/concepts/services-networking/network-policies):
- a pod is isolated for ingress (egress) when at least one NetworkPolicy of its namespace selects it and lists
  Ingress (Egress) in policyTypes; a connection is allowed when the source's egress and the destination's ingress
  both allow it; policies are additive (a union of their rules);
- a rule with no `from`/`to` matches every peer, a rule with no `ports` every port; a peer with `podSelector` alone
  means pods of the policy's namespace, `namespaceSelector` alone every pod of the selected namespaces, both in
  one entry the selected pods of the selected namespaces; `ipBlock` is meant for cluster-external addresses;
- "traffic to and from the node where a Pod is running is always allowed, regardless of the IP address of the
  Pod or the node".
GKE ("Control Pod egress traffic using FQDN network policies"): an FQDNNetworkPolicy selects pods of its
namespace and allows egress to the listed names (`name`) or wildcard patterns (`pattern`, `*` matching within
one label) on the listed ports; it works additively with NetworkPolicies.
"""

from __future__ import annotations

import fnmatch
import ipaddress
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

NS_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace set), an address outside the cluster (ip and/or host), or the destination's own node."""

    name: str
    namespace: Optional[str] = None
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    ip: Optional[str] = None
    host: Optional[str] = None
    node_local: bool = False

    @property
    def is_pod(self) -> bool:
        return self.namespace is not None


def pod(name: str, namespace: str, labels: Mapping[str, str], namespace_labels: Optional[Mapping] = None) -> Endpoint:
    return Endpoint(name, namespace, dict(labels), {NS_NAME_LABEL: namespace, **dict(namespace_labels or {})})


def selects(selector: Optional[Mapping], labels: Mapping[str, str]) -> bool:
    """Label selector semantics (matchLabels AND every matchExpression); an empty selector selects all."""
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _peer_matches(peer: Mapping, policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        if other.is_pod or other.ip is None:
            return False
        addr = ipaddress.ip_address(other.ip)
        block = peer["ipBlock"]
        return addr in ipaddress.ip_network(block["cidr"]) and not any(
            addr in ipaddress.ip_network(x) for x in block.get("except") or []
        )
    if not other.is_pod:
        return False
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], other.namespace_labels):
            return False
    elif other.namespace != policy_namespace:
        return False
    return selects(peer.get("podSelector"), other.labels) if "podSelector" in peer else True


def _port_matches(ports: Optional[list], port: int, protocol: str) -> bool:
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP") not in (protocol, "ALL"):
            continue
        if "port" not in p:
            return True
        if p["port"] == port or (p.get("endPort") is not None and p["port"] <= port <= p["endPort"]):
            return True
    return False


def _host_matches(match: Mapping, host: Optional[str]) -> bool:
    if host is None:
        return False
    if "name" in match:
        return host.rstrip(".") == match["name"].rstrip(".")
    pattern = match["pattern"].rstrip(".")
    if pattern == "*":
        return True
    # `*` matches DNS characters except '.': compare label by label.
    hp, pp = host.rstrip(".").split("."), pattern.split(".")
    return len(hp) == len(pp) and all(fnmatch.fnmatchcase(h, p) for h, p in zip(hp, pp, strict=True))


class Policies:
    """The NetworkPolicies and FQDNNetworkPolicies of a cluster, as rendered manifests."""

    def __init__(self, manifests: Iterable[Mapping]):
        manifests = list(manifests)
        self.network = [m for m in manifests if m.get("kind") == "NetworkPolicy"]
        self.fqdn = [m for m in manifests if m.get("kind") == "FQDNNetworkPolicy"]

    @staticmethod
    def _types(spec: Mapping) -> list[str]:
        # Without policyTypes: Ingress, plus Egress when the policy has egress rules (the API's defaulting).
        return spec.get("policyTypes") or (["Ingress"] + (["Egress"] if "egress" in spec else []))

    def _selecting(self, target: Endpoint, kind: str) -> list[Mapping]:
        return [
            p
            for p in self.network
            if p["metadata"]["namespace"] == target.namespace
            and kind in self._types(p["spec"])
            and selects(p["spec"]["podSelector"], target.labels)
        ]

    def _fqdn_selecting(self, target: Endpoint) -> list[Mapping]:
        return [
            p
            for p in self.fqdn
            if p["metadata"]["namespace"] == target.namespace and selects(p["spec"]["podSelector"], target.labels)
        ]

    def egress_isolated(self, src: Endpoint) -> bool:
        return bool(self._selecting(src, "Egress") or self._fqdn_selecting(src))

    def ingress_allowed(self, src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> bool:
        if not dst.is_pod or src.node_local:
            return True
        selecting = self._selecting(dst, "Ingress")
        if not selecting:
            return True
        return any(
            ("from" not in r or any(_peer_matches(pe, p["metadata"]["namespace"], src) for pe in r["from"]))
            and _port_matches(r.get("ports"), port, protocol)
            for p in selecting
            for r in p["spec"].get("ingress") or []
        )

    def egress_allowed(self, src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> bool:
        if not src.is_pod or dst.node_local:
            return True
        if not self.egress_isolated(src):
            return True
        by_rule = any(
            ("to" not in r or any(_peer_matches(pe, p["metadata"]["namespace"], dst) for pe in r["to"]))
            and _port_matches(r.get("ports"), port, protocol)
            for p in self._selecting(src, "Egress")
            for r in p["spec"].get("egress") or []
        )
        by_name = any(
            any(_host_matches(m, dst.host) for m in r["matches"]) and _port_matches(r.get("ports"), port, protocol)
            for p in self._fqdn_selecting(src)
            for r in p["spec"]["egress"]
        )
        return by_rule or by_name

    def allowed(self, src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> bool:
        return self.egress_allowed(src, dst, port, protocol) and self.ingress_allowed(src, dst, port, protocol)
