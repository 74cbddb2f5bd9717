"""The three VPCs of a GPU cluster: primary (nodes, pods, services), gVNIC, and RDMA (RoCE, zonal profile).

The nodes are private (no external IPs; infra/cluster.py), so the primary VPC gets a Cloud Router with Cloud
NAT for the nodes' and pods' egress (NGC, Hugging Face, package mirrors), and its subnet Private Google Access
so Google APIs (Artifact Registry, GCS, Logging) do not depend on NAT. The gVNIC and RDMA VPCs carry only
GPU-to-GPU traffic between the nodes: no NAT there (Google's A4 blueprint adds one on its second VPC; nothing
of ours leaves through it).

Mirrors the seeds' `gcloud compute networks …` steps, with our own primary VPC instead of `default` and the
RoCE profile passed as a path (a bare profile name fails with "URL is malformed").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.catalog import replacements
from core.naming import Names
from core.settings import Settings
from core.settings.network import NetworkSettings
from infra.options import child_options


@dataclass(frozen=True)
class NetworksArgs:
    names: Names
    region: str
    plan: NetworkSettings
    rdma_network_profile: str  # projects/<p>/global/networkProfiles/<zone>-vpc-roce
    # The primary VPC stays when a retained Lustre instance needs it to stay reachable.
    keep_primary_on_destroy: bool
    # Import the kept primary VPC (lustreAdopt): its provider id, or None to create it.
    adopt_primary_id: Optional[str] = None

    @classmethod
    def of(cls, s: Settings) -> "NetworksArgs":
        return cls(
            names=s.names,
            region=s.region,
            plan=s.network,
            rdma_network_profile=s.rdma_network_profile,
            keep_primary_on_destroy=s.teardown.lustre_on_destroy == "retain",
            adopt_primary_id=(
                replacements.import_id(
                    "gcp:compute/network:Network", project=s.gcp_project, name=s.names.primary_network
                )
                if s.teardown.lustre_adopt
                else None
            ),
        )


class Networks(pulumi.ComponentResource):
    primary: gcp.compute.Network
    primary_subnet: gcp.compute.Subnetwork
    router: gcp.compute.Router
    nat: gcp.compute.RouterNat
    gvnic: gcp.compute.Network
    gvnic_subnet: gcp.compute.Subnetwork
    rdma: gcp.compute.Network
    rdma_subnets: list[gcp.compute.Subnetwork]

    def __init__(self, name: str, args: NetworksArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:Networks", name, None, opts)
        a, n, plan = args, args.names, args.plan
        # Every network resource calls the Compute API: children wait for what the component waits for.
        child = child_options(self, opts)

        # Primary VPC: nodes, pods and services; Lustre is reached over its PSA peering. MTU 8896 as Cluster
        # Toolkit/xpk do, because Lustre throughput is better with jumbo frames.
        self.primary = gcp.compute.Network(
            "primary",
            gcp.compute.NetworkArgs(
                name=n.primary_network, auto_create_subnetworks=False, mtu=catalog.VPC_MTU, routing_mode="REGIONAL"
            ),
            opts=child_options(self, opts, retain_on_delete=a.keep_primary_on_destroy, import_=a.adopt_primary_id),
        )
        self.primary_subnet = gcp.compute.Subnetwork(
            "primary",
            gcp.compute.SubnetworkArgs(
                name=n.primary_subnet,
                region=a.region,
                network=self.primary.id,
                ip_cidr_range=plan.primary_subnet_cidr,
                private_ip_google_access=True,
                secondary_ip_ranges=[
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=n.pods_range, ip_cidr_range=plan.pods_cidr),
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(
                        range_name=n.services_range, ip_cidr_range=plan.services_cidr
                    ),
                ],
            ),
            opts=child,
        )
        self.router = gcp.compute.Router(
            "primary", gcp.compute.RouterArgs(name=n.router, region=a.region, network=self.primary.id), opts=child
        )
        # Every range of the primary subnet (nodes and the pods' alias range), with automatically allocated
        # addresses and dynamic port allocation (a node pulling a 30 GB image opens many connections).
        self.nat = gcp.compute.RouterNat(
            "primary",
            gcp.compute.RouterNatArgs(
                name=n.nat,
                router=self.router.name,
                region=a.region,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[
                    gcp.compute.RouterNatSubnetworkArgs(
                        name=self.primary_subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
                    )
                ],
                # Dynamic port allocation excludes endpoint-independent mapping (Cloud NAT API).
                enable_dynamic_port_allocation=True,
                enable_endpoint_independent_mapping=False,
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            ),
            opts=child,
        )
        internal = [plan.primary_subnet_cidr, plan.pods_cidr, plan.services_cidr]
        self.primary_firewall = gcp.compute.Firewall(
            "primary-internal",
            gcp.compute.FirewallArgs(
                name=n.primary_firewall,
                network=self.primary.id,
                direction="INGRESS",
                source_ranges=internal,
                allows=_all_internal(),
            ),
            opts=child,
        )

        # gVNIC VPC: the GPU nodes' second NIC (eth1 / gvnic-1 in pods).
        self.gvnic = gcp.compute.Network(
            "gvnic",
            gcp.compute.NetworkArgs(name=n.gvnic_network, auto_create_subnetworks=False, mtu=catalog.VPC_MTU),
            opts=child,
        )
        self.gvnic_subnet = gcp.compute.Subnetwork(
            "gvnic",
            gcp.compute.SubnetworkArgs(
                name=n.gvnic_subnet, region=a.region, network=self.gvnic.id, ip_cidr_range=plan.gvnic_subnet_cidr
            ),
            opts=child,
        )
        # The seeds allow 192.168.0.0/16; the gVNIC subnet is the only source on this VPC.
        self.gvnic_firewall = gcp.compute.Firewall(
            "gvnic-internal",
            gcp.compute.FirewallArgs(
                name=n.gvnic_firewall,
                network=self.gvnic.id,
                direction="INGRESS",
                source_ranges=[plan.gvnic_subnet_cidr],
                allows=_all_internal(),
            ),
            opts=child,
        )

        # RDMA VPC: RoCE profile of the GPU zone, one subnet per GPU NIC. RoCE VPCs take only MRDMA NICs and
        # default to MTU 8896.
        self.rdma = gcp.compute.Network(
            "rdma",
            gcp.compute.NetworkArgs(
                name=n.rdma_network,
                auto_create_subnetworks=False,
                mtu=catalog.VPC_MTU,
                network_profile=a.rdma_network_profile,
            ),
            opts=child,
        )
        self.rdma_subnets = [
            gcp.compute.Subnetwork(
                f"rdma-{i}",
                gcp.compute.SubnetworkArgs(
                    name=n.rdma_subnet(i), region=a.region, network=self.rdma.id, ip_cidr_range=cidr
                ),
                opts=child,
            )
            for i, cidr in enumerate(plan.rdma_subnet_cidrs)
        ]

        self.register_outputs(
            {
                "primary_network": self.primary.name,
                "gvnic_network": self.gvnic.name,
                "rdma_network": self.rdma.name,
                "rdma_subnets": [sn.name for sn in self.rdma_subnets],
            }
        )


def _all_internal() -> list[gcp.compute.FirewallAllowArgs]:
    return [
        gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
        gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
        gcp.compute.FirewallAllowArgs(protocol="icmp"),
    ]
