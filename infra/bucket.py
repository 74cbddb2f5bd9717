"""The training bucket (hierarchical namespace, uniform access, soft delete) and the export's access to it.

Only the checkpoint export writes to the bucket, and only under its prefix (least privilege): the export runs on the
Ray head as the stack's own Kubernetes service account (core.naming Names.export_ksa), named as a Workload
Identity principal (principal://…/subject/ns/<ns>/sa/<ksa>) directly, so no Google service account or
annotation is needed, and distinct per stack, so two stacks of one project cannot touch each other's buckets.

- The prefix is a folder of the hierarchical namespace with a managed folder of the same name on it; the
  managed folder grants roles/storage.objectUser (create, overwrite, rename, delete under the prefix: the export
  renames its manifest into place and re-copies short files).
- The bucket grants the same principal object *listing* only (roles/storage.objectViewer under an IAM condition
  that matches the bucket resource, where only list permissions are checked): Cloud Storage FUSE and its CSI
  driver check access with a bucket-level GetStorageLayout, which needs storage.objects.list (core/catalog/security.py).
- Nothing else is granted: the GPU workers and every other pod run as a service account without a grant.

The principal lives in the Workload Identity pool `<project>.svc.id.goog`, which only exists once the project's
first cluster with Workload Identity does: in a project that never had one, a grant made earlier fails with
"Identity Pool does not exist" (GKE attached-clusters Managed Prometheus page: the binding "fails unless at least
one cluster has been created ... isn't provisioned until cluster creation"). So the grants wait for the cluster
(`pool_owner`).

Destroy never loses exports silently: the bucket is never force-deleted and the folders are not either, so a
non-empty export prefix stops `pulumi destroy` with the data in place (docs/operations.md, "Teardown: what pulumi
destroy keeps"). The managed folder is only the grant's container: it is deleted with `allowNonEmpty`
(force_destroy), which keeps its objects where they are ("any objects within the folder will remain",
terraform-provider-google-beta storage/resource_storage_managed_folder.go:165-173, :414), so the grant goes with it
and never before a folder it could still serve. A new export destination is created first (folders, managed folder,
grant, the export Job pointing at it), and only then are the old ones deleted: the old folder's delete is refused
while it holds exports (resource_storage_folder.go:428), at the end of the `up`, with the new destination working
(docs/operations.md, "Changing a deployed stack").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog, export
from core.naming import resource_labels, workload_principal
from core.settings import Settings
from infra.options import child_options

DAY_SECONDS = 24 * 3600


@dataclass(frozen=True)
class BucketArgs:
    name: str
    region: str
    labels: dict[str, str]
    soft_delete_days: int
    # The export's Kubernetes service account (Workload Identity principal) and the prefix it writes; None: no
    # export, no grant at all.
    workload_pool: str
    namespace: str
    export_ksa: Optional[str]
    export_prefix: Optional[str]
    # The folders of the experiments this platform hosts (core.export.experiment_prefix): the platform creates them,
    # each experiment stack its managed folder and grant on its own (infra/experiment_export.py).
    experiment_prefixes: tuple[str, ...] = ()

    @classmethod
    def of(cls, s: Settings) -> "BucketArgs":
        # As the export's service account (workloads/workload_identity.py): experiment stacks export as it.
        exporting = s.startup.export_checkpoints
        prefix = s.export_destination.prefix if exporting else None
        return cls(
            name=s.bucket_name,
            region=s.region,
            labels=resource_labels(s.stack_name),
            soft_delete_days=s.startup.export_soft_delete_days,
            workload_pool=s.workload_identity_pool,
            namespace=s.storage.namespace,
            export_ksa=s.names.export_ksa if exporting else None,
            export_prefix=prefix,
            experiment_prefixes=tuple(export.experiment_prefix(e) for e in sorted(s.tenancy.experiments)),
        )


def list_only_condition() -> gcp.storage.BucketIAMMemberConditionArgs:
    return gcp.storage.BucketIAMMemberConditionArgs(
        title="bucket-level listing only",
        description="Cloud Storage FUSE's access check lists the bucket; object reads and writes are granted on "
        "the export's managed folder only",
        expression=f'resource.type == "{catalog.BUCKET_RESOURCE_TYPE}"',
    )


class TrainingBucket(pulumi.ComponentResource):
    bucket: gcp.storage.Bucket
    url: pulumi.Output[str]
    principal: Optional[pulumi.Output[str]]  # the export's Kubernetes service account as an IAM principal
    binding: Optional[pulumi.Resource]  # the export's write grant; the export Job waits for it

    def __init__(
        self,
        name: str,
        args: BucketArgs,
        project_number: pulumi.Input[str],
        pool_owner: pulumi.Resource,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:TrainingBucket", name, None, opts)
        a = args
        child = child_options(self, opts)  # the Storage API: wait for what the component waits for
        self.bucket = gcp.storage.Bucket(
            "bucket",
            gcp.storage.BucketArgs(
                name=a.name,
                location=a.region.upper(),
                uniform_bucket_level_access=True,  # hierarchical namespace requires it
                hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
                public_access_prevention="enforced",
                # Deleted or overwritten exports stay restorable this long (Cloud Storage's default is 7 days).
                soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                    retention_duration_seconds=a.soft_delete_days * DAY_SECONDS
                ),
                # A non-empty bucket makes `pulumi destroy` fail instead of deleting data silently.
                force_destroy=False,
                labels=dict(a.labels),
            ),
            opts=child,
        )
        self.url = self.bucket.name.apply(lambda b: f"gs://{b}")
        self.principal = None
        self.binding = None
        if a.export_ksa is not None and a.export_prefix is not None:
            ksa, prefix = a.export_ksa, a.export_prefix
            self.principal = pulumi.Output.from_input(project_number).apply(
                lambda num: workload_principal(num, a.workload_pool, a.namespace, ksa)
            )
            folder_name = f"{prefix}/"
            # The folders first, parent before child (a hierarchical-namespace folder needs its parent, and
            # `only-dir` mounts an existing folder), then the managed folder of the same name that carries the
            # grant. A folder is never force-deleted (that would delete the exports in it). A new destination
            # replaces them create-first (`delete_before_replace=False` overrides the bridge's delete-first for an
            # auto-named `name`, pulumi step_generator.go:2044-2047; the names differ, so nothing collides): the
            # old ones are deleted after everything new is in place.
            folder: Optional[gcp.storage.Folder] = None
            parts = prefix.split("/")
            for i in range(len(parts)):
                folder = gcp.storage.Folder(
                    f"export-folder-{i}",
                    gcp.storage.FolderArgs(
                        bucket=self.bucket.name, name="/".join(parts[: i + 1]) + "/", force_destroy=False
                    ),
                    opts=child_options(
                        self, opts, depends_on=[folder] if folder is not None else [], delete_before_replace=False
                    ),
                )
            managed = gcp.storage.ManagedFolder(
                "export-managed-folder",
                # allowNonEmpty: the managed folder goes, its objects stay (module docstring).
                gcp.storage.ManagedFolderArgs(bucket=self.bucket.name, name=folder_name, force_destroy=True),
                opts=child_options(self, opts, depends_on=[folder], delete_before_replace=False),
            )
            after_pool = child_options(self, opts, depends_on=[pool_owner])
            self.binding = gcp.storage.ManagedFolderIamMember(
                "export-object-user",
                gcp.storage.ManagedFolderIamMemberArgs(
                    bucket=self.bucket.name,
                    managed_folder=managed.name,
                    role=catalog.EXPORT_ROLE,
                    member=self.principal,
                ),
                opts=after_pool,
            )
            self.list_binding = gcp.storage.BucketIAMMember(
                "export-bucket-list",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=self.bucket.name,
                    role=catalog.BUCKET_LIST_ROLE,
                    member=self.principal,
                    condition=list_only_condition(),
                ),
                opts=after_pool,
            )
        if a.experiment_prefixes:
            # Never force-deleted: a removed experiment's folder keeps its exports, and its delete is refused while it
            # holds any (DELETE_REFUSED).
            parent = gcp.storage.Folder(
                "experiments-folder",
                gcp.storage.FolderArgs(
                    bucket=self.bucket.name, name=f"{export.EXPERIMENTS_PREFIX}/", force_destroy=False
                ),
                opts=child_options(self, opts, delete_before_replace=False),
            )
            for prefix in a.experiment_prefixes:
                gcp.storage.Folder(
                    f"experiment-folder-{prefix.rsplit('/', 1)[1]}",
                    gcp.storage.FolderArgs(bucket=self.bucket.name, name=f"{prefix}/", force_destroy=False),
                    opts=child_options(self, opts, depends_on=[parent], delete_before_replace=False),
                )
        self.register_outputs({"url": self.url})
