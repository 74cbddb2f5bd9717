"""Private service access for Managed Lustre: the reserved peering range, the service-networking connection,
and the ingress rule for the Lustre port from that range.

Teardown (FACTS.md §5): deleting a `servicenetworking.Connection` often fails with "Producer services … still
using this connection", and ABANDON leaves the peering so the VPC cannot be deleted afterwards. We use
`REMOVE_PEERING`: destroy first tries deleteConnection and, if the producer refuses, removes the peering from
our VPC so the range and the VPC can go. That is safe here because the only producer behind it is our Lustre
instance, which depends on the connection and is therefore deleted before it. When the stack retains the
instance (`lustreOnDestroy: retain`), the range, the connection and the primary VPC are retained with it, so the
kept data stays reachable. `update_on_creation_fail` makes a re-create adopt an existing connection (the seeds'
`connect || update --force`).
"""
from __future__ import annotations

import ipaddress
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from infra.lustre import keep_with_retained_instance
from core.settings import Settings

SERVICE = "servicenetworking.googleapis.com"


class PrivateServiceAccess(pulumi.ComponentResource):
    address: gcp.compute.GlobalAddress
    connection: gcp.servicenetworking.Connection
    lustre_firewall: gcp.compute.Firewall

    def __init__(self, name: str, settings: Settings, network: gcp.compute.Network,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:PrivateServiceAccess", name, None, opts)
        s = settings
        child = pulumi.ResourceOptions(parent=self)
        keep = pulumi.ResourceOptions(parent=self, **keep_with_retained_instance(s.lustre_on_destroy))
        psa = ipaddress.ip_network(s.network.psa_cidr)

        self.address = gcp.compute.GlobalAddress(
            "psa-range", gcp.compute.GlobalAddressArgs(
                name=s.names.psa_range, purpose="VPC_PEERING", address_type="INTERNAL",
                address=str(psa.network_address), prefix_length=psa.prefixlen, network=network.id),
            opts=keep)
        self.connection = gcp.servicenetworking.Connection(
            "psa-connection", gcp.servicenetworking.ConnectionArgs(
                network=network.id, service=SERVICE, reserved_peering_ranges=[self.address.name],
                deletion_policy="REMOVE_PEERING", update_on_creation_fail=True),
            opts=keep)
        # Lustre's docs open the LNet port from the PSA range; neither seed does. Legacy mode listens on 6988.
        ports = sorted({catalog.LUSTRE_PORT, s.lustre.port})
        self.lustre_firewall = gcp.compute.Firewall(
            "lustre-ingress", gcp.compute.FirewallArgs(
                name=f"{s.names.primary_network}-lustre", network=network.id, direction="INGRESS",
                source_ranges=[s.network.psa_cidr],
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(p) for p in ports])]),
            opts=child)
        self.register_outputs({"range": self.address.name, "connection": self.connection.id})
