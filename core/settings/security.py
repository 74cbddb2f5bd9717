"""Hardening settings and their rules: who reaches the control plane, where the operator's dashboard calls come
from, which KubeRay operator runs the Ray clusters, Ray token authentication, egress control. Private nodes,
Cloud NAT and shielded nodes are not optional (docs/research/harden.md).

Rules (each problem names its key):
- `authorizedNetworks`: every entry an IPv4 CIDR.
- `privateEndpoint` (default on: the IP endpoint is private, `pulumi up` and kubectl use GKE's DNS-based
  endpoint, authorised by IAM): pulumi-kubernetes must still reach the API server from wherever `pulumi up`
  runs, so it needs the DNS-based endpoint (`dnsEndpoint`) or an authorised network (a runner inside the VPC).
- `rayDashboardPeers`: `konnectivity`, `kube-system`, `kuberay-operator` or a CIDR; empty means the operator's
  own path (`konnectivity` for GKE's hosted add-on, `kuberay-operator` for the KubeRay this program installs).
  Each operator has one path, so a list for the add-on may not name `kuberay-operator` and a list for
  `kubeRayOperator: helm` must name it (else nothing admits the operator, and its status calls time out).
- `rayTokenAuth`: `on` needs a release whose Ray has token auth (Ray >= 2.52) and an operator that can send the
  token (`kubeRayOperator: helm`, KubeRay 1.7.0): GKE does not publish its add-on's KubeRay, which may be 1.4.2,
  and without the token the operator cannot read a job's status or stop it (core/catalog/security.py).
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING, Literal

from core import catalog
from core.gcp_rules import parse_cidr
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    CLUSTER_PROTECTED,
    IN_PLACE,
    PLATFORM,
    REFUSED_BY_ENGINE,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

# Named dashboard peers (workloads/manifests/network_policy.py turns them into NetworkPolicy peers).
NAMED_DASHBOARD_PEERS = ("konnectivity", "kube-system", "kuberay-operator")
OPERATORS = ("gke-addon", "helm")


class SecuritySettings(Section):
    """Control-plane access, the dashboard's NetworkPolicy peer, Ray token authentication."""

    authorized_networks: list[str] = setting(
        [],
        key="authorizedNetworks",
        description=(
            "CIDRs allowed to reach the cluster's IP endpoint (control-plane authorized networks); empty: open to "
            "every address (IAM still applies); the policy pack warns outside dev."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",)),
        bad=(
            '["x"]',
            "notjson",
            # One more than GKE's limit of authorized networks (core.catalog).
            json.dumps([f"10.{i}.0.0/16" for i in range(catalog.GKE_MAX_AUTHORIZED_NETWORKS_PRIVATE + 1)]),
        ),
        alternatives=({"authorizedNetworks": ["203.0.113.0/24"]},),
    )
    private_endpoint: bool = setting(
        True,
        key="privateEndpoint",
        description=(
            "Keep the cluster's IP endpoint private (VPC only); pulumi and kubectl use the DNS-based endpoint "
            "(IAM). Set false together with authorizedNetworks to open the IP endpoint to those ranges."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("Cluster cluster", "kubernetes k8s"),
            note="the cluster's access; an experiment's provider takes the new kubeconfig in place (clusterIdentifier)",
        ),
        bad=("maybe",),
        alternatives=({"privateEndpoint": False}, {"privateEndpoint": True}),
    )
    dns_endpoint: bool = setting(
        True,
        key="dnsEndpoint",
        description=(
            "GKE's DNS-based control-plane endpoint, reachable from anywhere and authorised by IAM; used by the "
            "Kubernetes provider when privateEndpoint is on."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("Cluster cluster", "kubernetes k8s"),
            note="the cluster's access; an experiment's provider takes the new kubeconfig in place (clusterIdentifier)",
        ),
        bad=("maybe",),
        alternatives=({"dnsEndpoint": False, "privateEndpoint": False},),
    )
    ray_dashboard_peers: list[str] = setting(
        [],
        key="rayDashboardPeers",
        description=(
            "Who may reach the Ray head's dashboard port besides the Ray pods and the job submitter: 'konnectivity' "
            "(the API server's agents, through which GKE's hosted KubeRay operator calls), 'kuberay-operator' (the "
            "operator pods of kubeRayOperator helm), 'kube-system' (any pod there) or CIDRs; empty: the operator's "
            "own path."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("NetworkPolicy netpol-dashboard-from-operator", "NetworkPolicy *-netpol-dashboard-from-operator"),
        ),
        bad=('["x"]', '["kuberay-operator"]'),
        alternatives=({"rayDashboardPeers": ["10.0.0.0/20"]},),
    )
    ray_token_auth: Literal["auto", "on", "off"] = setting(
        "auto",
        key="rayTokenAuth",
        description=(
            "Ray token authentication on the dashboard, Jobs API and GCS: auto = on where the release's Ray has it "
            "(>= 2.52: v0.7.0) and the operator can send it (kubeRayOperator helm), on, or off."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("RayCluster raycluster", "RayJob rayjob", "Secret *")),
        bad=("x", "on"),
        alternatives=({"rayTokenAuth": "off"},),
    )
    kuberay_operator: Literal["gke-addon", "helm"] = setting(
        "gke-addon",
        key="kubeRayOperator",
        description=(
            "Which KubeRay runs the Ray clusters: GKE's hosted RayOperator add-on (version not published), or helm: "
            "KubeRay 1.7.0 from its Helm chart kept in the repository, in its own namespace (needed for Ray token "
            "authentication)."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=(
                "Cluster cluster",
                "Namespace operator-namespace",
                # The operator's rights in the workload and experiment namespaces (workloads/kuberay_operator.py).
                "Role operator-role*",
                "RoleBinding operator-role-binding*",
                "NetworkPolicy *",
                "Release *",
            ),
            note="the operator changes under the running cluster, which keeps running",
        ),
        bad=("x",),
        alternatives=({"kubeRayOperator": "helm"},),
    )
    egress_fqdn_policies: bool = setting(
        True,
        key="egressFqdnPolicies",
        description=(
            "Allow the pods' outside hosts (Hugging Face, PyPI, Cloud Storage, W&B) by name with GKE FQDN network "
            "policies; false: HTTPS to any public address for those pods instead."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={CLUSTER_PROTECTED: REFUSED_BY_ENGINE},
            touches=("Cluster cluster", "FQDNNetworkPolicy *", "NetworkPolicy *"),
            note="true -> false replaces the cluster (the provider's CustomizeDiff); false -> true is in place",
        ),
        bad=("maybe",),
        alternatives=({"egressFqdnPolicies": False},),
    )


RAY_AUTH_TOKEN_MISSING = (
    f"{key('rayAuthToken')}: Ray token authentication is on ({key('rayTokenAuth')}; the release's Ray has it) but "
    'no token is set; run `pulumi config set --secret rayAuthToken "$(openssl rand -hex 32)"` or set '
    f"{key('rayTokenAuth')} to off"
)


def own_operator(s: "UncheckedSettings") -> bool:
    """The stack installs KubeRay itself (a known version that can send the Ray token)."""
    return s.security.kuberay_operator == "helm"


def token_auth_enabled(s: "UncheckedSettings") -> bool:
    release = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)
    if release is None:
        return False  # the workload rules report the unknown release; nothing here may look it up
    # `on` where the release's Ray or the operator cannot take a token is refused by check(); it never counts as on.
    supported = catalog.ray_supports_token_auth(release.ray_version) and own_operator(s)
    return s.security.ray_token_auth in ("on", "auto") and supported


def credentials_flag(s: "UncheckedSettings") -> str:
    """What `getCredentialsCommand` adds to `gcloud container clusters get-credentials`. A private IP endpoint is
    reached through the DNS-based endpoint when that takes outside traffic (`--dns-endpoint`); with the DNS
    endpoint closed to outside traffic, only from inside the VPC on the private IP (`--internal-ip`: "the private
    IP address of the cluster endpoint"; gcloud reference, container clusters get-credentials). Both flags
    together are refused by gcloud ("dns_endpoint and internal_ip cannot both be set")."""
    if not s.security.private_endpoint:
        return ""
    return " --dns-endpoint" if s.security.dns_endpoint else " --internal-ip"


def authorized_networks_limit(s: "UncheckedSettings") -> int:
    """How many authorized networks GKE takes (core.catalog: the authorized-networks page's Limitations)."""
    return (
        catalog.GKE_MAX_AUTHORIZED_NETWORKS_PRIVATE
        if s.security.private_endpoint
        else catalog.GKE_MAX_AUTHORIZED_NETWORKS_PUBLIC
    )


def warnings(s: "UncheckedSettings") -> list[str]:
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
            continue  # refused by check()
        if net.is_global:
            out.append(
                f"{key('authorizedNetworks')}: {c} is a public range, but the IP endpoint is private "
                f"({key('privateEndpoint')}): only addresses inside the VPC, peered networks, Cloud VPN or "
                "Interconnect reach it, so this entry admits nobody unless the VPC uses it as privately used "
                f"public IPs; reach the cluster through {key('dnsEndpoint')} or list an internal range"
            )
    return out


def dashboard_peers(s: "UncheckedSettings") -> tuple[str, ...]:
    """The dashboard's peers besides the workload: the setting, or the operator's own path."""
    if s.security.ray_dashboard_peers:
        return tuple(s.security.ray_dashboard_peers)
    return ("kuberay-operator",) if own_operator(s) else ("konnectivity",)


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    sec = s.security
    nets = [parse_cidr("authorizedNetworks", c, p) for c in sec.authorized_networks]
    limit = authorized_networks_limit(s)
    if len(sec.authorized_networks) > limit:
        p.append(
            f"{key('authorizedNetworks')}: {len(sec.authorized_networks)} CIDRs exceed GKE's {limit} for a cluster "
            f"whose IP endpoint is {'private' if sec.private_endpoint else 'public'} ({key('privateEndpoint')}); "
            "merge ranges into larger ones"
        )
    if sec.private_endpoint and not sec.dns_endpoint and not [n for n in nets if n is not None]:
        p.append(
            f"{key('privateEndpoint')}: a private IP endpoint leaves `pulumi up` no way to reach the API "
            f"server; turn on {key('dnsEndpoint')} or add the runner's range to {key('authorizedNetworks')}"
        )
    if "kuberay-operator" in sec.ray_dashboard_peers and not own_operator(s):
        p.append(
            f"{key('rayDashboardPeers')}: 'kuberay-operator' names the operator pods of {key('kubeRayOperator')} "
            "helm; GKE's add-on runs its operator outside the cluster (use 'konnectivity')"
        )
    peers_valid = True
    for peer in sec.ray_dashboard_peers:
        if peer not in NAMED_DASHBOARD_PEERS:
            peers_valid = parse_cidr("rayDashboardPeers", peer, p) is not None and peers_valid
    peers = sec.ray_dashboard_peers
    if peers_valid and peers and own_operator(s) and "kuberay-operator" not in peers:
        # The mirror case: the operator this stack installs runs as pods of its own namespace and calls the
        # dashboard directly (the chart sets no useKubernetesProxy), so only the 'kuberay-operator' peer admits it;
        # 'konnectivity' is the API server's path, which only GKE's hosted add-on takes.
        p.append(
            f"{key('rayDashboardPeers')}: with {key('kubeRayOperator')} helm the operator's pods reach the dashboard "
            "only through 'kuberay-operator', which the list lacks ('konnectivity' is the path of GKE's add-on); "
            "add 'kuberay-operator' or leave the list empty"
        )
    release = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)  # None: reported by the workload rules
    if sec.ray_token_auth == "on" and release is not None and not catalog.ray_supports_token_auth(release.ray_version):
        p.append(
            f"{key('rayTokenAuth')}: 'on' needs Ray >= {catalog.RAY_TOKEN_AUTH_MIN_RAY}; NeMo-RL "
            f"{release.tag} ships Ray {release.ray_version} (use v0.7.0, or 'auto')"
        )
    elif sec.ray_token_auth == "on" and not own_operator(s):
        p.append(
            f"{key('rayTokenAuth')}: 'on' needs an operator that sends the token on its job-status and stop "
            f"calls; GKE's add-on does not publish its KubeRay (1.4.2 has no authOptions, so its calls would "
            f"get 401 and a deleted job would keep its GPUs): set {key('kubeRayOperator')} to helm"
        )
    return p
