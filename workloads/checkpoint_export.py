"""CheckpointExport: a stack's checkpoint export (standing cluster, own cluster or experiment stack), a Job on the CPU
pool that waits for the run's trained marker and copies the checkpoints to the bucket (spec and reasons:
workloads/manifests/export_job.py).

Pulumi does not wait for it (`pulumi.com/skipAwait`): it finishes after training, hours or days after `pulumi up`.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core.catalog import replacements
from workloads.manifests.export_job import ExportJobArgs, export_job_args, job_spec
from workloads.manifests.pod_security import ROLE_EXPORT, ROLE_LABEL

__all__ = ["CheckpointExport", "ExportJobArgs", "export_job_args"]


class CheckpointExport(pulumi.ComponentResource):
    job: k8s.batch.v1.Job

    def __init__(
        self,
        name: str,
        args: ExportJobArgs,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
        needs: Sequence[pulumi.Resource] = (),
    ):
        super().__init__("nemo-rl-gke:workloads:CheckpointExport", name, None, opts)
        a = args
        self.job = k8s.batch.v1.Job(
            "export",
            metadata={
                "name": a.name,
                "namespace": a.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke", ROLE_LABEL: ROLE_EXPORT},
                # It completes after training: `pulumi up` must not wait for it. With skipAwait pulumi-kubernetes does
                # not wait for its deletion either, and Foreground propagation would keep the old Job until its pod is
                # gone, so a replacement (another destination or bucket) would meet it (AlreadyExists): Background
                # propagation removes it at once (core/catalog/replacements.py unawaited_delete). A copy cut short
                # is redone by the new Job: export_checkpoints.py rewrites an incomplete destination file.
                "annotations": {
                    "pulumi.com/skipAwait": "true",
                    replacements.DELETION_PROPAGATION_ANNOTATION: "background",
                    "nemo-rl-gke/waits-for": a.marker,
                },
            },
            spec=job_spec(a),
            # What the pod refers to by name (the claim, the scripts, its service account) and the grants its GCS
            # FUSE sidecar mounts with: on the Job itself, since a component's depends_on does not reach its children.
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(needs)),
        )
        self.destination = f"{a.destination.url}/{a.marker.rsplit('/', 1)[1]}"
        self.register_outputs({"name": a.name, "destination": self.destination})
