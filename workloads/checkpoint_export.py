"""CheckpointExport: an experiment stack's checkpoint export, a Job on the CPU pool that waits for the run's trained
marker and copies the checkpoints to the bucket (spec and reasons: workloads/manifests/export_job.py).

Pulumi does not wait for it (`pulumi.com/skipAwait`): it finishes after training, hours or days after `pulumi up`.
"""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import export, images, recipes
from core.settings import Settings
from workloads.manifests.export_job import ExportJobArgs, job_spec
from workloads.manifests.pod_parts import cpu_node_selector
from workloads.manifests.pod_security import ROLE_EXPORT, ROLE_LABEL

__all__ = ["CheckpointExport", "ExportJobArgs", "export_job_args"]


def export_job_args(s: Settings, service_account: str) -> ExportJobArgs:
    """The export of `s`'s run into the platform's export prefix, as the platform's export service account."""
    mount = s.workload.lustre_mount_path
    dest = s.export_destination
    r = s.recipe
    argv = export.export_argv(
        scripts_dir=recipes.SCRIPTS_DIR,
        checkpoint_dir=recipes.checkpoint_dir(mount, s.run_name),
        prefix=dest.prefix,
        run_name=s.run_name,
        metric_name=r.metric_name,
        higher_is_better=recipes.higher_is_better(r),
        exclude=export.optimizer_excludes(r.train_backend, s.startup.export_optimizer),
        python=("python",),
    )
    return ExportJobArgs(
        name=s.names.export_job,
        namespace=s.storage.namespace,
        image=images.prefetch_python_image(),
        service_account=service_account,
        node_selector=cpu_node_selector(autopilot=s.autopilot, system_pool=s.names.system_pool),
        lustre_mount_path=mount,
        scripts_dir=recipes.SCRIPTS_DIR,
        destination=dest,
        marker=export.trained_marker(mount, s.run_name),
        export_argv=tuple(argv),
    )


class CheckpointExport(pulumi.ComponentResource):
    job: k8s.batch.v1.Job

    def __init__(
        self,
        name: str,
        args: ExportJobArgs,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:CheckpointExport", name, None, opts)
        a = args
        self.job = k8s.batch.v1.Job(
            "export",
            metadata={
                "name": a.name,
                "namespace": a.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke", ROLE_LABEL: ROLE_EXPORT},
                # It completes after training: `pulumi up` must not wait for it.
                "annotations": {"pulumi.com/skipAwait": "true", "nemo-rl-gke/waits-for": a.marker},
            },
            spec=job_spec(a),
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.destination = f"{a.destination.url}/{a.marker.rsplit('/', 1)[1]}"
        self.register_outputs({"name": a.name, "destination": self.destination})
