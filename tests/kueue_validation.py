"""Strict validation of rendered Kueue objects (kueue.x-k8s.io/v1beta2) against the CRD schemas kept in
schemas/kueue-v1beta2/ (see its SOURCES.md: Kueue's v1beta2 openAPIV3Schema as JSON Schema, equal to v0.19.2's for
every field and create-time rule the program renders), structurally (jsonschema, made strict as the API server's
strict field validation treats structural schemas: tests/k8s_validation.py) and by the CRDs' CEL rules
(tests/cel_rules.py). Scope (Cluster or Namespaced) per kind is the CRDs' `spec.scope` at v0.19.2
(charts/kueue/templates/crd/*.yaml).
"""

from __future__ import annotations

import copy
import functools
import json
import re

from tests.cel_rules import cel_problems
from tests.k8s_validation import _CrdValidator, _format_checker, _strict, schemas_dir

API_VERSION = "kueue.x-k8s.io/v1beta2"
# kind -> (schema file, namespaced)
KINDS = {
    "ResourceFlavor": ("resourceflavor_v1beta2.json", False),
    "ClusterQueue": ("clusterqueue_v1beta2.json", False),
    "LocalQueue": ("localqueue_v1beta2.json", True),
    "WorkloadPriorityClass": ("workloadpriorityclass_v1beta2.json", False),
    "AdmissionCheck": ("admissioncheck_v1beta2.json", False),
    "ProvisioningRequestConfig": ("provisioningrequestconfig_v1beta2.json", False),
}
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@functools.lru_cache(maxsize=None)
def load_schema(kind: str) -> dict:
    return json.loads((schemas_dir() / "kueue-v1beta2" / KINDS[kind][0]).read_text())


def _python_patterns(node):
    """The API server evaluates `pattern` with Go's RE2, which accepts an inline flag group anywhere (`^(?i)...`, the
    AdmissionCheck's parameters.kind); Python's re only at the start: the same expression with the flag first."""
    if isinstance(node, dict):
        out = {k: _python_patterns(v) for k, v in node.items()}
        p = out.get("pattern")
        if isinstance(p, str) and p.startswith("^(?i)"):
            out["pattern"] = "(?i)^" + p[len("^(?i)") :]
        return out
    if isinstance(node, list):
        return [_python_patterns(v) for v in node]
    return node


@functools.lru_cache(maxsize=None)
def _validator(kind: str):
    schema = _strict(_python_patterns(copy.deepcopy(load_schema(kind))))
    schema["properties"]["metadata"] = {"type": "object"}  # checked below
    schema["additionalProperties"] = False
    return _CrdValidator(schema, format_checker=_format_checker)


def validate_kueue(obj: dict) -> None:
    """Raise AssertionError listing every problem of a Kueue object."""
    kind = obj.get("kind")
    problems: list[str] = []
    if obj.get("apiVersion") != API_VERSION or kind not in KINDS:
        raise AssertionError(f"{obj.get('apiVersion')} {kind}: not a Kueue v1beta2 kind this validator knows")
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1123 subdomain")
    namespaced = KINDS[kind][1]
    if namespaced and not (isinstance(meta.get("namespace"), str) and _DNS1123_LABEL.match(meta["namespace"])):
        problems.append(f"metadata.namespace: {meta.get('namespace')!r}: {kind} is namespaced")
    if not namespaced and "namespace" in meta:
        problems.append(f"metadata.namespace: {kind} is cluster-scoped")
    errors = sorted(_validator(kind).iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    problems += [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors[:8]]
    if not errors:
        problems += cel_problems(load_schema(kind), obj)
    if problems:
        raise AssertionError(f"{kind} {name} is invalid:\n  " + "\n  ".join(problems))
