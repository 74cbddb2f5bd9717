"""Kueue facts: the release the platform checks for (the cluster admin installs it), the API it serves, the labels a
job carries to be queued, and the integration rules our Ray objects must satisfy. Research and sources in full:
docs/research/kueue.md (kubernetes-sigs/kueue read with git at the tags named there; line numbers at v0.19.2 unless a
tag is named).
"""

from __future__ import annotations

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
# The program does not install Kueue (its release's manifests and chart could not be vendored: docs/research/
# kueue.md): the cluster admin installs a v0.19.x release, and the platform's preview reads Kueue's manager to check
# it (workloads/kueue.py). Any patch release of the minor: the API, the Ray integrations and the webhook rules the
# program is checked against (tests/oracles/kueue/) are the minor's.
KUEUE_SUPPORTED_MINOR = "v0.19"
KUEUE_NAMESPACE = "kueue-system"
# Both documented installs name the manager so: the release manifests (config/default/kustomization.yaml namePrefix
# `kueue-`, namespace kueue-system; config/components/manager/manager.yaml Deployment `controller-manager`, container
# `manager`) and the chart installed as release `kueue` (charts/kueue/templates/manager/manager.yaml:20
# `{{ include "kueue.fullname" . }}-controller-manager`, _helpers.tpl:29-40: the release name when it contains
# "kueue"), all @v0.19.2.
KUEUE_MANAGER_DEPLOYMENT = "kueue-controller-manager"
KUEUE_MANAGER_CONTAINER = "manager"
# What says which release runs: the manager's image tag (the release manifests: registry.k8s.io/kueue/kueue:<tag>;
# the chart: `<repository>:<tag | default .Chart.AppVersion>`, manager.yaml:60), or, for an image referenced by
# digest only, the chart's `app.kubernetes.io/version` label (_helpers.tpl:52-57, appVersion "v0.19.2" in Chart.yaml).
KUEUE_VERSION_LABEL = "app.kubernetes.io/version"
KUEUE_IMAGE_REPOSITORY = "registry.k8s.io/kueue/kueue"
# The documented installs (site/content/en/docs/getting-started/installation.md @v0.19.2, "Install a released
# version" :52-87, "Install a custom-configured released version" :135-197): the release's manifests.yaml applied
# server-side, or the chart from registry.k8s.io. The manager reads its Configuration from the ConfigMap
# `kueue-manager-config`, key `controller_manager_config.yaml` (config/components/manager/kustomization.yaml
# configMapGenerator `manager-config` + the `kueue-` prefix; the chart: templates/manager/manager-config.yaml from
# values `managerConfig.controllerManagerConfigYaml`), and applies a changed one after a restart of the Deployment
# (installation.md:272).
KUEUE_HELM_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_CHART_VERSION = KUEUE_VERSION.lstrip("v")
KUEUE_MANAGER_CONFIGMAP = "kueue-manager-config"
KUEUE_MANAGER_CONFIG_KEY = "controller_manager_config.yaml"
# The manager's own requests (config/components/manager/manager.yaml @v0.19.2): 500m CPU, 512 MiB, on the system
# pool (it tolerates no taint of ours and selects no pool).
KUEUE_MANAGER_REQUESTS = {"cpu": "500m", "memory": "512Mi"}
# The manager is Ready only once its certificates exist and its webhook server listens (cmd/kueue/main.go:628-650,
# `AddReadyzCheck` waits on certsReady, then the webhook server's StartedChecker): the documented install waits for
# the Deployment to be Available (installation.md:65 `kubectl wait ... --for=condition=available`; Helm `--wait`), so
# the objects the platform creates afterwards are admitted by Kueue's own webhooks.
# Kueue's batch/v1 Job defaulting webhook is registered with failurePolicy Fail for every namespace but kube-system
# and kueue-system (config/components/webhook/manifests.yaml mjob.kb.io, kustomization.yaml namespaceSelector
# replacements), whatever the integrations: while the manager is down no Job is created there (the prefetch and
# export Jobs, KubeRay's submitter Job). `managedJobsNamespaceSelector` does not narrow it: for the non-pod
# integrations it only modulates manageJobsWithoutQueueName (apis/config/v1beta2/configuration_types.go:55-70).

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
# Kueue manages only jobs that carry a queue name (manageJobsWithoutQueueName: false, Kueue's default): the prefetch,
# data staging, weights staging and export Jobs, GKE's own pods and everything else keep running as they do. Only the
# two Ray integrations are on; a RayJob's submitter Job is part of the RayJob's Workload (its own PodSet, kueue PR
# #3729), so the pod and batch/job integrations are not needed.
KUEUE_INTEGRATIONS = ("ray.io/rayjob", "ray.io/raycluster")
# A Kueue quota covers every resource a pod requests unless excluded ("resource X unavailable in ClusterQueue",
# pkg/scheduler/flavorassigner/flavorassigner.go:1071; the prefix match: pkg/workload/workload.go:463-473). Ephemeral
# storage is node-local (local SSDs on GPU nodes, the boot disk elsewhere) and is checked by the pod-fit rules, not
# shared quota.
KUEUE_EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage",)
# The namespaces whose LocalQueues may submit to the platform's ClusterQueue carry this label (the ClusterQueue's
# namespaceSelector): the platform's namespace and each experiment's (core/naming.py), set where they are created.
# A selector rather than a list of names, so that a new experiment namespace does not change the ClusterQueue.
KUEUE_QUEUE_NAMESPACE_LABEL = ("nemo-rl-gke/queue", "kueue")

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
