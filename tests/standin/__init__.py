"""Stand-ins that let the RayJob path run on a laptop or CI: no GPU, no NeMo-RL image, no network.

- `grpo_trainer.py`: the GRPO entry script stand-in. It builds the run's config with the release's real
  config loader and real hydra-core, then behaves like NeMo-RL's checkpointing.
- `install_workdir()`: lays out a directory standing in for /opt/nemo-rl of one NeMo-RL release: that
  release's real files the tests keep (nemo-rl-reference/<tag>: its GRPO configs and
  nemo_rl/utils/config.py) and the stand-in at the release's entry script path.
- `fake_datasets`: a `datasets` package stand-in serving GSM8K-shaped rows from memory;
- `stage_gsm8k()`: the GSM8K step of the data staging Job (pod_programs/stage_data.py), run with that stand-in, as
  the Job runs it before the RayJob exists.
- `install_registry()`: NeMo-RL's environment registry of one release in that directory (`nemo_rl/environments/
  utils.py` and `get_actor_python_env`, real code kept in tests/oracles/nemo_rl_registry), so a custom environment
  registered by a jobEntry script is created as the release creates it, as a Ray actor.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from core import data
from core.catalog import NemoRlRelease

TRAINER = Path(__file__).with_name("grpo_trainer.py")
# Unmodified NeMo-RL files, one folder per release tag (see SOURCES.md there).
NEMO_RL_REFERENCE = Path(__file__).resolve().parents[2] / "nemo-rl-reference"


def release_tree(tag: str) -> Path:
    """The kept copy of NeMo-RL `tag`'s files, laid out as in its repository."""
    tree = NEMO_RL_REFERENCE / tag
    if not tree.is_dir():
        raise FileNotFoundError(f"no NeMo-RL {tag} files under {NEMO_RL_REFERENCE}")
    return tree


def install_workdir(workdir: Path, release: NemoRlRelease) -> None:
    """`workdir` as /opt/nemo-rl of `release`: its real configs and config loader, the stand-in at its entry."""
    shutil.copytree(
        release_tree(release.tag), workdir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )  # only the kept files
    dest = workdir / release.grpo_entry
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TRAINER, dest)
    if release.registry_entry and release.registry_entry != release.grpo_entry:
        # The GRPO entry a jobEntry wraps (examples/run_grpo.py on v0.5.0, whose built-in recipes run run_grpo_math.py).
        dest = workdir / release.registry_entry
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TRAINER, dest)


REGISTRY = Path(__file__).resolve().parents[1] / "oracles" / "nemo_rl_registry"

# v0.7.0's registry beside the kept file (its text is v0.5.0's registry, tests/oracles/SOURCES.md), line by line from
# NVIDIA-NeMo/RL nemo_rl/environments/utils.py at 81aa43dd: three more names (L38-40, L50-55) and create_env taking
# one environment's config (L106-132). The per-node venv branch (L113-125) applies to a `uv ...` executable only,
# never to PY_EXECUTABLES.SYSTEM, which custom environments register: the stand-in refuses it instead.
_V070_REGISTRY = """

# --- v0.7.0 (NVIDIA-NeMo/RL nemo_rl/environments/utils.py at 81aa43dd, cited line by line) ---
ENV_REGISTRY["math_multi_reward"] = {  # L38-40
    "actor_class_fqn": "nemo_rl.environments.math_environment.MathMultiRewardEnvironment",
}
ENV_REGISTRY["vlm"] = {"actor_class_fqn": "nemo_rl.environments.vlm_environment.VLMEnvironment"}  # L50-52
ENV_REGISTRY["nemo_gym"] = {"actor_class_fqn": "nemo_rl.environments.nemo_gym.NemoGym"}  # L53-55


def create_env(env_name: str, env_config: dict) -> EnvironmentInterface:  # L106
    assert env_name in ENV_REGISTRY, (  # L107-109
        f"Env name {env_name} is not registered in ENV_REGISTRY. "
        "Please call register_env() to register the environment."
    )
    actor_class_fqn = ENV_REGISTRY[env_name]["actor_class_fqn"]  # L110
    actor_class = get_object(actor_class_fqn)  # L111
    actor_py_exec = get_actor_python_env(actor_class_fqn)  # L112
    extra_env_vars = {}  # L113
    if actor_py_exec.startswith("uv"):  # L114-125: a per-node venv, not for PY_EXECUTABLES.SYSTEM
        raise NotImplementedError("stand-in: uv executables are not modelled")
    env = actor_class.options(  # L126-131
        runtime_env={
            "py_executable": actor_py_exec,
            "env_vars": {**dict(os.environ), **extra_env_vars},
        }
    ).remote(env_config)
    return env  # L132
"""

# Test doubles for the modules the registry imports: the interface (nemo_rl/environments/interfaces.py, identical
# EnvironmentReturn fields at v0.5.0 and v0.7.0), PY_EXECUTABLES.SYSTEM (nemo_rl/distributed/virtual_cluster.py
# v0.5.0 L43-44, v0.7.0 L55-56), and the actor registry with the environments of the release's ENV_REGISTRY on the
# system executable (nemo_rl/distributed/ray_actor_environment_registry.py v0.5.0 L27-47, v0.7.0 L30-59) followed by
# the kept get_actor_python_env.
_INTERFACES = """import abc
from typing import Any, NamedTuple


class EnvironmentReturn(NamedTuple):
    observations: list
    metadata: list
    next_stop_strings: list
    rewards: Any
    terminateds: Any
    answers: Any


class EnvironmentInterface(abc.ABC):
    @abc.abstractmethod
    def step(self, message_log_batch, metadata) -> EnvironmentReturn: ...

    @abc.abstractmethod
    def global_post_process_and_metrics(self, batch): ...
"""
_VIRTUAL_CLUSTER = "import sys\n\n\nclass PY_EXECUTABLES:\n    SYSTEM = sys.executable\n"


def install_registry(workdir: Path, release: NemoRlRelease) -> None:
    """`workdir`/nemo_rl as NeMo-RL `release` lays out its environment registry (a release without one gets none)."""
    if not release.env_registry:
        return
    envs = workdir / "nemo_rl" / "environments"
    dist = workdir / "nemo_rl" / "distributed"
    envs.mkdir(parents=True, exist_ok=True)
    dist.mkdir(parents=True, exist_ok=True)
    utils = (REGISTRY / "environments_utils.py").read_text(encoding="utf-8")
    if release.tag == "v0.7.0":
        utils += _V070_REGISTRY
    (envs / "utils.py").write_text(utils, encoding="utf-8")
    (envs / "interfaces.py").write_text(_INTERFACES, encoding="utf-8")
    (dist / "virtual_cluster.py").write_text(_VIRTUAL_CLUSTER, encoding="utf-8")
    classes = sorted(
        {
            "nemo_rl.environments.math_environment.MathEnvironment",
            "nemo_rl.environments.code_environment.CodeEnvironment",
            "nemo_rl.environments.reward_model_environment.RewardModelEnvironment",
            "nemo_rl.environments.code_jaccard_environment.CodeJaccardEnvironment",
        }
    )
    registry = (
        "from nemo_rl.distributed.virtual_cluster import PY_EXECUTABLES\n\n"
        "ACTOR_ENVIRONMENT_REGISTRY: dict[str, str] = {\n"
        + "".join(f"    {c!r}: PY_EXECUTABLES.SYSTEM,\n" for c in classes)
        + "}\n\n\n"
        + (REGISTRY / "get_actor_python_env.py.txt").read_text(encoding="utf-8")
    )
    (dist / "ray_actor_environment_registry.py").write_text(registry, encoding="utf-8")


def stage_gsm8k(lustre: Path, fake_site: Path, calls: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Run the data staging program on the GSM8K recipe's plan (its GSM8K step only: the built-in loaders' cache is
    tests/test_data_staging.py's, with the real `datasets`), with HF_HOME on `lustre` and `datasets` the stand-in."""
    from core.lustre_paths import hf_home
    from tests.standin import fake_datasets

    plan = data.staging_plan(None, tag="v0.5.0", mount_path=str(lustre), builtins=[], gsm8k=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=hf_home(str(lustre)), PYTHONPATH=str(fake_site))
    if calls is not None:
        env[fake_datasets.CALLS_ENV] = str(calls)
    program = Path(__file__).resolve().parents[2] / "pod_programs" / "stage_data.py"
    out = subprocess.run(
        [sys.executable, str(program), "--plan", json.dumps(plan)], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out
