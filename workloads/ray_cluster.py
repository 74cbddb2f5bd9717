"""The standing RayCluster (`ray.io/v1`): CPU head, one GPU worker group with the RDMA pod mixin, Lustre mounted.

The spec comes from `workloads.manifests.raycluster` (one function, reused by the RayJob's own-cluster mode).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings
from core.settings import job as job_settings
from workloads.manifests.kueue import QUEUE_LABEL_PATH, Queueing, queued, queueing_of
from workloads.manifests.raycluster import DASHBOARD_PORT, RayPodsConfig, raycluster_manifest

# Every field of the spec (workloads/manifests/raycluster.py raycluster_spec) but the worker group's replica counts.
REPLACE_ON_CHANGES = (
    "spec.rayVersion",
    "spec.enableInTreeAutoscaling",
    "spec.authOptions",
    "spec.headGroupSpec",
    "spec.workerGroupSpecs[0].groupName",
    "spec.workerGroupSpecs[0].rayStartParams",
    "spec.workerGroupSpecs[0].template",
)


@dataclass(frozen=True)
class RayClusterArgs:
    name: str
    pods: RayPodsConfig
    # Shown by `pulumi preview`: GPU workers started without a job (with a job, the RayJob warns).
    warnings: tuple[str, ...] = ()
    # With the queue (queue kueue): Kueue's RayCluster integration admits the cluster whole and it holds its quota
    # (its head's CPU, its GPU workers) for as long as it exists.
    queueing: Optional[Queueing] = None

    @classmethod
    def of(cls, s: Settings) -> "RayClusterArgs":
        idle = () if s.job.enabled else tuple(job_settings.idle_gpu_warnings(s))
        pods = dataclasses.replace(RayPodsConfig.of(s), worker_replicas=job_settings.standing_workers(s))
        return cls(name=s.names.ray_cluster, pods=pods, warnings=idle, queueing=queueing_of(s))


class RayCluster(pulumi.ComponentResource):
    cluster: k8s.apiextensions.CustomResource
    name: pulumi.Output[str]
    dashboard_command: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: RayClusterArgs,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        needs: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
        replaced_with: Sequence[pulumi.Resource] = (),
    ):
        super().__init__("nemo-rl-gke:workloads:RayCluster", name, None, opts)
        for warning in args.warnings:
            pulumi.log.warn(warning, resource=self)
        m = raycluster_manifest(args.pods, name=args.name, secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)
        if args.queueing is not None:
            m = queued(m, args.queueing)
        self.cluster = k8s.apiextensions.CustomResource(
            "raycluster",
            api_version=m["apiVersion"],
            kind=m["kind"],
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=m["metadata"]["name"], namespace=namespace, labels=m["metadata"].get("labels")
            ),
            spec=m["spec"],
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # KubeRay never recreates running pods when the pod template changes (up to 1.5; from 1.6.0 only
                # with spec.upgradeStrategy.type Recreate, kuberay PR #4185, which the 1.4.2 CRD lacks), so an
                # updated image, release, env or resources would leave the old pods serving the next job. Any
                # change of what the pods are replaces the cluster instead; the name is fixed, so the old one goes
                # first. The RayJob is replaced with it (workloads/nemo_rl_job.py, replace_with). The worker group's
                # replica counts are the one exception: KubeRay creates or deletes worker pods to match them and
                # leaves the head and the other workers running, so a platform turning its job off (no GPU worker
                # without a job: core/settings/job.py standing_workers) or on keeps its head.
                # Its queue label too: Kueue refuses a new queue on a running cluster (QUEUE_LABEL_PATH).
                replace_on_changes=[QUEUE_LABEL_PATH, *REPLACE_ON_CHANGES],
                delete_before_replace=True,
                # Pods refer to the PVC, Secret and service account by name, and their interface annotations
                # to the Network objects: those must exist before the pods are admitted and scheduled.
                depends_on=list(needs),
                # The pods hold the Lustre claim: a replaced claim (a new Lustre instance) waits on
                # kubernetes.io/pvc-protection until no pod uses it, and `depends_on` does not make the engine
                # replace the cluster first (only property dependencies and replace_with do, pulumi
                # step_generator.go:3220, :3366). Replaced with the claim, the cluster goes first.
                replace_with=list(replaced_with) or None,
            ),
        )
        self.name = self.cluster.metadata.apply(lambda md: md["name"])
        ns = args.pods.namespace
        self.dashboard_command = self.name.apply(
            lambda n: (
                f"kubectl ray session {n} -n {ns}  # or: kubectl -n {ns} port-forward "
                f"service/{n}-head-svc {DASHBOARD_PORT}:{DASHBOARD_PORT}"
            )
        )
        self.register_outputs({"name": self.name, "dashboard": self.dashboard_command})
