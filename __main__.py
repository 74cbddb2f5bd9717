"""nemo-rl-gke: NeMo-RL GRPO training on GKE with Managed Lustre, as one Pulumi dependency graph.

Thin on purpose: load the settings once, build the components in dependency order, export what users need.
"""
import pulumi

from infra.bucket import TrainingBucket
from infra.cluster import GkeCluster
from infra.gpu_pool import GpuNodePool
from infra.identity import NodeIdentity
from infra.lustre import LustreFilesystem
from infra.networks import Networks
from infra.psa import PrivateServiceAccess
from infra.settings import SettingsError, load_secrets, load_settings
from workloads.gpu_networking import GpuNetworking
from workloads.identity import WorkloadIdentity
from workloads.ray_cluster import RayCluster
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
gpu_networking = GpuNetworking("gpu-networking", settings, networks, k8s_provider)
volume = LustreVolume("lustre-volume", settings, lustre.instance, lustre.ip, namespace, k8s_provider)
ray = RayCluster("ray", settings, namespace, k8s_provider,
                 needs=[volume.pvc, workload.secret, workload.service_account, gpu_networking])

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
pulumi.export("rayClusterName", ray.name)
pulumi.export("rayDashboardCommand", ray.dashboard_command)
pulumi.export("lustreMountPath", settings.workload.lustre_mount_path)
