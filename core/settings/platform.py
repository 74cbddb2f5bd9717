"""Platform and experiment stacks: which settings an experiment stack owns, what a platform stack hands it.

A stack whose `platformStack` is set is an experiment stack of the same program (docs/operations.md "Platform and
experiment stacks"). It reads the platform's `experimentPlatform` output (the contract built by `contract()`)
through a `pulumi.StackReference` and declares only its experiment: weights prefetch, own-cluster RayJob, export.
Everything about the cluster, Lustre, networks, capacity, the bucket and the namespace is the platform's: the
experiment's settings are its own keys (EXPERIMENT_KEYS) over the platform's values of every other key
(`experiment_values()`), so every rule and every pod shape is computed exactly as for the platform.

How a platform-only key the experiment SET is told from a default: the Pulumi CLI merges every default declared in
Pulumi.yaml into each stack's config before the program runs (pulumi/pulumi pkg/workspace/config.go mergeConfig,
at pkg/v3.259.0), and the program receives one config bag: a default and an equal value set on purpose look the
same. So a platform-only key is refused when its value differs from the Pulumi.yaml default, which is generated
from the same field defaults (synth/project_file.py); a key set *to* its default changes nothing and is accepted
(docs/research/platform.md §6b). The refusal happens before the StackReference is read: nothing is registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from pydantic import TypeAdapter, ValidationError

from core import data, export
from core.keys import key
from core.lustre_paths import experiment_dir
from core.naming import KUEUE_LOCAL_QUEUE, ExperimentNames
from core.settings.job import needs_wandb_key
from core.settings.registry import EXPERIMENT_KEYS, SECRET_KEYS, config_fields, decode_config_value
from core.settings.tenancy import experiment_name, name_problem

if TYPE_CHECKING:
    from core.settings import Settings

# EXPERIMENT_KEYS (imported above): the keys an experiment stack sets itself, what it trains and how its own Ray
# cluster is shaped (the records whose owner is experiment or both). Every other key belongs to the platform.

# The stack output the contract travels in, and its layout version: an experiment refuses any other version.
CONTRACT_OUTPUT = "experimentPlatform"
KUBECONFIG_OUTPUT = "kubeconfig"
SCHEMA_VERSION = 1


def platform_only_problems(values: dict[str, Any]) -> list[str]:
    """One line per platform-only key an experiment stack set to something other than its Pulumi.yaml default."""
    fields = config_fields()
    p = []
    for k in sorted(values):
        if k in EXPERIMENT_KEYS or k in SECRET_KEYS or k not in fields:
            continue  # unknown keys are reported by load_settings, with a suggestion
        _, _, info = fields[k]
        if _differs_from_default(values[k], info):
            p.append(
                f"{key(k)}: is a platform setting; an experiment stack ({key('platformStack')} is set) uses its "
                "platform's value: remove it here, or change it on the platform stack"
            )
    return p


def _differs_from_default(raw: Any, info: Any) -> bool:
    default = info.get_default(call_default_factory=True)
    value = decode_config_value(raw, info)
    try:
        return TypeAdapter(info.annotation).validate_python(value) != default
    except ValidationError:
        return True  # not even of the key's type: certainly not its default


def contract(
    s: "Settings",
    export_service_account: Optional[str],
    egress: Optional[dict[str, bool]] = None,
    cluster_id: Any = None,
    export_principals: Optional[dict[str, Any]] = None,
    data_principals: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """What a platform stack gives its experiments (the `experimentPlatform` output): its value of every
    platform key, with the names derived from its prefix resolved (the bucket), the service account its own export
    runs as, the cluster's id (`clusterId`, an Output: `projects/<p>/locations/<l>/clusters/<name>`), and for each
    experiment it hosts the names it created for it (EXPERIMENTS_KEY), with the Workload Identity principal of its
    export service account (`export_principals`, Outputs: the project number) and of its data staging service account
    (`data_principals`). `egress` is what the experiment
    namespaces' NetworkPolicies let pods reach. No secret, and neither is the kubeconfig output (it holds no
    credential): an experimenter reads both without the right to decrypt the platform's secrets (docs/security.md)."""
    settings: dict[str, Any] = {}
    sections = {sec for sec, _, _ in config_fields().values()}
    dumped = {name: getattr(s, name).model_dump(mode="json") for name in sections}
    for k, (section, fname, _) in sorted(config_fields().items()):
        if k in EXPERIMENT_KEYS:
            continue
        value = dumped[section][fname]
        if value is not None:
            settings[k] = value
    # Derived from the platform's prefix, which the experiment does not share: pass the resolved name.
    settings["bucketName"] = s.bucket_name
    if s.image_streaming:
        # The repository the platform copies the NeMo-RL images into (its own, unless imageRepository names one).
        settings["imageRepository"] = s.image_repository
    return {
        "schemaVersion": SCHEMA_VERSION,
        "platformStack": s.stack_name,
        "gcpProject": s.gcp_project,
        "gcpRegion": s.gcp_region or s.region,
        "settings": settings,
        "exportServiceAccount": export_service_account,
        "maxGpuNodes": s.gpu.nodes,
        # What the namespace's NetworkPolicies let pods reach (workloads/manifests/network_policy.py PolicyArgs):
        # an experiment's pods live under them.
        "egress": dict(egress or {}),
        # The experiment's Kubernetes provider is identified by it (CLUSTER_ID_KEY).
        CLUSTER_ID_KEY: cluster_id,
        EXPERIMENTS_KEY: {
            name: experiment_entry(s, name, (export_principals or {}).get(name), (data_principals or {}).get(name))
            for name in sorted(s.tenancy.experiments)
        },
        # What an experiment's own names may not be (collision_problems).
        "platformNames": {
            "rayJob": s.names.ray_job,
            "rayCluster": s.names.ray_cluster,
            "exportJob": s.names.export_job,
            "runName": s.run_name,
        },
    }


EXPERIMENTS_KEY = "experiments"


def experiment_entry(
    s: "Settings", name: str, export_principal: Any = None, data_principal: Any = None
) -> dict[str, Any]:
    """What the platform created for experiment `name` (workloads/experiment_tenancy.py), as its stack reads it."""
    names = ExperimentNames(s.names, s.storage.namespace, name)
    return {
        "namespace": names.namespace,
        "serviceAccount": s.storage.ksa_name,
        "exportServiceAccount": names.export_ksa,
        "exportPrincipal": export_principal,
        "exportPrefix": export.experiment_prefix(name),
        # The data staging Job's: the principal its stack grants read on its gs:// training data.
        "dataServiceAccount": names.data_ksa,
        "dataPrincipal": data_principal,
        "lustreDirectory": experiment_dir(name),
        # Where the platform queues (`queue: kueue`): the LocalQueue it made in the namespace, which the experiment's
        # RayJob names (workloads/manifests/kueue.py queueing_of); None: its jobs start when created.
        "localQueue": KUEUE_LOCAL_QUEUE if s.queue.queue == "kueue" else None,
    }


def experiment_of(values: dict[str, Any], stack_name: str) -> str:
    """The experiment an experiment stack names (`experiment`, else its stack name), from its raw config."""
    raw = values.get("experiment")
    return str(raw) if raw not in (None, "") else stack_name


def listing_problems(ref: str, values: dict[str, Any], stack_name: str, platform: dict[str, Any]) -> list[str]:
    """One line when the platform hosts no experiment of this stack's name (checked before anything is
    registered). A name that is no DNS label is left to the `experiment` rule."""
    name = experiment_of(values, stack_name)
    if name_problem(name):
        return []
    hosted = platform.get(EXPERIMENTS_KEY) or {}
    if name in hosted:
        return []
    which = "experiment" if values.get("experiment") not in (None, "") else "experiment (default: the stack's name)"
    listed = ", ".join(sorted(hosted)) or "none"
    return [
        f"{key('experiment')}: platform {ref!r} hosts no experiment {name!r} (its experiments: {listed}); add it to "
        f"the platform's {key('experiments')} and run `pulumi up` there, or set {which} to one of them"
    ]


def queue_problems(s: "Settings", platform: dict[str, Any]) -> list[str]:
    """One line when the platform queues (its `queue` is kueue, which the experiment's RayJob then names a LocalQueue
    for) but made no LocalQueue in this experiment's namespace: a platform not updated since it gained the
    experiment's queue, where the RayJob would wait for a queue that does not exist."""
    if s.queue.queue != "kueue":
        return []
    entry = (platform.get(EXPERIMENTS_KEY) or {}).get(experiment_name(s)) or {}
    if entry.get("localQueue"):
        return []
    return [
        f"{key('queue')}: the platform queues its jobs (queue: kueue) but its contract names no LocalQueue in "
        f"namespace {entry.get('namespace')!r}; run `pulumi up` on the platform stack first"
    ]


def collision_problems(s: "Settings", platform: dict[str, Any]) -> list[str]:
    """What an experiment may not share with its platform: the names of its RayJob, its RayJob's cluster and its
    export Job (they would name the platform's own objects, one namespace over, in every command and in `kubectl get
    -A`), and its run name (NeMo-RL's W&B run id is the run name: the same W&B project would continue the platform's
    run); and where it exports (only the folder its platform made for it exists and is its own)."""
    theirs = platform.get("platformNames") or {}
    p = []
    ours = {"rayJob": s.names.ray_job, "rayCluster": s.names.ray_cluster, "exportJob": s.names.export_job}
    same = sorted(k for k, v in ours.items() if theirs.get(k) == v)
    if same:
        p.append(
            f"{key('prefix')}: {s.prefix!r} gives this experiment its platform's own names ({', '.join(same)}: "
            f"{ours[same[0]]!r}); choose another prefix"
        )
    if s.job.enabled and theirs.get("runName") == s.run_name:
        p.append(f"{key('runName')}: {s.run_name!r} is its platform's run name; choose another")
    entry = (platform.get(EXPERIMENTS_KEY) or {}).get(experiment_name(s)) or {}
    prefix = entry.get("exportPrefix")
    if prefix and s.startup.export_checkpoints and s.export_destination.prefix != prefix:
        p.append(
            f"{key('exportDestination')}: an experiment exports to its own folder gs://{s.bucket_name}/{prefix} "
            f"(its platform creates it); remove exportDestination (now {s.startup.export_destination!r})"
        )
    return p


# The experiment's Kubernetes provider carries the platform cluster's id as its clusterIdentifier: pulumi-kubernetes
# then replaces the provider (and every object of the experiment) only when the id changes, never for a changed
# kubeconfig (the platform's privateEndpoint / dnsEndpoint, a CA rotation), which without it replaces them all
# (pulumi-kubernetes provider.go:486-502, :553 DiffConfig at v4.32.0; the identifier since v4.16.0,
# pulumi/pulumi-kubernetes#3068). The platform's own provider carries the same id (infra/cluster.py).
CLUSTER_ID_KEY = "clusterId"


def cluster_id_problems(ref: str, platform: Optional[dict[str, Any]]) -> list[str]:
    """The contract of a platform deployed before it published its cluster's id has none: refused, not guessed."""
    if (platform or {}).get(CLUSTER_ID_KEY):
        return []
    return [
        f"{key('platformStack')}: platform {ref!r} publishes no cluster id ({CONTRACT_OUTPUT}.{CLUSTER_ID_KEY}; "
        "deployed by an earlier release): run `pulumi up` on the platform stack first"
    ]


def admission_problems(s: "Settings") -> list[str]:
    """What its namespace's admission policy would refuse: only the pinned Python image may write the shared cache
    (workloads/manifests/tenancy.py), so an experiment prefetches (without the prefetch its head's entrypoint would
    download the weights into the cache, which its Ray pods mount read-only), and its prefetch runs in that image."""
    if not s.job.enabled:
        return []
    if not s.startup.prefetch_weights:
        return [
            f"{key('prefetchWeights')}: without the prefetch the Ray head downloads the weights into the shared "
            "model cache, which an experiment's Ray pods mount read-only; keep prefetchWeights on"
        ]
    if s.startup.prefetch_image != "python":
        return [
            f"{key('prefetchImage')}: an experiment's prefetch runs the pinned Python image, the only one its "
            "platform lets write the shared model cache; set prefetchImage to python"
        ]
    return []


def egress_problems(s: "Settings", platform: dict[str, Any]) -> list[str]:
    """What the experiment's pods must reach that its namespace's NetworkPolicies (the platform's, `egress` in the
    contract: workloads/experiment_tenancy.py experiment_policies) do not allow, one line each."""
    egress = platform.get("egress") or {}
    ref = s.stack.platform_stack
    p = []
    prefetch = s.job.enabled and s.startup.prefetch_weights
    if prefetch and not egress.get("prefetch"):
        p.append(
            f"{key('prefetchWeights')}: platform {ref!r} lets no prefetch Job reach Hugging Face (its prefetchWeights "
            "is false); set prefetchWeights to false here or turn it on there"
        )
    elif prefetch and s.startup.prefetch_image == "python" and not egress.get("prefetchPypi"):
        p.append(
            f"{key('prefetchImage')}: platform {ref!r} lets the prefetch reach no PyPI (its prefetchImage is "
            "nemo-rl); set prefetchImage to nemo-rl here"
        )
    if s.job.enabled and not egress.get("staging"):
        p.append(
            f"{key('platformStack')}: platform {ref!r} lets no data staging Job reach Hugging Face (deployed by an "
            "earlier release): run `pulumi up` on the platform stack first"
        )
    elif (
        s.job.enabled
        and s.recipe.data is not None
        and data.gcs_volumes(s.recipe.data)
        and not (
            egress.get("stagingStorage")
            # ... and the principal of the staging service account it made in the experiment's namespace
            and ((platform.get(EXPERIMENTS_KEY) or {}).get(experiment_name(s)) or {}).get("dataPrincipal")
        )
    ):
        p.append(
            f"{key('jobData')}: platform {ref!r} lets no data staging Job reach Cloud Storage (deployed by an earlier "
            "release); use Hub or Lustre data here, or run `pulumi up` on the platform with this commit"
        )
    if needs_wandb_key(s) and not egress.get("headWandb"):
        p.append(
            f"{key('jobOverrides')}.wandb_enabled: platform {ref!r} lets no Ray head reach W&B; set wandb_enabled to "
            "false here, or run `pulumi up` on the platform with this commit (it opens W&B for its experiments)"
        )
    return p


def contract_problem(ref: str, value: Any) -> Optional[str]:
    """One line when the referenced stack is not a platform of this program (or of another contract version)."""
    if not isinstance(value, dict):
        return (
            f"{key('platformStack')}: stack {ref!r} is not a nemo-rl-gke platform stack (it has no "
            f"{CONTRACT_OUTPUT!r} output; is it an experiment stack, or not yet up?)"
        )
    version = value.get("schemaVersion")
    if version != SCHEMA_VERSION or not isinstance(value.get("settings"), dict):
        return (
            f"{key('platformStack')}: stack {ref!r} gives platform contract version {version!r}, this program reads "
            f"version {SCHEMA_VERSION}; run `pulumi up` on the platform with this commit"
        )
    return None


def experiment_values(values: dict[str, Any], platform: dict[str, Any], stack_name: str) -> dict[str, Any]:
    """The experiment's settings: the platform's values of the platform keys, the experiment's own keys over them.
    An experiment brings its own Ray cluster: its GPUs come and go with its RayJob (jobMode own-cluster). Its
    Kubernetes objects live in its own namespace (`namespace` is the one its platform made for it), and it exports
    to its own folder unless it says otherwise (collision_problems refuses another)."""
    merged = {k: v for k, v in platform["settings"].items() if k not in EXPERIMENT_KEYS}
    merged.update({k: v for k, v in values.items() if k in EXPERIMENT_KEYS and k not in SECRET_KEYS})
    merged["jobMode"] = "own-cluster"
    entry = (platform.get(EXPERIMENTS_KEY) or {}).get(experiment_of(values, stack_name))
    if entry is not None:
        merged["namespace"] = entry["namespace"]
        if values.get("exportDestination") in (None, ""):
            merged["exportDestination"] = entry["exportPrefix"]
    return merged
