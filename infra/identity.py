"""The GKE nodes' own service account with the minimal roles nodes need (not the default compute SA)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core.settings import Settings

# What a node needs to ship logs and metrics and pull images; the set Cluster Toolkit and GKE hardening docs use.
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)


@dataclass(frozen=True)
class NodeIdentityArgs:
    project: str
    account_id: str
    cluster_name: str

    @classmethod
    def of(cls, s: Settings) -> "NodeIdentityArgs":
        return cls(project=s.gcp_project, account_id=s.names.node_service_account, cluster_name=s.names.cluster)


class NodeIdentity(pulumi.ComponentResource):
    account: gcp.serviceaccount.Account

    def __init__(self, name: str, args: NodeIdentityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:NodeIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.account = gcp.serviceaccount.Account(
            "nodes", gcp.serviceaccount.AccountArgs(
                account_id=args.account_id,
                display_name=f"GKE nodes of {args.cluster_name}"), opts=child)
        self.bindings = [
            gcp.projects.IAMMember(
                f"nodes-{role.split('/')[1]}", gcp.projects.IAMMemberArgs(
                    project=args.project, role=role, member=self.account.member), opts=child)
            for role in NODE_ROLES
        ]
        self.register_outputs({"email": self.account.email})
