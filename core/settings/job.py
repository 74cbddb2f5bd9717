"""The NeMo-RL job: whether a job runs, which recipe, where, under which run name; and its rules.

The recipe itself is resolved once per run by `load_settings` (core.recipes.resolve) and kept on the
settings as `Settings.recipe`; the rules here check what it asks of the cluster.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import field_validator

from core import catalog, data, recipes
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    BOTH,
    IN_PLACE,
    INT32_ABOVE,
    LOGS_TO_WANDB,
    ON_EXPERIMENT,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    Bad,
    DayTwo,
    setting,
)
from core.settings.workload import workers_valid
from core.weights import STAGING_TOUCHES

if TYPE_CHECKING:
    from core.settings import Settings, UncheckedSettings


class JobSettings(Section):
    """The job* and runName config keys: whether a job runs, which recipe, and under which run name."""

    enabled: bool = setting(
        True,
        key="jobEnabled",
        description="Submit the NeMo-RL job (false: cluster only).",
        owner=BOTH,
        day_two=DayTwo(
            IN_PLACE,
            where={LOGS_TO_WANDB: SAFE_REPLACEMENT},
            touches=(
                "RayJob rayjob",
                "RayCluster raycluster",
                "Secret tokens",
                "Job *",
                "BucketIAMMember *",
                "Folder *",
                "ManagedFolder*",
                "ServiceAccount export-ksa",
                "NetworkPolicy *",
                "FQDNNetworkPolicy *",
                *STAGING_TOUCHES,
                "NodePool cpu",  # the CPU pool's maximum counts the platform's job
                "ClusterQueue kueue-*",  # and the queue's CPU quota its head and submitter
                "Dashboard dashboard",  # its Ray charts follow the job's own cluster, or the standing one
            ),
            note=(
                "the RayJob goes (that is the setting); the standing cluster keeps its head and scales its GPU "
                "workers to none in place; the tokens Secret drops the W&B netrc (Secrets are replaced, never updated)"
            ),
        ),
        bad=("maybe",),
        alternatives=({"jobEnabled": False},),
    )
    recipe: Optional[str] = setting(
        None,
        key="jobRecipe",
        description=(
            "Built-in recipe name, or none: the config jobOverrides.config_path names (shipped, or yours from "
            "jobConfigFiles) runs as written, the program setting only the run's checkpoint and log paths, the "
            "pinned model snapshot and one W&B run across attempts; default: gemma3-27b-gsm8k."
        ),
        owner=BOTH,
        rule="core.recipes.resolve",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "RayJob rayjob",
                "RayCluster raycluster",
                "Job *",
                "NodePool gpu-*",
                "DaemonSet cpu-prepull",
                "FQDNNetworkPolicy *",
                "Secret tokens",
                "NodePool cpu",  # the CPU pool's maximum counts the job's CPU pods, which follow the recipe
            ),
            note="a new run",
        ),
        bad=("x", Bad("none", refusal="none runs a NeMo-RL config as written; name it with")),
        alternatives=({"jobRecipe": "qwen2.5-72b-deepscaler"}, {"jobRecipe": "gemma3-27b-gsm8k"}),
        stack_alternatives={
            "dev": {"jobRecipe": "qwen2.5-72b-deepscaler", "gpuNodes": 8},
            "autopilot": {"jobRecipe": "qwen2.5-72b-deepscaler", "workerReplicas": 8},
            "codelab": {"jobRecipe": "gemma3-27b-gsm8k", "nemoRlRelease": "v0.5.0"},
            "codelab-exp1": {
                "jobRecipe": "gemma3-27b-gsm8k",
                "nemoRlRelease": "v0.5.0",
                "jobOverrides": {"wandb_enabled": False},
            },
            "codelab-exp3": {
                "jobRecipe": "gemma3-27b-gsm8k",
                "nemoRlRelease": "v0.5.0",
                "jobOverrides": {"wandb_enabled": False},
            },
            "codelab-exp2": {
                "jobRecipe": "qwen2.5-72b-deepscaler",
                "workerReplicas": 4,
                "jobOverrides": {"num_nodes": 4, "wandb_enabled": False},
            },
        },
    )
    overrides: dict[str, Any] = setting(
        default_factory=dict,
        key="jobOverrides",
        description=(
            "Recipe fields to override, and any key of the release's NeMo-RL config as a dotted key (a leading '+' "
            "adds a key the config lacks), checked offline against that config (JSON object)."
        ),
        owner=BOTH,
        rule="core.recipes.resolve",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("RayJob rayjob", "Job export"),
            note="a new run, which resumes from the newest checkpoint when the run name is unchanged",
        ),
        bad=(
            "[]",
            '{"x": 1}',
            '{"num_nodes": 3}',
            '{"num_nodes": "x"}',
            '{"model_revision": "main"}',
            '{"policy.optimizer.kwargs.learning_rate": 1e-6}',
            '{"policy.optimizer.kwargs.lr": "fast"}',
            '{"+grpo.seed": 7}',
            '{"grpo.max_num_steps": 5}',
            '{"policy.generation.temperature": "1\'"}',
            '{"config_path": "examples/configs/grpo_math_9B.yaml"}',
            '{"config_path": "examples/configs/dpo.yaml"}',
            '{"model_name": "Qwen/Qwen3-8B", "model_params": 8200000000, "model_revision": "v1.0"}',
            '{"model_name": "Qwen/Qwen3-8B", "model_params": 8200000000}',
            '{"model_name": "Qwen/Qwen3-8B", "model_revision": "b968826d9c46dd6066d109eabc6255188de91218"}',
        ),
        alternatives=({"jobOverrides": {"max_num_steps": 5}},),
        stack_alternatives={
            "codelab-exp1": {"jobOverrides": {"num_nodes": 4, "max_num_steps": 5}},
            "codelab-exp3": {"jobOverrides": {"num_nodes": 4, "max_num_steps": 5, "grpo.seed": 7}},
            "codelab-exp2": {"jobOverrides": {"wandb_enabled": False, "max_num_steps": 5}},
        },
    )
    config_files: dict[str, str] = setting(
        default_factory=dict,
        key="jobConfigFiles",
        description=(
            "Your own NeMo-RL config files: install path under /opt/nemo-rl (examples/configs/...yaml, next to "
            "the shipped config it inherits from with defaults:) -> file in this Pulumi project. Each stack ships "
            "its own: a platform's job in the job-scripts ConfigMap, an experiment's in a ConfigMap of its own that "
            "only its RayJob mounts; installed before training (an edited file replaces the copy an earlier job "
            "installed), validated like the release's own; name one with jobOverrides.config_path (JSON object). "
            "A stack without a job of its own (jobEnabled false) refuses them."
        ),
        owner=BOTH,
        rule="core.recipes.resolve",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("ConfigMap job-scripts", "ConfigMap job-configs", "RayJob rayjob"),
            note="the files' ConfigMap and a new RayJob",
        ),
        bad=(
            '{"configs/mine.yaml": "mine.yaml"}',
            '{"examples/configs/mine.yaml": "no-such-file.yaml"}',
            # A file name that makes a ConfigMap key over 253 characters (core.catalog.K8S_CONFIGMAP_KEY_MAX).
            json.dumps(
                {f"examples/configs/{'m' * 230}.yaml": "nemo-rl-reference/v0.5.0/examples/configs/grpo_math_1B.yaml"}
            ),
        ),
        alternatives=(
            {
                "jobConfigFiles": {
                    "examples/configs/mine.yaml": "nemo-rl-reference/v0.5.0/examples/configs/grpo_math_1B.yaml"
                }
            },
        ),
    )
    data: Optional[dict[str, Any]] = setting(
        None,
        key="jobData",
        description=(
            "Your own training data and, optionally, validation data read with the same columns (JSON object): "
            '{"train": {"dataset": ..., "revision": ..., "inputKey": ..., "outputKey": ..., "split" or "files": ...}, '
            '"validation": {...}}. dataset: a Hub dataset id (revision: its 40-hex commit), a gs:// prefix or object, '
            "or a path under lustreMountPath; inputKey / outputKey: the prompt and answer columns (default input / "
            "output). A CPU Job stages it on Lustre and checks it (files, columns, rows) before any GPU is asked for; "
            "NeMo-RL reads it with ResponseDataset."
        ),
        owner=BOTH,
        rule="core.data",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "RayJob rayjob",
                "Job *",
                "ServiceAccount data-ksa",
                "BucketIAMMember data-read-*",
                "NetworkPolicy *",
                "FQDNNetworkPolicy *",
            ),
            note="a new run on the new data: its own staged files, checked by the staging Job, and its own run name",
        ),
        bad=(
            '{"train": {"dataset": "agentica-org/DeepScaleR-Preview-Dataset"}}',
            '{"train": {"dataset": "agentica-org/DeepScaleR-Preview-Dataset", "revision": "main"}}',
            '{"train": {"dataset": "s3://bucket/train.jsonl"}}',
            '{"train": {"dataset": "gs://my-bucket/data/train.jsonl", "revision": "' + "a" * 40 + '"}}',
            '{"train": {"dataset": "/elsewhere/train.jsonl"}, "validation": {"dataset": "/lustre/data/val.jsonl"}}',
            '{"validation": {"dataset": "gs://my-bucket/data/val.jsonl"}}',
            '{"train": {"dataset": "gs://my-bucket/data/", "inputKey": "messages"}}',
        ),
        alternatives=(
            {
                "jobData": {
                    "train": {
                        "dataset": "agentica-org/DeepScaleR-Preview-Dataset",
                        "revision": catalog.DATASETS["agentica-org/DeepScaleR-Preview-Dataset"].revision,
                        "inputKey": "problem",
                        "outputKey": "answer",
                    },
                    "validation": {
                        "dataset": "HuggingFaceH4/aime_2024",
                        "revision": catalog.DATASETS["HuggingFaceH4/aime_2024"].revision,
                        "split": "train",
                    },
                }
            },
        ),
    )
    mode: Optional[Literal["standing-cluster", "own-cluster"]] = setting(
        None,
        key="jobMode",
        description=(
            "Where the RayJob runs: the platform's standing RayCluster, or a cluster of its own that comes and goes "
            "with it (its GPU nodes go when it ends). Default: own-cluster where the platform queues its jobs "
            "(queue kueue: Kueue manages no RayJob on an existing cluster), else standing-cluster. An experiment "
            "stack (platformStack) always runs own-cluster."
        ),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=(
                "RayJob rayjob",
                "RayCluster raycluster",
                "Dashboard dashboard",
                "NodePool cpu",
                "ClusterQueue kueue-*",
            ),
            note="an experiment runs its own cluster anyway",
        ),
        bad=("x",),
        alternatives=({"jobMode": "own-cluster"},),
        # codelab queues its job, so its default is own-cluster already.
        stack_alternatives={"codelab": {"jobMode": "standing-cluster"}},
    )
    # Both are int32 in the RayJob CRD (core.catalog.K8S_INT32_MAX).
    backoff_limit: int = setting(
        3,
        key="jobBackoffLimit",
        description=(
            "Retries after a failed attempt (a lost spot node, a failed gate): attempts = retries + 1, each resuming "
            "from the run's newest checkpoint. own-cluster: the RayJob's backoffLimit (KubeRay starts a new cluster "
            "per attempt); standing-cluster: the entrypoint's own loop (pod_programs/attempts.py), which waits for the "
            "GPUs to come back and reruns the gate. An experiment stack always runs own-cluster."
        ),
        ge=0,
        le=catalog.K8S_INT32_MAX,
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            # With jobMode own-cluster (its alternative), jobMode's: the CPU pool's maximum and the queue's CPU quota.
            touches=(
                "RayJob rayjob",
                "RayCluster raycluster",
                "Dashboard dashboard",
                "NodePool cpu",
                "ClusterQueue kueue-*",
            ),
            note="a new RayJob (with jobMode own-cluster, where KubeRay retries)",
        ),
        bad=(-1, INT32_ABOVE),
        alternatives=({"jobMode": "own-cluster", "jobBackoffLimit": 1},),
    )
    ttl_seconds: int = setting(
        0,
        key="jobTtlSeconds",
        description=(
            "own-cluster mode: seconds the GPU cluster stays after the job ends (0: deleted at once); the RayJob "
            "object stays until pulumi destroy or a job change."
        ),
        ge=0,
        le=catalog.K8S_INT32_MAX,
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            # With jobMode own-cluster (its alternative), jobMode's: the CPU pool's maximum and the queue's CPU quota.
            touches=(
                "RayJob rayjob",
                "RayCluster raycluster",
                "Dashboard dashboard",
                "NodePool cpu",
                "ClusterQueue kueue-*",
            ),
        ),
        bad=(-1, 5, INT32_ABOVE),
        alternatives=({"jobMode": "own-cluster", "jobTtlSeconds": 60},),
    )
    run_name: Optional[str] = setting(
        None,
        key="runName",
        description=(
            "Run name (checkpoint directory). Default: <recipe>-<stack>-<fingerprint of what the run trains>, so a "
            "change that alters training starts a new run and one that extends or observes it resumes."
        ),
        owner=BOTH,
        rule="core.recipes.model",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("RayJob rayjob", "Job export"),
            note="a new RayJob under another checkpoint directory",
        ),
        bad=("a b", "../x"),
        alternatives=({"runName": "run-2"},),
    )
    start_from: Optional[str] = setting(
        None,
        key="jobStartFrom",
        description=(
            "Start a new run from another run's checkpoint, '<run name>/step_<N>' under <lustreMountPath>/checkpoints "
            "(N as NeMo-RL writes it, below max_num_steps): the run name's fingerprint includes it, and it is "
            "hard-linked into this run's directory while it has no checkpoint of its own, then NeMo-RL resumes "
            "from it (weights, optimizer and its learning-rate schedule, data position and step count: a new "
            "learning rate does not apply to a resumed optimizer)."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob", "Job export")),
        bad=("old-run", "old-run/40", "../old/step_1"),
        alternatives=({"jobStartFrom": "grpo-other/step_10"},),
    )
    deadline_seconds: Optional[int] = setting(
        None,
        key="jobDeadlineSeconds",
        description=(
            "The RayJob's activeDeadlineSeconds, per attempt: past it KubeRay marks the job Failed (no retry) and, in "
            "own-cluster mode, deletes its GPU cluster; a standing cluster and its Ray job stay. Default: from the "
            "recipe (startup allowance + max_num_steps x step_budget_seconds); 0: no deadline. Changed in place."
        ),
        ge=0,
        le=catalog.K8S_INT32_MAX,
        owner=BOTH,
        day_two=DayTwo(IN_PLACE, touches=("RayJob rayjob",)),
        bad=(-1, INT32_ABOVE),
        alternatives=({"jobDeadlineSeconds": 86400},),
    )

    @field_validator("overrides", "config_files", "data", mode="before")
    @classmethod
    def _overrides_from_json(cls, v: Any) -> Any:
        # Pulumi hands structured config to the program as a JSON string.
        if isinstance(v, str):
            try:
                return json.loads(v)
            except json.JSONDecodeError:
                return v  # left to the dict validation, which reports it against jobOverrides
        return v


def check(s: "UncheckedSettings") -> list[str]:
    """Where the RayJob runs and, for the resolved recipe, its cluster fit (the recipe's own problems come from
    core.recipes.resolve)."""
    p = _mode_problems(s) + _start_from_problems(s) + _config_files_problems(s)
    if s.recipe is not None:
        p += data.lustre_problems(s.recipe.data, s.workload.lustre_mount_path)
    acc = catalog.ACCELERATORS.get(s.gpu.gpu_type)  # an unknown type is reported by the gpu rules
    # A refused worker or node count is reported by its own rule, not measured against the recipe.
    if s.recipe is None or not s.job.enabled:
        return p
    if s.job.deadline_seconds is None:
        p.extend(recipes.deadline_problems(s.recipe, s.job))
    if acc is None or not workers_valid(s):
        return p
    return p + recipes.fit_problems(
        s.recipe,
        s.job,
        worker_replicas=s.worker_replicas,
        gpus_per_node=acc.gpus_per_node,
        max_nodes=None if s.autopilot else s.gpu.nodes,
        gpu_memory_gib=acc.gpu_memory_gib,
        release=s.workload.release,
    )


def _config_files_problems(s: "UncheckedSettings") -> list[str]:
    """Config files on a stack that runs no job of its own would reach no job: each stack ships its own files (an
    experiment's own ConfigMap), so a platform's are not handed to its experiments."""
    if s.job.enabled or not s.job.config_files:
        return []
    return [
        f"{key('jobConfigFiles')}: this stack runs no job of its own ({key('jobEnabled')} is false), so no job would "
        "install these files; set them on the experiment stack whose job names them, or remove them"
    ]


# NeMo-RL names a checkpoint `step_{total_steps + 1}` (nemo_rl/algorithms/grpo.py: init_tmp_checkpoint(total_steps + 1,
# ...), v0.4.0 L1278; nemo_rl/utils/checkpoint.py `tmp_step_{step}` renamed to `step_{step}`): a decimal number from 1,
# without leading zeros. `step_040` or `step_0` is never written.
START_FROM_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,99})/step_([1-9][0-9]*)")


def _start_from_problems(s: "UncheckedSettings") -> list[str]:
    v = s.job.start_from
    if v is None:
        return []
    m = START_FROM_RE.fullmatch(v)
    if m is None or ".." in v or recipes.run_name_problem(m.group(1)):
        return [
            f"{key('jobStartFrom')}: {v!r} is not '<run name>/step_<N>' (a run directory under "
            "<lustreMountPath>/checkpoints and one of its checkpoints, e.g. gemma3-27b-gsm8k-dev-1a2b3c4d/step_40)"
        ]
    if s.recipe is not None and m.group(1) == s.run_name:
        return [f"{key('jobStartFrom')}: {v!r} is this run's own checkpoint; it resumes from it without jobStartFrom"]
    step = int(m.group(2))
    if s.recipe is not None and s.recipe.max_num_steps <= step:
        # NeMo-RL's loop runs while total_steps < max_num_steps (grpo.py `grpo_train`): resumed at step N it would
        # train nothing, exit 0, and the export would take the start point as this run's result.
        return [
            f"{key('jobStartFrom')}: {v!r} starts at step {step}, but the run stops at max_num_steps "
            f"{s.recipe.max_num_steps}, so it would train nothing; raise {key('jobOverrides')}{_steps_key(s)} above "
            f"{step}"
        ]
    return []


def _steps_key(s: "UncheckedSettings") -> str:
    """How a stack raises its run's steps: the recipe field, or the config's own key for a config run as written."""
    return '["grpo.max_num_steps"]' if s.recipe is not None and recipes.as_written(s.recipe) else ".max_num_steps"


def _nodes_key(s: "UncheckedSettings") -> str:
    return '["cluster.num_nodes"]' if s.recipe is not None and recipes.as_written(s.recipe) else ".num_nodes"


def deadline_seconds(s: "Settings") -> Optional[int]:
    """activeDeadlineSeconds of the RayJob: jobDeadlineSeconds (0: none), else the recipe's."""
    if s.job.deadline_seconds is not None:
        return s.job.deadline_seconds or None
    return recipes.job_deadline_seconds(s.recipe)


def _mode_problems(s: "UncheckedSettings") -> list[str]:
    """Own-cluster keys with a standing cluster. KubeRay refuses a RayJob with `ttlSecondsAfterFinished` > 0 and
    `shutdownAfterJobFinishes` false (ray-operator/controllers/ray/utils/validation.go at v1.4.2,
    ValidateRayJobSpec: "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished";
    v1.7.0 validateDeletionConfiguration, the same), and from v1.6.0 a `backoffLimit` > 0 with a clusterSelector
    ("BackoffLimit is incompatible with ClusterSelector mode": utils/validation.go at v1.6.0 L321-322, commit
    5d59a37b3; docs/research/platform.md §1b); the standing-cluster RayJob renders neither, so a TTL would be dropped
    without a word, and its retries are the entrypoint's loop instead (recipes.Attempts). Compared with the
    defaults: the CLI passes Pulumi.yaml's
    default for every key."""
    if not s.job.enabled or s.job.mode != "standing-cluster":
        return []
    p = []
    fields = JobSettings.model_fields
    # jobBackoffLimit applies in both modes: standing-cluster retries are the entrypoint's loop, not KubeRay's.
    for fname, k in (("ttl_seconds", "jobTtlSeconds"),):
        if getattr(s.job, fname) != fields[fname].get_default():
            p.append(
                f"{key(k)}: only applies to {key('jobMode')} own-cluster; a standing cluster stays up and "
                "KubeRay takes no TTL for a RayJob that selects it; remove it or set jobMode to own-cluster"
            )
    return p


def warnings(s: "UncheckedSettings") -> list[str]:
    """Runnable but risky job settings, one line each naming the key (pulumi preview shows them): Megatron
    checkpoints at steps without validation (core.recipes.job_warnings; NVIDIA-NeMo/RL #1137, #834), GPU workers
    the job does not use."""
    if s.recipe is None or not s.job.enabled:
        return []
    return recipes.job_warnings(s.job, s.workload.release) + idle_gpu_warnings(s)


def _workers_key(s: "UncheckedSettings") -> str:
    """The key that decides how many GPU workers the cluster has: workerReplicas, else its default's source."""
    return key("gpuNodes" if s.workload.worker_replicas is None and not s.autopilot else "workerReplicas")


def default_mode(queue: str) -> Literal["standing-cluster", "own-cluster"]:
    """jobMode when unset: own-cluster where Kueue queues the jobs (a RayJob with clusterSelector is not managed by
    Kueue from v0.15.0: docs/research/kueue.md), so the platform's own job is admitted like an experiment's and its
    GPUs go when it ends; standing-cluster otherwise (the tutorials' shape)."""
    return "own-cluster" if queue == "kueue" else "standing-cluster"


def standing_workers(s: "UncheckedSettings") -> int:
    """GPU workers of the standing RayCluster. With the stack's own job on a cluster of its own (own-cluster), none:
    the standing cluster stays for interactive work on its head, and the job brings its workers (workerReplicas is
    the job's). Without a job of the stack's own (jobEnabled false: a platform for experiment stacks, or a platform
    whose run is over), none unless workerReplicas asks for them: experiments bring their own clusters, so no GPU
    node is billed while none runs. The Ray autoscaler is not used to get there (README "GPUs only while they
    train"; docs/research/platform.md §2-3: NeMo-RL checks cluster_resources() totals before creating a placement
    group, request_resources is one cluster-wide request each call overrides)."""
    if s.job.enabled and s.job.mode == "own-cluster":
        return 0
    if not s.job.enabled and s.workload.worker_replicas is None:
        return 0
    return s.worker_replicas


def idle_gpu_warnings(s: "UncheckedSettings") -> list[str]:
    """GPU workers no job uses hold (and bill) a GPU node each: the RayCluster keeps every replica up, while the
    job places cluster.num_nodes nodes' worth of work (its placement groups may land on any of the workers, so the
    readiness gate tests all of them: core.gate)."""
    n = standing_workers(s)
    if n <= 0:
        return []
    if not s.job.enabled:
        return [
            f"{_workers_key(s)}: {n} GPU worker(s) start with no job to run ({key('jobEnabled')} is false); each "
            "holds a GPU node, billed, until a job runs or the workers are removed"
        ]
    if s.recipe is None or n <= s.recipe.num_nodes:
        return []
    idle = n - s.recipe.num_nodes
    return [
        f"{_workers_key(s)}: {n} GPU workers but the job uses cluster.num_nodes={s.recipe.num_nodes}: {idle} "
        f"node(s) sit idle and billed; set {_workers_key(s)} to {s.recipe.num_nodes}, or raise "
        f"{key('jobOverrides')}{_nodes_key(s)} to use them"
    ]


def needs_wandb_key(s: "UncheckedSettings") -> bool:
    """True when the job logs to Weights & Biases, so the wandbApiKey secret must be set."""
    return bool(s.job.enabled and s.recipe is not None and s.recipe.wandb_enabled)


WANDB_KEY_MISSING = (
    f"{key('wandbApiKey')}: the recipe logs to Weights & Biases (logger.wandb_enabled) but the key "
    "is not set; run `pulumi config set --secret wandbApiKey <key>` or set "
    f"{key('jobOverrides')}.wandb_enabled to false"
)
