"""Resolving the job's recipe: the built-in recipe plus `jobOverrides`, and every rule it must meet.

Pure code. `resolve()` (called once by the settings) returns the recipe and every problem of the job settings by
themselves; `check_job()` adds what the recipe asks of the cluster; each problem is one line naming its config key.
The run name (`default_run_name()`) is stable across resubmissions and changes with what makes a checkpoint
incompatible, so resubmitting the same recipe resumes from the newest `step_N` on Lustre and a changed model or
layout starts fresh (NeMo-RL resumes from the highest `step_N` in `checkpointing.checkpoint_dir`: nemo_rl/utils/
checkpoint.py CheckpointManager.get_latest_checkpoint_path, tests/oracles/nemo_rl_checkpoint.py).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import posixpath
import re
from typing import Optional

from pydantic import ValidationError

import core.recipes.as_written as config_as_written
import core.recipes.config_tree as config_tree
import core.recipes.fit as config_fit
from core import catalog, data, prefetch, shell
from core.catalog import NEMO_RL_RELEASES, NemoRlRelease
from core.keys import key as _key
from core.recipes.model import (
    AS_WRITTEN,
    AS_WRITTEN_FIELDS,
    AS_WRITTEN_KEYS,
    DEFAULT_RECIPE,
    OVERRIDABLE,
    RECIPE_FIELD_KEYS,
    RECIPES,
    JobSpec,
    Recipe,
    as_written,
    rendered_key_owners,
    run_name_problem,
    user_config_key,
)
from core.recipes.overrides import hydra_overrides

# Releases whose GRPO configs keep the flat `data.dataset_name` / `data.train_data_path` layout the recipes
# render: the release records' `flat_data` (core/catalog/nemo_rl.py, NeMo-RL PR #1649).
FLAT_DATA_RELEASES = catalog.FLAT_DATA_RELEASES


class RecipeError(ValueError):
    """The job settings do not resolve to a runnable recipe; one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def recipe_name(job: JobSpec) -> str:
    return job.recipe or DEFAULT_RECIPE


def _origin(job: JobSpec, *fields: str) -> str:
    """The config key a problem about these recipe fields is reported against: the first one overridden."""
    for field in fields:
        if field in job.overrides:
            return _key(f"jobOverrides.{field}")
    return _key("jobRecipe")


def _suggest(word: str, known) -> str:
    m = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {m[0]!r}?" if m else ""


def _apply_overrides(job: JobSpec, release: Optional[NemoRlRelease] = None) -> tuple[Optional[Recipe], list[str]]:
    name = recipe_name(job)
    base = RECIPES.get(name)
    if base is None and name != AS_WRITTEN:
        known = [*sorted(RECIPES), AS_WRITTEN]
        return None, [
            f"{_key('jobRecipe')}: unknown recipe {name!r}; valid: {', '.join(known)} (a config as written)"
            f"{_suggest(name, known)}"
        ]
    problems = []
    values = base.model_dump() if base is not None else {}
    config_keys: dict = {}
    for field, value in sorted(job.overrides.items()):
        unsafe = _unsafe_problem(field, value)
        if is_config_key(field):
            if unsafe:
                problems.append(unsafe)
            else:
                config_keys[field] = value
        elif field == "name":
            problems.append(
                f"{_key('jobOverrides.name')}: the recipe is chosen with {_key('jobRecipe')}, not overridden"
            )
        elif field not in Recipe.model_fields:
            problems.append(
                f"{_key(f'jobOverrides.{field}')}: is not a recipe field{_suggest(field, OVERRIDABLE)}"
                f"; fields: {', '.join(OVERRIDABLE)}; a key of the NeMo-RL config is written dotted, e.g. "
                "policy.optimizer.kwargs.lr"
            )
        elif unsafe:
            problems.append(unsafe)
        elif base is None and field not in AS_WRITTEN_FIELDS:
            target = RECIPE_FIELD_KEYS[field]
            instead = (
                "the data comes from the config's data section (dotted data.* keys change it)"
                if target == "data"
                else f'set the config\'s own key instead: jobOverrides["{target}"]'
            )
            problems.append(
                f"{_key(f'jobOverrides.{field}')}: jobRecipe none runs the config as written, whose {target} is the "
                f"config's; {instead}"
            )
        else:
            values[field] = value
    values["config_overrides"] = config_keys
    spec, data_problems = data.parse(getattr(job, "data", None), None)
    problems.extend(data_problems)
    values["data"] = spec
    if spec is not None and "dataset" in job.overrides:
        problems.append(
            f"{_key('jobOverrides.dataset')}: {_key('jobData')} names the data the job trains on; remove one of them"
        )
    files, file_problems = read_config_files(job)
    values["config_files"] = files
    problems.extend(file_problems)
    if base is None:
        if problems:
            return None, problems
        return _as_written_recipe(job, release, values)
    if "model_name" in job.overrides and "model_revision" not in job.overrides:
        # The base recipe's pin belongs to its own model: another model takes the catalog's pin or none.
        values["model_revision"] = prefetch.default_revision(values["model_name"])
    if "model_name" in job.overrides and "model_params" not in job.overrides:
        values["model_params"] = None  # the base recipe's count belongs to its own model
    if "config_path" in job.overrides and "train_backend" not in job.overrides:
        # Another config: its own backend (policy.megatron_cfg.enabled), and the base recipe's Megatron converter
        # (NeMo-RL reads no converter_type at any release: `git grep converter_type <tag> -- nemo_rl` is empty at
        # v0.4.0, v0.5.0 and v0.7.0; NVIDIA-NeMo/RL PR #2640 removed it from v0.7.0's configs) is dropped.
        backend = _config_backend(values["config_path"], release, files)
        if backend is not None:
            values["train_backend"] = backend
            if "converter_type" not in job.overrides:
                values["converter_type"] = None
            if backend != "dtensor" and "dtensor_tensor_parallel_size" not in job.overrides:
                values["dtensor_tensor_parallel_size"] = None  # the base recipe's DTensor layout
        if "ignore_tp_accuracy_check" not in job.overrides:
            values["ignore_tp_accuracy_check"] = False  # the base recipe accepted the issue for its own config
    if problems:
        return None, problems
    try:
        return Recipe.model_validate(values), []
    except ValidationError as e:
        out = []
        for err in e.errors():
            field = str(err["loc"][0]) if err["loc"] else "name"
            out.append(f"{_origin(job, field)}: {field}: {err['msg']} (got {err.get('input')!r})")
        return None, out


def _as_written_recipe(
    job: JobSpec, release: Optional[NemoRlRelease], values: dict
) -> tuple[Optional[Recipe], list[str]]:
    """jobRecipe none: the Recipe read from the chosen config, resolved with the user's dotted keys
    (core.recipes.as_written), under the few fields the user may set (AS_WRITTEN_FIELDS)."""
    config_path = values.get("config_path")
    if not isinstance(config_path, str) or not config_path:
        return None, [
            f"{_key('jobRecipe')}: none runs a NeMo-RL config as written; name it with "
            f"{_key('jobOverrides.config_path')} (a config the release ships, e.g. examples/configs/grpo_math_8B.yaml, "
            f"or a file of yours from {_key('jobConfigFiles')})"
        ]
    if release is None:  # the settings always pass the stack's release; tools get the newest that has the config
        tags = [t for t in sorted(NEMO_RL_RELEASES, reverse=True) if config_tree.shipped(t, config_path)]
        release = NEMO_RL_RELEASES[tags[0] if tags else max(NEMO_RL_RELEASES)]
    files = values["config_files"]
    where = _key("jobOverrides.config_path")
    problem = _config_path_problem(config_path, files, release, where, AS_WRITTEN)
    if problem:
        return None, [problem]
    try:
        tree = config_tree.load(release.tag, config_path, files)
    except config_tree.ConfigFileError as e:
        return None, [f"{where}: {config_path} does not load on NeMo-RL {release.tag}: {e}"]
    kind = runnable_problem(tree)
    if kind:
        return None, [f"{where}: {config_path} (NeMo-RL {release.tag}) {kind}"]
    config = config_as_written.resolved_config(tree, values["config_overrides"])
    fields = {**config_as_written.recipe_values(config), **values}
    if "model_revision" not in job.overrides:
        fields["model_revision"] = prefetch.default_revision(fields["model_name"])
    return config_as_written.build(fields, config, config_path, release, where)


def _config_path_problem(
    config_path: str, files: dict, release: NemoRlRelease, where: str, recipe: str
) -> Optional[str]:
    """The config must be one the release ships or one of the user's files."""
    in_tree = config_path.startswith(config_tree.CONFIGS_DIR + "/")
    if config_path in files or (in_tree and config_tree.shipped(release.tag, config_path)):
        return None
    near = difflib.get_close_matches(config_path, config_tree.shipped_configs(release.tag), n=1)
    return (
        f"{where}: config {config_path!r} of recipe {recipe!r} is not shipped by NeMo-RL {release.tag} "
        f"({_key('nemoRlRelease')}); releases with it: {', '.join(_releases_with(config_path)) or 'none'}"
        + (f"; did you mean {near[0]!r}?" if near else "")
    )


def read_config_files(job: JobSpec) -> tuple[dict[str, str], list[str]]:
    """jobConfigFiles (install path -> project file) read from the project: install path -> text, and one line per
    problem naming `jobConfigFiles.<install path>`."""
    files: dict[str, str] = {}
    problems = []
    total = 0
    for install, source in sorted((getattr(job, "config_files", None) or {}).items()):
        k = _key(f"jobConfigFiles.{install}")
        norm = posixpath.normpath(install)
        if (
            norm != install
            or not install.startswith(config_tree.CONFIGS_DIR + "/")
            or not install.endswith(".yaml")
            or not re.fullmatch(r"[A-Za-z0-9_./-]+", install)
        ):
            problems.append(
                f"{k}: the install path must be a .yaml path under {config_tree.CONFIGS_DIR}/ (relative to "
                "/opt/nemo-rl; letters, digits, '_', '-', '.', '/'; no '..'), e.g. "
                "examples/configs/recipes/llm/mine.yaml"
            )
            continue
        if any(config_tree.shipped(t, install) for t in NEMO_RL_RELEASES):
            problems.append(f"{k}: a release ships a file at this path; choose another name")
            continue
        # The file ships as a ConfigMap key built from its name (core.recipes.model.user_config_key): the API
        # takes keys of at most 253 characters of [-._a-zA-Z0-9] (catalog.K8S_CONFIGMAP_KEY_MAX).
        cm_key = user_config_key(install, "")
        if len(cm_key) > catalog.K8S_CONFIGMAP_KEY_MAX or not re.fullmatch(catalog.K8S_CONFIGMAP_KEY_RE, cm_key):
            room = catalog.K8S_CONFIGMAP_KEY_MAX - (len(cm_key) - len(posixpath.basename(install)))
            problems.append(
                f"{k}: the file name {posixpath.basename(install)!r} makes a ConfigMap key of {len(cm_key)} "
                f"characters; Kubernetes takes at most {catalog.K8S_CONFIGMAP_KEY_MAX}: use a file name of at most "
                f"{room} characters"
            )
            continue
        path = (config_tree.PROJECT_ROOT / str(source)).resolve()
        if not isinstance(source, str) or posixpath.isabs(source) or config_tree.PROJECT_ROOT not in path.parents:
            problems.append(f"{k}: {source!r} must be a file of this Pulumi project, relative to its directory")
            continue
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{k}: cannot read {source!r} as UTF-8 text ({type(e).__name__})")
            continue
        total += len(data)
        if len(data) > config_tree.USER_FILE_MAX_BYTES:
            problems.append(f"{k}: {source!r} is {len(data)} bytes; at most {config_tree.USER_FILE_MAX_BYTES}")
            continue
        try:
            parsed = config_tree.parse_yaml(text, source)
        except config_tree.ConfigFileError as e:
            problems.append(f"{k}: {e}")
            continue
        defaults = parsed.get("defaults")
        entries = [defaults] if isinstance(defaults, str) else list(defaults or [])
        if any(str(d).startswith("/") for d in entries):
            problems.append(f"{k}: defaults: entries must be relative to the file's install path, not absolute")
            continue
        files[install] = text
    if total > config_tree.USER_FILES_MAX_BYTES:
        problems.append(
            f"{_key('jobConfigFiles')}: {total} bytes in all; at most {config_tree.USER_FILES_MAX_BYTES} (they ship "
            "in the job-scripts ConfigMap, 1 MiB at most)"
        )
    return files, problems


def recipe_tree(r: Recipe, release: NemoRlRelease) -> config_tree.ConfigTree:
    """The recipe's config as the release loads it, the user's files included (ConfigFileError: a bad file)."""
    return config_tree.load(release.tag, r.config_path, r.config_files)


def is_config_key(field: str) -> bool:
    """A jobOverrides entry naming a key of the NeMo-RL config (dotted, or '+' for an addition), not a recipe
    field."""
    return "." in field or field.startswith(("+", "~"))


def _unsafe_problem(field: str, value: object) -> Optional[str]:
    # The value reaches NeMo-RL through KubeRay's bash, the image's Ray CLI (list2cmdline) and /bin/sh
    # (core/shell.py); tests/test_entrypoint_shells.py runs that chain.
    words = value if isinstance(value, list) else [value]
    chars = sorted({c for w in words if isinstance(w, str) for c in shell.unsafe_characters(w)})
    if not chars and not (is_config_key(field) and any(isinstance(w, str) and "${" in w for w in words)):
        return None
    return (
        f"{_key(f'jobOverrides.{field}')}: {value!r} contains {' '.join(chars) or '${'}, which the job's shells "
        "(KubeRay's bash, the image's ray job submit, /bin/sh) would change or run; "
        "remove $ ` \\ \" and ' from the value"
    )


def _config_backend(config_path: str, release: Optional[NemoRlRelease], files: Optional[dict] = None) -> Optional[str]:
    """The backend a shipped config enables (policy.megatron_cfg.enabled): in `release`, else in the newest release
    that ships it."""
    tags = [release.tag] if release is not None else sorted(NEMO_RL_RELEASES, reverse=True)
    for tag in tags:
        if config_tree.shipped(tag, config_path) or config_path in (files or {}):
            try:
                tree = config_tree.load(tag, config_path, files)
            except config_tree.ConfigFileError:
                return None
            return "megatron" if tree.lookup("policy.megatron_cfg.enabled", resolved=True)[1] is True else "dtensor"
    return None


def _consistency(r: Recipe) -> list[tuple[tuple[str, ...], str]]:
    """Contradictions inside one recipe, as (fields involved, message)."""
    p: list[tuple[tuple[str, ...], str]] = []
    if r.converter_type is not None and r.train_backend != "megatron":
        p.append(
            (
                ("converter_type", "train_backend"),
                f"converter_type applies to the Megatron backend, not {r.train_backend}",
            )
        )
    if r.dtensor_tensor_parallel_size is not None and r.train_backend != "dtensor":
        p.append(
            (
                ("dtensor_tensor_parallel_size", "train_backend"),
                f"dtensor_tensor_parallel_size applies to the DTensor backend, not {r.train_backend}",
            )
        )
    # The layout's own rules (training and vLLM parallel sizes against their world sizes, the batch shape) read the
    # resolved config, whatever set each key (core.recipes.fit, from _release_problems). Here: the recipe fields the
    # program renders into the cluster split; a config run as written keeps its own split, which fit.layout checks.
    if not as_written(r) and r.colocated_generation:
        for f in ("generation_nodes", "generation_gpus_per_node"):
            if getattr(r, f) is not None:
                p.append(
                    (
                        (f, "colocated_generation"),
                        f"{f} only applies to non-colocated generation (colocated_generation is true)",
                    )
                )
    elif not as_written(r):
        if r.generation_nodes is None:
            p.append(
                (
                    ("generation_nodes", "colocated_generation"),
                    "non-colocated generation needs generation_nodes (nodes dedicated to vLLM)",
                )
            )
        elif r.generation_nodes >= r.num_nodes:
            p.append(
                (
                    ("generation_nodes", "num_nodes", "colocated_generation"),
                    f"non-colocated generation on {r.generation_nodes} of num_nodes={r.num_nodes} node(s) leaves "
                    "no node for training; lower generation_nodes or raise num_nodes",
                )
            )
        if r.generation_gpus_per_node is not None and r.generation_gpus_per_node != r.gpus_per_node:
            p.append(
                (
                    ("generation_gpus_per_node", "gpus_per_node"),
                    f"generation_gpus_per_node={r.generation_gpus_per_node} differs from gpus_per_node="
                    f"{r.gpus_per_node}; dedicated generation nodes use all their GPUs",
                )
            )
    if not r.save_optimizer and not as_written(r):  # as written: refused naming the key that sets it
        p.append(
            (
                ("save_optimizer",),
                "the rendered run always checkpoints the optimizer state "
                "(policy/optimizer/), which resuming after a preemption needs",
            )
        )
    p.extend(_metric_problems(r))
    if r.wandb_project is not None and _wandb_project_problem(r.wandb_project):
        p.append((("wandb_project",), f"wandb_project {_wandb_project_problem(r.wandb_project)}"))
    if r.model_revision is not None and prefetch.revision_problem(r.model_revision):
        p.append((("model_revision",), f"model_revision {prefetch.revision_problem(r.model_revision)}"))
    if r.model_revision is None and r.model_name not in catalog.MODELS:
        p.append(
            (
                ("jobOverrides.model_revision",),
                f"model {r.model_name!r} is not in the catalog, so it has no pinned revision; set model_revision to "
                "the 40-hex commit of the revision to train (the model, its tokenizer and the reference model load "
                "from that snapshot)",
            )
        )
    known = catalog.MODEL_PARAMS.get(r.model_name)
    if known is not None and r.model_params is not None and r.model_params != known:
        p.append(
            (
                ("model_params", "model_name"),
                f"model_params {r.model_params} contradicts the catalog's {known} for {r.model_name!r}; remove "
                "model_params (catalog models keep their facts)",
            )
        )
    return p


# wandb refuses a project name over 128 characters or holding any of / \ # ? % : (wandb/sdk/wandb_settings.py
# Settings.validate_project, wandb 0.21.1 as v0.4.0/v0.5.0 lock it; tests/test_wandb_runs.py asks it).
WANDB_PROJECT_MAX = 128
WANDB_PROJECT_FORBIDDEN = "/\\#?%:"


def _wandb_project_problem(project: str) -> Optional[str]:
    bad = sorted({c for c in project if c in WANDB_PROJECT_FORBIDDEN})
    if len(project) > WANDB_PROJECT_MAX:
        return f"is {len(project)} characters; W&B takes at most {WANDB_PROJECT_MAX}"
    if bad:
        return f"{project!r} contains {' '.join(bad)}, which W&B refuses in a project name (/ \\ # ? % :)"
    return None


def _metric_problems(r: Recipe) -> list[tuple[tuple[str, ...], str]]:
    """metric_name in NeMo-RL's form and a ranking direction that matches it (catalog METRIC_HIGHER_IS_BETTER)."""
    if r.metric_name is None:
        if r.higher_is_better is not None:
            return [
                (
                    ("higher_is_better", "metric_name"),
                    "higher_is_better only applies when metric_name ranks the checkpoints (metric_name is null)",
                )
            ]
        return []
    if not r.metric_name.startswith(catalog.METRIC_PREFIXES) or r.metric_name.endswith(":"):
        return [
            (
                ("metric_name",),
                f"metric_name {r.metric_name!r} must be 'val:<key>' or 'train:<key>' (NeMo-RL "
                "asserts it at the first checkpoint save), e.g. 'val:accuracy'",
            )
        ]
    known = catalog.METRIC_HIGHER_IS_BETTER.get(r.metric_name)
    if r.higher_is_better is None and known is None:
        return [
            (
                ("higher_is_better", "metric_name"),
                f"metric_name {r.metric_name!r} has no known direction; set higher_is_better (true when a higher "
                "value is better), or NeMo-RL's keep_top_k and the exported best checkpoint may keep the worst",
            )
        ]
    if r.higher_is_better is not None and known is not None and r.higher_is_better != known:
        return [
            (
                ("higher_is_better", "metric_name"),
                f"higher_is_better {str(r.higher_is_better).lower()} contradicts {r.metric_name!r}, for which "
                f"{'higher' if known else 'lower'} is better; remove higher_is_better or set it to "
                f"{str(known).lower()}",
            )
        ]
    return []


def _consistency_problems(r: Recipe, job: JobSpec) -> list[str]:
    # A problem whose fix is a setting not yet given names that setting ("jobOverrides.<field>") itself.
    return [
        f"{_key(fields[0]) if fields[0].startswith('jobOverrides.') else _origin(job, *fields)}: {msg}"
        for fields, msg in _consistency(r)
    ]


def _release_problems(r: Recipe, job: JobSpec, release: NemoRlRelease) -> list[str]:
    """The recipe against the release's own config tree (nemo-rl-reference/<tag>): the config exists and is a GRPO
    math config the entry script runs, its backend is the recipe's, and every dotted override fits it."""
    p = []
    problem = _config_path_problem(r.config_path, r.config_files, release, _origin(job, "config_path"), r.name)
    if problem:
        return [problem]
    try:
        tree = recipe_tree(r, release)
    except config_tree.ConfigFileError as e:
        return [f"{_origin(job, 'config_path')}: {r.config_path} does not load on NeMo-RL {release.tag}: {e}"]
    kind = runnable_problem(tree)
    if kind:
        return [f"{_origin(job, 'config_path')}: {r.config_path} (NeMo-RL {release.tag}) {kind}"]
    backend = "megatron" if tree.lookup("policy.megatron_cfg.enabled", resolved=True)[1] is True else "dtensor"
    if backend != r.train_backend:
        p.append(
            f"{_origin(job, 'train_backend', 'config_path')}: {r.config_path} (NeMo-RL {release.tag}) trains with "
            f"{backend} (policy.megatron_cfg.enabled), not {r.train_backend}; set "
            f"{_key('jobOverrides.train_backend')} to {backend}"
        )
    p.extend(_rendered_key_problems(r, job, release, tree))
    p.extend(_unpinned_artefact_problems(r, job, release, tree))
    p.extend(_dataset_problems(r, job, release, tree))
    p.extend(_tp_accuracy_problems(r, job, release, tree))
    config = checked_config(r, release, tree)
    if config is not None:
        where = config_fit.Provenance(job, r, release)
        if as_written(r):
            users = config_as_written.resolved_config(tree, r.config_overrides)
            p.extend(config_as_written.problems(r, users, release, where))
        p.extend(config_fit.config_problems(config, release, where))
    owners = rendered_key_owners(r)
    for key, value in sorted(r.config_overrides.items()):
        owner = owners.get(key.lstrip("+~"))
        if owner and owner.startswith("the program"):
            p.append(f"{_key(f'jobOverrides.{key}')}: is set by {owner}; remove it")
            continue
        if owner:
            p.append(f"{_key(f'jobOverrides.{key}')}: is rendered by the program from {owner}; set that instead")
            continue
        if key.startswith("~"):
            p.append(f"{_key(f'jobOverrides.{key}')}: deleting a key ('~') is not supported; set it to null instead")
            continue
        problem = _inactive_backend_problem(key.lstrip("+"), backend) or config_tree.override_problem(tree, key, value)
        if problem:
            p.append(f"{_key(f'jobOverrides.{key}')}: {problem}")
    return p


def _rendered_key_problems(r: Recipe, job: JobSpec, release: NemoRlRelease, tree: config_tree.ConfigTree) -> list[str]:
    """The program's own keys must apply to the chosen config as Hydra would apply them (a config whose data.train
    is a list of datasets, say, cannot take data.train.dataset_name): one line naming config_path."""
    bad = []
    for k in hydra_overrides(r, mount_path=_MOUNT, run_name=_RUN, release=release, tree=tree):
        if k == "policy.megatron_cfg.converter_type" and not tree.lookup(k)[0]:
            continue  # not rendered where the config lacks it
        # The key's existence and shape only: the program's values are its own (types checked by its tests).
        problem = config_tree.override_problem(tree, k if tree.lookup(k)[0] else "+" + k, None)
        if problem:
            bad.append((k, problem))
    if not bad:
        return []
    (k, problem), more = bad[0], len(bad) - 1
    return [
        f"{_origin(job, 'config_path')}: {r.config_path} (NeMo-RL {release.tag}) cannot take {k}, which "
        f"{rendered_key_owners(r).get(k, 'the recipe')} renders ({problem})"
        + (f", nor {more} more such key(s)" if more else "")
    ]


# Features whose config names another Hub artefact than the policy's model: NeMo-RL would load it by name, at the
# Hub's current revision, while everything the job loads must be the pinned snapshot (the prefetch pins only the
# policy's model and the recipe's datasets). Until the prefetch pins them, a run with one on is refused.
# policy.draft: the speculative-decoding draft model (v0.7.0 recipes/llm/*-eagle3.yaml, policy.draft.model_name);
# on_policy_distillation: teacher models by name (v0.7.0 teacher_model_by_agent_name).
UNPINNED_FEATURES = {
    "policy.draft.enabled": "policy.draft.model_name",
    "on_policy_distillation.enabled": "on_policy_distillation.teacher_model_by_agent_name",
}
# vLLM's speculative decoding with a drafter model: NeMo-RL passes policy.generation.vllm_kwargs whole to vLLM's engine
# (nemo_rl/models/generation/vllm/vllm_worker.py at v0.7.0 L271 and L456 `**vllm_kwargs`) and, for a non-MTP method,
# loads the drafter's weights from its name (nemo_rl/models/generation/__init__.py L49-61: load_format 'auto'),
# whether or not policy.draft is on: the eagle3 recipes set `model: ${policy.draft.model_name}`.
SPECULATIVE_CONFIG = "policy.generation.vllm_kwargs.speculative_config"


def checked_config(r: Recipe, release: NemoRlRelease, tree: config_tree.ConfigTree) -> Optional[dict]:
    """The resolved config NeMo-RL runs with: the config, the program's keys and the user's keys Hydra would take
    (None when the program's keys do not fit the config, which _rendered_key_problems reports)."""
    rendered = hydra_overrides(r, mount_path=_MOUNT, run_name=_RUN, release=release, tree=tree)
    if not tree.lookup("policy.megatron_cfg.converter_type")[0]:
        rendered.pop("policy.megatron_cfg.converter_type", None)
    for k, v in r.config_overrides.items():
        if not k.startswith("~") and config_tree.override_problem(tree, k, v) is None:
            rendered[k.lstrip("+")] = config_tree.render_value(tree, k, v)
    try:
        return config_tree.with_overrides(tree, rendered)
    except (ValueError, TypeError, IndexError, KeyError, AttributeError):
        return None


def _unpinned_artefact_problems(
    r: Recipe, job: JobSpec, release: NemoRlRelease, tree: config_tree.ConfigTree
) -> list[str]:
    config = checked_config(r, release, tree)
    if config is None:
        return []
    spec_present, spec = config_tree.lookup(config, SPECULATIVE_CONFIG)
    drafter = spec.get("model") if spec_present and isinstance(spec, dict) else None
    spec_fix = f" and {SPECULATIVE_CONFIG} to null" if drafter is not None else ""
    p = []
    for switch, artefact in UNPINNED_FEATURES.items():
        present, on = config_tree.lookup(config, switch)
        if present and on is True:
            where = _key(f"jobOverrides.{switch}") if switch in r.config_overrides else _origin(job, "config_path")
            p.append(
                f"{where}: {r.config_path} (NeMo-RL {release.tag}) turns on {switch}, which loads {artefact} "
                f"({config_tree.lookup(config, artefact)[1]!r}) from the Hub unpinned; the weights prefetch pins only "
                f"the policy's model, so set {switch} to false" + (spec_fix if switch == "policy.draft.enabled" else "")
            )
    draft_on = config_tree.lookup(config, "policy.draft.enabled")[1] is True
    if drafter is not None and not draft_on:
        mine = [k for k in r.config_overrides if k.lstrip("+").startswith(SPECULATIVE_CONFIG)]
        where = _key(f"jobOverrides.{mine[0]}") if mine else _origin(job, "config_path")
        p.append(
            f"{where}: {r.config_path} (NeMo-RL {release.tag}) starts vLLM speculative decoding ({SPECULATIVE_CONFIG}, "
            f"method {spec.get('method')!r}) with the drafter {drafter!r} loaded from the Hub unpinned; the weights "
            f"prefetch pins only the policy's model, so set {SPECULATIVE_CONFIG} to null"
        )
    return p


def tp_accuracy_check_hit(config: dict, release: NemoRlRelease) -> Optional[tuple[int, object, object]]:
    """(tensor parallel size, train_micro_batch_size, logprob_batch_size) when the release's Policy would assert on
    this config (NemoRlRelease.tp_accuracy_check: nemo_rl/models/policy/lm_policy.py at v0.7.0 L178-195, the tp of the
    active backend, L115 / L162), else None. loss_fn.force_on_policy_ratio sets NRL_IGNORE_TP_ACCURACY_CHECK itself
    (nemo_rl/algorithms/grpo.py at v0.7.0 L429-437)."""
    if not release.tp_accuracy_check:
        return None
    policy = config.get("policy") or {}
    if "logprob_batch_size" not in policy or (config.get("loss_fn") or {}).get("force_on_policy_ratio") is True:
        return None
    megatron = policy.get("megatron_cfg") or {}
    layout = megatron if megatron.get("enabled") else policy.get("dtensor_cfg") or {}
    tp = layout.get("tensor_model_parallel_size" if megatron.get("enabled") else "tensor_parallel_size")
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 4:
        return None
    micro, logprob = policy.get("train_micro_batch_size"), policy.get("logprob_batch_size")
    return None if micro == logprob else (tp, micro, logprob)


def megatron_hf_overrides_hash(r: Recipe, release: NemoRlRelease) -> Optional[str]:
    """v0.7.0's suffix of the conversion directory for policy.hf_config_overrides (NemoRlRelease.
    megatron_hf_overrides_suffix): sha256 of json.dumps(overrides, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True), 12 hex digits (nemo_rl/models/megatron/setup.py _canonicalize_hf_config_overrides and
    _get_hf_config_overrides_hash, L312-322 at v0.7.0), of the resolved value NeMo-RL reads; None without overrides."""
    if r.train_backend != "megatron" or not release.megatron_hf_overrides_suffix:
        return None
    try:
        config = checked_config(r, release, recipe_tree(r, release))
    except config_tree.ConfigFileError:
        return None
    overrides = config_tree.lookup(config, "policy.hf_config_overrides")[1] if config else None
    if not overrides:
        return None
    canonical = json.dumps(overrides, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


TP_ACCURACY_ENV = "NRL_IGNORE_TP_ACCURACY_CHECK"


def tp_accuracy_env(r: Recipe, release: NemoRlRelease) -> dict[str, str]:
    """The job's environment for a recipe that accepts the accuracy issue where the release checks it."""
    if not r.ignore_tp_accuracy_check or not release.tp_accuracy_check:
        return {}
    try:
        config = checked_config(r, release, recipe_tree(r, release))
    except config_tree.ConfigFileError:
        return {}
    return {TP_ACCURACY_ENV: "1"} if config is not None and tp_accuracy_check_hit(config, release) else {}


def _tp_accuracy_problems(r: Recipe, job: JobSpec, release: NemoRlRelease, tree: config_tree.ConfigTree) -> list[str]:
    if r.ignore_tp_accuracy_check:
        return []
    config = checked_config(r, release, tree)
    hit = tp_accuracy_check_hit(config, release) if config is not None else None
    if hit is None:
        return []
    tp, micro, logprob = hit
    where = _origin(
        job,
        "ignore_tp_accuracy_check",
        "policy.logprob_batch_size",
        "policy.train_micro_batch_size",
        "dtensor_tensor_parallel_size",
        "policy.dtensor_cfg.tensor_parallel_size",
        "policy.megatron_cfg.tensor_model_parallel_size",
        "config_path",
    )
    return [
        f"{where}: NeMo-RL {release.tag} stops at Policy init on tensor parallelism {tp} with "
        f"policy.train_micro_batch_size {micro} != policy.logprob_batch_size {logprob} (a known batch-variant accuracy "
        "issue, nemo_rl/models/policy/lm_policy.py); set policy.logprob_batch_size to the micro batch size, tensor "
        "parallelism to 1 or 2, loss_fn.force_on_policy_ratio to true, or jobOverrides.ignore_tp_accuracy_check to "
        "true to accept the issue"
    ]


def _inactive_backend_problem(key: str, backend: str) -> Optional[str]:
    """A key only the other backend reads: Hydra takes it (`+policy.optimizer.kwargs.lr` under Megatron's null
    policy.optimizer is accepted) and the run ignores it. The Megatron policy builds its model, optimizer and scheduler
    from policy.megatron_cfg, the DTensor policy from policy.dtensor_cfg, policy.optimizer and policy.scheduler
    (nemo_rl/models/policy/workers/dtensor_policy_worker.py `self.cfg["optimizer"]` and megatron_policy_worker.py
    `self.cfg["megatron_cfg"]["optimizer"]` at v0.5.0; lm_policy.py picks the worker by megatron_cfg.enabled /
    dtensor_cfg.enabled, and the GRPO loop reads the other backend's section no further than its `enabled`:
    nemo_rl/algorithms/grpo.py at v0.4.0-v0.7.0). Each section's `enabled` chooses the backend and stays open."""
    dtensor_only = ("policy.optimizer", "policy.scheduler", "policy.dtensor_cfg")
    megatron_only = ("policy.megatron_cfg",)
    unread = dtensor_only if backend == "megatron" else megatron_only
    if key in ("policy.dtensor_cfg.enabled", "policy.megatron_cfg.enabled"):
        return None
    if not any(key == k or key.startswith(k + ".") for k in unread):
        return None
    if backend == "megatron":
        instead: tuple[str, ...] = (
            ("policy.megatron_cfg.optimizer", "policy.megatron_cfg.scheduler")
            if key.startswith(("policy.optimizer", "policy.scheduler"))
            else ("policy.megatron_cfg",)
        )
    elif key.startswith(("policy.megatron_cfg.optimizer", "policy.megatron_cfg.scheduler")):
        instead = ("policy.optimizer", "policy.scheduler")
    else:
        instead = ("policy.dtensor_cfg",)
    return (
        f"the config trains with {backend} (policy.megatron_cfg.enabled), which does not read {key}; set "
        f"{' / '.join(k + '.*' for k in instead)} instead"
    )


# The eight sections NeMo-RL's GRPO MasterConfig holds (nemo_rl/algorithms/grpo.py at v0.4.0, v0.5.0 and v0.7.0).
GRPO_SECTIONS = ("policy", "loss_fn", "env", "data", "grpo", "logger", "cluster", "checkpointing")


def runnable_problem(tree: config_tree.ConfigTree) -> Optional[str]:
    """Why the release's GRPO math entry script cannot run this config (None: it can). v0.4.0/v0.5.0
    examples/run_grpo_math.py always builds `MathEnvironment(env_configs["math"])`; v0.7.0 examples/run_grpo.py
    builds the environments the data names, and the recipes' datasets name `math`. NeMo-Gym configs
    (`env.should_use_nemo_gym`) run examples/nemo_gym/run_grpo_nemo_gym.py, VLM ones run_vlm_grpo.py."""
    missing = [s for s in GRPO_SECTIONS if not tree.has_sections(s)]
    if missing:
        return f"is not a GRPO config (it lacks {', '.join(missing)}: an SFT, DPO, distillation or eval config?)"
    env = tree.raw["env"]
    if env.get("should_use_nemo_gym"):
        return "is a NeMo-Gym config (env.should_use_nemo_gym), run by another entry script than GRPO math's"
    name = tree.config_path.lower()
    if "vlm" in name or "audio" in name or "vlm" in env:
        return "is a vision-language / audio GRPO config, run by examples/run_vlm_grpo.py, not GRPO math's entry"
    for other, script in (("reward_model", "run_grpo_rm.py"), ("sliding_puzzle_game", "run_grpo_sliding_puzzle.py")):
        if isinstance(env.get(other), dict):
            return f"uses env.{other}, run by examples/{script}, not the GRPO math entry script"
    if not isinstance(env.get("math"), dict):
        return "has no env.math, the math environment the GRPO math entry script and the recipes' datasets use"
    return None


def _releases_with(config_path: str) -> list[str]:
    return sorted(t for t in NEMO_RL_RELEASES if config_tree.shipped(t, config_path))


# Which changes resume the run and which start a new one (docs/operations.md "Which changes start a new run").
# NeMo-RL resumes from the newest `step_N` of checkpointing.checkpoint_dir and restores the weights, the optimizer and
# its scheduler state, the dataloader position and the step counters (GRPOSaveState); every other value comes from
# the new config, unchecked (nemo_rl/algorithms/grpo.py `setup`, nemo_rl/utils/checkpoint.py CheckpointManager, at
# v0.4.0-v0.7.0). So a changed learning rate on resume is silently the checkpoint's (the restored scheduler keeps its
# base_lrs), a changed seed or dataset continues another data order, and a changed loss, batch shape, precision or
# parallel layout mixes two experiments into one curve or does not load at all. The run's identity is therefore the
# whole config NeMo-RL runs with, resolved, minus the keys below, which only extend or observe a run, or tune memory
# and speed without changing what is trained (a user lowers them after an out-of-memory and expects to resume).
# Anything not listed starts a new run: the safe direction (data stays on Lustre; two experiments never mix).
RESUME_SAFE_KEYS = (
    # extend the run: the loop runs while current_epoch < max_num_epochs and total_steps < max_num_steps (not on
    # Megatron, where they size the scheduler a resume checks: _STEPS_SIZE_THE_SCHEDULER)
    "grpo.max_num_steps",
    "grpo.max_num_epochs",
    # validation only: no gradient depends on it
    "grpo.val_period",
    "grpo.val_batch_size",
    "grpo.max_val_samples",
    "grpo.val_at_start",
    "grpo.val_at_end",
    "grpo.num_val_generations_per_prompt",
    # when and which checkpoints are kept (the directory is the run's own; enabled is always true)
    "checkpointing.enabled",
    "checkpointing.checkpoint_dir",
    "checkpointing.save_period",
    "checkpointing.keep_top_k",
    "checkpointing.metric_name",
    "checkpointing.higher_is_better",
    "checkpointing.checkpoint_must_save_by",
    "checkpointing.save_consolidated",
    # observation: W&B, TensorBoard, MLflow, GPU monitoring, the log directory
    "logger",
    # ports, placement alignment
    "cluster.master_port_range_low",
    "cluster.master_port_range_high",
    "cluster.segment_size",
    # memory and speed: generation weights are refit from the policy at every step, so vLLM's layout and memory
    # share change no checkpoint; activation checkpointing and offloading change no value
    "policy.generation.vllm_cfg.gpu_memory_utilization",
    "policy.generation.vllm_cfg.enforce_eager",
    "policy.generation.vllm_cfg.tensor_parallel_size",
    "policy.generation.vllm_cfg.pipeline_parallel_size",
    "policy.logprob_batch_size",
    "policy.generation_batch_size",
    "policy.dtensor_cfg.activation_checkpointing",
    "policy.dtensor_cfg.cpu_offload",
    "policy.megatron_cfg.activation_checkpointing",
    "policy.megatron_cfg.empty_unused_memory_level",
    "policy.offload_optimizer_for_logprob",
    "policy.refit_buffer_size_gb",
)
_RESUME_SAFE_RE = re.compile(r"env\.[^.]+\.num_workers")  # the reward environment's worker count (Ray actors)
# Keys a resume cannot take a new value of, which earlier versions of the program listed resume-safe. They are part of
# the identity only where they differ from the run's default (the base recipe's value, else the config's own), so the
# run name of a run that never changed them stays what it was, and a change of them starts a new run:
# - data.num_workers: the worker count of NeMo-RL's torchdata StatefulDataLoader (nemo_rl/algorithms/grpo.py
#   `setup`: num_workers=data_config["num_workers"], then dataloader.load_state_dict of the checkpoint's
#   train_dataloader.pt; v0.4.0 L252-264, v0.5.0 L258-270); torchdata 0.11.0 (every release's uv.lock) refuses a state
#   saved with another count (stateful_dataloader.py: "State doesn't contain key '_num_yielded' expected for single
#   process dataloader", and the '_snapshot' / worker-count assertions; tests/test_resume_identity.py runs it);
# - grpo.max_num_steps and grpo.max_num_epochs on Megatron: _STEPS_SIZE_THE_SCHEDULER.
_DEFAULT_RELATIVE_KEYS = ("data.num_workers",)
_STEPS_KEYS = ("grpo.max_num_steps", "grpo.max_num_epochs")
# Placeholders for the per-stack, per-run values the program renders into the config (the mount path, the run name):
# the identity is the same on every stack and for every name.
_MOUNT, _RUN = "/mount", "run"


def _listed_resume_safe(key: str) -> bool:
    return bool(_RESUME_SAFE_RE.fullmatch(key)) or any(key == k or key.startswith(k + ".") for k in RESUME_SAFE_KEYS)


def _steps_size_the_scheduler(config: dict) -> bool:
    """A Megatron run whose scheduler state a resume checks against one sized by the steps.

    NeMo-RL sets policy.megatron_cfg.train_iters = min(max_num_steps, max_num_epochs x batches) (nemo_rl/algorithms/
    grpo.py `setup`, v0.4.0 L478-484, v0.7.0 L815-823) and builds Megatron-Bridge's SchedulerConfig from
    policy.megatron_cfg.scheduler. Megatron-Bridge sets wd_incr_steps = train_iters x global_batch_size, and
    lr_decay_steps = (lr_decay_iters or train_iters) x global_batch_size (training/config.py, the submodule commits
    62f4704b of v0.4.0 L776-780 and 1e9a459b of v0.5.0 L1463-1468). On resume it loads the checkpoint's scheduler
    state (training/checkpointing.py: 62f4704b L1231-1235, 1e9a459b L1579-1583) into Megatron-Core's
    OptimizerParamScheduler, whose load_state_dict asserts each of them equal to the new value ("class input value
    ... and checkpoint value ... for total number of weight decay iterations do not match") unless
    override_opt_param_scheduler or use_checkpoint_opt_param_scheduler is set (megatron/core/
    optimizer_param_scheduler.py `_check_and_set`, NVIDIA/Megatron-LM; tests/test_resume_identity.py).
    So on Megatron more steps (or epochs, where they bind) do not resume, unless the scheduler is pinned:
    use_checkpoint_opt_param_scheduler (the checkpoint's schedule goes on), or override_opt_param_scheduler where no
    scheduler value depends on train_iters (lr_decay_iters set or a constant lr, no warmup fraction of the decay,
    constant weight decay). `lr_decay_iters` alone does not pin it: the weight-decay steps still follow the steps."""
    meg = (config.get("policy") or {}).get("megatron_cfg") or {}
    if not meg.get("enabled"):
        return False
    sched = meg.get("scheduler") or {}
    if sched.get("use_checkpoint_opt_param_scheduler") is True:
        return False
    if sched.get("override_opt_param_scheduler") is True:
        horizon_fixed = sched.get("lr_decay_iters") is not None or sched.get("lr_decay_style") == "constant"
        warmup_fixed = sched.get("lr_warmup_fraction") is None or sched.get("lr_decay_iters") is not None
        return not (horizon_fixed and warmup_fixed and sched.get("weight_decay_incr_style", "constant") == "constant")
    return True


def _steps_set_the_lr_horizon(config: dict) -> bool:
    """Megatron with no lr_decay_iters and a decaying lr: the decay horizon is train_iters, which NeMo-RL sets from
    grpo.max_num_steps (nemo_rl/algorithms/grpo.py at v0.7.0, "equal to the total number of scheduler steps"; Megatron-
    Bridge sets lr_decay_iters = train_iters when it is None), so more steps change the learning-rate curve."""
    meg = (config.get("policy") or {}).get("megatron_cfg") or {}
    sched = meg.get("scheduler") or {}
    return (
        bool(meg.get("enabled")) and sched.get("lr_decay_iters") is None and sched.get("lr_decay_style") != "constant"
    )


def _dataset_entries(config: dict, release: NemoRlRelease) -> list[tuple[str, dict]]:
    """(config key, entry) of every dataset the config's data section names: the flat `data` itself (v0.4.0/v0.5.0),
    else each of data.train / data.validation (a dict, or a list of them), with data.default's keys under its own
    (nemo_rl/data/utils.py setup_response_data at v0.7.0 L143-178: update_single_dataset_config fills missing keys)."""
    d = config.get("data") or {}
    if not isinstance(d, dict):
        return []
    if release.flat_data:
        return [("data", d)]
    default: dict = d["default"] if isinstance(d.get("default"), dict) else {}
    out = []
    for part in ("train", "validation"):
        node = d.get(part)
        nodes = node if isinstance(node, list) else [node] if isinstance(node, dict) else []
        for i, e in enumerate(nodes):
            if isinstance(e, dict):
                where = f"data.{part}" + (f"[{i}]" if isinstance(node, list) else "")
                out.append((where, {**default, **e}))
    return out


def builtin_dataset_names(config: dict, release: NemoRlRelease) -> list[str]:
    """NeMo-RL built-in dataset names the config's data section loads (ResponseDataset excluded)."""
    names = [str(e.get("dataset_name")) for _, e in _dataset_entries(config, release) if e.get("dataset_name")]
    return sorted({n for n in names if n != "ResponseDataset"})


def recipe_dataset_loads(recipe: Recipe, release: NemoRlRelease) -> list[tuple[str, Optional[str]]]:
    """The (Hub id, config) of every built-in loader the recipe's run calls: what the data staging Job caches at the
    pinned commits (empty when the config does not load, which the recipe rules report)."""
    try:
        tree = recipe_tree(recipe, release)
    except config_tree.ConfigFileError:
        return []
    config = checked_config(recipe, release, tree)
    if config is None:
        return []
    return data.builtin_loads(builtin_dataset_names(config, release), release.tag)


def _dataset_problems(r: Recipe, job: JobSpec, release: NemoRlRelease, tree: config_tree.ConfigTree) -> list[str]:
    """Every dataset the run loads is pinned: a built-in loader the catalog knows (its Hub datasets staged at their
    commits), or ResponseDataset on a path on Lustre (the staged files); a run with jobData and no validation data
    has validation from elsewhere or none."""
    config = checked_config(r, release, tree)
    if config is None:
        return []
    where = _key("jobData") if r.data is not None else _origin(job, "config_path", "dataset")
    known = catalog.BUILTIN_DATASET_LOADS.get(release.tag, {})
    p = []
    for k, e in _dataset_entries(config, release):
        name = e.get("dataset_name")
        if name == "ResponseDataset":
            path_keys = ("train_data_path", "val_data_path") if release.flat_data else ("data_path",)
            for pk in path_keys:
                v = e.get(pk)
                if v is not None and not str(v).startswith("/"):
                    p.append(
                        f"{where}: {r.config_path} (NeMo-RL {release.tag}) reads {k}.{pk} {v!r} from the Hub "
                        f"without a revision; name it in {_key('jobData')} (with its commit) instead"
                    )
        elif name is not None and name not in known:
            p.append(
                f"{where}: {r.config_path} (NeMo-RL {release.tag}) loads the built-in dataset {name!r} ({k}), which "
                f"the program cannot pin (pinned: {', '.join(sorted(known)) or 'none'}); name its Hub dataset and "
                f"commit in {_key('jobData')}"
            )
    if r.data is not None and r.data.validation is None:
        grpo = config.get("grpo") or {}
        validates = (grpo.get("val_period") or 0) > 0 or grpo.get("val_at_start") is True
        held_out = (not release.flat_data) and bool(
            ((config.get("data") or {}).get("train") or {}).get("split_validation_size")
        )
        if validates and release.flat_data:
            # NeMo-RL asserts a validation dataset when it validates (nemo_rl/algorithms/grpo.py `setup`: v0.4.0
            # L271-272, v0.5.0 L277-278); the flat ResponseDataset has none without val_data_path.
            p.append(
                f"{_key('jobData.validation')}: the run validates (grpo.val_period {grpo.get('val_period')}, "
                f"val_at_start {grpo.get('val_at_start')}) but jobData has no validation data; add validation, or set "
                f"{_key('jobOverrides')}.val_period to 0 and grpo.val_at_start to false"
            )
        elif validates and not held_out and not (config.get("data") or {}).get("validation"):
            # v0.7.0 asserts it too (grpo.py L404-408); a train entry's split_validation_size holds a share out.
            p.append(
                f"{_key('jobData.validation')}: the run validates but has no validation data (no data.validation, "
                "data.train.split_validation_size 0); add validation to jobData, or set "
                f"{_key('jobOverrides')}.val_period to 0"
            )
    return p


def run_identity(recipe: Recipe, release: NemoRlRelease) -> dict:
    """What a run's checkpoints belong to: the release, the model at its pinned commit, and every value of the
    config NeMo-RL runs with (base config + the program's keys + the user's keys, resolved) that is not resume-safe."""
    tree = recipe_tree(recipe, release)
    rendered = hydra_overrides(recipe, mount_path=_MOUNT, run_name=_RUN, release=release, tree=tree)
    if not tree.lookup("policy.megatron_cfg.converter_type")[0]:
        rendered.pop("policy.megatron_cfg.converter_type", None)
    rendered.update({k.lstrip("+"): config_tree.render_value(tree, k, v) for k, v in recipe.config_overrides.items()})
    config = config_tree.with_overrides(tree, rendered)
    flat = config_tree.flatten(config)
    kept = {k: repr(v) for k, v in flat.items() if not _listed_resume_safe(k) and k not in _DEFAULT_RELATIVE_KEYS}
    relative = list(_DEFAULT_RELATIVE_KEYS)
    if _steps_size_the_scheduler(config):
        # Before the scheduler rule, the steps were part of the identity only where they set the lr horizon.
        full = "grpo.max_num_steps" in flat and _steps_set_the_lr_horizon(config)
        if full:
            kept["grpo.max_num_steps"] = repr(flat["grpo.max_num_steps"])
        relative += [k for k in _STEPS_KEYS if not (full and k == "grpo.max_num_steps")]
    base = RECIPES.get(recipe.name)
    for k in relative:
        if k not in flat:
            continue
        if k == "grpo.max_num_steps" and base is not None:
            default = base.max_num_steps
        else:
            default = tree.lookup(k, resolved=True)[1]
        if flat[k] != default:
            kept[k] = repr(flat[k])
    identity = {"nemo_rl": release.tag, "model": f"{recipe.model_name}@{recipe.model_revision}", "config": kept}
    # What it trains on, with the commits (the staged paths in the config name them only through a digest).
    identity["data"] = data.identity(recipe.data) if recipe.data is not None else {}
    loads = data.builtin_loads(builtin_dataset_names(config, release), release.tag)
    if recipe.data is None and recipe.dataset == "gsm8k":
        loads = sorted({*loads, (catalog.GSM8K_REPO, catalog.GSM8K_CONFIG)}, key=lambda x: (x[0], x[1] or ""))
    identity["datasets"] = data.builtin_identity(loads)
    return identity


def checkpoint_fingerprint(recipe: Recipe, release: NemoRlRelease, start_from: Optional[str] = None) -> str:
    """8 hex digits naming the run's identity (run_identity, and the jobStartFrom checkpoint a run starts from: a run
    started from another point is another run, in a directory of its own): equal exactly when the checkpoints are the
    run's own."""
    identity = run_identity(recipe, release)
    if start_from:
        identity["start_from"] = start_from
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]


def default_run_name(job: JobSpec, stack_name: str, release: NemoRlRelease) -> str:
    """The run name: `runName`, else `<recipe>-<stack>-<fingerprint>`.

    NeMo-RL resumes from the newest `step_N` under `<mount>/checkpoints/<run name>`. The fingerprint changes with
    the run's identity (run_identity: the release, the pinned model, every config value but RESUME_SAFE_KEYS), so
    resubmitting the same recipe (or one with more steps, other periods, other logging) resumes, and a changed
    model, learning rate, loss, data, seed, batch shape, precision or layout starts fresh in a directory of its own.
    An explicit `runName` is used as given."""
    if job.run_name is not None:
        return job.run_name
    recipe, _ = _apply_overrides(job, release)
    # A config run as written is named after its file (grpo_math_8B-dev-1a2b3c4d).
    config_path = job.overrides.get("config_path")
    stem = posixpath.splitext(posixpath.basename(config_path))[0] if isinstance(config_path, str) else ""
    base = f"{stem if recipe_name(job) == AS_WRITTEN and stem else recipe_name(job)}-{stack_name}"
    slug = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", base)).lstrip("._-")
    try:
        start_from = getattr(job, "start_from", None)
        fingerprint = checkpoint_fingerprint(recipe, release, start_from) if recipe is not None else None
    except config_tree.ConfigFileError:
        fingerprint = None  # refused by the recipe rules; no name is rendered
    if fingerprint is None:
        return slug[:100] or "run"
    return f"{slug[:91]}-{fingerprint}" if slug else f"run-{fingerprint}"


def effective_val_period(recipe: Recipe, release: NemoRlRelease) -> Optional[int]:
    """grpo.val_period the run validates at: the recipe's, else its config's resolved one (None if not known)."""
    if recipe.val_period is not None:
        return recipe.val_period
    try:
        value = recipe_tree(recipe, release).lookup("grpo.val_period", resolved=True)[1]
    except config_tree.ConfigFileError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def megatron_save_without_validation(recipe: Recipe, release: NemoRlRelease) -> list[int]:
    """Steps at which a Megatron run saves a checkpoint without having validated first (empty when safe).

    NeMo-RL's GRPO loop (nemo_rl/algorithms/grpo.py `grpo_train` at v0.4.0 and v0.5.0) validates when
    `val_period > 0 and (step + 1) % val_period == 0` and saves when `is_last_step or (step + 1) % save_period ==
    0` (1-based steps here; the last step is max_num_steps, or the end of the data, which is not known here).
    Megatron runs that save at a step without validation hit NVIDIA-NeMo/RL #1137 (CUDA OOM at the step after
    the next validated save; reported 2025-09-16 against main between v0.3.1 and v0.4.0, still open, no fix in
    NeMo-RL's history through 2026-08) and, before v0.4.0, #834 (segfault after such a save; fixed by PR #844,
    in v0.4.0 and later)."""
    val_period = effective_val_period(recipe, release)
    if recipe.train_backend != "megatron" or val_period is None:
        return []
    saves = set(range(recipe.save_period, recipe.max_num_steps + 1, recipe.save_period)) | {recipe.max_num_steps}
    return sorted(s for s in saves if val_period == 0 or s % val_period)


def job_warnings(job: JobSpec, release: NemoRlRelease) -> list[str]:
    """Runnable but risky job settings, one line each naming the config key (shown by preview, not refused)."""
    if not job.enabled:
        return []
    try:
        recipe = resolve_recipe(job, release)
    except RecipeError:
        return []  # reported as problems by check_job()
    out = _unpinned_data_warnings(recipe, job, release) if as_written(recipe) else []
    steps = megatron_save_without_validation(recipe, release)
    if not steps:
        return out
    val_period = effective_val_period(recipe, release)
    shown = ", ".join(str(s) for s in steps[:6]) + (", ..." if len(steps) > 6 else "")
    origin = (
        config_fit.Provenance(job, recipe, release).first(
            "checkpointing.save_period", "grpo.val_period", "grpo.max_num_steps"
        )
        if as_written(recipe)
        else _origin(job, "save_period", "val_period", "max_num_steps")
    )
    return out + [
        f"{origin}: the Megatron run saves checkpoints "
        f"at steps without validation ({shown}; save_period {recipe.save_period}, val_period "
        f"{val_period}, max_num_steps {recipe.max_num_steps}); such runs can run out of GPU memory "
        f"after the save (NVIDIA-NeMo/RL #1137, reported before v0.4.0, open; #834, a segfault, fixed in "
        f"v0.4.0); make save_period and max_num_steps multiples of val_period"
    ]


def _unpinned_data_warnings(recipe: Recipe, job: JobSpec, release: NemoRlRelease) -> list[str]:
    """A config run as written keeps its own data section: a dataset NeMo-RL loads by name from the Hub (a built-in
    such as OpenMathInstruct-2, or a Hub id as a ResponseDataset path) loads at the Hub's newest revision, since no
    release passes a revision to its loaders (`git grep revision <tag> -- nemo_rl/data` at v0.4.0 and v0.5.0 finds
    none; v0.7.0's one hit is a cache scan in datasets/utils.py). Said in preview, not refused: it is the config's
    choice."""
    config = checked_config(recipe, release, recipe_tree(recipe, release))
    if config is None:
        return []
    where = config_fit.Provenance(job, recipe, release)
    entries = (
        [("data", config.get("data") or {})]
        if release.flat_data
        else [(f"data.{s}", (config.get("data") or {}).get(s)) for s in ("train", "validation")]
    )
    out = []
    for prefix, entry in entries:
        if not isinstance(entry, dict):
            continue  # none, or a list of datasets (v0.7.0), left to the config
        name = entry.get("dataset_name") or ((config.get("data") or {}).get("default") or {}).get("dataset_name")
        path = entry.get("train_data_path" if release.flat_data else "data_path")
        local = isinstance(path, str) and path.startswith("/")
        if name and (name != "ResponseDataset" or not local):
            shown = f"{name} from {path}" if path else name
            out.append(
                f"{where(prefix + '.dataset_name')}: the config's data ({prefix}: {shown}) is loaded by NeMo-RL from "
                "the Hugging Face Hub at its newest revision, not a pinned one (no release passes a dataset revision "
                "to its loaders); a run that must be repeatable trains on staged files (a path on Lustre)"
            )
    return out


def resolve(job: JobSpec, release: NemoRlRelease, stack_name: str) -> tuple[Optional[Recipe], list[str]]:
    """The recipe the job runs (built-in recipe + jobOverrides) and every problem of the job settings by
    themselves: unknown fields, contradictions, the run name and, for an enabled job, what `release` lacks.
    The recipe is None only when it cannot be built at all (unknown recipe or field, invalid value); with other
    problems it is returned too, so the cluster-fit rules can report theirs in the same run. The settings
    resolve it once per run (core.settings) and refuse to go on while any problem remains."""
    recipe, problems = _apply_overrides(job, release)
    run_problem = run_name_problem(default_run_name(job, stack_name, release))
    if run_problem:
        problems.append(run_problem)
    if recipe is not None:
        problems.extend(_consistency_problems(recipe, job))
        if job.enabled:
            problems.extend(_release_problems(recipe, job, release))
    return recipe, problems


def fit_problems(
    recipe: Recipe,
    job: JobSpec,
    *,
    worker_replicas: int,
    gpus_per_node: int,
    max_nodes: Optional[int] = None,
    gpu_memory_gib: Optional[int] = None,
    release: Optional[NemoRlRelease] = None,
) -> list[str]:
    """What the recipe asks of the cluster that the cluster does not have. `max_nodes`: the GPU nodes the platform's
    pools scale to (Standard; None on Autopilot); `gpu_memory_gib` with the `release`: the GPU memory lower bound on
    the resolved config (core.recipes.fit.memory_problems)."""
    problems = []
    where = config_fit.Provenance(job, recipe, release) if release is not None else None

    def origin(field: str) -> str:
        # A config run as written: the setting its cluster.* key came from (the config, a file, a dotted key).
        if as_written(recipe) and where is not None:
            return where(f"cluster.{field}")
        return _origin(job, field)

    if as_written(recipe) and max_nodes is not None and recipe.num_nodes > max_nodes:
        problems.append(
            f"{origin('num_nodes')}: the config needs cluster.num_nodes {recipe.num_nodes} GPU nodes but the "
            f"platform's GPU pools scale to at most {max_nodes} ({_key('gpuNodes')})"
        )
    elif recipe.num_nodes > worker_replicas:
        problems.append(
            f"{origin('num_nodes')}: {recipe.num_nodes} nodes (recipe {recipe.name!r}) but only "
            f"{worker_replicas} GPU workers ({_key('workerReplicas')})"
        )
    if recipe.gpus_per_node != gpus_per_node:
        fix = f'; set jobOverrides["cluster.gpus_per_node"] to {gpus_per_node}' if as_written(recipe) else ""
        problems.append(
            f"{origin('gpus_per_node')}: {recipe.gpus_per_node} GPUs per node but the GPU type "
            f"has {gpus_per_node} ({_key('gpuType')}){fix}"
        )
    if gpu_memory_gib is not None and release is not None and not problems:
        params = recipe.model_params or catalog.MODEL_PARAMS.get(recipe.model_name)
        try:
            config = checked_config(recipe, release, recipe_tree(recipe, release))
        except config_tree.ConfigFileError:
            config = None  # reported by the recipe's own rules
        if config is not None and where is not None:
            problems.extend(config_fit.memory_problems(config, params, gpu_memory_gib, where, recipe.model_name))
    return problems


def job_deadline_seconds(recipe: Recipe) -> Optional[int]:
    """The RayJob's activeDeadlineSeconds the recipe asks for: startup allowance + max_num_steps x step budget; None
    without a step budget (jobRecipe none unless jobOverrides.step_budget_seconds sets one)."""
    if recipe.step_budget_seconds is None:
        return None
    return int(catalog.NOMINAL_JOB_STARTUP_SECONDS.seconds) + recipe.max_num_steps * recipe.step_budget_seconds


def deadline_problems(recipe: Recipe, job: JobSpec) -> list[str]:
    """The recipe's deadline must fit KubeRay's int32 activeDeadlineSeconds (catalog K8S_INT32_MAX)."""
    seconds = job_deadline_seconds(recipe)
    if seconds is None or seconds <= catalog.K8S_INT32_MAX:
        return []
    return [
        f"{_origin(job, 'max_num_steps', 'step_budget_seconds')}: the RayJob deadline of {seconds} s "
        f"(startup allowance + {recipe.max_num_steps} steps x {recipe.step_budget_seconds} s) exceeds KubeRay's "
        f"int32 activeDeadlineSeconds ({catalog.K8S_INT32_MAX}); lower them or set {_key('jobDeadlineSeconds')} "
        "(0: no deadline)"
    ]


def check_job(
    job: JobSpec, *, release: NemoRlRelease, worker_replicas: int, gpus_per_node: int, stack_name: str
) -> list[str]:
    """Every problem of the job settings, one line each, naming the config key. Empty when runnable.

    A disabled job (jobEnabled false) is only checked for its own shape, not against the cluster or release.
    """
    recipe, problems = resolve(job, release, stack_name)
    if recipe is not None and job.enabled:
        problems.extend(fit_problems(recipe, job, worker_replicas=worker_replicas, gpus_per_node=gpus_per_node))
    return problems


def resolve_recipe(job: JobSpec, release: NemoRlRelease) -> Recipe:
    """The recipe the job runs on `release`, or RecipeError with every problem (for callers outside the
    settings, which have already resolved it: tests and tools)."""
    recipe, problems = _apply_overrides(job, release)
    if recipe is None:  # no recipe comes without a problem saying why
        raise RecipeError(problems)
    problems.extend(_consistency_problems(recipe, job))
    problems.extend(_release_problems(recipe, job, release))
    if problems:
        raise RecipeError(problems)
    return recipe


def selected_environments(config: dict, release: NemoRlRelease) -> tuple[list[tuple[str, str]], list[str]]:
    """The environments NeMo-RL creates for this resolved config, each with the key that names it, and the names a
    data.train list entry gives that it never creates (core.catalog, the release's environment facts).

    Flat layout (v0.4.0 / v0.5.0): `data.env_name`, read by examples/run_grpo.py (v0.5.0 L74); v0.4.0's configs carry
    none. Sectioned layout (v0.7.0): extract_necessary_env_names (nemo_rl/data/datasets/utils.py L196-217) adds the
    `env_name` of data.train, data.validation and data.default where each is a section; a list entry is filled from
    data.default (nemo_rl/data/utils.py L176-177) and bound to `envs[cfg["env_name"]]` (L189)."""
    data: dict = config["data"] if isinstance(config.get("data"), dict) else {}
    if release.flat_data:
        name = data.get("env_name")
        return ([(name, "data.env_name")] if isinstance(name, str) else []), []
    selected: list[tuple[str, str]] = []
    for part in ("train", "validation", "default"):
        section = data.get(part)
        if isinstance(section, dict) and isinstance(section.get("env_name"), str):
            if section["env_name"] not in [n for n, _ in selected]:
                selected.append((section["env_name"], f"data.{part}.env_name"))
    default: dict = data["default"] if isinstance(data.get("default"), dict) else {}
    created = {n for n, _ in selected}
    unreachable: list[str] = []
    train: list = data["train"] if isinstance(data.get("train"), list) else []
    for entry in train:
        name = (entry or {}).get("env_name", default.get("env_name")) if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in created and name not in unreachable:
            unreachable.append(name)
    return selected, unreachable


def _shown(value: object) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def override_report(
    recipe: Recipe, release: NemoRlRelease, *, mount_path: str, run_name: str, model_path: Optional[str] = None
) -> list[str]:
    """What `pulumi preview` says the job sets over its config (NemoRlJob logs it): with a recipe, every key the
    recipe sets to another value than the config's (`key config -> recipe`), then the keys the program sets for the
    infrastructure; with jobRecipe none, only the latter, and that everything else is the config's."""
    try:
        tree = recipe_tree(recipe, release)
    except config_tree.ConfigFileError:
        return []
    rendered = hydra_overrides(
        recipe, mount_path=mount_path, run_name=run_name, model_path=model_path, release=release, tree=tree
    )
    # The staged data's keys (jobData) are the program's too: the paths of the files the staging Job wrote.
    staged = data.HYDRA_KEYS if recipe.data is not None else frozenset()
    program_keys = {k: v for k, v in rendered.items() if k in AS_WRITTEN_KEYS or k in staged}
    where = f"{recipe.config_path} (NeMo-RL {release.tag})"
    program = "; ".join(f"{k}={_shown(v)}" for k, v in program_keys.items())
    mine = f"; jobOverrides sets {', '.join(sorted(recipe.config_overrides))}" if recipe.config_overrides else ""
    if as_written(recipe):
        return [
            f"{_key('jobRecipe')}: none runs {where} as written: the program sets only {program}; every other key is "
            f"the config's{mine}"
        ]
    changed = []
    for k, v in rendered.items():
        if k in program_keys or (k == "policy.megatron_cfg.converter_type" and not tree.lookup(k)[0]):
            continue
        present, before = tree.lookup(k, resolved=True)
        if not present or before != v:
            changed.append(f"{k} {_shown(before) if present else '(absent)'} -> {_shown(v)}")
    lines = [
        f"{_key('jobRecipe')}: recipe {recipe.name!r} sets over {where}: {', '.join(changed) or 'nothing'}"
        + " (jobRecipe none runs the config as written)",
        f"{_key('jobRecipe')}: the program sets {program}{mine}",
    ]
    return lines
