"""Private service access for Managed Lustre: the reserved peering range, the service-networking connection,
and the ingress rule for the Lustre port from that range.

Teardown (hashicorp/terraform-provider-google issue #16275; GoogleCloudPlatform/magic-modules PR #18476, which added
REMOVE_PEERING): deleting a `servicenetworking.Connection` often fails with "Producer services … still
using this connection", and ABANDON leaves the peering so the VPC cannot be deleted afterwards. We use
`REMOVE_PEERING`: destroy first tries deleteConnection and, if the producer refuses, removes the peering from
our VPC so the range and the VPC can go. That is safe here because the only producer behind it is our Lustre
instance, which depends on the connection and is therefore deleted before it. When the stack retains the
instance (`lustreOnDestroy: retain`), the range, the connection, the Lustre firewall and the primary VPC are
retained with it, so the kept data stays reachable; `lustreAdopt` imports that same set on the way back (the
ids in core/catalog/replacements.py IMPORT_IDS). `update_on_creation_fail` makes a re-create adopt an existing
connection (the seeds' `connect || update --force`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.catalog import replacements
from core.settings import Settings

SERVICE = "servicenetworking.googleapis.com"


@dataclass(frozen=True)
class PsaArgs:
    range_name: str
    firewall_name: str
    psa_cidr: str
    lustre_port: int
    # Kept on destroy with a retained Lustre instance, which needs the range, the peering and the firewall that
    # lets LNet in to stay reachable (kept together, adopted together).
    keep_on_destroy: bool
    # lustreAdopt: the provider ids of the kept range, peering and firewall, imported instead of created.
    adopt_ids: Optional[dict[str, str]] = None

    @classmethod
    def of(cls, s: Settings) -> "PsaArgs":
        return cls(
            range_name=s.names.psa_range,
            firewall_name=s.names.lustre_firewall,
            psa_cidr=s.network.psa_cidr,
            lustre_port=s.lustre.port,
            keep_on_destroy=s.teardown.lustre_on_destroy == "retain",
            adopt_ids=adopt_ids(s) if s.teardown.lustre_adopt else None,
        )


ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
CONNECTION = "gcp:servicenetworking/connection:Connection"
FIREWALL = "gcp:compute/firewall:Firewall"


def adopt_ids(s: Settings) -> dict[str, str]:
    """The kept range, peering and Lustre firewall, by type token, as the provider identifies them."""
    network = replacements.import_id("gcp:compute/network:Network", project=s.gcp_project, name=s.names.primary_network)
    return {
        ADDRESS: replacements.import_id(ADDRESS, project=s.gcp_project, name=s.names.psa_range),
        CONNECTION: replacements.import_id(CONNECTION, network=network, service=SERVICE),
        FIREWALL: replacements.import_id(FIREWALL, project=s.gcp_project, name=s.names.lustre_firewall),
    }


class PrivateServiceAccess(pulumi.ComponentResource):
    address: gcp.compute.GlobalAddress
    connection: gcp.servicenetworking.Connection
    lustre_firewall: gcp.compute.Firewall

    def __init__(
        self, name: str, args: PsaArgs, network: gcp.compute.Network, opts: Optional[pulumi.ResourceOptions] = None
    ):
        super().__init__("nemo-rl-gke:infra:PrivateServiceAccess", name, None, opts)
        a = args
        ids = a.adopt_ids or {}

        def keep(token: str) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, retain_on_delete=a.keep_on_destroy, import_=ids.get(token))

        psa = ipaddress.ip_network(a.psa_cidr)

        self.address = gcp.compute.GlobalAddress(
            "psa-range",
            gcp.compute.GlobalAddressArgs(
                name=a.range_name,
                purpose="VPC_PEERING",
                address_type="INTERNAL",
                address=str(psa.network_address),
                prefix_length=psa.prefixlen,
                network=network.id,
            ),
            opts=keep(ADDRESS),
        )
        self.connection = gcp.servicenetworking.Connection(
            "psa-connection",
            gcp.servicenetworking.ConnectionArgs(
                network=network.id,
                service=SERVICE,
                reserved_peering_ranges=[self.address.name],
                deletion_policy="REMOVE_PEERING",
                update_on_creation_fail=True,
            ),
            opts=keep(CONNECTION),
        )
        # Lustre's docs open the LNet port from the PSA range; neither seed does. Legacy mode listens on 6988.
        ports = sorted({catalog.LUSTRE_PORT, a.lustre_port})
        self.lustre_firewall = gcp.compute.Firewall(
            "lustre-ingress",
            gcp.compute.FirewallArgs(
                name=a.firewall_name,
                network=network.id,
                direction="INGRESS",
                source_ranges=[a.psa_cidr],
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(p) for p in ports])],
            ),
            opts=keep(FIREWALL),
        )
        self.register_outputs({"range": self.address.name, "connection": self.connection.id})
