"""Strict validation of a rendered GKE ComputeClass against the CRD schemas taken from GKE clusters.

The schemas in schemas/gke-computeclass/ (see its SOURCES.md) are JSON Schema already made strict (unknown
fields are errors). An object must validate against every vendored copy, structurally (jsonschema, draft 4 as
OpenAPI v3.0) and by the CRD's CEL rules (tests/cel_rules.py). The CRD is cluster-scoped; metadata is checked
for its name only.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jsonschema

from tests.cel_rules import cel_problems

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas" / "gke-computeclass"
SCHEMA_FILES = ("computeclass_v1-gke-1.33.json", "computeclass_v1-2026-08.json")
API_VERSION = "cloud.google.com/v1"
KIND = "ComputeClass"

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_ERRORS = 8


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def validate_compute_class(obj: dict) -> None:
    """Raise AssertionError listing every problem of `obj` against every vendored ComputeClass schema."""
    problems: list[str] = []
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != KIND:
        problems.append(
            f"apiVersion/kind: expected {API_VERSION} {KIND}, got {obj.get('apiVersion')} {obj.get('kind')}"
        )
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1123 subdomain")
    if "namespace" in meta:
        problems.append("metadata.namespace: ComputeClass is cluster-scoped")
    for fname in SCHEMA_FILES:
        schema = load_schema(fname)
        validator = jsonschema.Draft4Validator(schema)
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
        for err in errors[:_MAX_ERRORS]:
            where = ".".join(str(p) for p in err.absolute_path) or "<root>"
            problems.append(f"[{fname}] {where}: {err.message}")
        if not errors:
            problems.extend(f"[{fname}] {p}" for p in cel_problems(schema, obj))
    if problems:
        raise AssertionError(f"ComputeClass {name} is invalid:\n  " + "\n  ".join(problems))
