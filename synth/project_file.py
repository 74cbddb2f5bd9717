"""Pulumi.yaml's `config:` block, derived from the settings model so the two cannot drift.

`python -m synth.project_file` rewrites Pulumi.yaml; a test fails when the file and the model disagree.
"""
from __future__ import annotations

import typing
from pathlib import Path

import yaml

from infra.settings import SECRET_KEYS, config_fields

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "name": "nemo-rl-gke",
    "description": "NeMo-RL GRPO training on GKE with Managed Lustre, as one Pulumi graph",
    "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}},
}


def _pulumi_type(annotation) -> tuple[str, dict]:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is typing.Union and len(args) == 1:
        return _pulumi_type(args[0])
    if origin is list:
        return "array", {"items": {"type": "string"}}
    if origin is dict or annotation is dict:
        return "object", {}
    if origin is typing.Literal:
        return "string", {}
    if annotation is bool:
        return "boolean", {}
    if annotation is int:
        return "integer", {}
    return "string", {}


def config_block() -> dict:
    block: dict = {}
    for key, (_section, _fname, info) in sorted(config_fields().items()):
        ptype, extra = _pulumi_type(info.annotation)
        decl = {"type": ptype, **extra, "description": info.description}
        default = info.get_default(call_default_factory=True)
        # Optional settings without a default are left out of `default` (Pulumi config has no null).
        if default is not None:
            decl["default"] = default
        block[key] = decl
    for key, what in sorted(SECRET_KEYS.items()):
        block[key] = {"type": "string", "secret": True,
                      "description": f"{what}; set with `pulumi config set --secret {key} …`"}
    # Every Kubernetes resource names its provider: a missing one must fail instead of using ~/.kube/config.
    block["pulumi:disable-default-providers"] = {"value": ["kubernetes"]}
    return block


def render() -> str:
    doc = {**HEADER, "config": config_block()}
    return "# Generated from infra/settings.py by `python -m synth.project_file`; edit the model, not this file.\n" \
        + yaml.safe_dump(doc, sort_keys=False, width=120)


if __name__ == "__main__":
    (ROOT / "Pulumi.yaml").write_text(render())
    print("wrote Pulumi.yaml")
