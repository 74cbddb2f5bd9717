"""Watching the training: a Cloud Monitoring dashboard scoped to this stack, and the checkpoint sizing report.

The dashboard JSON is built from typed structures in `infra.dashboard`; its filters name this stack's Lustre
instance and cluster, which flow in from those resources. The sizing (infra.sizing) is arithmetic on the job
recipe and the Lustre settings: an over-budget checkpoint is a settings error (raised before anything is
registered); a keep_top_k that would fill the instance is a warning.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog, sizing
from infra.dashboard import dashboard_json, dashboard_url, driver_logs_query
from core.settings import Settings
from core import recipes


def checkpoint_sizing(s: Settings) -> sizing.CheckpointSizing:
    recipe = recipes.resolve_recipe(s.job, s.workload.release)
    return sizing.size_checkpoints(
        recipe.model_name, save_optimizer=recipe.save_optimizer, capacity_gib=s.lustre.capacity_gib,
        tier=s.lustre.tier, keep_top_k=recipe.keep_top_k, budget_seconds=s.monitoring.budget)


class Observability(pulumi.ComponentResource):
    dashboard: Optional[gcp.monitoring.Dashboard]
    dashboard_url: Optional[pulumi.Output[str]]
    logs_query: str
    sizing: Optional[sizing.CheckpointSizing]

    def __init__(self, name: str, settings: Settings, cluster: gcp.container.Cluster,
                 instance: gcp.lustre.Instance, ray_cluster_name: str, cluster_owned_by_job: bool = False,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:Observability", name, None, opts)
        s = settings
        tier = catalog.LUSTRE_TIERS[s.lustre.tier]
        self.dashboard = None
        self.dashboard_url = None
        if s.monitoring.dashboard:
            body = pulumi.Output.all(cluster.name, cluster.location, instance.instance_id, instance.location).apply(
                lambda a: dashboard_json(
                    display_name=f"NeMo-RL {s.prefix}", project=s.gcp_project, cluster_name=a[0],
                    cluster_location=a[1], lustre_instance=a[2], lustre_zone=a[3],
                    namespace=s.storage.namespace, ray_cluster_name=ray_cluster_name,
                    lustre_throughput_bytes_per_s=tier.throughput_bytes_per_s(s.lustre.capacity_gib)))
            self.dashboard = gcp.monitoring.Dashboard("dashboard", gcp.monitoring.DashboardArgs(
                dashboard_json=body, project=s.gcp_project), opts=pulumi.ResourceOptions(parent=self))
            self.dashboard_url = dashboard_url(s.gcp_project, self.dashboard.id)
        self.logs_query = driver_logs_query(project=s.gcp_project, cluster_name=s.names.cluster,
                                            namespace=s.storage.namespace, ray_cluster_name=ray_cluster_name,
                                            cluster_owned_by_job=cluster_owned_by_job)
        self.sizing = checkpoint_sizing(s) if s.job.enabled else None
        if self.sizing is not None:
            for warning in sizing.capacity_warnings(self.sizing):
                pulumi.log.warn(warning, resource=self)
        self.register_outputs({"dashboardUrl": self.dashboard_url, "logsQuery": self.logs_query})
