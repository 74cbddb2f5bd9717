"""Address plan of the primary VPC and the two GPU VPCs, and its rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import catalog
from core.gcp_rules import (
    POD_SLICE_PREFIX_AUTOPILOT,
    POD_SLICE_PREFIX_STANDARD,
    AddressRange,
    address_plan_problems,
    capacity_problems,
)
from core.keys import key
from core.settings.base import Section
from core.settings.cluster import system_nodes_valid
from core.settings.record import (
    IN_PLACE,
    ON_AUTOPILOT,
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_API,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)
from core.settings.workload import workers_valid

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class NetworkSettings(Section):
    """Address plan of the primary VPC and the two GPU VPCs."""

    primary_subnet_cidr: str = setting(
        "10.0.0.0/20",
        key="primarySubnetCidr",
        description="Primary subnet of the primary VPC (nodes).",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Subnetwork primary", "Firewall primary-internal", "Instance lustre")),
        bad=("10.0.0.300/20",),
        alternatives=({"primarySubnetCidr": "10.0.0.0/19"},),
    )
    pods_cidr: str = setting(
        "10.4.0.0/14",
        key="podsCidr",
        description="Secondary range for pods (primary VPC).",
        owner=PLATFORM,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=("Subnetwork primary", "Firewall primary-internal"),
            note=(
                "GKE's pod range is fixed at the cluster's creation: the subnet update is refused; a new range is a "
                "new cluster"
            ),
        ),
        bad=("x",),
        alternatives=({"podsCidr": "10.32.0.0/14"},),
    )
    services_cidr: str = setting(
        "10.8.0.0/20",
        key="servicesCidr",
        description="Secondary range for services (primary VPC).",
        owner=PLATFORM,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=("Subnetwork primary", "Firewall primary-internal"),
            note=(
                "GKE's service range is fixed at the cluster's creation: the subnet update is refused; a new range is "
                "a new cluster"
            ),
        ),
        bad=("10.0.0.0/16",),
        alternatives=({"servicesCidr": "10.12.0.0/20"},),
    )
    psa_cidr: str = setting(
        "10.16.0.0/20",
        key="psaCidr",
        description="Private service access range reserved for Managed Lustre (primary VPC).",
        owner=PLATFORM,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=("GlobalAddress psa-range", "Firewall lustre-ingress"),
            note=(
                "the PSA range is in use (the connection, Lustre): its delete is refused; Google's procedure removes "
                "those first"
            ),
        ),
        bad=("10.20.0.0/28",),
        alternatives=({"psaCidr": "10.24.0.0/20"},),
    )
    gvnic_subnet_cidr: str = setting(
        "192.168.0.0/24",
        key="gvnicSubnetCidr",
        description="Subnet of the gVNIC VPC.",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_AUTOPILOT: SAFE_REPLACEMENT},
            touches=("Subnetwork gvnic", "Firewall gvnic-internal"),
        ),
        bad=("x",),
        alternatives=({"gvnicSubnetCidr": "192.168.100.0/24"},),
    )
    rdma_subnet_cidrs: list[str] = setting(
        [f"192.168.{i + 1}.0/24" for i in range(catalog.RDMA_NICS_PER_NODE)],
        key="rdmaSubnetCidrs",
        description="The 8 subnets of the RDMA VPC, one per GPU NIC (rdma-0..7).",
        owner=PLATFORM,
        day_two=DayTwo(STOPS_THE_JOB, where={ON_AUTOPILOT: SAFE_REPLACEMENT}, touches=("Subnetwork rdma-*",)),
        bad=('["x"]', "notjson", '["192.168.1.0/24"]'),
        alternatives=({"rdmaSubnetCidrs": [f"192.168.{11 + i}.0/24" for i in range(catalog.RDMA_NICS_PER_NODE)]},),
    )


def address_ranges(n: NetworkSettings) -> list[AddressRange]:
    """Every range of the plan, with the key it comes from."""
    ranges = [
        AddressRange("primarySubnetCidr", "primary subnet", n.primary_subnet_cidr, "subnet"),
        AddressRange("podsCidr", "pod range", n.pods_cidr, "pods"),
        AddressRange("servicesCidr", "service range", n.services_cidr, "services"),
        AddressRange("psaCidr", "PSA range", n.psa_cidr, "psa"),
        AddressRange("gvnicSubnetCidr", "gVNIC subnet", n.gvnic_subnet_cidr, "subnet"),
    ]
    ranges += [
        AddressRange("rdmaSubnetCidrs", f"RDMA subnet {i}", c, "subnet") for i, c in enumerate(n.rdma_subnet_cidrs)
    ]
    return ranges


def check(s: "UncheckedSettings") -> list[str]:
    n = s.network
    p: list[str] = []
    if len(n.rdma_subnet_cidrs) != catalog.RDMA_NICS_PER_NODE:
        p.append(
            f"{key('rdmaSubnetCidrs')}: needs exactly {catalog.RDMA_NICS_PER_NODE} CIDRs, one per GPU NIC "
            f"(got {len(n.rdma_subnet_cidrs)})"
        )
    ranges = address_ranges(n)
    if p:
        # The RDMA list as a whole is refused: the other ranges are still checked, its entries are not.
        ranges = [r for r in ranges if r.key != "rdmaSubnetCidrs"]
    # The plan as a whole: any two ranges overlapping, or a range outside GCP's limits (core/gcp_rules.py).
    p.extend(address_plan_problems(ranges))
    if p or not workers_valid(s) or not system_nodes_valid(s):
        return p  # the node counts' own rules report a refused count; room is only checked for valid ones
    # Room for every node. GPU nodes have a NIC in the primary, gVNIC and each RDMA subnet; Standard adds the
    # system pool. Autopilot's node count is its own business: the GPU workers plus one for the head is a floor.
    # The GPU pools of a capacity chain together hold as many nodes as the workers ask for (gpuNodes at most).
    gpu_nodes = s.worker_replicas if s.autopilot else max(s.gpu.nodes, s.worker_replicas)
    all_nodes = gpu_nodes + (1 if s.autopilot else s.cluster.system_nodes)
    slice_prefix = POD_SLICE_PREFIX_AUTOPILOT if s.autopilot else POD_SLICE_PREFIX_STANDARD
    for r in ranges:
        if r.role == "subnet":
            p.extend(capacity_problems(r, all_nodes if r.key == "primarySubnetCidr" else gpu_nodes))
        elif r.role == "pods":
            p.extend(capacity_problems(r, all_nodes, pod_slice_prefix=slice_prefix))
    return p
