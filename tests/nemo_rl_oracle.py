"""The real oracle for what NeMo-RL makes of a rendered job: real /bin/sh, real hydra-core, NeMo-RL's own loader.

- `training_argv(entrypoint)`: the argv `uv` receives when /bin/sh runs the entrypoint's script up to its
  training command (`exec uv run python ...`), taken from stand-ins that only record their argv;
- `nemo_rl_config(tag, config_path, overrides)`: the run's config as that NeMo-RL release's entry script builds
  it (tests/standin/grpo_trainer.py `load_nemo_rl_config`, the code the stand-in trainer runs in the Ray tests),
  from the release's real files in nemo-rl-reference;
- `parsed_overrides(words)`: the words read by hydra-core's own override parser;
- `lookup(config, key)`: (present, value) of a dotted key in a plain config dict.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import shlex
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from pod_programs import attempts as attempts_program
from tests.standin import release_tree
from tests.standin.grpo_trainer import apply_nemo_rl_overrides, import_nemo_rl_loader, load_nemo_rl_base, lookup

__all__ = ["loader", "nemo_rl_config", "training_argv", "parsed_overrides", "lookup"]


def loader(tag: str) -> ModuleType:
    """NeMo-RL `tag`'s nemo_rl/utils/config.py, imported from the kept copy (one module per release)."""
    return import_nemo_rl_loader(release_tree(tag))


@functools.lru_cache(maxsize=None)
def _loaded(tag: str, config_path: str) -> DictConfig:
    # `config_path` relative to the release tree, as the entry script takes it relative to /opt/nemo-rl.
    with contextlib.chdir(release_tree(tag)):
        return load_nemo_rl_base(loader(tag), config_path)


def nemo_rl_config(tag: str, config_path: str, overrides: list[str]) -> dict:
    """The config NeMo-RL `tag` runs with: `load_nemo_rl_config`, with the release's `load_config` result kept
    per (release, config) and copied for each call (it is deterministic, slow, and changed in place later)."""
    return apply_nemo_rl_overrides(loader(tag), copy.deepcopy(_loaded(tag, config_path)), overrides)


# Commands of the entrypoint's script besides the shell's own: each stand-in prints its name, its argument
# count and its arguments, NUL-separated (any argument may hold a newline; none can hold a NUL).
_RECORDER = '#!/bin/sh\nprintf \'%s\\0\' {name} "$#" "$@"\n'
# `cd` is a regular shell builtin, so a function of that name takes precedence (POSIX 2.9.1 command search):
# the script's `cd /opt/nemo-rl` is recorded rather than run, everything else runs as written.
_CD_RECORDER = 'cd() { printf \'%s\\0\' cd "$#" "$@"; }\n'


def script_calls(entrypoint: str) -> list[list[str]]:
    """The commands /bin/sh runs for the entrypoint `sh -c '<script>'`, in order, each as [name, *args].

    The outer `sh -c` word split is shlex's (how the RayJob's submitter line reaches it is covered by the KubeRay
    test in test_recipes.py); the script itself is run by the real /bin/sh with `set -eu` and its quoting."""
    sh, dash_c, script = shlex.split(entrypoint)
    assert (sh, dash_c) == ("sh", "-c"), entrypoint
    with tempfile.TemporaryDirectory(prefix="sh-calls-") as bin_dir:
        for name in ("uv", "mkdir", "touch"):
            tool = Path(bin_dir, name)
            tool.write_text(_RECORDER.format(name=name))
            tool.chmod(0o755)
        out = subprocess.run(
            ["/bin/sh", "-c", _CD_RECORDER + script], env={"PATH": bin_dir}, capture_output=True, check=True, timeout=30
        ).stdout
    fields = out.decode("utf-8").split("\0")
    assert fields.pop() == "", out
    calls = []
    while fields:
        name, count = fields.pop(0), int(fields.pop(0))
        call = [name, *fields[:count]]
        del fields[:count]
        if call[:3] == ["uv", "run", "python"] and call[3].endswith(
            "/" + attempts_program.__name__.split(".")[-1] + ".py"
        ):
            # A standing cluster's bounded attempts (pod_programs/attempts.py): the steps after `--`, in order, are
            # what each attempt runs; split by the program's own parser.
            calls.extend(attempts_program.split_steps(call[call.index("--") + 1 :]))
        else:
            calls.append(call)
    return calls


def training_argv(entrypoint: str) -> list[str]:
    """The argv of the entrypoint's last command, the training run `exec uv run python <entry> ...`."""
    last = script_calls(entrypoint)[-1]
    assert last[:3] == ["uv", "run", "python"], last
    return last


def parsed_overrides(words: list[str]) -> list[Override]:
    return OverridesParser.create().parse_overrides(overrides=words)
