"""docs/settings.md, the settings reference, generated from the settings models so the two cannot drift.

`python -m synth.settings_reference` (`make settings-doc`) rewrites docs/settings.md; a test fails when the file and
the models disagree. For every config key it writes what the model declares (type, default, description,
constraints, the cluster mode it applies to), how Pulumi.yaml declares it and how to set it with the CLI, the
rules module that guards it, the shipped stacks' values, and the refusal lines the program really prints: each
value in `BAD_VALUES` is set on the `dev` stack, alone, and the in-process engine runs the program on it.

`BAD_VALUES` is also the input of tests/test_bad_input_sweep.py, which asserts that each value is refused by exactly
one line naming its key and registers nothing: a new setting without a bad value fails there.
"""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path
from typing import Any

import yaml

from core import catalog
from core.settings import SECRET_KEYS, SECTIONS, STANDARD_ONLY, config_fields
from synth import engine

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "settings.md"
STACK = "dev"  # where the refusal lines come from: Standard, standing cluster, NeMo-RL v0.5.0, Gemma 3 on 2 H200

INT32_ABOVE = str(catalog.K8S_INT32_MAX + 1)

# key -> values the `dev` stack must refuse, each set alone.
BAD_VALUES: dict[str, tuple] = {
    "prefix": ("Bad_x",),
    "region": ("", "Central US"),
    "zone": ("uscentral1b", "us-east1-b"),
    "lustreOnDestroy": ("keep",),
    "clusterDeletionProtection": ("maybe",),
    "primarySubnetCidr": ("10.0.0.300/20",),
    "podsCidr": ("x",),
    "servicesCidr": ("10.0.0.0/16",),
    "psaCidr": ("10.20.0.0/28",),
    "gvnicSubnetCidr": ("x",),
    "rdmaSubnetCidrs": ('["x"]', "notjson", '["192.168.1.0/24"]'),
    "clusterMode": ("kubernetes",),
    "controlPlane": ("x",),
    "releaseChannel": ("x",),
    "gkeVersion": ("latest",),
    "maintenanceStart": ("3am",),
    # A freeze longer than 30 days holds back node security patches (core.catalog.MAINTENANCE_EXCLUSION_MAX_DAYS).
    "maintenanceExclusionStart": ("tomorrow", "2026-13-01"),
    "maintenanceExclusionDays": (0, 31),
    "systemMachineType": ("$x", "N2 standard"),
    # GKE: 1,000 nodes per node pool per zone (core.catalog.GKE_MAX_NODES_PER_POOL_ZONE, GKE quotas page).
    "systemNodes": (0, 1001),
    "gpuType": ("nvidia-h100",),
    "machineType": ("a4-highgpu-8g",),
    "gpuNodes": (-1, 1001, "x", INT32_ABOVE),
    "gpuDriverVersion": ("x",),
    "capacity": ("[]", '["x"]', '["spot", "spot"]'),
    "reservation": ("UPPER",),
    "reservationStartNodes": (5,),
    "flexStartMaxRunHours": (0, 200),
    "flexStartWaitMinutes": (30, -1),
    "gpuPlacement": ("x",),
    "gpuPlacementDistance": ("x",),
    "computeClass": ("gke-x", "Bad_x"),
    "lustreCapacityGib": (1, 20000),
    "lustreTier": (7,),
    "lustreFilesystem": ("lustre-fs",),
    "lustrePortMode": ("x",),
    "lustreRootSquash": ("maybe",),
    "bucketName": ("$x", "-1"),
    "namespace": ("kube-system", "NeMo"),
    "ksaName": ("Bad_x",),
    "nemoRlRelease": ("v9", "", "$x"),
    "rayVersion": ("2.0.0",),
    "workerReplicas": (-1, 3, INT32_ABOVE),
    "lustreMountPath": ("$x", "lustre", "/usr"),
    "shmSizeGib": (0, 100000),
    "headCpu": (0, 10000),
    "headMemoryGib": (0, 100000),
    # More than the system node's allocatable ephemeral storage (core/node_fit.py), or none.
    "headEphemeralStorageGib": (0, 100000),
    "workerEphemeralStorageGib": (0, 100000),
    "jobEnabled": ("maybe",),
    "jobRecipe": ("x",),
    # '<run name>/step_<N>' only (core.settings.job START_FROM_RE).
    "jobStartFrom": ("old-run", "old-run/40", "../old/step_1"),
    "jobConfigFiles": (
        '{"configs/mine.yaml": "mine.yaml"}',
        '{"examples/configs/mine.yaml": "no-such-file.yaml"}',
        # A file name that makes a ConfigMap key over 253 characters (core.catalog.K8S_CONFIGMAP_KEY_MAX).
        '{"examples/configs/' + "m" * 230 + '.yaml": "nemo-rl-reference/v0.5.0/examples/configs/grpo_math_1B.yaml"}',
    ),
    "jobOverrides": (
        "[]",
        '{"x": 1}',
        '{"num_nodes": 3}',
        '{"num_nodes": "x"}',
        '{"model_revision": "main"}',
        # Keys of the release's config (nemo-rl-reference/v0.5.0): absent, wrong type, '+' on a set key, rendered
        # by the program, shell-unsafe; a config the release does not ship, one its GRPO math entry cannot run.
        '{"policy.optimizer.kwargs.learning_rate": 1e-6}',
        '{"policy.optimizer.kwargs.lr": "fast"}',
        '{"+grpo.seed": 7}',
        '{"grpo.max_num_steps": 5}',
        '{"policy.generation.temperature": "1\'"}',
        '{"config_path": "examples/configs/grpo_math_9B.yaml"}',
        '{"config_path": "examples/configs/dpo.yaml"}',
        # A model outside the catalog: a revision that is not a commit, none at all, no parameter count.
        '{"model_name": "Qwen/Qwen3-8B", "model_params": 8200000000, "model_revision": "v1.0"}',
        '{"model_name": "Qwen/Qwen3-8B", "model_params": 8200000000}',
        '{"model_name": "Qwen/Qwen3-8B", "model_revision": "' + "b968826d9c46dd6066d109eabc6255188de91218" + '"}',
    ),
    "jobMode": ("x",),
    # Standing cluster: KubeRay refuses a TTL without shutdownAfterJobFinishes and (1.7.0) retries with a
    # clusterSelector (core/settings/job.py _mode_problems); int32 in the RayJob CRD.
    "jobBackoffLimit": (-1, INT32_ABOVE),  # any count >= 0 is valid in both job modes (standing: the entrypoint loop)
    "jobTtlSeconds": (-1, 5, INT32_ABOVE),
    "jobDeadlineSeconds": (-1, INT32_ABOVE),
    "runName": ("a b", "../x"),
    "dashboard": ("maybe",),
    "checkpointBudgetSeconds": (-1, 1),
    "readinessGate": ("x",),
    "gateMinAllReduceBusbw": (-1, 1e9),
    "gateMinAllGatherBusbw": (0, 1e9),
    "gateLustreFraction": (2, 0),
    "gateRerun": ("$x",),
    "authorizedNetworks": ('["x"]', "notjson", str([f"10.{i}.0.0/16" for i in range(101)]).replace("'", '"')),
    "privateEndpoint": ("maybe",),
    "dnsEndpoint": ("maybe",),
    # Empty is the default (the operator's own path); 'kuberay-operator' names pods only kubeRayOperator helm has.
    "rayDashboardPeers": ('["x"]', '["kuberay-operator"]'),
    "rayTokenAuth": ("x", "on"),
    "kubeRayOperator": ("x",),
    "egressFqdnPolicies": ("maybe",),
    "imagePath": ("x",),
    "imageRepository": ("us-central1-docker.pkg.dev/p/r",),
    # int64 carried as a double: exact up to 2**53 - 1 (core.catalog.PULUMI_EXACT_INT_MAX).
    "warmupHoldSeconds": (10, 2**53),
    "prefetchWeights": ("maybe",),
    "prefetchImage": ("x",),
    "exportCheckpoints": ("maybe",),
    "exportOptimizer": ("maybe",),
    "prices": ('{"gpuNode": 1}', '{"gpuNodeSpot": -1}', '{"cpuNode": Infinity}'),
    "stepSeconds": ("0", "fast", "inf"),
    # Pulumi: a stack name has at most 100 characters (core.catalog.PULUMI_STACK_NAME_MAX).
    "platformStack": ("nemo-rl-gke/codelab", "org/nemo-rl-gke/a b", "org/nemo-rl-gke/" + "s" * 101),
    "exportDestination": ("gs://other-bucket/x",),
    # Cloud Storage soft delete: 0 or 7..90 days.
    "exportSoftDeleteDays": (-1, 3, 91),
    # Only after a destroy with lustreOnDestroy retain (dev deletes).
    "lustreAdopt": ("maybe", True),
}

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
    "lustre": "Managed Lustre",
    "storage": "Bucket and Kubernetes names",
    "workload": "Ray cluster and image",
    "job": "Training job",
    "monitoring": "Dashboard and checkpoint budget",
    "gate": "Readiness gate",
    "security": "Access and hardening",
    "startup": "Time to first step and checkpoint export",
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


def _constraints(info: Any) -> list[str]:
    out = []
    for m in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(m, attr, None) is not None:
                out.append(f"{sign} {getattr(m, attr)}")
    return out


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
    fields = config_fields()
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    for k, (section, _f, _i) in fields.items():
        by_section[section].append(k)

    lines = [
        "# Settings reference",
        "",
        "<!-- Generated from core/settings/ by `make settings-doc` (python -m synth.settings_reference); edit the "
        "models, not this file. A test keeps the two in step. -->",
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
        decl = declared[k]
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
            _s, _f, info = fields[k]
            decl = declared[k]
            default = info.get_default(call_default_factory=True)
            facts = [
                f"- Type: {_type(info.annotation)}" + "".join(f", {c}" for c in _constraints(info)),
                "- Default: " + ("unset" if default is None else f"`{_yaml_value(default)}`"),
                f"- Pulumi.yaml: `{decl['type']}`" + (', default `""` (unset)' if default is None else ""),
                f"- Set: {_how_to_set(k, decl)}",
            ]
            if k in STANDARD_ONLY:
                facts.append("- Standard clusters only: on Autopilot a value other than the default is refused")
            shipped = _stack_values(k)
            if shipped:
                facts.append("- Shipped stacks: " + ", ".join(f"{s} `{_yaml_value(v)}`" for s, v in shipped.items()))
            lines += [f"### `{k}`", "", info.description, ""] + facts + ["", "Refused:", ""]
            lines += _refusals_block([(f"{k}={_label(v)}", refusal({k: v})) for v in BAD_VALUES.get(k, ())]) + [""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(ROOT)}")
