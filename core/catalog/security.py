"""Security facts: token files, Ray token authentication and the KubeRay that can send it, who may reach Ray,
what leaves the namespace, Pod Security, least privilege. Research and sources: docs/research/harden.md,
docs/research/harden2.md.
"""

from __future__ import annotations

import math

from core.catalog.gke import KUBERNETES_MINOR
from core.catalog.pins import ImagePin
from core.catalog.startup import NOMINAL_IMAGE_BYTES, NOMINAL_IMAGE_PULL_BYTES_PER_S, NOMINAL_RAY_START_SECONDS

# --- Hardening: token files, Ray token auth, network peers ----------------------------------------------------
# Research and sources in full: docs/research/harden.md.
# Hugging Face: huggingface_hub reads the token from the file named by HF_TOKEN_PATH from 0.23.0, but HF_TOKEN in
# the environment takes precedence (huggingface/huggingface_hub src/huggingface_hub/utils/_auth.py, `_get_token_from_
# environment` before `_get_token_from_file`; constants.py HF_TOKEN_PATH; docs/research/harden.md §2).
HF_TOKEN_PATH_MIN_HUB = "0.23.0"
# W&B: wandb reads the netrc file named by NETRC (wandb/wandb wandb/sdk/lib/apikey.py; docs/research/harden.md §2);
# the entry is for the API host the client logs in to.
WANDB_NETRC_MACHINE = "api.wandb.ai"

# Ray token authentication: RAY_AUTH_MODE=token from Ray 2.52.0; the token comes from RAY_AUTH_TOKEN (env), else
# the file named by RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token; it must be configured on every node
# (docs.ray.io ray-security/token-auth.html; ray-core/internals/token-authentication.html).
RAY_TOKEN_AUTH_MIN_RAY = "2.52.0"
# KubeRay's `spec.authOptions` (the operator generates the token and sends it on its own dashboard calls) exists
# from KubeRay 1.5.1 (release notes v1.5.1); it is in the 1.7.0 CRD and not in the 1.4.2 CRD we validate against.
KUBERAY_AUTH_OPTIONS_MIN = "1.5.1"


def ray_version_at_least(version: str, floor: str) -> bool:
    """'2.55.1' >= '2.52.0' on numeric components."""

    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    return parts(version) >= parts(floor)


def ray_supports_token_auth(ray_version: str) -> bool:
    return ray_version_at_least(ray_version, RAY_TOKEN_AUTH_MIN_RAY)


# Ports KubeRay gives the head (ray-project/kuberay ray-operator/controllers/ray/utils/constant.go
# @000cda4d41d7d55698a14a1ba0f514c6ae5717ee: DefaultDashboardPort 8265, DefaultMetricsPort 8080 — KubeRay passes
# --metrics-export-port=8080 to every Ray node unless rayStartParams say otherwise).
RAY_DASHBOARD_PORT = 8265
RAY_METRICS_PORT = 8080

# Google Managed Prometheus: the managed collectors run as a DaemonSet in this namespace on GKE and scrape only
# targets on their own node (cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed).
GMP_NAMESPACE = "gke-gmp-system"

# Where the GKE add-on's KubeRay operator reaches the head's dashboard from. GKE hosts the operator outside the
# user cluster (GKE "About Ray on GKE": "installs and hosts"; kuberay issue #3115 / PR #5151: no in-cluster
# Deployment), so it calls the dashboard through the API server's services/proxy subresource (kuberay PR #1980,
# `useKubernetesProxy`), and GKE's API server enters the cluster through the konnectivity agents in kube-system
# (verified on a live GKE cluster by a public infrastructure repository's notes; docs/research/harden.md §1).
KUBE_SYSTEM_NAMESPACE = "kube-system"
KONNECTIVITY_AGENT_LABELS = {"k8s-app": "konnectivity-agent"}

# --- Security, round two: who reaches Ray, what leaves the namespace, least privilege ---------------------------
# Research and sources in full: docs/research/harden2.md. Read 2026-12.

# Ray: "anybody who can access the associated ports can execute arbitrary code on your Ray Cluster" (Ray
# security docs). Ray < 2.52.0 lets any web page a user opens reach the Jobs API of a port-forwarded dashboard
# (CVE-2025-62593, browser-based RCE); Ray < 2.54.0 answers an unauthenticated job DELETE (CVE-2026-27482).
RAY_BROWSER_RCE_FIXED = "2.52.0"
RAY_JOB_DELETE_FIXED = "2.54.0"
# Ray ports besides the dashboard: every Ray pod's dashboard agent (job submission through the agent), GCS, Ray
# Client (KubeRay's defaults, ray-operator/controllers/ray/utils/constant.go).
RAY_DASHBOARD_AGENT_PORT = 52365
RAY_GCS_PORT = 6379
RAY_CLIENT_PORT = 10001
# KubeRay's names for the head's ports (constant.go: DashboardPortName, ClientPortName; the same at v1.4.2 and
# v1.7.0): the head Service's port names, which a Service or Ingress may name instead of a number. The policy pack's
# `ray-ports-not-exposed` refuses exposing either (tests/oracles/kuberay/constant-ports.go.txt).
RAY_DASHBOARD_PORT_NAME = "dashboard"
RAY_CLIENT_PORT_NAME = "client"

# Ray token authentication and the operator (ray-project/kuberay at the tags, read with git):
# - KubeRay 1.4.2 has no `authOptions` (absent from its RayCluster CRD and Go types): its dashboard client sends
#   no token, so a token-protected dashboard answers its status and StopJob calls with 401.
# - 1.5.1 adds `authOptions.mode: token`; the operator generates a Secret `<cluster>` (key `auth_token`) and
#   injects RAY_AUTH_TOKEN into the Ray containers as an env var from that Secret
#   (ray-operator/controllers/ray/common/pod.go SetContainerTokenAuthEnvVars @v1.5.1).
# - 1.6.0 adds `authOptions.secretName`: the operator then uses the user's Secret (key `auth_token`) for its own
#   dashboard calls (utils/util.go GetRayDashboardClientFunc @v1.6.0, @v1.7.0) and injects RAY_AUTH_TOKEN only
#   into containers that do not already define it (`if !utils.EnvVarExists(RAY_AUTH_TOKEN_ENV_VAR, ...)`, pod.go
#   @v1.6.0/@v1.7.0; the same function sets the K8sJobMode submitter, rayjob_controller.go
#   configureSubmitterContainer @v1.7.0, and the wait-gcs-ready init container copies the Ray container's env).
# - Ray's token loader skips an empty RAY_AUTH_TOKEN and reads RAY_AUTH_TOKEN_PATH next
#   (src/ray/rpc/authentication/authentication_token_loader.cc at ray-project/ray 934e8d7a and 03864b87, the
#   versions before and after 2.55; `if (!token_str.empty())`), so a container that defines RAY_AUTH_TOKEN=""
#   keeps the token out of its environment and still authenticates from the file.
# Google does not publish which KubeRay its hosted add-on runs (docs/research/harden.md §1): a stack on the add-on
# may meet 1.4.2, so it never turns token auth on; a stack that wants token auth installs this KubeRay itself.
KUBERAY_AUTH_SECRET_NAME_MIN = "1.6.0"
KUBERAY_AUTH_TOKEN_SECRET_KEY = "auth_token"
# The KubeRay the program installs with `kubeRayOperator: helm`: its Helm chart at the tag, kept in the
# repository (charts/kuberay-operator, see its SOURCES.md); its CRDs are the schemas/kuberay-v1.7.0 copies.
KUBERAY_HELM_CHART_VERSION = "1.7.0"
KUBERAY_HELM_CHART_DIR = "charts/kuberay-operator"
KUBERAY_OPERATOR_NAMESPACE = "kuberay-system"
# The chart's Deployment labels its pods app.kubernetes.io/name: {{ kuberay-operator.name }} (nameOverride
# kuberay-operator in values.yaml @v1.7.0).
KUBERAY_OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}
# The operator image the chart pins (values.yaml image.tag @v1.7.0). Digest: as pinned, with the v1.7.0 source
# commit 59d663ae, by skyhook-io/radar scripts/kuberay-demo/README.md ("Exact pins", commit 7f65f74a; exact-string
# search of the code index, 2026-12).
KUBERAY_OPERATOR_IMAGE_PIN = ImagePin(
    "quay.io/kuberay/operator",
    "v1.7.0",
    "sha256:4a779237ef1c5262a63840ccf42d0d67f0b74e911158fbcaee4478fb1560bce6",
    "skyhook-io/radar scripts/kuberay-demo/README.md @7f65f74a pins this digest for quay.io/kuberay/operator:v1.7.0",
)

# KubeRay 1.7.0 fails a RayJob whose dashboard status checks keep failing for RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
# (default 300; the chart's values.yaml @v1.7.0 documents the variable; rayjob_controller.go @v1.7.0 59d663ae
# checkJobStatusCheckTimeoutAndUpdateStatusIfNeeded, L1336-1355, reads it through getJobStatusCheckTimeoutSeconds,
# L1288-1294, from the operator's environment; absent from every tag before v1.7.0). The failure reason,
# JobStatusCheckTimeoutExceeded, is never retried (checkBackoffLimitAndUpdateStatusIfNeeded, tests/oracles/kuberay), and
# with shutdownAfterJobFinishes the GPU cluster then goes. The checks fail whenever the head's dashboard is away: a head
# pod rescheduled onto a new CPU node (the cluster autoscaler gives a node up to max-node-provision-time, 15 min:
# ATTEMPT_CAPACITY_WAIT_SECONDS' source) that pulls the 20-30 GB NeMo-RL image cold and starts Ray. The operator this
# program installs waits twice that long before it gives a run up; a head that stays away longer has lost the run's Ray
# job anyway (no GCS fault tolerance), and activeDeadlineSeconds and the submitter (workloads/manifests/rayjob.py) end
# the RayJob on their own terms.
KUBERAY_STATUS_CHECK_TIMEOUT_ENV = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"
KUBERAY_STATUS_CHECK_TIMEOUT_DEFAULT = 300
KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS = 60 * math.ceil(
    2
    * (
        15 * 60
        + NOMINAL_IMAGE_BYTES.seconds / NOMINAL_IMAGE_PULL_BYTES_PER_S.seconds
        + NOMINAL_RAY_START_SECONDS.seconds
    )
    / 60
)

# GKE FQDN network policies (networking.gke.io/v1alpha1 FQDNNetworkPolicy): GKE >= 1.26.4-gke.500 / 1.27.1-gke.400,
# Dataplane V2, kube-dns or Cloud DNS; at most 50 IP addresses resolved per policy, 100 per hostname; a Service's
# ClusterIP cannot be a destination (GKE "Control Pod egress traffic using FQDN network policies",
# kubernetes-engine/docs/how-to/fqdn-network-policies). No extra licence: enabling the GKE API "gives you access
# to ... FQDN network policies" (GKE "Features available on each environment", docs.cloud.google.com/anthos/
# clusters) and "GKE Enterprise features are now available without an Enterprise tier" (container v1 API,
# EnterpriseConfig.ClusterTier). Enabling it on an existing Standard cluster needs a restart of the anetd
# DaemonSet (pulumi-gcp 10.2.0 Cluster.enable_fqdn_network_policy docstring).
FQDN_POLICY_MIN_GKE = "1.27.1-gke.400"
FQDN_POLICY_API_VERSION = "networking.gke.io/v1alpha1"
FQDN_POLICY_KIND = "FQDNNetworkPolicy"
FQDN_POLICY_MAX_ADDRESSES = 50

# Where pods resolve names: kube-dns pods in kube-system (GKE Standard's default provider), or Cloud DNS, which
# answers on the metadata address 169.254.169.254:53 (Autopilot's provider; docs/research/harden2.md). Both are allowed:
# Dataplane V2 evaluates policy after the Service VIP is translated to the kube-dns pods.
KUBE_DNS_LABELS = {"k8s-app": "kube-dns"}
CLOUD_DNS_ADDRESS = "169.254.169.254/32"
DNS_PORT = 53
# NodeLocal DNSCache (GKE "Set up NodeLocal DNSCache", kubernetes-engine/docs/how-to/nodelocal-dns-cache, read
# 2026-12): a DaemonSet `node-local-dns` in kube-system that answers the pods of its node; "In GKE Autopilot
# clusters, NodeLocal DNSCache is enabled by default, and you can't disable it"; on Standard it is on by default
# from 1.33.1 (the English page; its Korean copy says 1.34.1-gke.3720000) and can be turned off. The cache listens
# on the link-local 169.254.20.10 (kubernetes/kubernetes cluster/addons/dns/nodelocaldns: `__PILLAR__LOCAL__DNS__`
# "169.254.20.10 by default"); its pods carry `k8s-app: node-local-dns`. Which of the two a pod's query meets
# under Dataplane V2 (the address, or the cache pod the query is redirected to) differs between public reports
# (restatedev/restate-operator PR 88 fixed GKE Autopilot with the address; cilium/cilium-cli PR 995 admits the pods
# for Cilium's redirect), so every DNS rule admits both; where the cache is off neither answers.
NODE_LOCAL_DNS_ADDRESS = "169.254.20.10/32"
NODE_LOCAL_DNS_LABELS = {"k8s-app": "node-local-dns"}
# The GKE metadata server, for pods that need Google credentials (Workload Identity tokens): Dataplane V2 clusters
# at 169.254.169.254 TCP 80 and 8080, Calico clusters at 169.254.169.252 TCP 987 and 988. GKE's own page was not
# in the search corpora; public network policies written for GKE Workload Identity agree on these pairs (code
# index, 2026-12). Both pairs reach only the node's metadata server.
METADATA_SERVER_EGRESS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("169.254.169.254/32", (80, 8080)),
    ("169.254.169.252/32", (987, 988)),
)
# Hosts outside the cluster, by what needs them.
GOOGLE_STORAGE_HOSTS = ("storage.googleapis.com",)  # the export's GCS FUSE sidecar; W&B's file uploads
WANDB_HOSTS = ("api.wandb.ai",)  # the netrc machine and wandb's default base URL
PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")  # pip's index and its files (the prefetch's install)
# Hugging Face downloads: the API host, then the redirects a download follows. Hugging Face publishes its domains
# at https://huggingface.co/.well-known/meta.json (hubDomains, lfsDomains, cdnDomains; read 2026-12); real
# downloads redirect to cdn-lfs*.hf.co (LFS), cas-bridge.xethub.hf.co and <region>.<provider>.cdn.hf.co (Xet
# bridge), and hf-xet talks to cas-server.xethub.hf.co and transfer.xethub*.hf.co (public allowlists and
# download logs, code index 2026-12). One group per policy: FQDN_POLICY_MAX_ADDRESSES is per policy.
HF_HOST_GROUPS: dict[str, tuple[str, ...]] = {
    "hub": ("huggingface.co", "hf.co"),
    "lfs": ("cdn-lfs.hf.co", "cdn-lfs-us-1.hf.co", "cdn-lfs-eu-1.hf.co"),
    "xet": ("cas-server.xethub.hf.co", "cas-bridge.xethub.hf.co", "transfer.xethub.hf.co", "transfer.xethub-eu.hf.co"),
    "cdn-aws": ("aws.cdn.hf.co", "*.aws.cdn.hf.co"),
    "cdn-gcp": ("*.gcp.cdn.hf.co", "*.*.gcp.cdn.hf.co"),
}
HTTPS_PORT = 443
# Private and special ranges a "public HTTPS" fallback rule excludes (RFC 1918, RFC 6598 shared space, link-local).
NON_PUBLIC_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")

# Pod Security Admission (kubernetes.io/docs/concepts/security/pod-security-admission; the Pod Security
# Standards): `baseline` forbids hostPath volumes, so the GPU workers, which mount the host's NVIDIA and gIB
# libraries read-only as Google's own NCCL test pods do, need `privileged`; everything else is held to
# `restricted` where it can be and reported against it (warn, audit) where it cannot.
PSA_LABEL_PREFIX = "pod-security.kubernetes.io"
PSA_LEVELS = ("privileged", "baseline", "restricted")
PSA_VERSION = f"v{KUBERNETES_MINOR}"
# An unprivileged user that exists in every image; pods that can run as non-root use it (also as fsGroup, so the
# token files mounted 0440 are readable).
NOBODY_UID = 65534

# The nodes' service account: roles/container.defaultNodeServiceAccount is GKE's documented minimum
# (kubernetes-engine/docs/how-to/service-accounts, "Grant the minimum required role for GKE"); it carries the
# logging, monitoring and metadata permissions the nodes need. Images from nvcr.io and Google's public gIB and
# pause repositories need no IAM role; a stack's own Artifact Registry copy (`imagePath: streaming`) gets
# roles/artifactregistry.reader on that repository only.
NODE_SERVICE_ACCOUNT_MINIMUM_ROLE = "roles/container.defaultNodeServiceAccount"
ARTIFACT_REGISTRY_READER_ROLE = "roles/artifactregistry.reader"

# Node upgrades: a NO_MINOR_OR_NODE_UPGRADES exclusion also holds back node patch versions, security fixes
# included. The program bounds an exclusion to a window the user opens for a run; 30 days is the limit GKE itself
# puts on its strictest scope (NO_UPGRADES: "up to 30 days", GKE "Maintenance windows and exclusions").
MAINTENANCE_EXCLUSION_MAX_DAYS = 30

# Cloud Storage soft delete: on by default with 7 days; 7 to 90 days, or 0 to turn it off (Cloud Storage "Soft
# delete"; pulumi-gcp 10.2.0 BucketSoftDeletePolicyArgs.retention_duration_seconds). Object Versioning is not
# used: the bucket has a hierarchical namespace, and soft delete protects deleted and overwritten objects alike.
SOFT_DELETE_MIN_DAYS = 7
SOFT_DELETE_MAX_DAYS = 90

# Bucket access for the export (its own Kubernetes service account): a managed folder named after the export
# prefix carries roles/storage.objectUser ("the access granted in the policy also applies to any object within
# that bucket that has the managed folder's name as a prefix", Cloud Storage "Managed folders"); the bucket
# itself grants object *listing* only, because Cloud Storage FUSE and its CSI driver check access with
# GetStorageLayout on the bucket, which needs storage.objects.list at bucket level (gcs-fuse-csi-driver
# pkg/cloud_provider/storage/storage.go CheckBucketExists @5fcdc04a). The listing grant is
# roles/storage.objectViewer restricted by an IAM condition to the bucket resource, where only list permissions
# are evaluated (object reads are evaluated on object resources).
# The data staging Job's read of a job's gs:// data (infra/data_access.py): the same role, restricted by one IAM
# condition to the bucket resource (the listing above) or the data's objects. An object's resource name in a condition
# is `projects/_/buckets/<bucket>/objects/<object>` (Cloud Storage "IAM permissions", Conditions:
# cloud.google.com/storage/docs/access-control/iam#conditions; Google's sample storage-add-bucket-conditional-iam-
# binding sets `resource.name.startsWith("projects/_/buckets/<bucket>/objects/<prefix>")`). Conditions need uniform
# bucket-level access on the bucket.
DATA_READ_ROLE = "roles/storage.objectViewer"
EXPORT_ROLE = "roles/storage.objectUser"
BUCKET_LIST_ROLE = "roles/storage.objectViewer"
BUCKET_RESOURCE_TYPE = "storage.googleapis.com/Bucket"
