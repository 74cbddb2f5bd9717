"""Day two: every setting changed on every shipped stack, and what the change will do to the deployed stack.

For each key of Pulumi.yaml and each shipped stack the program is run with the stack's value and with another
valid value (ALTERNATIVES), and the difference is classified the way the providers will plan it. The mocks never
call a provider's diff, so the classification comes from the providers' own rules as core/catalog/replacements.py
records them (the replace-only fields of terraform-provider-google-beta and pulumi-kubernetes, the bridge's
delete-first rule for auto-named fields, pulumi-kubernetes's delete-first for fixed names), applied by
synth/compare.plan, the same code the offline diff prints:
- "in place": every changed resource updates in place;
- "safe replacement": something is replaced, nothing that a running job or stored data depends on;
- "stops the job": a node pool is replaced or its nodes recreated, the RayCluster/RayJob, the Lustre volume...;
- "refused": the program refuses the value before anything is registered, with a line naming the key, or the
  engine refuses to replace a protected resource (pulumi step_generator.go:1955-1962);
- "refused by the API": the plan runs, and a step of it is refused while `up` applies it (an update of a range GKE
  uses, the delete of a folder that holds exports or of a cluster with deletion protection): the `up` fails there,
  with what ran before it done (core/catalog/replacements.py API_REFUSES, DELETE_REFUSED).

Experiment stacks (Pulumi.codelab-exp*.yaml) are swept too: their own keys (core/settings/platform.py
EXPERIMENT_KEYS) are changed on the experiment; every other key is changed on its platform, and the experiment is
run again against the platform's new outputs (its StackReference), which is what its next `up` sees. A platform
change the platform refuses leaves the experiment as it is.

It fails on a same-name replacement that creates before it deletes (or a delete Pulumi does not wait for), on a
data-holding resource replaced where the stack protects it or without the plan saying DELETES DATA, and on a
resource that changes although the setting has nothing to do with it (ABOUT, reviewed by hand).

Cost: one engine run per (stack, key), each variant once; the stacks run in one module-scoped fixture.
"""

from __future__ import annotations

import fnmatch

import pytest

from core.catalog import replacements
from core.settings import platform
from synth import compare, engine
from tests.sampling import sample

# The platform stacks, and the experiment stacks on them (platformStack set: they declare only their job and export,
# and refuse the platform settings, tests/test_platform_experiments.py).
STACKS = engine.platform_stacks()
EXPERIMENTS = engine.experiment_stacks()
NOT_SETTINGS = {"hfToken", "wandbApiKey", "rayAuthToken"}  # secrets: tested in test_token_exposure.py
RDMA_OTHER = [f"192.168.{11 + i}.0/24" for i in range(8)]

# key -> candidate changes, the first that differs from the stack's value is used. A change that needs a second
# key to stay valid (a GPU type and its machine) names both.
ALTERNATIVES: dict[str, tuple[dict, ...]] = {
    "authorizedNetworks": ({"authorizedNetworks": ["203.0.113.0/24"]},),
    "bucketName": ({"bucketName": "nemo-other-ckpt-bucket"},),
    "capacity": ({"capacity": ["flex-start", "spot"]},),
    "checkpointBudgetSeconds": ({"checkpointBudgetSeconds": 600},),
    "clusterDeletionProtection": ({"clusterDeletionProtection": False}, {"clusterDeletionProtection": True}),
    "clusterMode": ({"clusterMode": "autopilot", "machineType": ""}, {"clusterMode": "standard"}),
    "computeClass": ({"computeClass": "nemo-rl-gpu2"},),
    "controlPlane": ({"controlPlane": "zonal"},),
    "dashboard": ({"dashboard": False},),
    "dnsEndpoint": ({"dnsEndpoint": False, "privateEndpoint": False},),
    "egressFqdnPolicies": ({"egressFqdnPolicies": False},),
    "exportCheckpoints": ({"exportCheckpoints": False},),
    "exportDestination": ({"exportDestination": "exports/other"},),
    "exportOptimizer": ({"exportOptimizer": True},),
    "exportSoftDeleteDays": ({"exportSoftDeleteDays": 7},),
    "flexStartMaxRunHours": ({"flexStartMaxRunHours": 24},),
    "flexStartWaitMinutes": ({"flexStartWaitMinutes": 60},),
    "gateLustreFraction": ({"gateLustreFraction": 0.5},),
    "gateMinAllGatherBusbw": ({"gateMinAllGatherBusbw": 100},),
    "gateMinAllReduceBusbw": ({"gateMinAllReduceBusbw": 100},),
    "gateRerun": ({"gateRerun": "again-1"},),
    "gkeVersion": ({"gkeVersion": "1.34"},),
    "gpuDriverVersion": ({"gpuDriverVersion": "DEFAULT"},),
    "gpuNodes": ({"gpuNodes": 4},),
    "gpuPlacement": ({"gpuPlacement": "none"},),
    "gpuPlacementDistance": ({"gpuPlacementDistance": "BLOCK"},),
    "gpuType": (
        {"gpuType": "nvidia-h200-141gb", "machineType": "a3-ultragpu-8g"},
        {"gpuType": "nvidia-b200", "machineType": "a4-highgpu-8g"},
    ),
    "gvnicSubnetCidr": ({"gvnicSubnetCidr": "192.168.100.0/24"},),
    "headCpu": ({"headCpu": 12},),
    "headEphemeralStorageGib": ({"headEphemeralStorageGib": 8},),
    "headMemoryGib": ({"headMemoryGib": 48},),
    "imagePath": ({"imagePath": "pull"},),
    "imageRepository": ({"imagePath": "streaming", "imageRepository": "us-docker.pkg.dev/your-gcp-project-id/nemo"},),
    "jobBackoffLimit": ({"jobMode": "own-cluster", "jobBackoffLimit": 1},),
    # A file of the project installed next to the image's configs (a vendored config serves as the user's file).
    "jobConfigFiles": (
        {
            "jobConfigFiles": {
                "examples/configs/mine.yaml": "nemo-rl-reference/v0.5.0/examples/configs/grpo_math_1B.yaml"
            }
        },
    ),
    "jobDeadlineSeconds": ({"jobDeadlineSeconds": 86400},),
    "jobEnabled": ({"jobEnabled": False},),
    "jobMode": ({"jobMode": "own-cluster"},),
    "jobOverrides": ({"jobOverrides": {"max_num_steps": 5}},),
    "jobRecipe": ({"jobRecipe": "qwen2.5-72b-deepscaler"}, {"jobRecipe": "gemma3-27b-gsm8k"}),
    "jobStartFrom": ({"jobStartFrom": "grpo-other/step_10"},),
    "jobTtlSeconds": ({"jobMode": "own-cluster", "jobTtlSeconds": 60},),
    "ksaName": ({"ksaName": "nemo-rl-runner2"},),
    "kubeRayOperator": ({"kubeRayOperator": "helm"},),
    "lustreAdopt": ({"lustreOnDestroy": "retain", "lustreAdopt": True},),
    "lustreCapacityGib": ({"lustreCapacityGib": 36000},),
    "lustreFilesystem": ({"lustreFilesystem": "ckptfs"},),
    "lustreMountPath": ({"lustreMountPath": "/mnt/lustre"},),
    "lustreOnDestroy": ({"lustreOnDestroy": "retain"},),
    "lustrePortMode": ({"lustrePortMode": "legacy"},),
    "lustreRootSquash": ({"lustreRootSquash": False},),
    "lustreTier": ({"lustreTier": 1000, "lustreCapacityGib": 18000}, {"lustreTier": 500, "lustreCapacityGib": 18000}),
    "machineType": ({"machineType": ""}, {"machineType": "a4-highgpu-8g"}),
    "maintenanceExclusionDays": ({"maintenanceExclusionStart": "2027-01-10", "maintenanceExclusionDays": 7},),
    "maintenanceExclusionStart": ({"maintenanceExclusionStart": "2027-01-10"},),
    "maintenanceStart": ({"maintenanceStart": "04:00"},),
    "namespace": ({"namespace": "nemo-rl2"},),
    "nemoRlRelease": ({"nemoRlRelease": "v0.4.0"}, {"nemoRlRelease": "v0.5.0"}),
    "platformStack": ({"platformStack": "my-org/nemo-rl-gke/platform"},),
    "podsCidr": ({"podsCidr": "10.32.0.0/14"},),
    "prefetchImage": ({"prefetchImage": "nemo-rl"},),
    "prefetchWeights": ({"prefetchWeights": False},),
    "prefix": ({"prefix": "nemo-x"},),
    "prices": ({"prices": {"cpuNode": 1.0}},),
    "primarySubnetCidr": ({"primarySubnetCidr": "10.0.0.0/19"},),
    "privateEndpoint": ({"privateEndpoint": False}, {"privateEndpoint": True}),
    "psaCidr": ({"psaCidr": "10.24.0.0/20"},),
    "rayDashboardPeers": ({"rayDashboardPeers": ["10.0.0.0/20"]},),
    "rayTokenAuth": ({"rayTokenAuth": "off"},),
    "rayVersion": ({"rayVersion": "2.49.2"},),
    "rdmaSubnetCidrs": ({"rdmaSubnetCidrs": RDMA_OTHER},),
    "readinessGate": ({"readinessGate": "off"},),
    "region": (
        {"region": "us-east1", "zone": "us-east1-b", "gcp:region": "us-east1"},
        {"region": "us-central1", "zone": "us-central1-b", "gcp:region": "us-central1"},
    ),
    "releaseChannel": ({"releaseChannel": "RAPID"},),
    "reservation": ({"reservation": "my-reservation", "capacity": ["reservation", "spot"]},),
    "reservationStartNodes": (
        {"reservation": "my-reservation", "capacity": ["reservation", "spot"], "reservationStartNodes": 1},
    ),
    "runName": ({"runName": "run-2"},),
    "servicesCidr": ({"servicesCidr": "10.12.0.0/20"},),
    "shmSizeGib": ({"shmSizeGib": 200},),
    "stepSeconds": ({"stepSeconds": "60"},),
    "systemMachineType": ({"systemMachineType": "n2-standard-32"},),
    "systemNodes": ({"systemNodes": 2},),
    "warmupHoldSeconds": ({"warmupHoldSeconds": 3600},),
    "workerEphemeralStorageGib": ({"workerEphemeralStorageGib": 8},),
    "workerReplicas": ({"workerReplicas": 4},),
    "zone": ({"zone": "us-central1-c"}, {"zone": "us-east1-c"}),
}

# Where a stack needs a different companion change to stay valid (its recipe's node count, its region).
STACK_ALTERNATIVES: dict[tuple[str, str], dict] = {
    ("codelab", "clusterMode"): {
        "clusterMode": "autopilot",
        "machineType": None,
        "gpuNodes": None,
        "workerReplicas": 8,
    },
    ("dev", "clusterMode"): {"clusterMode": "autopilot", "machineType": None, "gpuNodes": None, "workerReplicas": 2},
    ("codelab", "gpuNodes"): {"gpuNodes": 16},
    ("dev", "jobRecipe"): {"jobRecipe": "qwen2.5-72b-deepscaler", "gpuNodes": 8},
    ("autopilot", "jobRecipe"): {"jobRecipe": "qwen2.5-72b-deepscaler", "workerReplicas": 8},
    ("codelab", "jobRecipe"): {"jobRecipe": "gemma3-27b-gsm8k", "nemoRlRelease": "v0.5.0"},
    ("codelab", "workerReplicas"): {"workerReplicas": 8, "gpuNodes": 16},
    ("dev", "workerReplicas"): {"workerReplicas": 2, "gpuNodes": 4},
    ("codelab", "zone"): {"zone": "us-east1-c"},
    # The experiment stacks: their recipes' node counts and W&B (the codelab platform lets no head reach it).
    ("codelab-exp1", "workerReplicas"): {"workerReplicas": 2, "jobOverrides": {"num_nodes": 2, "max_num_steps": 20}},
    ("codelab-exp1", "jobOverrides"): {"jobOverrides": {"num_nodes": 4, "max_num_steps": 5}},
    ("codelab-exp1", "jobRecipe"): {
        "jobRecipe": "gemma3-27b-gsm8k",
        "nemoRlRelease": "v0.5.0",
        "jobOverrides": {"wandb_enabled": False},
    },
    ("codelab-exp2", "jobOverrides"): {"jobOverrides": {"wandb_enabled": False, "max_num_steps": 5}},
    ("codelab-exp2", "jobRecipe"): {
        "jobRecipe": "qwen2.5-72b-deepscaler",
        "workerReplicas": 4,
        "jobOverrides": {"num_nodes": 4, "wandb_enabled": False},
    },
}

SAFE, STOPS, IN_PLACE, REFUSED = "safe replacement", "stops the job", "in place", "refused"
API_REFUSED = "refused by the API"

# The reviewed classification of each change: one class for every stack, or {stack: class}. "refused" on a
# protected stack is the engine refusing to replace the Lustre instance (lustreOnDestroy: protect).
# The standing RayCluster's pods do not depend on the job (test_standing_cluster.py): jobEnabled,
# the export settings and the bucket touch the RayJob, the export Job, the Secret or the grants, never the cluster's
# templates (a platform without a job scales its GPU workers to none, in place).
EXPECTED: dict[str, object] = {
    "authorizedNetworks": IN_PLACE,
    # The Bucket is replaced (delete-first) and its delete refused while it holds exports (force_destroy false); an
    # experiment only sees its export Job name another bucket.
    "bucketName": {"codelab-exp1": SAFE, "codelab-exp2": SAFE, "*": API_REFUSED},
    "capacity": IN_PLACE,
    "checkpointBudgetSeconds": IN_PLACE,
    "clusterDeletionProtection": IN_PLACE,
    "clusterMode": {"dev": STOPS, "*": REFUSED},  # the cluster is protected outside dev
    "computeClass": STOPS,
    "controlPlane": {"dev": STOPS, "*": REFUSED},
    "dashboard": IN_PLACE,
    "dnsEndpoint": IN_PLACE,
    # true -> false replaces the cluster (CustomizeDiff ForceNewIfChange): protected outside dev.
    "egressFqdnPolicies": {"dev": STOPS, "*": REFUSED},
    # The export Job, its identity and grants go; the folders' delete is refused while they hold exports. An
    # experiment only drops its export Job.
    "exportCheckpoints": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": API_REFUSED},
    "exportDestination": SAFE,  # the managed folder (DELETES DATA) and the export Job, not the running job
    "exportOptimizer": {
        "codelab": IN_PLACE,
        "codelab-exp1": IN_PLACE,
        "*": SAFE,
    },  # the export Job's argv (Megatron: copied whole)
    "exportSoftDeleteDays": IN_PLACE,
    "flexStartMaxRunHours": {"autopilot": IN_PLACE, "*": STOPS},  # Autopilot: a ComputeClass field
    "flexStartWaitMinutes": REFUSED,
    "gateLustreFraction": IN_PLACE,
    "gateMinAllGatherBusbw": IN_PLACE,
    "gateMinAllReduceBusbw": STOPS,  # a new gate threshold is a new RayJob
    "gateRerun": STOPS,
    "gkeVersion": IN_PLACE,
    "gpuDriverVersion": {"autopilot": REFUSED, "*": STOPS},
    "gpuNodes": {"autopilot": REFUSED, "codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": STOPS},
    "gpuPlacement": {"autopilot": IN_PLACE, "*": STOPS},
    "gpuPlacementDistance": {"autopilot": IN_PLACE, "*": STOPS},
    "gpuType": STOPS,
    "gvnicSubnetCidr": {"autopilot": SAFE, "*": STOPS},
    "headCpu": STOPS,
    "headEphemeralStorageGib": {"autopilot": IN_PLACE, "*": STOPS},
    "headMemoryGib": STOPS,
    "imagePath": IN_PLACE,
    "imageRepository": STOPS,
    "jobBackoffLimit": STOPS,
    "jobConfigFiles": STOPS,
    "jobDeadlineSeconds": IN_PLACE,
    # The RayJob goes (that is the setting); the cluster keeps its head and scales its workers in place, the Secret
    # loses the W&B netrc nothing reads any more (replaced: pulumi-kubernetes Secrets are immutable).
    "jobEnabled": {"codelab": IN_PLACE, "codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": SAFE},
    "jobMode": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": STOPS},  # an experiment is own-cluster anyway
    "jobOverrides": STOPS,
    "jobRecipe": STOPS,
    "jobStartFrom": STOPS,
    "jobTtlSeconds": STOPS,
    "ksaName": STOPS,
    "kubeRayOperator": IN_PLACE,
    "lustreAdopt": IN_PLACE,  # resource options only: import the kept set, keep it on destroy
    "lustreCapacityGib": STOPS,  # the readiness gate's expected Lustre throughput is in the RayJob
    "lustreFilesystem": {"dev": STOPS, "*": REFUSED},
    "lustreMountPath": STOPS,
    "lustreOnDestroy": IN_PLACE,
    "lustrePortMode": IN_PLACE,
    "lustreRootSquash": IN_PLACE,
    "lustreTier": {"dev": STOPS, "*": REFUSED},
    "machineType": IN_PLACE,
    "maintenanceExclusionDays": IN_PLACE,
    "maintenanceExclusionStart": IN_PLACE,
    "maintenanceStart": IN_PLACE,
    "namespace": STOPS,
    "nemoRlRelease": {"codelab": STOPS, "codelab-exp1": STOPS, "*": REFUSED},
    # The pod and service ranges are GKE's, fixed at creation: the subnet update is refused (API_REFUSES).
    "podsCidr": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": API_REFUSED},
    "platformStack": REFUSED,  # a platform stack's settings are refused on an experiment stack
    "prefetchImage": SAFE,
    "prefetchWeights": {
        "codelab-exp1": REFUSED,
        "codelab-exp2": REFUSED,
        "*": STOPS,
    },  # the codelab platform keeps workers off the Hub
    "prefix": {
        "dev": API_REFUSED,
        "codelab-exp1": STOPS,
        "codelab-exp2": STOPS,
        "*": REFUSED,
    },  # dev: the bucket (bucketName)
    "prices": IN_PLACE,  # the cost estimate only
    "primarySubnetCidr": IN_PLACE,
    "privateEndpoint": IN_PLACE,
    # The PSA range is in use (the connection, Lustre): its delete is refused; Google's procedure removes those first.
    "psaCidr": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": API_REFUSED},
    "rayDashboardPeers": IN_PLACE,
    "rayTokenAuth": IN_PLACE,
    "rayVersion": {"codelab": REFUSED, "codelab-exp1": REFUSED, "*": IN_PLACE},
    "rdmaSubnetCidrs": {"autopilot": SAFE, "*": STOPS},
    "readinessGate": STOPS,
    "region": {"dev": API_REFUSED, "*": REFUSED},  # dev: the bucket (bucketName)
    "releaseChannel": IN_PLACE,
    "reservation": IN_PLACE,
    "reservationStartNodes": {"autopilot": REFUSED, "*": IN_PLACE},
    "runName": STOPS,
    "servicesCidr": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": API_REFUSED},
    "shmSizeGib": STOPS,
    "stepSeconds": IN_PLACE,  # the cost estimate only
    "systemMachineType": {"autopilot": REFUSED, "*": STOPS},  # in place, but GKE recreates the system nodes
    "systemNodes": {"autopilot": REFUSED, "*": IN_PLACE},
    "warmupHoldSeconds": {"codelab-exp1": IN_PLACE, "codelab-exp2": IN_PLACE, "*": SAFE},
    "workerEphemeralStorageGib": STOPS,
    "workerReplicas": {
        "autopilot": STOPS,
        "codelab-exp1": STOPS,
        "codelab-exp2": STOPS,
        "*": IN_PLACE,
    },  # Standard: idle GPU nodes
    "zone": {"dev": STOPS, "*": REFUSED},
}

# What each setting is about: the resources (`Type logical-name`, fnmatch patterns) it may change. Replacements
# the plan derives (cascades, replaceWith, a replaced provider) are consequences, not extra changes.
ABOUT: dict[str, tuple[str, ...]] = {
    "authorizedNetworks": ("Cluster cluster",),
    "bucketName": ("Bucket bucket", "BucketIAMMember *", "Folder *", "ManagedFolder*", "Job export"),
    "capacity": ("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
    "checkpointBudgetSeconds": (),
    "clusterDeletionProtection": ("Cluster cluster",),
    "clusterMode": ("*",),  # Standard <-> Autopilot is another cluster
    # An experiment's own cluster is in its RayJob (rayClusterSpec): its pod settings change the RayJob.
    "computeClass": ("ComputeClass *", "Job placeholders", "NodePool gpu-*", "RayCluster raycluster", "RayJob rayjob"),
    "controlPlane": ("Cluster cluster", "Dashboard dashboard", "NodePool *", "kubernetes k8s"),
    "dashboard": ("Dashboard dashboard",),
    "dnsEndpoint": ("Cluster cluster",),
    "egressFqdnPolicies": ("Cluster cluster", "FQDNNetworkPolicy *", "NetworkPolicy *"),
    "exportCheckpoints": (
        "BucketIAMMember *",
        "Folder *",
        "ManagedFolder*",
        "ServiceAccount export-ksa",
        "NetworkPolicy *",
        "FQDNNetworkPolicy *",
        "Job export",
    ),
    "exportDestination": ("Folder *", "ManagedFolder*", "Job export"),
    "exportOptimizer": ("Job export",),
    "exportSoftDeleteDays": ("Bucket bucket",),
    "flexStartMaxRunHours": ("ComputeClass gpu-compute-class", "NodePool gpu-flex"),
    "flexStartWaitMinutes": ("ComputeClass gpu-compute-class",),
    "gateLustreFraction": ("RayJob rayjob",),
    "gateMinAllGatherBusbw": ("RayJob rayjob",),
    "gateMinAllReduceBusbw": ("RayJob rayjob",),
    "gateRerun": ("RayJob rayjob",),
    "gkeVersion": ("Cluster cluster",),
    "gpuDriverVersion": ("NodePool gpu-*",),
    "gpuNodes": ("NodePool gpu-*", "Job placeholders", "RayCluster raycluster", "RayJob rayjob"),
    "gpuPlacement": ("NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
    "gpuPlacementDistance": ("ResourcePolicy gpu-flex-placement",),
    "gpuType": ("ComputeClass *", "NodePool gpu-*", "Job placeholders", "RayCluster raycluster", "RayJob rayjob"),
    "gvnicSubnetCidr": ("Subnetwork gvnic", "Firewall gvnic-internal"),
    "headCpu": ("RayCluster raycluster", "RayJob rayjob"),
    "headEphemeralStorageGib": ("RayCluster raycluster", "RayJob rayjob"),
    "headMemoryGib": ("RayCluster raycluster", "RayJob rayjob"),
    "imagePath": ("DaemonSet cpu-prepull", "Job placeholders", "PriorityClass *", "NodePool *", "RayCluster *"),
    "imageRepository": (
        "DaemonSet cpu-prepull",
        "Job placeholders",
        "NodePool *",
        "RayCluster raycluster",
        "RayJob rayjob",
        "IAMMember *",
        "RepositoryIamMember *",
        "Service *",
        "Sleep *",
    ),
    "jobBackoffLimit": ("RayJob rayjob", "RayCluster raycluster", "Dashboard dashboard"),  # with jobMode
    "jobConfigFiles": ("ConfigMap job-scripts", "RayJob rayjob"),
    "jobDeadlineSeconds": ("RayJob rayjob",),
    "jobEnabled": (
        "RayJob rayjob",
        "RayCluster raycluster",  # its workers' replica counts (core/settings/job.py standing_workers)
        "Secret tokens",  # the W&B netrc, held only while the job logs to W&B
        "Job *",
        "BucketIAMMember *",
        "Folder *",
        "ManagedFolder*",
        "ServiceAccount export-ksa",
        "NetworkPolicy *",
        "FQDNNetworkPolicy *",
    ),
    "jobMode": ("RayJob rayjob", "RayCluster raycluster", "Dashboard dashboard"),
    # A training-changing override (steps on Megatron) or a new start point is a new run name, which the export Job
    # waits for (core/recipes: the run's fingerprint).
    "jobOverrides": ("RayJob rayjob", "Job export"),
    "jobRecipe": (
        "RayJob rayjob",
        "RayCluster raycluster",
        "Job *",
        "NodePool gpu-*",
        "DaemonSet cpu-prepull",
        "FQDNNetworkPolicy *",  # the recipe decides whether the job logs to W&B
        "Secret tokens",  # ... and so whether the Secret holds the W&B netrc
    ),
    "jobStartFrom": ("RayJob rayjob", "Job export"),
    "jobTtlSeconds": ("RayJob rayjob", "RayCluster raycluster", "Dashboard dashboard"),  # with jobMode
    "ksaName": ("ServiceAccount ksa", "RayCluster raycluster", "RayJob rayjob"),
    "kubeRayOperator": (
        "Cluster cluster",
        "Namespace operator-namespace",
        "Role operator-role",  # the operator's rights in the workload namespace (workloads/kuberay_operator.py)
        "RoleBinding operator-role-binding",
        "NetworkPolicy *",
        "Release *",
    ),
    "lustreAdopt": (
        "Instance lustre",
        "Network primary",
        "GlobalAddress psa-range",
        "Connection psa-connection",
        "Firewall lustre-ingress",
    ),
    "lustreCapacityGib": ("Instance lustre", "PersistentVolume lustre-pv", "Dashboard dashboard", "RayJob rayjob"),
    "lustreFilesystem": ("Instance lustre", "PersistentVolume lustre-pv"),
    "lustreMountPath": ("Job *", "RayCluster raycluster", "RayJob rayjob"),
    "lustreOnDestroy": (  # the kept set: kept together (item 8)
        "Instance lustre",
        "Network primary",
        "GlobalAddress psa-range",
        "Connection psa-connection",
        "Firewall lustre-ingress",
    ),
    "lustrePortMode": ("Cluster cluster", "Firewall lustre-ingress", "Instance lustre"),
    "lustreRootSquash": ("Instance lustre",),
    "lustreTier": ("Instance lustre", "PersistentVolume lustre-pv", "Dashboard dashboard", "RayJob rayjob"),
    "machineType": ("NodePool gpu-*",),
    "maintenanceExclusionDays": ("Cluster cluster",),
    "maintenanceExclusionStart": ("Cluster cluster",),
    "maintenanceStart": ("Cluster cluster",),
    "namespace": ("*",),  # every namespaced object, and what names it
    # The default run name carries the release: the export Job waits for and copies another run.
    "nemoRlRelease": (
        "DaemonSet cpu-prepull",
        "Job placeholders",
        "Job export",
        "RayCluster raycluster",
        "RayJob rayjob",
    ),
    "podsCidr": ("Subnetwork primary", "Firewall primary-internal"),
    "platformStack": (),
    "prefetchImage": ("Job prefetch", "FQDNNetworkPolicy *"),
    "prefetchWeights": ("Job *", "FQDNNetworkPolicy *", "RayCluster raycluster", "RayJob rayjob"),
    "prefix": ("*",),  # every name
    "prices": (),
    "primarySubnetCidr": ("Subnetwork primary", "Firewall primary-internal", "Instance lustre"),
    "privateEndpoint": ("Cluster cluster",),
    "psaCidr": ("GlobalAddress psa-range", "Firewall lustre-ingress"),
    "rayDashboardPeers": ("NetworkPolicy netpol-dashboard-from-operator",),
    "rayTokenAuth": ("RayCluster raycluster", "RayJob rayjob", "Secret *"),
    "rayVersion": ("RayCluster raycluster", "RayJob rayjob"),
    "rdmaSubnetCidrs": ("Subnetwork rdma-*",),
    "readinessGate": ("RayJob rayjob",),
    "region": ("*",),  # every regional resource
    "releaseChannel": ("Cluster cluster",),
    "reservation": ("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
    "reservationStartNodes": ("ComputeClass gpu-compute-class", "NodePool gpu-*", "ResourcePolicy gpu-flex-placement"),
    "runName": ("RayJob rayjob", "Job export"),  # the export waits for and copies that run
    "servicesCidr": ("Subnetwork primary", "Firewall primary-internal"),
    "shmSizeGib": ("RayCluster raycluster", "RayJob rayjob"),
    "stepSeconds": (),
    "systemMachineType": ("NodePool system",),
    "systemNodes": ("NodePool system",),
    "warmupHoldSeconds": ("Job placeholders",),
    "workerEphemeralStorageGib": ("Job placeholders", "RayCluster raycluster", "RayJob rayjob"),
    # An experiment's recipe node count follows its workers (jobOverrides num_nodes): a new run name, which the export
    # Job waits for.
    "workerReplicas": ("Job placeholders", "RayCluster raycluster", "RayJob rayjob", "NodePool gpu-*", "Job export"),
    "zone": (
        "Instance lustre",
        "PersistentVolume lustre-pv",
        "NodePool *",
        "Network rdma",
        "ComputeClass *",
        "Dashboard dashboard",
        "Job placeholders",
        "RayCluster raycluster",
    ),
}


def settings_keys() -> list[str]:
    """Every setting Pulumi.yaml declares (provider keys such as `pulumi:disable-default-providers` are not)."""
    declared = engine._load_yaml(engine.ROOT / "Pulumi.yaml")["config"]
    return sorted(k for k in declared if ":" not in k and k not in NOT_SETTINGS)


def variant(base: engine.SynthResult, key: str) -> dict:
    """The change of `key` for this stack: its own entry, else the first candidate differing from its value."""
    if (base.stack, key) in STACK_ALTERNATIVES:
        return STACK_ALTERNATIVES[(base.stack, key)]
    for candidate in ALTERNATIVES[key]:
        if base.config.get(f"nemo-rl-gke:{key}", "") != engine._config_string(candidate[key]):
            return candidate
    raise AssertionError(f"{key}: every alternative equals {base.stack}'s value")


_BASES: dict[str, tuple[engine.SynthResult, compare.Snapshot]] = {}


def _platform_ref(stack: str) -> str:
    """An experiment stack's `platformStack` (`<org>/<project>/<stack>`)."""
    cfg = engine._load_yaml(engine.ROOT / f"Pulumi.{stack}.yaml").get("config") or {}
    return str(cfg["nemo-rl-gke:platformStack"])


def _platform_of(stack: str) -> str:
    return _platform_ref(stack).rsplit("/", 1)[1]


def _references(experiment: str, platform_result: engine.SynthResult) -> dict[str, engine.StackOutputs]:
    return {_platform_ref(experiment): engine.StackOutputs.of(platform_result)}


def _run(stack: str, overrides=None, platform_result=None) -> engine.SynthResult:
    if stack in EXPERIMENTS:
        platform_result = platform_result or _base(_platform_of(stack))[0]
        return engine.run(stack, overrides, stack_references=_references(stack, platform_result))
    return engine.run(stack, overrides)


def _base(stack: str) -> tuple[engine.SynthResult, compare.Snapshot]:
    if stack not in _BASES:
        result = _run(stack)
        assert result.error is None, result.error
        _BASES[stack] = result, compare.of_result(result)
    return _BASES[stack]


def _short(name: str) -> str:
    """`gcp:container/nodePool:NodePool gpu-flex` -> `NodePool gpu-flex`."""
    typ, _, logical = name.partition(" ")
    return f"{typ.rsplit(':', 1)[-1]} {logical}"


def _types(*results: engine.SynthResult) -> list[str]:
    return sorted({r.type for result in results for r in result.resources if r.custom})


def classify(stack: str, key: str) -> dict:
    """Run one variant: what it changes, how the replacement plan classifies it, and the plan's text."""
    base, _ = _base(stack)
    change = variant(base, key)
    return _judge(stack, change, _run(stack, change))


def _judge(stack: str, change: dict, result: engine.SynthResult) -> dict:
    base, before = _base(stack)
    out: dict = {"change": change, "types": _types(base, result)}
    if result.error is not None:
        lines = [ln.strip()[2:] for ln in result.error.splitlines() if ln.strip().startswith("- ")]
        return {**out, "class": REFUSED, "lines": lines, "registered": sum(r.custom for r in result.resources)}
    after = compare.of_result(result)
    verdicts = compare.plan(before, after)
    common = set(before.pulumi) & set(after.pulumi)
    changed = (set(before.pulumi) ^ set(after.pulumi)) | {n for n in common if compare._fields(before, after, n)}
    marked = [v for v in verdicts.values() if v.marked]
    if any(v.refused for v in marked):
        cls = REFUSED
    elif any(v.fails for v in marked):
        cls = API_REFUSED
    elif any("stops the job" in v.consequences for v in marked):
        cls = STOPS
    elif any(v.replaced for v in marked):
        cls = SAFE
    else:
        cls = IN_PLACE
    return {
        **out,
        "class": cls,
        "changed": sorted(_short(n) for n in changed),
        # Replaced without an input change of their own: a consequence the plan names (cascade, replaceWith...).
        "derived": sorted(_short(v.name) for v in marked if v.name not in changed),
        "verdicts": [(_short(v.name), v.summary(), v.collides, v.refused, list(v.consequences)) for v in marked],
        "replaced": sorted(v.name for v in marked if v.replaced),
        "stops": sorted(v.name for v in marked if "stops the job" in v.consequences),
        "report": compare.format_plan(verdicts),
        "protected": sorted(_short(n) for n, r in after.pulumi.items() if r["options"].get("protect")),
        "lustreOnDestroy": result.config.get("nemo-rl-gke:lustreOnDestroy", ""),
    }


def _on_the_platform(experiment: str, key: str, platform_change: dict, platform_result: engine.SynthResult) -> dict:
    """A platform key changed on the experiment's platform: what the experiment's next `up` does."""
    if platform_result.error is not None or platform_change.get("class") == REFUSED:
        # The platform refuses it (its settings, or the engine): nothing the experiment reads changes.
        kept = {k: platform_change[k] for k in ("lines", "registered") if k in platform_change}
        return {
            "change": platform_change["change"],
            "types": [],
            "class": REFUSED,
            "on": "platform",
            "changed": [],
            **kept,
        }
    c = {**_judge(experiment, platform_change["change"], _run(experiment, None, platform_result)), "on": "platform"}
    # The experiment's pods run on the platform's nodes and mount its Lustre claim: what the platform's plan replaces
    # under them (a node pool, the cluster, the claim...) stops the experiment's job too, whatever its own plan says.
    # The platform's own RayCluster and RayJob are not the experiment's.
    under = [n for n in platform_change.get("stops", []) if n.split(" ")[0] not in OWN_JOB_TYPES]
    if under and c["class"] in (IN_PLACE, SAFE):
        c = {**c, "class": STOPS, "stopped by the platform": under}
    return c


OWN_JOB_TYPES = ("kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayJob")


def _classify(task: tuple[str, str]) -> list[tuple[tuple[str, str], dict]]:
    stack, key = task
    if stack in EXPERIMENTS:  # one of the experiment's own keys
        return [(task, classify(stack, key))]
    base, _ = _base(stack)
    change = variant(base, key)
    result = _run(stack, change)
    c = _judge(stack, change, result)
    out = [(task, c)]
    if key not in platform.EXPERIMENT_KEYS:
        for experiment in EXPERIMENTS:
            if _platform_of(experiment) == stack:
                out.append(((experiment, key), _on_the_platform(experiment, key, c, result)))
    return out


@pytest.fixture(scope="module")
def sweep() -> dict[tuple[str, str], dict]:
    """Every (stack, key) classified once, spread over two processes (the engine is CPU-bound; ~330 runs)."""
    import multiprocessing

    for stack in STACKS + EXPERIMENTS:  # each stack's own run, once, in this process: the forked workers inherit it
        _base(stack)
    tasks = [(stack, key) for stack in STACKS for key in settings_keys()]
    tasks += [(stack, key) for stack in EXPERIMENTS for key in settings_keys() if key in platform.EXPERIMENT_KEYS]
    # Every case in `make test`; a sample with NEMO_RL_GKE_SAMPLE (tests/sampling.py).
    tasks = sample(tasks)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        return {k: v for results in pool.imap_unordered(_classify, tasks, chunksize=8) for k, v in results}


def _expected(key: str, stack: str) -> str:
    e = EXPECTED[key]
    if isinstance(e, dict):
        return e.get(stack, e["*"])
    return str(e)


@pytest.mark.unit
def test_every_setting_has_a_day_two_change_a_class_and_a_scope():
    keys = set(settings_keys())
    assert set(ALTERNATIVES) == keys, "a new setting needs a day-two change here"
    assert set(EXPECTED) == keys and set(ABOUT) == keys


@pytest.mark.graph
def test_each_change_is_classified_as_reviewed(sweep):
    wrong = {
        f"{stack}:{key}": (c["class"], _expected(key, stack), c.get("lines") or c.get("verdicts"))
        for (stack, key), c in sweep.items()
        if c["class"] != _expected(key, stack)
    }
    assert not wrong, wrong


@pytest.mark.graph
def test_no_replacement_meets_the_resource_it_replaces(sweep):
    # A create-first replacement that reuses a fixed name or id, a retained resource replaced, or a delete
    # pulumi-kubernetes does not wait for: the create fails with 409 AlreadyExists and the `up` stops halfway.
    collisions = {
        f"{stack}:{key}": [(name, why) for name, _, why, _, _ in c.get("verdicts", []) if why]
        for (stack, key), c in sweep.items()
    }
    assert not {k: v for k, v in collisions.items() if v}


@pytest.mark.graph
def test_data_is_deleted_only_where_the_stack_allows_it_and_the_plan_says_so(sweep):
    for (stack, key), c in sweep.items():
        for name, _, _, refused, consequences in c.get("verdicts", []):
            if "deletes data" not in consequences or refused:
                continue
            assert name not in c["protected"], (stack, key, name)
            if name == "Instance lustre":  # protect refuses (above); retain is a collision (test above)
                assert c["lustreOnDestroy"] == "delete", (stack, key)
            assert f"{name.split(' ')[0]}" in c["report"] and "DELETES DATA" in c["report"], (stack, key, name)


@pytest.mark.graph
def test_a_change_touches_only_what_the_setting_is_about(sweep):
    stray = {}
    for (stack, key), c in sweep.items():
        if c["class"] == REFUSED and "lines" in c:
            continue
        extra = [n for n in c["changed"] if not any(fnmatch.fnmatchcase(n, p) for p in ABOUT[key])]
        if extra:
            stray[f"{stack}:{key}"] = extra
    assert not stray, stray


@pytest.mark.graph
def test_a_refused_change_names_its_key_and_registers_nothing(sweep):
    for (stack, key), c in sweep.items():
        if "lines" not in c:
            continue
        assert c["registered"] == 0, (stack, key)
        assert c["lines"] and any(f"nemo-rl-gke:{key}" in line for line in c["lines"]), (stack, key, c["lines"])


@pytest.mark.graph
def test_every_resource_the_sweep_registers_has_its_provider_rules_read(sweep):
    # Per resource type, of every stack and every change: the replace-only table and the diff customisations of its
    # provider (CustomizeDiff, plan modifiers) were read, or its changes are classified blind (the Artifact Registry
    # grant of `imagePath: streaming` was, until it had its rules).
    types = {t for c in sweep.values() for t in c.get("types", [])}
    unread = sorted(t for t in types if not replacements.rules_for(t) or not replacements.diff_rules_read(t))
    assert not unread, unread


@pytest.mark.graph
def test_a_platform_change_replaces_an_experiment_object_only_with_the_platform_cluster(sweep):
    # The experiment's provider carries the platform cluster's id (clusterIdentifier): a changed kubeconfig (the
    # platform's endpoint settings, a CA rotation) is an update; only another cluster replaces its objects.
    wrong = {}
    for (stack, key), c in sweep.items():
        if stack not in EXPERIMENTS or c.get("on") != "platform" or c["class"] == REFUSED:
            continue
        platform_plan = sweep[(_platform_of(stack), key)]
        if "pulumi:providers:kubernetes k8s" in c["replaced"] and "gcp:container/cluster:Cluster cluster" not in (
            platform_plan.get("replaced") or []
        ):
            wrong[f"{stack}:{key}"] = c["verdicts"]
    assert not wrong, wrong


@pytest.mark.graph
def test_a_step_the_api_refuses_is_said_in_the_plan(sweep):
    for (stack, key), c in sweep.items():
        if c["class"] == API_REFUSED:
            assert "FAILS: " in c["report"], (stack, key)


@pytest.mark.graph
def test_a_new_name_replaces_a_resource_and_never_patches_it_at_the_new_name(sweep):
    # terraform-provider-google#27818 pattern: a `name` that is not ForceNew is updated by a PATCH at the new name, a
    # resource that does not exist (the flex-start placement policy under a new prefix). The program replaces those.
    patched = {
        f"{stack}:{key}": name
        for (stack, key), c in sweep.items()
        for name, summary, *_ in c.get("verdicts", [])
        if "FAILS: name: " in summary
    }
    assert not patched, patched
