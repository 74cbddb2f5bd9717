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

import ipaddress
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
    release = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)
    if release is None:
        return False   # the workload rules report the unknown release; nothing here may look it up
    # `on` with a Ray without token auth is refused by check(); it never counts as on (no token is asked for).
    return s.security.ray_token_auth in ("on", "auto") and catalog.ray_supports_token_auth(release.ray_version)


def credentials_flag(s: "Settings") -> str:
    """What `getCredentialsCommand` adds to `gcloud container clusters get-credentials`. A private IP endpoint is
    reached through the DNS-based endpoint when that takes outside traffic (`--dns-endpoint`); with the DNS
    endpoint closed to outside traffic, only from inside the VPC on the private IP (`--internal-ip`: "the private
    IP address of the cluster endpoint"; gcloud reference, container clusters get-credentials). Both flags
    together are refused by gcloud ("dns_endpoint and internal_ip cannot both be set")."""
    if not s.security.private_endpoint:
        return ""
    return " --dns-endpoint" if s.security.dns_endpoint else " --internal-ip"


def authorized_networks_limit(s: "Settings") -> int:
    """How many authorized networks GKE takes (core.catalog: the authorized-networks page's Limitations)."""
    return (catalog.GKE_MAX_AUTHORIZED_NETWORKS_PRIVATE if s.security.private_endpoint
            else catalog.GKE_MAX_AUTHORIZED_NETWORKS_PUBLIC)


def warnings(s: "Settings") -> list[str]:
    """Runnable but suspicious access settings, one line each naming the key (shown by `pulumi preview`).

    A private IP endpoint does not take public IPs over the internet (GKE "Add authorized networks for control
    plane access": private clusters "do not allow public IPs over the internet to access the control plane
    endpoint"; the authorized networks then name internal sources: the VPC, peered networks, Cloud VPN or
    Interconnect), so a public range in authorizedNetworks admits nobody, unless the VPC uses that range as
    privately used public IPs (PUPI, which the same page lists among privately used addresses), which the program
    cannot tell offline. Hence a warning, not a refusal."""
    sec = s.security
    if not sec.private_endpoint:
        return []
    out = []
    for c in sec.authorized_networks:
        try:
            net = ipaddress.ip_network(c, strict=False)
        except ValueError:
            continue   # refused by check()
        if net.is_global:
            out.append(f"{key('authorizedNetworks')}: {c} is a public range, but the IP endpoint is private "
                       f"({key('privateEndpoint')}): only addresses inside the VPC, peered networks, Cloud VPN or "
                       "Interconnect reach it, so this entry admits nobody unless the VPC uses it as privately used "
                       f"public IPs; reach the cluster through {key('dnsEndpoint')} or list an internal range")
    return out


def check(s: "Settings") -> list[str]:
    p: list[str] = []
    sec = s.security
    nets = [parse_cidr("authorizedNetworks", c, p) for c in sec.authorized_networks]
    limit = authorized_networks_limit(s)
    if len(sec.authorized_networks) > limit:
        p.append(f"{key('authorizedNetworks')}: {len(sec.authorized_networks)} CIDRs exceed GKE's {limit} for a cluster "
                 f"whose IP endpoint is {'private' if sec.private_endpoint else 'public'} ({key('privateEndpoint')}); "
                 "merge ranges into larger ones")
    if sec.private_endpoint and not sec.dns_endpoint and not [n for n in nets if n is not None]:
        p.append(f"{key('privateEndpoint')}: a private IP endpoint leaves `pulumi up` no way to reach the API "
                 f"server; turn on {key('dnsEndpoint')} or add the runner's range to {key('authorizedNetworks')}")
    if not sec.ray_dashboard_peers:
        p.append(f"{key('rayDashboardPeers')}: needs at least one peer, or the KubeRay operator cannot read job "
                 f"status (default: kube-system)")
    for peer in sec.ray_dashboard_peers:
        if peer not in NAMED_DASHBOARD_PEERS:
            parse_cidr("rayDashboardPeers", peer, p)
    release = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)   # None: reported by the workload rules
    if sec.ray_token_auth == "on" and release is not None and not catalog.ray_supports_token_auth(release.ray_version):
        p.append(f"{key('rayTokenAuth')}: 'on' needs Ray >= {catalog.RAY_TOKEN_AUTH_MIN_RAY}; NeMo-RL "
                 f"{release.tag} ships Ray {release.ray_version} (use v0.7.0, or 'auto')")
    return p
