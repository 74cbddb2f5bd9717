"""The `datasets` environments of the NeMo-RL releases: one venv per release with exactly the `datasets` (and its
dependencies) its image runs (tests/datasets_envs/<tag>.txt, from its uv.lock), made by `make datasets-venvs` under
`.venv-datasets/<tag>` (or $NEMO_RL_GKE_DATASETS_VENVS/<tag>). The data staging program and NeMo-RL's loaders
(tests/standin/nemo_rl_data.py) run in them as subprocesses, on loopback only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "tests" / "datasets_envs"
STANDIN = ROOT / "tests" / "standin" / "nemo_rl_data.py"


def venvs_dir() -> Path:
    return Path(os.environ.get("NEMO_RL_GKE_DATASETS_VENVS") or ROOT / ".venv-datasets")


def python_of(tag: str) -> str:
    """The release's interpreter; a missing environment fails the test (never skips it), saying how to make it."""
    py = venvs_dir() / tag / "bin" / "python"
    if not py.exists():
        pytest.fail(f"no datasets environment for {tag} at {py}: run `make datasets-venvs`")
    return str(py)


def clean_env(**extra: str) -> dict[str, str]:
    """An environment without the machine's Hugging Face settings (no token, no cache, no endpoint), loopback only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", HF_HUB_DISABLE_TELEMETRY="1")
    env.update(extra)
    return env


def run(tag: str, argv: list[str], env: dict[str, str], cwd: Optional[Path] = None, timeout: int = 300):
    return subprocess.run(
        [python_of(tag), *argv], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False
    )
