"""The checkpoint export as a Kubernetes Job on the CPU pool (plain dicts; workloads/checkpoint_export.py applies it).

Off GPU time: the job's entrypoint ends by writing the run's "trained" marker on Lustre (core.export.trained_marker)
once NeMo-RL exited 0; this Job's pod waits on a CPU node for that marker, then copies the checkpoints into the
stack's bucket with `pod_programs/export_checkpoints.py` (standard library only, so it runs in the pinned slim
Python image, not the 20-30 GB NeMo-RL image). The RayJob's GPU cluster is deleted when training ends
(`ttlSecondsAfterFinished`), not after the copy; a failed copy is retried by this Job alone (`backoffLimit`) and
never reruns training. No `activeDeadlineSeconds` (it waits as long as training runs) and no TTL (a TTL-deleted Job
would be created again by the next `pulumi up --refresh`: docs/research/platform.md §4b).

The pod mounts the bucket's export prefix through the GCS FUSE CSI driver as its stack's export service account
(the only principal with write on that prefix: infra/bucket.py for a platform, infra/experiment_export.py for an
experiment stack, whose pod sees only its own Lustre directory), with the sidecar sizing of core/export.py. Its role
label is what the namespace's NetworkPolicies select: DNS, the metadata server (Workload Identity) and Cloud
Storage.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Optional

from core import export, images, recipes
from core.naming import JOB_SCRIPTS, LUSTRE_PVC
from core.settings import Settings
from core.settings import tenancy as tenancy_settings
from workloads.manifests.pod_parts import (
    cpu_node_selector,
    lustre_mounts,
    lustre_volume,
    scripts_mount,
    scripts_volume,
)
from workloads.manifests.pod_security import ROLE_EXPORT, ROLE_LABEL, WORKLOAD_LABELS, harden_pod_spec

CONTAINER = "export"
# Seconds between looks for the trained marker while training runs.
POLL_SECONDS = 60
# The copy streams files (core/export.py): small requests, it waits most of its life.
RESOURCES = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}


@dataclass(frozen=True)
class ExportJobArgs:
    name: str
    namespace: str
    image: str  # the pinned slim Python image (core.images.prefetch_python_image)
    service_account: str  # the export's Kubernetes service account (bucket write on the prefix)
    node_selector: dict
    lustre_mount_path: str
    scripts_dir: str
    destination: export.Destination
    marker: str  # core.export.trained_marker
    export_argv: tuple[str, ...]
    backoff_limit: int = 3
    pvc_name: str = LUSTRE_PVC
    scripts_config_map: str = JOB_SCRIPTS
    lustre_experiment: Optional[str] = None  # an experiment stack's: its own Lustre directory only


def export_job_args(s: Settings, service_account: str) -> ExportJobArgs:
    """The export of `s`'s run into its export prefix, as `service_account` (the stack's export identity)."""
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
        node_selector=cpu_node_selector(autopilot=s.autopilot, cpu_pool=s.names.cpu_pool),
        lustre_mount_path=mount,
        scripts_dir=recipes.SCRIPTS_DIR,
        destination=dest,
        marker=export.trained_marker(mount, s.run_name),
        export_argv=tuple(argv),
        lustre_experiment=tenancy_settings.lustre_experiment(s),
    )


def command(a: ExportJobArgs) -> list[str]:
    wait = f"until [ -f {shlex.quote(a.marker)} ]; do sleep {POLL_SECONDS}; done"
    return ["sh", "-c", f"{wait}\nexec {shlex.join(a.export_argv)}"]


def job_spec(a: ExportJobArgs) -> dict:
    container = {
        "name": CONTAINER,
        "image": a.image,
        "command": command(a),
        "resources": RESOURCES,
        "volumeMounts": [
            *lustre_mounts(a.lustre_mount_path, a.lustre_experiment, cache=False),
            scripts_mount(a.scripts_dir),
            export.volume_mount(),
        ],
    }
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": a.service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": dict(a.node_selector),
        "containers": [container],
        "volumes": [lustre_volume(a.pvc_name), scripts_volume(), export.volume(a.destination)],
    }
    return {
        "backoffLimit": a.backoff_limit,
        "template": {
            "metadata": {
                "labels": {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_EXPORT},
                "annotations": export.pod_annotations(),
            },
            "spec": harden_pod_spec(pod),
        },
    }
