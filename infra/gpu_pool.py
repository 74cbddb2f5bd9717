"""The spot (or reserved) A4 / A3 Ultra node pool of a Standard cluster, attached to the 9 extra networks.

Like the tutorial's `gcloud container node-pools create … --additional-node-network` ×9: the gVNIC network
first, then rdma-0..7, in the zone of the RoCE profile. Autopilot has no pools: pods ask for GPUs instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.settings import Settings
from infra.cluster import CLOUD_PLATFORM, shielded_config
from infra.networks import Networks

GPU_TAINT = gcp.container.NodePoolNodeConfigTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")


def additional_networks(networks: Networks) -> list[gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs]:
    """gVNIC then RDMA 0..7: the order fixes the NICs' names (eth1, eth2..eth9) the pod annotations use."""
    arg = gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs
    return [arg(network=networks.gvnic.name, subnetwork=networks.gvnic_subnet.name)] + [
        arg(network=networks.rdma.name, subnetwork=sn.name) for sn in networks.rdma_subnets]


@dataclass(frozen=True)
class GpuPoolArgs:
    name: str
    zone: str                     # the RoCE profile's zone
    accelerator: catalog.Accelerator
    spot: bool
    reservation: Optional[str]
    nodes: int
    min_nodes: int
    max_nodes: int
    driver_version: str

    @classmethod
    def of(cls, s: Settings) -> "GpuPoolArgs":
        g = s.gpu
        return cls(name=s.names.gpu_pool, zone=s.zone, accelerator=g.accelerator, spot=g.spot,
                   reservation=g.reservation, nodes=g.nodes, min_nodes=g.min_nodes,
                   max_nodes=g.max_nodes_effective, driver_version=g.driver_version)


def reservation_affinity(reservation: Optional[str]) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs:
    if reservation:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key="compute.googleapis.com/reservation-name",
            values=[reservation])
    return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")


class GpuNodePool(pulumi.ComponentResource):
    pool: gcp.container.NodePool

    def __init__(self, name: str, args: GpuPoolArgs, cluster: gcp.container.Cluster, networks: Networks,
                 node_sa: gcp.serviceaccount.Account, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:GpuNodePool", name, None, opts)
        a = args
        acc = a.accelerator
        self.pool = gcp.container.NodePool("gpu", gcp.container.NodePoolArgs(
            name=a.name, cluster=cluster.id, location=cluster.location,
            # The RoCE profile is zonal: nodes must be in its zone.
            node_locations=[a.zone],
            initial_node_count=a.nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                min_node_count=a.min_nodes, max_node_count=a.max_nodes,
                # ANY lets the autoscaler take spot capacity wherever the zone has it.
                location_policy="ANY"),
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=acc.machine_type,
                spot=a.spot,
                reservation_affinity=reservation_affinity(a.reservation),
                guest_accelerators=[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=acc.gpu_type, count=acc.gpus_per_node,
                    gpu_driver_installation_config=(
                        gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                            gpu_driver_version=a.driver_version)))],
                gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
                taints=[GPU_TAINT],
                disk_type=acc.boot_disk_type, disk_size_gb=acc.boot_disk_gb,
                service_account=node_sa.email, oauth_scopes=[CLOUD_PLATFORM],
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"),
                # Secure Boot + integrity monitoring on the machine types checked for it (core/catalog.py).
                shielded_instance_config=shielded_config(acc.machine_type),
                labels={"nemo-rl-gke/role": "gpu"}),
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                additional_node_network_configs=additional_networks(networks)),
            # Surge capacity for 8-GPU machines rarely exists: replace one node at a time instead.
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(max_surge=0, max_unavailable=1),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True)),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"]))
        self.register_outputs({"name": self.pool.name})
