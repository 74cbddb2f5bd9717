"""The stack's settings: one pydantic v2 model tree, built from Pulumi config in one function.

Every project config key (`nemo-rl-gke:<key>`) is declared once, as a field of one section whose default is
`setting(...)` (core/settings/record.py: the field plus the key's record); each section lives in its own module
beside the rules that guard it, and core/settings/registry.py collects them. `load_settings()` is the only place
that reads config. It checks field types first, resolves the job's recipe once, then runs every section's rules,
and raises `SettingsError` listing every problem on its own line with the config key it is about, before any
resource is registered.

Defaults live in the records, not in Pulumi.yaml: the CLI applies Pulumi.yaml defaults, the in-process engine does
not. `make generated` writes Pulumi.yaml from the records and a test keeps the two in step.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Optional

import pulumi
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from core import catalog, export, images, recipes, sdk
from core.keys import PROJECT, key
from core.naming import Names
from core.recipes import Recipe
from core.settings import (
    capacity,
    cluster,
    cost,
    gate,
    gpu,
    job,
    lustre,
    monitoring,
    network,
    platform,
    queue,
    security,
    stack,
    startup,
    storage,
    tenancy,
    workload,
)
from core.settings.base import Section, SettingsError
from core.settings.capacity import CapacitySettings
from core.settings.cluster import ClusterSettings
from core.settings.cost import CostSettings
from core.settings.gate import GateSettings
from core.settings.gpu import GpuSettings
from core.settings.job import JobSettings
from core.settings.lustre import LustreSettings
from core.settings.monitoring import MonitoringSettings
from core.settings.network import NetworkSettings
from core.settings.queue import QueueSettings
from core.settings.registry import (
    AUTOPILOT_ONLY,
    SECRET_KEYS,
    SECTIONS,
    STANDARD_ONLY,
    config_fields,
    decode_config_value,
)
from core.settings.security import SecuritySettings
from core.settings.stack import StackSettings, TeardownSettings
from core.settings.startup import StartupSettings
from core.settings.storage import StorageSettings
from core.settings.tenancy import TenancySettings
from core.settings.workload import WorkloadSettings

__all__ = [
    "PLACEHOLDER_PROJECT",
    "PROJECT",
    "SECRET_KEYS",
    "Secrets",
    "Settings",
    "SettingsError",
    "UncheckedSettings",
    "config_fields",
    "load_secrets",
    "load_settings",
]

# Stack files ship with this project id; the offline synth accepts it, a real deployment refuses it.
PLACEHOLDER_PROJECT = "your-gcp-project-id"

# Every section's rules; each returns all its problems. All run, so every problem is reported at once.
RULES: tuple[Callable[["UncheckedSettings"], list[str]], ...] = (
    stack.check,
    network.check,
    cluster.check,
    gpu.check,
    capacity.check,
    queue.check,
    lustre.check,
    storage.check,
    workload.check,
    job.check,
    monitoring.check,
    gate.check,
    security.check,
    startup.check,
    cost.check,
    tenancy.check,
)


class UncheckedSettings(BaseModel):
    """One stack's settings as parsed, before the section rules have passed: what the rules check. The job's recipe
    is None when the job settings do not resolve to one (the problems saying why stop `load_settings`)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    gcp_project: str
    gcp_region: Optional[str] = None
    stack_name: str
    stack: StackSettings
    teardown: TeardownSettings
    network: NetworkSettings
    cluster: ClusterSettings
    gpu: GpuSettings
    capacity: CapacitySettings
    queue: QueueSettings
    lustre: LustreSettings
    storage: StorageSettings
    workload: WorkloadSettings
    job: JobSettings
    monitoring: MonitoringSettings
    gate: GateSettings
    security: SecuritySettings
    startup: StartupSettings
    cost: CostSettings
    tenancy: TenancySettings
    # The job's recipe (built-in + jobOverrides), resolved once; None when the job settings have problems.
    recipe: Optional[Recipe] = None

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
    def cluster_location(self) -> str:
        return self.zone if (not self.autopilot and self.cluster.control_plane == "zonal") else self.region

    @property
    def bucket_name(self) -> str:
        return self.storage.bucket_name or f"{self.prefix}-{self.gcp_project}"

    @property
    def export_destination(self) -> export.Destination:
        """Where the checkpoint export writes (exportDestination; the startup rules refuse an invalid one)."""
        dest, problem = export.parse_destination(self.startup.export_destination, self.bucket_name)
        if dest is None:
            raise ValueError(f"exportDestination: {problem}")
        return dest

    @property
    def rdma_network_profile(self) -> str:
        # The RoCE profile is zonal and must be passed as a path; a bare name fails "URL is malformed".
        return f"projects/{self.gcp_project}/global/networkProfiles/{self.zone}-vpc-roce"

    @property
    def worker_replicas(self) -> int:
        w = self.workload.worker_replicas
        if w is not None:
            return w
        if self.recipe is not None and recipes.as_written(self.recipe):
            # A config run as written sizes its workers from its own cluster.num_nodes (the job rules refuse one
            # that needs more nodes than the GPU pools have).
            return self.recipe.num_nodes
        return 2 if self.autopilot else self.gpu.nodes

    @property
    def workload_identity_pool(self) -> str:
        return f"{self.gcp_project}.svc.id.goog"

    @property
    def run_name(self) -> str:
        return recipes.default_run_name(self.job, self.stack_name, self.workload.release)

    @property
    def image_streaming(self) -> bool:
        return self.startup.image_path == "streaming"

    @property
    def image_repository(self) -> str:
        """imagePath streaming: the Artifact Registry repository holding the NeMo-RL images' copies (imageRepository,
        or the one the stack creates, core.naming image_repository); "" otherwise. An experiment's comes from its
        platform's contract, resolved."""
        if not self.image_streaming:
            return ""
        return self.startup.image_repository or (
            f"{self.region}-docker.pkg.dev/{self.gcp_project}/{self.names.image_repository}"
        )

    @property
    def release_image(self) -> str:
        """The release's image where the nodes get it: the stack's registry copy (streaming) or NGC."""
        return images.nemo_rl_image(self.workload.release.tag, self.image_repository)

    @property
    def nemo_rl_image(self) -> str:
        """The one NeMo-RL image reference every NeMo-RL pod uses (Ray pods, submitter, placeholders, pre-pull, the
        prefetch in it): your jobImage (built on the release's), else the release's image."""
        return self.startup.job_image or self.release_image


class Settings(UncheckedSettings):
    """The validated settings of one stack, the only kind `load_settings` returns: every rule passed, so the job's
    recipe exists (a disabled job's too: its shape is checked all the same)."""

    recipe: Recipe


def _secret_state() -> dict[str, str]:
    """Secret config key -> "secret" or "plain" (set without --secret). Absent keys are missing, and so are empty
    ones: the CLI passes Pulumi.yaml's empty default of an optional secret (synth/project_file.py) as a plain ""."""
    present = sdk.present_config()
    secret_keys = sdk.secret_config_keys()
    out = {}
    for k in SECRET_KEYS:
        full = key(k)
        if present.get(full, "") != "":
            out[k] = "secret" if full in secret_keys else "plain"
    return out


def _field_problem(section: str, err: ErrorDetails) -> str:
    loc = [str(p) for p in err["loc"]]
    k = loc[0] if loc else section
    msg = err["msg"]
    if err["type"] == "literal_error":
        msg = msg.replace("Input should be", "must be one of")
    elif err["type"] == "extra_forbidden":
        msg = "is not a setting of this project"
    return f"{key(k)}: {msg} (got {err.get('input')!r})"


def _close_matches(k: str, known: list[str]) -> str:
    m = difflib.get_close_matches(k, known, n=1)
    return f"; did you mean {key(m[0])}?" if m else ""


def project_config() -> dict[str, Any]:
    """This project's config values as the program received them (key without namespace -> raw value)."""
    values = {}
    for full_key, raw in sdk.present_config().items():
        ns, _, k = full_key.partition(":")
        if ns == PROJECT:
            values[k] = raw
    return values


def load_experiment_settings(platform_ref: str, contract: Any) -> Settings:
    """An experiment stack's settings (core.settings.platform): its own keys over its platform's contract, read
    through the StackReference; one line when the referenced stack is no platform of this program."""
    problem = platform.contract_problem(platform_ref, contract)
    if problem:
        raise SettingsError([problem])
    values, stack_name = project_config(), pulumi.get_stack()
    # Its platform must host it: its namespace, identities and Lustre claim are the platform's to create.
    if listing := platform.listing_problems(platform_ref, values, stack_name, contract):
        raise SettingsError(listing)
    return load_settings(
        values=platform.experiment_values(values, contract, stack_name),
        gcp_project=contract.get("gcpProject"),
        gcp_region=contract.get("gcpRegion"),
    )


def load_settings(
    stack_name: Optional[str] = None,
    gcp_project: Optional[str] = None,
    values: Optional[dict[str, Any]] = None,
    secret_state: Optional[dict[str, str]] = None,
    gcp_region: Optional[str] = None,
) -> Settings:
    """Build and validate the settings. `values` (config key -> raw value) defaults to the Pulumi config (an
    experiment stack's are merged over its platform's: load_experiment_settings)."""
    problems: list[str] = []
    fields = config_fields()
    stack_name = stack_name or pulumi.get_stack()

    if values is None:
        values = project_config()
        gcp = pulumi.Config("gcp")
        if gcp_project is None:
            gcp_project = gcp.get("project")
        if gcp_region is None:
            gcp_region = gcp.get("region")

    grouped: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    for k, raw in sorted(values.items()):
        if k in SECRET_KEYS:
            continue  # read as secrets by load_secrets(), never as plain values
        if k not in fields:
            problems.append(
                f"{key(k)}: is not a setting of this project"
                f"{_close_matches(k, sorted(list(fields) + list(SECRET_KEYS)))}"
            )
            continue
        section, _, info = fields[k]
        grouped[section][k] = decode_config_value(raw, info)

    if secret_state is None:
        secret_state = _secret_state()
    for k, what in SECRET_KEYS.items():
        state = secret_state.get(k)
        if state == "plain":
            problems.append(
                f"{key(k)}: the {what} is stored in plain text; set it again with "
                f"`pulumi config set --secret {k} <value>`"
            )
        elif state is None and k == "hfToken":
            problems.append(f"{key(k)}: the {what} is not set; run `pulumi config set --secret {k} <token>`")

    if gcp_project == PLACEHOLDER_PROJECT and not sdk.running_offline():
        problems.append(
            f"gcp:project: {PLACEHOLDER_PROJECT!r} is the placeholder from the stack file; run "
            "`pulumi config set gcp:project <your-project-id>` (the offline synth accepts it)"
        )
    if not gcp_project:
        problems.append("gcp:project: is not set; run `pulumi config set gcp:project <your-project-id>`")
        gcp_project = ""

    sections: dict[str, Section] = {}
    for section, model in SECTIONS.items():
        try:
            sections[section] = model.model_validate(grouped[section])
        except ValidationError as e:
            problems.extend(_field_problem(section, err) for err in e.errors())
    if len(sections) < len(SECTIONS):
        raise SettingsError(problems)  # the rules need every section parsed
    queue_settings = sections["queue"]
    job_settings = sections["job"]
    assert isinstance(queue_settings, QueueSettings) and isinstance(job_settings, JobSettings)
    if job_settings.mode is None:
        # jobMode's default follows the queue (core/settings/job.py default_mode); every reader sees the value.
        sections["job"] = job_settings.model_copy(update={"mode": job.default_mode(queue_settings.queue)})

    unchecked = UncheckedSettings(
        gcp_project=gcp_project, gcp_region=gcp_region or None, stack_name=stack_name, **sections
    )
    recipe = None
    recipe_problems: list[str] = []
    release = catalog.NEMO_RL_RELEASES.get(unchecked.workload.nemo_rl_release)
    if release is not None:  # an unknown release is reported by the workload rules
        recipe, recipe_problems = recipes.resolve(unchecked.job, release, stack_name)
        problems.extend(recipe_problems)
        unchecked = unchecked.model_copy(update={"recipe": recipe})
    if "wandbApiKey" not in secret_state and job.needs_wandb_key(unchecked):
        problems.append(job.WANDB_KEY_MISSING)
    # An experiment stack brings its own token (its namespace holds its own Ray auth Secret).
    if "rayAuthToken" not in secret_state and security.token_auth_enabled(unchecked):
        problems.append(security.RAY_AUTH_TOKEN_MISSING)
    for rule in RULES:
        problems.extend(rule(unchecked))
    if recipe is not None and not recipe_problems:
        # The environments the resolved config selects, on a config every recipe rule accepted (jobEntry's rule).
        problems.extend(startup.environment_problems(unchecked))
    problems.extend(_mode_problems(unchecked, problems))
    if problems or recipe is None:  # no recipe comes without a problem saying why (recipes.resolve, workload)
        raise SettingsError(problems)
    return Settings(**{**dict(unchecked), "recipe": recipe})


def _mode_problems(s: UncheckedSettings, reported: list[str]) -> list[str]:
    """Keys set for the other cluster mode (their records' `modes`). Compared with the defaults, not with "was it
    set": the CLI passes Pulumi.yaml's defaults for every key. A key its own rule already refused (the capacity
    rules say why a reservation's start nodes or a flex-start wait do not apply) is not reported twice."""
    keys, mode, value = (
        (STANDARD_ONLY, "Standard", "standard") if s.autopilot else (AUTOPILOT_ONLY, "Autopilot", "autopilot")
    )
    fields = config_fields()
    p = []
    for k in sorted(keys):
        section, fname, info = fields[k]
        if any(line.startswith(key(k) + ":") for line in reported):
            continue
        if getattr(getattr(s, section), fname) != info.get_default(call_default_factory=True):
            p.append(f"{key(k)}: only applies to {mode} clusters; remove it or set {key('clusterMode')} to {value}")
    return p


# --- secrets --------------------------------------------------------------------------------------------
class Secrets:
    """Secret config as Pulumi secret Outputs; never plaintext in the settings model."""

    def __init__(
        self,
        hf_token: pulumi.Output[str],
        wandb_api_key: Optional[pulumi.Output[str]],
        ray_auth_token: Optional[pulumi.Output[str]] = None,
    ):
        self.hf_token = hf_token
        self.wandb_api_key = wandb_api_key
        self.ray_auth_token = ray_auth_token


def load_secrets() -> Secrets:
    cfg = pulumi.Config(PROJECT)
    state = _secret_state()  # an unset optional secret arrives as Pulumi.yaml's "" default: None here
    return Secrets(
        hf_token=cfg.require_secret("hfToken"),
        wandb_api_key=cfg.get_secret("wandbApiKey") if "wandbApiKey" in state else None,
        ray_auth_token=cfg.get_secret("rayAuthToken") if "rayAuthToken" in state else None,
    )
