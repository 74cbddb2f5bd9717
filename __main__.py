"""nemo-rl-gke: NeMo-RL GRPO training on GKE with Managed Lustre, as one Pulumi dependency graph.

Thin on purpose: load the settings once, build the components in dependency order, export what users need.
This is the only module that sees both infra/ (Google Cloud) and workloads/ (Kubernetes): it hands the
outputs of one to the other.
"""

import pulumi
import pulumi_kubernetes as k8s

from core import cost, recipes
from core import weights as weights_path
from core.naming import EXPERIMENT_DATA_KSA, EXPERIMENT_EXPORT_KSA, experiment_namespace, workload_principal
from core.settings import (
    SettingsError,
    load_experiment_settings,
    load_secrets,
    load_settings,
    platform,
    project_config,
    security,
    tenancy,
)
from core.settings.job import needs_wandb_key
from core.settings.security import token_auth_enabled
from core.settings.stack import platform_stack_problems
from infra.bucket import BucketArgs, TrainingBucket
from infra.cluster import ClusterArgs, GkeCluster
from infra.data_access import DataReadGrant, DataReadGrantArgs
from infra.experiment_export import ExperimentExport, ExperimentExportArgs
from infra.gpu_capacity import GpuCapacity, GpuCapacityArgs
from infra.image_copy import ImageCopy, ImageCopyArgs
from infra.lustre import LustreArgs, LustreFilesystem
from infra.networks import Networks, NetworksArgs
from infra.node_identity import NodeIdentity, NodeIdentityArgs
from infra.observability import Observability, ObservabilityArgs
from infra.price_catalog import PriceRequest, read_prices
from infra.project_services import ProjectServices, ProjectServicesArgs
from infra.psa import PrivateServiceAccess, PsaArgs
from infra.weights_staging import WeightsStagingAccess, WeightsStagingAccessArgs
from workloads.checkpoint_export import CheckpointExport, export_job_args
from workloads.data_staging import DataStaging, DataStagingArgs
from workloads.experiment_admission import ExperimentAdmission, ExperimentAdmissionArgs
from workloads.experiment_tenancy import ExperimentTenancy, ExperimentTenancyArgs, experiment_policies
from workloads.gpu_compute_class import GpuComputeClass, GpuComputeClassArgs
from workloads.gpu_networking import GpuNetworking, GpuNetworkingArgs, GpuVpcNames
from workloads.gpu_warmup import GpuWarmup, GpuWarmupArgs
from workloads.job_scripts import JobConfigs, JobScripts
from workloads.kuberay_operator import KubeRayOperator, KubeRayOperatorArgs
from workloads.kueue import KueueQueue, KueueQueueArgs
from workloads.lustre_volume import LustreInstanceRef, LustreVolume, LustreVolumeArgs
from workloads.manifests import pod_fit
from workloads.manifests.pod_parts import token_secret_name
from workloads.nemo_rl_job import JobArgs, NemoRlJob
from workloads.ray_cluster import RayCluster, RayClusterArgs
from workloads.weights_prefetch import WeightsPrefetch, WeightsPrefetchArgs
from workloads.weights_staging import WeightsStaging, WeightsStagingArgs
from workloads.workload_identity import WorkloadIdentity, WorkloadIdentityArgs, ray_auth_secret, token_secret

PLATFORM_REF = str(project_config().get("platformStack") or "")


async def experiment() -> None:
    """An experiment stack (platformStack set): its platform's cluster, Lustre and bucket through a StackReference,
    in the namespace its platform made for it (setting `experiments` there); it declares only its token Secrets,
    scripts, weights prefetch, own-cluster RayJob and export Job there, and its export folder's grants."""
    # Refused before anything is read or registered: platform settings set here, a malformed reference.
    early = platform_stack_problems(PLATFORM_REF, pulumi.get_stack()) or platform.platform_only_problems(
        project_config()
    )
    if early:
        raise pulumi.RunError(str(SettingsError(early)))
    ref = pulumi.StackReference("platform", stack_name=PLATFORM_REF)
    details = await ref.get_output_details(platform.CONTRACT_OUTPUT)
    contract = details.value if details.value is not None else details.secret_value
    try:
        # Refused in one line when the platform hosts no experiment of this name (nothing is registered yet).
        s = load_experiment_settings(PLATFORM_REF, contract)
        pod_fit.check(s)
        # Every refusal before the first registration (tests/test_bad_input_sweep.py): what its pods must reach and
        # mount that its namespace's policies do not allow, a platform without a cluster id, names of the platform's.
        problems = (
            platform.egress_problems(s, contract or {})
            + platform.admission_problems(s)
            + platform.cluster_id_problems(PLATFORM_REF, contract)
            + platform.collision_problems(s, contract or {})
            + platform.queue_problems(s, contract or {})
        )
        if problems:
            raise SettingsError(problems)
    except SettingsError as err:
        raise pulumi.RunError(str(err)) from None
    hosts: dict = contract or {}  # a dict by now: load_experiment_settings refused anything else
    entry = hosts[platform.EXPERIMENTS_KEY][tenancy.experiment_name(s)]
    # Identified by the platform cluster's id, like the platform's own provider: a changed kubeconfig (endpoint, CA)
    # updates it in place instead of replacing every object of this experiment (core/settings/platform.py).
    provider = k8s.Provider(
        "k8s",
        k8s.ProviderArgs(
            kubeconfig=ref.require_output(platform.KUBECONFIG_OUTPUT),
            cluster_identifier=(contract or {})[platform.CLUSTER_ID_KEY],
        ),
    )
    ns = s.storage.namespace  # its own: <platform namespace>-<experiment>
    pulumi.export("platformStack", PLATFORM_REF)
    pulumi.export("experiment", tenancy.experiment_name(s))
    pulumi.export("namespace", ns)
    secrets = load_secrets()
    in_ns = pulumi.ResourceOptions(provider=provider)
    tokens = token_secret(token_secret_name(s), ns, secrets, in_ns, wandb=needs_wandb_key(s))
    needs: list[pulumi.Resource] = [tokens]
    if token_auth_enabled(s) and secrets.ray_auth_token is not None:
        # Its own Ray token, under the name its RayJob's authOptions give (load_settings refuses a missing token).
        needs.append(ray_auth_secret(ns, secrets.ray_auth_token, in_ns))
    # The programs its pods run, in its own namespace (its config files, if any, go in JobConfigs below).
    scripts = JobScripts("job-scripts", ns, provider)
    needs.append(scripts.config_map)
    weights = None
    if s.job.enabled and s.startup.prefetch_weights:
        # Its platform's claim and service accounts exist already; the Job waits for this stack's Secret and scripts.
        weights = WeightsPrefetch("weights-prefetch", WeightsPrefetchArgs.of(s), ns, provider, needs=needs)
    if not s.job.enabled:
        return
    if s.recipe.config_files:
        # Its own config files, in a ConfigMap of its own that only its RayJob's head mounts.
        configs = JobConfigs("job-configs", s.names.job_configs, ns, recipes.user_config_files(s.recipe), provider)
        needs.append(configs.config_map)
    # Its datasets, staged and checked on a CPU pod before the RayJob (and its GPUs) is created, in its own Lustre
    # directory, as the service account its platform made for it. The read grant on its gs:// data, for that account's
    # principal (the contract's), is the one Google Cloud resource it declares besides its export's; bucket-scoped,
    # like the export's, so the default provider serves it.
    grants: list[pulumi.Resource] = []
    if (grant_args := DataReadGrantArgs.of(s)) is not None:
        grants = list(DataReadGrant("data-access", grant_args, principal=entry["dataPrincipal"]).bindings)
    staging = DataStaging(
        "data-staging", DataStagingArgs.of(s), provider, needs=[tokens, scripts.config_map], grants=grants
    )
    needs.append(staging.job)
    job = NemoRlJob("grpo", JobArgs.of(s), ns, provider, ray_cluster=None, needs=needs)
    if job.queueing is not None:
        # Queued in the platform's LocalQueue of its namespace (the platform declares it; its queue and quota are
        # the platform's `queue` output).
        pulumi.export("queue", {"localQueue": job.queueing.queue, "priorityClass": job.queueing.priority_class})
    # Prices from Google's Cloud Billing Catalog where credentials allow (a read, never a failure).
    costs = cost.estimate(s, read_prices(PriceRequest.of(s)))
    pulumi.log.info(costs.format())
    pulumi.export("costEstimate", costs.as_output())
    pulumi.export("rayJobName", job.name)
    pulumi.export("runName", job.run_name)
    pulumi.export("checkpointDir", job.checkpoint_dir)
    pulumi.export("jobStatusCommand", job.status_command)
    pulumi.export("jobLogsCommand", f"kubectl -n {ns} logs -f job/{job.name}")
    pulumi.export("rayDashboardCommand", f"kubectl ray session rayjob/{job.name} -n {ns}")
    if job.gate_summary_command is not None:
        pulumi.export("gateSummaryCommand", job.gate_summary_command)
    if weights is not None:
        pulumi.export("prefetchMarker", weights.marker)
        pulumi.export("modelPath", weights.model_path)
    if s.startup.export_checkpoints:
        # Its own export identity and folder: with the data read grant above, the only Google Cloud resources an
        # experiment stack declares. All are
        # bucket-scoped (no project field): the default provider serves them, with or without a gcp:project.
        export_grants = ExperimentExport(
            "export-grants",
            ExperimentExportArgs(bucket=s.bucket_name, prefix=s.export_destination.prefix),
            entry["exportPrincipal"],
        )
        exporter = CheckpointExport(
            "checkpoint-export",
            export_job_args(s, entry["exportServiceAccount"]),
            provider,
            needs=[*needs, export_grants.binding, export_grants.list_binding],
        )
        pulumi.export("exportUrl", exporter.destination)
        pulumi.export("exportJobCommand", f"kubectl -n {ns} get job {s.names.export_job}")


if PLATFORM_REF:
    pulumi.run(experiment)
else:
    try:
        settings = load_settings()
        # Every pod the stack renders, sidecars included, against the node or Autopilot class it lands on.
        pod_fit.check(settings)
        # The CPU pool's size: what the platform and every job its GPUs can run at once need, node by node.
        cpu_plan = pod_fit.cpu_pool_plan(settings)
    except SettingsError as err:
        # RunError ends the program with the message only: one line per problem, no traceback, nothing registered.
        raise pulumi.RunError(str(err)) from None
    secrets = load_secrets()
    s = settings

    # Google Cloud half. First the APIs: the components whose own resources are the first to call an API wait for
    # their propagation (`apis_ready`); everything else already depends on one of those resources.
    apis = ProjectServices("apis", ProjectServicesArgs.of(s))
    apis_ready = pulumi.ResourceOptions(depends_on=[apis.ready])
    networks = Networks("networks", NetworksArgs.of(s), opts=apis_ready)
    psa = PrivateServiceAccess("psa", PsaArgs.of(s), networks.primary)
    lustre = LustreFilesystem("lustre", LustreArgs.of(s), networks.primary, psa.connection)
    # The NeMo-RL images into the stack's Artifact Registry and its image-streaming cache, from the first minutes: the
    # Cloud Run jobs need only the APIs, so they run while the cluster and Lustre are created.
    image_copy = ImageCopy("image-copy", ImageCopyArgs.of(s), opts=apis_ready) if s.image_streaming else None
    identity = NodeIdentity(
        "identity",
        NodeIdentityArgs.of(s),
        opts=apis_ready,
        image_repository_id=image_copy.repository_id if image_copy and image_copy.repository else None,
    )
    # The pods that name a copy wait for it (not for its prewarm: a pod may stream before the cache is warm).
    image_ready: list[pulumi.Resource] = list(image_copy.copied) if image_copy is not None else []
    gke = GkeCluster(
        "gke",
        ClusterArgs.of(s, cpu_pool_max_nodes=cpu_plan.max_nodes if cpu_plan is not None else 1),
        networks.primary,
        networks.primary_subnet,
        identity.account,
        identity.bindings,
    )
    if not s.autopilot:
        # One GPU pool per capacity model, each at zero nodes; Autopilot creates nodes from the ComputeClass. The
        # flex-start workload policy is the first Compute Engine resource of its kind: it waits for the APIs.
        gpu_capacity = GpuCapacity(
            "gpu-capacity", GpuCapacityArgs.of(s), gke.cluster, networks, identity.account, opts=apis_ready
        )
    # The bucket grant names the Workload Identity pool, which the cluster creates: it waits for the cluster.
    bucket = TrainingBucket("bucket", BucketArgs.of(s), apis.project_number, pool_owner=gke.cluster, opts=apis_ready)
    # weightsPath bucket-import: the bucket's staging folder, the staging Job's write on it, the Lustre service agent's
    # read and the import's identity (core/weights.py); like the export's grants, they wait for the cluster's pool.
    staging_access = (
        WeightsStagingAccess(
            "weights-staging-access",
            WeightsStagingAccessArgs.of(s),
            bucket.bucket,
            apis.project_number,
            pool_owner=gke.cluster,
            opts=apis_ready,
        )
        if weights_path.staged(s)
        else None
    )

    # Kubernetes half: every object takes the cluster's explicit provider.
    k8s_provider = gke.provider
    workload_args = WorkloadIdentityArgs.of(s)
    workload = WorkloadIdentity("workload-identity", workload_args, secrets, bucket.principal, k8s_provider)
    namespace = workload.namespace.metadata.name
    lustre_ref = LustreInstanceRef(
        volume_handle=lustre.volume_handle, ip=lustre.ip, filesystem=lustre.instance.filesystem
    )

    # A team platform: every experiment it hosts gets its namespace, identities, Lustre claim, network policies and
    # its people's Role (workloads/experiment_tenancy.py); admission keeps their pods in their own Lustre
    # directories and off the node (workloads/experiment_admission.py). Their stacks need no cluster-wide right.
    def experiment_principal(e: str, ksa: str) -> pulumi.Output[str]:
        ns = experiment_namespace(s.storage.namespace, e)
        return apis.project_number.apply(lambda number: workload_principal(number, s.workload_identity_pool, ns, ksa))

    export_principals = {e: experiment_principal(e, EXPERIMENT_EXPORT_KSA) for e in sorted(s.tenancy.experiments)}
    data_principals = {e: experiment_principal(e, EXPERIMENT_DATA_KSA) for e in sorted(s.tenancy.experiments)}
    # The queue's plan where the platform queues (`queue: kueue`): its experiments' namespaces carry the label its
    # ClusterQueue selects, and get their LocalQueues with the platform's, after Kueue's release check (below).
    queue_args = KueueQueueArgs.of(s) if s.queue.queue == "kueue" else None
    tenancies = [
        ExperimentTenancy(
            f"experiment-{e}",
            ExperimentTenancyArgs.of(s, e, queue=queue_args.plan if queue_args is not None else None),
            lustre_ref,
            export_principals[e],
            k8s_provider,
            data_principal=data_principals[e],
        )
        for e in sorted(s.tenancy.experiments)
    ]
    if tenancies:
        ExperimentAdmission("experiment-admission", ExperimentAdmissionArgs.of(s), k8s_provider)
    # Ray token auth needs an operator that sends the token: with `kubeRayOperator: helm` the stack installs a known
    # KubeRay instead of GKE's add-on (workloads/kuberay_operator.py); the Ray objects wait for its CRDs.
    kuberay = (
        KubeRayOperator(
            "kuberay-operator",
            KubeRayOperatorArgs.of(s),
            workload.namespace,
            k8s_provider,
            experiment_namespaces=[t.namespace for t in tenancies],
        )
        if s.security.kuberay_operator == "helm"
        else None
    )
    job_scripts = JobScripts(
        "job-scripts",
        namespace,
        k8s_provider,
        user_files=recipes.user_config_files(s.recipe) if s.job.enabled and s.recipe is not None else None,
    )
    gpu_networking = GpuNetworking(
        "gpu-networking",
        GpuNetworkingArgs.of(s),
        GpuVpcNames(
            gvnic_network=networks.gvnic.name,
            gvnic_subnet=networks.gvnic_subnet.name,
            rdma_network=networks.rdma.name,
            rdma_subnets=[sn.name for sn in networks.rdma_subnets],
        ),
        k8s_provider,
    )
    # The ComputeClass that orders the capacity models; the GPU workers select it.
    compute_class = GpuComputeClass("gpu-compute-class", GpuComputeClassArgs.of(s), k8s_provider)
    volume = LustreVolume("lustre-volume", LustreVolumeArgs.of(s), lustre_ref, namespace, k8s_provider)
    # GPU nodes and the NeMo-RL image while Lustre is still being created: placeholders ask for GPU nodes as soon
    # as the pool exists (they need neither Lustre nor a Secret), a DaemonSet pulls the image on the CPU pool.
    warmup = None
    if s.startup.warmup:
        warmup = GpuWarmup(
            "gpu-warmup",
            GpuWarmupArgs.of(s),
            namespace,
            k8s_provider,
            gpu_capacity=([] if s.autopilot else list(gpu_capacity.pools.values())) + [gpu_networking, compute_class],
            cpu_capacity=[gke.cpu_pool] if gke.cpu_pool is not None else [],
            image=image_ready,
        )
    # weightsPath bucket-import: the model into the bucket as soon as the cluster exists (no Lustre needed), then into
    # Lustre with importData once the instance is there and the staging is done.
    weights_staging = None
    if staging_access is not None:
        weights_staging = WeightsStaging(
            "weights-staging",
            WeightsStagingArgs.of(s),
            namespace,
            k8s_provider,
            stage_principal=staging_access.stage_principal,
            import_account_email=staging_access.import_account_email,
            stage_needs=[workload.secret, job_scripts.config_map, *staging_access.stage_grants],
            import_needs=[lustre.instance, *staging_access.import_grants],
        )
    # The recipe's weights into the HF cache on Lustre, as soon as the volume exists (in parallel with the Ray pods);
    # with the import, after it (the model is then checked, not downloaded).
    weights = None
    if s.job.enabled and s.startup.prefetch_weights:
        weights = WeightsPrefetch(
            "weights-prefetch",
            WeightsPrefetchArgs.of(s),
            namespace,
            k8s_provider,
            needs=[volume.pvc, workload.secret, job_scripts.config_map]
            + (image_ready if s.startup.prefetch_image == "nemo-rl" else [])
            + ([weights_staging.import_job] if weights_staging is not None else []),
        )
    # The job's datasets, staged and checked on a CPU pod (core/data.py): the RayJob is created only once they are on
    # Lustre, so a bad dataset fails here and never asks for a GPU. It runs in the job's image (with streaming, the
    # stack's registry copy: it waits for the copy like the Ray pods).
    staging = None
    if s.job.enabled:
        grants: list[pulumi.Resource] = []
        if (grant_args := DataReadGrantArgs.of(s)) is not None:
            grants = list(
                DataReadGrant(
                    "data-access", grant_args, apis.project_number, pool_owner=gke.cluster, opts=apis_ready
                ).bindings
            )
        staging = DataStaging(
            "data-staging",
            DataStagingArgs.of(s),
            k8s_provider,
            needs=[volume.pvc, workload.secret, job_scripts.config_map, *image_ready],
            grants=grants,
        )
    # Everything the Ray pods refer to by name; the RayCluster and the RayJob wait for all of it.
    pod_needs = [
        volume.pvc,
        workload.secret,
        workload.service_account,
        job_scripts.config_map,
        gpu_networking,
        compute_class,
    ]
    pod_needs.extend(image_ready)
    if workload.ray_auth_secret is not None:
        pod_needs.append(workload.ray_auth_secret)
    if kuberay is not None:
        pod_needs.append(kuberay.release)
    own_cluster = s.job.enabled and s.job.mode == "own-cluster"
    ns = s.storage.namespace

    def ray_objects(needs: list) -> None:
        """The standing RayCluster, the RayJob and the export Job, and their outputs."""
        # The standing RayCluster stays for interactive work (its GPU workers at zero while the stack's job runs on a
        # cluster of its own: core/settings/job.py standing_workers). Replaced with the Lustre claim: the pods hold
        # the claim's pvc-protection, and depends_on does not cascade.
        ray = RayCluster("ray", RayClusterArgs.of(s), namespace, k8s_provider, needs=needs, replaced_with=[volume.pvc])
        pulumi.export("rayClusterName", ray.name)
        pulumi.export("rayClusterDashboardCommand", ray.dashboard_command)
        if not own_cluster:
            pulumi.export("rayDashboardCommand", ray.dashboard_command)
        if not s.job.enabled:
            return
        # Standing cluster: the RayJob waits for the prefetch Job (the RayCluster comes up meanwhile). Own cluster:
        # the RayJob brings its cluster up, so a graph edge would delay the GPU nodes until the download ends; its
        # entrypoint waits for the prefetch marker instead (JobArgs.before). Both modes wait for the data staging Job:
        # its datasets are small next to the weights, and a bad one must fail before any GPU is asked for.
        job_needs = needs + ([weights.job] if weights is not None and not own_cluster else [])
        job_needs += [staging.job] if staging is not None else []
        job = NemoRlJob(
            "grpo",
            JobArgs.of(s),
            namespace,
            k8s_provider,
            ray_cluster=None if own_cluster else ray.cluster,
            needs=job_needs,
        )
        if s.startup.export_checkpoints and workload.export_service_account is not None:
            # Both modes: the copy runs on the CPU pool after training, as the export's identity (its grant first;
            # the GCS FUSE sidecar mounts the bucket with it). No Ray pod mounts the bucket, so the export's settings
            # never reach the RayCluster.
            grants = [r for r in (bucket.binding, bucket.list_binding) if r is not None]
            CheckpointExport(
                "checkpoint-export",
                export_job_args(s, s.names.export_ksa),
                k8s_provider,
                needs=[*needs, workload.export_service_account, *grants],
            )
        pulumi.export("rayJobName", job.name)
        pulumi.export("runName", job.run_name)
        pulumi.export("checkpointDir", job.checkpoint_dir)
        pulumi.export("jobStatusCommand", job.status_command)
        if job.attempts_command is not None:
            # Standing cluster: each attempt of the entrypoint's loop, one JSON line (pod_programs/attempts.py).
            pulumi.export("attemptsCommand", job.attempts_command)
        # The K8sJobMode submitter is a Kubernetes Job named after the RayJob; it follows the driver's logs.
        pulumi.export("jobLogsCommand", f"kubectl -n {ns} logs -f job/{job.name}")
        if job.gate_summary_command is not None:
            # The readiness gate's last summary (JSON on Lustre); its one-line verdicts are in the job's logs too.
            pulumi.export("gateSummaryCommand", job.gate_summary_command)
        if own_cluster:
            pulumi.export("rayDashboardCommand", f"kubectl ray session rayjob/{job.name} -n {ns}")
        pulumi.export(
            "jobsCliCommand",
            "python -m cli.ray_jobs list --address http://127.0.0.1:8265  # after the dashboard command above",
        )
        if s.startup.export_checkpoints:
            pulumi.export("exportUrl", f"{s.export_destination.url}/{s.run_name}")

    if queue_args is not None:
        # The queue: first the read of Kueue's manager; once its release passed the check (one line naming `queue`
        # otherwise, before anything queued is registered), Kueue's objects and a LocalQueue in the platform's
        # namespace and in each experiment's (each after its namespace), then the queued Ray objects, which wait for
        # them (their LocalQueue and Kueue's webhooks must be there, or they would start unqueued).
        queued_args = queue_args
        queue = KueueQueue("queue", queued_args, k8s_provider)
        namespace_ready = {ns: [workload.namespace]}
        namespace_ready.update({t.args.namespace: [t.namespace] for t in tenancies})

        async def after_the_queue_check() -> None:
            await queue.checked(namespace_ready=namespace_ready)
            # The queue and its quota as computed at `up`; what waits and what runs: python -m cli.team.
            pulumi.export("queue", {**queued_args.describe(), "kueueVersion": queue.version})
            ray_objects(pod_needs + queue.ready)

        pulumi.run(after_the_queue_check)
    else:
        ray_objects(pod_needs)

    observability = Observability(
        "observability",
        ObservabilityArgs.of(
            s,
            ray_cluster_name=s.names.ray_job if own_cluster else s.names.ray_cluster,
            cluster_owned_by_job=own_cluster,
        ),
        gke.cluster,
        lustre.instance,
        opts=apis_ready,
    )

    location = s.cluster_location
    pulumi.export("clusterName", gke.cluster.name)
    pulumi.export("clusterLocation", location)
    # A private IP endpoint is reached through GKE's DNS-based endpoint when it is open, else from inside the VPC
    # on the private IP (core/settings/security.py credentials_flag).
    dns_flag = security.credentials_flag(s)
    pulumi.export(
        "getCredentialsCommand",
        gke.cluster.name.apply(
            lambda c: (
                f"gcloud container clusters get-credentials {c} --location {location} "
                f"--project {s.gcp_project}{dns_flag}"
            )
        ),
    )
    pulumi.export("lustreInstance", lustre.instance.instance_id)
    pulumi.export("lustreIp", lustre.ip)
    pulumi.export("lustreOnDestroy", s.teardown.lustre_on_destroy)
    pulumi.export("bucketUrl", bucket.url)
    pulumi.export("gpuCapacity", {"computeClass": compute_class.name, "chain": list(s.capacity.models)})
    pulumi.export("lustreMountPath", s.workload.lustre_mount_path)
    if weights is not None:
        pulumi.export("prefetchMarker", weights.marker)
        pulumi.export("modelPath", weights.model_path)
    if observability.dashboard_url is not None:
        pulumi.export("dashboardUrl", observability.dashboard_url)
    # Prices from Google's Cloud Billing Catalog where credentials allow (a read, never a failure).
    costs = cost.estimate(s, read_prices(PriceRequest.of(s)))
    pulumi.log.info(costs.format())  # pulumi preview prints it
    pulumi.export("costEstimate", costs.as_output())
    # What experiment stacks read through their StackReference (core/settings/platform.py), both non-secret: the
    # kubeconfig authenticates through gke-gcloud-auth-plugin (no credential in it), the contract holds names and
    # settings. Reading them needs no right to decrypt the platform's secrets (docs/security.md).
    pulumi.export(platform.KUBECONFIG_OUTPUT, pulumi.Output.unsecret(gke.kubeconfig))
    pulumi.export(
        platform.CONTRACT_OUTPUT,
        platform.contract(
            s,
            s.names.export_ksa if workload.export_service_account is not None else None,
            # What the experiment namespaces' policies let their pods reach (the same for every experiment).
            egress=experiment_policies(s, s.storage.namespace).egress(),
            cluster_id=gke.cluster.id,
            export_principals=export_principals,
            data_principals=data_principals,
        ),
    )
    pulumi.export("driverLogsQuery", observability.logs_query)
    if observability.sizing is not None:
        sz = observability.sizing
        pulumi.export(
            "checkpointSizing",
            {
                "summary": sz.summary(),
                "checkpointBytes": sz.checkpoint_bytes,
                "minWriteSeconds": round(sz.min_write_seconds, 1),
                "budgetSeconds": sz.budget_seconds,
                "lustreThroughputBytesPerSecond": round(sz.throughput_bytes_per_s),
            },
        )
