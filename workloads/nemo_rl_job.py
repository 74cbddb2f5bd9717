"""NemoRlJob: the NeMo-RL GRPO job as a KubeRay `RayJob`, the last component of the graph.

The spec, its two modes (`jobMode`: standing-cluster, own-cluster) and the KubeRay behaviour they rely on:
workloads/manifests/rayjob.py. Here: what `pulumi up` does with it. Training runs for hours, so Pulumi does not
wait for the job (`pulumi.com/skipAwait`). A finished RayJob never re-runs on update: every spec field but the
deadline replaces it (same name, so the old one, and its Ray job, goes first), and a replaced standing
RayCluster replaces it too (`replace_with`), so a new cluster always gets a new job.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import gate
from workloads.manifests.kueue import Queueing
from workloads.manifests.raycluster import HEAD_CONTAINER
from workloads.manifests.rayjob import JobArgs, rayjob_annotations, rayjob_labels, rayjob_spec, replace_paths

__all__ = ["JobArgs", "NemoRlJob"]


class NemoRlJob(pulumi.ComponentResource):
    rayjob: k8s.apiextensions.CustomResource
    name: str
    run_name: str
    checkpoint_dir: str
    gate_summary_command: Optional[str]  # prints the gate's last summary; None without a gate
    status_command: str  # the RayJob's state and its attempts (KubeRay counts them in status.failed/succeeded)
    attempts_command: Optional[str]  # standing cluster: the entrypoint loop's attempts log (one JSON line each)
    queueing: Optional[Queueing]  # the queue and priority it waits with (queue kueue, own-cluster); None: not queued

    def __init__(
        self,
        name: str,
        args: JobArgs,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        ray_cluster: Optional[k8s.apiextensions.CustomResource],
        needs: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        """`ray_cluster`: the standing RayCluster the job selects; None in own-cluster mode."""
        super().__init__("nemo-rl-gke:workloads:NemoRlJob", name, None, opts)
        a = args
        self.name = a.name
        self.queueing = a.queueing
        self.run_name = a.run_name
        self.checkpoint_dir = a.checkpoint_dir
        self.gate_summary_command = (
            gate.summary_command(a.namespace, a.name, HEAD_CONTAINER, a.lustre_mount_path, a.run_name)
            if a.gate_args
            else None
        )
        # KubeRay counts finished attempts in status.failed / status.succeeded (both CRDs; rayjob_controller.go
        # checkBackoffLimitAndUpdateStatusIfNeeded at v1.4.2 and v1.7.0: docs/research/platform.md §1a).
        self.status_command = (
            f"kubectl -n {a.namespace} get rayjob {a.name} -o custom-columns=DEPLOYMENT:.status.jobDeploymentStatus,"
            "JOB:.status.jobStatus,FAILED_ATTEMPTS:.status.failed,SUCCEEDED:.status.succeeded,REASON:.status.reason"
        )
        self.attempts_command = (
            gate.head_cat_command(a.namespace, a.name, HEAD_CONTAINER, a.attempts.log) if a.attempts else None
        )
        for warning in a.warnings:
            pulumi.log.warn(warning, resource=self)
        for note in a.notes:
            pulumi.log.info(note, resource=self)
        if ray_cluster is not None:
            # The cluster name flows from the RayCluster resource: the job waits for it.
            spec = ray_cluster.metadata.apply(lambda md: rayjob_spec(a, ray_cluster_name=md["name"]))
        else:
            spec = rayjob_spec(a, ray_cluster_name=None)
        self.rayjob = k8s.apiextensions.CustomResource(
            "rayjob",
            api_version="ray.io/v1",
            kind="RayJob",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=self.name,
                namespace=namespace,
                # With the queue: its LocalQueue and priority class (Kueue admits the whole RayJob or none of it).
                labels=rayjob_labels(a),
                # Training runs for hours: `pulumi up` must not wait for the job to finish.
                annotations={"pulumi.com/skipAwait": "true", **rayjob_annotations(a)},
            ),
            spec=spec,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # A finished RayJob never re-runs on update: a new recipe or cluster means a new RayJob. Same
                # name, so the old one (and its Ray job) goes first. The deadline alone is updated in place.
                replace_on_changes=replace_paths(a),
                delete_before_replace=True,
                # A replaced standing cluster (new image, release, env or resources) gets a new RayJob too: the
                # old one finished or died with the old cluster and KubeRay never submits a RayJob twice.
                # `replace_with` needs the Pulumi CLI >= 3.207.0 (pulumi/pulumi PR #20693); older CLIs stop with
                # "The Pulumi CLI does not support the ReplaceWith option".
                replace_with=[ray_cluster] if ray_cluster is not None else None,
                # Own-cluster pods name the PVC, Secret, service account and Network objects; the standing
                # cluster already waited for them.
                depends_on=list(needs),
            ),
        )
        self.register_outputs({"name": self.name, "runName": self.run_name, "checkpointDir": self.checkpoint_dir})
