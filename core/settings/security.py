"""Hardening settings and their rules: who reaches the control plane, where the operator's dashboard calls come
from, Ray token authentication. Private nodes, Cloud NAT and shielded nodes are not optional (issue 11).

Rules (each problem names its key):
- `authorizedNetworks`: every entry an IPv4 CIDR.
- `privateEndpoint`: the cluster's IP endpoint is private; pulumi-kubernetes must still reach the API server
  from wherever `pulumi up` runs, so it needs the DNS-based endpoint (`dnsEndpoint`, authorised by IAM) or an
  authorised network (a runner inside the VPC).
- `rayDashboardPeers`: `konnectivity`, `kube-system` or a CIDR; at least one (the operator reads job status there).
- `rayTokenAuth`: `on` needs a release whose Ray has token auth (Ray >= 2.52).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from core import catalog
from core.keys import key
from core.gcp_rules import parse_cidr
from core.settings.base import Section

if TYPE_CHECKING:
    from core.settings import Settings

# Named dashboard peers (workloads/network_policy.py turns them into NetworkPolicy peers).
NAMED_DASHBOARD_PEERS = ("konnectivity", "kube-system")


class SecuritySettings(Section):
    """Control-plane access, the dashboard's NetworkPolicy peer, Ray token authentication."""

    authorized_networks: list[str] = Field([], alias="authorizedNetworks", description=(
        "CIDRs allowed to reach the cluster's IP endpoint (control-plane authorized networks); empty: open to "
        "every address (IAM still applies); the policy pack warns outside dev."))
    private_endpoint: bool = Field(False, alias="privateEndpoint", description=(
        "Make the cluster's IP endpoint private (VPC only). Needs dnsEndpoint or an authorized network that "
        "`pulumi up` runs from."))
    dns_endpoint: bool = Field(True, alias="dnsEndpoint", description=(
        "GKE's DNS-based control-plane endpoint, reachable from anywhere and authorised by IAM; used by the "
        "Kubernetes provider when privateEndpoint is on."))
    ray_dashboard_peers: list[str] = Field(["kube-system"], alias="rayDashboardPeers", description=(
        "Who may reach the Ray head's dashboard port besides the workload's own pods: 'konnectivity' (the API "
        "server's agents, through which GKE's hosted KubeRay operator calls), 'kube-system' (any pod there) or "
        "CIDRs. See the README before narrowing it."))
    ray_token_auth: Literal["auto", "on", "off"] = Field("auto", alias="rayTokenAuth", description=(
        "Ray token authentication on the dashboard, Jobs API and GCS: auto = on for releases whose Ray has it "
        "(>= 2.52: v0.7.0), on, or off."))


RAY_AUTH_TOKEN_MISSING = (
    f"{key('rayAuthToken')}: Ray token authentication is on ({key('rayTokenAuth')}; the release's Ray has it) but "
    "no token is set; run `pulumi config set --secret rayAuthToken \"$(openssl rand -hex 32)\"` or set "
    f"{key('rayTokenAuth')} to off")


def token_auth_enabled(s: "Settings") -> bool:
    supported = catalog.ray_supports_token_auth(s.workload.release.ray_version)
    return s.security.ray_token_auth == "on" or (s.security.ray_token_auth == "auto" and supported)


def check(s: "Settings") -> list[str]:
    p: list[str] = []
    sec = s.security
    nets = [parse_cidr("authorizedNetworks", c, p) for c in sec.authorized_networks]
    if sec.private_endpoint and not sec.dns_endpoint and not [n for n in nets if n is not None]:
        p.append(f"{key('privateEndpoint')}: a private IP endpoint leaves `pulumi up` no way to reach the API "
                 f"server; turn on {key('dnsEndpoint')} or add the runner's range to {key('authorizedNetworks')}")
    if not sec.ray_dashboard_peers:
        p.append(f"{key('rayDashboardPeers')}: needs at least one peer, or the KubeRay operator cannot read job "
                 f"status (default: kube-system)")
    for peer in sec.ray_dashboard_peers:
        if peer not in NAMED_DASHBOARD_PEERS:
            parse_cidr("rayDashboardPeers", peer, p)
    if sec.ray_token_auth == "on" and not catalog.ray_supports_token_auth(s.workload.release.ray_version):
        p.append(f"{key('rayTokenAuth')}: 'on' needs Ray >= {catalog.RAY_TOKEN_AUTH_MIN_RAY}; NeMo-RL "
                 f"{s.workload.release.tag} ships Ray {s.workload.release.ray_version} (use v0.7.0, or 'auto')")
    return p
