"""DataReadGrant: read access to a job's gs:// training data for the data staging Job's own Kubernetes service account,
and nothing else (least privilege; the one Google Cloud grant an experiment stack declares besides its export's).

One `BucketIAMMember` per bucket of jobData: `roles/storage.objectViewer` for the Job's Workload Identity principal
(principal://.../subject/ns/<namespace>/sa/<its KSA>, core.naming.workload_principal), under an IAM condition that
matches the bucket resource itself (Cloud Storage FUSE checks access with a bucket-level listing, as for the export:
core/catalog/security.py) or the data's objects: every object under a prefix, or the one object named. Reads of any
other object of the bucket are refused. The condition needs uniform bucket-level access on the bucket (Cloud Storage
IAM Conditions), and whoever runs `pulumi up` needs `storage.buckets.setIamPolicy` on it.

Like the export's grants, it waits for the cluster (`pool_owner`): the principal lives in the project's Workload
Identity pool, which exists only once a cluster with Workload Identity does (infra/bucket.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_gcp as gcp

from core import catalog, data
from core.naming import workload_principal
from core.settings import Settings
from core.settings import tenancy as tenancy_settings
from infra.options import child_options


@dataclass(frozen=True)
class DataReadGrantArgs:
    workload_pool: str
    namespace: str
    ksa: str  # the data staging Job's Kubernetes service account
    reads: dict[str, tuple[str, ...]]  # bucket -> objects or prefixes (core.data.gcs_grants)

    @classmethod
    def of(cls, s: Settings) -> Optional["DataReadGrantArgs"]:
        """None when the job reads no gs:// data."""
        reads = data.gcs_grants(s.recipe.data) if s.job.enabled else {}
        if not reads:
            return None
        return cls(
            workload_pool=s.workload_identity_pool,
            namespace=s.storage.namespace,
            ksa=tenancy_settings.data_ksa(s),
            reads=reads,
        )


def read_condition(bucket: str, reads: Sequence[str]) -> gcp.storage.BucketIAMMemberConditionArgs:
    """The bucket resource (listing) or the data's objects: a prefix ends in '/', anything else is one object ('' is
    the whole bucket)."""
    objects = f"projects/_/buckets/{bucket}/objects/"
    terms = [f'resource.type == "{catalog.BUCKET_RESOURCE_TYPE}"']
    for r in reads:
        terms.append(
            f'resource.name.startsWith("{objects}{r}")'
            if r == "" or r.endswith("/")
            else f'resource.name == "{objects}{r}"'
        )
    return gcp.storage.BucketIAMMemberConditionArgs(
        title="training data only",
        description="The data staging Job reads its jobData objects; the bucket itself: listing only",
        expression=" || ".join(terms),
    )


class DataReadGrant(pulumi.ComponentResource):
    bindings: list[gcp.storage.BucketIAMMember]

    def __init__(
        self,
        name: str,
        args: DataReadGrantArgs,
        project_number: Optional[pulumi.Input[str]] = None,
        pool_owner: Optional[pulumi.Resource] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
        principal: Optional[pulumi.Input[str]] = None,
    ):
        """The principal from the project's number, or as given (`principal`: an experiment stack's, which its
        platform's contract publishes for the service account it made in the experiment's namespace)."""
        super().__init__("nemo-rl-gke:infra:DataReadGrant", name, None, opts)
        a = args
        if principal is not None:
            member = pulumi.Output.from_input(principal)
        elif project_number is not None:
            member = pulumi.Output.from_input(project_number).apply(
                lambda num: workload_principal(num, a.workload_pool, a.namespace, a.ksa)
            )
        else:
            raise ValueError("DataReadGrant needs the project number or the principal")
        after_pool = child_options(self, opts, depends_on=[pool_owner] if pool_owner is not None else [])
        self.bindings = [
            gcp.storage.BucketIAMMember(
                # Named by the bucket: another bucket added or removed leaves this binding alone.
                f"data-read-{bucket}",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=bucket,
                    role=catalog.DATA_READ_ROLE,
                    member=member,
                    condition=read_condition(bucket, reads),
                ),
                opts=after_pool,
            )
            for bucket, reads in sorted(a.reads.items())
        ]
        self.register_outputs({"principal": member, "buckets": sorted(a.reads)})
