"""The NeMo-RL images in the stack's Artifact Registry, copied and prewarmed by the graph from its first minutes.

`imagePath: streaming` (the default): GKE streams only from Artifact Registry and helps from the first pull only
when the image-streaming cache holds the image (core.catalog, "The copy in the stack's Artifact Registry", has the
decision and its sources; core/image_copy.py the plan). This component holds:

- the Docker repository `<prefix>-images` in the stack's region (standard mode: the mode cannot change once created,
  so it is the literal constant), unless `imageRepository` names one of the user's;
- the copy jobs' own service account, with Artifact Registry Writer on that repository alone (push and
  `prewarmArtifact`);
- per catalog release, a Cloud Run job that copies `nvcr.io/nvidia/nemo-rl:<tag>` there with gcrane, and one that
  prewarms the copy's amd64 image in the nodes' region. `run_execution_token` makes Pulumi wait for each execution
  to succeed ("The Job will become ready when the execution is successfully completed"); the tokens derive from
  what the jobs run, so they run again only when that changes.

The jobs need only the APIs (no cluster, no VPC: Cloud Run reaches nvcr.io and Artifact Registry over Google's
network), so they run while the cluster and Lustre are created. The node service account's read grant on the
repository is NodeIdentity's; the pods that run the image wait for the copy (`copied`), never for the prewarm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog, image_copy
from core.naming import resource_labels, slug
from core.settings import Settings
from infra.options import child_options

STEP_LABEL = "nemo-rl-gke-step"  # which step a job is (the critical-path report reads it)
COPY_STEP, PREWARM_STEP = "image-copy", "image-prewarm"


@dataclass(frozen=True)
class ImageCopyArgs:
    project: str
    region: str
    repository: image_copy.Repository
    create_repository: bool  # imageRepository unset: the stack's own
    service_account_id: str
    copies: tuple[image_copy.ImageCopy, ...]
    labels: dict[str, str]

    @classmethod
    def of(cls, s: Settings) -> "ImageCopyArgs":
        repo = image_copy.Repository.parse(s.image_repository)
        return cls(
            project=s.gcp_project,
            region=s.region,
            repository=repo,
            create_repository=not s.startup.image_repository,
            service_account_id=s.names.image_copy_service_account,
            copies=image_copy.plan(s.names, repo, s.region),
            labels=resource_labels(s.stack_name),
        )


def _job(
    name: str,
    task: image_copy.CloudRunTask,
    step: str,
    a: ImageCopyArgs,
    account: gcp.serviceaccount.Account,
    opts: pulumi.ResourceOptions,
) -> gcp.cloudrunv2.Job:
    container = gcp.cloudrunv2.JobTemplateTemplateContainerArgs(
        image=task.image,
        commands=list(task.command) or None,
        args=list(task.args),
        resources=gcp.cloudrunv2.JobTemplateTemplateContainerResourcesArgs(limits=dict(catalog.IMAGE_COPY_RESOURCES)),
    )
    return gcp.cloudrunv2.Job(
        name,
        gcp.cloudrunv2.JobArgs(
            name=task.job_name,
            project=a.project,
            location=a.region,
            # A job holds nothing: destroy (or a rename) deletes it.
            deletion_protection=False,
            labels={**a.labels, STEP_LABEL: step},
            run_execution_token=task.token,
            template=gcp.cloudrunv2.JobTemplateArgs(
                task_count=1,
                parallelism=1,
                template=gcp.cloudrunv2.JobTemplateTemplateArgs(
                    service_account=account.email,
                    max_retries=catalog.IMAGE_COPY_MAX_RETRIES,
                    timeout=f"{catalog.IMAGE_COPY_TASK_TIMEOUT_SECONDS}s",
                    containers=[container],
                ),
            ),
        ),
        opts=opts,
    )


class ImageCopy(pulumi.ComponentResource):
    repository: Optional[gcp.artifactregistry.Repository]
    repository_id: pulumi.Output[str]
    account: gcp.serviceaccount.Account
    copied: list[pulumi.Resource]  # the copy jobs: what the pods naming the copies wait for
    prewarmed: list[pulumi.Resource]

    def __init__(self, name: str, args: ImageCopyArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:ImageCopy", name, None, opts)
        a = args
        child = child_options(self, opts)
        self.repository = None
        if a.create_repository:
            self.repository = gcp.artifactregistry.Repository(
                "image-repository",
                gcp.artifactregistry.RepositoryArgs(
                    project=a.project,
                    location=a.repository.location,
                    repository_id=a.repository.repository,
                    format="DOCKER",
                    mode="STANDARD_REPOSITORY",
                    description="NeMo-RL images copied from nvcr.io for GKE image streaming (nemo-rl-gke)",
                    labels=a.labels,
                ),
                opts=child,
            )
            self.repository_id = self.repository.repository_id
        else:
            self.repository_id = pulumi.Output.from_input(a.repository.repository)
        self.account = gcp.serviceaccount.Account(
            "image-copy",
            gcp.serviceaccount.AccountArgs(
                account_id=a.service_account_id,
                project=a.project,
                display_name="Copies the NeMo-RL images into the stack's Artifact Registry repository",
            ),
            opts=child,
        )
        writer = gcp.artifactregistry.RepositoryIamMember(
            "image-copy-writer",
            gcp.artifactregistry.RepositoryIamMemberArgs(
                project=a.repository.project,
                location=a.repository.location,
                repository=self.repository_id,
                role=catalog.ARTIFACT_REGISTRY_WRITER_ROLE,
                member=self.account.member,
            ),
            opts=child,
        )
        timeouts = pulumi.CustomTimeouts(
            create=f"{catalog.IMAGE_COPY_TASK_TIMEOUT_SECONDS * (catalog.IMAGE_COPY_MAX_RETRIES + 1) // 60}m",
            update=f"{catalog.IMAGE_COPY_TASK_TIMEOUT_SECONDS * (catalog.IMAGE_COPY_MAX_RETRIES + 1) // 60}m",
        )
        self.copied, self.prewarmed = [], []
        for c in a.copies:
            tag = slug(c.release_tag)
            # The job's first execution pushes: it waits for its writer grant.
            copy = _job(
                f"image-copy-{tag}",
                c.copy,
                COPY_STEP,
                a,
                self.account,
                child_options(self, opts, depends_on=[writer], custom_timeouts=timeouts),
            )
            prewarm = _job(
                f"image-prewarm-{tag}",
                c.prewarm,
                PREWARM_STEP,
                a,
                self.account,
                # After its copy: the tag must exist before its cache is filled.
                child_options(self, opts, depends_on=[writer, copy], custom_timeouts=timeouts),
            )
            self.copied.append(copy)
            self.prewarmed.append(prewarm)
        self.register_outputs(
            {
                "repository": a.repository.path,
                "copies": [c.target for c in a.copies],
            }
        )
