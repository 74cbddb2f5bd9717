"""A team platform: experiments in namespaces of their own on the platform's cluster and Lustre instance. Facts the
program builds them from, each with its source (the decision and its evidence: docs/security.md "Experiments on one
platform").
"""

from __future__ import annotations

# --- One Lustre instance, one PV per experiment -----------------------------------------------------------------
# The Lustre CSI driver stages a filesystem once per node and refuses a second staging of the same filesystem name
# there: NodeStageVolume returns at once when the staging path is already mounted and otherwise fails with
# AlreadyExists "A mountpoint with the same lustre filesystem name ... already exists on node" when any mount of that
# filesystem exists (GoogleCloudPlatform/lustre-csi-driver pkg/csi_driver/node.go @89f1eb73 NodeStageVolume L96,
# :166-183; hasMountWithSameFSName :613-630). Kubernetes stages a CSI volume at a path derived from its volumeHandle
# since v1.24 (`plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount`, kubernetes/kubernetes#107065,
# fixing #105899: two PVs of one volumeHandle failed on one node), so several PVs with the SAME volumeHandle share one
# staging mount and each pod gets a bind mount of it (NodePublishVolume, node.go :236-330). A PV per experiment
# therefore repeats the platform PV's volumeHandle; per-experiment directories come from the pods' `subPath`.
LUSTRE_SHARED_VOLUME_HANDLE_SOURCE = (
    "lustre-csi-driver@89f1eb73 pkg/csi_driver/node.go:96-183,613-630; kubernetes/kubernetes#107065 (v1.24)"
)
# Where on the volume each experiment's directories are: core/lustre_paths.py.

# --- Admission -----------------------------------------------------------------------------------------------------
# ValidatingAdmissionPolicy and its binding: admissionregistration.k8s.io/v1, stable in Kubernetes 1.30
# ("FEATURE STATE: Kubernetes v1.30 [stable]", kubernetes.io/docs/reference/access-authn-authz/
# validating-admission-policy/). Every cluster here is newer: the RayOperator floor is 1.30.0-gke.1747000
# (core/catalog/gke.py), and the GPU types' floors are later still.
VALIDATING_ADMISSION_POLICY_API = "admissionregistration.k8s.io/v1"
VALIDATING_ADMISSION_POLICY_MIN_GKE = "1.30"
# The label on every experiment namespace: the policy's binding selects by it and its CEL reads the experiment name
# from it (`namespaceObject`, available to a ValidatingAdmissionPolicy's expressions for namespaced objects).
EXPERIMENT_NAMESPACE_LABEL = "nemo-rl-gke/experiment"

# --- People ----------------------------------------------------------------------------------------------------
# Google Groups for RBAC: the cluster's authenticatorGroupsConfig names a group that must be called
# gke-security-groups@<your domain>, with the groups used in RoleBindings as its members (GKE "Configure Google
# Groups for RBAC", https://cloud.google.com/kubernetes-engine/docs/how-to/google-groups-rbac; the provider's own
# description: "Group name must be in format gke-security-groups@yourdomain.com",
# terraform-provider-google-beta@93c65b2d container/resource_container_cluster.go:1215-1230).
GKE_SECURITY_GROUP_LOCAL_PART = "gke-security-groups"
# The least Google Cloud role that lets an experimenter's kubectl (and `pulumi up`) reach the cluster, everything
# inside it then decided by Kubernetes RBAC: Kubernetes Engine Cluster Viewer, "get and list access to GKE clusters"
# (container.clusters.get, which gke-gcloud-auth-plugin and get-credentials need; GKE "Create IAM allow policies",
# https://cloud.google.com/kubernetes-engine/docs/how-to/iam, and "Authorize actions in clusters using role-based
# access control", https://cloud.google.com/kubernetes-engine/docs/role-based-access-control). Through GKE's
# DNS-based endpoint the call also needs container.clusters.connect (GKE "About network isolation",
# https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation): check that the role grants it on your
# project with `gcloud iam roles describe roles/container.clusterViewer`.
EXPERIMENTER_CLUSTER_ROLE = "roles/container.clusterViewer"
# What an experiment stack's `pulumi up` does in Cloud Storage (infra/experiment_export.py): create its managed
# folder and set its IAM policy, and add the bucket-level listing binding for its export identity: Storage Folder
# Admin (managedFolders.*) under an IAM condition naming its managed folder, plus the bucket's getIamPolicy /
# setIamPolicy (IAM conditions: https://cloud.google.com/iam/docs/conditions-overview, Cloud Storage resource names
# in conditions: https://cloud.google.com/iam/docs/conditions-resource-attributes).
EXPERIMENTER_FOLDER_ROLE = "roles/storage.folderAdmin"

# --- Experimenters in Kubernetes RBAC ---------------------------------------------------------------------------------
RBAC_API_GROUP = "rbac.authorization.k8s.io"
# What pulumi-kubernetes does with an object it manages: create, read for its await logic (get, and list + watch:
# its awaiters run dynamic informers, await.go:48, :96-99), server-side apply and previews as patches, replace as
# update, delete (pulumi-kubernetes@v4.32.0 provider/pkg/await/await.go Creation :153, Read :376, Update :454,
# Deletion :933).
PULUMI_MANAGES = ("create", "delete", "get", "list", "patch", "update", "watch")
READ_ONLY = ("get", "list", "watch")
