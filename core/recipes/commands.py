"""What the RayJob runs: the entrypoint script (gate, the weights' wait or download, the Megatron check, then NeMo-RL),
the job's runtime env (non-secret variables only) and its metadata, and the commands of the programs the
job-scripts ConfigMap ships (pod_programs/).

Pure code. Secrets never appear here: the tokens reach the driver and the workers as files in the Ray pods
(workloads/manifests/pod_security.py token_files); a Ray runtime env is shown in the Ray dashboard.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import pod_programs
from core import data
from core.catalog import NEMO_RL_WORKDIR, NemoRlRelease
from core.lustre_paths import hf_home, mount_root
from core.recipes.model import Recipe, user_config_key
from core.recipes.overrides import checkpoint_dir, render_args
from core.recipes.resolve import megatron_hf_overrides_hash, recipe_dataset_loads, tp_accuracy_env


@dataclass(frozen=True)
class ImagePaths:
    """Where the image keeps NeMo-RL and where the head mounts the job's programs. Fixed in a real pod; tests
    run the entrypoint against directories of their own, as an ordinary user."""

    workdir: str = NEMO_RL_WORKDIR
    scripts_dir: str = "/etc/nemo-rl-gke"
    # An experiment stack's own config files (jobConfigFiles): a ConfigMap of its own, mounted beside the programs
    # (not inside their read-only mount) on its RayJob's head only.
    configs_dir: str = "/etc/nemo-rl-gke-configs"


IMAGE_PATHS = ImagePaths()


@dataclass(frozen=True)
class Attempts:
    """Bounded attempts of a standing-cluster job (pod_programs/attempts.py): KubeRay retries no RayJob that selects
    a standing cluster, so the entrypoint reruns its steps itself after a failure."""

    attempts: int  # in total (jobBackoffLimit + 1)
    log: str  # one JSON line per attempt, on Lustre
    amount: float  # the cluster's GPUs (workers x GPUs per node) an attempt waits for
    capacity_wait_seconds: int
    resource: str = "GPU"
    poll_seconds: int = 15


ATTEMPTS_SCRIPT = pod_programs.ATTEMPTS.name


@dataclass(frozen=True)
class EntrypointArgs:
    """What the entrypoint script runs around NeMo-RL, for `job_script()` and `entrypoint()`.

    `mount_path` / `run_name`: the Lustre mount and the run (its checkpoint directory); `paths`: the image's NeMo-RL
    directory and the head's scripts mount; `gate`: the readiness gate's options (core.gate), run first; `model_path`:
    the pinned model directory (policy.model_name); `before`: commands run before training (own-cluster mode waits
    there for the weights prefetch's marker; without the prefetch Job the download of the pinned snapshot runs there);
    `after`: commands run once training succeeded (the checkpoint export); `attempts`: a standing cluster's bounded
    attempts; `start_from`: jobStartFrom, a checkpoint to start the run from (warm_start_line); `own_configs`: where
    the user's config files are mounted; `entry`: jobEntry, run instead of the release's GRPO entry script. The
    datasets are on Lustre before the RayJob exists (the data staging Job: core/data.py)."""

    mount_path: str
    run_name: str
    paths: ImagePaths = IMAGE_PATHS
    gate: Optional[Sequence[str]] = None
    model_path: Optional[str] = None
    before: tuple[Sequence[str], ...] = ()
    after: tuple[Sequence[str], ...] = ()
    attempts: Optional[Attempts] = None
    start_from: Optional[str] = None
    # Where Megatron conversions go (each run's own under `.runs/<run>`, complete ones shared at the top): None,
    # HF_HOME/nemo_rl; an experiment's own directory when its pods mount the shared cache read-only.
    megatron_dir: Optional[str] = None
    entry: Optional[str] = None  # jobEntry: the image's own entry script instead of the release's GRPO entry
    # The user's config files come from the stack's own ConfigMap at paths.configs_dir (an experiment stack), not
    # from the job-scripts ConfigMap at paths.scripts_dir (a platform's own job).
    own_configs: bool = False


def attempts_log(mount_path: str, run_name: str) -> str:
    return f"{mount_path.rstrip('/')}/attempts/{run_name}.jsonl"


def _attempts_line(a: Attempts, steps: list[list[str]], scripts_dir: str) -> str:
    """One command: the loop program with every step after `--`, separated by `---` (no shell syntax and no `$`:
    the script passes KubeRay's bash, list2cmdline and /bin/sh, core/shell.py)."""
    words = [
        "uv",
        "run",
        "python",
        f"{scripts_dir}/{ATTEMPTS_SCRIPT}",
        "--attempts",
        str(a.attempts),
        "--log",
        a.log,
        "--resource",
        a.resource,
        "--amount",
        f"{a.amount:g}",
        "--capacity-wait-seconds",
        str(a.capacity_wait_seconds),
        "--poll-seconds",
        str(a.poll_seconds),
        "--",
    ]
    for i, step in enumerate(steps):
        words += (["---"] if i else []) + step
    return "exec " + shlex.join(words)


def job_script(recipe: Recipe, release: NemoRlRelease, args: EntrypointArgs) -> str:
    """The script `entrypoint()` runs with `sh -c`, one command per line (see entrypoint()).

    With `args.attempts`, the steps from the gate on run as one command of pod_programs/attempts.py, which reruns
    them (gate included) after a failure, up to its bound. With nothing `after`, NeMo-RL is exec'd; otherwise `set -e`
    runs the export only after a successful training. A Megatron run first removes an interrupted weight conversion
    (megatron_guard_command)."""
    a = args
    mount_path, run_name, paths = a.mount_path, a.run_name, a.paths
    script = [
        "set -eu",
        shlex.join(["mkdir", "-p", checkpoint_dir(mount_path, run_name)]),
    ]
    if a.start_from:
        script.append(warm_start_line(mount_path, run_name, a.start_from))
    script.append(shlex.join(["cd", paths.workdir]))
    steps: list[list[str]] = []
    if a.gate:
        steps.append(gate_command(list(a.gate), paths.scripts_dir))
    steps.extend(list(cmd) for cmd in a.before)
    if recipe.config_files:
        steps.append(install_configs_command(recipe, paths, source_dir=paths.configs_dir if a.own_configs else None))
    if recipe.train_backend == "megatron":
        # The run converts into a directory of its own (pod_programs/megatron_import_guard.py: concurrent jobs).
        shared = a.megatron_dir or megatron_shared_dir(mount_path)
        own = megatron_run_dir(mount_path, run_name, shared)
        script.append(shlex.join(["export", f"{MEGATRON_DIR_ENV}={own}"]))
        steps.append(
            megatron_guard_command(
                a.model_path or recipe.model_name,
                paths.scripts_dir,
                own=own,
                shared=shared,
                hf_overrides_hash=megatron_hf_overrides_hash(recipe, release),
            )
        )
    train = [
        "uv",
        "run",
        "python",
        *render_args(recipe, release, mount_path=mount_path, run_name=run_name, model_path=a.model_path, entry=a.entry),
    ]
    after = [list(c) for c in a.after]
    if a.attempts is not None:
        script.append(_attempts_line(a.attempts, [*steps, train, *after], paths.scripts_dir))
        return "\n".join(script)
    script.extend(shlex.join(step) for step in steps)
    script.append(shlex.join(train) if after else "exec " + shlex.join(train))
    script.extend(shlex.join(cmd) for cmd in after)
    return "\n".join(script)


# The start point's copy is assembled under this name in the run's directory, then renamed to its `step_N`: NeMo-RL
# reads only `step_<digits>` (nemo_rl/utils/checkpoint.py get_latest_checkpoint_path, `re.fullmatch(r"step_\d+")`).
WARM_START_TMP = ".jobStartFrom.tmp"


def warm_start_line(mount_path: str, run_name: str, start_from: str) -> str:
    """jobStartFrom: while the run's directory holds no `step_*`, hard-link `<checkpoints>/<start_from>` into it
    (same Lustre filesystem: no bytes copied, and the source run's pruning unlinks only its own names); NeMo-RL then
    resumes from it (the newest `step_N` of checkpointing.checkpoint_dir: nemo_rl/utils/checkpoint.py
    CheckpointManager.get_latest_checkpoint_path). The links go into a temporary directory first, removed before
    each try, which is renamed to `step_N` only once complete, so an interrupted copy is never resumed from. Once the
    run has a `step_*`, resubmissions leave it alone, and a missing source fails the job under `set -e`. Paths are
    settings the rules keep shell-safe (core/shell.py)."""
    dest = checkpoint_dir(mount_path, run_name)
    source_run, step = start_from.split("/")
    source = f"{checkpoint_dir(mount_path, source_run)}/{step}"
    tmp = shlex.quote(f"{dest}/{WARM_START_TMP}")
    # `;` inside the braces: under `set -e` a failure inside an && list other than its last would not stop the script
    # (POSIX, Shell Command Language 2.14 `set -e`), a command of its own does.
    return (
        f"ls -d {shlex.quote(dest)}/step_* >/dev/null 2>&1 || {{ rm -rf {tmp}; cp -a -l {shlex.quote(source)} "
        f"{tmp}; mv {tmp} {shlex.quote(f'{dest}/{step}')}; }}"
    )


def entrypoint(recipe: Recipe, release: NemoRlRelease, args: EntrypointArgs) -> str:
    """The shell command the RayJob runs: `sh -c '<script>'`, one simple command.

    KubeRay's submitter pastes the entrypoint into a bash command line after `ray job submit --`, so a
    top-level `;` or `&&` would end the submit command instead of running in the job; the image's Ray CLI
    re-joins the words with `subprocess.list2cmdline` and the job supervisor runs that with /bin/sh, which
    expands `$` and backticks and eats backslashes inside list2cmdline's double quotes (core/shell.py has the
    chain with its sources). Settings refuse such characters in every input the script carries (overrides,
    run name, mount path); tests/test_entrypoint_shells.py runs the chain with real shells. The script creates
    the checkpoint directory on Lustre, runs the readiness gate when `gate` gives its options (core.gate: under
    `set -e` a failed gate ends the job before training), the steps `before` (the programs are files under
    SCRIPTS_DIR, not inlined), then runs NeMo-RL from its working directory. One command per
    line, and with bare Hydra strings the built-in recipes need no quote inside the script, so `pulumi preview`
    shows every override as plain `key=value`.
    """
    return shlex.join(["sh", "-c", job_script(recipe, release, args)])


# The runtime-env variable that carries the gateRerun token: part of the RayJob's spec in both modes, so a new
# value replaces the RayJob (spec.metadata, which would carry it too, is never rendered with a clusterSelector:
# workloads/manifests/rayjob.py).
GATE_RERUN_ENV = "NEMO_RL_GKE_GATE_RERUN"


def runtime_env(
    recipe: Recipe, *, mount_path: str, gate_rerun: Optional[str] = None, release: Optional[NemoRlRelease] = None
) -> dict[str, Any]:
    """The Ray runtime env of the job: non-secret variables only (it is shown in the Ray dashboard). With the
    `release`, NRL_IGNORE_TP_ACCURACY_CHECK where the recipe accepts that check's issue (resolve.tp_accuracy_env), and
    the staged `datasets` cache its built-in loaders read offline, at the pinned commits (core.data.training_env)."""
    env = {
        # Model and dataset downloads land on Lustre once for every node (core/lustre_paths.py hf_home).
        "HF_HOME": hf_home(mount_path),
        # NeMo-RL starts its actors with the driver's whole environment as their runtime env; without this
        # Ray rejects it as conflicting with the job's runtime env (the codelab sets it for that reason).
        "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1",
        # Both seeds pin NCCL's and Gloo's bootstrap sockets to the pod's primary interface.
        "NCCL_SOCKET_IFNAME": "eth0",
        "GLOO_SOCKET_IFNAME": "eth0",
    }
    if gate_rerun:
        env[GATE_RERUN_ENV] = gate_rerun
    if release is not None:
        env.update(tp_accuracy_env(recipe, release))
        loads = recipe_dataset_loads(recipe, release)
        env.update(data.training_env(data.builtin_cache_dir(loads, release.tag, mount_path)))
    return {"env_vars": env}


def runtime_env_yaml(
    recipe: Recipe, *, mount_path: str, gate_rerun: Optional[str] = None, release: Optional[NemoRlRelease] = None
) -> str:
    """runtime_env() as the RayJob's runtimeEnvYAML (JSON is YAML; stable key order)."""
    return json.dumps(
        runtime_env(recipe, mount_path=mount_path, gate_rerun=gate_rerun, release=release), sort_keys=True, indent=2
    )


def job_metadata(recipe: Recipe, *, run_name: str, stack_name: str, gate_rerun: Optional[str] = None) -> dict[str, str]:
    """Ray job metadata (string map, shown by `ray job list`): which recipe and run a submission belongs to.

    `gate_rerun` (setting gateRerun) is listed here too; what makes a new value replace the RayJob (and so run
    the job and its readiness gate again) is the runtime env (GATE_RERUN_ENV), present in both job modes."""
    meta = {"recipe": recipe.name, "run": run_name, "stack": stack_name, "model": recipe.model_name}
    if gate_rerun:
        meta["gateRerun"] = gate_rerun
    return meta


# --- the job's programs ------------------------------------------------------------------------------------------
# Files the job runs besides NeMo-RL, shipped in the `nemo-rl-scripts` ConfigMap (core.naming.JOB_SCRIPTS,
# workloads/job_scripts.py) and mounted read-only at SCRIPTS_DIR on the Ray head, where the job's driver (the
# entrypoint) runs, and on the CPU Jobs. Outside /opt/nemo-rl and every image path, so the mount never hides a file of
# the image.
SCRIPTS_DIR = IMAGE_PATHS.scripts_dir
GSM8K_SCRIPT = pod_programs.GSM8K_PREP.name
STAGE_DATA_SCRIPT = pod_programs.STAGE_DATA.name


# --- the user's own config files (jobConfigFiles) ---------------------------------------------------------------
USER_CONFIGS_SCRIPT = pod_programs.USER_CONFIGS.name
# A mounted ConfigMap reaches a running head pod at the kubelet's next sync: "as long as kubelet sync period (1 minute
# by default) + TTL of ConfigMaps cache (1 minute by default)" (kubernetes.io, Configure a Pod to Use a ConfigMap).
USER_CONFIGS_WAIT_SECONDS = 300


def user_config_files(recipe: Recipe) -> dict[str, str]:
    """ConfigMap key -> content of the recipe's own config files (empty without jobConfigFiles)."""
    return {user_config_key(p, t): t for p, t in sorted(recipe.config_files.items())}


def install_configs_command(recipe: Recipe, paths: "ImagePaths", source_dir: Optional[str] = None) -> list[str]:
    """argv that installs the user's files at their paths under the image's NeMo-RL directory, before training;
    `source_dir`: where their ConfigMap is mounted (default: the job-scripts ConfigMap's directory)."""
    pairs = [f"{user_config_key(p, t)}={p}" for p, t in sorted(recipe.config_files.items())]
    return [
        "uv",
        "run",
        "python",
        f"{paths.scripts_dir}/{USER_CONFIGS_SCRIPT}",
        "--from",
        source_dir or paths.scripts_dir,
        "--to",
        paths.workdir,
        "--timeout",
        str(USER_CONFIGS_WAIT_SECONDS),
        *pairs,
    ]


# --- Interrupted HF -> Megatron conversions --------------------------------------------------------------
# NeMo-RL takes its one-time conversion as done once `iter_0000000` exists, which Megatron-Bridge creates first
# (pod_programs/megatron_import_guard.py has the write order and its sources): a Megatron run first checks for a
# partial conversion and removes it, so NeMo-RL converts again instead of loading half a checkpoint.
MEGATRON_GUARD_SCRIPT = pod_programs.MEGATRON_GUARD.name


# NeMo-RL's first choice of the conversion directory (nemo_rl/models/policy/utils.py get_megatron_checkpoint_dir,
# v0.4.0-v0.7.0); the driver hands its environment to the workers, where the conversion runs.
MEGATRON_DIR_ENV = "NRL_MEGATRON_CHECKPOINT_DIR"
MEGATRON_EXPERIMENT_DIR = "megatron"  # under an experiment's own directory (the mount root in its pods)


def megatron_shared_dir(mount_path: str) -> str:
    """Where NeMo-RL converts without the variable (HF_HOME/nemo_rl): complete conversions are shared there."""
    return f"{hf_home(mount_path)}/nemo_rl"


def megatron_run_dir(mount_path: str, run_name: str, shared: Optional[str] = None) -> str:
    return f"{shared or megatron_shared_dir(mount_path)}/.runs/{run_name}"


def experiment_megatron_dir(mount_path: str) -> str:
    """An experiment's conversions, in its own directory: its Ray pods mount the shared cache read-only."""
    return f"{mount_root(mount_path)}/{MEGATRON_EXPERIMENT_DIR}"


def megatron_guard_command(
    model_name: str,
    scripts_dir: str = SCRIPTS_DIR,
    *,
    own: Optional[str] = None,
    shared: Optional[str] = None,
    hf_overrides_hash: Optional[str] = None,
) -> list[str]:
    """argv of the check, with the policy.model_name NeMo-RL receives, the run's own and the shared conversion
    directories, and v0.7.0's hf_config_overrides suffix."""
    argv = ["uv", "run", "python", f"{scripts_dir}/{MEGATRON_GUARD_SCRIPT}", "--model-name", model_name]
    argv += ["--own", own] if own else []
    argv += ["--shared", shared] if shared else []
    argv += ["--hf-overrides-hash", hf_overrides_hash] if hf_overrides_hash else []
    return argv


# --- Readiness gate ----------------------------------------------------------------------------------
# The gate program and its decision module, side by side in the same ConfigMap (the program imports the module
# by name from its own directory). Its options come from core.gate.options().
GATE_SCRIPT = pod_programs.READINESS_GATE.name
GATE_MODULE = pod_programs.GATE_CHECKS.name


def gate_command(options: list[str], scripts_dir: str = SCRIPTS_DIR) -> list[str]:
    """argv of the readiness gate, run from the NeMo-RL work directory with its `uv run python` like the other
    steps: NeMo-RL's environment has Ray, torch and NVML's binding, all the gate imports."""
    return ["uv", "run", "python", f"{scripts_dir}/{GATE_SCRIPT}", *options]
