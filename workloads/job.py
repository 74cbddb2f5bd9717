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

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings
from core import recipes
from workloads.raycluster_spec import raycluster_spec


def job_name(settings: Settings) -> str:
    # KubeRay limits RayJob names to 47 characters (it derives cluster and submitter names from them).
    return f"{settings.prefix}-grpo"


def rayjob_spec(settings: Settings, *, ray_cluster_name: Optional[str]) -> dict:
    """The RayJob spec for the stack's recipe; `ray_cluster_name` None means own-cluster mode."""
    s = settings
    release = s.workload.release
    recipe = recipes.resolve_recipe(s.job, release)
    run_name = recipes.default_run_name(s.job, s.stack_name)
    mount = s.workload.lustre_mount_path
    spec: dict = {
        "entrypoint": recipes.entrypoint(recipe, release, mount_path=mount, run_name=run_name),
        "runtimeEnvYAML": recipes.runtime_env_yaml(recipe, mount_path=mount),
        "metadata": recipes.job_metadata(recipe, run_name=run_name, stack_name=s.stack_name),
        "submissionMode": "K8sJobMode",
    }
    if ray_cluster_name is not None:
        spec["clusterSelector"] = {"ray.io/cluster": ray_cluster_name}
    else:
        spec.update({
            "rayClusterSpec": raycluster_spec(s, secret_name=HF_SECRET, pvc_name=LUSTRE_PVC),
            "backoffLimit": s.job.backoff_limit,
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": s.job.ttl_seconds,
        })
    return spec


class NemoRlJob(pulumi.ComponentResource):
    rayjob: k8s.apiextensions.CustomResource
    name: str
    run_name: str
    checkpoint_dir: str

    def __init__(self, name: str, settings: Settings, namespace: pulumi.Input[str], provider: k8s.Provider,
                 ray_cluster_name: Optional[pulumi.Output[str]], needs: Sequence[pulumi.Resource],
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:NemoRlJob", name, None, opts)
        s = settings
        self.name = job_name(s)
        self.run_name = recipes.default_run_name(s.job, s.stack_name)
        self.checkpoint_dir = recipes.checkpoint_dir(s.workload.lustre_mount_path, self.run_name)
        if ray_cluster_name is not None:
            # The cluster name flows from the RayCluster resource: the job waits for it.
            spec = ray_cluster_name.apply(lambda n: rayjob_spec(s, ray_cluster_name=n))
        else:
            spec = rayjob_spec(s, ray_cluster_name=None)
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
