"""The NeMo-RL GRPO job as a KubeRay `RayJob` spec (plain dicts, no Pulumi resources; workloads/nemo_rl_job.py
applies it as the last component of the graph).

Two modes (setting `jobMode`):
- `standing-cluster` (default, as the seeds do): `clusterSelector` to the standing RayCluster, K8sJobMode (a
  submitter pod inside the cluster; no laptop port-forward), no `backoffLimit` — KubeRay rejects it together
  with clusterSelector from 1.6 and before that a retry could delete the external cluster (kuberay #4516) —
  and no `spec.metadata`: every KubeRay before 1.5.0 dereferences the absent `rayClusterSpec` while building
  the submitter when a clusterSelector RayJob carries metadata (ray-operator/controllers/ray/common/job.go
  GetK8sJobCommand at v1.4.2, `GetMetadataJson(metadata, rayJobInstance.Spec.RayClusterSpec.RayVersion)`;
  nil check added by kuberay PR #4102 in 1.5.0), so the submitter is never created and the job stays in
  Initializing; GKE's add-on does not say which KubeRay it runs. The same facts go on the RayJob's annotations.
  Deleting the RayJob (`pulumi destroy`, or a recipe change, which replaces it) stops the Ray job and leaves
  the cluster. The RayJob is replaced whenever the RayCluster is (`replace_with`), so a new cluster always
  gets a new job.
- `own-cluster` (for spot capacity): the RayJob embeds the same head/worker templates and owns its cluster,
  with `backoffLimit` retries and `shutdownAfterJobFinishes`. KubeRay deletes the RayCluster
  `ttlSecondsAfterFinished` (`jobTtlSeconds`, default 0) after the job ends and keeps the RayJob object and its
  submitter Job (rayjob_controller.go: `handleShutdownAfterJobFinishes` at v1.7.0, the Complete/Failed case at
  v1.4.2; the RayJob itself is deleted only when the operator runs with DELETE_RAYJOB_CR_AFTER_JOB_FINISHES).
  A preempted run fails, KubeRay deletes the cluster, creates a new one and resubmits the same entrypoint, and
  NeMo-RL resumes from the newest `step_N` on Lustre because the run name — and so the checkpoint directory —
  is the same.

The entrypoint and runtime env come from `core.recipes`; the runtime env carries no secret (it is shown
in the Ray dashboard): the tokens are files in the Ray pods (workloads/manifests/pod_security.py), only their paths are
in any environment.

The submitter pod gets our own template (`submitterPodTemplate`, in both KubeRay CRDs): the workload labels the
NetworkPolicies admit to the head's dashboard (and nothing else), Pod Security `restricted` (it only runs the
`ray` CLI against the dashboard: non-root, no capabilities), the Ray auth token file when token auth is on.
KubeRay gives the first container the RAY_DASHBOARD_ADDRESS / RAY_JOB_SUBMISSION_ID env whatever its command
(rayjob_controller.go getSubmitterTemplate); a Job's pods must not restart in place, hence `restartPolicy: Never`
as in KubeRay's default template.

Its command is the program's own (core.shell.job_submitter_command), not KubeRay's default: from KubeRay 1.5.0 to
1.7.0 a K8sJobMode RayJob is failed 30 s after its submitter ends unless the Ray job is terminal, and KubeRay's
submitter ends when `ray job logs --follow` loses its stream (kuberay#4921, ray#60665) while training goes on; kuberay
PR #5100 (no release yet) does not change that timeout. The program's submitter does KubeRay's steps and then waits for
the Ray job's terminal status, following the logs again, so no KubeRay version ends a healthy run. Neither other
mode is better: HTTPMode (no submitter) resubmits the job whenever the dashboard does not know it, e.g. after the
head was evicted (kuberay#4824), and leaves `kubectl logs job/<rayjob>` empty; SidecarMode (1.5.0+, not in the 1.4.2
CRD) runs the same `ray job logs --follow` in the head and fails the same way. Either way a RayJob's status can
disagree with its Ray job's (kuberay#2314, #3257): the attempts record on Lustre (pod_programs/attempts.py) is what
the docs point to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from core import catalog, export, gate, prefetch, recipes, shell
from core.catalog import NemoRlRelease
from core.naming import HF_SECRET, LUSTRE_PVC, RAY_AUTH_SECRET
from core.recipes import Recipe
from core.settings import Settings
from core.settings import job as job_settings
from core.settings import queue as queue_settings
from core.settings import startup as startup_settings
from core.settings import tenancy as tenancy_settings
from core.settings.security import token_auth_enabled
from workloads.manifests.kueue import QUEUE_LABEL_PATH, Queueing, queueing_of
from workloads.manifests.pod_parts import cpu_node_selector, token_secret_name
from workloads.manifests.pod_security import SUBMITTER_LABELS, harden_pod_spec, token_files
from workloads.manifests.raycluster import RayPodsConfig, raycluster_spec

SUBMITTER_CONTAINER = "ray-job-submitter"
# KubeRay's default submitter resources (ray-operator/controllers/ray/common/job.go GetDefaultSubmitterContainer).
SUBMITTER_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}


@dataclass(frozen=True)
class JobArgs:
    name: str  # the RayJob's name (core.naming: at most 47 characters for KubeRay)
    stack_name: str
    recipe: Recipe  # resolved once by the settings
    release: NemoRlRelease
    image: str  # the submitter's: the head's image (the Ray CLI must match the cluster's Ray)
    run_name: str
    lustre_mount_path: str
    # own-cluster mode: the pods of the cluster the RayJob creates, its retries and TTL; None in standing mode.
    own_cluster: Optional[RayPodsConfig]
    backoff_limit: int
    ttl_seconds: int
    namespace: str
    # The readiness gate the entrypoint runs first (None: off) and the token that forces a resubmission.
    gate_args: Optional[gate.GateArgs] = None
    gate_rerun: Optional[str] = None
    ray_token_auth: bool = False
    # Runnable but risky job settings (core.settings.job.warnings), shown by `pulumi preview`.
    warnings: tuple[str, ...] = ()
    # What the job sets over its config: the recipe's keys and the program's own (core.recipes.override_report),
    # shown by `pulumi preview` as information.
    notes: tuple[str, ...] = ()
    # Weights (core.prefetch): the job trains from the pinned snapshot's path. With the prefetch Job, in own-cluster
    # mode the entrypoint first waits for its marker (a graph edge would hold the RayJob, and with it the GPU nodes it
    # asks for, until the download ends); without it (prefetchWeights false) the entrypoint downloads the pinned
    # snapshot itself on the head before training, so the run is never trained on the Hub's `main`.
    model_path: Optional[str] = None
    before: tuple[tuple[str, ...], ...] = ()
    # Run after a successful training: the trained marker the checkpoint export Job waits for (core.export).
    after: tuple[tuple[str, ...], ...] = ()
    # spec.activeDeadlineSeconds (core.settings.job.deadline_seconds); None: no deadline.
    deadline_seconds: Optional[int] = None
    # The Secret with the stack's tokens (an experiment stack has its own: pod_parts.token_secret_name).
    secret_name: str = HF_SECRET
    # Standing-cluster mode: the entrypoint's bounded attempts (KubeRay retries no clusterSelector RayJob).
    attempts: Optional[recipes.Attempts] = None
    start_from: Optional[str] = None  # jobStartFrom: '<run name>/step_<N>' the run starts from
    # Standard: the submitter waits on the CPU pool with the heads (pod_parts.cpu_node_selector), not on the system
    # pool; Autopilot: None (a pod of the default class).
    submitter_node_selector: Optional[dict[str, str]] = None
    # The queue the RayJob waits in (workloads/manifests/kueue.py Queueing): its labels; None: not queued.
    queueing: Optional[Queueing] = None
    # An experiment stack's: its Megatron conversions in its own Lustre directory (the shared cache is read-only).
    megatron_dir: Optional[str] = None
    entry: Optional[str] = None  # jobEntry: the image's entry script, run instead of the release's GRPO entry

    @classmethod
    def of(cls, s: Settings) -> "JobArgs":
        own = s.job.mode == "own-cluster"
        r = s.recipe
        model_path = None
        before: tuple[tuple[str, ...], ...] = ()
        if r.model_revision is not None:
            plan = prefetch.plan(
                model_name=r.model_name, revision=r.model_revision, mount_path=s.workload.lustre_mount_path
            )
            model_path = plan.model_path
            deadline = prefetch.job_timeout_seconds(plan.download_bytes)
            if not s.startup.prefetch_weights:
                # The same program in the NeMo-RL image (its huggingface_hub), with the head's token file: the marker
                # makes every later attempt of the run skip it.
                before = (tuple(prefetch.download_argv(plan, recipes.SCRIPTS_DIR, in_nemo_rl_image=True)),)
            elif own:
                before = (tuple(prefetch.wait_argv(plan, recipes.SCRIPTS_DIR, deadline)),)
        # The export is a CPU Job that waits for this marker (workloads/manifests/export_job.py), in both modes: an
        # own GPU cluster goes as soon as training ends, and a standing cluster's head carries no bucket mount or
        # write identity. The marker is written whether or not the export is on, so turning the export on or off,
        # or moving its destination, touches neither the RayCluster nor the RayJob: a run already training is
        # exported when the export is turned on later.
        after = tuple(tuple(c) for c in export.mark_trained_argv(s.workload.lustre_mount_path, s.run_name))
        return cls(
            name=s.names.ray_job,
            stack_name=s.stack_name,
            recipe=r,
            release=s.workload.release,
            image=s.nemo_rl_image,
            run_name=s.run_name,
            lustre_mount_path=s.workload.lustre_mount_path,
            own_cluster=RayPodsConfig.of(s) if own else None,
            backoff_limit=s.job.backoff_limit,
            ttl_seconds=s.job.ttl_seconds,
            namespace=s.storage.namespace,
            gate_args=gate.GateArgs.of(s),
            gate_rerun=s.gate.rerun if s.gate.enabled else None,
            ray_token_auth=token_auth_enabled(s),
            warnings=tuple(job_settings.warnings(s) + startup_settings.export_warnings(s) + queue_settings.warnings(s)),
            notes=tuple(
                recipes.override_report(
                    r,
                    s.workload.release,
                    mount_path=s.workload.lustre_mount_path,
                    run_name=s.run_name,
                    model_path=model_path,
                )
            ),
            model_path=model_path,
            before=before,
            after=after,
            deadline_seconds=job_settings.deadline_seconds(s),
            secret_name=token_secret_name(s),
            attempts=None
            if own or s.job.backoff_limit == 0
            else recipes.Attempts(
                attempts=s.job.backoff_limit + 1,
                log=recipes.attempts_log(s.workload.lustre_mount_path, s.run_name),
                amount=s.worker_replicas * r.gpus_per_node,
                capacity_wait_seconds=catalog.ATTEMPT_CAPACITY_WAIT_SECONDS,
            ),
            start_from=s.job.start_from,
            submitter_node_selector=None
            if s.autopilot
            else cpu_node_selector(autopilot=False, cpu_pool=s.names.cpu_pool),
            queueing=queueing_of(s) if own else None,
            megatron_dir=(
                recipes.experiment_megatron_dir(s.workload.lustre_mount_path)
                if tenancy_settings.lustre_experiment(s) is not None
                else None
            ),
            entry=s.startup.job_entry,
        )

    @property
    def checkpoint_dir(self) -> str:
        return recipes.checkpoint_dir(self.lustre_mount_path, self.run_name)


def _submission(a: JobArgs) -> tuple[str, str, Optional[dict[str, str]]]:
    """(entrypoint, runtimeEnvYAML, metadata) of the RayJob: what its submitter submits."""
    mount = a.lustre_mount_path
    entrypoint = recipes.entrypoint(
        a.recipe,
        a.release,
        recipes.EntrypointArgs(
            mount_path=mount,
            run_name=a.run_name,
            gate=gate.options(a.gate_args) if a.gate_args else None,
            model_path=a.model_path,
            before=tuple(list(c) for c in a.before),
            after=tuple(list(c) for c in a.after),
            attempts=a.attempts,
            start_from=a.start_from,
            megatron_dir=a.megatron_dir,
            entry=a.entry,
            own_configs=a.own_cluster is not None and a.own_cluster.configs_map is not None,
        ),
    )
    # Carries the gateRerun token too (recipes.GATE_RERUN_ENV): a new value replaces the RayJob.
    runtime_env = recipes.runtime_env_yaml(a.recipe, mount_path=mount, gate_rerun=a.gate_rerun, release=a.release)
    metadata = (
        recipes.job_metadata(a.recipe, run_name=a.run_name, stack_name=a.stack_name, gate_rerun=a.gate_rerun)
        if a.own_cluster is not None
        else None
    )
    return entrypoint, runtime_env, metadata


def submitter_command(entrypoint: str, runtime_env: str, metadata: Optional[dict[str, str]]) -> list[str]:
    """The submitter submits what spec.entrypoint / runtimeEnvYAML / metadata say, as KubeRay's would (the fields
    stay in the spec, where KubeRay validates them and `kubectl describe` shows them), and waits out the dashboard for
    as long as the operator does (catalog.KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS)."""
    return shell.job_submitter_command(
        entrypoint,
        runtime_env_yaml=runtime_env,
        metadata=metadata,
        unreachable_seconds=catalog.KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS,
    )


def submitter_template(a: JobArgs, command: Optional[list[str]] = None) -> dict:
    """The submitter pod: the head's image (the Ray CLI must match the cluster's Ray), nothing but the Ray auth
    token file (when on); it never calls the Hub or W&B. `command`: core.shell.job_submitter_command, which ends
    only when the Ray job has (KubeRay fails the RayJob 30 s after the submitter ends, from 1.5.0)."""
    if command is None:
        command = submitter_command(*_submission(a))
    tokens = token_files(HF_SECRET, hugging_face=False, ray_auth_secret=RAY_AUTH_SECRET if a.ray_token_auth else None)
    container: dict[str, Any] = {
        "name": SUBMITTER_CONTAINER,
        "image": a.image,
        # KubeRay keeps a template's own command (getSubmitterTemplate @v1.4.2, configureSubmitterContainer @v1.7.0:
        # only an empty one is replaced) and still adds RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID.
        "command": command[:3],
        "args": command[3:],
        "resources": SUBMITTER_RESOURCES,
    }
    if tokens.env:
        container.update(env=tokens.env, volumeMounts=tokens.volume_mounts)
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if a.submitter_node_selector:
        spec["nodeSelector"] = dict(a.submitter_node_selector)
    if tokens.volumes:
        spec["volumes"] = tokens.volumes
    return {"metadata": {"labels": dict(SUBMITTER_LABELS)}, "spec": harden_pod_spec(spec, restricted=True)}


def rayjob_spec(a: JobArgs, *, ray_cluster_name: Optional[str]) -> dict:
    """The RayJob spec for the stack's recipe: `clusterSelector` to `ray_cluster_name` in standing mode, the
    embedded cluster in own-cluster mode."""
    entrypoint, runtime_env, metadata = _submission(a)
    spec: dict = {
        "entrypoint": entrypoint,
        "runtimeEnvYAML": runtime_env,
        # K8sJobMode at every KubeRay version, with a submitter that ends only when the Ray job has (module docstring).
        "submissionMode": "K8sJobMode",
        "submitterPodTemplate": submitter_template(a, submitter_command(entrypoint, runtime_env, metadata)),
    }
    if a.deadline_seconds is not None:
        # Per attempt, in both modes and both CRDs (KubeRay rayjob_controller.go checkActiveDeadlineAndUpdateStatus-
        # IfNeeded, v1.4.2 and v1.7.0): past it the RayJob turns Failed with reason DeadlineExceeded, which is never
        # retried; with shutdownAfterJobFinishes (own-cluster) KubeRay then deletes the GPU cluster. A standing
        # cluster is left alone ("clusterSelector; skipping resource deletion" at v1.7.0), Ray job included.
        spec["activeDeadlineSeconds"] = a.deadline_seconds
    if a.own_cluster is None:
        # Never `metadata` together with clusterSelector (module docstring: KubeRay < 1.5.0, kuberay PR #4102).
        spec["clusterSelector"] = {"ray.io/cluster": ray_cluster_name}
    else:
        spec.update(
            {
                "metadata": metadata,
                "rayClusterSpec": raycluster_spec(a.own_cluster, secret_name=a.secret_name, pvc_name=LUSTRE_PVC),
                "backoffLimit": a.backoff_limit,
                # The GPU cluster goes when the job ends (after the last retry): KubeRay deletes the RayCluster
                # ttlSecondsAfterFinished seconds after the end and keeps the RayJob (module docstring).
                "shutdownAfterJobFinishes": True,
                "ttlSecondsAfterFinished": a.ttl_seconds,
            }
        )
    return spec


# Spec fields KubeRay reads again at every reconcile of a running RayJob (the deadline check reads
# `rayJob.Spec.ActiveDeadlineSeconds` each time, v1.4.2 and v1.7.0; no webhook marks it immutable): a change
# updates the RayJob in place instead of replacing it, which would restart a multi-hour run.
IN_PLACE_SPEC_FIELDS = frozenset({"activeDeadlineSeconds"})


def replace_paths(a: JobArgs) -> list[str]:
    """The RayJob paths whose change replaces the RayJob: every spec field it renders but the in-place ones, and its
    queue label (Kueue refuses a new queue on a running job: workloads/manifests/kueue.py QUEUE_LABEL_PATH)."""
    spec = sorted(f"spec.{k}" for k in rayjob_spec(a, ray_cluster_name="-") if k not in IN_PLACE_SPEC_FIELDS)
    return [QUEUE_LABEL_PATH, *spec]


def rayjob_labels(a: JobArgs) -> dict[str, str]:
    """The RayJob's labels: the program's, and the queue's when it is queued (own-cluster with queue kueue)."""
    return {"app.kubernetes.io/part-of": "nemo-rl-gke", **(a.queueing.labels() if a.queueing else {})}


ANNOTATION_PREFIX = "nemo-rl-gke/"


def rayjob_annotations(a: JobArgs) -> dict[str, str]:
    """The job's metadata as RayJob annotations (`kubectl describe rayjob`), in both modes; annotations have no
    length limit for values, unlike labels (63 characters), which a run name may exceed."""
    meta = recipes.job_metadata(a.recipe, run_name=a.run_name, stack_name=a.stack_name, gate_rerun=a.gate_rerun)
    return {f"{ANNOTATION_PREFIX}{k}": v for k, v in sorted(meta.items())}
