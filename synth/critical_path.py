"""Critical path to the first training step, from the engine's records and nominal durations.

`estimate(records)` turns an engine run into activities and schedules them as early as their dependencies
allow:

- every custom resource is an activity lasting what Pulumi waits for it (core.catalog
  NOMINAL_RESOURCE_SECONDS; a node pool created with nodes also waits for them to boot), after the resources
  it depends on (declared and per-property dependencies, a dependency on a component meaning all of its
  resources, and its explicit provider);
- a `batch/v1` Job that Pulumi awaits (no `pulumi.com/skipAwait`) splits into "created" and "ran": what
  depends on the Job waits for its run; a run lasts the bytes in its `nemo-rl-gke/download-bytes` annotation
  at the nominal Hub download rate, after its image is on a CPU node (the NeMo-RL image, or its own small
  image and packages);
- what happens outside Pulumi's waits is modelled from what the rendered objects ask Kubernetes for:
  GPU nodes start when a GPU pool exists and the first object whose pods request `nvidia.com/gpu` has been
  created (placeholders, the RayCluster, an own-cluster RayJob); the NeMo-RL image is pulled on them once a GPU
  pod using it exists; the same on CPU nodes (the system pool's nodes, or Autopilot nodes started by the first
  CPU pod); Ray head and workers start when their image is there; the job starts when the RayJob exists and
  Ray is up, and reaches its first step once the weights are on Lustre: from the prefetch Job when there is one
  (its run, whether the RayJob waits for it in the graph or the entrypoint waits for its marker), otherwise
  downloaded by the job itself after it started (the model of the RayJob's `spec.metadata.model`);
- the job's entrypoint (`spec.entrypoint`, core/recipes/commands.py `job_script`) runs its steps one after the other
  before NeMo-RL starts, each an activity after the previous one: the readiness gate (on warm nodes that passed it
  within its window, only its GPU part, when the rendered gate reuses passes), the wait for the prefetch marker
  (own-cluster mode: it ends when the prefetch Job's run does) or, without the prefetch Job, the download of the
  pinned weights, the check for an interrupted Megatron weight conversion;
- then NeMo-RL loads the weights from Lustre (RunFacts: every GPU node reads them once, at min(the instance's
  throughput, nodes x the primary NIC)), and the first step follows;
- the data staging Job (awaited; the RayJob depends on it) runs for a nominal time once the NeMo-RL image is on a
  CPU node.

The one-step-at-a-time estimate is the sum of every activity's duration: the same steps run one after the
other, as the seeds' procedure does; what the seeds do in one command (enabling every API) counts once. The bound
(`bound`) is what no procedure can avoid, from the same table (core.catalog NOMINAL_TABLE): for a fresh stack the
longer of the Lustre chain and the GPU chain plus the submission and the model load, for an experiment the steps
warm or cold nodes cannot skip. Not counted anywhere: a first run's HF->Megatron conversion and the first rollout.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from core import catalog as c
from core import images, prefetch, recipes
from pod_programs import attempts
from workloads.manifests.pod_security import ROLE_LABEL, ROLE_STAGING

SKIP_AWAIT = "pulumi.com/skipAwait"
LUSTRE_TYPE = "gcp:lustre/instance:Instance"
SERVICE = "gcp:projects/service:Service"
API_STEP = "enable the Google APIs"
GPU_RESOURCE = "nvidia.com/gpu"
FIRST_STEP = "first training step"


@dataclass(frozen=True)
class Activity:
    key: str
    label: str
    seconds: float
    source: str
    needs_all: tuple[str, ...] = ()
    needs_any: tuple[tuple[str, ...], ...] = ()  # each group: starts after the first of these finishes
    # Activities the seeds' procedure performs as ONE step (one command) count once, at the longest of them, in
    # the one-step-at-a-time estimate: the seeds enable every API with a single `gcloud services enable`.
    sequential_step: Optional[str] = None


@dataclass
class Estimate:
    activities: dict[str, Activity]
    start: dict[str, float]
    finish: dict[str, float]
    path: list[str] = field(default_factory=list)
    bound: Optional["Bound"] = None

    @property
    def first_step_seconds(self) -> float:
        return self.finish[FIRST_STEP]

    @property
    def sequential_seconds(self) -> float:
        steps: dict[str, float] = {}
        alone = 0.0
        for a in self.activities.values():
            if a.sequential_step is None:
                alone += a.seconds
            else:
                steps[a.sequential_step] = max(steps.get(a.sequential_step, 0.0), a.seconds)
        return alone + sum(steps.values())

    @property
    def dominant(self) -> str:
        """The longest activity on the critical path (its label)."""
        key = max(self.path, key=lambda k: self.activities[k].seconds)
        return self.activities[key].label

    @property
    def ratio(self) -> float:
        return self.first_step_seconds / self.sequential_seconds

    @property
    def bound_ratio(self) -> Optional[float]:
        return self.first_step_seconds / self.bound.seconds if self.bound and self.bound.seconds else None

    def format(self, stack: str) -> str:
        lines = [f"Critical path to the first training step (stack {stack}; nominal durations, see sources)", ""]
        width = max(len(self.activities[k].label) for k in self.path)
        lines.append(f"  {'start':>7}  {'finish':>7}  {'took':>7}  {'step':<{width}}  source")
        for k in self.path:
            a = self.activities[k]
            lines.append(
                f"  {_mmss(self.start[k]):>7}  {_mmss(self.finish[k]):>7}  {_mmss(a.seconds):>7}  "
                f"{a.label:<{width}}  {a.source}"
            )
        lines += [
            "",
            f"estimated time to the first step: {_minutes(self.first_step_seconds)}",
            f"one step at a time (this graph's steps one after the other, the seeds' way of working): "
            f"{_minutes(self.sequential_seconds)}",
            f"ratio: {self.ratio:.3f} (the graph needs {self.ratio:.1%} of the sequential time)",
        ]
        if self.bound is not None and self.bound_ratio is not None:
            lines += ["", *self.bound.format()]
            lines.append(
                f"first step {_minutes(self.first_step_seconds)} against its bound {_minutes(self.bound.seconds)}: "
                f"{self.bound_ratio:.2f}x (goal {GOALS[self.bound.kind]:g}x)"
            )
        lines.append(
            "Figures marked 'nominal estimate' have no published source (core/catalog/startup.py NOMINAL_TABLE). "
            "The estimate ends at the first step, the model load included; not counted: a first run's HF->Megatron "
            "weight conversion (once per model, kept on Lustre; no published duration) and the first rollout."
        )
        return "\n".join(lines) + "\n"


def _mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min ({int(round(seconds))} s)"


# --- reading the records -------------------------------------------------------------------------------------
def _label(r) -> str:
    return f"{r.type.split(':')[-1]} {r.name}"


def _annotations(r) -> dict:
    meta = r.inputs.get("metadata") or {}
    return meta.get("annotations") or {}


def _pod_specs(r) -> list[dict]:
    """Pod specs an object makes Kubernetes create (Job, Deployment, DaemonSet, RayCluster, RayJob)."""
    spec = r.inputs.get("spec") or {}
    if r.type in ("kubernetes:batch/v1:Job", "kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DaemonSet"):
        return [((spec.get("template") or {}).get("spec") or {})]
    if r.type == "kubernetes:ray.io/v1:RayJob":
        spec = spec.get("rayClusterSpec") or {}
    elif r.type != "kubernetes:ray.io/v1:RayCluster":
        return []
    pods = [(((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {})]
    pods += [((g.get("template") or {}).get("spec") or {}) for g in spec.get("workerGroupSpecs") or []]
    return [p for p in pods if p]


def _containers(pod: dict) -> list[dict]:
    return list(pod.get("initContainers") or []) + list(pod.get("containers") or [])


def _requests_gpu(pod: dict) -> bool:
    for ctr in _containers(pod):
        res = ctr.get("resources") or {}
        if GPU_RESOURCE in (res.get("limits") or {}) or GPU_RESOURCE in (res.get("requests") or {}):
            return True
    return False


def _uses_nemo_rl_image(pod: dict, job_images: frozenset = frozenset()) -> bool:
    """The pod runs the NeMo-RL image: the release's (from NGC or a registry copy) or the one the Ray pods run (a
    jobImage built on it)."""
    return any(images.is_nemo_rl_image(ctr.get("image")) or ctr.get("image") in job_images for ctr in _containers(pod))


def _nemo_rl_image_of(pods: list[dict], job_images: frozenset) -> Optional[str]:
    for pod in pods:
        for ctr in _containers(pod):
            ref = ctr.get("image")
            if images.is_nemo_rl_image(ref) or ref in job_images:
                return ref
    return None


def _ray_images(records: list[Any]) -> frozenset:
    """The images the Ray objects' pods run (the job's image, whatever its name)."""
    return frozenset(
        ctr.get("image")
        for r in records
        if r.custom and r.type in RAY_TYPES
        for pod in _pod_specs(r)
        for ctr in _containers(pod)
        if isinstance(ctr.get("image"), str)
    )


CLOUD_RUN_JOB = "gcp:cloudrunv2/job:Job"
STEP_LABEL = "nemo-rl-gke-step"  # infra/image_copy.py labels its jobs with their step
AR_HOST = "-docker.pkg.dev/"


def _cloud_run_args(r) -> list[str]:
    containers = (((r.inputs.get("template") or {}).get("template") or {}).get("containers")) or [{}]
    return [str(a) for a in containers[0].get("args") or []]


def _arg(args: list[str], flag: str) -> Optional[str]:
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


def _prewarmed_image(r) -> Optional[str]:
    """The image reference a prewarm job fills the streaming cache for (pod_programs/prewarm_image.py arguments)."""
    args = _cloud_run_args(r)
    repo, tag = _arg(args, "--repository"), _arg(args, "--tag")
    m = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)/repositories/([^/]+)", repo or "")
    t = re.fullmatch(r".*/packages/([^/]+)/tags/([^/]+)", tag or "")
    if not (m and t):
        return None
    return f"{m.group(2)}-docker.pkg.dev/{m.group(1)}/{m.group(3)}/{t.group(1)}:{t.group(2)}"


def _is_gpu_pool(r) -> bool:
    return bool(((r.inputs.get("nodeConfig") or {}).get("guestAccelerators")))


def _pool_nodes(r) -> int:
    return int(r.inputs.get("nodeCount") or r.inputs.get("initialNodeCount") or 0)


def _awaited_job(r) -> bool:
    return r.type == "kubernetes:batch/v1:Job" and str(_annotations(r).get(SKIP_AWAIT, "")).lower() != "true"


SLEEP = "time:index/sleep:Sleep"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def _duration(text: Any) -> Optional[float]:
    """A Go duration as pulumiverse-time's Sleep takes it ("90s", "1m30s"); None if it is not one."""
    if not isinstance(text, str) or not re.fullmatch(r"(?:\d+(?:\.\d+)?(?:h|m|s))+", text):
        return None
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in _DURATION_PART.findall(text))


def _model_in(rayjob) -> Optional[str]:
    """The model the job's entrypoint trains (`policy.model_name=`); a standing-cluster RayJob renders no
    spec.metadata."""
    m = re.search(r"policy\.model_name=(\S+)", str((rayjob.inputs.get("spec") or {}).get("entrypoint", "")))
    return m.group(1).strip("'\"") if m else None


def _is_data_staging(r) -> bool:
    """The data staging Job (workloads/data_staging.py), by its role label."""
    labels = (r.inputs.get("metadata") or {}).get("labels") or {}
    return labels.get(ROLE_LABEL) == ROLE_STAGING


def _download_bytes(r) -> int:
    return int(_annotations(r).get(c.DOWNLOAD_BYTES_ANNOTATION, 0))


@dataclass(frozen=True)
class EntrypointStep:
    key: str
    label: str
    nominal: c.Nominal
    waits_for_weights: bool = False
    downloads_weights: bool = False


# The entrypoint's programs before training, by script file name (core/recipes/commands.py job_script renders them).
_ENTRYPOINT_STEPS: dict[str, tuple[str, c.Nominal]] = {
    recipes.GATE_SCRIPT: ("readiness gate (GPU health, Lustre, NCCL over RDMA)", c.NOMINAL_GATE_SECONDS),
    recipes.MEGATRON_GUARD_SCRIPT: ("check for an interrupted Megatron weight conversion", c.NOMINAL_SCRIPT_SECONDS),
}


def _script_commands(script: str) -> list[list[str]]:
    """The script's commands; the bounded-attempts line (recipes.Attempts) stands for the steps it runs."""
    out: list[list[str]] = []
    for line in script.splitlines():
        argv = shlex.split(line)
        if argv[:4] == ["exec", "uv", "run", "python"] and argv[4:5] and argv[4].endswith(recipes.ATTEMPTS_SCRIPT):
            out.extend(attempts.split_steps(argv[argv.index("--") + 1 :]))  # as the loop program splits them
            continue
        out.append(argv)
    return out


GATE_FAST_LABEL = "readiness gate on nodes with a recent pass (GPU health, Lustre mount)"
GSM8K_WARM_LABEL = "GSM8K already prepared on Lustre (its marker)"


def _option(argv: list[str], flag: str) -> Optional[str]:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def gate_reuses_passes(argv: list[str]) -> bool:
    """The rendered gate skips its sweeps on nodes with a recent pass (core/gate.py: a records directory and a window
    above zero)."""
    window = _option(argv, "--node-pass-window-seconds")
    return bool(_option(argv, "--node-records-dir")) and window is not None and float(window) > 0


def entrypoint_steps(rayjob, warm: bool = False) -> list[EntrypointStep]:
    """The steps of the RayJob's `sh -c` script before the training command, in order; empty when the entrypoint
    is not such a script. `warm`: its nodes passed the full gate within the window, so a gate that reuses passes
    runs only its GPU part."""
    words = shlex.split(str((rayjob.inputs.get("spec") or {}).get("entrypoint", "")))
    if len(words) != 3 or words[:2] != ["sh", "-c"]:
        return []
    steps: list[EntrypointStep] = []
    for i, argv in enumerate(_script_commands(words[2])):
        program = argv[3].rsplit("/", 1)[-1] if argv[:3] == ["uv", "run", "python"] and len(argv) > 3 else None
        if argv[:1] == ["exec"] or (
            program is not None and program not in _ENTRYPOINT_STEPS and program != prefetch.SCRIPT
        ):
            break  # the training command (exec'd, or followed by the export)
        if program == prefetch.SCRIPT and "download" in argv:
            # Without the prefetch Job (prefetchWeights false) the entrypoint downloads the pinned snapshot itself.
            size = sum(
                c.MODELS[m.group(1)].weight_bytes
                for item in argv
                if (m := re.fullmatch(r"model:(.+)@[0-9a-f]{40}", item)) and m.group(1) in c.MODELS
            )
            rate = c.NOMINAL_HF_DOWNLOAD_BYTES_PER_S
            steps.append(
                EntrypointStep(
                    f"entrypoint {i}",
                    f"the entrypoint downloads {size / 1e9:.0f} GB of pinned weights",
                    c.Nominal(
                        size / rate.seconds, f"{size / 1e9:.0f} GB at {rate.seconds / 1e6:.0f} MB/s ({rate.source})"
                    ),
                    downloads_weights=True,
                )
            )
        elif program == prefetch.SCRIPT and "wait" in argv:
            steps.append(
                EntrypointStep(
                    f"entrypoint {i}",
                    "the entrypoint waits for the weights prefetch's marker",
                    c.Nominal(0, "ends when the prefetch Job's run does"),
                    waits_for_weights=True,
                )
            )
        elif program == recipes.GATE_SCRIPT and warm and gate_reuses_passes(argv):
            steps.append(EntrypointStep(f"entrypoint {i}", GATE_FAST_LABEL, c.NOMINAL_GATE_FAST_SECONDS))
        elif program == recipes.GSM8K_SCRIPT and warm:
            # A previous run prepared it: pod_programs/prepare_gsm8k.py finds its marker and ends at once.
            steps.append(EntrypointStep(f"entrypoint {i}", GSM8K_WARM_LABEL, c.NOMINAL_SCRIPT_SECONDS))
        elif program in _ENTRYPOINT_STEPS:
            label, nominal = _ENTRYPOINT_STEPS[program]
            steps.append(EntrypointStep(f"entrypoint {i}", label, nominal))
    return steps


def gate_argv(rayjob) -> Optional[list[str]]:
    """The readiness gate's command line in the RayJob's entrypoint, or None without a gate."""
    words = shlex.split(str((rayjob.inputs.get("spec") or {}).get("entrypoint", "")))
    if len(words) != 3 or words[:2] != ["sh", "-c"]:
        return None
    for argv in _script_commands(words[2]):
        if argv[:3] == ["uv", "run", "python"] and len(argv) > 3 and argv[3].endswith("/" + recipes.GATE_SCRIPT):
            return argv
    return None


# --- building the activities ---------------------------------------------------------------------------------
RAY_TYPES = ("kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayJob")


class _Graph:
    """The engine's records as a dependency graph: what a resource waits for, by activity key."""

    def __init__(self, records: list[Any]):
        self.by_urn = {r.urn: r for r in records}
        self.customs = [r for r in records if r.custom]
        self.children: dict[str, list[str]] = {}
        for r in records:
            if r.parent:
                self.children.setdefault(r.parent, []).append(r.urn)

    def custom_descendants(self, urn: str) -> list[str]:
        out, todo = [], list(self.children.get(urn, []))
        while todo:
            u = todo.pop()
            if u in self.by_urn and self.by_urn[u].custom:
                out.append(u)
            todo.extend(self.children.get(u, []))
        return out

    def done_key(self, urn: str) -> str:
        """The activity a dependent waits for: an awaited Job's run, else the resource itself."""
        return f"{urn}#ran" if _awaited_job(self.by_urn[urn]) else urn

    def resource_deps(self, r) -> tuple[str, ...]:
        """Declared and per-property dependencies and the explicit provider; a component stands for all of its
        resources."""
        urns = set(r.dependencies) | {u for v in r.property_dependencies.values() for u in v}
        if r.provider_urn:
            urns.add(r.provider_urn)
        out = set()
        for u in urns:
            if u not in self.by_urn or u == r.urn:
                continue
            if self.by_urn[u].custom:
                out.add(self.done_key(u))
            else:
                out.update(self.done_key(d) for d in self.custom_descendants(u) if d != r.urn)
        return tuple(sorted(out))


@dataclass
class _Demand:
    """What the rendered objects ask Kubernetes for, by the URNs that ask."""

    gpu_pools: list[str] = field(default_factory=list)
    cpu_pools: list[str] = field(default_factory=list)
    gpu_creators: list[str] = field(default_factory=list)  # objects whose pods request GPUs
    gpu_image_users: list[str] = field(default_factory=list)  # ... and run the NeMo-RL image
    cpu_image_users: list[str] = field(default_factory=list)  # CPU pods running the NeMo-RL image
    ray_workers_from: list[str] = field(default_factory=list)
    ray_head_from: list[str] = field(default_factory=list)
    prefetch_runs: list[str] = field(default_factory=list)  # the runs of awaited Jobs that download
    small_image_jobs: list[str] = field(default_factory=list)  # awaited Jobs in their own small image
    rayjobs: list[Any] = field(default_factory=list)
    staging_jobs: list[str] = field(default_factory=list)  # the data staging Job
    job_images: frozenset = frozenset()  # what the Ray pods run (the release's image, or a jobImage)
    gpu_pods: list[dict] = field(default_factory=list)  # the GPU pods running the image
    cpu_pods: list[dict] = field(default_factory=list)
    prewarms: dict[str, str] = field(default_factory=dict)  # image reference -> its prewarm job's URN
    streaming_pools: list[str] = field(default_factory=list)  # node pools with GKE image streaming on
    autopilot: bool = False
    has_cluster: bool = False  # False: an experiment stack, on its platform's nodes

    def note_pods(self, r) -> None:
        if r.type == CLOUD_RUN_JOB and (r.inputs.get("labels") or {}).get(STEP_LABEL) == "image-prewarm":
            ref = _prewarmed_image(r)
            if ref:
                self.prewarms[ref] = r.urn
        if r.type == "gcp:container/cluster:Cluster":
            self.has_cluster = True
            self.autopilot = bool(r.inputs.get("enableAutopilot"))
        if r.type == "gcp:container/nodePool:NodePool" and (
            ((r.inputs.get("nodeConfig") or {}).get("gcfsConfig") or {}).get("enabled")
        ):
            self.streaming_pools.append(r.urn)
        for pod in _pod_specs(r):
            if _requests_gpu(pod):
                self.gpu_creators.append(r.urn)
                if _uses_nemo_rl_image(pod, self.job_images):
                    self.gpu_image_users.append(r.urn)
                    self.gpu_pods.append(pod)
                if r.type in RAY_TYPES:
                    self.ray_workers_from.append(r.urn)
            elif _uses_nemo_rl_image(pod, self.job_images):
                self.cpu_pods.append(pod)
                self.cpu_image_users.append(r.urn)
                if r.type in RAY_TYPES:
                    self.ray_head_from.append(r.urn)
        if r.type == "kubernetes:ray.io/v1:RayJob":
            self.rayjobs.append(r)
        if _is_data_staging(r):
            self.staging_jobs.append(r.urn)

    @property
    def cpu_image_triggers(self) -> list[str]:
        """The CPU pods that bring the CPU nodes and the image on them. A RayJob is created only after the data staging
        Job ran (its graph edge), whose pod needs both: the staging Job is the first such pod, never the RayJob."""
        rayjobs = {r.urn for r in self.rayjobs} if self.staging_jobs else set()
        return [u for u in self.cpu_image_users if u not in rayjobs]


def _any_of(*groups: list[str]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(sorted(set(g))) for g in groups if g)


def _resource_activity(r, deps: tuple[str, ...], demand: _Demand) -> Activity:
    """What Pulumi waits for: the type's nominal duration (a Sleep's own), plus the nodes a pool is created with."""
    nominal = c.NOMINAL_RESOURCE_SECONDS.get(r.type, c.NOMINAL_DEFAULT_RESOURCE)
    seconds, source = nominal.seconds, nominal.source
    sleep = _duration(r.inputs.get("createDuration")) if r.type == SLEEP else None
    if sleep is not None:
        seconds, source = sleep, "its createDuration"
    if r.type == CLOUD_RUN_JOB:
        seconds, source = _cloud_run_job_seconds(r, nominal)
    if r.type == "gcp:container/nodePool:NodePool":
        (demand.gpu_pools if _is_gpu_pool(r) else demand.cpu_pools).append(r.urn)
        if _pool_nodes(r):
            node = c.NOMINAL_GPU_NODE_SECONDS if _is_gpu_pool(r) else c.NOMINAL_CPU_NODE_SECONDS
            seconds += node.seconds
            source = f"{source}; + {_pool_nodes(r)} node(s) created with the pool: {node.source}"
    step = API_STEP if r.type == SERVICE else None
    if r.type == CLOUD_RUN_JOB and (r.inputs.get("labels") or {}).get(STEP_LABEL):
        # One copy (and one prewarm) of every release: done by hand, one command each (`gcrane cp` of each tag in a
        # loop) the way the API step is counted, not once per release.
        step = str(r.inputs["labels"][STEP_LABEL])
    return Activity(r.urn, _label(r), seconds, source, needs_all=deps, sequential_step=step)


def _cloud_run_job_seconds(r, nominal: c.Nominal) -> tuple[float, str]:
    """What Pulumi waits for on a Cloud Run job run on create (run_execution_token): its execution. The image copy
    and the prewarm move the image's bytes at their nominal rates, after the task starts."""
    step = (r.inputs.get("labels") or {}).get(STEP_LABEL)
    rate = {"image-copy": c.NOMINAL_IMAGE_COPY_BYTES_PER_S, "image-prewarm": c.NOMINAL_IMAGE_PREWARM_BYTES_PER_S}.get(
        step or ""
    )
    if rate is None or not r.inputs.get("runExecutionToken"):
        return nominal.seconds, nominal.source
    size, start = c.NOMINAL_IMAGE_BYTES, c.NOMINAL_CLOUD_RUN_START_SECONDS
    return (
        start.seconds + size.seconds / rate.seconds,
        f"{start.source} + {size.seconds / 1e9:.0f} GB ({size.source}) at {rate.seconds / 1e6:.0f} MB/s "
        f"({rate.source})",
    )


def _release_copy(ref: Optional[str]) -> bool:
    """A registry copy of a NeMo-RL release (`<repository>/nemo-rl:<release>`), the image a platform prewarms and its
    Ray head runs; not an image of the experiment's own (jobImage)."""
    if not ref:
        return False
    name, _, tag = ref.partition("@")[0].rpartition(":")
    return name.endswith("/" + c.NEMO_RL_IMAGE_NAME) and tag in c.NEMO_RL_RELEASES


def _image_step(d: _Demand, pods: list[dict], pools: list[str]) -> tuple[float, str, str, tuple[str, ...]]:
    """(seconds, verb, source, what it waits for) of the NeMo-RL image reaching the nodes of `pools`: streamed from
    Artifact Registry when those nodes stream (GKE image streaming on the pools, Autopilot, or an experiment on its
    platform's nodes) and the image-streaming cache holds it (a prewarm job of this graph, or the platform's prewarm
    of its release copies); otherwise pulled whole, the first pull of a streamed image included ("during the first
    pull of an eligible image you might not notice the benefits", GKE image streaming page)."""
    size, rate = c.NOMINAL_IMAGE_BYTES, c.NOMINAL_IMAGE_PULL_BYTES_PER_S
    pull = (
        size.seconds / rate.seconds,
        "pulled",
        f"{size.seconds / 1e9:.0f} GB ({size.source}) at {rate.seconds / 1e6:.0f} MB/s ({rate.source})",
        (),
    )
    ref = _nemo_rl_image_of(pods, d.job_images)
    if ref is None or AR_HOST not in ref:
        return pull
    streams = (not d.has_cluster) or d.autopilot or any(p in d.streaming_pools for p in pools)
    if not streams:
        return pull
    stream = c.NOMINAL_IMAGE_STREAM_SECONDS
    if ref in d.prewarms:
        return stream.seconds, "streamed", f"{stream.source}; the cache prewarmed by this graph", (d.prewarms[ref],)
    if not d.has_cluster and _release_copy(ref):
        return stream.seconds, "streamed", f"{stream.source}; the platform prewarmed its copy of the release", ()
    seconds, _, source, _ = pull
    return seconds, "streamed (first pull, cold cache)", f"{source}; not prewarmed: the first pull gains nothing", ()


def _lustre_import_rate(records: Iterable[Any]) -> tuple[float, str]:
    """What an import into the stack's Lustre instance reaches: its throughput (capacity x tier, core/catalog/lustre.py)
    capped at importData's ceiling, with the figures it comes from."""
    for r in records:
        if r.type == LUSTRE_TYPE:
            gib, tier = int(r.inputs.get("capacityGib") or 0), int(r.inputs.get("perUnitStorageThroughput") or 0)
            rate = c.lustre_import_bytes_per_s(gib, tier)
            return rate, (
                f"{gib:,} GiB x {tier} MB/s per TiB = {gib / 1024 * tier / 1e3:.1f} GB/s, at most importData's "
                f"{c.LUSTRE_IMPORT_MAX_BYTES_PER_S / 1e9:.0f} GB/s (Managed Lustre 'Transfer data to and from Cloud "
                "Storage', Performance)"
            )
    return 0.0, "no Lustre instance in this graph"


def _job_run_activity(r, demand: _Demand, warm: bool = False, import_rate: tuple[float, str] = (0.0, "")) -> Activity:
    """An awaited Job's run: its download at the nominal Hub rate (or its import at the instance's rate), once its
    image is on a CPU node (the NeMo-RL image, shared with the pre-pull and the Ray head, or its own small image and
    packages). `warm`: the weights are in the platform's HF cache on Lustre already (a previous run prefetched the same
    pinned snapshot: the prefetch finds its marker and ends at once), and the job's datasets were staged by a previous
    run of the same data (the staging Job finds its markers)."""
    annotations = _annotations(r)
    real = _download_bytes(r)
    size = 0 if warm else real
    rate = c.NOMINAL_HF_DOWNLOAD_BYTES_PER_S
    if _is_data_staging(r):
        if warm:
            # A later run of the same data: every step of pod_programs/stage_data.py finds its marker and is skipped.
            quick = c.NOMINAL_SCRIPT_SECONDS
            return Activity(
                f"{r.urn}#ran",
                f"{_label(r)} finds the datasets staged",
                quick.seconds,
                quick.source + "; every step's marker on Lustre",
                needs_all=(r.urn, "image on CPU nodes"),
            )
        staging = c.NOMINAL_DATA_STAGING_SECONDS
        return Activity(
            f"{r.urn}#ran",
            f"{_label(r)} stages and checks the datasets",
            staging.seconds,
            staging.source,
            needs_all=(r.urn, "image on CPU nodes"),
        )
    if any(_uses_nemo_rl_image(p, demand.job_images) for p in _pod_specs(r)):
        runtime = "image on CPU nodes"
    else:
        runtime = f"{r.urn}#runtime"
        demand.small_image_jobs.append(r.urn)
    if real or c.PREFETCH_MARKER_ANNOTATION in annotations or c.IMPORT_BYTES_ANNOTATION in annotations:
        demand.prefetch_runs.append(f"{r.urn}#ran")  # the weights are on Lustre once it ran
    if c.IMPORT_BYTES_ANNOTATION in annotations:
        imported = int(annotations[c.IMPORT_BYTES_ANNOTATION])
        per_s, figures = import_rate
        overhead = c.NOMINAL_LUSTRE_IMPORT_OVERHEAD_SECONDS
        return Activity(
            f"{r.urn}#ran",
            f"{_label(r)} runs: {imported / 1e9:.0f} GB imported into Lustre",
            overhead.seconds + (imported / per_s if per_s else 0.0),
            f"{imported / 1e9:.0f} GB at {per_s / 1e9:.1f} GB/s ({figures}) + {overhead.seconds:.0f} s "
            f"({overhead.source})",
            needs_all=(r.urn, runtime),
        )
    return Activity(
        f"{r.urn}#ran",
        f"{_label(r)} runs: {size / 1e9:.0f} GB from the Hub" if size or not real else f"{_label(r)} finds its marker",
        size / rate.seconds,
        f"{size / 1e9:.0f} GB at {rate.seconds / 1e6:.0f} MB/s ({rate.source})"
        if size or not real
        else "warm platform: the pinned snapshot is in the platform's HF cache on Lustre",
        needs_all=(r.urn, runtime),
    )


# A warm platform (an experiment submitted while a previous run's GPU nodes are still up, their image cached): the
# cluster autoscaler removes an unneeded node only after `scale-down-unneeded-time` (default 10m,
# kubernetes/autoscaler cluster-autoscaler/FAQ.md), so a run started within that window finds both.
WARM_NODES_SOURCE = "warm platform: a previous run's GPU nodes still up (autoscaler scale-down-unneeded-time 10m)"
WARM_IMAGE_SOURCE = "warm platform: the image is already on those nodes"
# An experiment's CPU pods (its data staging Job, its own cluster's head) land on the platform's CPU nodes, which exist
# with the platform and hold the NeMo-RL image: the platform's standing Ray head runs it (and its pre-pull pulls it).
ON_PLATFORM_SOURCE = "an experiment: its platform's CPU nodes run, holding the image (the platform's Ray head)"
GKE_CLUSTER = "gcp:container/cluster:Cluster"


def _add_nodes_and_images(
    acts: dict[str, Activity], d: _Demand, by_urn: dict[str, Any], warm: bool = False, on_platform: bool = False
) -> None:
    """GPU and CPU nodes, the NeMo-RL image on them, and the small image of a Job that runs in its own. `warm`: the
    GPU nodes are up and hold the image already (WARM_NODES_SOURCE). `on_platform`: an experiment stack, whose CPU
    pods land on its platform's CPU nodes, which run the platform's Ray head (and its pre-pull) in the release's image
    (ON_PLATFORM_SOURCE), warm or cold; an image of the experiment's own (jobImage) reaches them as any image does."""
    cpu_warm = warm or (on_platform and _release_copy(_nemo_rl_image_of(d.cpu_pods, d.job_images)))
    # GPU nodes: a pool created with nodes already waited for them; otherwise the autoscaler (or Autopilot)
    # adds them once a GPU pod can be scheduled.
    pools_with_nodes = [u for u in d.gpu_pools if _pool_nodes(by_urn[u])]
    if pools_with_nodes:
        acts["GPU nodes"] = Activity(
            "GPU nodes",
            "GPU nodes up (created with the pool)",
            0,
            "included in the pool",
            needs_any=_any_of(pools_with_nodes),
        )
    elif d.gpu_creators:
        acts["GPU nodes"] = Activity(
            "GPU nodes",
            "GPU nodes already up" if warm else "GPU nodes provisioned for the first GPU pod",
            0 if warm else c.NOMINAL_GPU_NODE_SECONDS.seconds,
            WARM_NODES_SOURCE if warm else c.NOMINAL_GPU_NODE_SECONDS.source,
            needs_any=_any_of(d.gpu_pools, d.gpu_creators),
        )
    if "GPU nodes" in acts and d.gpu_image_users:
        seconds, verb, source, after = _image_step(d, d.gpu_pods, d.gpu_pools)
        acts["image on GPU nodes"] = Activity(
            "image on GPU nodes",
            "NeMo-RL image cached on the GPU nodes" if warm else f"NeMo-RL image {verb} on the GPU nodes",
            0 if warm else seconds,
            WARM_IMAGE_SOURCE if warm else source,
            needs_all=("GPU nodes", *after),
            needs_any=_any_of(d.gpu_image_users),
        )
    # CPU nodes: the system pool's nodes exist with the pool; without a CPU pool (Autopilot) they are created
    # for the first CPU pod.
    cpu_nodes_from: tuple[tuple[str, ...], ...]
    cpu_nodes_need: tuple[str, ...]
    if d.cpu_pools:
        cpu_nodes_from, cpu_nodes_need = _any_of(d.cpu_pools), ()
    else:
        acts["CPU nodes"] = Activity(
            "CPU nodes",
            "CPU node up" if cpu_warm else "CPU node provisioned for the first CPU pod",
            0 if cpu_warm else c.NOMINAL_CPU_NODE_SECONDS.seconds,
            (ON_PLATFORM_SOURCE if on_platform else "warm platform: its CPU nodes run")
            if cpu_warm
            else c.NOMINAL_CPU_NODE_SECONDS.source,
            needs_any=_any_of(d.cpu_image_triggers + d.small_image_jobs),
        )
        cpu_nodes_from, cpu_nodes_need = (), ("CPU nodes",)
    for urn in d.small_image_jobs:
        # Packages installed by an init container (the prefetch's, the staging's), or the bare small image.
        installs = any(p.get("initContainers") for p in _pod_specs(by_urn[urn]))
        runtime = c.NOMINAL_PREFETCH_RUNTIME_SECONDS if installs else c.NOMINAL_SMALL_IMAGE_START_SECONDS
        acts[f"{urn}#runtime"] = Activity(
            f"{urn}#runtime",
            f"{_label(by_urn[urn])}: its image{' and packages' if installs else ''} on a CPU node",
            runtime.seconds,
            runtime.source,
            needs_all=(urn, *cpu_nodes_need),
            needs_any=cpu_nodes_from,
        )
    if d.cpu_image_users:
        seconds, verb, source, after = _image_step(d, d.cpu_pods, d.cpu_pools)
        acts["image on CPU nodes"] = Activity(
            "image on CPU nodes",
            "NeMo-RL image cached on the CPU node" if cpu_warm else f"NeMo-RL image {verb} on a CPU node",
            0 if cpu_warm else seconds,
            # The platform's pre-pull DaemonSet (or its previous run's head) put it on the CPU pool.
            (ON_PLATFORM_SOURCE if on_platform else "warm platform: the platform's CPU pool holds the image")
            if cpu_warm
            else source,
            needs_all=(*cpu_nodes_need, *(() if cpu_warm else after)),
            needs_any=cpu_nodes_from + _any_of(d.cpu_image_triggers),
        )


def _add_ray(acts: dict[str, Activity], d: _Demand) -> None:
    """Ray head and workers start when their image is on their nodes and an object asks for their pods."""
    ray = c.NOMINAL_RAY_START_SECONDS
    if d.ray_workers_from and "image on GPU nodes" in acts:
        acts["Ray workers"] = Activity(
            "Ray workers",
            "Ray workers started",
            ray.seconds,
            ray.source,
            needs_all=("image on GPU nodes",),
            needs_any=_any_of(d.ray_workers_from),
        )
    if d.ray_head_from and "image on CPU nodes" in acts:
        acts["Ray head"] = Activity(
            "Ray head",
            "Ray head started",
            ray.seconds,
            ray.source,
            needs_all=("image on CPU nodes",),
            needs_any=_any_of(d.ray_head_from),
        )


# --- what the graph says about the run: the model, the nodes, Lustre ---------------------------------------------
LUSTRE = "gcp:lustre/instance:Instance"


@dataclass(frozen=True)
class RunFacts:
    """The sizes the model load and the bound depend on, read from the rendered objects: the weights' bytes (the
    catalog's model the job trains), the GPU nodes, the Lustre instance's throughput and the nodes' primary NIC (the
    gate's own options where it runs, else the instance and the machine type)."""

    model: Optional[str]
    weight_bytes: float
    nodes: int
    lustre_bytes_per_s: Optional[float]
    nic_bytes_per_s: Optional[float]
    gate: Optional[list[str]]

    @property
    def load_bytes_per_s(self) -> Optional[float]:
        if not (self.lustre_bytes_per_s and self.nic_bytes_per_s and self.nodes):
            return None
        return min(self.lustre_bytes_per_s, self.nodes * self.nic_bytes_per_s)

    def model_load(self) -> tuple[float, str]:
        """(seconds, source) of the model load from Lustre (core.catalog NOMINAL_MODEL_READS_PER_NODE)."""
        rate, reads = self.load_bytes_per_s, c.NOMINAL_MODEL_READS_PER_NODE
        if not rate or not self.weight_bytes:
            return 0.0, "not counted: the graph names no catalog model or no Lustre throughput"
        total = reads.seconds * self.nodes * self.weight_bytes
        which = "the Lustre instance" if rate == self.lustre_bytes_per_s else f"{self.nodes} x the primary NIC"
        return total / rate, (
            f"{self.nodes} nodes x {self.weight_bytes / 1e9:.0f} GB at {rate / 1e9:.2f} GB/s ({which}); each node "
            "reading the weights once is a nominal estimate"
        )


def _model_of(job) -> Optional[str]:
    """The catalog model the job trains: spec.metadata.model (own cluster), else policy.model_name, which with the
    prefetch is the pinned snapshot `<lustre>/models/<model>@<revision>`."""
    model = ((job.inputs.get("spec") or {}).get("metadata") or {}).get("model") or _model_in(job)
    if model in c.MODELS:
        return model
    m = re.search(r"/models/(.+)@[^/]+$", model or "")
    return m.group(1) if m and m.group(1) in c.MODELS else None


def _worker_replicas(records: list[Any]) -> int:
    n = 0
    for r in records:
        spec = r.inputs.get("spec") or {}
        if r.type == "kubernetes:ray.io/v1:RayJob":
            spec = spec.get("rayClusterSpec") or {}
        elif r.type != "kubernetes:ray.io/v1:RayCluster":
            continue
        n = max(n, sum(int(g.get("replicas") or 0) for g in spec.get("workerGroupSpecs") or []))
    return n


def _worker_machine_nic(records: list[Any]) -> Optional[float]:
    for r in records:
        for pod in _pod_specs(r):
            if _requests_gpu(pod):
                acc = c.ACCELERATORS.get((pod.get("nodeSelector") or {}).get("cloud.google.com/gke-accelerator", ""))
                if acc is not None:
                    return c.PRIMARY_NIC_GBITPS[acc.machine_type] / 8 * 1e9
    return None


def run_facts(records: list[Any]) -> Optional[RunFacts]:
    jobs = [r for r in records if r.custom and r.type == "kubernetes:ray.io/v1:RayJob"]
    if not jobs:
        return None
    job = jobs[0]
    model = _model_of(job)
    gate = gate_argv(job)
    nodes = int(_option(gate, "--nodes") or 0) if gate else 0
    lustre_bps = float(_option(gate, "--lustre-aggregate-gbps") or 0) * 1e9 if gate else 0.0
    nic_bps = float(_option(gate, "--primary-nic-gbps") or 0) * 1e9 if gate else 0.0
    if not lustre_bps:
        for r in records:
            if (
                r.custom
                and r.type == LUSTRE
                and r.inputs.get("capacityGib")
                and r.inputs.get("perUnitStorageThroughput")
            ):
                # capacity (GiB) x tier (MB/s per TiB): core/catalog/lustre.py, Managed Lustre "Performance tiers".
                lustre_bps = float(r.inputs["capacityGib"]) / 1024 * float(r.inputs["perUnitStorageThroughput"]) * 1e6
    return RunFacts(
        model=model,
        weight_bytes=float(c.MODELS[model].weight_bytes) if model else 0.0,
        nodes=nodes or _worker_replicas(records),
        lustre_bytes_per_s=lustre_bps or None,
        nic_bytes_per_s=nic_bps or _worker_machine_nic(records),
        gate=gate,
    )


MODEL_LOAD = "model load"
JOB_DOWNLOAD = "weights downloaded by the job"


# --- the bound: what no procedure can avoid, from the same table ---------------------------------------------------
FRESH, WARM, COLD = "a fresh stack", "an experiment, warm", "an experiment, cold"
# The goals for the ratio of the estimate to its bound (the project's targets for time to the first step).
GOALS = {FRESH: 1.1, WARM: 1.5, COLD: 1.2}


@dataclass(frozen=True)
class Term:
    label: str
    seconds: float
    source: str


@dataclass(frozen=True)
class Bound:
    """The longest of the chains that can run side by side, then the terms that follow one another."""

    kind: str
    chains: tuple[tuple[str, tuple[Term, ...]], ...]
    then: tuple[Term, ...]

    @staticmethod
    def _sum(terms: tuple[Term, ...]) -> float:
        return sum(t.seconds for t in terms)

    @property
    def seconds(self) -> float:
        return max((self._sum(t) for _, t in self.chains), default=0.0) + self._sum(self.then)

    @property
    def terms(self) -> list[Term]:
        return [t for _, terms in self.chains for t in terms] + list(self.then)

    def format(self) -> list[str]:
        def row(terms: tuple[Term, ...]) -> str:
            return " + ".join(f"{t.label} {_mmss(t.seconds)}" for t in terms)

        lines = [f"bound for {self.kind}: {_minutes(self.seconds)}"]
        if len(self.chains) > 1:
            lines.append("  the longer of, side by side:")
        for name, terms in self.chains:
            lines.append(f"    {name} ({_mmss(self._sum(terms))}): {row(terms)}")
        if self.then:
            lines.append(f"  then ({_mmss(self._sum(self.then))}): {row(self.then)}")
        return lines


def _n(key: str) -> c.Nominal:
    return c.NOMINAL_TABLE[key]


def _t(label: str, n: c.Nominal) -> Term:
    return Term(label, n.seconds, n.source)


def _resource(type_: str) -> c.Nominal:
    return c.NOMINAL_RESOURCE_SECONDS.get(type_, c.NOMINAL_DEFAULT_RESOURCE)


def bound(records: list[Any], warm: bool = False) -> Optional[Bound]:
    """The bound of the graph's kind, from the table (core.catalog NOMINAL_TABLE) and the run's sizes (RunFacts):
    - a fresh stack (the graph creates the cluster): the longer of the Lustre chain (the APIs enabled, private
      services access, Lustre created, the weights brought in at Lustre's speed, the gate's Lustre part) and the GPU
      chain (the APIs, the cluster, the GPU pool, a node boot, the image streamed, the Ray pods started, the gate's
      GPU and NCCL parts), plus the submission and the model load;
    - an experiment (on its platform's cluster) on warm nodes: the RayJob, Ray pods on nodes that hold the image, the
      driver, the GPU health check, the model load; cold: the RayJob, a node boot, the image streamed, the Ray pods,
      the driver, the gate's GPU and NCCL parts, the model load.
    Gate terms count only when the graph runs the gate. None without a RayJob."""
    records = [r for r in records if r.custom]
    facts = run_facts(records)
    if facts is None:
        return None
    gate = facts.gate is not None
    load_s, load_src = facts.model_load()
    load = Term("model load", load_s, load_src)
    submit = _t("driver", c.NOMINAL_JOB_SUBMIT_SECONDS)
    ray = _t("Ray pods", c.NOMINAL_RAY_START_SECONDS)
    stream = _t("image streamed", c.NOMINAL_IMAGE_STREAM_SECONDS)
    boot = _t("GPU node boot", c.NOMINAL_GPU_NODE_SECONDS)
    gpu_gate = (
        (Term("gate GPU+NCCL", c.NOMINAL_GATE_GPU_SECONDS.seconds + c.NOMINAL_GATE_NCCL_SECONDS.seconds, "gate parts"),)
        if gate
        else ()
    )
    rayjob = _t("RayJob", c.NOMINAL_DEFAULT_RESOURCE)
    if not any(r.type == "gcp:container/cluster:Cluster" for r in records):
        if warm:
            health = (_t("GPU health check", c.NOMINAL_GATE_FAST_SECONDS),) if gate else ()
            return Bound(WARM, (("nodes up, image cached", (rayjob, ray, submit, *health)),), (load,))
        return Bound(COLD, (("nodes from zero", (rayjob, boot, stream, ray, submit, *gpu_gate)),), (load,))
    wait = c.NOMINAL_API_PROPAGATION_SECONDS
    apis = Term(
        "APIs",
        _resource(SERVICE).seconds + wait.seconds,
        f"one Service ({_resource(SERVICE).source}) + the wait after enabling ({wait.source})",
    )
    lustre_bps = facts.lustre_bytes_per_s
    weights = Term(
        "weights in at Lustre speed",
        facts.weight_bytes / lustre_bps if lustre_bps else 0.0,
        f"{facts.weight_bytes / 1e9:.0f} GB at the instance's {lustre_bps / 1e9:.2f} GB/s (Managed Lustre tiers)"
        if lustre_bps
        else "not counted: no Lustre throughput in the graph",
    )
    lustre_gate = (_t("gate Lustre", c.NOMINAL_GATE_LUSTRE_SECONDS),) if gate else ()
    lustre_chain = (
        apis,
        _t("PSA", _resource("gcp:servicenetworking/connection:Connection")),
        _t("Lustre", _resource(LUSTRE)),
        weights,
        *lustre_gate,
    )
    gpu_chain = (
        apis,
        _t("cluster", _resource("gcp:container/cluster:Cluster")),
        _t("GPU pool", _resource("gcp:container/nodePool:NodePool")),
        boot,
        stream,
        ray,
        *gpu_gate,
    )
    return Bound(FRESH, (("Lustre chain", lustre_chain), ("GPU chain", gpu_chain)), (submit, load))


def _add_job(acts: dict[str, Activity], d: _Demand, graph: _Graph, facts: Optional[RunFacts], warm: bool) -> None:
    """The job starts when the RayJob exists and Ray is up, runs its entrypoint's steps in order, and reaches its
    first step once the weights are on Lustre (the prefetch's run, or its own download) and NeMo-RL has loaded them."""
    if not (d.rayjobs and "Ray workers" in acts and "Ray head" in acts):
        return
    job = d.rayjobs[0]
    submit = c.NOMINAL_JOB_SUBMIT_SECONDS
    acts["job started"] = Activity(
        "job started",
        "RayJob submitted, driver running",
        submit.seconds,
        submit.source,
        needs_all=(graph.done_key(job.urn), "Ray head", "Ray workers"),
    )
    last = "job started"
    steps = entrypoint_steps(job, warm)
    for step in steps:
        waits = tuple(sorted(d.prefetch_runs)) if step.waits_for_weights else ()
        acts[step.key] = Activity(
            step.key, step.label, step.nominal.seconds, step.nominal.source, needs_all=(last, *waits)
        )
        last = step.key
    weights: tuple[str, ...] = tuple(sorted(d.prefetch_runs))
    # Without the prefetch Job the entrypoint's own download step (entrypoint_steps) brings the weights; a job whose
    # entrypoint has none (a config run as written) downloads them itself before its first step.
    if not d.prefetch_runs and not any(step.downloads_weights for step in steps):
        model = _model_of(job)
        size = c.MODELS[model].weight_bytes if model else 0
        rate = c.NOMINAL_HF_DOWNLOAD_BYTES_PER_S
        acts[JOB_DOWNLOAD] = Activity(
            JOB_DOWNLOAD,
            f"the job downloads {size / 1e9:.0f} GB of weights",
            size / rate.seconds,
            f"{size / 1e9:.0f} GB at {rate.seconds / 1e6:.0f} MB/s ({rate.source})",
            needs_all=(last,),
        )
        weights = (JOB_DOWNLOAD,)
    seconds, source = facts.model_load() if facts else (0.0, "not counted: no RayJob facts")
    acts[MODEL_LOAD] = Activity(
        MODEL_LOAD, "NeMo-RL loads the weights from Lustre", seconds, source, needs_all=(last, *weights)
    )
    acts[FIRST_STEP] = Activity(
        FIRST_STEP, "weights loaded and job running: first step", 0, "end of the estimate", needs_all=(MODEL_LOAD,)
    )


def build(records: Iterable[Any], warm: bool = False) -> dict[str, Activity]:
    """Every activity of the run, keyed: the resources Pulumi waits for, then what Kubernetes does for them."""
    graph = _Graph(list(records))
    acts: dict[str, Activity] = {}
    demand = _Demand(job_images=_ray_images(graph.customs))
    import_rate = _lustre_import_rate(graph.customs)
    for r in graph.customs:
        acts[r.urn] = _resource_activity(r, graph.resource_deps(r), demand)
        if _awaited_job(r):
            acts[f"{r.urn}#ran"] = _job_run_activity(r, demand, warm, import_rate)
        demand.note_pods(r)
    # A stack that declares no cluster runs on its platform's (an experiment stack).
    on_platform = not any(r.type == GKE_CLUSTER for r in graph.by_urn.values())
    _add_nodes_and_images(acts, demand, graph.by_urn, warm, on_platform)
    _add_ray(acts, demand)
    _add_job(acts, demand, graph, run_facts(graph.customs), warm)
    return acts


# --- scheduling ------------------------------------------------------------------------------------------------
class DependencyCycle(ValueError):
    def __init__(self, key: str, label: str):
        super().__init__(f"dependency cycle through {label}")
        self.key = key


def schedule(acts: dict[str, Activity]) -> Estimate:
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    binding: dict[str, Optional[str]] = {}
    visiting: set[str] = set()

    def visit(k: str) -> float:
        if k in finish:
            return finish[k]
        if k in visiting:
            raise DependencyCycle(k, acts[k].label)
        visiting.add(k)
        try:
            a = acts[k]
            candidates = [(visit(d), d) for d in a.needs_all if d in acts]
            for group in a.needs_any:
                options = []
                for d in group:
                    if d not in acts:
                        continue
                    try:
                        options.append((visit(d), d))
                    except DependencyCycle as cycle:
                        # `d` waits for `k` itself (a CPU node made for the first CPU pod, and a later Job that runs
                        # after an earlier one's run on it): it cannot be what starts `k`.
                        if cycle.key != k:
                            raise
                if options:
                    candidates.append(min(options))
            t, why = max(candidates) if candidates else (0.0, None)
        finally:
            visiting.discard(k)
        start[k], binding[k] = t, why
        finish[k] = t + a.seconds
        return finish[k]

    for k in sorted(acts):
        visit(k)
    est = Estimate(acts, start, finish)
    if FIRST_STEP in acts:
        step: Optional[str] = FIRST_STEP
        while step is not None:
            est.path.append(step)
            step = binding[step]
        est.path.reverse()
    return est


def estimate(records: Iterable[Any], warm: bool = False) -> Estimate:
    """`warm`: an experiment on a warm platform (GPU nodes up, image cached, weights on Lustre, every node passed the
    full gate within its window); default: cold (nodes and image each time, as for a platform's first run). The
    estimate carries the bound of its kind (`bound`)."""
    records = list(records)
    est = schedule(build(records, warm))
    est.bound = bound(records, warm)
    return est
