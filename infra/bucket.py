"""The training bucket (hierarchical namespace, uniform access) and the Workload Identity grant on it.

The grant names the Kubernetes service account directly (principal://…/subject/ns/<ns>/sa/<ksa>), as the
tutorial does, so no Google service account or annotation is needed.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core.settings import Settings


def workload_principal(project_number: str, s: Settings) -> str:
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{s.workload_identity_pool}/subject/ns/{s.storage.namespace}/sa/{s.storage.ksa_name}")


class TrainingBucket(pulumi.ComponentResource):
    bucket: gcp.storage.Bucket
    url: pulumi.Output[str]
    project_number: pulumi.Output[str]

    def __init__(self, name: str, settings: Settings, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:TrainingBucket", name, None, opts)
        s = settings
        child = pulumi.ResourceOptions(parent=self)
        self.bucket = gcp.storage.Bucket("bucket", gcp.storage.BucketArgs(
            name=s.bucket_name, location=s.region.upper(),
            uniform_bucket_level_access=True,  # hierarchical namespace requires it
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            public_access_prevention="enforced",
            # A non-empty bucket makes `pulumi destroy` fail instead of deleting data silently.
            force_destroy=False,
            labels={"stack": s.stack_name, "app": "nemo-rl-gke"}), opts=child)
        project = gcp.organizations.get_project_output(project_id=s.gcp_project)
        self.project_number = project.number
        self.binding = gcp.storage.BucketIAMMember("workload-object-user", gcp.storage.BucketIAMMemberArgs(
            bucket=self.bucket.name, role="roles/storage.objectUser",
            member=project.number.apply(lambda num: workload_principal(num, s))), opts=child)
        self.url = self.bucket.name.apply(lambda b: f"gs://{b}")
        self.register_outputs({"url": self.url})
