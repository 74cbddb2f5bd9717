"""Kueue facts: the release the platform installs, the API it serves, the labels a job carries to be queued, and
the integration rules our Ray objects must satisfy. Research and sources in full: docs/research/kueue.md
(kubernetes-sigs/kueue read with git at the tags named there; line numbers at v0.19.2 unless a tag is named).
"""

from __future__ import annotations

from core.catalog.pins import ImagePin

# --- The release -----------------------------------------------------------------------------------------------
# v0.19.2 (2026-08-20), commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb: the newest release; its RayJob and
# RayCluster integrations are built against KubeRay 1.6.2 (go.mod:23; 0.13/0.14: 1.4.2, 0.15/0.16: 1.5.1,
# 0.17-0.19: 1.6.2; none against 1.7.0), and every field we render on a Ray object (the 1.4.2 and 1.7.0 CRDs'
# common fields plus `authOptions`, KubeRay 1.5.1+) is a field of those Go types. Kueue's RayJob docs ask for
# KubeRay 1.1.0 or newer (site/content/en/docs/tasks/run/rayjobs.md:17), which both operators we run satisfy.
KUEUE_VERSION = "v0.19.2"
KUEUE_COMMIT = "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb"
KUEUE_KUBERAY_GO_MODULE = "1.6.2"  # go.mod:23 @v0.19.2
KUEUE_MIN_KUBERAY = "1.1.0"
KUEUE_NAMESPACE = "kueue-system"
# The chart (kubernetes-sigs/kueue charts/kueue at the tag) goes here, verbatim, with charts/SOURCES.md; not yet
# vendored (docs/research/kueue.md "What could not be vendored"): workloads/kueue.py refuses to install without it.
KUEUE_CHART_DIR = "charts/kueue"
KUEUE_CHART_VERSION = "0.19.2"  # charts/kueue/Chart.yaml version @v0.19.2
# The released chart points at registry.k8s.io/kueue/kueue:<tag>; the chart in the repository at the tag still
# names the staging image `release-0.19` with pullPolicy Always (values.yaml:47-55), so the program sets both.
# No public source states the digest of v0.19.2 (registry.k8s.io's promoter manifest, kubernetes/k8s.io
# registry.k8s.io/images/k8s-staging-kueue/images.yaml, was only found at versions up to v0.13.3): pinned by tag.
KUEUE_IMAGE_PIN = ImagePin(
    "registry.k8s.io/kueue/kueue",
    KUEUE_VERSION,
    "",
    "no public source found for the digest of v0.19.2 (the promoter manifest read lists up to v0.13.3)",
)
# The manager's own requests (values.yaml controllerManager.manager.resources @v0.19.2): 500m CPU, 512 MiB, on a
# CPU node (GPU nodes are tainted), for the node totals of the CPU pool.
KUEUE_MANAGER_REQUESTS = {"cpu": "500m", "memory": "512Mi"}
# The manager is Ready only once its certificates exist and its webhook server listens (cmd/kueue/main.go:628-650,
# `AddReadyzCheck` waits on certsReady, then the webhook server's StartedChecker): a Deployment that is Available
# serves its webhooks, so objects created after the Helm release (which waits for its Deployment) are admitted.

# --- API -------------------------------------------------------------------------------------------------------
# v1beta2 is the storage version of every Kueue CRD from v0.15.0 (the v1beta1 versions are served with
# storage: false; charts/kueue/templates/crd/*.yaml @v0.19.2); the objects the program renders use it.
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
KUEUE_QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"  # pkg/controller/constants/constants.go:23
KUEUE_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"  # pkg/controller/constants/constants.go:48
KUEUE_PROVISIONING_CONTROLLER = (
    "kueue.x-k8s.io/provisioning-request"  # docs concepts/admission_check/provisioning_request.md:53
)
# A Workload has at most 18 PodSets (pkg/controller/jobframework/constants.go:21): a RayJob's head, its worker groups
# and its K8sJobMode submitter each make one (rayjob_controller.go PodSets / addSubmitterPodSet), so at most 16 worker
# groups with a submitter. Kueue <= 0.17 refuses a queued RayCluster with more than 7 worker groups
# (raycluster_webhook.go validateCreate @0205cda7; tests/oracles/kueue/): the program renders one.
KUEUE_MAX_POD_SETS = 18
KUEUE_OLD_MAX_RAYCLUSTER_WORKER_GROUPS = 7
KUEUE_HEAD_POD_SET = "head"  # reserved: no worker group may be named so (raycluster/common.go ValidateCreate)
KUEUE_SUBMITTER_POD_SET = "submitter"  # rayjob_controller.go:50

# --- How the platform uses it ------------------------------------------------------------------------------------
# Kueue manages only jobs that carry a queue name (manageJobsWithoutQueueName: false): the prefetch and export Jobs,
# GKE's own pods and everything else keep running as they do. Only the two Ray integrations are on; a RayJob's
# submitter Job is part of the RayJob's Workload (its own PodSet, kueue PR #3729), so the pod integration is not
# needed. Kueue's batch/v1 Job webhook is registered with failurePolicy Fail even when that integration is off
# (charts/kueue/templates/webhook/manifests.yaml mjob.kb.io @v0.19.2), so managedJobsNamespaceSelector narrows every
# job webhook to the namespaces where experiments run: elsewhere nothing depends on Kueue being up.
KUEUE_INTEGRATIONS = ("ray.io/rayjob", "ray.io/raycluster")
# A Kueue quota covers every resource a pod requests unless excluded ("resource X unavailable in ClusterQueue",
# pkg/scheduler/flavorassigner/flavorassigner.go:1071; the prefix match: pkg/workload/workload.go:463-473). Ephemeral
# storage is node-local (local SSDs on GPU nodes, the boot disk elsewhere) and is checked by the pod-fit rules, not
# shared quota.
KUEUE_EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage",)
# Which namespaces Kueue's job webhooks serve (the chart's default excludes only kube-system and its own namespace).
KUEUE_NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# GPU nodes carry the taint key nvidia.com/gpu with effect NoSchedule (GKE "Run GPUs in GKE Standard node pools"),
# and our GPU workers tolerate it (workloads/manifests/raycluster.py). As the GPU flavor's nodeTaints it keeps the
# CPU pods (head, submitter) off the GPU flavor: Kueue assigns a flavor only if every taint is tolerated
# (flavorassigner.go:1239-1243). Only key and effect are rendered: the workers tolerate any value (Exists).
GPU_NODE_TAINT_KEY = "nvidia.com/gpu"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_NODE_LABEL = "cloud.google.com/gke-accelerator"

# Priorities: one WorkloadPriorityClass each; a Workload without the label gets priority 0 (Kueue
# `workloadPriorityClass` docs), so every queued object carries one (the label cannot be removed later, nor added
# to a running job: jobframework/validation.go:219-232 @v0.19.2). A higher value is admitted first, and with
# preemption `withinClusterQueue: LowerPriority` evicts running lower ones (docs/research/kueue.md "Priorities").
KUEUE_PRIORITY_CLASSES = {"low": 100, "normal": 1000, "high": 10000}
KUEUE_DEFAULT_PRIORITY = "normal"

# Flex-start with queued provisioning (GKE Dynamic Workload Scheduler): Kueue's ProvisioningRequest admission check
# with the GKE class below (kueue#2260's configuration, GKE "Deploy GPUs for batch and AI workloads with
# ProvisioningRequest"). With managedResources [nvidia.com/gpu] only PodSets that request or limit a GPU go into the
# request (provisioning/controller.go requiredPodSets/podUses, tests/oracles/kueue/): ours has exactly one (the GPU
# worker group), which GKE's one-PodSet-per-request rule (ray#57839) accepts.
GKE_QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
# ProvisioningRequestConfig retryStrategy defaults (schemas/kueue-v1beta2/provisioningrequestconfig_v1beta2.json):
# 3 retries from 60 s, at most 1800 s apart; once exhausted the Workload is deactivated and stays so until
# `.spec.active` is set true again (the DWS stall of kueue#5129 ends there).
KUEUE_PROVISIONING_RETRY_DEFAULTS = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
