"""nemo-rl-gke: NeMo-RL GRPO training on GKE with Managed Lustre, as one Pulumi dependency graph.

Thin on purpose: load the settings once, build the components in dependency order, export what users need.
"""
import pulumi

from infra.bucket import TrainingBucket
from infra.cluster import GkeCluster
from infra.gpu_pool import GpuNodePool
from infra.identity import NodeIdentity
from infra.lustre import LustreFilesystem
from infra.observability import Observability
from infra.networks import Networks
from infra.psa import PrivateServiceAccess
from core.settings import SettingsError, load_secrets, load_settings
from workloads.gpu_networking import GpuNetworking
from workloads.identity import WorkloadIdentity
from workloads.job import NemoRlJob, job_name
from workloads.ray_cluster import RayCluster, cluster_name as ray_cluster_name
from workloads.scripts import JobScripts
from workloads.storage import LustreVolume

try:
    settings = load_settings()
except SettingsError as err:
    # RunError ends the program with the message only: one line per problem, no traceback, nothing registered.
    raise pulumi.RunError(str(err)) from None
secrets = load_secrets()
names = settings.names

networks = Networks("networks", settings)
psa = PrivateServiceAccess("psa", settings, networks.primary)
lustre = LustreFilesystem("lustre", settings, networks.primary, psa.connection)
identity = NodeIdentity("identity", settings)
gke = GkeCluster("gke", settings, networks, identity.account)
if not settings.autopilot:
    gpu_pool = GpuNodePool("gpu-pool", settings, gke.cluster, networks, identity.account)
bucket = TrainingBucket("bucket", settings)

# Kubernetes half: every object takes the cluster's explicit provider.
k8s_provider = gke.provider
workload = WorkloadIdentity("workload-identity", settings, secrets, bucket.project_number, k8s_provider)
namespace = workload.namespace.metadata.name
job_scripts = JobScripts("job-scripts", namespace, k8s_provider)
gpu_networking = GpuNetworking("gpu-networking", settings, networks, k8s_provider)
volume = LustreVolume("lustre-volume", settings, lustre.instance, lustre.ip, namespace, k8s_provider)
# Everything the Ray pods refer to by name; the RayCluster and the RayJob wait for all of it.
pod_needs = [volume.pvc, workload.secret, workload.service_account, job_scripts.config_map, gpu_networking]
own_cluster = settings.job.enabled and settings.job.mode == "own-cluster"
ray = None if own_cluster else RayCluster("ray", settings, namespace, k8s_provider, needs=pod_needs)
job = None
if settings.job.enabled:
    job = NemoRlJob("grpo", settings, namespace, k8s_provider, ray_cluster_name=ray.name if ray else None,
                    needs=pod_needs)

observability = Observability("observability", settings, gke.cluster, lustre.instance,
                              ray_cluster_name=ray_cluster_name(settings) if ray else job_name(settings),
                              cluster_owned_by_job=ray is None)

location = settings.cluster_location
pulumi.export("clusterName", gke.cluster.name)
pulumi.export("clusterLocation", location)
pulumi.export("getCredentialsCommand", gke.cluster.name.apply(
    lambda c: f"gcloud container clusters get-credentials {c} --location {location} "
              f"--project {settings.gcp_project}"))
pulumi.export("lustreInstance", lustre.instance.instance_id)
pulumi.export("lustreIp", lustre.ip)
pulumi.export("lustreOnDestroy", settings.lustre_on_destroy)
pulumi.export("bucketUrl", bucket.url)
pulumi.export("lustreMountPath", settings.workload.lustre_mount_path)
ns = settings.storage.namespace
if ray is not None:
    pulumi.export("rayClusterName", ray.name)
    pulumi.export("rayDashboardCommand", ray.dashboard_command)
if job is not None:
    pulumi.export("rayJobName", job.name)
    pulumi.export("runName", job.run_name)
    pulumi.export("checkpointDir", job.checkpoint_dir)
    pulumi.export("jobStatusCommand", f"kubectl -n {ns} get rayjob {job.name}")
    # The K8sJobMode submitter is a Kubernetes Job named after the RayJob; it follows the driver's logs.
    pulumi.export("jobLogsCommand", f"kubectl -n {ns} logs -f job/{job.name}")
    if ray is None:
        pulumi.export("rayDashboardCommand", f"kubectl ray session rayjob/{job.name} -n {ns}")
    pulumi.export("jobsCliCommand", "python -m workloads.jobs list --address http://127.0.0.1:8265  "
                                    "# after the dashboard command above")
if observability.dashboard_url is not None:
    pulumi.export("dashboardUrl", observability.dashboard_url)
pulumi.export("driverLogsQuery", observability.logs_query)
if observability.sizing is not None:
    sz = observability.sizing
    pulumi.export("checkpointSizing", {
        "summary": sz.summary(), "checkpointBytes": sz.checkpoint_bytes,
        "minWriteSeconds": round(sz.min_write_seconds, 1), "budgetSeconds": sz.budget_seconds,
        "lustreThroughputBytesPerSecond": round(sz.throughput_bytes_per_s)})
