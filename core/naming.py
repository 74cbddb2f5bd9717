"""Every cloud and Kubernetes name the program uses, derived from one stack prefix.

Pure functions: no resources. Settings validation checks these names against GCP limits once, so the
components can use them without further checks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from core.catalog import RDMA_NICS_PER_NODE

# GCP resource names (RFC 1035): lowercase letter first, then lowercase letters, digits, hyphens; no trailing hyphen.
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# Kubernetes objects others refer to by name (pod annotations and specs, GKENetworkParamSet): static on purpose.
GVNIC_NETWORK = "gvnic-1"
RDMA_NETWORKS = tuple(f"rdma-{i}" for i in range(RDMA_NICS_PER_NODE))
LUSTRE_PVC = "lustre-pvc"
HF_SECRET = "nemo-rl-secrets"
# The ConfigMap with the job's helper programs (workloads/scripts.py), mounted by the Ray head's pod spec.
JOB_SCRIPTS = "nemo-rl-scripts"


def is_gcp_name(name: str, max_len: int = 63) -> bool:
    return len(name) <= max_len and bool(_RFC1035.match(name))


@dataclass(frozen=True)
class Names:
    """Names of the cloud resources of one stack."""

    prefix: str

    # Networks (the seeds' `<p>-net`, `<p>-sub`, `<p>-sub-N` pattern, one prefix for all three VPCs).
    @property
    def primary_network(self) -> str:
        return f"{self.prefix}-net"

    @property
    def primary_subnet(self) -> str:
        return f"{self.prefix}-sub"

    @property
    def gvnic_network(self) -> str:
        return f"{self.prefix}-gvnic-net"

    @property
    def gvnic_subnet(self) -> str:
        return f"{self.prefix}-gvnic-sub"

    @property
    def rdma_network(self) -> str:
        return f"{self.prefix}-rdma-net"

    def rdma_subnet(self, i: int) -> str:
        return f"{self.prefix}-rdma-sub-{i}"

    @property
    def pods_range(self) -> str:
        return f"{self.prefix}-pods"

    @property
    def services_range(self) -> str:
        return f"{self.prefix}-services"

    @property
    def psa_range(self) -> str:
        return f"{self.prefix}-psa"

    @property
    def cluster(self) -> str:
        return self.prefix

    @property
    def system_pool(self) -> str:
        return "system"

    @property
    def gpu_pool(self) -> str:
        return "gpu"

    @property
    def node_service_account(self) -> str:
        # Service-account ids are 6..30 characters; settings validation checks the result.
        return f"{self.prefix}-nodes"

    @property
    def lustre_instance(self) -> str:
        return f"{self.prefix}-lustre"

    def all_gcp_names(self) -> dict[str, tuple[str, int]]:
        """name -> (what it names, max length), for validation."""
        out = {
            self.primary_network: ("primary VPC", 63),
            self.primary_subnet: ("primary subnet", 63),
            self.gvnic_network: ("gVNIC VPC", 63),
            self.gvnic_subnet: ("gVNIC subnet", 63),
            self.rdma_network: ("RDMA VPC", 63),
            self.psa_range: ("PSA range", 63),
            # GKE cluster names are at most 40 characters.
            self.cluster: ("GKE cluster", 40),
            self.lustre_instance: ("Lustre instance", 63),
            self.node_service_account: ("node service account id", 30),
        }
        for i in range(RDMA_NICS_PER_NODE):
            out[self.rdma_subnet(i)] = ("RDMA subnet", 63)
        return out
