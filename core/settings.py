"""The stack's settings: one pydantic v2 model tree, built from Pulumi config in one function.

Every project config key (`nemo-rl-gke:<key>`) is the alias of exactly one field below; the field's section
says which component uses it. `load_settings()` is the only place that reads config. It checks field types
first, then every cross-field rule, and raises `SettingsError` listing every problem on its own line with
the config key it is about, before any resource is registered.

Defaults live here, not in Pulumi.yaml: the CLI applies Pulumi.yaml defaults, the in-process engine does not.
A test keeps the two in step.
"""
from __future__ import annotations

import ipaddress
import json
import re
from typing import Any, Literal, Optional

import pulumi
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core import catalog
from core.naming import Names, is_gcp_name
from core import sizing
from core.recipes import JobSettings, check_job, requires_wandb_key, resolve_recipe

PROJECT = "nemo-rl-gke"

# Stack files ship with this project id; the offline synth accepts it, a real deployment refuses it.
PLACEHOLDER_PROJECT = "your-gcp-project-id"

# Secret config keys: read with get_secret/require_secret only, never part of the model.
SECRET_KEYS = {"hfToken": "Hugging Face token", "wandbApiKey": "Weights & Biases API key"}

_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
_FILESYSTEM = re.compile(r"^[A-Za-z0-9]{1,8}$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_BUCKET = re.compile(r"^[a-z0-9][-_.a-z0-9]{1,61}[a-z0-9]$")
_HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


class SettingsError(Exception):
    """Invalid settings: one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))

    def __str__(self) -> str:
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the stack settings (nothing was created):"
        return "\n".join([head] + [f"  - {p}" for p in self.problems])


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def _key(k: str) -> str:
    return f"{PROJECT}:{k}"


# --- sections -------------------------------------------------------------------------------------------
class StackSettings(_Section):
    """Where and under which names everything is created."""

    prefix: Optional[str] = Field(None, alias="prefix", description=(
        "Prefix of every cloud resource name (lowercase, starts with a letter). Default: nemo-<stack>."))
    region: str = Field("us-central1", alias="region", description="Region of the VPC subnets, cluster and bucket.")
    zone: str = Field("us-central1-b", alias="zone", description=(
        "Zone of the GPU nodes, the RoCE network profile and the Lustre instance (in the region)."))


class NetworkSettings(_Section):
    """Address plan of the primary VPC and the two GPU VPCs."""

    primary_subnet_cidr: str = Field("10.0.0.0/20", alias="primarySubnetCidr",
                                     description="Primary subnet of the primary VPC (nodes).")
    pods_cidr: str = Field("10.4.0.0/14", alias="podsCidr", description="Secondary range for pods (primary VPC).")
    services_cidr: str = Field("10.8.0.0/20", alias="servicesCidr",
                               description="Secondary range for services (primary VPC).")
    psa_cidr: str = Field("10.16.0.0/20", alias="psaCidr", description=(
        "Private service access range reserved for Managed Lustre (primary VPC)."))
    gvnic_subnet_cidr: str = Field("192.168.0.0/24", alias="gvnicSubnetCidr", description="Subnet of the gVNIC VPC.")
    rdma_subnet_cidrs: list[str] = Field(
        [f"192.168.{i + 1}.0/24" for i in range(catalog.RDMA_NICS_PER_NODE)], alias="rdmaSubnetCidrs",
        description="The 8 subnets of the RDMA VPC, one per GPU NIC (rdma-0..7).")


class ClusterSettings(_Section):
    """The GKE cluster (both modes)."""

    mode: Literal["standard", "autopilot"] = Field("standard", alias="clusterMode",
                                                  description="GKE mode: standard or autopilot.")
    control_plane: Literal["regional", "zonal"] = Field("regional", alias="controlPlane", description=(
        "Standard only: regional (3 control-plane replicas) or zonal control plane (in `zone`)."))
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = Field("REGULAR", alias="releaseChannel",
                                                                  description="GKE release channel.")
    gke_version: Optional[str] = Field(None, alias="gkeVersion", description=(
        "Minimum GKE version (e.g. 1.33 or 1.33.2-gke.4780000); default: the channel's default."))
    deletion_protection: Optional[bool] = Field(None, alias="clusterDeletionProtection", description=(
        "GKE deletion protection; default: off on the dev stack, on elsewhere."))
    maintenance_start: str = Field("03:00", alias="maintenanceStart",
                                   description="Start (HH:MM, UTC) of the daily 4-hour maintenance window.")
    system_machine_type: str = Field("n2-standard-16", alias="systemMachineType", description=(
        "Standard only: machine type of the CPU system pool (Ray head, controllers)."))
    system_nodes: int = Field(1, alias="systemNodes", ge=1,
                              description="Standard only: nodes of the CPU system pool (in `zone`).")


class GpuSettings(_Section):
    """GPU nodes: type, capacity model, pool size."""

    gpu_type: str = Field("nvidia-b200", alias="gpuType",
                          description="GPU type: nvidia-b200 (A4) or nvidia-h200-141gb (A3 Ultra).")
    machine_type: Optional[str] = Field(None, alias="machineType",
                                        description="Machine type; default and only valid value: the GPU type's.")
    spot: bool = Field(True, alias="spot", description="Use Spot VMs for GPU nodes.")
    reservation: Optional[str] = Field(None, alias="reservation", description=(
        "Standard only: consume this specific reservation (excludes spot)."))
    nodes: int = Field(2, alias="gpuNodes", description="Standard only: initial GPU node count.")
    min_nodes: int = Field(0, alias="gpuMinNodes", description="Standard only: autoscaling minimum of the GPU pool.")
    max_nodes: Optional[int] = Field(None, alias="gpuMaxNodes", description=(
        "Standard only: autoscaling maximum of the GPU pool; default: gpuNodes."))
    driver_version: Literal["LATEST", "DEFAULT"] = Field("LATEST", alias="gpuDriverVersion", description=(
        "Standard only: GPU driver GKE installs (LATEST or DEFAULT)."))

    @property
    def accelerator(self) -> catalog.Accelerator:
        return catalog.accelerator(self.gpu_type)

    @property
    def max_nodes_effective(self) -> int:
        return self.max_nodes if self.max_nodes is not None else self.nodes


class LustreSettings(_Section):
    """The Managed Lustre instance."""

    capacity_gib: int = Field(18000, alias="lustreCapacityGib", description="Capacity in GiB (valid for the tier).")
    tier: int = Field(500, alias="lustreTier", description="Throughput tier in MB/s per TiB: 125, 250, 500 or 1000.")
    filesystem: str = Field("lustrefs", alias="lustreFilesystem",
                            description="Filesystem name (1-8 letters or digits).")
    port_mode: Literal["modern", "legacy"] = Field("modern", alias="lustrePortMode", description=(
        "modern: port 988, needs GKE >= 1.33.2-gke.4780000; legacy: instance with GKE support on 6988 and the "
        "cluster's legacy Lustre port. Drives both sides."))
    on_destroy: Optional[Literal["protect", "retain", "delete"]] = Field(None, alias="lustreOnDestroy", description=(
        "What pulumi destroy does to the instance holding checkpoints: protect (refuse), retain (leave it, drop "
        "from state) or delete. Default: delete on dev, protect elsewhere."))

    @property
    def tier_info(self) -> catalog.LustreTier:
        return catalog.LUSTRE_TIERS[self.tier]

    @property
    def gke_support_enabled(self) -> bool:
        return self.port_mode == "legacy"

    @property
    def port(self) -> int:
        return catalog.LUSTRE_LEGACY_PORT if self.port_mode == "legacy" else catalog.LUSTRE_PORT


class StorageSettings(_Section):
    """Bucket and the workload identity that may use it."""

    bucket_name: Optional[str] = Field(None, alias="bucketName",
                                       description="Bucket name (global); default: <prefix>-<gcp project>.")
    namespace: str = Field("nemo-rl", alias="namespace", description="Kubernetes namespace of the workload.")
    ksa_name: str = Field("nemo-rl-runner", alias="ksaName", description=(
        "Kubernetes service account of the Ray pods, granted roles/storage.objectUser on the bucket."))


class WorkloadSettings(_Section):
    """The RayCluster: NeMo-RL release, worker group, mounts."""

    nemo_rl_release: str = Field("v0.5.0", alias="nemoRlRelease",
                                 description="NeMo-RL container release (v0.4.0, v0.5.0 or v0.7.0).")
    ray_version: Optional[str] = Field(None, alias="rayVersion", description=(
        "Ray version of the RayCluster; default and only valid value: the Ray inside the NeMo-RL image."))
    worker_replicas: Optional[int] = Field(None, alias="workerReplicas", description=(
        "GPU worker pods (one per node); default: gpuNodes (Standard) or 2 (Autopilot)."))
    lustre_mount_path: str = Field("/lustre", alias="lustreMountPath",
                                   description="Where Lustre is mounted in the Ray pods.")
    shm_size_gib: int = Field(240, alias="shmSizeGib", ge=1, description="Size of /dev/shm (memory) in worker pods.")
    head_cpu: int = Field(8, alias="headCpu", ge=1, description="CPU request of the Ray head (CPU node).")
    head_memory_gib: int = Field(32, alias="headMemoryGib", ge=1, description="Memory of the Ray head in GiB.")

    @property
    def release(self) -> catalog.NemoRlRelease:
        return catalog.NEMO_RL_RELEASES[self.nemo_rl_release]


class MonitoringSettings(_Section):
    """Dashboard and the checkpoint I/O budget."""

    dashboard: bool = Field(True, alias="dashboard", description="Create the stack's Cloud Monitoring dashboard.")
    checkpoint_budget_seconds: int = Field(300, alias="checkpointBudgetSeconds", ge=0, description=(
        "Longest acceptable checkpoint write (s) at the Lustre instance's aggregate throughput; preview fails "
        "with the smallest capacity or tier that meets it. 0: no budget."))

    @property
    def budget(self) -> Optional[float]:
        return float(self.checkpoint_budget_seconds) if self.checkpoint_budget_seconds > 0 else None


_SECTIONS: dict[str, type[_Section]] = {
    "stack": StackSettings,
    "network": NetworkSettings,
    "cluster": ClusterSettings,
    "gpu": GpuSettings,
    "lustre": LustreSettings,
    "storage": StorageSettings,
    "workload": WorkloadSettings,
    "job": JobSettings,
    "monitoring": MonitoringSettings,
}

# Keys that only one cluster mode supports.
STANDARD_ONLY = {"controlPlane", "systemMachineType", "systemNodes", "reservation", "gpuNodes", "gpuMinNodes",
                 "gpuMaxNodes", "gpuDriverVersion"}
AUTOPILOT_ONLY: set[str] = set()


class Settings(BaseModel):
    """The validated settings of one stack."""

    model_config = ConfigDict(frozen=True)

    gcp_project: str
    stack_name: str
    stack: StackSettings
    network: NetworkSettings
    cluster: ClusterSettings
    gpu: GpuSettings
    lustre: LustreSettings
    storage: StorageSettings
    workload: WorkloadSettings
    job: JobSettings
    monitoring: MonitoringSettings

    @property
    def prefix(self) -> str:
        return self.stack.prefix or f"nemo-{self.stack_name}"

    @property
    def names(self) -> Names:
        return Names(self.prefix)

    @property
    def region(self) -> str:
        return self.stack.region

    @property
    def zone(self) -> str:
        return self.stack.zone

    @property
    def autopilot(self) -> bool:
        return self.cluster.mode == "autopilot"

    @property
    def is_dev(self) -> bool:
        return self.stack_name == "dev"

    @property
    def cluster_location(self) -> str:
        return self.zone if (not self.autopilot and self.cluster.control_plane == "zonal") else self.region

    @property
    def deletion_protection(self) -> bool:
        d = self.cluster.deletion_protection
        return (not self.is_dev) if d is None else d

    @property
    def lustre_on_destroy(self) -> str:
        d = self.lustre.on_destroy
        return ("delete" if self.is_dev else "protect") if d is None else d

    @property
    def bucket_name(self) -> str:
        return self.storage.bucket_name or f"{self.prefix}-{self.gcp_project}"

    @property
    def rdma_network_profile(self) -> str:
        # The RoCE profile is zonal and must be passed as a path; a bare name fails "URL is malformed".
        return f"projects/{self.gcp_project}/global/networkProfiles/{self.zone}-vpc-roce"

    @property
    def worker_replicas(self) -> int:
        w = self.workload.worker_replicas
        if w is not None:
            return w
        return 2 if self.autopilot else self.gpu.nodes

    @property
    def workload_identity_pool(self) -> str:
        return f"{self.gcp_project}.svc.id.goog"


# --- every config key, with its field ---------------------------------------------------------------------
def config_fields() -> dict[str, tuple[str, str, Any]]:
    """config key -> (section, field name, pydantic FieldInfo)."""
    out: dict[str, tuple[str, str, Any]] = {}
    for section, model in _SECTIONS.items():
        for fname, info in model.model_fields.items():
            out[info.alias] = (section, fname, info)
    return out


def _decode(raw: Any, info) -> Any:
    """Config values arrive as strings; lists and objects are JSON; "" means unset for optional settings.
    Scalars are left to pydantic's lax coercion."""
    if raw == "" and not info.is_required() and info.get_default(call_default_factory=True) is None:
        return None
    origin = getattr(info.annotation, "__origin__", None)
    if isinstance(raw, str) and (origin in (list, dict) or info.annotation is dict):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _present_config() -> dict[str, Any]:
    """All config values visible to the program: set explicitly (engine) or passed by the CLI (environment)."""
    from pulumi.runtime import config as rc

    values = dict(rc.get_config_env())
    values.update(rc.CONFIG.get())
    return values


def running_offline() -> bool:
    """True under the in-process engine (Pulumi's mock monitor), False under the real CLI."""
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import SETTINGS

    return isinstance(getattr(SETTINGS, "monitor", None), MockMonitor)


def _secret_state() -> dict[str, str]:
    """Secret config key -> "secret" or "plain" (set without --secret); absent keys are missing."""
    from pulumi.runtime import config as rc

    present = _present_config()
    secret_keys = set(rc._SECRET_KEYS.get()) | set(rc.get_config_secret_keys_env())
    out = {}
    for key in SECRET_KEYS:
        full = _key(key)
        if full in present:
            out[key] = "secret" if full in secret_keys else "plain"
    return out


def _field_problem(section: str, err: dict) -> str:
    loc = [str(p) for p in err["loc"]]
    key = loc[0] if loc else section
    msg = err["msg"]
    if err["type"] == "literal_error":
        msg = msg.replace("Input should be", "must be one of")
    elif err["type"] == "extra_forbidden":
        msg = "is not a setting of this project"
    return f"{_key(key)}: {msg} (got {err.get('input')!r})"


def _close_matches(key: str, known: list[str]) -> str:
    import difflib

    m = difflib.get_close_matches(key, known, n=1)
    return f"; did you mean {_key(m[0])}?" if m else ""


def load_settings(stack_name: Optional[str] = None, gcp_project: Optional[str] = None,
                  values: Optional[dict[str, Any]] = None,
                  secret_state: Optional[dict[str, str]] = None) -> Settings:
    """Build and validate the settings. `values` (config key -> raw value) defaults to the Pulumi config."""
    problems: list[str] = []
    fields = config_fields()
    stack_name = stack_name or pulumi.get_stack()

    if values is None:
        present = _present_config()
        values = {}
        for full_key, raw in present.items():
            ns, _, key = full_key.partition(":")
            if ns != PROJECT:
                continue
            values[key] = raw
        if gcp_project is None:
            gcp_project = pulumi.Config("gcp").get("project")

    grouped: dict[str, dict[str, Any]] = {s: {} for s in _SECTIONS}
    for key, raw in sorted(values.items()):
        if key in SECRET_KEYS:
            continue  # read as secrets by load_secrets(), never as plain values
        if key not in fields:
            problems.append(f"{_key(key)}: is not a setting of this project"
                            f"{_close_matches(key, sorted(list(fields) + list(SECRET_KEYS)))}")
            continue
        section, _, info = fields[key]
        grouped[section][key] = _decode(raw, info)

    if secret_state is None:
        secret_state = _secret_state()
    for key, what in SECRET_KEYS.items():
        state = secret_state.get(key)
        if state == "plain":
            problems.append(f"{_key(key)}: the {what} is stored in plain text; set it again with "
                            f"`pulumi config set --secret {key} <value>`")
        elif state is None and key == "hfToken":
            problems.append(f"{_key(key)}: the {what} is not set; run `pulumi config set --secret {key} <token>`")

    if gcp_project == PLACEHOLDER_PROJECT and not running_offline():
        problems.append(f"gcp:project: {PLACEHOLDER_PROJECT!r} is the placeholder from the stack file; run "
                        "`pulumi config set gcp:project <your-project-id>` (the offline synth accepts it)")
    if not gcp_project:
        problems.append("gcp:project: is not set; run `pulumi config set gcp:project <your-project-id>`")
        gcp_project = ""

    sections: dict[str, _Section] = {}
    for section, model in _SECTIONS.items():
        try:
            sections[section] = model.model_validate(grouped[section])
        except ValidationError as e:
            problems.extend(_field_problem(section, err) for err in e.errors())

    if "wandbApiKey" not in secret_state and "job" in sections and requires_wandb_key(sections["job"]):
        problems.append(f"{_key('wandbApiKey')}: the recipe logs to Weights & Biases but the key is not set; run "
                        "`pulumi config set --secret wandbApiKey <key>` or set "
                        f"{_key('jobOverrides')}.wandb_enabled to false")
    if len(sections) < len(_SECTIONS):
        raise SettingsError(problems)  # cross-field rules need every section parsed

    settings = Settings(gcp_project=gcp_project, stack_name=stack_name, **sections)
    problems.extend(check_rules(settings))
    if problems:
        raise SettingsError(problems)
    return settings


# --- cross-field rules ------------------------------------------------------------------------------------
def _net(key: str, value: str, problems: list[str]) -> Optional[ipaddress.IPv4Network]:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        problems.append(f"{_key(key)}: {value!r} is not a valid CIDR ({e}); e.g. 10.0.0.0/20")
        return None
    if net.version != 4:
        problems.append(f"{_key(key)}: {value!r} must be an IPv4 range")
        return None
    return net


def check_rules(s: Settings) -> list[str]:
    """Every cross-field rule; returns all problems (empty when valid)."""
    p: list[str] = []

    # GCP project id: 6-30 chars, lowercase letters, digits, hyphens.
    if not re.match(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", s.gcp_project):
        p.append(f"gcp:project: {s.gcp_project!r} is not a valid project id (6-30 lowercase letters, digits, "
                 "hyphens, starting with a letter)")

    # Location.
    m = _GCP_ZONE.match(s.zone)
    if not m:
        p.append(f"{_key('zone')}: {s.zone!r} is not a zone name like us-central1-b")
    elif m.group(1) != s.region:
        p.append(f"{_key('zone')}: {s.zone!r} is not in region {s.region!r} ({_key('region')}); "
                 f"use a zone {s.region}-<letter> or set region to {m.group(1)}")
    if not re.match(r"^[a-z]+-[a-z]+[0-9]+$", s.region):
        p.append(f"{_key('region')}: {s.region!r} is not a region name like us-central1")

    # Names.
    if s.stack.prefix is not None and not is_gcp_name(s.stack.prefix, 30):
        p.append(f"{_key('prefix')}: {s.stack.prefix!r} must be lowercase letters, digits and hyphens, start with "
                 "a letter, end with a letter or digit, and be at most 30 characters")
    else:
        for name, (what, max_len) in s.names.all_gcp_names().items():
            if not is_gcp_name(name, max_len):
                p.append(f"{_key('prefix')}: derived {what} name {name!r} is invalid or longer than {max_len} "
                         f"characters; choose a shorter prefix (now {s.prefix!r})")
                break
    if not _BUCKET.match(s.bucket_name) or ".." in s.bucket_name or s.bucket_name.startswith("goog"):
        p.append(f"{_key('bucketName')}: {s.bucket_name!r} is not a valid bucket name (3-63 lowercase letters, "
                 "digits, hyphens, underscores, dots; not starting with 'goog')")
    for key, val in (("namespace", s.storage.namespace), ("ksaName", s.storage.ksa_name)):
        if len(val) > 63 or not _K8S_NAME.match(val):
            p.append(f"{_key(key)}: {val!r} is not a valid Kubernetes name (lowercase RFC 1123 label, <= 63)")

    # Accelerator catalog.
    acc = catalog.ACCELERATORS.get(s.gpu.gpu_type)
    if acc is None:
        p.append(f"{_key('gpuType')}: unknown GPU type {s.gpu.gpu_type!r}; valid: "
                 f"{', '.join(sorted(catalog.ACCELERATORS))}")
    elif s.gpu.machine_type is not None and s.gpu.machine_type != acc.machine_type:
        p.append(f"{_key('machineType')}: {s.gpu.machine_type!r} does not carry {acc.gpu_type}; use "
                 f"{acc.machine_type} (or unset it)")

    # GPU capacity model and counts.
    if s.gpu.spot and s.gpu.reservation:
        p.append(f"{_key('reservation')}: a specific reservation cannot be combined with spot VMs; set "
                 f"{_key('spot')} to false or unset {_key('reservation')}")
    for key, val in (("gpuNodes", s.gpu.nodes), ("gpuMinNodes", s.gpu.min_nodes), ("gpuMaxNodes", s.gpu.max_nodes)):
        if val is not None and val < 0:
            p.append(f"{_key(key)}: must be >= 0 (got {val})")
    if s.gpu.min_nodes > s.gpu.max_nodes_effective:
        p.append(f"{_key('gpuMinNodes')}: {s.gpu.min_nodes} is above the maximum {s.gpu.max_nodes_effective} "
                 f"({_key('gpuMaxNodes')})")
    if s.gpu.max_nodes is not None and s.gpu.nodes > s.gpu.max_nodes:
        p.append(f"{_key('gpuNodes')}: {s.gpu.nodes} is above {_key('gpuMaxNodes')} ({s.gpu.max_nodes})")
    if s.gpu.nodes < s.gpu.min_nodes:
        p.append(f"{_key('gpuNodes')}: {s.gpu.nodes} is below {_key('gpuMinNodes')} ({s.gpu.min_nodes})")

    # Lustre.
    tier = catalog.LUSTRE_TIERS.get(s.lustre.tier)
    if tier is None:
        p.append(f"{_key('lustreTier')}: {s.lustre.tier} is not a tier; valid: "
                 f"{', '.join(str(t) for t in sorted(catalog.LUSTRE_TIERS))} (MB/s per TiB)")
    elif not tier.is_valid_capacity(s.lustre.capacity_gib):
        nxt = tier.next_valid_capacity(s.lustre.capacity_gib)
        hint = f"; the next valid capacity is {nxt}" if nxt else f"; the maximum is {tier.max_gib}"
        p.append(f"{_key('lustreCapacityGib')}: {s.lustre.capacity_gib} GiB is not valid for tier {s.lustre.tier} "
                 f"(min {tier.min_gib}, step {tier.step_gib} up to {tier.step_until_gib}, then "
                 f"{tier.large_step_gib}, max {tier.max_gib}){hint}")
    if not _FILESYSTEM.match(s.lustre.filesystem):
        p.append(f"{_key('lustreFilesystem')}: {s.lustre.filesystem!r} must be 1-8 letters or digits")

    # Address plan: the primary VPC's ranges must not overlap; the RDMA subnets neither among themselves.
    primary = {k: _net(k, v, p) for k, v in (("primarySubnetCidr", s.network.primary_subnet_cidr),
                                              ("podsCidr", s.network.pods_cidr),
                                              ("servicesCidr", s.network.services_cidr),
                                              ("psaCidr", s.network.psa_cidr))}
    _no_overlap(primary, "primary VPC", p)
    if primary.get("psaCidr") is not None and primary["psaCidr"].prefixlen > 24:
        p.append(f"{_key('psaCidr')}: {s.network.psa_cidr} is smaller than the /24 Managed Lustre needs")
    _net("gvnicSubnetCidr", s.network.gvnic_subnet_cidr, p)
    if len(s.network.rdma_subnet_cidrs) != catalog.RDMA_NICS_PER_NODE:
        p.append(f"{_key('rdmaSubnetCidrs')}: needs exactly {catalog.RDMA_NICS_PER_NODE} CIDRs, one per GPU NIC "
                 f"(got {len(s.network.rdma_subnet_cidrs)})")
    rdma = {f"rdmaSubnetCidrs[{i}]": _net("rdmaSubnetCidrs", c, p) for i, c in enumerate(s.network.rdma_subnet_cidrs)}
    _no_overlap(rdma, "RDMA VPC", p, key_of=lambda k: "rdmaSubnetCidrs")

    # GKE version floors, checked when a version is pinned.
    if s.cluster.gke_version is not None:
        try:
            catalog.parse_gke_version(s.cluster.gke_version)
        except ValueError:
            p.append(f"{_key('gkeVersion')}: {s.cluster.gke_version!r} is not a GKE version like 1.33 or "
                     "1.33.2-gke.4780000")
        else:
            floors = [(catalog.RAY_OPERATOR_MIN_GKE, "the RayOperator add-on")]
            if acc is not None:
                floors.append((acc.min_gke_version, f"{acc.gpu_type} ({acc.machine_type})"))
            if s.lustre.port_mode == "modern":
                floors.append((catalog.LUSTRE_MODERN_PORT_MIN_GKE,
                               f"Lustre port mode 'modern' ({_key('lustrePortMode')}; or use 'legacy')"))
            for floor, why in floors:
                if not catalog.version_at_least(s.cluster.gke_version, floor):
                    p.append(f"{_key('gkeVersion')}: {s.cluster.gke_version} is older than {floor}, needed by {why}")

    if not _HHMM.match(s.cluster.maintenance_start):
        p.append(f"{_key('maintenanceStart')}: {s.cluster.maintenance_start!r} must be HH:MM (UTC), e.g. 03:00")

    # RayCluster: release catalog, rayVersion pinned to the image's Ray.
    rel = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)
    if rel is None:
        p.append(f"{_key('nemoRlRelease')}: unknown release {s.workload.nemo_rl_release!r}; valid: "
                 f"{', '.join(sorted(catalog.NEMO_RL_RELEASES))}")
    elif s.workload.ray_version is not None and s.workload.ray_version != rel.ray_version:
        p.append(f"{_key('rayVersion')}: {s.workload.ray_version} differs from the Ray inside {rel.image} "
                 f"({rel.ray_version}); unset it or set {rel.ray_version}")
    if s.worker_replicas < 0:
        p.append(f"{_key('workerReplicas')}: must be >= 0 (got {s.worker_replicas})")
    elif not s.autopilot and s.worker_replicas > s.gpu.max_nodes_effective:
        p.append(f"{_key('workerReplicas')}: {s.worker_replicas} GPU workers need {s.worker_replicas} nodes but the "
                 f"GPU pool has at most {s.gpu.max_nodes_effective} ({_key('gpuMaxNodes')})")
    if not s.workload.lustre_mount_path.startswith("/") or s.workload.lustre_mount_path.rstrip("/") in ("", "/dev",
                                                                                                        "/tmp"):
        p.append(f"{_key('lustreMountPath')}: {s.workload.lustre_mount_path!r} must be an absolute path such as "
                 "/lustre")
    if rel is not None and acc is not None:
        job_problems = check_job(s.job, release=rel, worker_replicas=s.worker_replicas,
                                 gpus_per_node=acc.gpus_per_node, stack_name=s.stack_name)
        p.extend(job_problems)
        if s.job.enabled and not job_problems and tier is not None and tier.is_valid_capacity(s.lustre.capacity_gib):
            # Will checkpoints stall the GPUs? Checked here so preview fails before anything is registered.
            recipe = resolve_recipe(s.job, rel)
            p.extend(sizing.check_budget(
                recipe.model_name, save_optimizer=recipe.save_optimizer, capacity_gib=s.lustre.capacity_gib,
                tier=s.lustre.tier, keep_top_k=recipe.keep_top_k,
                budget_seconds=s.monitoring.budget))

    # Mode-specific keys.
    # Compared with the defaults, not with "was it set": the CLI passes Pulumi.yaml's defaults for every key.
    other_mode = (STANDARD_ONLY, "Standard", "standard") if s.autopilot else (AUTOPILOT_ONLY, "Autopilot", "autopilot")
    fields = config_fields()
    for key in sorted(other_mode[0]):
        section, fname, info = fields[key]
        if getattr(getattr(s, section), fname) != info.get_default(call_default_factory=True):
            p.append(f"{_key(key)}: only applies to {other_mode[1]} clusters; remove it or set "
                     f"{_key('clusterMode')} to {other_mode[2]}")
    return p


def _no_overlap(nets: dict, where: str, p: list[str], key_of=lambda k: k) -> None:
    items = [(k, n) for k, n in nets.items() if n is not None]
    for i, (ka, a) in enumerate(items):
        for kb, b in items[i + 1:]:
            if a.overlaps(b):
                p.append(f"{_key(key_of(kb))}: {b} overlaps {a} ({_key(key_of(ka)) if key_of(ka) != key_of(kb) else ka}) "
                         f"in the {where}; choose disjoint ranges")


# --- secrets --------------------------------------------------------------------------------------------
class Secrets:
    """Secret config as Pulumi secret Outputs; never plaintext in the settings model."""

    def __init__(self, hf_token: pulumi.Output, wandb_api_key: Optional[pulumi.Output]):
        self.hf_token = hf_token
        self.wandb_api_key = wandb_api_key


def load_secrets() -> Secrets:
    cfg = pulumi.Config(PROJECT)
    return Secrets(hf_token=cfg.require_secret("hfToken"), wandb_api_key=cfg.get_secret("wandbApiKey"))
