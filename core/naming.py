"""Every cloud and Kubernetes name the program uses, derived from one stack prefix.

Pure functions: no resources. Settings validation checks these names against GCP limits once, so the
components can use them without further checks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from core.catalog import KUBERAY_AUTH_TOKEN_SECRET_KEY, NEMO_RL_RELEASES, RDMA_NICS_PER_NODE
from core.keys import PROJECT

# GCP resource names (RFC 1035): lowercase letter first, then lowercase letters, digits, hyphens; no trailing hyphen.
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# Kubernetes objects others refer to by name (pod annotations and specs, GKENetworkParamSet): static on purpose.
GVNIC_NETWORK = "gvnic-1"
RDMA_NETWORKS = tuple(f"rdma-{i}" for i in range(RDMA_NICS_PER_NODE))
LUSTRE_PVC = "lustre-pvc"
HF_SECRET = "nemo-rl-secrets"
# Keys of that Secret: written by workloads/workload_identity.py, mounted as files in the pods
# (workloads/manifests/pod_security.py).
HF_TOKEN_KEY = "hf-token"
WANDB_NETRC_KEY = "wandb-netrc"  # the W&B key as a netrc entry (wandb reads the file named by NETRC)
# The Ray auth token (releases whose Ray has token authentication), in a Secret of its own, under the key KubeRay
# reads when `authOptions.secretName` names the Secret (core/catalog/security.py KUBERAY_AUTH_TOKEN_SECRET_KEY).
RAY_AUTH_SECRET = "nemo-rl-ray-auth"
RAY_AUTH_TOKEN_KEY = KUBERAY_AUTH_TOKEN_SECRET_KEY
# The ConfigMap with the job's helper programs (workloads/job_scripts.py), mounted by the Ray head's pod spec.
JOB_SCRIPTS = "nemo-rl-scripts"
# GPU node pools, one per capacity model (core/capacity.py); the ComputeClass lists them by these names.
GPU_POOLS = {"spot": "gpu-spot", "flex-start": "gpu-flex", "reservation": "gpu-reserved"}

# Kueue's objects (queue: kueue; workloads/kueue.py). The cluster-scoped ones (ResourceFlavors, the ClusterQueue,
# WorkloadPriorityClasses) are the platform's and a cluster has one platform (the platform creates it), so they need
# no prefix; the LocalQueue has the same name in every namespace that submits to the ClusterQueue. Fixed names, so an
# experiment stack labels its RayJob without reading them from its platform.
KUEUE_CLUSTER_QUEUE = "nemo-rl"
KUEUE_LOCAL_QUEUE = "nemo-rl"
KUEUE_GPU_FLAVOR = "nemo-rl-gpu"
KUEUE_CPU_FLAVOR = "nemo-rl-cpu"


def kueue_priority_class(level: str) -> str:
    """The WorkloadPriorityClass of a jobPriority level (low, normal, high)."""
    return f"nemo-rl-{level}"


# Google Cloud label values (GKE cluster resource labels, Managed Lustre and Cloud Storage labels alike): at most
# 63 characters, "only lowercase letters, numeric characters, underscores, and dashes" (Resource Manager
# "Requirements for labels", https://cloud.google.com/resource-manager/docs/labels-overview#requirements). A Pulumi
# stack name may hold capitals and dots and be 100 characters long (`Team.Prod`), so it is not one as it is.
GCP_LABEL_VALUE_MAX = 63
_GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def is_gcp_label_value(value: str) -> bool:
    return bool(_GCP_LABEL_VALUE.match(value))


def gcp_label_value(text: str) -> str:
    """`text` as a Google Cloud label value: unchanged when it is one; otherwise lowercased, every other character
    a '-', cut to fit, with 8 hex digits of the original's SHA-256, so two names that map alike stay apart
    ('Team.Prod' -> 'team-prod-<hash>', never the same value as a stack called 'team-prod')."""
    if is_gcp_label_value(text):
        return text
    readable = re.sub(r"[^a-z0-9_-]", "-", text.lower())
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{readable[: GCP_LABEL_VALUE_MAX - len(digest) - 1]}-{digest}"


def resource_labels(stack_name: str) -> dict[str, str]:
    """Labels on every labelled cloud resource: which stack of which project it belongs to."""
    return {"stack": gcp_label_value(stack_name), "app": PROJECT}


def workload_principal(project_number: str, workload_pool: str, namespace: str, ksa_name: str) -> str:
    """The IAM principal of a Kubernetes service account under Workload Identity Federation for GKE
    (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity#authenticating_to)."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{workload_pool}/subject/ns/{namespace}/sa/{ksa_name}"
    )


# run_execution_token: 8 hex digits of what the job runs (infra/image_copy.py); name + "-" + token < 63.
RUN_EXECUTION_TOKEN_LEN = 8
CLOUD_RUN_JOB_NAME_MAX = 62 - 1 - RUN_EXECUTION_TOKEN_LEN


def slug(text: str) -> str:
    """A release tag as part of a resource name: lowercase letters, digits and hyphens (v0.5.0 -> v0-5-0)."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())


def is_gcp_name(name: str, max_len: int = 63) -> bool:
    return len(name) <= max_len and bool(_RFC1035.match(name))


@dataclass(frozen=True)
class Names:
    """Names of the cloud resources of one stack."""

    prefix: str

    # Networks (the seeds' `<p>-net`, `<p>-sub`, `<p>-sub-N` pattern, one prefix for all three VPCs).
    @property
    def primary_network(self) -> str:
        return f"{self.prefix}-net"

    @property
    def primary_subnet(self) -> str:
        return f"{self.prefix}-sub"

    @property
    def gvnic_network(self) -> str:
        return f"{self.prefix}-gvnic-net"

    @property
    def gvnic_subnet(self) -> str:
        return f"{self.prefix}-gvnic-sub"

    @property
    def rdma_network(self) -> str:
        return f"{self.prefix}-rdma-net"

    def rdma_subnet(self, i: int) -> str:
        return f"{self.prefix}-rdma-sub-{i}"

    @property
    def primary_firewall(self) -> str:
        return f"{self.primary_network}-internal"

    # Cloud Router + Cloud NAT of the primary VPC (private nodes reach NGC, Hugging Face, package mirrors).
    @property
    def router(self) -> str:
        return f"{self.primary_network}-router"

    @property
    def nat(self) -> str:
        return f"{self.primary_network}-nat"

    @property
    def gvnic_firewall(self) -> str:
        return f"{self.gvnic_network}-internal"

    @property
    def lustre_firewall(self) -> str:
        return f"{self.primary_network}-lustre"

    @property
    def pods_range(self) -> str:
        return f"{self.prefix}-pods"

    @property
    def services_range(self) -> str:
        return f"{self.prefix}-services"

    @property
    def psa_range(self) -> str:
        return f"{self.prefix}-psa"

    @property
    def cluster(self) -> str:
        return self.prefix

    @property
    def system_pool(self) -> str:
        return "system"

    @property
    def cpu_pool(self) -> str:
        # Standard: the autoscaling pool of the stack's CPU pods (Ray heads, submitters, prefetch, data staging and
        # export Jobs), apart from the system pool's own work (infra/cluster.py). Static, like the GPU pools.
        return "cpu"

    @property
    def gpu_workload_policy(self) -> str:
        # Compute Engine resource policy (regional) placing the flex-start GPU nodes compactly.
        return f"{self.prefix}-gpu-flex"

    @property
    def node_service_account(self) -> str:
        # Service-account ids are 6..30 characters; settings validation checks the result.
        return f"{self.prefix}-nodes"

    @property
    def lustre_instance(self) -> str:
        return f"{self.prefix}-lustre"

    # The NeMo-RL images where the nodes are (imagePath: streaming; infra/image_copy.py).
    @property
    def image_repository(self) -> str:
        # The Artifact Registry Docker repository the stack creates for its copies (imageRepository unset).
        return f"{self.prefix}-images"

    @property
    def image_copy_service_account(self) -> str:
        # The Cloud Run jobs' identity: writer on the image repository only. Ids are 6..30 characters.
        return f"{self.prefix}-copy"

    def image_copy_job(self, release_tag: str) -> str:
        return f"{self.prefix}-copy-{slug(release_tag)}"

    def image_prewarm_job(self, release_tag: str) -> str:
        return f"{self.prefix}-warm-{slug(release_tag)}"

    # Kubernetes objects named after the prefix.
    @property
    def ray_cluster(self) -> str:
        return f"{self.prefix}-ray"

    @property
    def ray_job(self) -> str:
        return f"{self.prefix}-grpo"

    @property
    def lustre_pv(self) -> str:
        return f"{self.prefix}-lustre"

    @property
    def experiment_secret(self) -> str:
        # An experiment stack's own token Secret, beside its platform's (HF_SECRET) in the platform's namespace.
        return f"{self.prefix}-tokens"

    @property
    def job_configs(self) -> str:
        # An experiment stack's own config files (jobConfigFiles), in a ConfigMap of its own that only its RayJob's
        # head mounts (workloads/job_scripts.py JobConfigs).
        return f"{self.prefix}-job-configs"

    @property
    def export_job(self) -> str:
        # The checkpoint export Job on the CPU pool (workloads/checkpoint_export.py).
        return f"{self.prefix}-export"

    @property
    def export_ksa(self) -> str:
        # The checkpoint export's Kubernetes service account (the Ray head's, with the export on). Named after the
        # stack's prefix, so each stack's Workload Identity principal is its own even where two stacks share a
        # project (the principal is ns/<namespace>/sa/<name> in the project's one pool).
        return f"{self.prefix}-export"

    @property
    def data_job(self) -> str:
        # The data staging Job on the CPU pool (workloads/data_staging.py).
        return f"{self.prefix}-data"

    @property
    def data_ksa(self) -> str:
        # The data staging Job's own Kubernetes service account: the one principal with read on the job's gs:// data.
        return f"{self.prefix}-data"

    # weightsPath bucket-import (core/weights.py): the Job staging the weights into the bucket and the one importing
    # them into Lustre, each with a Kubernetes service account of its own (distinct per stack, like the export's).
    @property
    def weights_stage(self) -> str:
        return f"{self.prefix}-weights-stage"

    @property
    def weights_import(self) -> str:
        return f"{self.prefix}-weights-import"

    @property
    def weights_import_account(self) -> str:
        # The Google service account the import's KSA acts as (6..30 characters: the weightsPath rule checks it).
        return f"{self.prefix}-wimport"

    @property
    def weights_import_role(self) -> str:
        # Custom role ids: letters, digits, '_' and '.', at most 64 ("Cannot contain - characters": the provider's
        # role_id, resource_google_project_iam_custom_role.go:51-57); a creation timestamp is appended (infra).
        return self.prefix.replace("-", "_") + "_weightsImport"

    def all_kubernetes_names(self) -> dict[str, tuple[str, int]]:
        """name -> (what it names, max length), for validation."""
        return {
            # KubeRay refuses longer names so that the Services it derives stay DNS labels
            # (ray-operator/controllers/ray/utils/constant.go: MaxRayClusterNameLength = 63 - len("-serve-svc")
            # = 53; MaxRayJobNameLength = MaxRayClusterNameLength - 6 = 47, as a RayJob's cluster name adds 6).
            self.ray_job: ("RayJob", 47),
            self.ray_cluster: ("RayCluster", 53),
            self.lustre_pv: ("Lustre PersistentVolume", 253),
            self.export_ksa: ("export service account", 63),
            self.data_ksa: ("data staging service account", 63),
            self.job_configs: ("config files ConfigMap", 253),
            self.weights_stage: ("weights staging Job and service account", 63),
            self.weights_import: ("weights import Job and service account", 63),
        }

    def all_gcp_names(self) -> dict[str, tuple[str, int]]:
        """name -> (what it names, max length), for validation."""
        out = {
            self.primary_network: ("primary VPC", 63),
            self.primary_subnet: ("primary subnet", 63),
            self.gvnic_network: ("gVNIC VPC", 63),
            self.gvnic_subnet: ("gVNIC subnet", 63),
            self.rdma_network: ("RDMA VPC", 63),
            self.psa_range: ("PSA range", 63),
            self.primary_firewall: ("firewall rule", 63),
            self.router: ("Cloud Router", 63),
            self.nat: ("Cloud NAT", 63),
            self.gvnic_firewall: ("firewall rule", 63),
            self.lustre_firewall: ("firewall rule", 63),
            # GKE cluster names are at most 40 characters.
            self.cluster: ("GKE cluster", 40),
            self.lustre_instance: ("Lustre instance", 63),
            self.node_service_account: ("node service account id", 30),
            self.gpu_workload_policy: ("GPU workload policy", 63),
            self.image_repository: ("Artifact Registry repository", 63),
            self.image_copy_service_account: ("image copy service account id", 30),
        }
        # A Cloud Run job's name plus its run_execution_token (and the '-' joining them) stay under 63 characters
        # (terraform-provider-google-beta@93c65b2d cloudrunv2/resource_cloud_run_v2_job.go:795-801).
        for tag in NEMO_RL_RELEASES:
            out[self.image_copy_job(tag)] = ("image copy Cloud Run job", CLOUD_RUN_JOB_NAME_MAX)
            out[self.image_prewarm_job(tag)] = ("image prewarm Cloud Run job", CLOUD_RUN_JOB_NAME_MAX)
        for i in range(RDMA_NICS_PER_NODE):
            out[self.rdma_subnet(i)] = ("RDMA subnet", 63)
        return out


# --- An experiment of a team platform (core/settings/tenancy.py) -------------------------------------------------
# Fixed names inside an experiment's own namespace: the namespace keeps them apart (the platform's own objects and
# every other experiment's live in other namespaces), so they need no prefix.
EXPERIMENT_EXPORT_KSA = "nemo-rl-export"
# The data staging Job's (workloads/data_staging.py): its Workload Identity principal is the one the experiment grants
# read on its own gs:// training data (infra/data_access.py).
EXPERIMENT_DATA_KSA = "nemo-rl-data"
EXPERIMENTER_ROLE = "nemo-rl-experimenter"


def experiment_namespace(platform_namespace: str, experiment: str) -> str:
    """An experiment's namespace: `<platform namespace>-<experiment>` (the settings rules hold it to 63)."""
    return f"{platform_namespace}-{experiment}"


@dataclass(frozen=True)
class ExperimentNames:
    """Names of one experiment's objects, which its platform creates (workloads/experiment_tenancy.py) and its
    experiment stack uses (the platform's contract hands them over: core/settings/platform.py)."""

    platform: Names
    platform_namespace: str
    experiment: str

    @property
    def namespace(self) -> str:
        return experiment_namespace(self.platform_namespace, self.experiment)

    @property
    def lustre_pv(self) -> str:
        # PersistentVolumes are cluster-scoped: one per experiment, beside the platform's own.
        return f"{self.platform.lustre_pv}-{self.experiment}"

    @property
    def export_ksa(self) -> str:
        return EXPERIMENT_EXPORT_KSA

    @property
    def data_ksa(self) -> str:
        return EXPERIMENT_DATA_KSA

    @property
    def role(self) -> str:
        return EXPERIMENTER_ROLE
