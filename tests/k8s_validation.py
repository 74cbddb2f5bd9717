"""Strict schema validation of rendered Kubernetes objects, as the API server would judge them.

- Core kinds (apps/v1, v1, ...): `kubernetes-validate` with its strict schemas for one Kubernetes minor
  (unknown fields are errors, as with `kubectl apply --validate=strict`).
- Custom resources: the `v1` openAPIV3Schema of the CRDs vendored in `schemas/` (see schemas/SOURCES.md):
  RayCluster / RayJob against BOTH KubeRay 1.4.2 and 1.7.0 (GKE's RayOperator add-on does not publish its
  version; a stack that installs KubeRay 1.7.0 itself is held to that CRD alone), GKENetworkParamSet / Network
  against gke-networking-api. The GKE ComputeClass goes to tests/computeclass_validation.py (JSON Schemas taken
  from GKE clusters, CEL rules evaluated), the GKE FQDNNetworkPolicy to the JSON Schema in schemas/gke-fqdn/.
  The CRD schemas are made strict the way the
  API server's strict field validation treats structural schemas: every object schema with `properties` and
  neither `additionalProperties` nor `x-kubernetes-preserve-unknown-fields` rejects unknown fields (they
  would otherwise be pruned silently). `x-kubernetes-int-or-string`, `nullable`, int32/int64 formats and
  `x-kubernetes-list-type` (set / map keys) are honoured; CEL rules (`x-kubernetes-validations`) are not
  evaluated. `metadata` is checked for name and namespace only (plus KubeRay's own name rules).

Schemas are read from the repository's `schemas/` (verbatim copies, so CI on any host has them) or from
`$NEMO_RL_GKE_SCHEMAS`.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils as _kv
from kubernetes_validate.utils import SchemaNotFoundError, VersionNotSupportedError

from core import catalog

# kubernetes-validate 1.37.0 reads and parses its schema files on every call (utils.py `validate` ->
# `schema_contents`, its _definitions.json is megabytes): the files do not change during a run and jsonschema does
# not modify a schema, so each is parsed once. Its validation is otherwise untouched.
_kv.schema_contents = functools.lru_cache(maxsize=None)(_kv.schema_contents)

SCHEMAS_ENV = "NEMO_RL_GKE_SCHEMAS"
KUBERAY_VERSIONS = ("kuberay-v1.4.2", "kuberay-v1.7.0")

# (API group, kind) -> CRD files under the schemas directory; an object must validate against each.
CRD_FILES: dict[tuple[str, str], tuple[str, ...]] = {
    ("ray.io", "RayCluster"): tuple(f"{v}/ray.io_rayclusters.yaml" for v in KUBERAY_VERSIONS),
    ("ray.io", "RayJob"): tuple(f"{v}/ray.io_rayjobs.yaml" for v in KUBERAY_VERSIONS),
    ("networking.gke.io", "GKENetworkParamSet"): ("gke-networking/networking.gke.io_gkenetworkparamsets.yaml",),
    ("networking.gke.io", "Network"): ("gke-networking/networking.gke.io_networks.yaml",),
}

# KubeRay's operator rejects (status ValidationFailed) names that are not DNS-1035 labels or are longer than
# 53 (RayCluster: 63 minus "-serve-svc") or 47 (RayJob: the cluster name adds 6 characters) characters.
KUBERAY_NAME_LIMITS = {"RayCluster": 53, "RayJob": 47}

_DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_ERRORS = 8


def schemas_dir() -> Path:
    override = os.environ.get(SCHEMAS_ENV)
    path = Path(override) if override else Path(__file__).resolve().parents[1] / "schemas"
    if not path.is_dir():
        raise AssertionError(
            f"schema directory {path} not found; it is part of the repository (schemas/), or set {SCHEMAS_ENV}"
        )
    return path


def describe(obj: dict) -> str:
    """'Kind namespace/name' (or 'Kind name' when cluster-scoped) for messages."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name", "<no name>")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '<no kind>')} {ns + '/' if ns else ''}{name}"


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<root>"


# --- core kinds -------------------------------------------------------------------------------------------
def validate_core(obj: dict, k8s_minor: str = catalog.KUBERNETES_MINOR) -> None:
    """Validate a core Kubernetes object with kubernetes-validate's strict schemas for `k8s_minor` ('1.33')."""
    m = re.match(r"^v?(\d+\.\d+)(\.\d+)?$", k8s_minor)
    if not m:
        raise ValueError(f"Kubernetes version must look like '1.33' (got {k8s_minor!r})")
    minor = m.group(1)
    if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
        label = describe(obj) if isinstance(obj, dict) else repr(obj)
        raise AssertionError(f"{label}: apiVersion and kind are required")
    try:
        used = kubernetes_validate.validate(obj, minor, strict=True)
    except kubernetes_validate.ValidationError as e:
        raise AssertionError(
            f"{describe(obj)}: {_path(e.path)}: {e.message} (Kubernetes {e.version} schema, strict)"
        ) from None
    except SchemaNotFoundError as e:
        raise AssertionError(f"{describe(obj)}: {e.message}") from None
    except VersionNotSupportedError as e:
        raise AssertionError(f"{describe(obj)}: {e.message}") from None
    # kubernetes-validate silently falls back to an older schema set for versions it lacks.
    if used != minor:
        raise AssertionError(f"{describe(obj)}: validated against Kubernetes {used}, not the requested {minor}")
    # kubernetes-validate ignores `format`: the API server does not (an int32 field refuses 2**31).
    bad = _core_format_errors(obj, used)
    if bad:
        raise AssertionError(f"{describe(obj)}: {bad[0]} (Kubernetes {used} schema, format)")


def _core_format_errors(obj: dict, minor: str) -> list[str]:
    """int32 / int64 `format` violations against the same strict schemas kubernetes-validate uses."""
    api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", obj["apiVersion"])
    validator = _format_validator(obj["kind"].lower(), api_version, minor)
    return [f"{_path(e.absolute_path)}: {e.message}" for e in validator.iter_errors(obj) if e.validator == "format"]


@functools.lru_cache(maxsize=None)
def _format_validator(kind: str, api_version: str, minor: str) -> Any:
    from kubernetes_validate import utils as kv
    from referencing import Registry, Resource

    version = [v for v in kv.all_versions() if kv.major_minor(v) <= minor][-1]
    schema_dir = f"v{version}-local-strict"
    schema = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind}-{api_version}.json", minor)
    defs = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", minor)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry, format_checker=_format_checker)


# --- custom resources -------------------------------------------------------------------------------------
def _strict(node: Any) -> Any:
    """Copy of an OpenAPI v3 structural schema as a strict JSON schema (see the module docstring)."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("properties", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _strict(v) for k, v in out[key].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _strict(out[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = _strict(out[key])
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if out.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    if out.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


def _list_map_keys(validator, keys, instance, schema) -> Iterator[jsonschema.ValidationError]:
    """x-kubernetes-list-type: map: the server rejects two items with the same key (defaults filled in)."""
    if schema.get("x-kubernetes-list-type") != "map" or not validator.is_type(instance, "array"):
        return
    item_props = (schema.get("items") or {}).get("properties", {})
    seen: dict[tuple, int] = {}
    for i, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(k, item_props.get(k, {}).get("default")) for k in keys)
        if key in seen:
            yield jsonschema.ValidationError(
                f"items [{seen[key]}] and [{i}] have the same map key {dict(zip(keys, key, strict=True))}"
            )
        seen[key] = i


_format_checker = jsonschema.FormatChecker(())
_format_checker.checks("int32")(lambda v: not isinstance(v, int) or -(2**31) <= v < 2**31)
_format_checker.checks("int64")(lambda v: not isinstance(v, int) or -(2**63) <= v < 2**63)

# OpenAPI 3.0 schemas are draft-4 flavoured (boolean exclusiveMinimum, no const).
_CrdValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {"x-kubernetes-list-map-keys": _list_map_keys})


@functools.lru_cache(maxsize=None)
def _load_crd(path: str) -> dict:
    with open(path) as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.lru_cache(maxsize=None)
def _crd_schema(path: str, version: str) -> tuple[dict, str]:
    """(strict schema, scope) for one served version of one CRD file."""
    crd = _load_crd(path)
    versions = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served", True)}
    if version not in versions:
        raise AssertionError(
            f"{Path(path).parent.name}/{Path(path).name} does not serve {version} "
            f"(serves {', '.join(sorted(versions))})"
        )
    schema = _strict(copy.deepcopy(versions[version]["schema"]["openAPIV3Schema"]))
    scope = crd["spec"]["scope"]
    # metadata: name and namespace only; the server validates the rest of ObjectMeta itself.
    meta: dict = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 253, "pattern": _DNS1123_SUBDOMAIN},
            "namespace": {"type": "string", "maxLength": 63, "pattern": _DNS1123_LABEL},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    if scope == "Namespaced":
        meta["required"] = ["name", "namespace"]
    schema["properties"]["metadata"] = meta
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
    return schema, scope


@functools.lru_cache(maxsize=None)
def _crd_validator(path: str, version: str):
    """(validator, scope) for one served version of one CRD file. The schemas themselves are checked against the
    meta-schema by `check_crd_schemas()` (tests/test_kubernetes_half.py), once, not before every validation."""
    schema, scope = _crd_schema(path, version)
    return _CrdValidator(schema, format_checker=_format_checker), scope


def _crd_paths() -> list[str]:
    return sorted(str(schemas_dir() / rel) for files in CRD_FILES.values() for rel in files)


def check_crd_schemas(version: str = "v1") -> None:
    """Every kept CRD schema, made strict, is a valid draft-4 schema (jsonschema raises SchemaError otherwise)."""
    for path in _crd_paths():
        _CrdValidator.check_schema(_crd_schema(path, version)[0])


def load_crd_validators(version: str = "v1") -> None:
    """Parse every kept CRD (seconds: megabytes of YAML) once, before the tests that validate against them."""
    for path in _crd_paths():
        _crd_validator(path, version)


def _group_version(obj: dict) -> tuple[str, str]:
    api_version = obj.get("apiVersion", "")
    group, _, version = api_version.rpartition("/")
    return group, version


def validate_crd(obj: dict, kuberay_versions: tuple[str, ...] = KUBERAY_VERSIONS) -> None:
    """Validate a RayCluster / RayJob (against each of `kuberay_versions`: both, unless the stack installs its own
    KubeRay) or a GKE networking object, strictly."""
    group, version = _group_version(obj)
    files = CRD_FILES.get((group, obj.get("kind")))
    if group == "ray.io" and files is not None:
        files = tuple(f for f in files if f.split("/")[0] in kuberay_versions)
    if files is None:
        raise AssertionError(f"{describe(obj)}: no CRD schema known for {obj.get('apiVersion')} {obj.get('kind')}")
    root = schemas_dir()
    problems: list[str] = []
    for rel in files:
        source = rel.split("/")[0]
        try:
            validator, scope = _crd_validator(str(root / rel), version)
        except AssertionError as e:
            problems.append(f"[{source}] apiVersion: {e}")
            continue
        if scope == "Cluster" and "namespace" in (obj.get("metadata") or {}):
            # The server drops it without a word; a rendered cluster-scoped object should not carry one.
            problems.append(f"[{source}] metadata.namespace: {obj.get('kind')} is cluster-scoped")
        errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
        for err in errors[:_MAX_ERRORS]:
            problems.append(f"[{source}] {_path(err.absolute_path)}: {err.message}")
        if len(errors) > _MAX_ERRORS:
            problems.append(f"[{source}] ... and {len(errors) - _MAX_ERRORS} more")
    limit = KUBERAY_NAME_LIMITS.get(obj.get("kind")) if group == "ray.io" else None
    name = (obj.get("metadata") or {}).get("name")
    if limit and isinstance(name, str) and (len(name) > limit or not _DNS1035_LABEL.match(name)):
        problems.append(
            f"[kuberay operator] metadata.name: {name!r} must be a DNS-1035 label of at most {limit} characters"
        )
    if problems:
        raise AssertionError(f"{describe(obj)} is invalid:\n  " + "\n  ".join(problems))


# GKE's FQDNNetworkPolicy: JSON Schema already made strict (schemas/gke-fqdn/SOURCES.md).
FQDN_SCHEMA = "gke-fqdn/fqdnnetworkpolicy_v1alpha1.json"


def validate_fqdn_policy(obj: dict) -> None:
    """A GKE FQDNNetworkPolicy against the kept CRD schema (namespaced: name and namespace required)."""
    import json

    schema = json.loads((schemas_dir() / FQDN_SCHEMA).read_text())
    problems = []
    if obj.get("apiVersion") != catalog.FQDN_POLICY_API_VERSION or obj.get("kind") != catalog.FQDN_POLICY_KIND:
        problems.append(f"apiVersion/kind: expected {catalog.FQDN_POLICY_API_VERSION} {catalog.FQDN_POLICY_KIND}")
    meta = obj.get("metadata") or {}
    for k, pattern in (("name", _DNS1123_SUBDOMAIN), ("namespace", _DNS1123_LABEL)):
        if not isinstance(meta.get(k), str) or not re.match(pattern, meta[k]):
            problems.append(f"metadata.{k}: {meta.get(k)!r} is not a valid {k}")
    errors = sorted(
        jsonschema.Draft4Validator(schema, format_checker=_format_checker).iter_errors(obj),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    problems += [f"{_path(e.absolute_path)}: {e.message}" for e in errors[:_MAX_ERRORS]]
    if problems:
        raise AssertionError(f"{describe(obj)} is invalid:\n  " + "\n  ".join(problems))


def validate_any(obj: dict, kuberay_versions: tuple[str, ...] = KUBERAY_VERSIONS) -> None:
    """Dispatch on apiVersion/kind: known CRDs to validate_crd (the GKE ComputeClass, FQDNNetworkPolicy and Kueue's
    kinds to their own validators, whose schemas are JSON Schema), everything else to validate_core.
    `kuberay_versions`: the KubeRay CRDs a Ray object must satisfy (both, unless the stack installs its own
    KubeRay)."""
    group, _ = _group_version(obj)
    if (group, obj.get("kind")) == ("cloud.google.com", "ComputeClass"):
        from tests.computeclass_validation import validate_compute_class

        validate_compute_class(obj)
    elif obj.get("kind") == catalog.FQDN_POLICY_KIND and group == "networking.gke.io":
        validate_fqdn_policy(obj)
    elif group == "kueue.x-k8s.io":
        from tests.kueue_validation import validate_kueue

        validate_kueue(obj)
    elif (group, obj.get("kind")) in CRD_FILES:
        validate_crd(obj, kuberay_versions)
    else:
        validate_core(obj)
