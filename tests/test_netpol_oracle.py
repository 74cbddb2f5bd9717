"""tests/netpol_oracle.py judged on the Kubernetes documentation's own examples ("Network Policies",
kubernetes.io/docs/concepts/services-networking/network-policies; copies and sources in
tests/reference/kubernetes-docs):
the oracle must admit exactly what the page says each example admits, or the reachability matrices computed with it
(tests/test_team_platform.py, tests/security_figures.py) mean nothing.

Where the documentation leaves the behaviour open the oracle takes the reading that cannot hide a path between pods:
an `ipBlock` never matches a pod ("These should be cluster-external IPs"), which only matters to a policy whose ipBlock
holds pod addresses, and none of ours does (they name link-local DNS and metadata addresses and public ranges with
every private one excluded: core/catalog/security.py NON_PUBLIC_RANGES).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests import netpol_oracle as np

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parent / "reference" / "kubernetes-docs"


def _load(name: str) -> dict:
    return yaml.safe_load((DOCS / name).read_text())


DB = np.pod("db", "default", {"role": "db"})
FRONTEND = np.pod("frontend", "default", {"role": "frontend"})
OTHER_DEFAULT = np.pod("other", "default", {"role": "backend"})
FRONTEND_ELSEWHERE = np.pod("frontend elsewhere", "team-b", {"role": "frontend"})
IN_MYPROJECT = np.pod("any pod of myproject", "team-c", {"app": "x"}, {"project": "myproject"})


def _ip(addr: str) -> np.Endpoint:
    return np.Endpoint(addr, ip=addr)


def test_the_example_policy_admits_what_the_page_lists_and_nothing_else():
    """The page's summary of test-network-policy: role=db pods of default are isolated both ways; TCP 6379 from
    role=frontend pods of default, from any pod of a namespace labelled project=myproject, and from 172.17.0.0/16
    except 172.17.1.0/24; egress to 10.0.0.0/24 on TCP 5978."""
    p = np.Policies([_load("networkpolicy.yaml")])
    for src in (FRONTEND, IN_MYPROJECT, _ip("172.17.0.5"), _ip("172.17.2.1"), _ip("172.17.255.254")):
        assert p.allowed(src, DB, 6379), src.name
    for src in (OTHER_DEFAULT, FRONTEND_ELSEWHERE, _ip("172.17.1.9"), _ip("172.18.0.1")):
        assert not p.allowed(src, DB, 6379), src.name
    assert not p.allowed(FRONTEND, DB, 6380)
    assert not p.allowed(FRONTEND, DB, 6379, "UDP")
    assert p.allowed(DB, _ip("10.0.0.7"), 5978)
    assert not p.allowed(DB, _ip("10.0.0.7"), 5979)
    assert not p.allowed(DB, _ip("10.0.1.7"), 5978)
    assert not p.allowed(DB, FRONTEND, 6379)  # egress isolated: no rule names pods
    # A pod no policy selects is not isolated: everything reaches it, it reaches everything.
    assert p.allowed(FRONTEND_ELSEWHERE, OTHER_DEFAULT, 1234)
    assert p.allowed(OTHER_DEFAULT, FRONTEND_ELSEWHERE, 1234)


def _ingress_from(peers: list[dict]) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"podSelector": {"matchLabels": {"role": "db"}}, "ingress": [{"from": peers}]},
    }


CLIENT_OF_ALICE = np.pod("client in alice's namespace", "alice-ns", {"role": "client"}, {"user": "alice"})
OTHER_OF_ALICE = np.pod("other pod in alice's namespace", "alice-ns", {"role": "web"}, {"user": "alice"})
LOCAL_CLIENT = np.pod("client in default", "default", {"role": "client"})
CLIENT_ELSEWHERE = np.pod("client in bob's namespace", "bob-ns", {"role": "client"}, {"user": "bob"})


def test_one_entry_with_both_selectors_is_an_and_two_entries_are_an_or():
    """The page: a single `from` element with namespaceSelector and podSelector allows pods labelled role=client in
    namespaces labelled user=alice; two elements allow role=client pods of the local namespace or any pod of a
    namespace labelled user=alice."""
    both = {"namespaceSelector": {"matchLabels": {"user": "alice"}}, "podSelector": {"matchLabels": {"role": "client"}}}
    one = np.Policies([_ingress_from([both])])
    assert one.allowed(CLIENT_OF_ALICE, DB, 80)
    for src in (OTHER_OF_ALICE, LOCAL_CLIENT, CLIENT_ELSEWHERE):
        assert not one.allowed(src, DB, 80), src.name
    two = np.Policies(
        [
            _ingress_from(
                [
                    {"namespaceSelector": {"matchLabels": {"user": "alice"}}},
                    {"podSelector": {"matchLabels": {"role": "client"}}},
                ]
            )
        ]
    )
    for src in (CLIENT_OF_ALICE, OTHER_OF_ALICE, LOCAL_CLIENT):
        assert two.allowed(src, DB, 80), src.name
    assert not two.allowed(CLIENT_ELSEWHERE, DB, 80)


def test_a_namespace_selector_matches_the_namespaces_name_label():
    """The API server labels every namespace kubernetes.io/metadata.name=<name> (Kubernetes "Network Policies",
    "Targeting a Namespace by its name"): the platform's policies select kube-system and gke-gmp-system that way."""
    p = np.Policies([_ingress_from([{"namespaceSelector": {"matchLabels": {np.NS_NAME_LABEL: "kube-system"}}}])])
    assert p.allowed(np.pod("dns", "kube-system", {"k8s-app": "kube-dns"}), DB, 53)
    assert not p.allowed(np.pod("dns lookalike", "team-x", {"k8s-app": "kube-dns"}), DB, 53)


def test_an_end_port_admits_the_range_inclusive():
    """The page's multi-port example: TCP 32000 to 32768 to 10.0.0.0/24."""
    p = np.Policies([_load("networkpolicy-multiport-egress.yaml")])
    for port in (32000, 32500, 32768):
        assert p.allowed(DB, _ip("10.0.0.1"), port), port
    for port in (31999, 32769):
        assert not p.allowed(DB, _ip("10.0.0.1"), port), port
    # Egress only: ingress to db stays open.
    assert p.allowed(OTHER_DEFAULT, DB, 5432)


def test_the_default_policies_of_the_page():
    """ "Default deny all ingress traffic" (an empty podSelector and policyTypes Ingress, no rule) isolates every pod
    of the namespace for ingress and changes nothing for egress; "Default allow all ingress traffic" (one empty
    rule) admits everything even beside it; "Default deny all ingress and all egress traffic" isolates both ways."""

    def policy(types, ingress=None, egress=None):
        spec: dict = {"podSelector": {}, "policyTypes": types}
        if ingress is not None:
            spec["ingress"] = ingress
        if egress is not None:
            spec["egress"] = egress
        return {"kind": "NetworkPolicy", "metadata": {"name": "d", "namespace": "default"}, "spec": spec}

    deny_in = np.Policies([policy(["Ingress"])])
    assert not deny_in.allowed(FRONTEND, DB, 80)
    assert deny_in.allowed(DB, FRONTEND_ELSEWHERE, 80)
    allow_in = np.Policies([policy(["Ingress"]), policy(["Ingress"], ingress=[{}])])
    assert allow_in.allowed(FRONTEND_ELSEWHERE, DB, 80)
    deny_all = np.Policies([policy(["Ingress", "Egress"])])
    assert not deny_all.allowed(DB, FRONTEND, 80) and not deny_all.allowed(FRONTEND, DB, 80)
    assert not deny_all.allowed(DB, _ip("203.0.113.1"), 443)
    # "Traffic to and from the node where a Pod is running is always allowed".
    node = np.Endpoint("its node", node_local=True)
    assert deny_all.allowed(node, DB, 80) and deny_all.allowed(DB, node, 10250)


def test_policies_of_another_namespace_never_select_a_pod():
    p = np.Policies([_ingress_from([])])  # an ingress rule that admits nothing, in default
    twin = np.pod("db in team-b", "team-b", {"role": "db"})
    assert p.allowed(FRONTEND_ELSEWHERE, twin, 6379)  # not isolated: the policy is default's
    assert not p.allowed(FRONTEND, DB, 6379)
