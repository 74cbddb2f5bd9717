"""The training bucket (hierarchical namespace, uniform access) and the Workload Identity grant on it.

The grant names the Kubernetes service account directly (principal://…/subject/ns/<ns>/sa/<ksa>), as the
tutorial does, so no Google service account or annotation is needed. That principal lives in the Workload
Identity pool `<project>.svc.id.goog`, which only exists once the project's first cluster with Workload Identity
does: in a project that never had one, a grant made earlier fails with "Identity Pool does not exist" (GKE
attached-clusters Managed Prometheus page: the binding "fails unless at least one cluster has been created ...
isn't provisioned until cluster creation"). So the grant waits for the cluster (`pool_owner`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core.naming import resource_labels, workload_principal
from core.settings import Settings
from infra.options import child_options


@dataclass(frozen=True)
class BucketArgs:
    name: str
    region: str
    labels: dict[str, str]
    # The Kubernetes service account granted object access through Workload Identity.
    workload_pool: str
    namespace: str
    ksa_name: str

    @classmethod
    def of(cls, s: Settings) -> "BucketArgs":
        return cls(name=s.bucket_name, region=s.region, labels=resource_labels(s.stack_name),
                   workload_pool=s.workload_identity_pool, namespace=s.storage.namespace, ksa_name=s.storage.ksa_name)


class TrainingBucket(pulumi.ComponentResource):
    bucket: gcp.storage.Bucket
    url: pulumi.Output[str]
    principal: pulumi.Output[str]     # the workload's Kubernetes service account as an IAM principal

    def __init__(self, name: str, args: BucketArgs, project_number: pulumi.Input[str], pool_owner: pulumi.Resource,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:TrainingBucket", name, None, opts)
        a = args
        child = child_options(self, opts)   # the Storage API: wait for what the component waits for
        self.bucket = gcp.storage.Bucket("bucket", gcp.storage.BucketArgs(
            name=a.name, location=a.region.upper(),
            uniform_bucket_level_access=True,  # hierarchical namespace requires it
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            public_access_prevention="enforced",
            # A non-empty bucket makes `pulumi destroy` fail instead of deleting data silently.
            force_destroy=False,
            labels=dict(a.labels)), opts=child)
        self.principal = pulumi.Output.from_input(project_number).apply(
            lambda num: workload_principal(num, a.workload_pool, a.namespace, a.ksa_name))
        self.binding = gcp.storage.BucketIAMMember("workload-object-user", gcp.storage.BucketIAMMemberArgs(
            bucket=self.bucket.name, role="roles/storage.objectUser", member=self.principal),
            opts=child_options(self, opts, depends_on=[pool_owner]))
        self.url = self.bucket.name.apply(lambda b: f"gs://{b}")
        self.register_outputs({"url": self.url})
