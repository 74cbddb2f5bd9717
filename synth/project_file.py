"""Pulumi.yaml's `config:` block, derived from the settings model so the two cannot drift.

`python -m synth.project_file` rewrites Pulumi.yaml; a test fails when the file and the model disagree.
"""

from __future__ import annotations

import typing
from pathlib import Path

import yaml

from core import catalog
from core.settings import SECRET_KEYS, config_fields

# Python type of a default for each Pulumi config type: the CLI checks defaults against the declared type.
DEFAULT_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "name": "nemo-rl-gke",
    "description": "NeMo-RL GRPO training on GKE with Managed Lustre, as one Pulumi graph",
    "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}},
    # Enforced by CLI 3.219.0 and later only (catalog.PULUMI_REQUIRED_VERSION_ENFORCED_FROM); older CLIs ignore it,
    # so `make preview/up/destroy` also check `pulumi version` (tools/cli_version.py).
    "requiredPulumiVersion": f">={catalog.PULUMI_CLI_MIN_VERSION}",
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
            block[key] = {"type": "string", "description": (info.description or "") + note, "default": ""}
            continue
        ptype, extra = _pulumi_type(info.annotation)
        block[key] = {"type": ptype, **extra, "description": info.description, "default": default}
    # Secrets. How the CLI treats a declaration (pulumi/pulumi pkg/workspace/config.go @1b594989, the same logic in
    # sdk/go/common/workspace/config.go at v3.207.0): a project key with neither `default` nor `value` that the
    # stack does not set stops every preview/up with "Stack '<stack>' is missing configuration value '<key>'"
    # (mergeConfig); a *typed* key declared `secret: true` whose stack value is not encrypted stops it with "...
    # must be encrypted as it's secret" (validateStackConfigValue, run for typed keys only). A declared default is
    # merged in as a plain value, so a typed secret with a default fails whenever the stack leaves it unset.
    # Hence: the HF token, which every stack needs, is typed and has no default (the CLI requires it and refuses it
    # in plain text); the two optional secrets are declared `secret: true` with an empty default and no type, so
    # the CLI requires neither; the program reads "" as unset and refuses a non-empty plain value itself.
    block["hfToken"] = {
        "type": "string",
        "secret": True,
        "description": f"{SECRET_KEYS['hfToken']}; set with `pulumi config set --secret hfToken <token>`",
    }
    block["wandbApiKey"] = {
        "secret": True,
        "default": "",
        "description": (
            f"{SECRET_KEYS['wandbApiKey']}; required when the recipe logs to W&B; set with "
            "`pulumi config set --secret wandbApiKey <key>`"
        ),
    }
    block["rayAuthToken"] = {
        "secret": True,
        "default": "",
        "description": (
            f"{SECRET_KEYS['rayAuthToken']}; required when Ray token authentication is on; set with "
            '`pulumi config set --secret rayAuthToken "$(openssl rand -hex 32)"`'
        ),
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
