"""GPU capacity of a Standard cluster: one A4 / A3 Ultra node pool per capacity model, each on the 9 GPU networks.

Each pool holds one model of the stack's capacity list (spot, flex-start, a specific reservation), starts at
zero nodes (a reservation pool may start warm) and scales up to the nodes the workload asks for. Every pool
carries the custom ComputeClass's label and NoSchedule taint, so GKE tries them in the class's order
(workloads/manifests/compute_class.py renders the class; the Ray workers select it). Like the tutorial's
`gcloud container node-pools create … --additional-node-network` ×9: the gVNIC network first, then rdma-0..7,
in the zone of the RoCE profile.

Placement: compact group placement for multi-node spot pools; a Compute Engine workload policy
(HIGH_THROUGHPUT with a maximum topology distance) for multi-node flex-start pools on A4 / A3 Ultra; none for
a reservation (its capacity comes in the reservation's own blocks). Autopilot has no pools: the ComputeClass
alone describes the capacity there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.capacity import CapacityPlan, PoolPlan
from core.settings import Settings
from core.settings import capacity as capacity_settings
from infra.cluster import CLOUD_PLATFORM, shielded_config
from infra.local_ssd import LOCAL_SSD_IGNORE_CHANGES, ephemeral_storage_local_ssd
from infra.networks import Networks
from infra.node_image import streaming_node_config
from infra.options import child_options

GPU_TAINT = gcp.container.NodePoolNodeConfigTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")


@dataclass(frozen=True)
class GpuCapacityArgs:
    """What the pools read: the capacity plan and where the flex-start workload policy goes."""

    plan: CapacityPlan
    project: str
    region: str
    workload_policy_name: str  # GCP name of the flex-start workload policy, if one is needed
    driver_version: str  # LATEST or DEFAULT
    image_streaming: bool = False  # GKE Image streaming on the pools (infra/node_image.py)

    @classmethod
    def of(cls, s: Settings) -> "GpuCapacityArgs":
        return cls(
            plan=capacity_settings.plan(s),
            project=s.gcp_project,
            region=s.region,
            workload_policy_name=s.names.gpu_workload_policy,
            driver_version=s.gpu.driver_version,
            image_streaming=s.image_streaming,
        )


def additional_networks(networks: Networks) -> list[gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs]:
    """gVNIC then RDMA 0..7: the order fixes the NICs' names (eth1, eth2..eth9) the pod annotations use."""
    arg = gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs
    return [arg(network=networks.gvnic.name, subnetwork=networks.gvnic_subnet.name)] + [
        arg(network=networks.rdma.name, subnetwork=sn.name) for sn in networks.rdma_subnets
    ]


def _reservation_affinity(pool: PoolPlan) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs:
    kind, key, values = pool.reservation_affinity
    return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
        consume_reservation_type=kind, key=key, values=values
    )


class GpuCapacity(pulumi.ComponentResource):
    pools: dict[str, gcp.container.NodePool]
    workload_policy: Optional[gcp.compute.ResourcePolicy]

    def __init__(
        self,
        name: str,
        args: GpuCapacityArgs,
        cluster: gcp.container.Cluster,
        networks: Networks,
        node_sa: gcp.serviceaccount.Account,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:GpuCapacity", name, None, opts)
        plan = args.plan
        acc = catalog.accelerator(plan.gpu_type)
        self.pools = {}
        self.workload_policy = None
        # Children repeat the component's own depends_on (the APIs' propagation wait): Pulumi does not pass it on.
        self._opts = opts
        pool_plans = plan.pools()
        if any(p.workload_policy for p in pool_plans):
            # Flex-start on A4 / A3 Ultra takes compact placement only as a workload policy (a group placement
            # policy is refused); it lives in the cluster's region and project.
            self.workload_policy = gcp.compute.ResourcePolicy(
                "gpu-flex-placement",
                gcp.compute.ResourcePolicyArgs(
                    name=args.workload_policy_name,
                    project=args.project,
                    region=args.region,
                    description="Compact placement of the flex-start GPU nodes (nemo-rl-gke)",
                    workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                        type="HIGH_THROUGHPUT", max_topology_distance=plan.placement_distance
                    ),
                ),
                # `name` is not ForceNew: the provider would PATCH .../resourcePolicies/<new name>, which does not
                # exist (resource_compute_resource_policy.go:151-160, :876-891; terraform-provider-google#27818
                # pattern). A new name (prefix) is a new policy: the engine replaces on it (applyReplaceOnChanges),
                # delete-first like the provider's own replacements of this auto-named resource (the flex pool that
                # names it is replaced first: placementPolicy.policyName is ForceNew).
                opts=child_options(self, opts, replace_on_changes=["name"], delete_before_replace=True),
            )
        for pool in pool_plans:
            self.pools[pool.model] = self._pool(pool, args, acc, cluster, networks, node_sa)
        self.register_outputs(
            {
                "chain": list(plan.models),
                "pools": {m: p.name for m, p in self.pools.items()},
            }
        )

    def _pool(
        self,
        pool: PoolPlan,
        args: GpuCapacityArgs,
        acc: catalog.Accelerator,
        cluster: gcp.container.Cluster,
        networks: Networks,
        node_sa: gcp.serviceaccount.Account,
    ) -> gcp.container.NodePool:
        plan = args.plan
        placement = None
        if pool.compact:
            placement = gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT")
        elif pool.workload_policy:
            assert self.workload_policy is not None
            placement = gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=self.workload_policy.name)
        node_config = gcp.container.NodePoolNodeConfigArgs(
            machine_type=acc.machine_type,
            spot=pool.spot,
            flex_start=pool.flex_start or None,
            max_run_duration=pool.max_run_duration,
            reservation_affinity=_reservation_affinity(pool),
            guest_accelerators=[
                gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=acc.gpu_type,
                    count=acc.gpus_per_node,
                    gpu_driver_installation_config=(
                        gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                            gpu_driver_version=args.driver_version
                        )
                    ),
                )
            ],
            gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
            # The class's taint keeps other pods off; the GPU taint keeps non-GPU pods off (as before).
            taints=[
                GPU_TAINT,
                gcp.container.NodePoolNodeConfigTaintArgs(
                    key=catalog.COMPUTE_CLASS_LABEL, value=plan.compute_class, effect="NO_SCHEDULE"
                ),
            ],
            disk_type=acc.boot_disk_type,
            disk_size_gb=acc.boot_disk_gb,
            # Images, writable layers and emptyDirs on the machine's bundled local SSDs (infra/local_ssd.py).
            ephemeral_storage_local_ssd_config=ephemeral_storage_local_ssd(acc.machine_type),
            service_account=node_sa.email,
            oauth_scopes=[CLOUD_PLATFORM],
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            # Secure Boot + integrity monitoring on the machine types checked for it (core/catalog/gpus.py secure_boot).
            shielded_instance_config=shielded_config(acc.machine_type),
            labels={
                "nemo-rl-gke/role": "gpu",
                "nemo-rl-gke/capacity": pool.model,
                catalog.COMPUTE_CLASS_LABEL: plan.compute_class,
            },
            **streaming_node_config(args.image_streaming),
        )
        return gcp.container.NodePool(
            pool.name,
            gcp.container.NodePoolArgs(
                name=pool.name,
                cluster=cluster.id,
                location=cluster.location,
                # The RoCE profile is zonal (and a reservation is zonal): nodes must be in its zone.
                node_locations=[plan.zone],
                # Capacity that has to be obtained starts at zero: a pool created with N nodes waits for them and
                # fails on a stockout (terraform-provider-google resource_container_node_pool.go waits for them; Cluster
                # Toolkit's gke-node-pool refuses static nodes without a reservation). Flex-start takes no static nodes
                # at all.
                initial_node_count=pool.initial_nodes,
                # A warm reservation pool keeps its nodes (they are paid for anyway); the rest scale down to zero.
                autoscaling=gcp.container.NodePoolAutoscalingArgs(
                    min_node_count=pool.initial_nodes, max_node_count=pool.max_nodes, location_policy="ANY"
                ),
                node_config=node_config,
                network_config=gcp.container.NodePoolNetworkConfigArgs(
                    additional_node_network_configs=additional_networks(networks)
                ),
                placement_policy=placement,
                # Surge capacity for 8-GPU machines rarely exists: replace one node at a time instead.
                upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(max_surge=0, max_unavailable=1),
                management=gcp.container.NodePoolManagementArgs(auto_repair=pool.auto_repair, auto_upgrade=True),
            ),
            opts=child_options(self, self._opts, ignore_changes=["initialNodeCount", LOCAL_SSD_IGNORE_CHANGES]),
        )
