"""NodeLocal DNSCache under default-deny egress: every pod that resolves names reaches the node's DNS cache on 53
(UDP and TCP) by either path a query may take, and nothing else new.

GKE "Set up NodeLocal DNSCache" (kubernetes-engine/docs/how-to/nodelocal-dns-cache): always on on Autopilot, on by
default on Standard from 1.33.1 (core/catalog/security.py). The cache is Kubernetes' node-local-dns add-on, kept
here as upstream wrote it (tests/oracles/nodelocaldns, SOURCES.md there): a hostNetwork DaemonSet in kube-system
whose pods carry `k8s-app: node-local-dns`, serving DNS on 53/UDP and 53/TCP at the link-local 169.254.20.10, with
metrics on 9253 and health on 8080. Which of the address and the pods a Dataplane V2 node evaluates is not agreed
by public reports, so both must be admitted; `tests/netpol_oracle.py` (the NetworkPolicy semantics) judges it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from synth import engine
from tests import netpol_oracle as np
from tests import security_figures as f

ORACLE = Path(__file__).parent / "oracles" / "nodelocaldns"
SHIPPED = engine.platform_stacks()
RESOLVERS = (
    "ray-head",
    "ray-worker",
    "ray-job-submitter",
    "weights-prefetch",
    "weights-stage",
    "weights-import",
    "checkpoint-export",
    "data-staging",
)
# The Jobs that call Google APIs as their own identity fetch its token from the metadata server.
METADATA_CLIENTS = ("checkpoint-export", "weights-stage", "weights-import", "data-staging")


def _policy_names(r) -> set[str]:
    return {x.name for x in r.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}


def _upstream() -> tuple[dict, str, list[tuple[int, str]], list[int]]:
    """(the cache's pod labels, its listen address, its DNS (port, protocol) pairs, its other ports) from upstream."""
    ds = yaml.safe_load((ORACLE / "nodelocaldns-daemonset.yaml").read_text())
    assert ds["kind"] == "DaemonSet" and ds["metadata"]["namespace"] == "kube-system"
    pod = ds["spec"]["template"]
    assert pod["spec"]["hostNetwork"] is True
    (container,) = pod["spec"]["containers"]
    dns = [(p["containerPort"], p["protocol"]) for p in container["ports"] if p["name"].startswith("dns")]
    other = [p["containerPort"] for p in container["ports"] if not p["name"].startswith("dns")]
    other.append(container["livenessProbe"]["httpGet"]["port"])
    readme = (ORACLE / "README-excerpt.md").read_text()
    (address,) = re.findall(r"link local ip\((\d+\.\d+\.\d+\.\d+)/32 by default\)", readme)
    return dict(pod["metadata"]["labels"]), address, dns, other


LABELS, ADDRESS, DNS_PORTS, OTHER_PORTS = _upstream()


@pytest.mark.unit
def test_the_upstream_cache_serves_dns_on_53_udp_and_tcp_at_its_link_local_address():
    assert LABELS == {"k8s-app": "node-local-dns"}
    assert ADDRESS == "169.254.20.10"
    assert sorted(DNS_PORTS) == [(53, "TCP"), (53, "UDP")]
    assert sorted(OTHER_PORTS) == [8080, 9253]


@pytest.fixture(scope="module")
def rendered(synth) -> dict:
    return {s: synth(s) for s in SHIPPED}


@pytest.mark.graph
def test_every_resolving_pod_reaches_the_node_cache_by_its_address_and_by_its_pods(rendered):
    cache_pod = np.pod("node-local-dns-x7k2", "kube-system", LABELS)
    cache_address = np.Endpoint("node-local-dns", ip=ADDRESS)
    for stack, r in rendered.items():
        pol = f.policies(r)
        for p in f.workload_pods(r):
            src = np.pod(p.source, p.namespace, p.labels)
            resolves = p.labels[f.ROLE] in RESOLVERS
            for port, proto in DNS_PORTS:
                for cache in (cache_pod, cache_address):
                    assert pol.egress_allowed(src, cache, port, proto) is resolves, (stack, p.source, cache.name)


@pytest.mark.graph
def test_admitting_the_cache_opens_nothing_else(rendered):
    """Over probes around the cache (its other ports, its neighbours in kube-system and on the link-local range, a pod
    wearing its label elsewhere), a workload pod reaches exactly the resolvers on 53 and, for the Jobs calling Google
    APIs as their own identity, the metadata server's token port: what the policies allowed before the cache was
    admitted, plus the cache."""
    kube_dns = np.pod("kube-dns-1", "kube-system", {"k8s-app": "kube-dns"})
    cache_pod = np.pod("node-local-dns-x7k2", "kube-system", LABELS)
    resolvers = {
        "kube-dns": kube_dns,
        "cache-pod": cache_pod,
        "cache-address": np.Endpoint("cache-address", ip=ADDRESS),
        "cloud-dns": np.Endpoint("cloud-dns", ip="169.254.169.254"),
    }
    others = {
        "konnectivity": np.pod("konnectivity-agent-1", "kube-system", {"k8s-app": "konnectivity-agent"}),
        "kube-system-other": np.pod("anetd-1", "kube-system", {"k8s-app": "cilium"}),
        "label-elsewhere": np.pod("impostor", "default", LABELS),
        "link-local-neighbour": np.Endpoint("neighbour", ip="169.254.20.11"),
        "vpc": np.Endpoint("vpc", ip="10.128.0.7"),
    }
    ports = sorted({*(p for p, _ in DNS_PORTS), *OTHER_PORTS, 80, 443, 8265})
    for stack, r in rendered.items():
        pol = f.policies(r)
        for p in f.workload_pods(r):
            src = np.pod(p.source, p.namespace, p.labels)
            role = p.labels[f.ROLE]
            reached = {
                (name, port, proto)
                for name, dst in {**resolvers, **others}.items()
                for port in ports
                for proto in ("UDP", "TCP")
                if pol.egress_allowed(src, dst, port, proto)
            }
            expected = set()
            if role in RESOLVERS:
                expected = {(name, port, proto) for name in resolvers for port, proto in DNS_PORTS}
            # The data staging Job reads gs:// data as its own identity only where there is some to read (gs://
            # jobData, or a platform whose experiments may bring theirs): its metadata-server policy says where.
            credentialed = role in METADATA_CLIENTS and (
                role != "data-staging" or "data-staging-metadata-server" in _policy_names(r)
            )
            if credentialed:
                expected |= {("cloud-dns", 80, "TCP"), ("cloud-dns", 8080, "TCP")}  # the metadata server
            assert reached == expected, (stack, p.source, sorted(reached ^ expected))
