"""Stand-in for NeMo-RL's GRPO entry script, for running the Ray job path without GPUs or NeMo-RL.

Installed (tests/standin `install_workdir`) at the release's entry script path (`examples/run_grpo_math.py`,
`examples/run_grpo.py`) in a directory standing in for /opt/nemo-rl that also holds that release's real GRPO
configs and its real config loader `nemo_rl/utils/config.py` (copies in nemo-rl-reference). It takes the
same command line as NeMo-RL, `--config <yaml>` plus Hydra overrides, and turns it into the run's config exactly
as the release's entry script does, with NeMo-RL's own loader and real hydra-core / OmegaConf
(`load_nemo_rl_config`): nothing here parses an override. It then behaves like NeMo-RL's checkpointing
(nemo_rl/utils/checkpoint.py, kept as tests/oracles/nemo_rl_checkpoint.py):

- resumes from the highest `step_N` in `checkpointing.checkpoint_dir` (checking training_info.json);
- runs steps up to `grpo.max_num_steps`, sleeping $NEMO_RL_STANDIN_STEP_SECONDS per step (default 1);
- every `checkpointing.save_period` steps and at the last step writes `tmp_step_N/` (config.yaml,
  training_info.json, train_dataloader.pt, policy/{weights,optimizer,tokenizer}/), renames it to `step_N`,
  and keeps the newest `checkpointing.keep_top_k` (metric_name must be null: it computes no metric);
- with `data.dataset_name=ResponseDataset`, reads the train/validation JSONL files and their keys;
- installed as examples/run_grpo.py beside the release's environment registry (tests/standin install_registry),
  creates the environments the config names with that registry code, as Ray actors, and has each score a sample.

Needs hydra-core and omegaconf (NeMo-RL's own dependencies); it never prints a secret.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

STEP_SECONDS_ENV = "NEMO_RL_STANDIN_STEP_SECONDS"
PREFIX = "stand-in GRPO:"
# NeMo-RL's config loader, relative to the NeMo-RL tree (the stand-in sits at <tree>/examples/<entry>.py).
LOADER_PATH = Path("nemo_rl", "utils", "config.py")
# OmegaConf resolvers some NeMo-RL release registers (v0.7.0 nemo_rl/utils/config.py register_omegaconf_resolvers).
_RESOLVERS = ("mul", "div", "max")
_STEP_DIR = re.compile(r"^step_([0-9]+)$")
_LOADERS: dict[Path, ModuleType] = {}


class StandInError(Exception):
    pass


def import_nemo_rl_loader(nemo_rl_root: Path) -> ModuleType:
    """`<nemo_rl_root>/nemo_rl/utils/config.py`, NeMo-RL's own config loader, imported by its path.

    By path because the rest of the `nemo_rl` package (torch, vLLM, ...) is not there; the loader itself only
    imports hydra-core and OmegaConf. One module per file, so the loaders of several releases coexist.
    """
    path = (Path(nemo_rl_root) / LOADER_PATH).resolve()
    module = _LOADERS.get(path)
    if module is None:
        if not path.is_file():
            raise StandInError(f"NeMo-RL config loader {path} not found")
        name = "nemo_rl_utils_config_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADERS[path] = module
    return module


def _register_resolvers(loader: ModuleType) -> None:
    # OmegaConf keeps resolvers process-wide: start from none, then register what this release's entry script
    # registers, so a test process that loads several releases sees each one's set only.
    for name in _RESOLVERS:
        OmegaConf.clear_resolver(name)
    if hasattr(loader, "register_omegaconf_resolvers"):
        # v0.7.0 examples/run_grpo.py L66 (NVIDIA-NeMo/RL@81aa43dda4765b0429cf31dab44441e4e4383911)
        loader.register_omegaconf_resolvers()
    else:
        # v0.4.0 / v0.5.0 examples/run_grpo_math.py L43, at import (NVIDIA-NeMo/RL@c751f811217db7df0d4c94abdeaada66
        # 26cfc150, @6c7089300fded94abfa49bb9cbf9eb357d862461)
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)


def load_nemo_rl_config(loader: ModuleType, config_path: str, overrides: list[str]) -> dict:
    """The run's config from `--config` and the Hydra overrides, as NeMo-RL's GRPO entry script builds it:

        config = load_config(args.config)
        if overrides:
            config = parse_hydra_overrides(config, overrides)   # OmegaConf.set_struct(cfg, True) inside
        config = OmegaConf.to_container(config, resolve=True)

    v0.4.0 examples/run_grpo_math.py L137-144, v0.5.0 examples/run_grpo_math.py L140-147, v0.7.0
    examples/run_grpo.py L74-81 (commits in nemo-rl-reference/SOURCES.md). `config_path` is taken as the
    script takes it: relative to the working directory. Not mirrored: v0.7.0's next line, `MasterConfig(**config)`,
    which needs the nemo_rl package. Errors are NeMo-RL's own (OverridesError, FileNotFoundError, OmegaConf's).
    """
    return apply_nemo_rl_overrides(loader, load_nemo_rl_base(loader, config_path), overrides)


def load_nemo_rl_base(loader: ModuleType, config_path: str) -> DictConfig:
    """The first step of `load_nemo_rl_config`: the release's resolvers, then its `load_config`."""
    _register_resolvers(loader)
    return loader.load_config(config_path)


def apply_nemo_rl_overrides(loader: ModuleType, config: DictConfig, overrides: list[str]) -> dict:
    """The rest of `load_nemo_rl_config` on a loaded config, which `parse_hydra_overrides` changes in place."""
    _register_resolvers(loader)
    if overrides:
        config = loader.parse_hydra_overrides(config, overrides)
    return OmegaConf.to_container(config, resolve=True)


def lookup(config: dict, key: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key in a plain config dict."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def require(config: dict, key: str, kind: type) -> Any:
    present, value = lookup(config, key)
    if not present or value is None:
        raise StandInError(f"required setting {key} is missing")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise StandInError(f"{key} must be an integer, got {value!r}")
    if not isinstance(value, kind):
        raise StandInError(f"{key} must be a {kind.__name__}, got {value!r}")
    return value


def check_response_dataset(config: dict) -> None:
    """ResponseDataset on JSONL files, in either layout: v0.4.0/v0.5.0's flat `data.*` keys, or v0.7.0's
    `data.train` / `data.validation` sections, each filled from `data.default` where it lacks a key
    (nemo_rl/data/utils.py setup_response_data / update_single_dataset_config at v0.7.0)."""
    if isinstance(lookup(config, "data.train")[1], dict):
        return _check_sectioned_response_dataset(config)
    present, name = lookup(config, "data.dataset_name")
    if not present or name != "ResponseDataset":
        return
    in_key, out_key = require(config, "data.input_key", str), require(config, "data.output_key", str)
    counts = {}
    for which in ("train_data_path", "val_data_path"):
        counts[which] = _jsonl_rows(require(config, f"data.{which}", str), f"data.{which}", in_key, out_key)
    for which in ("train_split", "val_split"):
        if lookup(config, f"data.{which}")[1] != "train":
            raise StandInError(f"data.{which} must be 'train' for a local JSONL file")
    print(
        f"{PREFIX} ResponseDataset {counts['train_data_path']} train / {counts['val_data_path']} validation rows",
        flush=True,
    )


def _jsonl_rows(path: str, key: str, in_key: str, out_key: str) -> int:
    if not os.path.isfile(path):
        raise StandInError(f"{key} {path!r} does not exist (was the dataset prepared?)")
    rows = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            row = json.loads(line)
            if not all(isinstance(row.get(k), str) and row[k] for k in (in_key, out_key)):
                raise StandInError(f"{path}:{n}: needs non-empty {in_key!r} and {out_key!r}")
            rows += 1
    if rows == 0:
        raise StandInError(f"{path} is empty")
    return rows


def _check_sectioned_response_dataset(config: dict) -> None:
    default = lookup(config, "data.default")[1] or {}
    counts = {}
    for which in ("train", "validation"):
        section = lookup(config, f"data.{which}")[1]
        if not isinstance(section, dict) or section.get("dataset_name") != "ResponseDataset":
            continue
        merged = {**default, **section}
        for k in ("data_path", "input_key", "output_key"):
            if not isinstance(merged.get(k), str):
                raise StandInError(f"required setting data.{which}.{k} (or data.default.{k}) is missing")
        # load_dataset_from_path (nemo_rl/data/datasets/utils.py at v0.7.0): a .jsonl file loads as one split, `train`,
        # then `raw_dataset[split]` when a split is named.
        if merged.get("split") not in (None, "train"):
            raise StandInError(f"data.{which}: KeyError {merged['split']!r}: a .jsonl file has the split 'train' only")
        counts[which] = _jsonl_rows(
            merged["data_path"], f"data.{which}.data_path", merged["input_key"], merged["output_key"]
        )
    if "train" in counts:
        if (lookup(config, "data.train.split_validation_size")[1] or 0) != 0:
            raise StandInError("data.train.split_validation_size must be 0: the validation file is a file of its own")
        print(
            f"{PREFIX} ResponseDataset {counts['train']} train / {counts.get('validation', 0)} validation rows",
            flush=True,
        )


# A batch the stand-in asks each environment to score: one response holding the ground truth, one that does not.
SAMPLE_MESSAGES = [
    [{"role": "user", "content": "What is 6 x 7?"}, {"role": "assistant", "content": "6 x 7 = 42, so 42."}],
    [{"role": "user", "content": "What is 6 x 7?"}, {"role": "assistant", "content": "It is 41."}],
]
SAMPLE_METADATA = [{"ground_truth": "42"}, {"ground_truth": "42"}]


def setup_environments(config: dict, root: Path) -> dict[str, Any]:
    """The environments examples/run_grpo.py creates for the config, with the release's own registry code under
    `root` (nemo_rl/environments/utils.py, tests/standin install_registry), each a Ray actor on the cluster:
    v0.5.0 examples/run_grpo.py L74-75 `create_env(env_name=data_config["env_name"], env_configs=config["env"])`;
    v0.7.0 nemo_rl/data/utils.py L154-160 `create_env(env_name=..., env_config=env_configs[env_name])` for every name
    extract_necessary_env_names (nemo_rl/data/datasets/utils.py L208-217) finds in data.train / validation /
    default. Errors are NeMo-RL's own (its assert, get_actor_python_env's ValueError)."""
    import ray

    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from nemo_rl.environments import utils as env_utils

    if not ray.is_initialized():
        ray.init(address="auto", logging_level="ERROR")  # examples/run_grpo.py's init_ray(): the job's cluster
    data = config.get("data") or {}
    if "train" in data:
        names = set()
        for key in ["train", "validation", "default"]:
            if key in data and data[key] is not None and "env_name" in data[key]:
                names.add(data[key]["env_name"])
        return {n: env_utils.create_env(env_name=n, env_config=config["env"][n]) for n in sorted(names)}
    name = data["env_name"]
    return {name: env_utils.create_env(env_name=name, env_configs=config["env"])}


def score_environments(envs: dict[str, Any]) -> None:
    import ray

    for name, env in envs.items():
        got = ray.get(env.step.remote(SAMPLE_MESSAGES, SAMPLE_METADATA), timeout=120)
        print(f"{PREFIX} environment {name}: rewards {[float(x) for x in got.rewards]}", flush=True)


def checkpoints(ckpt_dir: str) -> dict[int, str]:
    out = {}
    if os.path.isdir(ckpt_dir):
        for name in os.listdir(ckpt_dir):
            m = _STEP_DIR.match(name)
            if m and os.path.isdir(os.path.join(ckpt_dir, name)):
                out[int(m.group(1))] = os.path.join(ckpt_dir, name)
    return out


def resume_step(ckpt_dir: str) -> int:
    found = checkpoints(ckpt_dir)
    if not found:
        return 0
    step = max(found)
    with open(os.path.join(found[step], "training_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    if info.get("step") != step:
        raise StandInError(f"{found[step]}/training_info.json says step {info.get('step')!r}, expected {step}")
    return step


def save_checkpoint(ckpt_dir: str, step: int, config: dict, keep_top_k: int) -> str:
    tmp = os.path.join(ckpt_dir, f"tmp_step_{step}")
    final = os.path.join(ckpt_dir, f"step_{step}")
    shutil.rmtree(tmp, ignore_errors=True)
    for sub in ("policy/weights", "policy/optimizer", "policy/tokenizer"):
        os.makedirs(os.path.join(tmp, sub))
    with open(os.path.join(tmp, "config.yaml"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    with open(os.path.join(tmp, "training_info.json"), "w", encoding="utf-8") as f:
        json.dump({"step": step}, f)
    with open(os.path.join(tmp, "train_dataloader.pt"), "wb") as f:
        f.write(json.dumps({"step": step}).encode())
    for sub in ("weights", "optimizer"):
        with open(os.path.join(tmp, "policy", sub, "__0_0.distcp"), "wb") as f:
            f.write(b"\0" * 64)
    with open(os.path.join(tmp, "policy", "tokenizer", "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"name": config.get("policy", {}).get("model_name")}, f)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    for old in sorted(checkpoints(ckpt_dir))[:-keep_top_k]:
        shutil.rmtree(os.path.join(ckpt_dir, f"step_{old}"))
    return final


def main(argv: Optional[list[str]] = None, nemo_rl_root: Optional[Path] = None) -> int:
    """Run as NeMo-RL's entry script would; `nemo_rl_root` is the NeMo-RL tree holding the config loader
    (default: the tree this file is installed in, `<tree>/examples/<entry>.py`)."""
    # As the entry scripts: argparse's parse_known_args, the words it does not know are the Hydra overrides.
    ap = argparse.ArgumentParser(description="Stand-in for NeMo-RL GRPO (no GPU, no NeMo-RL)")
    ap.add_argument("--config", required=True)
    args, words = ap.parse_known_args(argv)
    root = Path(nemo_rl_root) if nemo_rl_root is not None else Path(__file__).resolve().parents[1]
    try:
        loader = import_nemo_rl_loader(root)
        try:
            config = load_nemo_rl_config(loader, args.config, words)
        except Exception as e:  # NeMo-RL's own errors: OverridesError, FileNotFoundError, OmegaConf's
            raise StandInError(f"NeMo-RL could not build the config: {type(e).__name__}: {e}") from e
        if require(config, "checkpointing.enabled", bool) is not True:
            raise StandInError("checkpointing.enabled must be True: nothing could resume after a preemption")
        ckpt_dir = require(config, "checkpointing.checkpoint_dir", str)
        if not os.path.isabs(ckpt_dir):
            raise StandInError(f"checkpointing.checkpoint_dir {ckpt_dir!r} must be absolute (on Lustre)")
        save_period = require(config, "checkpointing.save_period", int)
        keep_top_k = require(config, "checkpointing.keep_top_k", int)
        max_steps = require(config, "grpo.max_num_steps", int)
        if lookup(config, "checkpointing.metric_name")[1] is not None:
            raise StandInError("checkpointing.metric_name must be null (keep the newest checkpoints)")
        if save_period < 1 or keep_top_k < 1 or max_steps < 1:
            raise StandInError("save_period, keep_top_k and max_num_steps must be >= 1")
        check_response_dataset(config)
        os.makedirs(ckpt_dir, exist_ok=True)
        start = resume_step(ckpt_dir)
    except (StandInError, OSError, ValueError) as e:
        print(f"{PREFIX} error: {e}", file=sys.stderr, flush=True)
        return 2
    if Path(__file__).name == "run_grpo.py" and (root / "nemo_rl" / "environments" / "utils.py").is_file():
        # The entry that creates the config's environments (a jobEntry wraps it), where the registry is installed.
        try:
            score_environments(setup_environments(config, root))
        except Exception as e:  # NeMo-RL's own: create_env's assert, get_actor_python_env's ValueError, an actor's
            print(f"{PREFIX} error: environment: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return 2

    step_seconds = float(os.environ.get(STEP_SECONDS_ENV, "1"))
    model = config.get("policy", {}).get("model_name")
    print(f"{PREFIX} model {model}, {max_steps} steps, checkpoints in {ckpt_dir}", flush=True)
    print(f"{PREFIX} HF_TOKEN visible: {'yes' if os.environ.get('HF_TOKEN') else 'no'}", flush=True)
    if start:
        print(f"{PREFIX} resuming from step {start} ({os.path.join(ckpt_dir, f'step_{start}')})", flush=True)
    else:
        print(f"{PREFIX} no checkpoint in {ckpt_dir}, starting from step 0", flush=True)
    for step in range(start + 1, max_steps + 1):
        time.sleep(step_seconds)
        print(f"{PREFIX} step {step}/{max_steps} done", flush=True)
        if step % save_period == 0 or step == max_steps:
            path = save_checkpoint(ckpt_dir, step, config, keep_top_k)
            print(f"{PREFIX} saved checkpoint {path}", flush=True)
    print(f"{PREFIX} finished at step {max_steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
