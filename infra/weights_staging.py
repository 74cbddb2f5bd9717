"""WeightsStagingAccess (weightsPath bucket-import): the bucket's staging folder and exactly the grants the staging and
the import need (core/weights.py says what each Job does; core/catalog/lustre.py has the permissions' sources).

- The staging Job writes only under its prefix: a hierarchical-namespace folder `weights-staging/` with a managed
  folder of the same name granting roles/storage.objectUser to the staging Job's own Kubernetes service account
  (its Workload Identity principal, as the export's: infra/bucket.py), plus the bucket-level listing GCS FUSE checks
  access with (roles/storage.objectViewer under the condition that matches the bucket resource only).
- Managed Lustre's service agent reads the bucket: roles/storage.objectViewer on the bucket, as the transfer page
  says for imports. The agent is created first (`projects.ServiceIdentity`, the API's generateServiceIdentity): it has
  no role and may not exist in a project that never imported. Its member is built from the project number, because
  generateServiceIdentity "may not return the service identity's details" (terraform-provider-google-beta@93c65b2d
  google-beta/services/resourcemanager/resource_project_service_identity.go:127-128).
- The caller of importData holds lustre.instances.importData and lustre.operations.get and nothing else: a custom
  project role (the predefined role with importData, roles/lustre.admin, also creates and deletes instances) bound to
  a Google service account of this stack, which the import Job's Kubernetes service account acts as
  (roles/iam.workloadIdentityUser for `<pool>[<namespace>/<ksa>]`). A linked service account rather than the KSA's
  own principal: the Managed Lustre API's support for Workload Identity Federation's federated tokens was not found
  in Google's list of products and limitations, while a service account's token works with every API.
- The custom role's id carries the time it was first created (a `time.Static`): a deleted custom role can be
  undeleted for 7 days and its id cannot be used again until it is permanently deleted (IAM projects.roles.delete,
  https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/delete), so a stack destroyed and created again
  within those weeks would meet its own deleted role. The provider's create undeletes a soft-deleted role of the same
  id and fails on a live one ("already exists and must be imported", resource_google_project_iam_custom_role.go:
  136-149).

The grants to Workload Identity principals name the pool `<project>.svc.id.goog`, which exists once the project's
first cluster with Workload Identity does (infra/bucket.py): they wait for the cluster (`pool_owner`). The staging
folder holds only copies of public Hub files: it is deleted with its objects (`force_destroy`, resource_storage_
folder.go:174-177, :414-432) when the stack stops staging or is destroyed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp
import pulumiverse_time as time

from core import catalog, weights
from core.naming import workload_principal
from core.settings import Settings
from infra.bucket import list_only_condition
from infra.options import child_options

WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"


@dataclass(frozen=True)
class WeightsStagingAccessArgs:
    project: str
    workload_pool: str
    namespace: str
    stage_ksa: str
    import_ksa: str
    import_account_id: str
    role_id_prefix: str
    prefix: str  # the bucket folder the staging writes (core.weights.STAGING_PREFIX)

    @classmethod
    def of(cls, s: Settings) -> "WeightsStagingAccessArgs":
        return cls(
            project=s.gcp_project,
            workload_pool=s.workload_identity_pool,
            namespace=s.storage.namespace,
            stage_ksa=s.names.weights_stage,
            import_ksa=s.names.weights_import,
            import_account_id=s.names.weights_import_account,
            role_id_prefix=s.names.weights_import_role,
            prefix=weights.STAGING_PREFIX,
        )


class WeightsStagingAccess(pulumi.ComponentResource):
    stage_principal: pulumi.Output[str]
    import_account_email: pulumi.Output[str]
    stage_grants: list[pulumi.Resource]  # the staging Job waits for them
    import_grants: list[pulumi.Resource]  # the import Job waits for them

    def __init__(
        self,
        name: str,
        args: WeightsStagingAccessArgs,
        bucket: gcp.storage.Bucket,
        project_number: pulumi.Input[str],
        pool_owner: pulumi.Resource,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:WeightsStagingAccess", name, None, opts)
        a = args
        child = child_options(self, opts)
        after_pool = child_options(self, opts, depends_on=[pool_owner])
        folder_name = f"{a.prefix}/"
        folder = gcp.storage.Folder(
            "weights-folder",
            gcp.storage.FolderArgs(bucket=bucket.name, name=folder_name, force_destroy=True),
            opts=child_options(self, opts, delete_before_replace=False),
        )
        managed = gcp.storage.ManagedFolder(
            "weights-managed-folder",
            gcp.storage.ManagedFolderArgs(bucket=bucket.name, name=folder_name, force_destroy=True),
            opts=child_options(self, opts, depends_on=[folder], delete_before_replace=False),
        )
        number = pulumi.Output.from_input(project_number)
        self.stage_principal = number.apply(lambda n: workload_principal(n, a.workload_pool, a.namespace, a.stage_ksa))
        stage_write = gcp.storage.ManagedFolderIamMember(
            "weights-stage-object-user",
            gcp.storage.ManagedFolderIamMemberArgs(
                bucket=bucket.name, managed_folder=managed.name, role=catalog.EXPORT_ROLE, member=self.stage_principal
            ),
            opts=after_pool,
        )
        stage_list = gcp.storage.BucketIAMMember(
            "weights-stage-bucket-list",
            gcp.storage.BucketIAMMemberArgs(
                bucket=bucket.name,
                role=catalog.BUCKET_LIST_ROLE,
                member=self.stage_principal,
                condition=list_only_condition(),
            ),
            opts=after_pool,
        )
        self.stage_grants = [stage_write, stage_list]

        agent = gcp.projects.ServiceIdentity(
            "lustre-agent",
            gcp.projects.ServiceIdentityArgs(project=a.project, service=catalog.LUSTRE_SERVICE),
            opts=child,
        )
        agent_read = gcp.storage.BucketIAMMember(
            "lustre-agent-read",
            gcp.storage.BucketIAMMemberArgs(
                bucket=bucket.name,
                role=catalog.LUSTRE_AGENT_BUCKET_ROLE,
                member=number.apply(lambda n: f"serviceAccount:{catalog.lustre_service_agent(n)}"),
            ),
            opts=child_options(self, opts, depends_on=[agent]),
        )
        created = time.Static("weights-import-role-created", opts=child)
        role = gcp.projects.IAMCustomRole(
            "weights-import-role",
            gcp.projects.IAMCustomRoleArgs(
                project=a.project,
                role_id=created.unix.apply(lambda u: f"{a.role_id_prefix}{u}"),
                title="nemo-rl-gke weights import into Managed Lustre",
                description="importData into the stack's Lustre instance and reading its operations",
                permissions=list(catalog.LUSTRE_IMPORT_PERMISSIONS),
            ),
            opts=child,
        )
        account = gcp.serviceaccount.Account(
            "weights-import-account",
            gcp.serviceaccount.AccountArgs(
                project=a.project,
                account_id=a.import_account_id,
                display_name="nemo-rl-gke weights import (Managed Lustre importData)",
            ),
            opts=child,
        )
        self.import_account_email = account.email
        role_member = gcp.projects.IAMMember(
            "weights-import-role-member",
            gcp.projects.IAMMemberArgs(project=a.project, role=role.name, member=account.member),
            opts=child,
        )
        acts_as = gcp.serviceaccount.IAMMember(
            "weights-import-workload-identity",
            gcp.serviceaccount.IAMMemberArgs(
                service_account_id=account.name,
                role=WORKLOAD_IDENTITY_USER,
                member=f"serviceAccount:{a.workload_pool}[{a.namespace}/{a.import_ksa}]",
            ),
            opts=after_pool,
        )
        self.import_grants = [agent_read, role_member, acts_as]
        self.register_outputs({"stagePrincipal": self.stage_principal, "importAccount": self.import_account_email})
