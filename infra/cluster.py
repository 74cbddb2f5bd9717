"""The GKE cluster in Standard or Autopilot mode, its CPU system pool, and the Kubernetes provider built from it.

Both modes: our primary VPC with named secondary ranges, Dataplane V2 (multi-networking needs it) with FQDN
network policies, multi-networking, Workload Identity, the RayOperator add-on with Ray logging and metrics (off
when the stack installs KubeRay itself), the Lustre CSI driver (legacy port from the one port-mode setting), GCS
FUSE CSI, managed Prometheus with DCGM metrics.

Hardened (docs/research/harden.md, harden2.md): private nodes in both modes (no external IPs; egress through the primary
VPC's Cloud NAT, for the pods the namespace's egress policies allow); the IP endpoint private by default, GKE's
DNS-based endpoint (IAM-authorised) on, and control-plane access limited to `authorizedNetworks` when given; the IP
endpoint is private only together with the DNS endpoint or an authorised network, because the Kubernetes provider must
reach the API server from wherever `pulumi up` runs (core/settings/security.py); the provider then talks to the
DNS endpoint. Node upgrades are held back only in a bounded window the user opens for a run. Standard pools get shielded
nodes with Secure Boot and integrity monitoring where the machine type supports it (core/catalog/gke.py,
supports_secure_boot); Autopilot manages shielded nodes itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from core import catalog
from core.gcp_rules import monitoring_components
from core.naming import resource_labels
from core.settings import Settings, security
from core.settings.cluster import exclusion_warnings, exclusion_window
from core.settings.security import own_operator
from infra.node_image import streaming_node_config
from infra.options import child_options

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


@dataclass(frozen=True)
class ClusterArgs:
    name: str
    location: str  # region, or the zone for a zonal Standard control plane
    zone: str  # where the system pool lives (the GPU zone)
    autopilot: bool
    workload_pool: str  # <project>.svc.id.goog
    release_channel: str
    gke_version: Optional[str]
    maintenance_start: str  # HH:MM UTC
    # NO_MINOR_OR_NODE_UPGRADES from start to end (RFC 3339), a bounded window; None: no exclusion.
    maintenance_exclusion: Optional[tuple[str, str]]
    monitoring_components: tuple[str, ...]
    deletion_protection: bool
    legacy_lustre_port: bool
    system_pool_name: str
    system_machine_type: str
    system_nodes: int
    labels: dict[str, str]
    # Standard: the autoscaling CPU pool of the Ray heads, submitters and CPU Jobs (core/naming.py cpu_pool), of
    # `system_machine_type`, from 0 to `cpu_pool_max_nodes` (workloads/manifests/pod_fit.py cpu_pool_plan: what the
    # platform and every job its GPUs can run at once need, summed node by node).
    cpu_pool_name: str = "cpu"
    cpu_pool_max_nodes: int = 1
    authorized_networks: tuple[str, ...] = ()
    private_endpoint: bool = False
    dns_endpoint: bool = True
    image_streaming: bool = False  # on the system pool (infra/node_image.py)
    ray_operator_addon: bool = True  # GKE's hosted KubeRay; off when the stack installs KubeRay itself
    fqdn_network_policy: bool = True  # the workload namespace's FQDNNetworkPolicies need it
    # Google Groups for RBAC (rbacSecurityGroup): gke-security-groups@<domain>; None: not rendered.
    security_group: Optional[str] = None
    # Runnable but suspicious settings, shown by `pulumi preview`: access (core.settings.security.warnings) and a
    # maintenance exclusion window that has ended.
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, s: Settings, cpu_pool_max_nodes: int = 1) -> "ClusterArgs":
        """`cpu_pool_max_nodes`: the CPU pool's maximum, from the workloads' pod shapes (__main__ hands it over)."""
        return cls(
            name=s.names.cluster,
            location=s.cluster_location,
            zone=s.zone,
            autopilot=s.autopilot,
            workload_pool=s.workload_identity_pool,
            release_channel=s.cluster.release_channel,
            gke_version=s.cluster.gke_version,
            maintenance_start=s.cluster.maintenance_start,
            maintenance_exclusion=exclusion_window(s.cluster),
            monitoring_components=tuple(monitoring_components(s.cluster.gke_version)),
            deletion_protection=s.teardown.cluster_deletion_protection,
            legacy_lustre_port=s.lustre.port_mode == "legacy",
            system_pool_name=s.names.system_pool,
            system_machine_type=s.cluster.system_machine_type,
            system_nodes=s.cluster.system_nodes,
            labels=resource_labels(s.stack_name),
            cpu_pool_name=s.names.cpu_pool,
            cpu_pool_max_nodes=cpu_pool_max_nodes,
            authorized_networks=tuple(s.security.authorized_networks),
            private_endpoint=s.security.private_endpoint,
            dns_endpoint=s.security.dns_endpoint,
            image_streaming=s.image_streaming,
            ray_operator_addon=not own_operator(s),
            fqdn_network_policy=s.security.egress_fqdn_policies,
            security_group=s.tenancy.rbac_security_group,
            warnings=tuple(security.warnings(s)) + tuple(exclusion_warnings(s.cluster)),
        )


def _addons(a: ClusterArgs) -> gcp.container.ClusterAddonsConfigArgs:
    return gcp.container.ClusterAddonsConfigArgs(
        # GKE's managed KubeRay (>= 1.30.0-gke.1747000); the open-source operator must not be installed beside it,
        # so a stack that installs KubeRay itself (kubeRayOperator: helm) turns the add-on off.
        ray_operator_configs=[
            gcp.container.ClusterAddonsConfigRayOperatorConfigArgs(
                enabled=a.ray_operator_addon,
                ray_cluster_logging_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterLoggingConfigArgs(
                    enabled=a.ray_operator_addon
                ),
                ray_cluster_monitoring_config=(
                    gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterMonitoringConfigArgs(
                        enabled=a.ray_operator_addon
                    )
                ),
            )
        ],
        lustre_csi_driver_config=gcp.container.ClusterAddonsConfigLustreCsiDriverConfigArgs(
            enabled=True, enable_legacy_lustre_port=a.legacy_lustre_port
        ),
        gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
    )


def _maintenance(a: ClusterArgs) -> gcp.container.ClusterMaintenancePolicyArgs:
    """A daily window, and, when the user opens one for a run, a bounded exclusion with the scope Google's A4
    blueprint uses (no minor or node upgrades), so GKE does not drain a GPU node mid-run for an upgrade. Both ends
    come from the settings, never from "now" (which would diff on every `up`), and the window is at most
    catalog.MAINTENANCE_EXCLUSION_MAX_DAYS long: node patches, security fixes included, wait at most that long.
    Exactly one of end_time and end_time_behavior may be set (pulumi-gcp 10.2.0)."""
    exclusions = None
    if a.maintenance_exclusion is not None:
        start, end = a.maintenance_exclusion
        exclusions = [
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=catalog.MAINTENANCE_EXCLUSION_NAME,
                start_time=start,
                end_time=end,
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=catalog.MAINTENANCE_EXCLUSION_SCOPE
                ),
            )
        ]
    return gcp.container.ClusterMaintenancePolicyArgs(
        daily_maintenance_window=gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
            start_time=a.maintenance_start
        ),
        maintenance_exclusions=exclusions,
    )


def _monitoring(a: ClusterArgs) -> gcp.container.ClusterMonitoringConfigArgs:
    # `enable_components` replaces GKE's list: name every component, as Cluster Toolkit's gke-cluster does,
    # plus DCGM (the dashboard's GPU charts read it through Managed Prometheus), each only from its GKE floor
    # (catalog.MONITORING_COMPONENTS; core.gcp_rules.monitoring_components).
    return gcp.container.ClusterMonitoringConfigArgs(
        enable_components=list(a.monitoring_components),
        managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
    )


def _access(a: ClusterArgs) -> dict:
    """Private nodes, the control-plane endpoints and who may reach them (ClusterArgs fields of pulumi-gcp 10.2)."""
    out = dict(
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=a.private_endpoint
        ),
        control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
            dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                allow_external_traffic=a.dns_endpoint
            )
        ),
    )
    if a.authorized_networks:
        out["master_authorized_networks_config"] = gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=c, display_name=f"authorized-{i}"
                )
                for i, c in enumerate(a.authorized_networks)
            ]
        )
    return out


def shielded_config(machine_type: str) -> Optional[gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs]:
    """Secure Boot + integrity monitoring where the machine type supports it (Standard pools); None otherwise."""
    if not catalog.supports_secure_boot(machine_type):
        return None
    return gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
        enable_secure_boot=True, enable_integrity_monitoring=True
    )


class GkeCluster(pulumi.ComponentResource):
    cluster: gcp.container.Cluster
    system_pool: Optional[gcp.container.NodePool]
    cpu_pool: Optional[gcp.container.NodePool]
    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: ClusterArgs,
        network: gcp.compute.Network,
        subnet: gcp.compute.Subnetwork,
        node_sa: gcp.serviceaccount.Account,
        node_sa_bindings: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:GkeCluster", name, None, opts)
        a = args
        for warning in a.warnings:
            pulumi.log.warn(warning, resource=self)
        child = pulumi.ResourceOptions(parent=self)
        # Nodes boot with the node service account: the cluster (its transient default pool, Autopilot's nodes)
        # and the system pool wait for the account's role bindings, not just for the account. Pools created
        # elsewhere reference the cluster, so they wait too.
        # With deletion protection the provider refuses the cluster's delete (cluster.go:5889-5890), but only when it
        # gets there: a replacement (clusterMode, controlPlane, egressFqdnPolicies true -> false ...) is delete-first
        # and deletes the node pools before it. Pulumi's own protect refuses the replacement in the plan, before
        # anything is deleted (pulumi step_generator.go:1955-1962); `clusterDeletionProtection: false` and one
        # `pulumi up` lift both.
        with_roles = child_options(self, opts, depends_on=list(node_sa_bindings))
        protect = {"protect": True} if a.deletion_protection else {}

        common = dict(
            name=a.name,
            location=a.location,
            network=network.id,
            subnetwork=subnet.id,
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=subnet.secondary_ip_ranges.apply(lambda r: r[0].range_name),
                services_secondary_range_name=subnet.secondary_ip_ranges.apply(lambda r: r[1].range_name),
            ),
            datapath_provider="ADVANCED_DATAPATH",
            # The workload namespace's egress allow-lists by host name (workloads/manifests/network_policy.py);
            # GKE Dataplane V2 only. On an existing Standard cluster GKE asks for a restart of the anetd DaemonSet
            # (pulumi-gcp 10.2.0 Cluster.enable_fqdn_network_policy docstring).
            enable_fqdn_network_policy=a.fqdn_network_policy,
            enable_multi_networking=True,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool=a.workload_pool),
            addons_config=_addons(a),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=a.release_channel),
            min_master_version=a.gke_version,
            maintenance_policy=_maintenance(a),
            monitoring_config=_monitoring(a),
            deletion_protection=a.deletion_protection,
            resource_labels=dict(a.labels),
            **_access(a),
            # Rendered only when set: the block is Optional + Computed and updated in place (UpdateCluster
            # DesiredAuthenticatorGroupsConfig), so leaving it out later keeps the cluster's value
            # (core/catalog/replacements.py DIFF_RULES_READ).
            **(
                {
                    "authenticator_groups_config": gcp.container.ClusterAuthenticatorGroupsConfigArgs(
                        security_group=a.security_group
                    )
                }
                if a.security_group is not None
                else {}
            ),
        )
        if a.autopilot:
            self.cluster = gcp.container.Cluster(
                "cluster",
                gcp.container.ClusterArgs(
                    enable_autopilot=True,
                    cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
                        auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                            service_account=node_sa.email, oauth_scopes=[CLOUD_PLATFORM]
                        )
                    ),
                    **common,
                ),
                opts=child_options(self, opts, depends_on=list(node_sa_bindings), **protect),
            )
            self.system_pool = None
            self.cpu_pool = None
        else:
            self.cluster = gcp.container.Cluster(
                "cluster",
                gcp.container.ClusterArgs(
                    # The default pool is created and then removed (the API requires one at creation); give it our
                    # node identity so not even the transient pool runs as the default compute service account.
                    remove_default_node_pool=True,
                    initial_node_count=1,
                    node_config=gcp.container.ClusterNodeConfigArgs(
                        service_account=node_sa.email, oauth_scopes=[CLOUD_PLATFORM]
                    ),
                    **common,
                ),
                opts=child_options(
                    self,
                    opts,
                    depends_on=list(node_sa_bindings),
                    ignore_changes=["nodeConfig", "initialNodeCount"],
                    **protect,
                ),
            )

            def cpu_node_config(role: str) -> gcp.container.NodePoolNodeConfigArgs:
                """The CPU nodes' config, the system pool's and the CPU pool's alike (systemMachineType): only the role
                label differs."""
                return gcp.container.NodePoolNodeConfigArgs(
                    machine_type=a.system_machine_type,
                    service_account=node_sa.email,
                    oauth_scopes=[CLOUD_PLATFORM],
                    disk_type=catalog.SYSTEM_BOOT_DISK_TYPE,
                    disk_size_gb=catalog.SYSTEM_BOOT_DISK_GB,
                    workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                        mode="GKE_METADATA"
                    ),
                    shielded_instance_config=shielded_config(a.system_machine_type),
                    labels={"nemo-rl-gke/role": role},
                    **streaming_node_config(a.image_streaming),
                )

            # CPU pool for the Ray head and controllers, in the GPU zone so the head is near its workers.
            self.system_pool = gcp.container.NodePool(
                "system",
                gcp.container.NodePoolArgs(
                    name=a.system_pool_name,
                    cluster=self.cluster.id,
                    location=self.cluster.location,
                    node_locations=[a.zone],
                    node_count=a.system_nodes,
                    node_config=cpu_node_config("system"),
                    management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                ),
                opts=with_roles,
            )
            # The CPU pods of the platform and of every job its GPUs can run at once (Ray heads, submitters, the
            # prefetch, data staging and export Jobs) select this pool (workloads/manifests/pod_parts.py
            # cpu_node_selector): it grows from zero for a pod that fits on no node of it and shrinks when its nodes
            # are unneeded (GKE's cluster autoscaler), while the system pool keeps GKE's and the operators' own pods.
            # Same machine type as the system pool (systemMachineType): one CPU shape the heads' fit is checked
            # against.
            self.cpu_pool = gcp.container.NodePool(
                "cpu",
                gcp.container.NodePoolArgs(
                    name=a.cpu_pool_name,
                    cluster=self.cluster.id,
                    location=self.cluster.location,
                    node_locations=[a.zone],
                    # One node from the start: the standing RayCluster's head is always there. Then the autoscaler
                    # decides (initial_node_count is ignored after creation, as the GPU pools do).
                    initial_node_count=1,
                    autoscaling=gcp.container.NodePoolAutoscalingArgs(
                        min_node_count=0, max_node_count=a.cpu_pool_max_nodes
                    ),
                    node_config=cpu_node_config("cpu"),
                    management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                ),
                opts=child_options(self, opts, depends_on=list(node_sa_bindings), ignore_changes=["initialNodeCount"]),
            )

        if a.private_endpoint and a.dns_endpoint:
            # With a private IP endpoint, `pulumi up` reaches the API server through the DNS-based endpoint,
            # which serves a publicly trusted certificate (as `gcloud container clusters get-credentials
            # --dns-endpoint` writes it): no cluster CA in the kubeconfig.
            self.kubeconfig = pulumi.Output.secret(
                pulumi.Output.all(
                    self.cluster.name,
                    self.cluster.control_plane_endpoints_config.apply(lambda c: c.dns_endpoint_config.endpoint),
                ).apply(lambda v: kubeconfig(v[0], v[1], None))
            )
        else:
            self.kubeconfig = pulumi.Output.secret(
                pulumi.Output.all(
                    self.cluster.name,
                    self.cluster.endpoint,
                    self.cluster.master_auth.cluster_ca_certificate,
                ).apply(lambda v: kubeconfig(v[0], v[1], v[2]))
            )
        # Every Kubernetes object takes this provider explicitly; default providers are disabled in Pulumi.yaml.
        # Not `delete_unreachable`: set permanently, a refresh against an unreachable cluster (expired
        # credentials, a missing auth plugin) would silently drop every Kubernetes object from the state. When
        # the cluster is really gone, destroy with PULUMI_K8S_DELETE_UNREACHABLE=true (docs/operations.md).
        # The provider's identity is the cluster's id, not its kubeconfig: without `clusterIdentifier` a changed
        # endpoint (privateEndpoint, dnsEndpoint) or a CA rotation replaces the provider and with it every object
        # it manages; with it unchanged pulumi-kubernetes never replaces the provider, and a replaced cluster
        # (a new id) still does (pulumi-kubernetes provider.go:484-502 DiffConfig, since v4.16.0,
        # pulumi/pulumi-kubernetes#3068). Adding the key in the same `up` as an endpoint change still replaces:
        # it must be deployed once before (docs/operations.md, day two).
        self.provider = k8s.Provider(
            "k8s", k8s.ProviderArgs(kubeconfig=self.kubeconfig, cluster_identifier=self.cluster.id), opts=child
        )
        self.register_outputs({"name": self.cluster.name, "endpoint": self.cluster.endpoint})


def kubeconfig(name: str, endpoint: str, ca: Optional[str]) -> str:
    """A kubeconfig that authenticates through gke-gcloud-auth-plugin (no static credentials in state); `ca`
    None for the DNS-based endpoint (publicly trusted certificate)."""
    import json

    ctx = f"gke-{name}"
    cluster = {"server": f"https://{endpoint}"}
    if ca is not None:
        cluster["certificate-authority-data"] = ca
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": ctx,
            "clusters": [{"name": ctx, "cluster": cluster}],
            "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": ctx}}],
            "users": [
                {
                    "name": ctx,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "gke-gcloud-auth-plugin",
                            "installHint": (
                                "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin"
                            ),
                            "provideClusterInfo": True,
                        }
                    },
                }
            ],
        },
        sort_keys=True,
    )
