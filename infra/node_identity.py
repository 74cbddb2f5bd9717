"""The GKE nodes' own service account with GKE's minimum role (not the default compute SA).

`roles/container.defaultNodeServiceAccount` is GKE's documented minimum for a node service account and the only
project role it gets (catalog.NODE_SERVICE_ACCOUNT_ROLES); with image streaming GKE also needs Service Usage
Consumer, and the nodes read the stack's Artifact Registry copy through a grant on that repository alone, plus
one on each repository a jobImage comes from (the stack's own jobImage's, and the platform's jobImageRepositories
for its experiments, which declare no grant). nvcr.io and Google's public repositories need no role. The
cluster and its pools must wait for the bindings, not just the account: a node that boots before its roles exist
cannot write logs or pull images.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.settings import Settings
from core.settings.startup import job_image_repository
from infra.options import child_options

NODE_ROLES = catalog.NODE_SERVICE_ACCOUNT_ROLES


@dataclass(frozen=True)
class RepositoryRef:
    """An Artifact Registry repository (location, project, repository id)."""

    location: str
    project: str
    repository: str


@dataclass(frozen=True)
class NodeIdentityArgs:
    project: str
    account_id: str
    cluster_name: str
    roles: tuple[str, ...] = NODE_ROLES
    image_repository: Optional[RepositoryRef] = None  # the nodes pull from it (roles/artifactregistry.reader)
    # Further repositories the nodes read: the jobImage's, and the platform's jobImageRepositories for its experiments.
    reader_repositories: tuple[RepositoryRef, ...] = ()

    @classmethod
    def of(cls, s: Settings) -> "NodeIdentityArgs":
        # Image streaming: a node service account other than the default needs Service Usage Consumer in the
        # project hosting the image, which the settings require to be this one (core.catalog, image streaming).
        extra = (catalog.IMAGE_STREAMING_NODE_ROLE,) if s.image_streaming else ()
        repo = _ref(s.image_repository) if s.image_streaming else None
        others: list[RepositoryRef] = []
        for path in (job_image_repository(s.startup.job_image or ""), *s.startup.job_image_repositories):
            ref = _ref(path or "")
            if ref is not None and ref != repo and ref not in others:
                others.append(ref)
        return cls(
            project=s.gcp_project,
            account_id=s.names.node_service_account,
            cluster_name=s.names.cluster,
            roles=NODE_ROLES + extra,
            image_repository=repo,
            reader_repositories=tuple(others),
        )


def _ref(path: str) -> Optional[RepositoryRef]:
    m = re.fullmatch(catalog.ARTIFACT_REGISTRY_REPO_RE, path)
    return RepositoryRef(m["location"], m["project"], m["repository"]) if m else None


class NodeIdentity(pulumi.ComponentResource):
    account: gcp.serviceaccount.Account
    bindings: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        args: NodeIdentityArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
        image_repository_id: Optional[pulumi.Input[str]] = None,
    ):
        """`image_repository_id`: the image repository's id as output by the resource that creates it
        (infra/image_copy.py), so the grant waits for the repository."""
        super().__init__("nemo-rl-gke:infra:NodeIdentity", name, None, opts)
        # The account calls the IAM API, the bindings the Resource Manager API: both wait for the component's deps.
        child = child_options(self, opts)
        self.account = gcp.serviceaccount.Account(
            "nodes",
            gcp.serviceaccount.AccountArgs(
                account_id=args.account_id, display_name=f"GKE nodes of {args.cluster_name}"
            ),
            opts=child,
        )
        self.bindings = [
            gcp.projects.IAMMember(
                f"nodes-{role.split('/')[1]}",
                gcp.projects.IAMMemberArgs(project=args.project, role=role, member=self.account.member),
                opts=child,
            )
            for role in args.roles
        ]
        readers: list[tuple[str, RepositoryRef, Optional[pulumi.Input[str]]]] = []
        if args.image_repository is not None:
            readers.append(("nodes-image-repository-reader", args.image_repository, image_repository_id))
        readers += [(f"nodes-reader-{r.location}-{r.repository}", r, None) for r in args.reader_repositories]
        for logical, r, repository_id in readers:
            self.bindings.append(
                gcp.artifactregistry.RepositoryIamMember(
                    logical,
                    gcp.artifactregistry.RepositoryIamMemberArgs(
                        project=r.project,
                        location=r.location,
                        repository=repository_id if repository_id is not None else r.repository,
                        role=catalog.ARTIFACT_REGISTRY_READER_ROLE,
                        member=self.account.member,
                    ),
                    opts=child,
                )
            )
        self.register_outputs({"email": self.account.email})
