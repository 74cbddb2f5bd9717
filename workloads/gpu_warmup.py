"""GpuWarmup: GPU nodes and the NeMo-RL image ready while Lustre is still being created.

Applies what workloads/manifests/warmup.py builds from GpuWarmupArgs (reasons and sources there and in
docs/research/ttfs.md §1): a PriorityClass at the autoscaler's cutoff priority, the placeholder Job shaped like the Ray
workers (taken from the rendered worker template, so they cannot drift), and on Standard a DaemonSet pulling the image
on the CPU system pool. Nothing here mounts Lustre or names a Secret, so it all runs as soon as the pools exist; Pulumi
waits for none of it (a stockout may keep placeholders pending).
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from workloads.manifests import warmup
from workloads.manifests.warmup import PRIORITY_CLASS, GpuWarmupArgs

__all__ = ["GpuWarmup", "GpuWarmupArgs"]


def _meta(m: dict) -> k8s.meta.v1.ObjectMetaArgs:
    return k8s.meta.v1.ObjectMetaArgs(
        name=m["name"], namespace=m.get("namespace"), labels=m.get("labels"), annotations=m.get("annotations")
    )


class GpuWarmup(pulumi.ComponentResource):
    job: Optional[k8s.batch.v1.Job]
    priority_class: k8s.scheduling.v1.PriorityClass
    prepull: Optional[k8s.apps.v1.DaemonSet]

    def __init__(
        self,
        name: str,
        args: GpuWarmupArgs,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        gpu_capacity: Sequence[pulumi.Resource],
        cpu_capacity: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
        image: Sequence[pulumi.Resource] = (),
    ):
        """`image`: what makes the image exist where the pods name it (the copy jobs of infra/image_copy.py)."""
        super().__init__("nemo-rl-gke:workloads:GpuWarmup", name, None, opts)
        a = args
        pc = warmup.priority_class(PRIORITY_CLASS)
        self.priority_class = k8s.scheduling.v1.PriorityClass(
            "priority-class",
            metadata=_meta(pc["metadata"]),
            value=pc["value"],
            global_default=pc["globalDefault"],
            preemption_policy=pc["preemptionPolicy"],
            description=pc["description"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.job = None
        job = warmup.placeholders_of(a)
        if job is not None:
            self.job = k8s.batch.v1.Job(
                "placeholders",
                metadata=dict(job["metadata"], namespace=namespace),
                spec=job["spec"],
                # After the GPU pool exists (Standard), so the placeholders ask the autoscaler at once; the pods
                # name the priority class and, like the workers, the RDMA Network objects.
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[self.priority_class, *gpu_capacity, *image]
                ),
            )
        self.prepull = None
        ds = warmup.prepull_of(a)
        if ds is not None:
            self.prepull = k8s.apps.v1.DaemonSet(
                "cpu-prepull",
                metadata=dict(ds["metadata"], namespace=namespace),
                spec=ds["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*cpu_capacity, *image]),
            )
        self.register_outputs({"job": a.job_name})
