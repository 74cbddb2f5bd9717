"""What a changed input does to a deployed resource: replace-only fields, delete-first rules, consequences.

A Pulumi program never sees the planned diff; the provider decides. These tables are the providers' rules, read
in their source, so the offline diff (synth/compare.py), the pull-request summary of `pulumi preview --json`
(tools/preview_replacements.py) and the day-two test (tests/test_day2_settings.py) can say which change replaces
what, in which order, and what that stops. docs/research/day2.md holds the evidence in full.

Sources (each rule names its file and lines):
- TPGB: hashicorp/terraform-provider-google-beta at 93c65b2d (main after the 8.0.0 major release; the ForceNew
  keys of every file below are identical at v7.45.0), files under `google-beta/services/`. pulumi-gcp 10.2.0
  bridges the 8.x line of this provider.
- BRIDGE: pulumi/pulumi-terraform-bridge v3.136.0: `pkg/tfbridge/property_path.go:162-193` (a change replaces when
  the property, or its collection parent, is ForceNew; a ForceNew block replaces only when it appears or
  disappears), `pkg/tfbridge/schema.go:195-246` + `pkg/tfbridge/provider.go:1275-1276` (an auto-named field the
  program sets makes the replacement delete-first), `pkg/tfbridge/info/autonaming.go:43-63` (every resource with a
  `name` input is auto-named; pulumi-gcp `provider/resources.go:3014` calls SetAutonaming).
- K8S: pulumi/pulumi-kubernetes v4.32.0 `provider/pkg/provider/diff.go` (ForceNew properties per kind),
  `provider/pkg/provider/provider.go:1645-1657` (a provider-decided replacement of a fixed-name object is
  delete-first; replacements the engine adds, from `replaceOnChanges`, `replaceWith` or a replaced provider, are
  create-first unless the resource sets `deleteBeforeReplace`; the create then fails with AlreadyExists,
  `provider/pkg/await/await.go:276-290`).
- TIME: hashicorp/terraform-provider-time at 16bc819e (bridged by pulumiverse-time 0.1.1), plan modifiers in
  `internal/provider/resource_time_{sleep,static}.go`.
- ENGINE: pulumi/pulumi v3.259.0 `pkg/resource/deploy/step_generator.go`: :2044-2047 (`deleteBeforeReplace`
  overrides the provider, true or false), :1955-1962 (a resource protected before and after is never replaced), :3220
  `calculateDependentReplacements` (a delete-first replacement replaces dependents whose replace-only inputs come
  from it), :2895-2905 (`replaceWith`); `pkg/resource/deploy/step.go:661` (a retained resource's delete, also the
  delete of a replacement, is skipped).

Beyond schema ForceNew, every type the program registers had its provider's diff customisations read (the
CustomizeDiff list of a terraform-provider-google-beta resource, plan modifiers of a framework provider, the diff of
pulumi-kubernetes): DIFF_RULES_READ says what each one does to a change this program can make, and the ones that
replace are rules of REPLACE_ONLY like the rest (`ForceNewIfChange` -> kinds "replace-when-disabled",
"replace-unless-expansion"). What the APIs refuse although the providers plan an update (API_REFUSES) and which
deletes are refused (DELETE_REFUSED) are recorded the same way: a plan that meets one fails the `up` at that step.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Literal, Optional

TPGB = "terraform-provider-google-beta@93c65b2d google-beta/services/"
K8S_DIFF = "pulumi-kubernetes@v4.32.0 provider/pkg/provider/diff.go"
K8S_PROVIDER = "pulumi-kubernetes@v4.32.0 provider/pkg/provider/provider.go"
TIME_SLEEP = "terraform-provider-time@16bc819e internal/provider/resource_time_sleep.go"
TIME_STATIC = "terraform-provider-time@16bc819e internal/provider/resource_time_static.go"

# What a matching change does:
# - "replace": the field is ForceNew (or inside a ForceNew leaf block such as reservation_affinity);
# - "replace-if-block-toggles": a ForceNew block replaces only when it appears or disappears (BRIDGE
#   property_path.go; cross-test TestBlockCollectionForceNew), changes inside it update in place;
# - "replace-unless-expansion": the subnetwork's range replaces unless the new range contains the old one;
# - "recreates-nodes": updated in place, but GKE migrates every node of the pool (drains it).
# - "replace-when-changed": replaces when the value changes, not when it is added or removed;
# - "replace-when-disabled": `customdiff.ForceNewIfChange(<field>, isBeenEnabled)`: old true, new false (or left
#   out: the field's Default is false) replaces; false -> true updates in place.
Kind = Literal[
    "replace",
    "replace-if-block-toggles",
    "replace-unless-expansion",
    "replace-when-changed",
    "replace-when-disabled",
    "recreates-nodes",
]


@dataclass(frozen=True)
class FieldRule:
    path: str  # Pulumi input path as the inventory records it; `[*]` = any list element
    kind: Kind
    source: str


def _r(path: str, source: str, kind: Kind = "replace") -> FieldRule:
    return FieldRule(path, kind, source)


_NC = TPGB + "container/node_config.go"
_NP = TPGB + "container/resource_container_node_pool.go"
_CL = TPGB + "container/resource_container_cluster.go"
_LU = TPGB + "lustre/resource_lustre_instance.go"
_AR = TPGB + "artifactregistry/resource_artifact_registry_repository.go"
_CRJ = TPGB + "cloudrunv2/resource_cloud_run_v2_job.go"
_CR = TPGB + "resourcemanager/resource_google_project_iam_custom_role.go"
_SI = TPGB + "resourcemanager/resource_project_service_identity.go"

REPLACE_ONLY: dict[str, tuple[FieldRule, ...]] = {
    "gcp:container/nodePool:NodePool": (
        _r("name", _NP + ":527-531"),
        _r("cluster", _NP + ":246-249"),
        _r("location", _NP + ":252-256"),
        _r("initialNodeCount", _NP + ":480-483"),
        _r("placementPolicy", _NP + ":381-386", "replace-if-block-toggles"),
        # placementPolicy.type is not ForceNew and has no update path (NP has no HasChange("placement_policy")):
        # the program renders only COMPACT, so it is not listed.
        _r("placementPolicy.policyName", _NP + ":394-397"),
        _r("networkConfig.additionalNodeNetworkConfigs[*].network", _NP + ":609-628"),
        _r("networkConfig.additionalNodeNetworkConfigs[*].subnetwork", _NP + ":609-628"),
        _r("nodeConfig", _NC + ":279-284", "replace-if-block-toggles"),
        _r("nodeConfig.guestAccelerators", _NC + ":316-350"),  # count, type, gpuDriverInstallationConfig
        _r("nodeConfig.reservationAffinity", _NC + ":602-631"),
        _r("nodeConfig.spot", _NC + ":635-638"),
        _r("nodeConfig.flexStart", _NC + ":1493-1496"),
        _r("nodeConfig.maxRunDuration", _NC + ":1487-1490"),
        _r("nodeConfig.serviceAccount", _NC + ":643-647"),
        _r("nodeConfig.oauthScopes", _NC + ":579-583"),
        _r("nodeConfig.shieldedInstanceConfig", _NC + ":665-686"),
        _r("nodeConfig.ephemeralStorageLocalSsdConfig", _NC + ":468-480"),
        # UpdateNodePool with machine_type / disk: "Initiates an upgrade operation that migrates the nodes in the
        # node pool to the specified machine type" (googleapis google/container/v1/cluster_service.proto).
        _r("nodeConfig.machineType", _NC + ":555-560, update :4120-4130", "recreates-nodes"),
        _r("nodeConfig.diskType", _NC + ":291-303, update :4120-4124", "recreates-nodes"),
        _r("nodeConfig.diskSizeGb", _NC + ":291-303, update :4120-4124", "recreates-nodes"),
    ),
    "gcp:container/cluster:Cluster": (
        _r("name", _CL + ":295-298"),
        _r("location", _CL + ":328-332"),
        _r("network", _CL + ":1814-1818"),
        _r("subnetwork", _CL + ":2028-2032"),
        _r("ipAllocationPolicy", _CL + ":2061-2106"),
        _r("enableAutopilot", _CL + ":1190-1193"),
        _r("datapathProvider", _CL + ":2626-2629"),
        _r("initialNodeCount", _CL + ":1232-1235"),
        # Not ForceNew in the schema (:2654-2659, :2672-2677, Default false) but CustomizeDiff
        # `customdiff.ForceNewIfChange(<field>, isBeenEnabled)` (:259, :260; isBeenEnabled :228-239): turning it off
        # replaces the cluster, turning it on updates in place (:4419, :4540).
        _r("enableL4IlbSubsetting", _CL + ":259, :228-239", "replace-when-disabled"),
        _r("enableFqdnNetworkPolicy", _CL + ":260, :228-239", "replace-when-disabled"),
    ),
    "gcp:compute/resourcePolicy:ResourcePolicy": (
        # `name` is Required but not ForceNew: its Update PATCHes .../resourcePolicies/{{name}} with the NEW name
        # (:151-160, :876-891), a policy that does not exist (API_REFUSES); the program replaces it instead
        # (replaceOnChanges, infra/gpu_capacity.py). Every workload_policy field is ForceNew.
        _r("region", TPGB + "compute/resource_compute_resource_policy.go:295-300"),
        _r("project", TPGB + "compute/resource_compute_resource_policy.go:507-511"),
        _r("workloadPolicy.type", TPGB + "compute/resource_compute_resource_policy.go:466-471"),
        _r("workloadPolicy.maxTopologyDistance", TPGB + "compute/resource_compute_resource_policy.go:495-500"),
        _r("workloadPolicy.acceleratorTopology", TPGB + "compute/resource_compute_resource_policy.go:473-486"),
        _r("workloadPolicy.acceleratorTopologyMode", TPGB + "compute/resource_compute_resource_policy.go:473-486"),
    ),
    "gcp:lustre/instance:Instance": (
        _r("instanceId", _LU + ":162-165"),
        _r("location", _LU + ":173-176"),
        _r("network", _LU + ":179-182"),
        # Google: "You cannot change an instance's performance tier after it has been created"
        # (https://cloud.google.com/managed-lustre/docs/create-instance).
        _r("filesystem", _LU + ":154-157"),
        _r("perUnitStorageThroughput", _LU + ":528-531"),
        _r("project", _LU + ":625-629"),
        _r("kmsKey", _LU + ":287-290"),
    ),
    "gcp:compute/network:Network": (
        _r("name", TPGB + "compute/resource_compute_network.go:140-143"),
        _r("autoCreateSubnetworks", TPGB + "compute/resource_compute_network.go:153-156"),
        _r("networkProfile", TPGB + "compute/resource_compute_network.go:206-209"),
        _r("description", TPGB + "compute/resource_compute_network.go:165-168"),
    ),
    "gcp:compute/subnetwork:Subnetwork": (
        _r("name", TPGB + "compute/resource_compute_subnetwork.go:544-547"),
        _r("network", TPGB + "compute/resource_compute_subnetwork.go:557-560"),
        _r("region", TPGB + "compute/resource_compute_subnetwork.go:744-748"),
        # customdiff.ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr) :512, :63-80; expansion updates :1259.
        _r("ipCidrRange", TPGB + "compute/resource_compute_subnetwork.go:512, :63-80", "replace-unless-expansion"),
    ),
    "gcp:compute/firewall:Firewall": (
        _r("name", TPGB + "compute/resource_compute_firewall.go:246-249"),
        _r("direction", TPGB + "compute/resource_compute_firewall.go:302-306"),
    ),
    "gcp:compute/router:Router": (
        _r("name", TPGB + "compute/resource_compute_router.go:163-166"),
        _r("network", TPGB + "compute/resource_compute_router.go:292-295"),
        _r("region", TPGB + "compute/resource_compute_router.go:319-323"),
    ),
    "gcp:compute/routerNat:RouterNat": (
        _r("name", TPGB + "compute/resource_compute_router_nat.go:304-307"),
        _r("router", TPGB + "compute/resource_compute_router_nat.go:312-315"),
        _r("region", TPGB + "compute/resource_compute_router_nat.go:471-475"),
    ),
    "gcp:compute/globalAddress:GlobalAddress": tuple(
        _r(p, TPGB + f"compute/resource_compute_global_address.go:{lines}")
        for p, lines in (
            ("name", "141-144"),
            ("address", "153-157"),
            ("prefixLength", "209-213"),
            ("addressType", "162-165"),
            ("purpose", "220-223"),
            ("network", "198-201"),
        )
    ),
    "gcp:servicenetworking/connection:Connection": (
        _r("network", TPGB + "servicenetworking/resource_service_networking_connection.go:67-70"),
        _r("service", TPGB + "servicenetworking/resource_service_networking_connection.go:80-83"),
    ),
    "gcp:storage/bucket:Bucket": (
        _r("name", TPGB + "storage/resource_storage_bucket.go:132-135"),
        _r("location", TPGB + "storage/resource_storage_bucket.go:193-196"),
        _r("hierarchicalNamespace", TPGB + "storage/resource_storage_bucket.go:624-636"),
        _r("project", TPGB + "storage/resource_storage_bucket.go:203-207"),
        # CustomizeDiff `customdiff.ForceNewIfChange("retention_policy.0.is_locked", isPolicyLocked)` (:80, :873-885);
        # the program sets no retention policy.
        _r(
            "retentionPolicy.isLocked",
            TPGB + "storage/resource_storage_bucket.go:80, :873-885",
            "replace-when-disabled",
        ),
    ),
    "gcp:storage/bucketIAMMember:BucketIAMMember": (
        _r("bucket", TPGB + "storage/iam_storage_bucket.go:33-38"),
        _r("role", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("member", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("condition", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
    ),
    "gcp:projects/iAMMember:IAMMember": (
        _r("project", TPGB + "resourcemanager/iam_project.go:35-38"),
        _r("role", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("member", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("condition", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
    ),
    "gcp:serviceaccount/account:Account": (
        _r("accountId", TPGB + "resourcemanager/resource_google_service_account.go:90-93"),
        _r("project", TPGB + "resourcemanager/resource_google_service_account.go:114-118"),
    ),
    # The Kubernetes provider is replaced, and with it every object it manages, when its clusterIdentifier
    # changes; adding or removing it replaces nothing by itself (pulumi-kubernetes@v4.32.0
    # provider/pkg/provider/provider.go:484-502). Without it the kubeconfig's active cluster decides (:505-567),
    # which the offline diff cannot see (the kubeconfig is a secret).
    "pulumi:providers:kubernetes": (
        _r(
            "clusterIdentifier",
            "pulumi-kubernetes@v4.32.0 provider/pkg/provider/provider.go:484-502",
            "replace-when-changed",
        ),
    ),
    "gcp:monitoring/dashboard:Dashboard": (
        _r("project", TPGB + "monitoring/resource_monitoring_dashboard.go:110-115"),
    ),
    "gcp:projects/service:Service": (
        _r("service", TPGB + "resourcemanager/resource_google_project_service.go:133-136"),
        _r("project", TPGB + "resourcemanager/resource_google_project_service.go:139-143"),
    ),
    "gcp:storage/folder:Folder": (
        _r("bucket", TPGB + "storage/resource_storage_folder.go:145-148"),
        _r("name", TPGB + "storage/resource_storage_folder.go:151-154"),
    ),
    "gcp:storage/managedFolder:ManagedFolder": (
        _r("bucket", TPGB + "storage/resource_storage_managed_folder.go:135-138"),
        _r("name", TPGB + "storage/resource_storage_managed_folder.go:142-145"),
    ),
    # The image copy's repository grant (imagePath: streaming, infra/node_identity.py).
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": (
        _r("project", TPGB + "artifactregistry/iam_artifact_registry_repository.go:72-77"),
        _r("location", TPGB + "artifactregistry/iam_artifact_registry_repository.go:78-83"),
        _r("repository", TPGB + "artifactregistry/iam_artifact_registry_repository.go:84-89"),
        _r("role", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("member", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("condition", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
    ),
    # The stack's own image repository (imagePath: streaming, infra/image_copy.py). mode and format are the program's
    # constants: "you cannot change the repository mode after you have created a repository"
    # (https://docs.cloud.google.com/artifact-registry/docs/repositories), and the provider makes both ForceNew.
    "gcp:artifactregistry/repository:Repository": (
        _r("format", _AR + ":302-305"),
        _r("repositoryId", _AR + ":312-315"),
        _r("kmsKeyName", _AR + ":445-448"),
        _r("location", _AR + ":468-472"),
        _r("mode", _AR + ":508-511"),
        _r("remoteRepositoryConfig", _AR + ":516-519"),
        _r("project", _AR + ":926-930"),
    ),
    # The image copy and prewarm jobs (infra/image_copy.py): everything under `template`, the labels and the
    # run_execution_token update in place (a new token starts a new execution).
    "gcp:cloudrunv2/job:Job": (
        _r("location", _CRJ + ":146-150"),
        _r("name", _CRJ + ":152-158"),
        _r("tags", _CRJ + ":809-812"),
        _r("project", _CRJ + ":1044-1048"),
    ),
    # pulumiverse-time 0.1.1 bridges hashicorp/terraform-provider-time: `triggers` has RequiresReplace (the APIs'
    # wait runs again), create_duration updates in place without waiting.
    "time:index/sleep:Sleep": (_r("triggers", TIME_SLEEP + ":95-103"),),
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": (
        _r("bucket", TPGB + "storage/iam_storage_managed_folder.go:35-38"),
        _r("managedFolder", TPGB + "storage/iam_storage_managed_folder.go:40-43"),
        _r("role", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("member", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
    ),
    # weightsPath bucket-import (infra/weights_staging.py): the import's custom role, the Lustre service agent, the
    # role id's creation time, the import account's Workload Identity binding.
    "gcp:projects/iAMCustomRole:IAMCustomRole": (
        _r("roleId", _CR + ":51-57"),
        _r("project", _CR + ":70-76"),
    ),
    "gcp:projects/serviceIdentity:ServiceIdentity": (
        _r("service", _SI + ":50-54"),
        _r("project", _SI + ":55-60"),
    ),
    "time:index/static:Static": (
        _r("triggers", TIME_STATIC + ":124-131"),
        _r("rfc3339", TIME_STATIC + ":141-150"),
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": (
        _r("serviceAccountId", TPGB + "resourcemanager/iam_service_account.go:36-43"),
        _r("role", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("member", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
        _r("condition", TPGB + "tpgiamresource/resource_iam_member.go:64-96"),
    ),
}

# Kubernetes: pulumi-kubernetes's own ForceNew properties. Every kind: metadata.name / metadata.namespace
# (diff.go:207-212); the kinds the program renders with more:
_K8S_EVERY_KIND = (_r("metadata.name", K8S_DIFF + ":207-212"), _r("metadata.namespace", K8S_DIFF + ":207-212"))
K8S_REPLACE_ONLY: dict[str, tuple[FieldRule, ...]] = {
    "batch/v1:Job": tuple(
        _r(p, K8S_DIFF + ":178-186") for p in ("spec.completions", "spec.parallelism", "spec.selector", "spec.template")
    ),
    "apps/v1:DaemonSet": (_r("spec.selector", K8S_DIFF + ":164-169"),),
    "core/v1:PersistentVolume": (_r("spec.csi", K8S_DIFF + ":93"),),
    "core/v1:PersistentVolumeClaim": tuple(
        _r(p, K8S_DIFF + ":111-118")
        for p in ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName")
    ),
    # Secrets (and ConfigMaps) are immutable to the provider unless enableSecretMutable/enableConfigMapMutable
    # (diff.go:23-33); the program does not set them.
    "core/v1:Secret": tuple(_r(p, K8S_DIFF + ":28-29") for p in ("type", "data", "stringData")),
    "core/v1:ConfigMap": (_r("data", K8S_DIFF + ":31-32"), _r("binaryData", K8S_DIFF + ":31-32")),
    # The operator's RoleBinding (kubeRayOperator: helm): roleRef is immutable (diff.go:192-194, roleBinding).
    "rbac.authorization.k8s.io/v1:RoleBinding": (_r("roleRef", K8S_DIFF + ":192-194"),),
    # A Helm release (kubeRayOperator: helm): `.name` and `.namespace` force a new release, create-first
    # (`DeleteBeforeReplace: false`) (pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:906-932).
    "helm.sh/v3:Release": tuple(
        _r(p, "pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:906-925") for p in ("name", "namespace")
    ),
}

# Replacements that are delete-first, by type token, and why. Everything else (Lustre Instance, the service
# networking Connection, IAM bindings, the dashboard, project services) is replaced create-first.
DELETE_FIRST: dict[str, str] = {
    **{
        t: "auto-named `name` set by the program (BRIDGE schema.go:195-246, provider.go:1275-1276)"
        for t in (
            "gcp:container/nodePool:NodePool",
            "gcp:container/cluster:Cluster",
            "gcp:compute/resourcePolicy:ResourcePolicy",
            "gcp:compute/network:Network",
            "gcp:compute/subnetwork:Subnetwork",
            "gcp:compute/firewall:Firewall",
            "gcp:compute/router:Router",
            "gcp:compute/routerNat:RouterNat",
            "gcp:compute/globalAddress:GlobalAddress",
            "gcp:storage/bucket:Bucket",
            "gcp:storage/folder:Folder",
            "gcp:storage/managedFolder:ManagedFolder",
        )
    },
    "gcp:serviceaccount/account:Account": "auto-named `accountId` set by the program (pulumi-gcp resources.go:982)",
    "gcp:projects/iAMMember:IAMMember": "pulumi-gcp sets DeleteBeforeReplace (provider/resources.go:934-939)",
}

# A create-first replacement of these reuses a fixed id the provider does not auto-name: the create collides
# with the resource it replaces (409 ALREADY_EXISTS).
FIXED_ID: dict[str, str] = {
    "gcp:lustre/instance:Instance": "instanceId (Required, not auto-named: lustre.InstanceArgs in pulumi-gcp 10.2.0)",
}

Consequence = Literal["stops the job", "deletes data"]

# What replacing (or recreating the nodes of) a resource does to a running training job or to data.
CONSEQUENCES: dict[str, tuple[Consequence, ...]] = {
    # A pool's nodes are drained: the Ray workers (GPU pools) or the Ray head (system pool) go.
    "gcp:container/nodePool:NodePool": ("stops the job",),
    "gcp:container/cluster:Cluster": ("stops the job",),
    # The Lustre instance holds the HF cache, datasets and checkpoints.
    "gcp:lustre/instance:Instance": ("stops the job", "deletes data"),
    # The bucket, its folders and the export's managed folder never delete data: the program sets force_destroy
    # false on the bucket and the folders, whose delete is then refused while they hold objects (DELETE_REFUSED),
    # and a managed folder is only the grant's container: deleted with allowNonEmpty, its objects stay where they
    # are (resource_storage_managed_folder.go:165-173).
    "kubernetes:ray.io/v1:RayCluster": ("stops the job",),
    "kubernetes:ray.io/v1:RayJob": ("stops the job",),
    # The Ray pods mount the Lustre volume: a replaced PV/PVC unmounts it (pvc-protection holds the delete).
    "kubernetes:core/v1:PersistentVolume": ("stops the job",),
    "kubernetes:core/v1:PersistentVolumeClaim": ("stops the job",),
    # A replaced Kubernetes provider replaces every object it manages (pulumi-kubernetes provider.go:454-567).
    "pulumi:providers:kubernetes": ("stops the job",),
}

# --- diff customisations read, beyond schema ForceNew ---------------------------------------------------------
# Per type the program registers (an engine run of every shipped stack and of every day-two change lists them:
# tests/test_day2_settings.py fails on a type missing here): each provider rule that can change the plan of a
# change the program makes, where it is, and what it does here. A rule that replaces is also a FieldRule above.
_SN = TPGB + "compute/resource_compute_subnetwork.go"
_RP = TPGB + "compute/resource_compute_resource_policy.go"
_DEFAULTS = (
    "DefaultProviderProject/DefaultProviderRegion/DefaultProviderDeletionPolicy (tpgresource/utils.go:946-1013) SetNew "
    "project, region and deletion_policy from the provider's configuration (another gcp:project is another project: "
    "every project field is ForceNew); SetLabelsDiff (tpgresource/labels.go:157) touches labels only"
)
DIFF_RULES_READ: dict[str, str] = {
    "gcp:container/cluster:Cluster": _CL + ":256-271: ForceNewIfChange(enable_l4_ilb_subsetting | "
    "enable_fqdn_network_policy, isBeenEnabled) -> REPLACE_ONLY replace-when-disabled; "
    "containerClusterAutopilotCustomizeDiff :9137-9150 ForceNew dns_config.0.additive_vpc_scope_dns_domain on "
    "Autopilot and containerClusterEnableK8sBetaApisCustomizeDiff :9323-9349 ForceNew when an enabled API is removed "
    "(the program sets neither); privileged admission :9152-9187, network policy SetNewComputed on the first run "
    ":9201-9211, clusterAcceleratorNetworkProfileCustomizeDiff :9402 (inline node pools only; the program has none), "
    "the rest validations; authenticator_groups_config (rbacSecurityGroup) is Optional + Computed, not ForceNew "
    "(:1215-1230), and updated in place by UpdateCluster DesiredAuthenticatorGroupsConfig (:4590-4603; an empty "
    "security_group sends enabled false, :7611-7627): no replacement; " + _DEFAULTS,
    "gcp:container/nodePool:NodePool": _NP + ":227-232: nodePoolAcceleratorNetworkProfileCustomizeDiff :2216 SetNew "
    "network_config only with accelerator_network_profile (the program sets additional networks itself); "
    "resourceNodeConfigEmptyGuestAccelerator (cluster.go) clears count-0 accelerators; " + _DEFAULTS,
    "gcp:compute/subnetwork:Subnetwork": _SN + ":511-518: ForceNewIfChange(ip_cidr_range, IsShrinkageIpCidr) -> "
    "REPLACE_ONLY replace-unless-expansion; the secondary-range diffs :82-115, :156, :348 normalise (set style, "
    "empty list); the secondary-range Update :1722-1830 -> API_REFUSES; " + _DEFAULTS,
    "gcp:compute/resourcePolicy:ResourcePolicy": _RP + ":121-125 " + _DEFAULTS + "; `name` mutable -> API_REFUSES",
    "gcp:compute/network:Network": TPGB + "compute/resource_compute_network.go:115-118 " + _DEFAULTS,
    "gcp:compute/firewall:Firewall": TPGB + "compute/resource_compute_firewall.go:219-224: logging and source-field "
    "validations (:86, :102); " + _DEFAULTS,
    "gcp:compute/router:Router": TPGB + "compute/resource_compute_router.go:133-137: bgp validation :58; " + _DEFAULTS,
    "gcp:compute/routerNat:RouterNat": TPGB + "compute/resource_compute_router_nat.go:270-274: drain-NAT-IPs "
    "validation :76; " + _DEFAULTS,
    "gcp:compute/globalAddress:GlobalAddress": TPGB
    + "compute/resource_compute_global_address.go:115-119 "
    + _DEFAULTS
    + "; its delete while Service Networking lists it -> DELETE_REFUSED",
    "gcp:lustre/instance:Instance": _LU + ":115-119 " + _DEFAULTS,
    "gcp:monitoring/dashboard:Dashboard": TPGB + "monitoring/resource_monitoring_dashboard.go:93-96 " + _DEFAULTS,
    "gcp:projects/service:Service": TPGB + "resourcemanager/resource_google_project_service.go:111-114 " + _DEFAULTS,
    "gcp:serviceaccount/account:Account": TPGB + "resourcemanager/resource_google_service_account.go:52-56: "
    "resourceServiceAccountCustomDiff :485 (no replacement); " + _DEFAULTS,
    "gcp:servicenetworking/connection:Connection": TPGB
    + "servicenetworking/resource_service_networking_connection.go:56-58 "
    + _DEFAULTS,
    "gcp:storage/bucket:Bucket": TPGB + "storage/resource_storage_bucket.go:79-83: ForceNewIfChange("
    "retention_policy.0.is_locked, isPolicyLocked) -> REPLACE_ONLY; its delete -> DELETE_REFUSED",
    "gcp:storage/folder:Folder": TPGB + "storage/resource_storage_folder.go: no CustomizeDiff; its delete -> "
    "DELETE_REFUSED",
    "gcp:storage/managedFolder:ManagedFolder": TPGB + "storage/resource_storage_managed_folder.go: no "
    "CustomizeDiff; its delete (allowNonEmpty = force_destroy, :414) -> DELETE_REFUSED",
    "gcp:storage/bucketIAMMember:BucketIAMMember": TPGB + "tpgiamresource/resource_iam_member.go: no CustomizeDiff",
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": TPGB
    + "tpgiamresource/resource_iam_member.go: no CustomizeDiff",
    "gcp:projects/iAMMember:IAMMember": TPGB + "tpgiamresource/resource_iam_member.go: no CustomizeDiff",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": TPGB
    + "tpgiamresource/resource_iam_member.go: no CustomizeDiff",
    "gcp:artifactregistry/repository:Repository": _AR + ":272-276: SetLabelsDiff, DefaultProviderProject, "
    'DefaultProviderDeletionPolicy("DELETE") (' + _DEFAULTS + "); its delete :1411-1418 refuses only with "
    "deletion_policy PREVENT (the program leaves DELETE: the repository holds copies the graph makes again)",
    "gcp:cloudrunv2/job:Job": _CRJ + ":115-120: SetLabelsDiff, SetAnnotationsDiff, DefaultProviderProject, "
    'DefaultProviderDeletionPolicy("DELETE") (' + _DEFAULTS + "); run_execution_token :795-801 (ConflictsWith "
    "start_execution_token) updates in place and starts an execution; its delete :1533-1534 refuses while "
    "deletion_protection (Default true, :1033-1042), which the program sets false",
    "time:index/sleep:Sleep": TIME_SLEEP + ":68-108: plan modifiers: triggers RequiresReplace -> REPLACE_ONLY; id "
    "UseStateForUnknown",
    "time:index/static:Static": TIME_STATIC + ":59-104 ModifyPlan (sets the computed parts only on a create with "
    "rfc3339 given; the program gives none); plan modifiers: triggers and rfc3339 RequiresReplace -> REPLACE_ONLY, id "
    "UseStateForUnknown (:165-171)",
    "gcp:projects/iAMCustomRole:IAMCustomRole": _CR + ":45-48: DefaultProviderProject, DefaultProviderDeletionPolicy("
    "DELETE) (tpgresource/utils.go:946-1013); its create undeletes a soft-deleted role of the same id and fails on a "
    "live one (:136-149), its delete is IAM's soft delete (:294-314); stage's DiffSuppress :77-84 (the program sets "
    "none)",
    "gcp:projects/serviceIdentity:ServiceIdentity": _SI + ":45-47: DefaultProviderProject; no Update (every input "
    "ForceNew), no read (:144-147) and no delete endpoint (:149-152: removed from the state only)",
    "gcp:serviceaccount/iAMMember:IAMMember": TPGB + "tpgiamresource/resource_iam_member.go: no CustomizeDiff",
    "pulumi:providers:kubernetes": K8S_PROVIDER + ":454-567 DiffConfig: clusterIdentifier replace-when-changed "
    "(REPLACE_ONLY); without it a changed active cluster of the kubeconfig replaces (:539-560, kubeconfig_cluster_"
    "changed below)",
    "kubernetes:helm.sh/v3:Release": "pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:795-935 Diff: "
    ".name/.namespace replace (K8S_REPLACE_ONLY), create-first",
}
# Every other Kubernetes kind: pulumi-kubernetes's own diff (diff.go, K8S_REPLACE_ONLY) is the whole rule set; there
# is no per-kind customisation (provider.go Diff :1570-1660 applies forceNewProperties only).
K8S_DIFF_RULES_READ = K8S_DIFF + " forceNewProperties (every kind), " + K8S_PROVIDER + ":1431-1680 Diff"


def diff_rules_read(type_token: str) -> str:
    """Where this type's diff customisations were read, or "" when nobody read them."""
    if type_token in DIFF_RULES_READ:
        return DIFF_RULES_READ[type_token]
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm.sh/"):
        return K8S_DIFF_RULES_READ
    return ""


# --- what the APIs (or the provider in front of them) refuse while `up` applies the plan ---------------------
GKE_ALIAS_IPS = "https://cloud.google.com/kubernetes-engine/docs/how-to/alias-ips (Limitations, read 2026-12-01)"
PSA_REMOVE_RANGE = "https://cloud.google.com/alloydb/docs/psa-remove-allocated-range (read 2026-12-01)"


@dataclass(frozen=True)
class Refusal:
    path: str  # the changed input path (FieldRule path syntax)
    why: str
    source: str


# An in-place update the providers plan and the API refuses. The subnet's secondary ranges are the cluster's pod and
# service ranges: since terraform-provider-google(-beta) v7.27.0 (commit 258523c5, magic-modules#16858; in the 8.x
# line pulumi-gcp 10.2.0 bridges) a changed range is one PATCH without the old range, then one with the new
# (resource_compute_subnetwork.go:1722-1830); Compute refuses to remove a range a GKE cluster uses, and GKE fixes a
# cluster's pod and service ranges at creation ("If you use all of the Pod IP addresses in a subnet, you can't
# replace the subnet's secondary IP address range without putting the cluster into an unstable state", GKE_ALIAS_IPS;
# the cluster's range names are ForceNew, cluster.go:2061-2106). The exact API error was not verified.
API_REFUSES: dict[str, tuple[Refusal, ...]] = {
    "gcp:compute/subnetwork:Subnetwork": (
        Refusal(
            "secondaryIpRanges",
            "a secondary range GKE uses as the cluster's pod or service range cannot be removed or changed; the "
            "update PATCHes it away first",
            _SN + ":1722-1830, " + GKE_ALIAS_IPS,
        ),
    ),
    # terraform-provider-google#27818 pattern: a mutable `name` is PATCHed at the NEW name, which does not exist.
    "gcp:compute/resourcePolicy:ResourcePolicy": (
        Refusal(
            "name",
            "`name` is not ForceNew: the update PATCHes .../resourcePolicies/<new name>, a policy that does not exist "
            "(404)",
            _RP + ":151-160, :876-891 (magic-modules mmv1/products/compute/ResourcePolicy.yaml update_url)",
        ),
    ),
}


def api_refusal(type_token: str, path: str, old: Any) -> Optional[Refusal]:
    """The API's refusal of an in-place update of `path` (old value `old`), or None. Adding a field is fine."""
    if old == ABSENT or old is None:
        return None
    norm = normalize(path)
    return next((r for r in API_REFUSES.get(type_token, ()) if _under(norm, r.path)), None)


def delete_refusal(type_token: str, old_inputs: dict) -> str:
    """Why deleting this resource (removed, or replaced: the old one goes either way) fails the `up`, or ""."""
    force = bool(old_inputs.get("forceDestroy"))
    if type_token == "gcp:container/cluster:Cluster" and old_inputs.get("deletionProtection", True):
        # Default true (cluster.go:344-349, `Default: true`); the provider refuses before calling the API.
        return (
            "deletion_protection: the provider refuses to delete the cluster (" + _CL + ":5889-5890), after its "
            "delete-first dependents are gone"
        )
    if type_token == "gcp:storage/bucket:Bucket" and not force:
        return (
            "force_destroy false: the delete is refused while the bucket holds objects ("
            + TPGB
            + "storage/resource_storage_bucket.go:1303, :1358)"
        )
    if type_token == "gcp:storage/folder:Folder" and not force:
        return (
            "force_destroy false: the delete is refused while the folder holds objects ("
            + TPGB
            + "storage/resource_storage_folder.go:428)"
        )
    if type_token == "gcp:storage/managedFolder:ManagedFolder" and not force:
        return (
            "force_destroy false: Cloud Storage refuses to delete a managed folder that holds objects "
            "(allowNonEmpty=false, " + TPGB + "storage/resource_storage_managed_folder.go:414)"
        )
    if type_token == "gcp:compute/globalAddress:GlobalAddress" and old_inputs.get("purpose") == "VPC_PEERING":
        return (
            "the service-networking connection lists the range and Lustre holds addresses in it: Google's procedure "
            "deletes what uses the range, removes it from the connection, then deletes it (" + PSA_REMOVE_RANGE + ")"
        )
    return ""


def kubeconfig_cluster_changed(old_inputs: dict, new_inputs: dict, old_cluster: str, new_cluster: str) -> bool:
    """pulumi-kubernetes DiffConfig (provider.go:486-502, :553): a provider whose clusterIdentifier is set before and
    after is replaced only when it changes (the rule above); otherwise a changed active cluster of the kubeconfig
    (server, CA) replaces it. `old_cluster`/`new_cluster`: a digest of the kubeconfig's active cluster."""
    old_id, new_id = old_inputs.get("clusterIdentifier"), new_inputs.get("clusterIdentifier")
    if old_id and new_id:
        return False
    return bool(old_cluster and new_cluster and old_cluster != new_cluster)


ABSENT = "(absent)"  # synth/compare.py's marker of a side where a field does not exist
_INDEX = re.compile(r"\[\d+\]")


def normalize(path: str) -> str:
    """`nodeConfig.guestAccelerators[0].type` -> `nodeConfig.guestAccelerators[*].type`."""
    return _INDEX.sub("[*]", path)


def _under(path: str, rule_path: str) -> bool:
    return path == rule_path or path.startswith(rule_path + ".") or path.startswith(rule_path + "[")


def get_path(value: Any, path: str) -> Any:
    """The value at a dotted path with `[i]` indexes; None where it does not exist."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            i = int(part[1:-1])
            value = value[i] if isinstance(value, list) and i < len(value) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


def _is_expansion(old: Any, new: Any) -> bool:
    try:
        return ipaddress.ip_network(str(new)).supernet_of(ipaddress.ip_network(str(old)))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return False


def rules_for(type_token: str) -> tuple[FieldRule, ...]:
    if type_token.startswith("kubernetes:"):
        return _K8S_EVERY_KIND + K8S_REPLACE_ONLY.get(type_token.split(":", 1)[1], ())
    return REPLACE_ONLY.get(type_token, ())


def triggered(
    type_token: str, path: str, old_inputs: dict, new_inputs: dict, old: Any = None, new: Any = None
) -> Optional[FieldRule]:
    """The rule a changed leaf at `path` (`old -> new`) triggers, or None for a plain in-place update.
    `replace` rules win over `recreates-nodes`."""
    norm = normalize(path)
    found: Optional[FieldRule] = None
    for rule in rules_for(type_token):
        if not _under(norm, rule.path):
            continue
        if rule.kind == "replace-if-block-toggles":
            # Block rules name un-indexed blocks (placementPolicy, nodeConfig).
            if (get_path(old_inputs, rule.path) is None) == (get_path(new_inputs, rule.path) is None):
                continue
        elif rule.kind == "replace-unless-expansion" and _is_expansion(old, new):
            continue
        elif rule.kind == "replace-when-changed" and (old is None or new is None or old == ABSENT or new == ABSENT):
            continue
        elif rule.kind == "replace-when-disabled" and not (old is True and new in (False, ABSENT, None)):
            continue
        if rule.kind != "recreates-nodes":
            return rule
        found = found or rule
    return found


# pulumi-kubernetes does not wait for the deletion of these kinds when they carry `pulumi.com/skipAwait: "true"`
# (provider/pkg/metadata/overrides.go:168-209 `allowsSkipAwaitWithDelete`, pulumi/pulumi-kubernetes#3154), and
# deletes with Foreground propagation unless `pulumi.com/deletionPropagationPolicy` says otherwise
# (overrides.go:68-79; annotations.go:41): the object lingers until its pods are gone, so the same-name create of
# a delete-first replacement meets it (409 AlreadyExists).
SKIP_AWAIT_DELETE_KINDS = frozenset(
    {"core/v1:Namespace", "core/v1:Pod", "core/v1:ReplicationController", "apps/v1:DaemonSet", "apps/v1:Deployment"}
    | {"apps/v1:StatefulSet", "batch/v1:Job"}
)
DELETION_PROPAGATION_ANNOTATION = "pulumi.com/deletionPropagationPolicy"


def unawaited_delete(type_token: str, inputs: dict) -> str:
    """Why a delete-first replacement of this object meets the object it deletes, or "" when it does not."""
    if not type_token.startswith("kubernetes:") or type_token.split(":", 1)[1] not in SKIP_AWAIT_DELETE_KINDS:
        return ""
    annotations = (inputs.get("metadata") or {}).get("annotations") or {}
    if str(annotations.get("pulumi.com/skipAwait", "")).lower() != "true":
        return ""
    if str(annotations.get(DELETION_PROPAGATION_ANNOTATION, "")).lower() in ("background", "orphan"):
        return ""
    return (
        "skipAwait: its deletion is not awaited and Foreground propagation keeps the object until its pods are "
        "gone (pulumi-kubernetes overrides.go:68-79, :168-209)"
    )


# --- adopting what a `lustreOnDestroy: retain` destroy kept ---------------------------------------------------
# The ids the provider records (TPGB `d.SetId` templates), so an `import_` of a kept resource equals its id and a
# later `up` does not plan an import-replacement (pulumi/pulumi#23834, fixed in CLI 3.252.0). The engine refuses
# to replace an imported resource ("previously-imported resources that still specify an ID may not be replaced",
# pulumi step_generator.go:1993): a kept instance whose replace-only fields differ from the settings is refused.
IMPORT_IDS: dict[str, tuple[str, str]] = {
    "gcp:compute/network:Network": (
        "projects/{project}/global/networks/{name}",
        TPGB + "compute/resource_compute_network.go:437",
    ),
    "gcp:compute/globalAddress:GlobalAddress": (
        "projects/{project}/global/addresses/{name}",
        TPGB + "compute/resource_compute_global_address.go:390",
    ),
    "gcp:compute/firewall:Firewall": (
        "projects/{project}/global/firewalls/{name}",
        TPGB + "compute/resource_compute_firewall.go:699",
    ),
    "gcp:lustre/instance:Instance": (
        "projects/{project}/locations/{zone}/instances/{name}",
        TPGB + "lustre/resource_lustre_instance.go:764",
    ),
    # url.QueryEscape(network) + ":" + url.QueryEscape(service), network being the network's id.
    "gcp:servicenetworking/connection:Connection": (
        "{network_escaped}:{service}",
        TPGB + "servicenetworking/resource_service_networking_connection.go:402-404",
    ),
}


def import_id(type_token: str, **fields: str) -> str:
    """The provider's id of an existing resource, to adopt it with the `import_` resource option."""
    from urllib.parse import quote

    if "network" in fields:
        fields["network_escaped"] = quote(fields["network"], safe="")
    return IMPORT_IDS[type_token][0].format(**fields)
