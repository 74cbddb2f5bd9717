"""Time to the first training step: the GPU warmup, image streaming, the prefetch runtime, Cloud Storage FUSE
writes, and the one table of nominal durations the critical-path report, its bound and docs/performance.md use
(NOMINAL_TABLE; figures marked "nominal estimate" have no published source, and the report prints them as such).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.catalog.gke import API_PROPAGATION_WAIT
from core.catalog.pins import ImagePin

# --- GPU warmup ---------------------------------------------------------------------------------------
# Pods with a priority below the cluster autoscaler's --expendable-pods-priority-cutoff (default -10) "don't
# cause scale up" (kubernetes/autoscaler cluster-autoscaler/main.go, flag help). The placeholders must bring
# GPU nodes up, so their priority is exactly the cutoff: the lowest value that still scales. Ray pods run at
# the default priority 0 and preempt them (GKE "Provision extra compute capacity for rapid Pod scaling").
AUTOSCALER_EXPENDABLE_PRIORITY_CUTOFF = -10
WARMUP_PRIORITY = AUTOSCALER_EXPENDABLE_PRIORITY_CUTOFF
# Pinned pause image for the CPU pre-pull DaemonSet's long-running container (Kubernetes' own pause image), by
# digest: the multi-arch index as pinned by Cilium's curl test image Dockerfile and several other public manifests
# (`registry.k8s.io/pause:3.10@sha256:ee6521f2...`, exact-string search of the code index, 2026-12).
PAUSE_IMAGE_PIN = ImagePin(
    "registry.k8s.io/pause",
    "3.10",
    "sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
    "Cilium's curl test image Dockerfile and other public manifests pin this index digest",
)
PAUSE_IMAGE = f"{PAUSE_IMAGE_PIN.repo}:{PAUSE_IMAGE_PIN.tag}@{PAUSE_IMAGE_PIN.digest}"

# --- Image streaming (`imagePath: streaming`) ------------------------------------------------------------
# GKE "Use Image streaming to pull container images" (cloud.google.com/kubernetes-engine/docs/how-to/
# image-streaming; EN and zh-cn copies, 2026-11; docs/research/ttfs.md §6): the Container File System API; the
# Container-Optimized OS with containerd node image ("Autopilot nodes always use this node image"); images in an
# Artifact Registry standard or remote repository (nvcr.io itself is not eligible); Private Google Access for
# private nodes (the primary subnet has it); a node service account other than the default needs
# roles/serviceusage.serviceUsageConsumer in the project hosting the image. Version floors from the same page:
# "New and existing GKE Standard clusters must run version 1.18.6-gke.4801 or later"; Autopilot clusters from
# 1.25.5-gke.1000 "automatically use Image streaming to pull eligible images" (no setting).
IMAGE_STREAMING_API = "containerfilesystem.googleapis.com"
IMAGE_STREAMING_NODE_IMAGE = "COS_CONTAINERD"
IMAGE_STREAMING_MIN_GKE_STANDARD = "1.18.6-gke.4801"
IMAGE_STREAMING_MIN_GKE_AUTOPILOT = "1.25.5-gke.1000"
IMAGE_STREAMING_NODE_ROLE = "roles/serviceusage.serviceUsageConsumer"
# Artifact Registry Docker repository paths: LOCATION-docker.pkg.dev/PROJECT-ID/REPOSITORY/IMAGE (Artifact
# Registry "Integrate with GKE": `--image=LOCATION-docker.pkg.dev/PROJECT-ID/REPOSITORY/IMAGE`). Project IDs:
# 6-30 lowercase letters, digits or hyphens, starting with a letter, not ending with a hyphen (Resource Manager
# "Creating and managing projects"); repository IDs: lowercase letters, digits and hyphens, starting with a
# letter and ending with a letter or digit (the rule Terraform modules for Artifact Registry validate; Google's
# own wording was not found).
ARTIFACT_REGISTRY_REPO_RE = (
    r"(?P<location>[a-z]+(?:-[a-z]+[0-9]*)?)-docker\.pkg\.dev/"
    r"(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9])/(?P<repository>[a-z](?:[a-z0-9-]*[a-z0-9])?)"
)
# Artifact Registry's multi-regions: "a large geographic area, such as Asia or the United States"
# (cloud.google.com/artifact-registry/docs/repositories/repo-locations; location IDs us, europe, asia).
ARTIFACT_REGISTRY_MULTI_REGIONS = frozenset({"us", "europe", "asia"})
NEMO_RL_IMAGE_NAME = "nemo-rl"  # the image's name under a repository copy: <repository>/nemo-rl:<tag>

# --- The copy in the stack's Artifact Registry, made by the graph (`imagePath: streaming`) ------------------------
# Why a copy into a standard repository, made at the start of the graph, and not the alternatives (docs/performance.md
# "The image where the nodes are"):
# - GKE streams from "an Artifact Registry standard or remote repository" (the image-streaming page above), but the
#   benefit needs the image in the streaming cache: "during the first pull of an eligible image you might not notice
#   the benefits" (same page). Artifact Registry "Reduce latency with image prewarming"
#   (https://docs.cloud.google.com/artifact-registry/docs/prewarm-images, read 2026-12): the cache "typically
#   populates on the first pull from a client that has image streaming enabled"; the Prewarm Artifact API fills it
#   ahead of time ("GKE only"; one version or tag per request; REST, and `gcloud artifacts image-streaming-cache
#   create` in newer SDKs). So the copy is followed by a prewarm, both before the first GPU node boots.
# - A remote repository fronting nvcr.io (RemoteRepositoryConfig common_repository.uri, the layout
#   `<repo>/nvidia/nemo-rl:<tag>` of GoogleCloudPlatform/cluster-toolkit community/modules/container/
#   artifact-registry/README.md at c9ec0265) would spare the copy, but it fills its cache on the first pull ("The
#   first time that you request a version of a package, Artifact Registry downloads and caches the package",
#   https://docs.cloud.google.com/artifact-registry/docs/repositories/remote-repo), no page says that NGC's public
#   images are served through it without upstream credentials, and none that prewarm accepts a remote tag not yet
#   cached: the first GPU node would still pull cold, unless a job pulled through it first, which is the same
#   early job as the copy.
# - A secondary boot disk (GKE "Use secondary boot disks to preload data or container images") needs a VM-built
#   disk image per release, a new node pool per disk image (`secondary_boot_disks` is ForceNew:
#   terraform-provider-google-beta@93c65b2d google-beta/services/container/node_config.go:513-535), is Persistent
#   Disk of the boot disk's type while A4 / A3 Ultra boot from Hyperdisk (no source says it works there).
# Where the copy runs: a Cloud Run job, which needs only the APIs (no cluster), so it starts with the graph. The
# provider waits for its execution: "run_execution_token: ... The Job will become ready when the execution is
# successfully completed" (pulumi_gcp 10.2.0 cloudrunv2/job.py; terraform-provider-google-beta@93c65b2d
# google-beta/services/cloudrunv2/resource_cloud_run_v2_job.go:795-801), and "The sum of job name and token length
# must be fewer than 63 characters" (same lines).
IMAGE_COPY_APIS = ("run.googleapis.com", "artifactregistry.googleapis.com")
# The copy tool: gcrane, "Same as crane, but override usage and keychain" (google/go-containerregistry
# cmd/gcrane/main.go:41 at 03492532: crane with the Google keychain, so the job's own service account pushes);
# Artifact Registry documents it for copying images ("Copy images between repositories",
# https://cloud.google.com/artifact-registry/docs/docker/copy-images: "Skipping image layers that are already
# uploaded"; Artifact Registry Writer on the target). `cp` keeps the digest (crane_copy.md: "while retaining the
# digest value"), so the copy of a multi-platform index is that index. Distroless, no shell: the job runs its
# entrypoint with `cp <source> <target>`. Pinned by the digest of its multi-arch index as bhyslop/recipemuster
# pins it (.rbk/rbrr.env, "gcrane: registry utility (~Apr 2025)"); the project publishes no tagged digest.
IMAGE_COPY_TOOL_PIN = ImagePin(
    "gcr.io/go-containerregistry/gcrane",
    "",
    "sha256:b34b7a92b50cb3017af7ae84916c7ca87e04c1766e639fbec6f0656a21d77470",
    "bhyslop/recipemuster .rbk/rbrr.env pins gcr.io/go-containerregistry/gcrane by this digest (~Apr 2025)",
)
# The prewarm: POST https://artifactregistry.googleapis.com/v1/{repository}:prewarmArtifact, a long-running operation
# (googleapis.dev Google.Apis.ArtifactRegistry.v1 PrewarmArtifactRequest: `tag` "Format:
# projects/{project}/locations/{location}/repositories/{repository}/packages/{package}/tags/{tag}"; `platform` "The
# platform (architecture and OS) of the image or tag", needed because "Multi-architecture images: Not supported"
# (the prewarm page); `streamLocation` "If not specified, the artifact will be cached in the same location as the
# artifact. multi-region is not supported for this field"; `retentionDays` "If not specified, the artifact will be
# cached for 3 days"). The permission is in Artifact Registry Writer (artifactregistry.repositories.prewarmArtifact),
# the copy's own role. A consumer project holds at most 100 GB of prewarmed images, older ones are evicted (the
# prewarm page, Limitations).
ARTIFACT_REGISTRY_API = "https://artifactregistry.googleapis.com/v1"
ARTIFACT_REGISTRY_WRITER_ROLE = "roles/artifactregistry.writer"
IMAGE_PREWARM_PLATFORM = {"architecture": "amd64", "os": "linux"}  # every GPU and CPU machine type here is x86_64
# The Cloud Run jobs' own limits: the task timeout "applies per attempt of a task" and retries default to 3 (pulumi_gcp
# 10.2.0 cloudrunv2 JobTemplateTemplateArgs timeout / max_retries); an hour per attempt covers 30 GB at well under the
# nominal rate, and Pulumi waits for every attempt (the provider's default create timeout is 20 minutes:
# resource_cloud_run_v2_job.go:109-113).
IMAGE_COPY_TASK_TIMEOUT_SECONDS = 3600
IMAGE_COPY_MAX_RETRIES = 2
IMAGE_COPY_RESOURCES = {"cpu": "2", "memory": "4Gi"}

# --- Weights prefetch runtime -------------------------------------------------------------------------
# `prefetchImage: python`: the prefetch Job runs in a small Python image and installs huggingface_hub from PyPI
# (pod_programs/prefetch-requirements.txt, hash-pinned) instead of waiting for the 20-30 GB NeMo-RL image on the CPU
# node. Python 3.11 like the tests; digest of the multi-arch index as pinned by amilworks/ultra's
# deploy/docker Dockerfile ("Multi-architecture index pinned to the published Python 3.11.13 slim-bookworm
# image"), found by exact-string search of the code index (2026-11).
PREFETCH_PYTHON_PIN = ImagePin(
    "python",
    "3.11.13-slim-bookworm",
    "sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1",
    "amilworks/ultra deploy/docker Dockerfile: the multi-arch index of python:3.11.13-slim-bookworm",
)
# That image's interpreter and platform as PEP 508 marker values (the CPU nodes are x86_64), which decide the
# dependency closure and the wheels pod_programs/prefetch-requirements.txt pins.
PREFETCH_PYTHON_MARKERS = {
    "python_version": "3.11",
    "python_full_version": "3.11.13",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
    "extra": "",
}

# --- Cloud Storage FUSE writes (the checkpoint export's sidecar) -------------------------------------------
# Streaming writes upload new, sequentially written files straight to Cloud Storage instead of staging each whole
# file on local disk first (GoogleCloudPlatform/gcsfuse docs/semantics.md at v3.11.2: the default write path from
# gcsfuse v3.0.0; "approximately 96MiB of RAM" per file open for streaming; modifying an existing file, out-of-order
# or concurrent writes to one file, and more files at once than `write:global-max-blocks` fall back to staging).
# GKE's sidecar has them from 1.32.1-gke.1753001 and on by default from 1.33.2-gke.4655000
# (GoogleCloudPlatform/gcs-fuse-csi-driver docs/releases.md at v1.24.4, "Streaming writes"). The export relies on them:
# the sidecar is sized for streaming, and the mount says so explicitly.
GCSFUSE_STREAMING_WRITES_DEFAULT_MIN_GKE = "1.33.2-gke.4655000"
GCSFUSE_STREAMING_WRITES_OPTION = "write:enable-streaming-writes:true"
GCSFUSE_STREAMING_FILE_MIB = 96
# `write.global-max-blocks` default (gcsfuse cfg/params.yaml at v3.11.2): 4 blocks, one per file, on machines
# outside gcsfuse's "high-performance" group (the CPU system node); past that, files fall back to staging.
GCSFUSE_STREAMING_MAX_FILES = 4


# --- Nominal durations: the one table of the time-to-first-step report ------------------------------------
# Every figure the critical-path report (synth/critical_path.py) and docs/performance.md use, each with its source or
# the label "nominal estimate" and the reasoning: durations (`*_SECONDS`), sizes (`*_BYTES`) and rates
# (`*_BYTES_PER_S`). The table is every `Nominal` of this module (NOMINAL_TABLE, below) plus the resource types'
# rows (NOMINAL_RESOURCE_SECONDS); the report's figure for a graph and its bound are both computed from it, and
# docs/performance.md prints it (synth/ttfs_report.py; a test keeps the docs in step).
@dataclass(frozen=True)
class Nominal:
    seconds: float  # the figure: seconds, bytes or bytes per second, as the constant's name says
    source: str


NOMINAL_ESTIMATE = "nominal estimate (no published figure)"

# Seconds Pulumi waits for a resource of this type (create + await), by type token. The critical-path report prints
# each source as written (build/<stack>/critical-path.md). "The codelab" is
# https://codelabs.developers.google.com/next26/rl-gke-lustre, whose Lustre step says 10-15 minutes.
NOMINAL_RESOURCE_SECONDS: dict[str, Nominal] = {
    "gcp:lustre/instance:Instance": Nominal(900, "the codelab: 'Lustre ... 10~15분' (10-15 min); upper bound"),
    "gcp:container/cluster:Cluster": Nominal(600, NOMINAL_ESTIMATE + "; the codelab says 'several minutes'"),
    "gcp:container/nodePool:NodePool": Nominal(120, NOMINAL_ESTIMATE + " (pool without nodes; nodes are added below)"),
    "gcp:servicenetworking/connection:Connection": Nominal(90, NOMINAL_ESTIMATE),
    "gcp:projects/service:Service": Nominal(60, NOMINAL_ESTIMATE),
    "gcp:compute/network:Network": Nominal(30, NOMINAL_ESTIMATE),
    "gcp:compute/subnetwork:Subnetwork": Nominal(20, NOMINAL_ESTIMATE),
    "gcp:compute/router:Router": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:compute/routerNat:RouterNat": Nominal(30, NOMINAL_ESTIMATE),
    "gcp:compute/firewall:Firewall": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:compute/globalAddress:GlobalAddress": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:serviceaccount/account:Account": Nominal(5, NOMINAL_ESTIMATE),
    "gcp:projects/iAMMember:IAMMember": Nominal(10, NOMINAL_ESTIMATE),
    "gcp:storage/bucket:Bucket": Nominal(5, NOMINAL_ESTIMATE),
    "gcp:storage/bucketIAMMember:BucketIAMMember": Nominal(10, NOMINAL_ESTIMATE),
    "gcp:monitoring/dashboard:Dashboard": Nominal(5, NOMINAL_ESTIMATE),
    "gcp:artifactregistry/repository:Repository": Nominal(10, NOMINAL_ESTIMATE),
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": Nominal(10, NOMINAL_ESTIMATE),
    # A job with run_execution_token lasts its execution (synth/critical_path.py times the image copy and prewarm).
    "gcp:cloudrunv2/job:Job": Nominal(10, NOMINAL_ESTIMATE + " (the job created, nothing run)"),
}
# Any other resource (Kubernetes objects the provider applies without a long wait, providers, ...).
NOMINAL_DEFAULT_RESOURCE = Nominal(2, NOMINAL_ESTIMATE + " (one API call)")

# The wait after enabling the APIs, the rendered Sleep's (core/catalog/gke.py API_PROPAGATION_WAIT: the provider's
# guide recommends one, "Newly activated service errors").
NOMINAL_API_PROPAGATION_SECONDS = Nominal(
    int(API_PROPAGATION_WAIT.removesuffix("s")),
    "the provider's guide: wait after enabling an API (core/catalog/gke.py)",
)

# What happens outside Pulumi's waits.
NOMINAL_CPU_NODE_SECONDS = Nominal(
    120, "GKE 'Provision extra compute capacity': 'Each new node takes approximately 80 to 120 seconds to boot'"
)
NOMINAL_GPU_NODE_SECONDS = Nominal(
    300, NOMINAL_ESTIMATE + ": node boot 80-120 s (GKE capacity-provisioning page) plus GPU driver and 9 NICs"
)
NOMINAL_IMAGE_BYTES = Nominal(25e9, "the NeMo-RL image is 20-30 GB (docs/research/ttfs.md; midpoint)")
NOMINAL_IMAGE_PULL_BYTES_PER_S = Nominal(100e6, NOMINAL_ESTIMATE + " (registry download + gzip unpack)")
# The image streamed from a warm streaming cache: "Your container transitions from the ImagePulling status to Running
# in a couple of seconds (regardless of container size) once we prepare the image streaming mount" (GKE blog
# "Introducing GKE image streaming", 2021-11-03, https://cloud.google.com/blog/products/containers-kubernetes/
# introducing-container-image-streaming-in-gke). Files are then read on demand, inside the Ray start below.
NOMINAL_IMAGE_STREAM_SECONDS = Nominal(
    5, "GKE image streaming blog: 'ImagePulling ... to Running in a couple of seconds (regardless of container size)'"
)
# The copy, registry to registry (nvcr.io -> Artifact Registry, no unpacking): no published rate; the pull's rate.
NOMINAL_IMAGE_COPY_BYTES_PER_S = Nominal(100e6, NOMINAL_ESTIMATE + " (registry to registry, the pull's rate)")
# The prewarm's long-running operation: no published duration; the image's bytes at the pull's rate.
NOMINAL_IMAGE_PREWARM_BYTES_PER_S = Nominal(100e6, NOMINAL_ESTIMATE + " (Artifact Registry fills its cache)")
# A Cloud Run job's task start (the small tool image, no VPC): no published figure.
NOMINAL_CLOUD_RUN_START_SECONDS = Nominal(30, NOMINAL_ESTIMATE + " (Cloud Run job task start)")
NOMINAL_HF_DOWNLOAD_BYTES_PER_S = Nominal(500e6, NOMINAL_ESTIMATE + " (Hub to one CPU node, parallel files)")
# The prefetch's own runtime in `prefetchImage: python` mode: the slim image (~45 MB compressed) and ~15 MB of
# hash-pinned wheels from PyPI.
NOMINAL_PREFETCH_RUNTIME_SECONDS = Nominal(
    30, NOMINAL_ESTIMATE + " (python slim image ~45 MB + pip install of ~15 MB of wheels)"
)
# weightsPath bucket-import: the import Job's own start (the slim image, no packages) and what a Managed Lustre import
# operation adds to its bytes at the instance's rate (queueing, listing the source, the operation's polling); no
# published latency was found (the transfer page gives only the throughput ceiling, core/catalog/lustre.py).
NOMINAL_SMALL_IMAGE_START_SECONDS = Nominal(15, NOMINAL_ESTIMATE + " (python slim image ~45 MB, no packages)")
NOMINAL_LUSTRE_IMPORT_OVERHEAD_SECONDS = Nominal(
    60, NOMINAL_ESTIMATE + " (a Managed Lustre import operation: start, listing, completion)"
)
NOMINAL_RAY_START_SECONDS = Nominal(30, NOMINAL_ESTIMATE + " (container start + `ray start`)")
NOMINAL_JOB_SUBMIT_SECONDS = Nominal(30, NOMINAL_ESTIMATE + " (K8sJobMode submitter pod + `ray job submit`)")
# The entrypoint's steps before NeMo-RL starts (core/recipes/commands.py job_script), timed by the critical-path report.
# The readiness gate in its three parts (pod_programs/readiness_gate.py runs them in this order). On GPUs they are
# estimates; the same program on 2 local CPU Ray nodes (gloo, small sweep) takes about 20 s in full and a few seconds
# on nodes with a recent pass (tests/test_readiness_gate_ray.py).
NOMINAL_GATE_GPU_SECONDS = Nominal(
    15,
    NOMINAL_ESTIMATE + " (placement on nodes the Ray workers hold, one NVML task per node, the Lustre mount probe: "
    "the fast path on nodes with a recent pass)",
)
NOMINAL_GATE_LUSTRE_SECONDS = Nominal(
    45,
    "the gate's own timing: two 15 s duration-based phases (GATE_LUSTRE_SECONDS), a 5 s start offset each, the probe",
)
NOMINAL_GATE_NCCL_SECONDS = Nominal(
    90,
    NOMINAL_ESTIMATE + " (a fresh process per GPU importing torch and initialising CUDA and NCCL, then ~10 s of "
    "transfers per collective at the sizes the gate sweeps)",
)
NOMINAL_GSM8K_PREP_SECONDS = Nominal(60, NOMINAL_ESTIMATE + " (`uv run` start, the ~5 MB dataset, two JSONL files)")
NOMINAL_SCRIPT_SECONDS = Nominal(5, NOMINAL_ESTIMATE + " (`uv run python` start and a few file checks)")
# The model load from Lustre, the last step before training: every GPU node reads the model's weights once (vLLM's
# default loader reads every safetensors file on each of its ranks, the node's page cache serving the others; the
# trainer reads its shards), all nodes at the same time, so the reads take nodes x weight bytes / min(instance
# throughput, nodes x primary NIC). The rates are published (core/catalog/lustre.py tiers, gpus.py NICs); that each
# node reads the whole model once is the project's estimate.
NOMINAL_MODEL_READS_PER_NODE = Nominal(1, NOMINAL_ESTIMATE + " (each GPU node reads the weights once; see above)")

# Derived rows: the whole readiness gate, and its fast path (nodes with a recent pass skip the Lustre and NCCL
# sweeps: core/catalog/gate.py GATE_NODE_PASS_WINDOW_SECONDS).
NOMINAL_GATE_SECONDS = Nominal(
    NOMINAL_GATE_GPU_SECONDS.seconds + NOMINAL_GATE_LUSTRE_SECONDS.seconds + NOMINAL_GATE_NCCL_SECONDS.seconds,
    "its three parts: GPU health 15 s + Lustre sweeps 45 s + NCCL sweeps 90 s",
)
NOMINAL_GATE_FAST_SECONDS = Nominal(
    NOMINAL_GATE_GPU_SECONDS.seconds, "its GPU part only: every node passed the sweeps within the window"
)

# The prefetch Job carries the bytes it downloads, so the critical-path report can time it from the records.
DOWNLOAD_BYTES_ANNOTATION = "nemo-rl-gke/download-bytes"

# The RayJob's deadline (spec.activeDeadlineSeconds, core.recipes.job_deadline_seconds): KubeRay counts it from the
# attempt's start (Status.StartTime, set when the RayJob enters Initializing and again for each retry:
# rayjob_controller.go initRayJobStatusIfNeed at v1.4.2 34ea80e0 and v1.7.0 59d663ae), so the allowance covers what
# comes before the first step: GPU capacity (flex-start may queue), image pulls, the HF->Megatron conversion, the
# readiness gate, and the export after the last step. A deadline, not a step of the path: not in NOMINAL_TABLE.
NOMINAL_JOB_STARTUP_SECONDS = Nominal(
    4 * 3600, NOMINAL_ESTIMATE + " (capacity wait, image pulls, weight conversion, readiness gate, export)"
)
# activeDeadlineSeconds is `format: int32` in both CRDs (K8S_INT32_MAX above), and KubeRay refuses a value <= 0
# (ray-operator/controllers/ray/utils/validation.go ValidateRayJobSpec: "must be a positive integer", v1.4.2 and
# v1.7.0).
# The data staging Job's run (core/data.py): `uv run` start, the built-in datasets (a few MB for GSM8K, DeepScaler and
# AIME 2024) or a user's dataset, checked and written as JSONL.
NOMINAL_DATA_STAGING_SECONDS = Nominal(
    60, NOMINAL_ESTIMATE + " (`uv run` start, datasets of a few MB, checked and written as JSONL)"
)
# The weights import Job carries the bytes it brings into Lustre (timed at the instance's import rate), and the prefetch
# Job its marker (a Job the weights are ready after, whatever it downloads itself).
IMPORT_BYTES_ANNOTATION = "nemo-rl-gke/import-bytes"
PREFETCH_MARKER_ANNOTATION = "nemo-rl-gke/marker"

# How long a standing-cluster attempt waits for its GPUs to come back after a node was lost (pod_programs/attempts.py):
# two of the cluster autoscaler's `max-node-provision-time` (default 15m: kubernetes/autoscaler
# cluster-autoscaler/FAQ.md @55c37cd5, flag table), after which it gives up on a node group; a nominal choice.
ATTEMPT_CAPACITY_WAIT_SECONDS = 2 * 15 * 60


# The table: every nominal figure of this module by name (what docs/performance.md prints), then the resource types'.
_NOT_ON_THE_PATH = frozenset({"NOMINAL_JOB_STARTUP_SECONDS"})


def _table() -> dict[str, Nominal]:
    rows = {k: v for k, v in globals().items() if isinstance(v, Nominal) and k not in _NOT_ON_THE_PATH}
    return {**rows, **{f"resource {t}": v for t, v in NOMINAL_RESOURCE_SECONDS.items()}}


NOMINAL_TABLE: dict[str, Nominal] = _table()
