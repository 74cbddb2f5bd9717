"""Pulumi.yaml's `config:` block, derived from the settings model so the two cannot drift.

`python -m synth.project_file` rewrites Pulumi.yaml; a test fails when the file and the model disagree.
"""

from __future__ import annotations

import typing
from pathlib import Path

import yaml

from core.settings import SECRET_KEYS, config_fields

# Python type of a default for each Pulumi config type: the CLI checks defaults against the declared type.
DEFAULT_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}

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
        default = info.get_default(call_default_factory=True)
        if default is None:
            # The CLI treats a declared key without a default as required and checks a default against the
            # declared type; Pulumi config has no null. An optional setting is therefore declared as a string
            # defaulting to "", which the settings loader reads as unset ("4", "true" still parse).
            kind, _ = _pulumi_type(info.annotation)
            note = "" if kind == "string" else f" ({kind} value; empty: unset)"
            block[key] = {"type": "string", "description": info.description + note, "default": ""}
            continue
        ptype, extra = _pulumi_type(info.annotation)
        block[key] = {"type": ptype, **extra, "description": info.description, "default": default}
    # The HF token is required: declared without a default, the CLI refuses a stack that has not set it. The
    # optional W&B key is not declared (a declared key without a default would be required; a secret cannot
    # sensibly default to a value); the program reads it with get_secret().
    block["hfToken"] = {
        "type": "string",
        "secret": True,
        "description": f"{SECRET_KEYS['hfToken']}; set with `pulumi config set --secret hfToken <token>`",
    }
    # Every Kubernetes resource names its provider: a missing one must fail instead of using ~/.kube/config.
    block["pulumi:disable-default-providers"] = {"value": ["kubernetes"]}
    return block


def render() -> str:
    doc = {**HEADER, "config": config_block()}
    return (
        "# Generated from the settings models (core/settings/) by `python -m synth.project_file`; edit them, not this "
        "file.\n" + yaml.safe_dump(doc, sort_keys=False, width=120)
    )


if __name__ == "__main__":
    (ROOT / "Pulumi.yaml").write_text(render())
    print("wrote Pulumi.yaml")
