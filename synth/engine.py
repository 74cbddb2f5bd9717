"""In-process engine: runs `__main__.py` for a named stack under Pulumi's mock monitor and records everything.

It stands in for `pulumi preview` where no Pulumi CLI or provider plugin can run: config comes from
Pulumi.yaml (its declared defaults, as the CLI applies them) + Pulumi.<stack>.yaml + overrides; secret config
gets placeholder values that stay marked secret; provider-computed outputs (endpoints, CA, the Lustre mount
point, e-mails, project number) get recognizable placeholders (addresses from 192.0.2.0/24, `example` names)
and are labelled as computed at deploy time. Each registration is recorded with its type, name, parent,
dependencies (explicit and per property), options, provider, inputs and the paths of secret inputs; the stack
outputs too. Each run uses a fresh context and event loop, so runs in one process do not share state.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import copy
import json
import logging
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

import pulumi
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime import mocks as pm
from pulumi.runtime import resource as pulumi_resource
from pulumi.runtime import settings as ps
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_in_stack

from core.dotted import get_path

ROOT = Path(__file__).resolve().parents[1]

_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
# Pulumi's unknown-value marker, from the SDK itself (the policy pack, in its own venv, keeps a copy that
# tests/test_policy.py checks against this).
from pulumi.runtime.rpc import UNKNOWN  # noqa: E402

# Placeholder values for what only the cloud knows (RFC 5737 documentation addresses).
PLACEHOLDER_PROJECT_NUMBER = "000000000000"
PLACEHOLDER_ENDPOINT = "192.0.2.10"
PLACEHOLDER_LUSTRE_IP = "192.0.2.20"
PLACEHOLDER_CA = base64.b64encode(b"example-cluster-ca").decode()
# A time.Static's creation time (the import's custom role id carries it: infra/weights_staging.py): 2026-01-01T00:00Z.
PLACEHOLDER_UNIX = 1767225600


HELM_RELEASE_PREFIX = "kubernetes:helm.sh/"

# What the program reads from the cluster (pulumi-kubernetes `.get()`), as `pulumi preview` reads it from a cluster
# where the admin installed what the docs ask for: (type token, id) -> the object's fields. Kueue's manager as the
# release's manifests render it (config/components/manager/manager.yaml, config/default/kustomization.yaml @v0.19.2:
# name prefix `kueue-`, namespace kueue-system, label app.kubernetes.io/name kueue, image
# registry.k8s.io/kueue/kueue:<tag>). `run(cluster_objects=...)` replaces it (another release, none at all).
KUEUE_MANAGER_READ = ("kubernetes:apps/v1:Deployment", "kueue-system/kueue-controller-manager")
DEFAULT_CLUSTER_OBJECTS: dict[tuple[str, str], dict[str, Any]] = {
    KUEUE_MANAGER_READ: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "kueue-controller-manager",
            "namespace": "kueue-system",
            "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"},
        },
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [{"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2"}],
                }
            },
        },
    }
}


class ObjectNotFound(Exception):
    """A read of an object the cluster does not hold (the provider fails the read the same way)."""


class StackNotFound(Exception):
    pass


# Parsed YAML files, by path and the file's (mtime, size): Pulumi.yaml alone takes ~0.1 s to parse in pure Python,
# on every run. libyaml's loader where PyYAML has it (the same safe schema).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_CACHE: dict[Path, tuple[tuple[int, int], Any]] = {}


def _load_yaml(path: Path) -> Any:
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _YAML_CACHE.get(path)
    if cached is None or cached[0] != key:
        cached = (key, yaml.load(path.read_text(), Loader=_YAML_LOADER))  # noqa: S506 (a safe loader)
        _YAML_CACHE[path] = cached
    return copy.deepcopy(cached[1])


@contextlib.contextmanager
def _without_source_positions():
    """The SDK walks the Python stack on every registration to report each resource's source position to the CLI
    (pulumi/runtime/resource.py _get_stack_trace); the records never use it and it costs ~15 % of a run. Offline
    runs skip it; the real `pulumi up` is untouched."""
    original = getattr(pulumi_resource, "_get_stack_trace", None)
    if original is None:  # another SDK layout: nothing to skip
        yield
        return
    empty = type(original())
    pulumi_resource._get_stack_trace = lambda: empty()
    try:
        yield
    finally:
        pulumi_resource._get_stack_trace = original


class StackConfigError(Exception):
    """What the Pulumi CLI refuses before running the program (project file or stack config)."""


@dataclass
class Registration:
    """One resource the program registered."""

    type: str
    name: str
    urn: str
    custom: bool
    parent: Optional[str]
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    provider: Optional[str]
    protect: bool
    retain_on_delete: bool
    delete_before_replace: bool
    ignore_changes: list[str]
    replace_on_changes: list[str]
    # URNs whose replacement replaces this resource too (the `replace_with` option; Pulumi CLI >= 3.207.0).
    replace_with: list[str]
    custom_timeouts: dict[str, str]
    inputs: dict[str, Any]
    secret_paths: list[str]
    computed: dict[str, Any] = field(default_factory=dict)
    # The provider plugin version the SDK asks the engine for (the SDK package's own unless overridden).
    version: str = ""
    # The `import_` option: the id of an existing resource to adopt instead of creating it.
    import_id: str = ""
    # Whether the program set delete_before_replace at all: an explicit False overrides the provider's delete-first
    # (pulumi step_generator.go:2044-2047), an unset option does not.
    delete_before_replace_defined: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.name)

    @property
    def provider_urn(self) -> Optional[str]:
        # A provider reference is "<provider urn>::<provider id>".
        return self.provider.rsplit("::", 1)[0] if self.provider else None

    @property
    def is_kubernetes(self) -> bool:
        return self.type.startswith("kubernetes:")

    def get(self, path: str, default: Any = None) -> Any:
        """Input at a dotted path (`spec.headGroupSpec.template`), list indexes as numbers."""
        return get_path(self.inputs, path, default)

    def redacted_inputs(self) -> dict[str, Any]:
        """Inputs with every secret path replaced by "[secret]"."""
        return _redact(self.inputs, set(self.secret_paths), "")


@dataclass
class SynthResult:
    project: str
    stack: str
    config: dict[str, str]
    secret_keys: list[str]
    resources: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: list[str] = field(default_factory=list)
    invokes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The program's `pulumi.log.info` messages (preview prints them as information).
    infos: list[str] = field(default_factory=list)
    error: Optional[str] = None
    # Stacks the program read through a pulumi.StackReference (fully qualified names).
    stack_references: list[str] = field(default_factory=list)
    # Objects the program read from the cluster: (type token, id, URN).
    reads: list[tuple[str, str, str]] = field(default_factory=list)

    # --- lookups (by type and name, never by order or URN literal) ---
    def get(self, type_: str, name: str) -> Registration:
        found = [r for r in self.resources if r.type == type_ and r.name == name]
        if len(found) != 1:
            have = sorted(r.name for r in self.resources if r.type == type_)
            raise KeyError(f"{len(found)} resources {type_} named {name!r}; have {have}")
        return found[0]

    def of_type(self, type_: str) -> list[Registration]:
        return sorted((r for r in self.resources if r.type == type_), key=lambda r: r.name)

    def by_urn(self) -> dict[str, Registration]:
        return {r.urn: r for r in self.resources}

    def depends_on(self, a: Registration, b: Registration) -> bool:
        """True when `a` depends on `b`, directly or transitively (declared and property dependencies)."""
        urns = self.by_urn()
        seen, todo = set(), [a.urn]
        while todo:
            cur = urns.get(todo.pop())
            if cur is None or cur.urn in seen:
                continue
            seen.add(cur.urn)
            deps = set(cur.dependencies) | {u for v in cur.property_dependencies.values() for u in v}
            if b.urn in deps:
                return True
            todo.extend(deps)
        return False

    def kubernetes_objects(self) -> list[Registration]:
        """Every Kubernetes object the program declares. A Helm release is not one: its objects come from the
        chart when the provider installs it (helm_releases())."""
        return sorted(
            (
                r
                for r in self.resources
                if r.is_kubernetes and r.custom and not r.type.startswith(("pulumi:providers:", HELM_RELEASE_PREFIX))
            ),
            key=lambda r: r.key,
        )

    def helm_releases(self) -> list[Registration]:
        return sorted((r for r in self.resources if r.type.startswith(HELM_RELEASE_PREFIX)), key=lambda r: r.key)

    def children(self, parent: Registration) -> list[Registration]:
        return [r for r in self.resources if r.parent == parent.urn]


# --- protobuf → Python, keeping exact secret paths ----------------------------------------------------------
def _decode(value: Any, path: str, secret_paths: list[str]) -> Any:
    if isinstance(value, struct_pb2.Struct):
        if _SIG in value:
            sig = value[_SIG]
            if sig == _SECRET_SIG:
                secret_paths.append(path)
                return _decode(value["value"], path, [])
            if sig == _RESOURCE_SIG:
                return {"$resource": value["urn"], "id": value["id"] if "id" in value else None}
            if sig == _OUTPUT_SIG:
                if value["secret"] if "secret" in value else False:
                    secret_paths.append(path)
                return _decode(value["value"], path, []) if "value" in value else UNKNOWN
        return {k: _decode(value[k], f"{path}.{k}" if path else k, secret_paths) for k in sorted(value.keys())}
    if isinstance(value, struct_pb2.ListValue):
        return [_decode(v, f"{path}.{i}", secret_paths) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # numbers arrive as floats
    return value


def _redact(value: Any, secret: set[str], path: str) -> Any:
    if path in secret:
        # Keep the shape (a Secret's stringData stays a map) so redacted manifests still validate.
        if isinstance(value, dict):
            return {k: "[secret]" for k in value}
        if isinstance(value, list):
            return ["[secret]" for _ in value]
        return "[secret]"
    if isinstance(value, dict):
        return {k: _redact(v, secret, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, secret, f"{path}.{i}") for i, v in enumerate(value)]
    return value


# --- placeholders for provider-computed outputs ---------------------------------------------------------------
def _computed(typ: str, name: str, inputs: dict, project: str) -> tuple[str, dict]:
    """(id, outputs the cloud would add) for a mock resource."""
    n = inputs.get("name") or name
    if typ == "gcp:compute/network:Network":
        rid = f"projects/{project}/global/networks/{n}"
        return rid, {"selfLink": f"https://www.googleapis.com/compute/v1/{rid}"}
    if typ == "gcp:compute/subnetwork:Subnetwork":
        rid = f"projects/{project}/regions/{inputs.get('region')}/subnetworks/{n}"
        return rid, {"selfLink": f"https://www.googleapis.com/compute/v1/{rid}", "gatewayAddress": "192.0.2.1"}
    if typ == "gcp:container/cluster:Cluster":
        return (
            f"projects/{project}/locations/{inputs.get('location')}/clusters/{n}",
            {
                "endpoint": PLACEHOLDER_ENDPOINT,
                "masterAuth": {"clusterCaCertificate": PLACEHOLDER_CA},
                "masterVersion": "1.33.5-gke.example",
                # GKE's DNS-based endpoint: gke-<hash>.<location>.gke.goog.
                "controlPlaneEndpointsConfig": {
                    **(inputs.get("controlPlaneEndpointsConfig") or {}),
                    "dnsEndpointConfig": {
                        **((inputs.get("controlPlaneEndpointsConfig") or {}).get("dnsEndpointConfig") or {}),
                        "endpoint": f"gke-example.{inputs.get('location')}.gke.goog",
                    },
                },
            },
        )
    if typ == "gcp:container/nodePool:NodePool":
        return f"{inputs.get('cluster')}/nodePools/{n}", {"instanceGroupUrls": []}
    if typ == "gcp:lustre/instance:Instance":
        iid = inputs.get("instanceId", name)
        return (
            f"projects/{project}/locations/{inputs.get('location')}/instances/{iid}",
            {
                "mountPoint": f"{PLACEHOLDER_LUSTRE_IP}@tcp:/{inputs.get('filesystem')}",
                "state": "ACTIVE",
                "name": f"projects/{project}/locations/{inputs.get('location')}/instances/{iid}",
            },
        )
    if typ == "gcp:serviceaccount/account:Account":
        email = f"{inputs.get('accountId')}@{project}.iam.gserviceaccount.com"
        return (
            f"projects/{project}/serviceAccounts/{email}",
            {"email": email, "member": f"serviceAccount:{email}", "uniqueId": "000000000000000000000"},
        )
    if typ == "gcp:storage/bucket:Bucket":
        return n, {"url": f"gs://{n}", "selfLink": f"https://www.googleapis.com/storage/v1/b/{n}"}
    if typ == "gcp:servicenetworking/connection:Connection":
        # The provider's id: url.QueryEscape(network) + ":" + url.QueryEscape(service) (terraform-provider-google-beta
        # servicenetworking/resource_service_networking_connection.go:402-404).
        rid = f"{quote(str(inputs.get('network')), safe='')}:{quote(str(inputs.get('service')), safe='')}"
        return rid, {"peering": "servicenetworking-googleapis-com"}
    if typ == "gcp:monitoring/dashboard:Dashboard":
        return f"projects/{PLACEHOLDER_PROJECT_NUMBER}/dashboards/example-{name}", {}
    if typ == "time:index/static:Static":
        return "2026-01-01T00:00:00Z", {"unix": PLACEHOLDER_UNIX, "rfc3339": "2026-01-01T00:00:00Z"}
    if typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
        rid = f"projects/{inputs.get('project') or project}/roles/{inputs.get('roleId')}"
        return rid, {"name": rid, "deleted": False}
    if typ == "gcp:projects/serviceIdentity:ServiceIdentity":
        # generateServiceIdentity may return no email (resource_project_service_identity.go:127-128): none here.
        return f"projects/{inputs.get('project') or project}/services/{inputs.get('service')}", {}
    if typ.startswith("kubernetes:"):
        return (
            f"{(inputs.get('metadata') or {}).get('namespace', '')}/{(inputs.get('metadata') or {}).get('name', name)}",
            {},
        )
    return f"{name}-id", {}


def _merge(computed: dict, inputs: dict) -> dict:
    """The inputs, plus what the cloud computes; nested objects merge (an input block such as
    controlPlaneEndpointsConfig keeps its fields and gains the computed ones), inputs win on conflicts."""
    out = dict(computed)
    for k, v in inputs.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


STACK_REFERENCE = "pulumi:pulumi:StackReference"


@dataclass(frozen=True)
class StackOutputs:
    """What a StackReference reads: a stack's outputs and which of them are secret."""

    outputs: dict[str, Any]
    secret_names: list[str]

    @classmethod
    def of(cls, result: SynthResult) -> "StackOutputs":
        return cls(result.outputs, sorted({p.split(".", 1)[0] for p in result.secret_outputs}))


class _Mocks(pm.Mocks):
    def __init__(
        self,
        result: SynthResult,
        project: str,
        references: Optional[dict[str, StackOutputs]] = None,
        cluster_objects: Optional[dict[tuple[str, str], dict[str, Any]]] = None,
    ):
        self.result, self.project = result, project
        self.references = references or {}
        self.cluster_objects = DEFAULT_CLUSTER_OBJECTS if cluster_objects is None else cluster_objects

    def new_resource(self, args: pm.MockResourceArgs):
        if args.typ.startswith("kubernetes:") and args.resource_id and args.typ != STACK_REFERENCE:
            # A read of a cluster object, as `pulumi preview` does it.
            rid = str(args.resource_id)
            self.result.reads.append((args.typ, rid, str(args.name)))
            obj = self.cluster_objects.get((args.typ, rid))
            if obj is None:
                raise ObjectNotFound(f"resource '{rid}' does not exist")
            return rid, json.loads(json.dumps(obj))
        if args.typ == STACK_REFERENCE:
            # A read, as `pulumi preview` does it: the referenced stack's outputs (the engine synthesized it first).
            ref = str(args.resource_id or args.inputs.get("name"))
            self.result.stack_references.append(ref)
            # A stack the engine cannot synthesize reads as one without outputs (the program then refuses it).
            found = self.references.get(ref) or StackOutputs({}, [])
            return ref, {"name": ref, "outputs": found.outputs, "secretOutputNames": found.secret_names}
        rid, extra = _computed(args.typ, args.name, args.inputs, self.project)
        return rid, _merge(extra, args.inputs)

    def call(self, args: pm.MockCallArgs):
        self.result.invokes.append({"token": args.token, "args": args.args})
        if args.token == "gcp:organizations/getProject:getProject":
            pid = args.args.get("projectId") or self.project
            return {"number": PLACEHOLDER_PROJECT_NUMBER, "projectId": pid, "name": pid, "id": f"projects/{pid}"}
        return {}


class _WarningCollector(logging.Handler):
    """Keeps the program's `pulumi.log.warn` messages (the CLI would print them during preview)."""

    def __init__(self, result: SynthResult):
        super().__init__(logging.WARNING)
        self.result = result

    def emit(self, record: logging.LogRecord) -> None:
        self.result.warnings.append(record.getMessage())


class _InfoCollector(logging.Handler):
    """Keeps the program's `pulumi.log.info` messages (the CLI prints them as information during preview)."""

    def __init__(self, result: SynthResult):
        super().__init__(logging.INFO)
        self.result = result

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.INFO:
            self.result.infos.append(record.getMessage())


class _RecordingMonitor(pm.MockMonitor):
    def __init__(self, mocks: _Mocks, result: SynthResult):
        super().__init__(mocks)
        self.result = result
        self.project = mocks.project

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type != "pulumi:pulumi:Stack":
            secret_paths: list[str] = []
            inputs = _decode(request.object, "", secret_paths)
            # Recomputed here rather than handed over by the mocks: registrations run concurrently, so a
            # "last computed" slot on the mocks would race; _computed is pure and cheap.
            rid, computed = _computed(request.type, request.name, inputs, self.project)
            timeouts = request.customTimeouts
            self.result.resources.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=urn,
                    custom=bool(request.custom),
                    parent=request.parent or None,
                    dependencies=sorted(set(request.dependencies)),
                    property_dependencies={
                        k: sorted(set(v.urns)) for k, v in sorted(request.propertyDependencies.items())
                    },
                    provider=request.provider or None,
                    protect=bool(request.protect),
                    retain_on_delete=bool(request.retainOnDelete),
                    delete_before_replace=bool(request.deleteBeforeReplace),
                    ignore_changes=sorted(request.ignoreChanges),
                    replace_on_changes=sorted(request.replaceOnChanges),
                    replace_with=sorted(request.replace_with),
                    custom_timeouts={
                        k: getattr(timeouts, k) for k in ("create", "update", "delete") if getattr(timeouts, k)
                    },
                    inputs=inputs,
                    secret_paths=sorted(secret_paths),
                    computed={k: v for k, v in computed.items() if k not in inputs},
                    version=request.version,
                    import_id=request.importId,
                    delete_before_replace_defined=bool(request.deleteBeforeReplaceDefined),
                )
            )
        return super().RegisterResource(request)

    def RegisterResourceOutputs(self, request):
        if request.urn.split("::")[2] == "pulumi:pulumi:Stack":
            secret_paths: list[str] = []
            self.result.outputs = _decode(request.outputs, "", secret_paths)
            self.result.secret_outputs = sorted(secret_paths)
        return super().RegisterResourceOutputs(request)


# --- config, as the CLI would assemble it -------------------------------------------------------------------
def _config_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def available_stacks(root: Path = ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def experiment_stacks(root: Path = ROOT) -> list[str]:
    """The stack files that make an experiment stack (`platformStack` set: core/settings/platform.py)."""
    out = []
    for name in available_stacks(root):
        cfg = (_load_yaml(root / f"Pulumi.{name}.yaml") or {}).get("config") or {}
        if any(k.endswith(":platformStack") and v for k, v in cfg.items()):
            out.append(name)
    return out


def platform_stacks(root: Path = ROOT) -> list[str]:
    return [s for s in available_stacks(root) if s not in experiment_stacks(root)]


def assemble_config(
    stack: str,
    overrides: Optional[dict[str, Any]] = None,
    secrets: Optional[dict[str, str]] = None,
    root: Path = ROOT,
    stack_file: Optional[Path] = None,
) -> tuple[str, dict, list]:
    """(project, config map "<ns>:<key>" -> string, secret keys) for a stack. `stack_file`: the stack's config file
    when it is not `Pulumi.<stack>.yaml` beside Pulumi.yaml (the CLI's `--config-file`)."""
    project_file = _load_yaml(root / "Pulumi.yaml")
    project = project_file["name"]
    stack_path = stack_file if stack_file is not None else root / f"Pulumi.{stack}.yaml"
    if not stack_path.exists():
        raise StackNotFound(
            f"no stack {stack!r}: there is no {stack_path.name}; stacks here: "
            f"{', '.join(available_stacks(root)) or 'none'}"
        )
    config: dict[str, str] = {}
    secret_keys: list[str] = []

    def full(key: str) -> str:
        return key if ":" in key else f"{project}:{key}"

    declared = project_file.get("config") or {}
    _check_declarations(declared)
    from_declaration: set[str] = set()  # keys whose value is Pulumi.yaml's, not the stack's
    for key, decl in declared.items():
        if isinstance(decl, dict):
            if "value" in decl:
                config[full(key)] = _config_string(decl["value"])
            elif "default" in decl:
                config[full(key)] = _config_string(decl["default"])
        else:
            config[full(key)] = _config_string(decl)
        if full(key) in config:
            from_declaration.add(full(key))
    stack_cfg = (_load_yaml(stack_path) or {}).get("config") or {}
    for key, value in stack_cfg.items():
        from_declaration.discard(full(key))
        if isinstance(value, dict) and set(value) == {"secure"}:
            # Encrypted in the stack file: the engine cannot decrypt it; use a placeholder, kept secret.
            config[full(key)] = f"synth-placeholder-{key.split(':')[-1]}"
            secret_keys.append(full(key))
        else:
            config[full(key)] = _config_string(value)
    for key, value in (overrides or {}).items():
        from_declaration.discard(full(key))
        if value is None:
            config.pop(full(key), None)
        else:
            config[full(key)] = _config_string(value)

    from core.settings import SECRET_KEYS

    # As the CLI does: a declared key without a default must be set (secrets: the engine supplies placeholders).
    missing = sorted(
        k
        for k, d in declared.items()
        if isinstance(d, dict)
        and "value" not in d
        and "default" not in d
        and full(k) not in config
        and k not in SECRET_KEYS
    )
    if missing:
        raise StackConfigError(
            f"stack {stack!r} is missing configuration values: " + ", ".join(full(k) for k in missing)
        )
    for key in SECRET_KEYS:
        fk = full(key)
        if secrets and key in secrets:
            if secrets[key] is None:
                # Unset, as the CLI passes it: absent, or the declared default as a plain value.
                if fk not in from_declaration:
                    config.pop(fk, None)
                continue
            config[fk] = secrets[key]
        elif fk not in config or fk in from_declaration:
            config[fk] = f"synth-placeholder-{key}"
        if fk in config and fk not in secret_keys:
            secret_keys.append(fk)
    return project, config, sorted(secret_keys)


def _check_declarations(declared: dict) -> None:
    """The CLI's checks of Pulumi.yaml's `config:` block: a default must have the declared type."""
    from synth.project_file import DEFAULT_TYPES

    for key, decl in declared.items():
        if not isinstance(decl, dict) or "default" not in decl or "type" not in decl:
            continue
        want = DEFAULT_TYPES[decl["type"]]
        default = decl["default"]
        if not isinstance(default, want) or (want is int and isinstance(default, bool)):
            raise StackConfigError(
                f"Pulumi.yaml: the default value of configuration key {key!r} is not of the "
                f"expected type {decl['type']!r}"
            )


def run(
    stack: str,
    overrides: Optional[dict[str, Any]] = None,
    secrets: Optional[dict[str, str]] = None,
    root: Path = ROOT,
    plaintext_keys: tuple[str, ...] = (),
    stack_references: Optional[dict[str, StackOutputs]] = None,
    stack_file: Optional[Path] = None,
    cluster_objects: Optional[dict[tuple[str, str], dict[str, Any]]] = None,
) -> SynthResult:
    """Run the program for `stack`. `overrides` are config values (key -> value, None removes), `secrets`
        secret config values (None removes); `plaintext_keys` are secret keys to pass unmarked (tests of the
        refusal); `stack_references`: fully qualified stack name -> the outputs its StackReference reads. An experiment
        stack's platform (`platformStack: <org>/<project>/<stack>`) not given there is synthesized first from its
        Pulumi.<stack>.yaml here, and its outputs serve the read. `stack_file`: the stack's config file when it is not
        Pulumi.<stack>.yaml in `root` (the CLI's `--config-file`). `cluster_objects`: what reads of the cluster find
    (DEFAULT_CLUSTER_OBJECTS: a cluster set up as the docs say). Returns the records; a program error (bad settings)
        is in `.error`, not raised."""
    project, config, secret_keys = assemble_config(stack, overrides, secrets, root, stack_file)
    references = dict(stack_references or {})
    platform_ref = config.get(f"{project}:platformStack", "")
    if platform_ref and platform_ref not in references and "/" in platform_ref:
        platform_stack = platform_ref.rsplit("/", 1)[1]
        if (root / f"Pulumi.{platform_stack}.yaml").exists() and platform_stack != stack:
            platform = run(platform_stack, root=root)
            if platform.error:
                first = next((ln.strip() for ln in platform.error.splitlines() if ln.strip().startswith("- ")), "")
                raise StackConfigError(
                    f"stack {stack!r} reads platform stack {platform_stack!r}, which does not synthesize: {first}"
                )
            references[platform_ref] = StackOutputs.of(platform)
    secret_keys = [k for k in secret_keys if k.split(":", 1)[1] not in plaintext_keys]
    result = SynthResult(project=project, stack=stack, config=config, secret_keys=secret_keys)

    def _run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        mocks = _Mocks(result, config.get("gcp:project", ""), references, cluster_objects)
        monitor = _RecordingMonitor(mocks, result)
        logger = logging.getLogger(f"synth.{id(result)}")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        logger.addHandler(_WarningCollector(result))
        logger.addHandler(_InfoCollector(result))
        ps.configure(
            pm.MockSettings(
                monitor=monitor,
                monitor_features=set(monitor.GetDeploymentInfo(None).supportedFeatures),
                engine=pm.MockEngine(logger),
                project=project,
                stack=stack,
                dry_run=False,
                organization="organization",
                callbacks=None,
                root_directory=str(root),
            )
        )
        set_all_config(config, secret_keys)

        def program() -> None:
            runpy.run_path(str(root / "__main__.py"), run_name="__main__")

        try:
            with _without_source_positions():
                loop.run_until_complete(run_in_stack(program))
        except pulumi.RunError as err:
            result.error = str(err)
        except ObjectNotFound as err:
            # The CLI fails the read with the provider's message, naming the object (the program adds its own line).
            result.error = str(err)
        finally:
            # A refusal raised while registrations are in flight (the Kueue check) leaves their tasks pending: end
            # them before the loop closes, as the CLI's language host does when the program exits.
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            # ... and forget them: the SDK's settings would hand them to the next run's wait for quiescence.
            ps.SETTINGS.outputs.clear()
            ps._get_rpc_manager().clear()
            loop.close()
            asyncio.set_event_loop(None)

    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    contextvars.copy_context().run(_run)
    return result
