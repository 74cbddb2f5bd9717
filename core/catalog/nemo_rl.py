"""NeMo-RL releases: one `NemoRlRelease` record per release holds every fact about it, with its sources.

A new release is one record in `_RECORDS` plus what the tests read from it, kept in the repository with its source:
the release's configs and config loader (nemo-rl-reference/<tag>/, SOURCES.md there) and its environment
(tests/oracles/nemo_rl_environment/<tag>.txt, from its uv.lock). Every table the program reads (NEMO_RL_RELEASES,
NEMO_RL_IMAGE_PINS, the flat-data releases) is derived from the records; the policy pack's copy is
generated from them (`python -m synth.policy_facts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Optional

from core.catalog.pins import ImagePin

NEMO_RL_IMAGE_REPO = "nvcr.io/nvidia/nemo-rl"
NEMO_RL_WORKDIR = "/opt/nemo-rl"
# Each release's whole examples/configs/ and its config loader, verbatim (SOURCES.md there: tag, commit, Git ids):
# the program validates `jobOverrides.config_path` and every dotted override against them at preview.
NEMO_RL_REFERENCE = Path(__file__).resolve().parents[2] / "nemo-rl-reference"
_REPO = "NVIDIA-NeMo/RL (https://github.com/NVIDIA-NeMo/RL)"

_GRPO_70B = "examples/configs/grpo_math_70B_megatron.yaml"
_GEMMA3_27B = "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml"
_GRPO_1B = "examples/configs/grpo_math_1B.yaml"

# Searched (code index: `nemo-rl:v0.X.0@sha256`, `nvidia/nemo-rl@sha256`; docs/pages corpora for the NGC catalog):
# no public source states the digests of the NeMo-RL images, so none is recorded.
_NO_NEMO_RL_DIGEST = "no public source found for this tag's digest (searched 2026-11; see docs/research/harden.md §5)"
# How the image's `ray job submit` joins the entrypoint words back into one string (core/shell.py):
# `entrypoint=list2cmdline(entrypoint)` in ray python/ray/dashboard/modules/job/cli.py at 2.46.0, 2.49.2 and 2.55.1
# (read from the PyPI wheels); ray PR #63797 switched POSIX to shlex.join in Ray 2.60.
_RAY_CLI_JOIN = "ray python/ray/dashboard/modules/job/cli.py at the release's Ray (PyPI wheel)"
# NeMo-RL PR #1649 moved datasets under `data.train` / `data.validation` (the layout of the v0.6.0 tree), so a
# release after it fails at start on the `data.dataset_name=...` the recipes render.
_DATA_LAYOUT = f"{_REPO} examples/configs/grpo_math_1B.yaml at the tag; PR #1649"


@dataclass(frozen=True)
class NemoRlRelease:
    """One NeMo-RL release (its image `nvcr.io/nvidia/nemo-rl:<tag>`): every fact the program uses about it."""

    tag: str
    commit: str  # the tag's commit in NVIDIA-NeMo/RL
    ray_version: str  # the Ray inside the image: a RayCluster's rayVersion must equal it
    grpo_entry: str  # GRPO entry script, relative to /opt/nemo-rl
    # The configs the built-in recipes name on this release (their tests run each one); a recipe may name any GRPO
    # math config the release ships (nemo-rl-reference/<tag>, checked by core.recipes.resolve).
    configs: frozenset
    # The data layout the recipes render (data.dataset_name, data.train_data_path, ...): releases before NeMo-RL
    # PR #1649 keep it flat.
    flat_data: bool
    ray_cli_join: str = "list2cmdline"
    # LD_LIBRARY_PATH entries the release's own Dockerfile puts in the image, in its order. A pod's `env` value
    # replaces the image's variable (Kubernetes expands `$(VAR)` only from the container's own env), so the Ray
    # pods' value (workloads/manifests/rdma.py library_path) must carry these after the gIB and driver directories.
    image_library_path: tuple[str, ...] = ()
    # How the release's config loader (nemo_rl/utils/config.py) and entry script build a config, which
    # core/recipes/config_tree.py reproduces offline (the upstream lines: `sources`, from _LOADER_SOURCES):
    # - loader_parent_dirs: a parent's own `defaults:` resolve against that parent's directory (False: against the
    #   top config's directory, for the whole chain);
    # - loader_override_marker: a section marked `_override_: true` replaces the parent's section instead of merging;
    # - resolvers: the OmegaConf resolvers the entry script registers before loading.
    loader_parent_dirs: bool = False
    loader_override_marker: bool = False
    resolvers: tuple[str, ...] = ("mul",)
    # The Policy asserts policy.train_micro_batch_size == policy.logprob_batch_size at tensor parallelism >= 4 unless
    # NRL_IGNORE_TP_ACCURACY_CHECK is set (nemo_rl/models/policy/lm_policy.py at v0.7.0 L178-195; absent at v0.4.0 and
    # v0.5.0: `git grep NRL_IGNORE_TP_ACCURACY_CHECK <tag>` is empty).
    tp_accuracy_check: bool = False
    # The HF -> Megatron conversion directory takes the suffix `__hfovr_<12 hex>` of policy.hf_config_overrides
    # (nemo_rl/models/megatron/setup.py validate_model_paths at v0.7.0 L445-452; v0.4.0/v0.5.0 use the model alone).
    megatron_hf_overrides_suffix: bool = False
    # Environments (jobEntry): the names the release's ENV_REGISTRY holds (empty: the release has no registry), the
    # GRPO entry a jobEntry wraps (None: none creates the environment the config names), and whether the built-in
    # GRPO entry (`grpo_entry`) builds MathEnvironment itself, ignoring the config's environment name.
    env_registry: frozenset = frozenset()
    registry_entry: Optional[str] = None
    grpo_entry_math_only: bool = False
    image_digest: str = ""  # "sha256:<64 hex>" when a public source states it
    image_digest_source: str = _NO_NEMO_RL_DIGEST
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)  # fact (field names) -> its source

    @property
    def image(self) -> str:
        return f"{NEMO_RL_IMAGE_REPO}:{self.tag}"


# The upstream lines behind each release's loader facts (files at the tag; the loader is vendored in
# nemo-rl-reference/<tag>/nemo_rl/utils/config.py, identical blob 690c8f16 in v0.4.0 and v0.5.0).
_LOADER = f"{_REPO} nemo_rl/utils/config.py at {{commit}} (nemo-rl-reference/{{tag}})"
_LOADER_04 = {
    "loader_parent_dirs": f"{_LOADER} L63-65: `resolve_path(base_dir, ...)` then "
    "`load_config_with_inheritance(parent_path, base_dir)`: the top file's base_dir all the way down",
    "loader_override_marker": f"{_LOADER} L66, L69: plain `OmegaConf.merge`, no `_override_` handling",
    "resolvers": f"{_REPO} examples/run_grpo_math.py L43 at {{commit}}: "
    '`OmegaConf.register_new_resolver("mul", lambda a, b: a * b)` at import; the loader registers none',
}
_LOADER_SOURCES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "v0.4.0": _LOADER_04,
        "v0.5.0": _LOADER_04,
        "v0.7.0": {
            "loader_parent_dirs": f"{_LOADER} L81-85: `load_config_with_inheritance(parent_path, "
            'parent_path.parent)` ("Use parent\'s directory as base_dir for resolving its own defaults")',
            "loader_override_marker": f"{_LOADER} L30-44 `merge_with_override` (a section with `_override_: true` "
            "drops the base's section), used for every merge at L86-91",
            "resolvers": f"{_LOADER} L191-198 `register_omegaconf_resolvers` (mul, div, max), called by "
            f"{_REPO} examples/run_grpo.py L66 at {{commit}}",
        },
    }
)


def _sources(tag: str, commit: str, **extra: str) -> Mapping[str, str]:
    return MappingProxyType(
        {
            "commit": f"{_REPO} tag {tag}",
            "ray_version": f"uv.lock of {_REPO} at {commit[:8]} (tests/oracles/nemo_rl_environment/{tag}.txt)",
            "grpo_entry, configs": f"{_REPO} tree at {commit[:8]} (nemo-rl-reference/{tag})",
            "flat_data": _DATA_LAYOUT,
            "ray_cli_join": _RAY_CLI_JOIN,
            "image_digest": _NO_NEMO_RL_DIGEST,
            "env_registry, registry_entry, grpo_entry_math_only": f"{_REPO} nemo_rl/environments/utils.py and "
            f"examples/run_grpo*.py at {commit[:8]} (the environments block of core/catalog/nemo_rl.py)",
            **{k: v.format(tag=tag, commit=commit[:8]) for k, v in _LOADER_SOURCES[tag].items()},
            **extra,
        }
    )


# v0.7.0's image adds, in this order of the final value, `/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib` (release
# stage, AWS EFA plugin discovery) before `/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib`
# (hermetic stage: "Point TE at the pip-installed cuDNN ... TE prioritizes system libraries by default, causing a
# version mismatch crash"); v0.4.0 and v0.5.0 add none. Each also keeps `${LD_LIBRARY_PATH}` of its base image
# nvcr.io/nvidia/cuda-dl-base, whose Dockerfile NVIDIA does not publish: those entries are unknown here, and the GKE
# tutorial replaces them on v0.5.0 (worker env LD_LIBRARY_PATH=/usr/local/nvidia/lib64) without harm.
_LIBRARY_PATH = f"{_REPO} docker/Dockerfile at the tag"
# Absent before v0.7.0 (the field comments above): the releases' trees at their tags.
_NO_TP_CHECK = f"{_REPO} tree at the tag: no NRL_IGNORE_TP_ACCURACY_CHECK (`git grep` at the tag is empty)"
_NO_HF_SUFFIX = f"{_REPO} nemo_rl/models/megatron at the tag: the conversion directory is named by the model alone"

# The environments each release registers and where the config selects one (jobEntry, core/settings/startup.py):
# - v0.4.0: no registry (`git grep ENV_REGISTRY` at the tag is empty); examples/run_grpo_math.py L93-100 builds
#   `MathEnvironment.options(...).remote(env_configs["math"])` itself, and `task_to_env` defaults to it (L122-124).
# - v0.5.0: nemo_rl/environments/utils.py L30-46 ENV_REGISTRY, L96-108 create_env (`assert env_name in
#   ENV_REGISTRY, "... Please call register_env() to register the environment."`, then
#   `.remote(env_configs[env_name])`), L111-115 register_env; examples/run_grpo.py L74-75 `env_name =
#   data_config["env_name"]; env = create_env(env_name=env_name, env_configs=env_configs)` with `config["env"]`
#   (L169). examples/run_grpo_math.py, the built-in entry, builds MathEnvironment itself (L96-103).
# - v0.7.0: nemo_rl/environments/utils.py L31-56 ENV_REGISTRY, L106-132 create_env(env_name, env_config), L135-139
#   register_env; nemo_rl/data/utils.py L154-160 creates every name extract_necessary_env_names finds
#   (nemo_rl/data/datasets/utils.py L196-217: `env_name` of data.train, data.validation, data.default, each a section)
#   with `env_configs[env_name]`, and binds each train entry to `envs[cfg["env_name"]]` (L189) after filling it from
#   data.default (L176-177).
# Every create_env asks `get_actor_python_env(actor_class_fqn)`, which raises ValueError for a class missing from
# ACTOR_ENVIRONMENT_REGISTRY (nemo_rl/distributed/ray_actor_environment_registry.py v0.5.0 L50-65, v0.7.0 L66-81):
# a custom environment registers its actor's Python there too (PY_EXECUTABLES.SYSTEM = sys.executable,
# nemo_rl/distributed/virtual_cluster.py v0.5.0 L43-44).
_ENV_REGISTRY_05 = frozenset({"math_default", "math", "code", "reward_model", "code_jaccard"})
_ENV_REGISTRY_07 = _ENV_REGISTRY_05 | {"math_multi_reward", "vlm", "nemo_gym"}
_RUN_GRPO = "examples/run_grpo.py"
# The names under which the built-in math entries' MathEnvironment serves (v0.5.0 ENV_REGISTRY L31-36: both map to
# nemo_rl.environments.math_environment.MathEnvironment).
MATH_ENVIRONMENT_NAMES = frozenset({"math", "math_default"})

_RECORDS: tuple[NemoRlRelease, ...] = (
    NemoRlRelease(
        "v0.4.0",
        "c751f811217db7df0d4c94abdeaada6626cfc150",
        "2.46.0",
        "examples/run_grpo_math.py",
        frozenset({_GRPO_70B, _GRPO_1B}),
        flat_data=True,
        grpo_entry_math_only=True,
        sources=_sources(
            "v0.4.0",
            "c751f811217db7df0d4c94abdeaada6626cfc150",
            image_library_path=_LIBRARY_PATH,
            tp_accuracy_check=_NO_TP_CHECK,
            megatron_hf_overrides_suffix=_NO_HF_SUFFIX,
        ),
    ),
    NemoRlRelease(
        "v0.5.0",
        "6c7089300fded94abfa49bb9cbf9eb357d862461",
        "2.49.2",
        "examples/run_grpo_math.py",
        frozenset({_GRPO_70B, _GRPO_1B, _GEMMA3_27B}),
        flat_data=True,
        env_registry=_ENV_REGISTRY_05,
        registry_entry=_RUN_GRPO,
        grpo_entry_math_only=True,
        sources=_sources(
            "v0.5.0",
            "6c7089300fded94abfa49bb9cbf9eb357d862461",
            image_library_path=_LIBRARY_PATH,
            tp_accuracy_check=_NO_TP_CHECK,
            megatron_hf_overrides_suffix=_NO_HF_SUFFIX,
        ),
    ),
    NemoRlRelease(
        "v0.7.0",
        "81aa43dda4765b0429cf31dab44441e4e4383911",
        "2.55.1",
        "examples/run_grpo.py",
        frozenset({_GRPO_70B, _GRPO_1B, _GEMMA3_27B}),
        flat_data=False,
        env_registry=_ENV_REGISTRY_07,
        registry_entry=_RUN_GRPO,
        loader_parent_dirs=True,
        loader_override_marker=True,
        resolvers=("mul", "div", "max"),
        tp_accuracy_check=True,
        megatron_hf_overrides_suffix=True,
        image_library_path=(
            "/opt/amazon/ofi-nccl/lib",
            "/opt/amazon/efa/lib",
            "/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib",
        ),
        sources=_sources(
            "v0.7.0",
            "81aa43dda4765b0429cf31dab44441e4e4383911",
            image_library_path=_LIBRARY_PATH,
            tp_accuracy_check=f"{_REPO} nemo_rl/models/policy/lm_policy.py at the tag, L178-195",
            megatron_hf_overrides_suffix=f"{_REPO} nemo_rl/models/megatron/setup.py at the tag, L445-452",
        ),
    ),
)

NEMO_RL_RELEASES: dict[str, NemoRlRelease] = {r.tag: r for r in _RECORDS}

NEMO_RL_IMAGE_PINS: dict[str, ImagePin] = {
    r.tag: ImagePin(NEMO_RL_IMAGE_REPO, r.tag, r.image_digest, r.image_digest_source) for r in _RECORDS
}

# Releases whose GRPO configs keep the flat `data.dataset_name` / `data.train_data_path` layout the recipes render.
FLAT_DATA_RELEASES: frozenset[str] = frozenset(r.tag for r in _RECORDS if r.flat_data)


# Checkpoint ranking metrics whose direction is known. NeMo-RL's `checkpointing.metric_name` is "val:<key>" or
# "train:<key>" (nemo_rl/algorithms/grpo.py asserts the prefix at the first save: v0.4.0 L1246, v0.5.0 L1497,
# v0.7.0 L2901) and CheckpointManager ranks by it with `higher_is_better` (nemo_rl/utils/checkpoint.py, read from
# the config at v0.4.0, v0.5.0 and v0.7.0) for keep_top_k pruning and the best checkpoint. Keys from grpo.py at
# v0.4.0: validate() returns "accuracy" (the base configs pair val:accuracy with higher_is_better: true); the
# training metrics hold "reward" and "loss". Any other metric needs its direction stated.
METRIC_HIGHER_IS_BETTER: dict[str, bool] = {"val:accuracy": True, "train:reward": True, "train:loss": False}
METRIC_PREFIXES: tuple[str, ...] = ("val:", "train:")
