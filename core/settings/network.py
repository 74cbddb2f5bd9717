"""Address plan of the primary VPC and the two GPU VPCs, and its rules."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from core import catalog
from core.keys import key
from core.settings.base import Section, parse_cidr

if TYPE_CHECKING:
    from core.settings import Settings


class NetworkSettings(Section):
    """Address plan of the primary VPC and the two GPU VPCs."""

    primary_subnet_cidr: str = Field("10.0.0.0/20", alias="primarySubnetCidr",
                                     description="Primary subnet of the primary VPC (nodes).")
    pods_cidr: str = Field("10.4.0.0/14", alias="podsCidr", description="Secondary range for pods (primary VPC).")
    services_cidr: str = Field("10.8.0.0/20", alias="servicesCidr",
                               description="Secondary range for services (primary VPC).")
    psa_cidr: str = Field("10.16.0.0/20", alias="psaCidr", description=(
        "Private service access range reserved for Managed Lustre (primary VPC)."))
    gvnic_subnet_cidr: str = Field("192.168.0.0/24", alias="gvnicSubnetCidr", description="Subnet of the gVNIC VPC.")
    rdma_subnet_cidrs: list[str] = Field(
        [f"192.168.{i + 1}.0/24" for i in range(catalog.RDMA_NICS_PER_NODE)], alias="rdmaSubnetCidrs",
        description="The 8 subnets of the RDMA VPC, one per GPU NIC (rdma-0..7).")


def check(s: "Settings") -> list[str]:
    p: list[str] = []
    n = s.network
    primary = {k: parse_cidr(k, v, p) for k, v in (("primarySubnetCidr", n.primary_subnet_cidr),
                                                   ("podsCidr", n.pods_cidr),
                                                   ("servicesCidr", n.services_cidr),
                                                   ("psaCidr", n.psa_cidr))}
    _no_overlap(primary, "primary VPC", p)
    if primary.get("psaCidr") is not None and primary["psaCidr"].prefixlen > 24:
        p.append(f"{key('psaCidr')}: {n.psa_cidr} is smaller than the /24 Managed Lustre needs")
    parse_cidr("gvnicSubnetCidr", n.gvnic_subnet_cidr, p)
    if len(n.rdma_subnet_cidrs) != catalog.RDMA_NICS_PER_NODE:
        p.append(f"{key('rdmaSubnetCidrs')}: needs exactly {catalog.RDMA_NICS_PER_NODE} CIDRs, one per GPU NIC "
                 f"(got {len(n.rdma_subnet_cidrs)})")
    rdma = {f"rdmaSubnetCidrs[{i}]": parse_cidr("rdmaSubnetCidrs", c, p) for i, c in enumerate(n.rdma_subnet_cidrs)}
    _no_overlap(rdma, "RDMA VPC", p, key_of=lambda k: "rdmaSubnetCidrs")
    return p


def _no_overlap(nets: dict, where: str, p: list[str], key_of=lambda k: k) -> None:
    items = [(k, n) for k, n in nets.items() if n is not None]
    for i, (ka, a) in enumerate(items):
        for kb, b in items[i + 1:]:
            if a.overlaps(b):
                p.append(f"{key(key_of(kb))}: {b} overlaps {a} ({key(key_of(ka)) if key_of(ka) != key_of(kb) else ka}) "
                         f"in the {where}; choose disjoint ranges")
