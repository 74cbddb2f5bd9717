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

from core import data
from core.keys import key
from core.settings.job import needs_wandb_key
from core.settings.registry import EXPERIMENT_KEYS, SECRET_KEYS, config_fields, decode_config_value

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
) -> dict[str, Any]:
    """What a platform stack gives its experiments (the `experimentPlatform` output): its value of every
    platform key, with the names derived from its prefix resolved (the bucket), the service account its export
    runs as, and the cluster's id (`clusterId`, an Output: `projects/<p>/locations/<l>/clusters/<name>`). No secret:
    the kubeconfig is its own secret output; tokens stay in each stack's own Secret."""
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
    }


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


def egress_problems(s: "Settings", platform: dict[str, Any]) -> list[str]:
    """What the experiment's pods must reach that the platform's NetworkPolicies do not allow, one line each."""
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
        and not egress.get("stagingStorage")
    ):
        p.append(
            f"{key('jobData')}: platform {ref!r} lets no data staging Job reach Cloud Storage; use Hub or Lustre data "
            "here, or run the platform without a job of its own (it then opens Cloud Storage for experiments)"
        )
    if needs_wandb_key(s) and not egress.get("headWandb"):
        p.append(
            f"{key('jobOverrides')}.wandb_enabled: platform {ref!r} lets no Ray head reach W&B; set wandb_enabled to "
            "false here, or run the platform without a job of its own (it then opens W&B for experiments)"
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


def experiment_values(values: dict[str, Any], platform: dict[str, Any]) -> dict[str, Any]:
    """The experiment's settings: the platform's values of the platform keys, the experiment's own keys over them.
    An experiment brings its own Ray cluster: its GPUs come and go with its RayJob (jobMode own-cluster)."""
    merged = {k: v for k, v in platform["settings"].items() if k not in EXPERIMENT_KEYS}
    merged.update({k: v for k, v in values.items() if k in EXPERIMENT_KEYS and k not in SECRET_KEYS})
    merged["jobMode"] = "own-cluster"
    return merged
