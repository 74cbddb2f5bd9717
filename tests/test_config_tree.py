"""The program's offline reading of NeMo-RL configs (core/recipes/config_tree.py) against the real thing: each
release's own loader (nemo-rl-reference/<tag>/nemo_rl/utils/config.py) with real hydra-core 1.3.2 / OmegaConf 2.3.0,
on every config of every release; and the vendored trees against the upstream Git ids in SOURCES.md."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from core.catalog import NEMO_RL_REFERENCE, NEMO_RL_RELEASES
from core.recipes import config_tree as ct
from core.recipes.overrides import hydra_value
from tests import nemo_rl_oracle
from tests.sampling import sample
from tests.standin.grpo_trainer import import_nemo_rl_loader, load_nemo_rl_base

TAGS = sorted(NEMO_RL_RELEASES)
ENV = {"HF_HOME": "/lustre/hf"}  # one v0.7.0 recipe reads ${oc.env:HF_HOME}; the job's runtime env sets it


# --- the vendored trees ---------------------------------------------------------------------------------------------
def _git_object(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" %d\0" % len(data) + data).digest()


def git_tree_id(path: Path) -> str:
    """Git's tree id of a directory: entries sorted as Git sorts them (a directory as `name/`), modes from the files."""
    entries = []
    for p in path.iterdir():
        if p.name == "__pycache__":
            continue
        if p.is_dir():
            entries.append((p.name + "/", b"40000 " + p.name.encode() + b"\0" + bytes.fromhex(git_tree_id(p))))
        else:
            mode = b"100755" if os.access(p, os.X_OK) else b"100644"
            entries.append((p.name, mode + b" " + p.name.encode() + b"\0" + _git_object(b"blob", p.read_bytes())))
    return _git_object(b"tree", b"".join(e for _, e in sorted(entries))).hex()


def _sources_table() -> dict[str, dict[str, str]]:
    text = (NEMO_RL_REFERENCE / "SOURCES.md").read_text()
    row = r"^\| `([^`]+)` \((?:tree|blob)\) \| ([0-9a-f]{40}) \| ([0-9a-f]{40}) \| ([0-9a-f]{40}) \|$"
    tags = ("v0.4.0", "v0.5.0", "v0.7.0")
    return {path: dict(zip(tags, ids, strict=True)) for path, *ids in re.findall(row, text, re.M)}


@pytest.mark.unit
@pytest.mark.parametrize("tag", TAGS)
def test_vendored_release_trees_are_the_upstream_git_trees_of_the_tag(tag):
    table = _sources_table()
    assert set(table) == {"examples/configs", "examples/prompts", "nemo_rl/utils/config.py"}
    root = NEMO_RL_REFERENCE / tag
    assert git_tree_id(root / "examples/configs") == table["examples/configs"][tag]
    assert git_tree_id(root / "examples/prompts") == table["examples/prompts"][tag]
    blob = _git_object(b"blob", (root / "nemo_rl/utils/config.py").read_bytes()).hex()
    assert blob == table["nemo_rl/utils/config.py"][tag]


@pytest.mark.unit
def test_vendored_extra_parents_and_licence_are_the_upstream_blobs():
    text = (NEMO_RL_REFERENCE / "SOURCES.md").read_text()
    extra = dict(re.findall(r"^\| `(examples/(?:modelopt|nemo_gym)/[^`]+)` \| ([0-9a-f]{40}) \|$", text, re.M))
    assert len(extra) == 10
    root = NEMO_RL_REFERENCE / "v0.7.0"
    dirs = ("examples/modelopt", "examples/nemo_gym")
    assert {str(p.relative_to(root)) for d in dirs for p in (root / d).rglob("*") if p.is_file()} == set(extra)
    assert {f: _git_object(b"blob", (root / f).read_bytes()).hex() for f in extra} == extra
    licence = re.search(r"blob `([0-9a-f]{40})`", text).group(1)
    assert _git_object(b"blob", (NEMO_RL_REFERENCE / "LICENSE").read_bytes()).hex() == licence


# --- loading: ours == NeMo-RL's -------------------------------------------------------------------------------------
def _same(a: Any, b: Any) -> bool:
    """Equal with types (1 != 1.0 != True), NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _real(tag: str, config_path: str) -> tuple[dict, dict]:
    # NeMo-RL's own load_config, through the oracle's per-(release, config) cache: the tests that later apply the
    # job's overrides to these configs (test_open_recipes.py) reuse the loads instead of repeating them.
    assert nemo_rl_oracle.release_tree(tag) == ct.release_root(tag)
    cfg = nemo_rl_oracle._loaded(tag, config_path)
    return OmegaConf.to_container(cfg, resolve=False), OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.graph
@pytest.mark.xdist_group("nemo-rl-all-configs")  # one worker loads each config once for both (nemo_rl_oracle)
@pytest.mark.parametrize("tag", TAGS)
def test_every_config_of_every_release_reads_as_nemo_rls_own_loader_reads_it(tag, monkeypatch):
    # Raw (interpolations kept) and resolved (with the release's resolvers), type for type, for all of the tree.
    for var, value in ENV.items():
        monkeypatch.setenv(var, value)
    configs = ct.shipped_configs(tag)
    assert len(configs) == {"v0.4.0": 83, "v0.5.0": 142, "v0.7.0": 245}[tag]
    differ = []
    for config_path in sample(configs):  # all of them unless NEMO_RL_GKE_SAMPLE (tests/sampling.py)
        raw, resolved = _real(tag, config_path)
        tree = ct.load(tag, config_path, env=ENV)
        if not (_same(raw, tree.raw) and _same(resolved, tree.resolved)):
            differ.append(config_path)
    assert differ == []


@pytest.mark.unit
def test_v04_and_v05_resolve_nested_defaults_against_the_top_file_and_v07_against_each_parent():
    # A user file outside the parent's directory inheriting from a config that has defaults of its own.
    files = {"examples/configs/mine/x.yaml": "defaults: ../grpo_math_8B.yaml\ngrpo:\n  seed: 7\n"}
    with pytest.raises(ct.ConfigFileError, match="grpo_math_1B.yaml"):
        ct.load("v0.5.0", "examples/configs/mine/x.yaml", files)
    assert ct.load("v0.7.0", "examples/configs/mine/x.yaml", files).raw["grpo"]["seed"] == 7


# --- overrides: our decision == Hydra's -----------------------------------------------------------------------------
CONFIGS = [
    ("v0.4.0", "examples/configs/grpo_math_70B_megatron.yaml"),
    ("v0.5.0", "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml"),
    ("v0.5.0", "examples/configs/grpo_math_8B.yaml"),
    ("v0.7.0", "examples/configs/grpo_math_1B.yaml"),
    ("v0.7.0", "examples/configs/grpo_math_70B_megatron.yaml"),
]


@functools.lru_cache(maxsize=None)
def _real_base(tag: str, config_path: str):
    root = ct.release_root(tag)
    with contextlib.chdir(root):
        return load_nemo_rl_base(import_nemo_rl_loader(root), config_path)


def _hydra_takes(tag: str, config_path: str, word: str) -> bool:
    """Whether NeMo-RL's parse_hydra_overrides (struct mode, real hydra-core) applies the word to the config."""
    loader = import_nemo_rl_loader(ct.release_root(tag))
    try:
        loader.parse_hydra_overrides(copy.deepcopy(_real_base(tag, config_path)), [word])
    except loader.OverridesError:
        return False
    return True


def _cases(tree: ct.ConfigTree) -> list[tuple[str, Any]]:
    """Leaves set to their own value, absent keys with and without '+', '+' on present keys, keys under null."""
    leaves = [(k, v) for k, v in ct.flatten(tree.resolved).items() if isinstance(v, (bool, int, float, str))]
    nulls = [k for k, v in ct.flatten(tree.raw).items() if v is None]
    cases: list[tuple[str, Any]] = leaves[::7]
    cases += [(k, 1) for k in nulls[:4]]
    cases += [("+" + k, v) for k, v in leaves[3::29]]  # already there
    cases += [("policy.optimizer.kwargs.learning_rate", 1e-6), ("+logger.wandb.entity", "team")]
    cases += [(k + ".child", 1) for k in nulls[:3]] + [("+" + k + ".child", 1) for k in nulls[:3]]
    cases += [("grpo.no_such_key", 1), ("+grpo.no_such_key", 1), ("nosection.key", 1), ("+nosection.key", 1)]
    return cases


@pytest.mark.graph
@pytest.mark.parametrize("tag,config_path", CONFIGS)
def test_an_override_is_refused_exactly_when_hydra_refuses_it(tag, config_path):
    tree = ct.load(tag, config_path, env=ENV)
    mismatched = []
    for key, value in _cases(tree):
        ours = ct.override_problem(tree, key, value) is None
        word = f"{key}={hydra_value(value)}"
        if ours != _hydra_takes(tag, config_path, word):
            mismatched.append((word, ct.override_problem(tree, key, value)))
    assert mismatched == []


@pytest.mark.unit
@pytest.mark.parametrize(
    "key,value,problem",
    [
        ("policy.optimizer.kwargs.lr", "abc", "'abc' is a string, but the config's value (5e-06) is a number"),
        ("grpo.max_num_steps", 1.5, "1.5 is a number, but the config's value (1000000) is an integer"),
        ("grpo.max_num_steps", True, "True is a boolean, but the config's value (1000000) is an integer"),
        ("policy.generation.colocated.enabled", "yes", "'yes' is a string, but the config's value (True) is a bool"),
        ("policy.optimizer", 5, "is a section of examples/configs/grpo_math_1B.yaml (NeMo-RL v0.7.0)"),
        ("policy.optimizer.kwargs.betas", 0.9, "0.9 is a number, but the config's value ([0.9, 0.999]) is a list"),
        ("policy.optimizer.kwargs.lrr", 1e-6, "closest: policy.optimizer.kwargs.lr"),
        ("loss_fn.kl_penalty", 0.1, "closest: loss_fn.reference_policy_kl_penalty"),
        ("+checkpointing.metric_name", "val:x", "is already in examples/configs/grpo_math_1B.yaml"),
    ],
)
def test_a_value_hydra_would_take_but_of_the_wrong_type_or_key_is_refused_in_one_line(key, value, problem):
    # OmegaConf checks no type (every YAML leaf is an AnyNode): each of these reaches NeMo-RL unchanged.
    tree = ct.load("v0.7.0", "examples/configs/grpo_math_1B.yaml", env=ENV)
    got = ct.override_problem(tree, key, value)
    assert got is not None and problem in got and "\n" not in got


@pytest.mark.unit
@pytest.mark.parametrize(
    "key,value",
    [
        ("policy.optimizer.kwargs.lr", 1),  # an integer for a number: rendered as 1.0
        ("loss_fn.reference_policy_kl_penalty", 0.0),
        ("policy.max_total_sequence_length", 2048),
        ("grpo.seed", 7),
        ("logger.wandb.project", "my-project"),
        ("+logger.wandb.entity", "my-team"),
        ("checkpointing.metric_name", None),
        ("policy.generation.top_k", 50),  # null in the config: any scalar
        ("policy.scheduler.0.kwargs.start_factor", 0.2),  # into a list by index
    ],
)
def test_a_value_of_the_configs_type_is_accepted(key, value):
    tree = ct.load("v0.7.0", "examples/configs/grpo_math_1B.yaml", env=ENV)
    assert ct.override_problem(tree, key, value) is None
    assert _hydra_takes("v0.7.0", "examples/configs/grpo_math_1B.yaml", f"{key}={hydra_value(value)}")


@pytest.mark.unit
@pytest.mark.parametrize(
    "tag,config_path",
    [
        ("v0.4.0", "examples/configs/grpo_math_70B_megatron.yaml"),
        ("v0.5.0", "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml"),
        ("v0.7.0", "examples/configs/grpo_math_1B.yaml"),
    ],
)
def test_the_config_after_overrides_is_the_one_nemo_rl_builds(tag, config_path):
    # What the run fingerprint hashes (core.recipes.run_identity): ours == parse_hydra_overrides + resolve.
    overrides = {
        "policy.max_total_sequence_length": 2048,  # data.max_input_seq_length interpolates it
        "grpo.seed": 7,
        "checkpointing.metric_name": None,
        "+logger.wandb.entity": "team",
        "+policy.generation.vllm_kwargs.seed": 3,
        "policy.generation.stop_strings": ["a", "b"],
    }
    tree = ct.load(tag, config_path, env=ENV)
    ours = ct.with_overrides(tree, overrides, env=ENV)
    loader = import_nemo_rl_loader(ct.release_root(tag))
    words = [f"{k}={hydra_value(v)}" for k, v in overrides.items()]
    real = OmegaConf.to_container(
        loader.parse_hydra_overrides(copy.deepcopy(_real_base(tag, config_path)), words), resolve=True
    )
    assert _same(real, ours)
