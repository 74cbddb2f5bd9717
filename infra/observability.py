"""Watching the training: a Cloud Monitoring dashboard scoped to this stack, and the checkpoint sizing report.

The dashboard JSON is built from typed structures in `infra.dashboard`; its filters name this stack's Lustre
instance and cluster, which flow in from those resources. The sizing (core.sizing) is arithmetic on the job
recipe and the Lustre settings: an over-budget checkpoint is a settings error (raised before anything is
registered); a keep_top_k that would fill the instance is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import sizing
from core.settings import Settings, monitoring
from infra.dashboard import dashboard_json, dashboard_url, driver_logs_query
from infra.options import child_options


@dataclass(frozen=True)
class ObservabilityArgs:
    project: str
    display_name: str
    dashboard: bool
    cluster_name: str
    namespace: str
    ray_cluster_name: str  # the standing RayCluster, or the RayJob that owns its cluster
    cluster_owned_by_job: bool
    lustre_throughput_bytes_per_s: float
    sizing: Optional[sizing.CheckpointSizing]

    @classmethod
    def of(cls, s: Settings, *, ray_cluster_name: str, cluster_owned_by_job: bool) -> "ObservabilityArgs":
        return cls(
            project=s.gcp_project,
            display_name=f"NeMo-RL {s.prefix}",
            dashboard=s.monitoring.dashboard,
            cluster_name=s.names.cluster,
            namespace=s.storage.namespace,
            ray_cluster_name=ray_cluster_name,
            cluster_owned_by_job=cluster_owned_by_job,
            lustre_throughput_bytes_per_s=s.lustre.throughput_bytes_per_s,
            sizing=monitoring.checkpoint_sizing(s),
        )


class Observability(pulumi.ComponentResource):
    dashboard: Optional[gcp.monitoring.Dashboard]
    dashboard_url: Optional[pulumi.Output[str]]
    logs_query: str
    sizing: Optional[sizing.CheckpointSizing]

    def __init__(
        self,
        name: str,
        args: ObservabilityArgs,
        cluster: gcp.container.Cluster,
        instance: gcp.lustre.Instance,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:Observability", name, None, opts)
        a = args
        self.dashboard = None
        self.dashboard_url = None
        if a.dashboard:
            body = pulumi.Output.all(cluster.name, cluster.location, instance.instance_id, instance.location).apply(
                lambda v: dashboard_json(
                    display_name=a.display_name,
                    project=a.project,
                    cluster_name=v[0],
                    cluster_location=v[1],
                    lustre_instance=v[2],
                    lustre_zone=v[3],
                    namespace=a.namespace,
                    ray_cluster_name=a.ray_cluster_name,
                    lustre_throughput_bytes_per_s=a.lustre_throughput_bytes_per_s,
                )
            )
            self.dashboard = gcp.monitoring.Dashboard(
                "dashboard",
                gcp.monitoring.DashboardArgs(dashboard_json=body, project=a.project),
                opts=child_options(self, opts),
            )
            self.dashboard_url = dashboard_url(a.project, self.dashboard.id)
        self.logs_query = driver_logs_query(
            project=a.project,
            cluster_name=a.cluster_name,
            namespace=a.namespace,
            ray_cluster_name=a.ray_cluster_name,
            cluster_owned_by_job=a.cluster_owned_by_job,
        )
        self.sizing = a.sizing
        if self.sizing is not None:
            for warning in sizing.capacity_warnings(self.sizing):
                pulumi.log.warn(warning, resource=self)
        self.register_outputs({"dashboardUrl": self.dashboard_url, "logsQuery": self.logs_query})
