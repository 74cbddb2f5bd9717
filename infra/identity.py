"""The GKE nodes' own service account with the roles nodes need (not the default compute SA).

`roles/container.defaultNodeServiceAccount` is GKE's minimum role for a node service account; the rest is the
list Google's A4 blueprint grants (catalog.NODE_SERVICE_ACCOUNT_ROLES), plus Service Usage Consumer with image
streaming. The cluster and its pools must wait for
the bindings, not just the account: a node that boots before its roles exist cannot write logs or pull images.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.settings import Settings
from infra.options import child_options

NODE_ROLES = catalog.NODE_SERVICE_ACCOUNT_ROLES


@dataclass(frozen=True)
class NodeIdentityArgs:
    project: str
    account_id: str
    cluster_name: str
    roles: tuple[str, ...] = NODE_ROLES

    @classmethod
    def of(cls, s: Settings) -> "NodeIdentityArgs":
        # Image streaming: a node service account other than the default needs Service Usage Consumer in the
        # project hosting the image, which the settings require to be this one (core.catalog, image streaming).
        extra = (catalog.IMAGE_STREAMING_NODE_ROLE,) if s.image_streaming else ()
        return cls(project=s.gcp_project, account_id=s.names.node_service_account, cluster_name=s.names.cluster,
                   roles=NODE_ROLES + extra)


class NodeIdentity(pulumi.ComponentResource):
    account: gcp.serviceaccount.Account
    bindings: list[gcp.projects.IAMMember]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:NodeIdentity", name, None, opts)
        # The account calls the IAM API, the bindings the Resource Manager API: both wait for the component's deps.
        child = child_options(self, opts)
        self.account = gcp.serviceaccount.Account(
            "nodes", gcp.serviceaccount.AccountArgs(
                account_id=args.account_id,
                display_name=f"GKE nodes of {args.cluster_name}"), opts=child)
        self.bindings = [
            gcp.projects.IAMMember(
                f"nodes-{role.split('/')[1]}", gcp.projects.IAMMemberArgs(
                    project=args.project, role=role, member=self.account.member), opts=child)
            for role in args.roles
        ]
        self.register_outputs({"email": self.account.email})
