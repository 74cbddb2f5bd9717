"""The NeMo-RL GRPO job as a KubeRay `RayJob`: the last component of the graph.

Two modes (setting `jobMode`):
- `standing-cluster` (default, as the seeds do): `clusterSelector` to the standing RayCluster, K8sJobMode (a
  submitter pod inside the cluster; no laptop port-forward), no `backoffLimit` — KubeRay rejects it together
  with clusterSelector from 1.6 and before that a retry could delete the external cluster (kuberay #4516).
  Deleting the RayJob (`pulumi destroy`, or a recipe change, which replaces it) stops the Ray job and leaves
  the cluster.
- `own-cluster` (for spot capacity): the RayJob embeds the same head/worker templates and owns its cluster,
  with `backoffLimit` retries, `shutdownAfterJobFinishes` and a TTL. A preempted run fails, KubeRay creates a
  new cluster and resubmits the same entrypoint, and NeMo-RL resumes from the newest `step_N` on Lustre
  because the run name — and so the checkpoint directory — is the same.

The entrypoint and runtime env come from `core.recipes`; the runtime env carries no secret (it is shown
in the Ray dashboard): HF_TOKEN / WANDB_API_KEY are in the pods' environment from the Kubernetes Secret.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import gate, recipes
from core.catalog import NemoRlRelease
from core.naming import HF_SECRET, LUSTRE_PVC
from core.recipes import Recipe
from core.settings import Settings
from workloads.raycluster_spec import HEAD_CONTAINER, RayPodsConfig, raycluster_spec


@dataclass(frozen=True)
class JobArgs:
    name: str                     # the RayJob's name (core.naming: at most 47 characters for KubeRay)
    stack_name: str
    recipe: Recipe                # resolved once by the settings
    release: NemoRlRelease
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

    @classmethod
    def of(cls, s: Settings) -> "JobArgs":
        own = s.job.mode == "own-cluster"
        return cls(name=s.names.ray_job, stack_name=s.stack_name, recipe=s.recipe, release=s.workload.release,
                   run_name=s.run_name, lustre_mount_path=s.workload.lustre_mount_path,
                   own_cluster=RayPodsConfig.of(s) if own else None, backoff_limit=s.job.backoff_limit,
                   ttl_seconds=s.job.ttl_seconds, namespace=s.storage.namespace, gate_args=gate.GateArgs.of(s),
                   gate_rerun=s.gate.rerun if s.gate.enabled else None)

    @property
    def checkpoint_dir(self) -> str:
        return recipes.checkpoint_dir(self.lustre_mount_path, self.run_name)


def rayjob_spec(a: JobArgs, *, ray_cluster_name: Optional[str]) -> dict:
    """The RayJob spec for the stack's recipe: `clusterSelector` to `ray_cluster_name` in standing mode, the
    embedded cluster in own-cluster mode."""
    mount = a.lustre_mount_path
    spec: dict = {
        "entrypoint": recipes.entrypoint(a.recipe, a.release, mount_path=mount, run_name=a.run_name,
                                         gate=gate.options(a.gate_args) if a.gate_args else None),
        "runtimeEnvYAML": recipes.runtime_env_yaml(a.recipe, mount_path=mount),
        "metadata": recipes.job_metadata(a.recipe, run_name=a.run_name, stack_name=a.stack_name,
                                         gate_rerun=a.gate_rerun),
        "submissionMode": "K8sJobMode",
    }
    if a.own_cluster is None:
        spec["clusterSelector"] = {"ray.io/cluster": ray_cluster_name}
    else:
        spec.update({
            "rayClusterSpec": raycluster_spec(a.own_cluster, secret_name=HF_SECRET, pvc_name=LUSTRE_PVC),
            "backoffLimit": a.backoff_limit,
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": a.ttl_seconds,
        })
    return spec


class NemoRlJob(pulumi.ComponentResource):
    rayjob: k8s.apiextensions.CustomResource
    name: str
    run_name: str
    checkpoint_dir: str
    gate_summary_command: Optional[str]   # prints the gate's last summary; None without a gate

    def __init__(self, name: str, args: JobArgs, namespace: pulumi.Input[str], provider: k8s.Provider,
                 ray_cluster_name: Optional[pulumi.Output[str]], needs: Sequence[pulumi.Resource],
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:NemoRlJob", name, None, opts)
        a = args
        self.name = a.name
        self.run_name = a.run_name
        self.checkpoint_dir = a.checkpoint_dir
        self.gate_summary_command = gate.summary_command(
            a.namespace, a.name, HEAD_CONTAINER, a.lustre_mount_path, a.run_name) if a.gate_args else None
        if ray_cluster_name is not None:
            # The cluster name flows from the RayCluster resource: the job waits for it.
            spec = ray_cluster_name.apply(lambda n: rayjob_spec(a, ray_cluster_name=n))
        else:
            spec = rayjob_spec(a, ray_cluster_name=None)
        self.rayjob = k8s.apiextensions.CustomResource(
            "rayjob", api_version="ray.io/v1", kind="RayJob",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=self.name, namespace=namespace,
                labels={"app.kubernetes.io/part-of": "nemo-rl-gke", "nemo-rl-gke/run": self.run_name},
                # Training runs for hours: `pulumi up` must not wait for the job to finish.
                annotations={"pulumi.com/skipAwait": "true"}),
            spec=spec,
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider,
                # A finished RayJob never re-runs on update: a new recipe or cluster means a new RayJob. Same
                # name, so the old one (and its Ray job) goes first.
                replace_on_changes=["spec"], delete_before_replace=True,
                # Own-cluster pods name the PVC, Secret, service account and Network objects; the standing
                # cluster already waited for them.
                depends_on=list(needs)))
        self.register_outputs({"name": self.name, "runName": self.run_name, "checkpointDir": self.checkpoint_dir})
