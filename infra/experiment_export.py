"""ExperimentExport: the only Google Cloud resources an experiment stack declares, all for its own export identity
(the `nemo-rl-export` service account its platform created in its namespace, whose Workload Identity principal
`.../subject/ns/<its namespace>/sa/nemo-rl-export` the platform's contract hands over):

- a managed folder on the folder its platform made for it (`experiments/<name>/` in the platform's bucket,
  infra/bucket.py), granting that principal roles/storage.objectUser: the export writes there and nowhere else;
- the bucket-level listing Cloud Storage FUSE's access check needs, for the same principal (roles/storage.objectViewer
  under the condition that matches only the bucket resource, as the platform's own: infra/bucket.py).

So each experiment exports as itself, to its own prefix: no two experiments (nor an experiment and its platform)
write as one principal. The managed folder goes on destroy with its objects kept (allowNonEmpty, as the platform's);
its grant goes with it. What an experimenter needs in Google Cloud for this: docs/security.md "Who needs which
permission".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from infra.bucket import list_only_condition


@dataclass(frozen=True)
class ExperimentExportArgs:
    bucket: str
    prefix: str  # experiments/<name> (core.export.experiment_prefix)


class ExperimentExport(pulumi.ComponentResource):
    binding: gcp.storage.ManagedFolderIamMember
    list_binding: gcp.storage.BucketIAMMember

    def __init__(
        self,
        name: str,
        args: ExperimentExportArgs,
        principal: pulumi.Input[str],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:ExperimentExport", name, None, opts)
        a = args
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=self))
        managed = gcp.storage.ManagedFolder(
            "export-managed-folder",
            gcp.storage.ManagedFolderArgs(bucket=a.bucket, name=f"{a.prefix}/", force_destroy=True),
            # Create-first on a new name, as the platform's (infra/bucket.py): nothing collides.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(delete_before_replace=False)),
        )
        self.binding = gcp.storage.ManagedFolderIamMember(
            "export-object-user",
            gcp.storage.ManagedFolderIamMemberArgs(
                bucket=a.bucket, managed_folder=managed.name, role=catalog.EXPORT_ROLE, member=principal
            ),
            opts=child,
        )
        self.list_binding = gcp.storage.BucketIAMMember(
            "export-bucket-list",
            gcp.storage.BucketIAMMemberArgs(
                bucket=a.bucket, role=catalog.BUCKET_LIST_ROLE, member=principal, condition=list_only_condition()
            ),
            opts=child,
        )
        self.destination = f"gs://{a.bucket}/{a.prefix}"
        self.register_outputs({"destination": self.destination})
