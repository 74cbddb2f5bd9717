"""The nemo-rl-gke policy rules, as plain functions over plain data (no pulumi-policy import here).

A rule sees a `Resource` (type token, name, camelCase props with secrets unwrapped, protect / retainOnDelete,
provider URN, per-property dependencies, stack name) or, for stack rules, every resource of the stack, and
returns messages that each say what to change. `nemo_rl_pack.py` adapts the rules to pulumi-policy's
`ResourceValidationPolicy` / `StackValidationPolicy` callbacks for `pulumi preview --policy-pack policy`;
the tests feed the same rules the synth engine's records, so one implementation serves both.

Values a preview cannot know yet arrive as Pulumi's unknown sentinels; a rule skips what it cannot decide
instead of guessing. Rules match resource types and inputs, never a fixed list of resources, so new objects
(a RayJob, a data-prep Job) are checked as soon as the program registers them.

The pack is self-contained (it can be published to Pulumi Cloud without the project), so the catalog facts it
needs come from catalog_facts.json beside it, which `python -m synth.policy_facts` derives from the project's
catalog (tests/test_policy.py keeps the two equal).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import yaml

# --- facts from the project's catalog: policy/catalog_facts.json (`python -m synth.policy_facts` writes it) ------
_FACTS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent / "catalog_facts.json").read_text(encoding="utf-8")
)
NEMO_RL_IMAGE_REPO: str = _FACTS["nemo_rl_image_repo"]
# NeMo-RL image tag -> the Ray inside it (= the RayCluster's rayVersion).
NEMO_RL_RAY_VERSIONS: dict[str, str] = dict(_FACTS["nemo_rl_ray_versions"])
# A4 / A3 Ultra node label value (cloud.google.com/gke-accelerator) -> gIB tuner config of that GPU type.
TUNER_CONFIGS: dict[str, str] = dict(_FACTS["tuner_configs"])
RDMA_NICS_PER_NODE: int = _FACTS["rdma_nics_per_node"]
# Variables that carry a token's value and the Secrets holding the tokens: tokens reach pods only as files.
# RAY_AUTH_TOKEN defined as the empty string carries nothing: it keeps KubeRay (>= 1.6.0) from injecting the token
# from its Secret, and Ray's loader then reads RAY_AUTH_TOKEN_PATH (workloads/manifests/pod_security.py).
TOKEN_VALUE_VARIABLES: tuple[str, ...] = tuple(_FACTS["token_value_variables"])
TOKEN_SECRETS: tuple[str, ...] = tuple(_FACTS["token_secrets"])
# Ray ports that run code for whoever reaches them (Ray's security docs): port name (KubeRay's head Service and
# container port names) -> number, from KubeRay's constant.go.
RAY_EXPOSED_PORTS: dict[str, int] = dict(_FACTS["ray_exposed_ports"])

GPU_NODE_LABEL = "cloud.google.com/gke-accelerator"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_COMPUTE_SA_SUFFIX = "-compute@developer.gserviceaccount.com"
DEV_STACK = "dev"  # the scratch stack (Pulumi.dev.yaml): the advisory rules let it run unprotected

LUSTRE_TYPE = "gcp:lustre/instance:Instance"
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
BUCKET_TYPE = "gcp:storage/bucket:Bucket"

# Pulumi's markers for values a preview cannot know yet (string, boolean, number, array, asset, archive,
# object); the engine uses the first.
UNKNOWN_SENTINELS = frozenset(
    {
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in UNKNOWN_SENTINELS


# --- the data a rule sees ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resource:
    """One resource as a rule sees it, whichever side (pulumi-policy or the synth engine) it came from."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    stack: str = ""
    protect: bool = False
    # None: not visible. pulumi-policy 1.21's resource options carry no retainOnDelete; the engine's do.
    retain_on_delete: Optional[bool] = None
    provider_urn: Optional[str] = None
    property_dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # True: a custom resource (the engine's records say so); None: not said (pulumi-policy's callbacks, where
    # the CLI fills in the default provider of every custom resource, so only components arrive without one).
    custom: Optional[bool] = True

    def get(self, path: str, default: Any = None) -> Any:
        """Prop at a dotted path (`addonsConfig.lustreCsiDriverConfig.enabled`); `default` when absent."""
        cur: Any = self.props
        for part in path.split("."):
            if isinstance(cur, Mapping) and part in cur:
                cur = cur[part]
            else:
                return default
        return cur

    @property
    def label(self) -> str:
        return f"{self.type.rsplit(':', 1)[-1]} {self.name!r}"


def stack_of_urn(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>` -> `<stack>`."""
    head = urn.split("::", 1)[0].split(":")
    return head[2] if len(head) >= 3 else ""


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    enforcement: str  # "mandatory" | "advisory"
    scope: str  # "resource": check(Resource) -> [message]; "stack": check([Resource]) -> [(urn, message)]
    check: Callable[..., list]


@dataclass(frozen=True)
class Violation:
    policy: str
    enforcement: str
    urn: str
    message: str


# --- helpers over nested props -------------------------------------------------------------------------------
def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) in a nested structure, depth first, the root included."""
    yield path, value
    if isinstance(value, Mapping):
        for k in value:
            yield from _walk(value[k], _join(path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, _join(path, i))


def pod_templates(props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, template) for every pod template in a Kubernetes object: a mapping whose `spec` has
    `containers`. Covers Pods, workload `spec.template`s, CronJobs, and KubeRay head/worker groups (also a
    RayJob's embedded rayClusterSpec and submitterPodTemplate). A bare Pod is reported with path ''."""
    for path, value in _walk(props):
        if (
            isinstance(value, Mapping)
            and isinstance(value.get("spec"), Mapping)
            and isinstance(value["spec"].get("containers"), (list, tuple))
        ):
            yield path, value


def _containers(pod_spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    out = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(pod_spec.get(key) or []):
            if isinstance(c, Mapping):
                out.append((f"{key}[{i}]", c))
    return out


def _where(path: str, sub: str) -> str:
    return f"{path}.{sub}" if path else sub


# --- 1. no plaintext secrets (mandatory) -----------------------------------------------------------------------
_TOKEN_PATTERNS = (
    ("a Hugging Face token (hf_...)", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}")),
    ("an AWS access key id", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
# Switch-like values of secret-looking names (HF_HUB_DISABLE_IMPLICIT_TOKEN=1) are not secrets.
_SWITCH_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off"}
# Literal assignments of UPPER_CASE names in free text: shell `NAME=value` (no spaces, as the shell needs) and
# YAML / JSON `NAME: value`, `"NAME": "value"`. Upper case only: Hydra overrides such as `+data.input_key=problem`
# in an entrypoint are configuration keys, not environment variables. A bare value must end at a delimiter, so
# code such as `{"HF_TOKEN": os.environ["HF_TOKEN"]}` or `KEY = os.environ[...]` is not an assignment of a literal.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.+-])([A-Z][A-Z0-9_]*)(?:=|[\"']?:[ \t]+)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z0-9_\-+/=.~@%]+)(?=[\s;&|,}\]\"')]|$)"
)

_SECRET_HOW = (
    "move the value into a Kubernetes Secret (the program fills its Secret from `pulumi config set "
    "--secret`) and mount it as a read-only file"
)


def is_secret_like_name(name: str) -> bool:
    """HF_TOKEN, WANDB_API_KEY, *_TOKEN, *_KEY, *_SECRET, *PASSWORD*; not TOKENIZERS_PARALLELISM or KEY_FILE."""
    n = name.upper()
    if "PASSWORD" in n or "PASSWD" in n:
        return True
    parts = [p for p in re.split(r"[^A-Z0-9]+", n) if p]
    return bool(parts) and (parts[-1] in ("KEY", "APIKEY", "SECRET", "PASSPHRASE") or parts[-1].endswith("TOKEN"))


def _is_literal_secret_value(value: Any) -> bool:
    """A literal that could be a credential: not a reference ($VAR, $(VAR)), a path, or an on/off switch."""
    if not isinstance(value, str) or is_unknown(value):
        return False
    v = value.strip().strip("\"'")
    return not (v.lower() in _SWITCH_VALUES or v.startswith("$") or v.startswith("/"))


def _token_kind(text: str) -> Optional[str]:
    for what, pattern in _TOKEN_PATTERNS:
        if pattern.search(text):
            return what
    return None


def _scan_text(text: Any, where: str, fix: str) -> list[str]:
    """Secret-like assignments and token-shaped strings in free text (scripts, entrypoints, config files)."""
    if not isinstance(text, str) or is_unknown(text):
        return []
    out = []
    for m in _ASSIGNMENT.finditer(text):
        if is_secret_like_name(m.group(1)) and _is_literal_secret_value(m.group(2)):
            out.append(f"{where} assigns {m.group(1)} a literal value: {fix}.")
    kind = _token_kind(text)
    if kind and not out:
        out.append(f"{where} contains what looks like {kind}: {fix}.")
    return out


def _scan_env_list(env: Any, where: str) -> list[str]:
    out = []
    for i, item in enumerate(env if isinstance(env, (list, tuple)) else []):
        if not isinstance(item, Mapping) or "value" not in item:
            continue
        name, value = str(item.get("name", "")), item["value"]
        at = f"{where}[{i}]"
        token = _token_kind(value) if isinstance(value, str) else None
        if is_secret_like_name(name) and _is_literal_secret_value(value):
            out.append(f"env {name} at {at} has a literal value: {_SECRET_HOW}.")
        elif token:
            out.append(f"env {name} at {at} holds what looks like {token}: {_SECRET_HOW}.")
    return out


def _scan_runtime_env(text: Any, where: str) -> list[str]:
    fix = (
        "a Ray runtime env is shown in the Ray dashboard; remove it there and mount the token into the Ray pods "
        "as a file from a Kubernetes Secret (HF_TOKEN_PATH, NETRC, RAY_AUTH_TOKEN_PATH name the files)"
    )
    if not isinstance(text, str) or is_unknown(text):
        return []
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = None
    env_vars = parsed.get("env_vars") if isinstance(parsed, Mapping) else None
    if not isinstance(env_vars, Mapping):
        return _scan_text(text, where, fix)
    out = [
        f"{where} sets env_vars.{k} to a literal value: {fix}."
        for k, v in env_vars.items()
        if is_secret_like_name(str(k)) and _is_literal_secret_value(v)
    ]
    kind = _token_kind(text)
    if kind and not out:
        out.append(f"{where} contains what looks like {kind}: {fix}.")
    return out


def check_plaintext_secrets(r: Resource) -> list[str]:
    """Kubernetes env, ConfigMap data, container commands, RayJob runtimeEnvYAML / entrypoint: no credentials."""
    if not r.type.startswith("kubernetes:") or r.type.endswith(":Secret"):
        return []  # a Secret is where credentials belong
    out: list[str] = []
    for path, value in _walk(r.props):
        if path.endswith(".env") or path == "env":
            out += _scan_env_list(value, path)
        elif isinstance(value, Mapping) and ("command" in value or "args" in value) and "image" in value:
            for key in ("command", "args"):
                for i, text in enumerate(value.get(key) or []):
                    out += _scan_text(text, _join(_join(path, key), i), _SECRET_HOW)
    kind = r.type.rsplit(":", 1)[-1]
    if kind == "ConfigMap":
        for section in ("data", "binaryData"):
            for key, value in (r.get(section) or {}).items():
                where = f"{section}.{key}"
                fix = "move it to a Kubernetes Secret and mount or reference that instead of the ConfigMap"
                if is_secret_like_name(key) and _is_literal_secret_value(value) and "\n" not in str(value):
                    out.append(f"{where} is a secret-like key with a literal value: {fix}.")
                else:
                    out += _scan_text(value, where, fix)
    if kind == "RayJob":
        out += _scan_runtime_env(r.get("spec.runtimeEnvYAML"), "spec.runtimeEnvYAML")
        out += _scan_text(
            r.get("spec.entrypoint"),
            "spec.entrypoint",
            "the entrypoint is stored in the RayJob and shown in the Ray dashboard; let the tools read "
            "the token file the pod mounts (HF_TOKEN_PATH) instead",
        )
    return out


# --- 2. Lustre port mode consistent (mandatory, stack) ----------------------------------------------------------
def _network_key(value: Any) -> Optional[tuple[Optional[str], str]]:
    """(project or None, network name) of a network id / self link / name; None when unknown."""
    if is_unknown(value):
        return None
    v = "default" if value in (None, "") else str(value)
    v = re.sub(r"^https://(www|compute)\.googleapis\.com/compute/(v1|beta)/", "", v)
    m = re.match(r"^projects/([^/]+)/global/networks/([^/]+)$", v)
    return (m.group(1), m.group(2)) if m else (None, v.rsplit("/", 1)[-1])


def same_network(a: Resource, b: Resource) -> Optional[bool]:
    """Whether two resources name the same VPC in `network`; None when a preview cannot tell.

    Known values are compared (project and name); when either is unknown (a VPC created in the same
    preview), the `network` property dependencies decide: both taken from the same Network resource."""
    ka, kb = _network_key(a.props.get("network")), _network_key(b.props.get("network"))
    if ka is not None and kb is not None:
        return ka[1] == kb[1] and (ka[0] is None or kb[0] is None or ka[0] == kb[0])
    da, db = set(a.property_dependencies.get("network") or ()), set(b.property_dependencies.get("network") or ())
    if da and db:
        return True if da == db else (False if not da & db else None)
    return None


def _as_bool(value: Any) -> Optional[bool]:
    if is_unknown(value):
        return None
    return bool(value) and str(value).lower() != "false"


def check_lustre_port_mode(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """An instance created with GKE support serves LNet on 6988; the cluster must then use the legacy port."""
    out = []
    for inst in (r for r in resources if r.type == LUSTRE_TYPE):
        gke = _as_bool(inst.props.get("gkeSupportEnabled", False))
        for cluster in (r for r in resources if r.type == CLUSTER_TYPE):
            legacy = _as_bool(cluster.get("addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort", False))
            if gke is None or legacy is None or gke == legacy or same_network(inst, cluster) is False:
                continue
            if gke:
                what = (
                    f"Lustre instance {inst.name!r} has gkeSupportEnabled=true (LNet on port 6988) but cluster "
                    f"{cluster.name!r} does not set addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort, "
                    "so the CSI driver dials port 988 and mounts fail"
                )
            else:
                what = (
                    f"cluster {cluster.name!r} sets addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort="
                    f"true (port 6988) but Lustre instance {inst.name!r} has gkeSupportEnabled=false (port 988)"
                )
            out.append(
                (
                    inst.urn,
                    f"{what}. Drive both sides from the one setting nemo-rl-gke:lustrePortMode: "
                    "`legacy` turns both on, `modern` turns both off (needs GKE >= "
                    "1.33.2-gke.4780000).",
                )
            )
    return out


# --- 3. Lustre on the cluster's VPC (mandatory, stack) ----------------------------------------------------------
def check_lustre_network(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """Managed Lustre is reachable only from the VPC it was created on (through private service access)."""
    clusters = [r for r in resources if r.type == CLUSTER_TYPE]
    out = []
    for inst in (r for r in resources if r.type == LUSTRE_TYPE):
        verdicts = [same_network(inst, c) for c in clusters]
        if clusters and all(v is False for v in verdicts):
            nets = ", ".join(f"{c.name!r} on {c.props.get('network') or 'default'}" for c in clusters)
            out.append(
                (
                    inst.urn,
                    f"Lustre instance {inst.name!r} is on network {inst.props.get('network')} but "
                    f"no cluster is (clusters: {nets}); create the instance with network set to the "
                    "cluster's VPC id (the primary network the private service access range "
                    "is on).",
                )
            )
    return out


# --- 4. rayVersion = the image's Ray (mandatory) ----------------------------------------------------------------
_RAY_IMAGE = re.compile(r"^(?:docker\.io/)?rayproject/ray(?:-ml)?:(\d+\.\d+\.\d+)")


def ray_of_image(image: str) -> Optional[tuple[str, Optional[str]]]:
    """(release tag, Ray version or None if the tag is not in the table) for NeMo-RL / Ray images; else None."""
    if not isinstance(image, str) or is_unknown(image):
        return None
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    # NGC's image, or a registry copy of it under the same name and tag (imagePath streaming's Artifact Registry).
    if name == NEMO_RL_IMAGE_REPO or name.endswith("/" + NEMO_RL_IMAGE_REPO.rsplit("/", 1)[1]):
        return tag, NEMO_RL_RAY_VERSIONS.get(tag)
    m = _RAY_IMAGE.match(ref)
    return (m.group(1), m.group(1)) if m else None


def _ray_cluster_specs(r: Resource) -> list[tuple[str, Mapping[str, Any]]]:
    """The RayCluster specs a KubeRay object carries: its own, a RayJob's rayClusterSpec (own-cluster mode;
    a RayJob with clusterSelector has none), a RayService's rayClusterConfig."""
    if not r.type.startswith("kubernetes:ray.io/"):
        return []
    kind = r.type.rsplit(":", 1)[-1]
    path = {"RayCluster": "spec", "RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}.get(kind)
    spec = r.get(path) if path else None
    return [(path, spec)] if isinstance(spec, Mapping) else []


def check_ray_version(r: Resource) -> list[str]:
    out = []
    for spec_path, spec in _ray_cluster_specs(r):
        have = spec.get("rayVersion")
        if is_unknown(have):
            continue
        for tpl_path, tpl in pod_templates(spec):
            for c_path, c in _containers(tpl["spec"]):
                found = ray_of_image(c.get("image"))
                if found is None:
                    continue
                tag, ray = found
                at = f"{spec_path}.{tpl_path}.spec.{c_path}"
                if ray is None:
                    out.append(
                        f"image {c['image']} at {at} is a NeMo-RL release this policy does not know: use one "
                        f"of {', '.join(sorted(NEMO_RL_RAY_VERSIONS))}, or add the release's record to "
                        "core/catalog/nemo_rl.py and run `python -m synth.policy_facts`."
                    )
                elif have != ray:
                    now = f"is {have}" if have else "is not set"
                    out.append(
                        f"{spec_path}.rayVersion {now} but image {c['image']} (at {at}) ships Ray {ray}: set "
                        f"rayVersion to {ray} (the program derives it from nemo-rl-gke:nemoRlRelease; unset "
                        "nemo-rl-gke:rayVersion)."
                    )
    return sorted(set(out))


# --- 5. RDMA networking of A4 / A3 Ultra GPU pods (mandatory) ---------------------------------------------------
def _gpu_containers(pod_spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Containers that ask for GPUs; all app containers when none says so (Autopilot needs requests anyway)."""
    cs = [(p, c) for p, c in _containers(pod_spec) if p.startswith("containers")]

    def gpus(c: Mapping[str, Any]) -> bool:
        res = c.get("resources") or {}
        return any(str((res.get(k) or {}).get("nvidia.com/gpu", "0")) not in ("0", "") for k in ("limits", "requests"))

    return [(p, c) for p, c in cs if gpus(c)] or cs


def _rdma_interfaces(value: Any) -> Optional[int]:
    """Interfaces other than the pod's primary one in a networking.gke.io/interfaces value; None if invalid."""
    try:
        items = json.loads(value)
    except (TypeError, ValueError):
        return None
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and i.get("interfaceName") and i.get("network") for i in items
    ):
        return None
    return sum(1 for i in items if i["network"] != "default")


def check_gpu_pod_networking(r: Resource) -> list[str]:
    if not r.type.startswith("kubernetes:"):
        return []
    out = []
    for path, tpl in pod_templates(r.props):
        spec = tpl["spec"]
        gpu = (spec.get("nodeSelector") or {}).get(GPU_NODE_LABEL)
        if gpu not in TUNER_CONFIGS or spec.get("hostNetwork") is True:
            continue  # host-network pods (the gIB installer) see the node's NICs directly
        where = path or "the pod"
        annotations = (tpl.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(INTERFACES_ANNOTATION)
        if value is None:
            out.append(
                f"pod template {where} selects {gpu} nodes but has no {INTERFACES_ANNOTATION} annotation, so "
                "the pod gets only eth0 and NCCL silently falls back to TCP: add it (attach gvnic-1 and "
                "rdma-0..rdma-7, as workloads/manifests/rdma.py interfaces_annotation() does) together with "
                "networking.gke.io/default-interface: eth0."
            )
        elif not is_unknown(value):
            n = _rdma_interfaces(value)
            if n is None or n < RDMA_NICS_PER_NODE:
                out.append(
                    f"pod template {where}: {INTERFACES_ANNOTATION} must be a JSON list of "
                    "{interfaceName, network} attaching all "
                    f"{RDMA_NICS_PER_NODE} RDMA networks (rdma-0..rdma-7) besides eth0; fix the annotation."
                )
        want = TUNER_CONFIGS[gpu]
        for c_path, c in _gpu_containers(spec):
            env = {e.get("name"): e for e in (c.get("env") or []) if isinstance(e, Mapping)}
            item = env.get("NCCL_TUNER_CONFIG_PATH")
            at = f"{_where(path, 'spec')}.{c_path}"
            if item is None:
                out.append(
                    f"container {c.get('name')!r} at {at} runs on {gpu} but sets no NCCL_TUNER_CONFIG_PATH: "
                    f"add env NCCL_TUNER_CONFIG_PATH={want} (the gIB tuner for {gpu})."
                )
            elif "value" in item and not is_unknown(item["value"]) and item["value"] != want:
                out.append(
                    f"container {c.get('name')!r} at {at} runs on {gpu} but NCCL_TUNER_CONFIG_PATH is "
                    f"{item['value']}: set it to {want} (the gIB tuner for {gpu})."
                )
    return out


# --- 6. explicit Kubernetes provider (mandatory) ------------------------------------------------------------------
def check_explicit_provider(r: Resource) -> list[str]:
    if not r.type.startswith("kubernetes:"):
        return []
    name = r.provider_urn.rsplit("::", 1)[-1] if r.provider_urn else None
    if name is None and r.custom is not True:
        return []  # a component (e.g. a Helm v3 Chart): its children carry the providers
    if name is None or name == "default" or name.startswith("default_"):
        used = f"the default provider ({name})" if name else "no provider (so the default one)"
        return [
            f"{r.label} uses {used}, which targets whatever cluster the ambient kubeconfig points at: pass the "
            "GKE cluster's provider explicitly (opts=pulumi.ResourceOptions(provider=gke.provider)) and keep "
            "`pulumi:disable-default-providers: [kubernetes]` in Pulumi.yaml."
        ]
    return []


# --- 7. GPU capacity is spot, flex-start or reserved (advisory) -------------------------------------------------
# A4 / A3 Ultra have no plain on-demand capacity (Google's consumption-option table lists on-demand for N2 only);
# on-demand nodes of other GPU machines are costly and scarce.
_GPU_MACHINE = re.compile(r"^(a2|a3|a4|g2|g4)-")
COMPUTE_CLASS_TYPE = "kubernetes:cloud.google.com/v1:ComputeClass"
RAYJOB_TYPE = "kubernetes:ray.io/v1:RayJob"
CAPACITY_FIX = (
    "list only spot, flex-start and reservation (with nemo-rl-gke:reservation <name>) in nemo-rl-gke:capacity"
)


def _gpu_node_config(node_config: Any) -> bool:
    if not isinstance(node_config, Mapping):
        return False
    accs = node_config.get("guestAccelerators") or []
    counted = any(isinstance(a, Mapping) and str(a.get("count", 0)) not in ("0", "") for a in accs)
    return counted or bool(_GPU_MACHINE.match(str(node_config.get("machineType") or "")))


def _pool_model(node_config: Mapping[str, Any]) -> Optional[str]:
    """The capacity model of a GPU pool's nodes: spot, flex-start, reservation or on-demand; None: unknown."""
    if any(is_unknown(node_config.get(k)) for k in ("spot", "preemptible", "flexStart")):
        return None
    if _as_bool(node_config.get("spot")) or _as_bool(node_config.get("preemptible")):
        return "spot"
    if _as_bool(node_config.get("flexStart")):
        return "flex-start"
    if (node_config.get("reservationAffinity") or {}).get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reservation"
    return "on-demand"


def _priority_model(priority: Any) -> Optional[str]:
    """The capacity model of one ComputeClass priority; None for a `nodepools` priority (its pool says)."""
    if not isinstance(priority, Mapping) or "nodepools" in priority:
        return None
    if _as_bool(priority.get("spot")):
        return "spot"
    if _as_bool((priority.get("flexStart") or {}).get("enabled")):
        return "flex-start"
    if priority.get("reservations"):
        return "reservation"
    return "on-demand"


def check_gpu_capacity(r: Resource) -> list[str]:
    if r.type == COMPUTE_CLASS_TYPE:
        gpu = [
            p
            for p in r.get("spec.priorities") or []
            if isinstance(p, Mapping) and (p.get("gpu") or _GPU_MACHINE.match(str(p.get("machineType") or "")))
        ]
        if any(_priority_model(p) == "on-demand" for p in gpu):
            return [
                f"ComputeClass {r.name!r} has a GPU priority without spot, flexStart or reservations, i.e. "
                f"on-demand, which A4 / A3 Ultra do not offer: {CAPACITY_FIX}."
            ]
        return []
    if r.type not in (NODE_POOL_TYPE, CLUSTER_TYPE):
        return []
    nc = r.props.get("nodeConfig")  # a pool's nodes, or a Standard cluster's default pool
    if not _gpu_node_config(nc) or _pool_model(nc) in (None, "spot", "flex-start", "reservation"):
        return []
    return [
        f"GPU nodes of {r.label} are on-demand VMs, which A4 / A3 Ultra do not offer and other GPUs rarely "
        f"have: {CAPACITY_FIX}."
    ]


# --- 8. stateful resources protected outside dev (advisory) -----------------------------------------------------
def check_protected_outside_dev(r: Resource) -> list[str]:
    if r.stack == DEV_STACK:
        return []
    if r.type == LUSTRE_TYPE and not r.protect and not r.retain_on_delete:
        hint = (
            ""
            if r.retain_on_delete is not None
            else (" (policy packs cannot see retainOnDelete: ignore this if the stack sets lustreOnDestroy=retain)")
        )
        return [
            f"Lustre instance {r.name!r} of stack {r.stack!r} holds checkpoints but `pulumi destroy` would "
            "delete it: set nemo-rl-gke:lustreOnDestroy to protect (or retain)" + hint + "."
        ]
    if r.type == CLUSTER_TYPE and _as_bool(r.props.get("deletionProtection", True)) is False:
        return [
            f"cluster {r.name!r} of stack {r.stack!r} has deletionProtection=false: set "
            "nemo-rl-gke:clusterDeletionProtection true (or unset it; it is on by default outside dev)."
        ]
    return []


# --- 9. bucket uses uniform access (advisory) -----------------------------------------------------------------
def check_bucket_uniform_access(r: Resource) -> list[str]:
    if r.type != BUCKET_TYPE:
        return []
    value = r.props.get("uniformBucketLevelAccess", False)
    if is_unknown(value) or _as_bool(value):
        return []
    return [
        f"bucket {r.name!r} uses per-object ACLs: set uniform_bucket_level_access=True so IAM alone governs "
        "access (hierarchical namespace requires it too)."
    ]


# --- 10. nodes do not run as the default compute service account (advisory) -------------------------------------
def _node_sa_paths(r: Resource) -> list[str]:
    if r.type == NODE_POOL_TYPE:
        return ["nodeConfig.serviceAccount"]
    if r.type == CLUSTER_TYPE:
        if _as_bool(r.props.get("enableAutopilot")):
            return ["clusterAutoscaling.autoProvisioningDefaults.serviceAccount"]
        return ["nodeConfig.serviceAccount"]  # the default pool, even when it is removed right after creation
    return []


def check_node_service_account(r: Resource) -> list[str]:
    out = []
    for path in _node_sa_paths(r):
        sa = r.get(path)
        if is_unknown(sa):
            continue
        if not sa or sa == "default" or str(sa).endswith(DEFAULT_COMPUTE_SA_SUFFIX):
            now = f"is {sa}" if sa else "is unset, so the nodes use the default compute service account"
            out.append(
                f"{path} of {r.label} {now}: set it to the dedicated node service account (infra/node_identity.py "
                "NodeIdentity: logging, monitoring and Artifact Registry reader roles only)."
            )
    return out


# --- 11. Workload Identity on (advisory) ------------------------------------------------------------------------
def check_workload_identity(r: Resource) -> list[str]:
    if r.type == CLUSTER_TYPE:
        if _as_bool(r.props.get("enableAutopilot")):
            return []  # always on in Autopilot
        pool = r.get("workloadIdentityConfig.workloadPool")
        if is_unknown(pool) or pool:
            return []
        return [
            f"cluster {r.name!r} has no workloadIdentityConfig.workloadPool: set it to <project>.svc.id.goog so "
            "pods reach Google APIs as their Kubernetes service account (the bucket grant relies on it)."
        ]
    if r.type == NODE_POOL_TYPE:
        mode = r.get("nodeConfig.workloadMetadataConfig.mode")
        if mode is None or is_unknown(mode) or mode == "GKE_METADATA":
            return []
        return [
            f"node pool {r.name!r} sets nodeConfig.workloadMetadataConfig.mode={mode}, which exposes the node's "
            "identity to pods: set it to GKE_METADATA."
        ]
    return []


# --- tokens only as files (mandatory) ---------------------------------------------------------------------------
_FILES_HOW = (
    "tokens reach pods only as read-only files (HF_TOKEN_PATH, NETRC, RAY_AUTH_TOKEN_PATH name them): "
    "NeMo-RL copies the driver's environment into every actor's runtime env, which Ray's state API serves"
)


def _token_env_problems(env: Any, where: str) -> list[str]:
    out = []
    for i, item in enumerate(env if isinstance(env, (list, tuple)) else []):
        if not isinstance(item, Mapping):
            continue
        name = str(item.get("name", ""))
        ref = (item.get("valueFrom") or {}).get("secretKeyRef") if isinstance(item.get("valueFrom"), Mapping) else None
        blocker = name == "RAY_AUTH_TOKEN" and item.get("value") == "" and "valueFrom" not in item
        if name.upper() in TOKEN_VALUE_VARIABLES and not blocker:
            out.append(f"env {name} at {where}[{i}] puts a token in the pod's environment: {_FILES_HOW}.")
        elif isinstance(ref, Mapping) and ref.get("name") in TOKEN_SECRETS:
            out.append(
                f"env {name} at {where}[{i}] reads Secret {ref.get('name')!r} into the environment: {_FILES_HOW}."
            )
    return out


def check_tokens_only_as_files(r: Resource) -> list[str]:
    """No token variable and no reference to the token Secrets in any pod env or envFrom; no token variable in a
    RayJob's runtime env."""
    if not r.type.startswith("kubernetes:"):
        return []
    out: list[str] = []
    for path, template in pod_templates(r.props):
        for cpath, c in _containers(template["spec"]):
            at = _where(path, f"spec.{cpath}")
            out += _token_env_problems(c.get("env"), f"{at}.env")
            for j, src in enumerate(c.get("envFrom") or []):
                ref = src.get("secretRef") if isinstance(src, Mapping) else None
                if isinstance(ref, Mapping) and ref.get("name") in TOKEN_SECRETS:
                    out.append(
                        f"envFrom at {at}.envFrom[{j}] loads Secret {ref.get('name')!r} into the "
                        f"environment: {_FILES_HOW}."
                    )
    if r.type.rsplit(":", 1)[-1] == "RayJob":
        text = r.get("spec.runtimeEnvYAML")
        if isinstance(text, str) and not is_unknown(text):
            try:
                parsed = yaml.safe_load(text)
            except yaml.YAMLError:
                parsed = None
            env_vars = parsed.get("env_vars") if isinstance(parsed, Mapping) else None
            for k in (env_vars or {}) if isinstance(env_vars, Mapping) else {}:
                if str(k).upper() in TOKEN_VALUE_VARIABLES:
                    out.append(
                        f"spec.runtimeEnvYAML sets env_vars.{k}, which every actor's runtime env and the Ray "
                        f"dashboard then show: {_FILES_HOW}."
                    )
    return out


# --- control plane not open to everyone (advisory) ---------------------------------------------------------
def check_control_plane_restricted(r: Resource) -> list[str]:
    """The cluster's IP endpoint is private or limited to authorized networks, on every stack (dev included: an
    endpoint open to every address is one leaked credential away from the control plane)."""
    if r.type != CLUSTER_TYPE:
        return []
    private = r.get("privateClusterConfig.enablePrivateEndpoint")
    blocks = r.get("masterAuthorizedNetworksConfig.cidrBlocks")
    if is_unknown(private) or is_unknown(blocks):
        return []
    if _as_bool(private) or (isinstance(blocks, (list, tuple)) and blocks):
        return []
    return [
        f"cluster {r.name!r} in stack {r.stack!r} leaves its IP endpoint open to every address (IAM still "
        "applies): set nemo-rl-gke:authorizedNetworks to the ranges you deploy from, or keep nemo-rl-gke:"
        "privateEndpoint true (the default: the DNS-based endpoint serves pulumi and kubectl)."
    ]


# --- 12. spot-only GPU capacity outside dev needs checkpointing (advisory, stack) --------------------------------
_CHECKPOINTING_ON = re.compile(r"checkpointing\.enabled=(True|true)\b")


def check_spot_only_needs_checkpointing(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """Outside dev, GPU capacity that is spot and nothing else loses the run at a preemption unless the job
    checkpoints (NeMo-RL resumes from the newest checkpoint)."""
    gpu = [
        r
        for r in resources
        if r.stack != DEV_STACK
        and ((r.type == NODE_POOL_TYPE and _gpu_node_config(r.props.get("nodeConfig"))) or r.type == COMPUTE_CLASS_TYPE)
    ]
    models: set[str] = set()
    for r in gpu:
        if r.type == NODE_POOL_TYPE:
            m = _pool_model(r.props["nodeConfig"])
            if m is None:
                return []
            models.add(m)
        else:
            models |= {m for m in map(_priority_model, r.get("spec.priorities") or []) if m}
    if models != {"spot"}:
        return []
    entrypoints = [r.get("spec.entrypoint") for r in resources if r.type == RAYJOB_TYPE]
    if any(is_unknown(e) for e in entrypoints):
        return []
    if entrypoints and all(isinstance(e, str) and _CHECKPOINTING_ON.search(e) for e in entrypoints):
        return []
    why = (
        "no RayJob is declared, so nothing shows that the training checkpoints"
        if not entrypoints
        else "its RayJob does not turn NeMo-RL checkpointing on (checkpointing.enabled=True)"
    )
    first = sorted(gpu, key=lambda r: r.urn)[0]
    return [
        (
            first.urn,
            f"stack {first.stack!r} runs its GPUs on spot capacity only and {why}: a preemption (30 s "
            "notice) loses the run. Train through this stack's RayJob (its recipes checkpoint to Lustre "
            "and resume), or add flex-start or a reservation to nemo-rl-gke:capacity.",
        )
    ]


# --- Ray's code-running ports stay inside the cluster (mandatory, stack) ------------------------------------------
SERVICE_TYPE = "kubernetes:core/v1:Service"
INGRESS_TYPES = ("kubernetes:networking.k8s.io/v1:Ingress",)
_EXPOSING_SERVICE_TYPES = ("LoadBalancer", "NodePort")
_RAY_PORTS_HOW = (
    "anyone who reaches Ray's dashboard / Jobs API or Ray Client can run code on the cluster (Ray's security docs): "
    "keep the Service ClusterIP and reach the dashboard with `kubectl port-forward` (docs/operations.md)."
)


def _ray_port(value: Any) -> Optional[str]:
    """'dashboard (8265)' when a port number or name is one of RAY_EXPOSED_PORTS, else None. Numbers may arrive as
    floats (pulumi-policy's props come through protobuf Structs, whose numbers are doubles)."""
    for name, number in RAY_EXPOSED_PORTS.items():
        if (isinstance(value, (int, float)) and not isinstance(value, bool) and value == number) or value == name:
            return f"{name} ({number})"
    return None


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _service_ray_ports(props: Mapping[str, Any]) -> dict[Any, str]:
    """A Service's ports that lead to a Ray port: {its port number and name -> which Ray port}."""
    out: dict[Any, str] = {}
    for p in (props.get("spec") or {}).get("ports") or []:
        if not isinstance(p, Mapping):
            continue
        hit = _ray_port(p.get("targetPort")) or _ray_port(p.get("port")) or _ray_port(p.get("name"))
        if hit:
            out[_number(p.get("port"))] = hit
            if p.get("name"):
                out[p.get("name")] = hit
    return out


def _ingress_backends(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    default = (spec.get("defaultBackend") or {}).get("service")
    if isinstance(default, Mapping):
        yield "spec.defaultBackend", default
    for i, rule in enumerate(spec.get("rules") or []):
        for j, path in enumerate(((rule or {}).get("http") or {}).get("paths") or []):
            svc = ((path or {}).get("backend") or {}).get("service")
            if isinstance(svc, Mapping):
                yield f"spec.rules[{i}].http.paths[{j}].backend", svc


def check_ray_ports_not_exposed(resources: Sequence[Resource]) -> list[tuple[str, str]]:
    """No Service of type LoadBalancer or NodePort and no Ingress reaches Ray's dashboard (8265) or Ray Client
    (10001), and no RayCluster (or RayJob / RayService cluster spec) asks KubeRay to make one (headGroupSpec
    serviceType LoadBalancer / NodePort, which KubeRay gives the head Service, or enableIngress, which makes it an
    Ingress to the dashboard)."""
    services = {
        (
            str((r.props.get("metadata") or {}).get("namespace") or ""),
            str((r.props.get("metadata") or {}).get("name")),
        ): r
        for r in resources
        if r.type == SERVICE_TYPE
    }
    out: list[tuple[str, str]] = []
    for r in resources:
        meta = r.props.get("metadata") or {}
        if r.type == SERVICE_TYPE:
            kind = (r.props.get("spec") or {}).get("type")
            ports = _service_ray_ports(r.props)
            if kind in _EXPOSING_SERVICE_TYPES and ports:
                which = ", ".join(sorted(set(ports.values())))
                out.append(
                    (r.urn, f"Service {meta.get('name')!r} of type {kind} exposes Ray's {which}: {_RAY_PORTS_HOW}")
                )
        elif r.type in INGRESS_TYPES:
            for where, svc in _ingress_backends(r.props.get("spec") or {}):
                port = svc.get("port") or {}
                ref = _number(port.get("number", port.get("name")))
                target = services.get((str(meta.get("namespace") or ""), str(svc.get("name"))))
                hit = _service_ray_ports(target.props).get(ref) if target is not None else _ray_port(ref)
                if hit:
                    out.append((r.urn, f"Ingress {meta.get('name')!r} routes {where} to Ray's {hit}: {_RAY_PORTS_HOW}"))
        for spec_path, spec in _ray_cluster_specs(r):
            head = spec.get("headGroupSpec") or {}
            if head.get("serviceType") in _EXPOSING_SERVICE_TYPES:
                out.append(
                    (
                        r.urn,
                        f"{r.label} sets {spec_path}.headGroupSpec.serviceType {head['serviceType']}: KubeRay gives "
                        f"the head Service every Ray port, the dashboard and Ray Client included; {_RAY_PORTS_HOW}",
                    )
                )
            if head.get("enableIngress") is True:
                out.append(
                    (
                        r.urn,
                        f"{r.label} sets {spec_path}.headGroupSpec.enableIngress: KubeRay then makes an Ingress to "
                        f"the dashboard; {_RAY_PORTS_HOW}",
                    )
                )
    return out


# --- the rule set ------------------------------------------------------------------------------------------------
# Mandatory: each violation breaks the deployment (a job that cannot mount or falls back to TCP, a cluster
# built on the wrong Ray) or leaks a credential; there is no situation in which it is the right choice.
# Advisory: each is hardening or cost advice with legitimate exceptions (on-demand capacity for a short test,
# a scratch stack that is not called dev, a bucket migrated from ACLs), so it warns without blocking.
RULES: tuple[Rule, ...] = (
    Rule(
        "no-plaintext-secrets",
        "No token, key or password as a literal in Kubernetes env, ConfigMap data, container commands or a "
        "RayJob's runtimeEnvYAML / entrypoint (they are readable by anyone who can read the object or the Ray "
        "dashboard).",
        "mandatory",
        "resource",
        check_plaintext_secrets,
    ),  # a leaked credential cannot be un-leaked
    Rule(
        "tokens-only-as-files",
        "No token variable and no reference to the token Secrets in any pod env or runtime env: tokens are "
        "read-only files, because Ray's state API serves every actor's runtime env (NeMo-RL copies the driver's "
        "environment into it).",
        "mandatory",
        "resource",
        check_tokens_only_as_files,
    ),  # an env token reaches the dashboard port
    Rule(
        "lustre-port-mode-consistent",
        "The Lustre instance's GKE support (port 6988) and the cluster's legacy Lustre port are on or off together.",
        "mandatory",
        "stack",
        check_lustre_port_mode,
    ),  # a mismatch means every Lustre mount fails
    Rule(
        "lustre-on-cluster-vpc",
        "The Lustre instance is on the cluster's VPC.",
        "mandatory",
        "stack",
        check_lustre_network,
    ),  # nodes cannot reach an instance on another VPC
    Rule(
        "ray-version-matches-image",
        "A RayCluster's rayVersion equals the Ray inside its NeMo-RL image.",
        "mandatory",
        "resource",
        check_ray_version,
    ),  # KubeRay and the image disagree: the cluster misbehaves
    Rule(
        "gpu-pods-use-rdma",
        "A4 / A3 Ultra GPU pods attach the RDMA networks and use their GPU type's NCCL tuner.",
        "mandatory",
        "resource",
        check_gpu_pod_networking,
    ),  # else NCCL silently runs over TCP
    Rule(
        "kubernetes-explicit-provider",
        "Every Kubernetes resource uses the GKE cluster's explicit provider.",
        "mandatory",
        "resource",
        check_explicit_provider,
    ),  # the default provider may target another cluster
    Rule(
        "ray-ports-not-exposed",
        "No LoadBalancer or NodePort Service and no Ingress reaches Ray's dashboard (8265) or Ray Client (10001), "
        "and no Ray cluster spec asks KubeRay for one.",
        "mandatory",
        "stack",
        check_ray_ports_not_exposed,
    ),  # whoever reaches these ports runs code on the cluster
    Rule(
        "gpu-capacity-spot-or-reserved",
        "GPU node pools and ComputeClass GPU priorities use Spot VMs, flex-start or a specific reservation.",
        "advisory",
        "resource",
        check_gpu_capacity,
    ),  # on-demand is allowed, just expensive and scarce
    Rule(
        "gpu-spot-only-needs-checkpointing",
        "Outside the dev stack, GPU capacity that is spot only comes with a checkpointing training job.",
        "advisory",
        "stack",
        check_spot_only_needs_checkpointing,
    ),  # a deliberate spot-only sweep is legitimate
    Rule(
        "protected-outside-dev",
        "Outside the dev stack, the Lustre instance is protected or retained and the cluster has deletion protection.",
        "advisory",
        "resource",
        check_protected_outside_dev,
    ),  # scratch stacks may want easy teardown
    Rule(
        "bucket-uniform-access",
        "The bucket uses uniform bucket-level access.",
        "advisory",
        "resource",
        check_bucket_uniform_access,
    ),  # hardening; an imported bucket may lag
    Rule(
        "nodes-not-default-service-account",
        "GKE nodes do not run as the default compute service account.",
        "advisory",
        "resource",
        check_node_service_account,
    ),  # hardening; some orgs mandate their own SA setup
    Rule(
        "workload-identity-enabled",
        "Workload Identity is on for the cluster and its node pools.",
        "advisory",
        "resource",
        check_workload_identity,
    ),  # hardening; the bucket grant fails visibly without it
    Rule(
        "control-plane-restricted",
        "The cluster's IP endpoint is private or limited to authorized networks (every stack, dev included).",
        "advisory",
        "resource",
        check_control_plane_restricted,
    ),  # a deploy runner's range may not be known yet
)


def evaluate(resources: Sequence[Resource], rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Every rule over a stack's resources (resource rules on each, stack rules on all), in a stable order."""
    out = []
    for rule in rules:
        if rule.scope == "stack":
            out += [Violation(rule.name, rule.enforcement, urn, msg) for urn, msg in rule.check(resources)]
        else:
            for r in resources:
                out += [Violation(rule.name, rule.enforcement, r.urn, msg) for msg in rule.check(r)]
    return out
