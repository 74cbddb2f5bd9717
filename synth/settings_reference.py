"""docs/settings.md, the settings reference, generated from the settings' records so the two cannot drift.

`python -m synth.settings_reference` (`make settings-doc`) rewrites docs/settings.md; a test fails when the file and
the records disagree. For every config key it writes what its declaration holds (core/settings/record.py: type,
default, description, constraints, the cluster modes it applies to, who sets it, what changing it on a deployed
stack does and may touch, the rules module that guards it), how Pulumi.yaml declares it and how to set it with the
CLI, the shipped stacks' values, and the refusal lines the program really prints: each bad value of the record is
set on the `dev` stack, alone, and the in-process engine runs the program on it. The same values are the cases of
tests/test_bad_input_sweep.py, which asserts that each is refused by exactly one line naming its key and registers
nothing.
"""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path
from typing import Any

import yaml

from core import catalog
from core.settings import SECRET_KEYS, SECTIONS
from core.settings.record import MODE_NAMES, SettingRecord
from core.settings.registry import declared
from synth import engine

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "settings.md"
STACK = "dev"  # where the refusal lines come from: Standard, standing cluster, NeMo-RL v0.5.0, Gemma 3 on 2 H200

# key -> values the `dev` stack must refuse, each set alone: the records' bad values (core.settings.record).
BAD_VALUES: dict[str, tuple] = {k: tuple(b.value for b in d.record.bad) for k, d in declared().items()}

# How each secret is refused: (what the case shows, config overrides, secret values, secrets passed in plain text).
# A token must be encrypted (`--secret`); the optional ones are required only where they are used.
SECRET_CASES: dict[str, tuple[tuple[str, dict, dict, tuple], ...]] = {
    "hfToken": (("stored in plain text", {}, {}, ("hfToken",)),),
    "wandbApiKey": (
        ("unset, with a recipe that logs to W&B (dev's)", {}, {"wandbApiKey": None}, ()),
        ("stored in plain text", {}, {}, ("wandbApiKey",)),
    ),
    "rayAuthToken": (
        (
            "unset, with token authentication on (v0.7.0 on its own KubeRay)",
            {"nemoRlRelease": "v0.7.0", "kubeRayOperator": "helm", "jobEnabled": "false"},
            {"rayAuthToken": None},
            (),
        ),
    ),
}

SECTION_TITLES = {
    "stack": "Stack: name prefix, region, zone",
    "teardown": "Teardown: what destroy keeps",
    "network": "Networks",
    "cluster": "GKE cluster",
    "gpu": "GPU type and nodes",
    "capacity": "GPU capacity",
    "queue": "Queue: admission, quota and priorities",
    "lustre": "Managed Lustre",
    "storage": "Bucket and Kubernetes names",
    "workload": "Ray cluster and image",
    "job": "Training job",
    "monitoring": "Dashboard and checkpoint budget",
    "gate": "Readiness gate",
    "security": "Access and hardening",
    "startup": "Time to first step and checkpoint export",
    "tenancy": "Experiments on a team platform",
}


def _title(section: str) -> str:
    return SECTION_TITLES.get(section, section.capitalize())


# --- what each key is -------------------------------------------------------------------------------------------
def _type(annotation: Any) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is typing.Union and len(args) == 1:
        return _type(args[0]) + ", optional"
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in typing.get_args(annotation))
    if origin is list:
        return "list of strings"
    if origin is dict or annotation is dict:
        return "object"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(annotation, str(annotation))


OWNERS = {
    "platform": "the platform stack; an experiment stack uses its platform's value and refuses its own",
    "both": "each stack for itself: a platform's own job, and every experiment stack",
    "experiment": "experiment stacks only",
}


def _day_two(r: SettingRecord) -> str:
    """`stops the job (the note); on Autopilot: in place`: the record's claims as the day-two sweep checks them."""
    parts = []
    for cls, condition in r.claims():
        if condition is None:
            parts.append(f"{cls}" + (f" ({r.day_two.note})" if r.day_two.note else ""))
        else:
            parts.append(f"{condition}: {cls}")
    return "; ".join(parts)


def _yaml_value(value: Any) -> str:
    return (
        json.dumps(value)
        if isinstance(value, (list, dict, str))
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def _how_to_set(key: str, decl: dict) -> str:
    if decl.get("type") == "array":
        return (
            f"`pulumi config set --path '{key}[0]' <item>` (then `[1]`, ...; `pulumi config rm {key}` first to "
            f"start a shorter list), or in the stack file `nemo-rl-gke:{key}: [a, b]`"
        )
    if decl.get("type") == "object":
        return (
            f"`pulumi config set --path '{key}.<field>' <value>` (`true`/`false` and integers become booleans "
            f"and numbers), or in the stack file `nemo-rl-gke:{key}: {{field: value}}`"
        )
    return f"`pulumi config set {key} <value>`; `pulumi config rm {key}` returns to the default"


def _stack_values(key: str) -> dict[str, Any]:
    out = {}
    for stack in engine.available_stacks(ROOT):
        cfg = (yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text()) or {}).get("config") or {}
        for k in (f"nemo-rl-gke:{key}", key):
            if k in cfg:
                out[stack] = cfg[k]
    return out


# --- what the program says ----------------------------------------------------------------------------------------
def _problem_lines(error: str) -> list[str]:
    return [ln.strip()[2:] for ln in error.splitlines() if ln.strip().startswith("- ")]


def refusal(overrides: dict, secrets: dict | None = None, plaintext: tuple = ()) -> list[str]:
    """The problem lines the program prints for the `dev` stack with these settings ([] when accepted)."""
    r = engine.run(STACK, overrides, secrets, plaintext_keys=plaintext)
    return _problem_lines(r.error) if r.error else []


def _label(value: Any) -> str:
    """The value as `--set` takes it; a long JSON list is shortened to its first items and its length."""
    text = str(value)
    if len(text) <= 80:
        return text
    try:
        items = json.loads(text)
    except ValueError:
        return f"{text[:40]}... ({len(text)} characters)"  # a long name: its length is the case
    if not isinstance(items, list):
        return text  # an object is shown whole: its keys are the case
    return json.dumps(items[:2])[:-1] + f", ... ({len(items)} items)]"


def _refusals_block(cases: list[tuple[str, list[str]]]) -> list[str]:
    out = ["```"]
    for label, lines in cases:
        out.append(label)
        out.extend(f"  {ln}" for ln in lines or ["(accepted)"])
    return out + ["```"]


# --- the page -----------------------------------------------------------------------------------------------------
def render() -> str:
    settings = declared()
    in_yaml = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    for k, d in settings.items():
        by_section[d.section].append(k)

    lines = [
        "# Settings reference",
        "",
        "<!-- Generated from core/settings/ by `make generated` (python -m synth.settings_reference); edit the "
        "records, not this file. A test keeps the two in step. -->",
        "",
        "Every setting is a Pulumi config key of the project `nemo-rl-gke` (`nemo-rl-gke:<key>`), declared in",
        "`Pulumi.yaml` with its type and default and read once, by `load_settings()` in `core/settings/`. Invalid",
        "settings stop `pulumi preview` / `pulumi up` (and the offline synth) before anything is created, with one",
        "line per problem naming the key. The refusal lines below are what the program prints for the `dev` stack",
        "with that one value set (`python -m synth dev --set <key>=<value>` shows the same).",
        "",
        "Setting values from the CLI: `pulumi config set <key> <value>` stores a string, which is right for every",
        'string, integer, boolean and optional key (the program parses `"4"` and `"true"`). List and object',
        "settings are typed `array` / `object` in `Pulumi.yaml`, and the CLI refuses a plain string for them before",
        "the program runs (\"Stack 'dev' with configuration key 'capacity' must be of type 'array<string>'\"): set",
        "them with `--path`, in the stack file, or with `pulumi config set-all --json` (CLI "
        f"{catalog.PULUMI_SET_ALL_JSON_MIN_VERSION} or later),",
        "whose value carries both the JSON text and the object:",
        "",
        "```sh",
        "pulumi config set --path 'capacity[0]' reservation",
        "pulumi config set --path 'capacity[1]' spot",
        "pulumi config set --path 'jobOverrides.max_num_steps' 40",
        'pulumi config set-all --json \'{"nemo-rl-gke:capacity": {"value": "[\\"reservation\\",\\"spot\\"]", '
        '"objectValue": ["reservation", "spot"], "secret": false}}\'',
        "```",
        "",
        'Optional settings (type "..., optional") are declared in `Pulumi.yaml` as strings defaulting to `""`:',
        "empty means unset, and the default described is then derived by the program.",
        "",
        "## Contents",
        "",
        "- [Secrets](#secrets): " + ", ".join(f"`{k}`" for k in SECRET_KEYS),
    ]
    for section, keys in by_section.items():
        anchor = _title(section).lower().replace(":", "").replace(",", "").replace(" ", "-")
        lines.append(f"- [{_title(section)}](#{anchor}): " + ", ".join(f"`{k}`" for k in keys))

    lines += [
        "",
        "## Secrets",
        "",
        "Read with `get_secret` / `require_secret`, never part of the settings model, and reaching pods only as",
        "files of a Kubernetes Secret (docs/security.md). Each is declared `secret: true` in `Pulumi.yaml`. The",
        "Hugging Face token is typed and has no default: the CLI stops a stack that lacks it before the program",
        "runs, with \"Stack 'dev' is missing configuration value 'hfToken'\", and refuses it unencrypted (\"...",
        "must be encrypted as it's secret\"). The other two are optional, so they are declared with an empty",
        "default and no type (the CLI merges a default in as a plain value and would refuse a typed secret",
        "holding it); the program treats empty as unset and refuses a value stored without `--secret`.",
        "`pulumi config set --secret <key>` without a value prompts for it, so it stays out of the shell history.",
        "",
    ]
    for k in SECRET_KEYS:
        decl = in_yaml[k]
        lines += [
            f"### `{k}`",
            "",
            decl["description"],
            "",
            f"- Pulumi.yaml: {'`' + decl['type'] + '`, ' if 'type' in decl else ''}`secret: true`, "
            + ("no default (required)" if "default" not in decl else 'default `""` (unset)'),
            f"- Set: `pulumi config set --secret {k} <value>`",
            "",
        ]
        lines += _refusals_block([(label, refusal(o, s, p)) for label, o, s, p in SECRET_CASES[k]]) + [""]

    for section, keys in by_section.items():
        model = SECTIONS[section]
        module = inspect.getmodule(model)
        rules = Path(inspect.getfile(model)).relative_to(ROOT).as_posix()
        doc = inspect.getdoc(module) or ""
        lines += [
            f"## {_title(section)}",
            "",
            doc or inspect.getdoc(model) or "",
            "",
            f"Fields and rules: `{rules}`.",
            "",
        ]
        for k in keys:
            d = settings[k]
            r, info, decl = d.record, d.info, in_yaml[k]
            default = d.default
            facts = [
                f"- Type: {_type(d.annotation)}" + "".join(f", {c}" for c in d.constraints),
                "- Default: " + ("unset" if default is None else f"`{_yaml_value(default)}`"),
                f"- Pulumi.yaml: `{decl['type']}`" + (', default `""` (unset)' if default is None else ""),
                f"- Set: {_how_to_set(k, decl)}",
            ]
            for mode in sorted(set(MODE_NAMES) - r.modes):
                only = " and ".join(MODE_NAMES[m] for m in sorted(r.modes))
                facts.append(f"- {only} clusters only: on {MODE_NAMES[mode]} a value other than the default is refused")
            facts.append(f"- Set by: {OWNERS[r.owner]}")
            facts.append(f"- Rules: `{d.rule_module.replace('.', '/')}.py`")
            facts.append(f"- Changing it on a deployed stack: {_day_two(r)}")
            touches = ", ".join(f"`{t}`" for t in r.day_two.touches) or "nothing rendered"
            facts.append("- May change: " + ("everything" if r.day_two.touches == ("*",) else touches))
            shipped = _stack_values(k)
            if shipped:
                facts.append("- Shipped stacks: " + ", ".join(f"{s} `{_yaml_value(v)}`" for s, v in shipped.items()))
            lines += [f"### `{k}`", "", info.description or "", ""] + facts + ["", "Refused:", ""]
            lines += _refusals_block([(f"{k}={_label(v)}", refusal({k: v})) for v in BAD_VALUES.get(k, ())]) + [""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(ROOT)}")
