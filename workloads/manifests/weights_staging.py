"""The weights staging and import Jobs' specs (weightsPath bucket-import; plain dicts, no Pulumi resources;
workloads/weights_staging.py applies them). What each does and why: core/weights.py.

The staging Job: the small Python image with the prefetch's hash-pinned huggingface_hub (the same init container as the
prefetch, workloads/manifests/prefetch_job.py), `pod_programs/stage_weights.py`, the Hugging Face token as a file, and
the bucket's staging folder through the GCS FUSE CSI driver (`only-dir`, streaming writes; the sidecar sized like the
export's, core/export.py), as its own Kubernetes service account (object write on that folder only: infra/
weights_staging.py). It mounts no Lustre: it runs before the instance exists. Root without capabilities, like the export
(the files it writes through the mount belong to the mount's owner).

The import Job: the same small image without packages (`pod_programs/lustre_import.py` is standard library only), no
volume but the scripts, as its own Kubernetes service account, which acts as the Google service account holding the
import's custom role (Workload Identity; the metadata server gives the pod that account's token). Non-root
(`restricted`): it writes nothing.

Both land on the CPU nodes the Ray head uses; their role labels are what the namespace's NetworkPolicies select.
"""

from __future__ import annotations

from dataclasses import dataclass

from core import export, images, prefetch, recipes, weights
from core.naming import HF_TOKEN_KEY
from core.settings import Settings
from workloads.manifests.pod_parts import cpu_node_selector, scripts_mount, scripts_volume, token_secret_name
from workloads.manifests.pod_security import (
    HF_TOKEN_FILE,
    ROLE_LABEL,
    ROLE_WEIGHTS_IMPORT,
    ROLE_WEIGHTS_STAGE,
    TOKEN_FILE_MODE,
    TOKENS_DIR,
    WORKLOAD_LABELS,
    harden_pod_spec,
)
from workloads.manifests.prefetch_job import DEPS_DIR, INSTALL_CONTAINER

STAGE_CONTAINER = "stage"
IMPORT_CONTAINER = "import"
STAGING_VOLUME = "weights-staging"
TOKEN_VOLUME = "hf-token"
DEPS_VOLUME = "prefetch-deps"
HF_HOME_VOLUME = "hf-home"
HF_HOME_DIR = "/tmp/hf-home"  # the client's own small cache (nothing of the model: it streams to the bucket)
STAGE_RESOURCES = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}
IMPORT_RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
INSTALL_RESOURCES = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}


@dataclass(frozen=True)
class WeightsStagingArgs:
    stage_name: str  # the staging Job and its Kubernetes service account
    import_name: str  # the import Job and its Kubernetes service account
    namespace: str
    image: str  # the pinned slim Python image
    plan: weights.StagingPlan
    scripts_dir: str
    node_selector: dict
    secret_name: str
    import_account: str  # the Google service account id the import's KSA acts as
    stage_backoff_limit: int = 4
    import_backoff_limit: int = 2

    @classmethod
    def of(cls, s: Settings) -> "WeightsStagingArgs":
        plan = weights.of(s)
        if plan is None:
            raise ValueError("weightsPath: this stack does not stage its weights (core.weights.staged)")
        return cls(
            stage_name=s.names.weights_stage,
            import_name=s.names.weights_import,
            namespace=s.storage.namespace,
            image=images.prefetch_python_image(),
            plan=plan,
            scripts_dir=recipes.SCRIPTS_DIR,
            node_selector=cpu_node_selector(autopilot=s.autopilot, cpu_pool=s.names.cpu_pool),
            secret_name=token_secret_name(s),
            import_account=s.names.weights_import_account,
        )

    @property
    def stage_timeout_seconds(self) -> int:
        return weights.stage_timeout_seconds(self.plan.download_bytes)

    @property
    def import_timeout_seconds(self) -> int:
        return weights.import_timeout_seconds(self.plan.download_bytes)


def staging_volume(bucket: str) -> dict:
    """The bucket's staging folder through GCS FUSE (`only-dir`): the staging Job's identity may write there and
    nowhere else, and the folder exists before any pod mounts it (infra/weights_staging.py)."""
    return {
        "name": STAGING_VOLUME,
        "csi": {
            "driver": export.GCSFUSE_DRIVER,
            "volumeAttributes": {
                "bucketName": bucket,
                "mountOptions": ",".join([*export.MOUNT_OPTIONS, f"only-dir={weights.STAGING_PREFIX}"]),
            },
        },
    }


def stage_job_spec(a: WeightsStagingArgs) -> dict:
    scripts = scripts_mount(a.scripts_dir)
    deps = {"name": DEPS_VOLUME, "mountPath": DEPS_DIR}
    container = {
        "name": STAGE_CONTAINER,
        "image": a.image,
        "command": weights.stage_argv(a.plan, a.scripts_dir),
        "env": [
            {"name": "HF_HOME", "value": HF_HOME_DIR},
            {"name": "HF_TOKEN_PATH", "value": HF_TOKEN_FILE},
            {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
            {"name": "PYTHONPATH", "value": DEPS_DIR},
        ],
        "resources": STAGE_RESOURCES,
        "volumeMounts": [
            scripts,
            {**deps, "readOnly": True},
            {"name": TOKEN_VOLUME, "mountPath": TOKENS_DIR, "readOnly": True},
            {"name": HF_HOME_VOLUME, "mountPath": HF_HOME_DIR},
            {"name": STAGING_VOLUME, "mountPath": weights.STAGE_MOUNT},
        ],
    }
    # The install sees neither the token nor the bucket: only the requirements file and the empty target.
    install = {
        "name": INSTALL_CONTAINER,
        "image": a.image,
        "command": prefetch.install_argv(a.scripts_dir, DEPS_DIR),
        "resources": INSTALL_RESOURCES,
        "volumeMounts": [scripts, deps],
    }
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": a.stage_name,
        "enableServiceLinks": False,
        "nodeSelector": dict(a.node_selector),
        "initContainers": [install],
        "containers": [container],
        "volumes": [
            scripts_volume(),
            {
                "name": TOKEN_VOLUME,
                "secret": {
                    "secretName": a.secret_name,
                    "defaultMode": TOKEN_FILE_MODE,
                    "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}],
                },
            },
            {"name": DEPS_VOLUME, "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": HF_HOME_VOLUME, "emptyDir": {"sizeLimit": "1Gi"}},
            staging_volume(a.plan.bucket),
        ],
    }
    return {
        "backoffLimit": a.stage_backoff_limit,
        "activeDeadlineSeconds": a.stage_timeout_seconds,
        "template": {
            "metadata": {
                "labels": {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_WEIGHTS_STAGE},
                "annotations": export.pod_annotations(),
            },
            "spec": harden_pod_spec(pod),
        },
    }


def import_job_spec(a: WeightsStagingArgs) -> dict:
    container = {
        "name": IMPORT_CONTAINER,
        "image": a.image,
        "command": weights.import_argv(a.plan, a.scripts_dir),
        "resources": IMPORT_RESOURCES,
        "volumeMounts": [scripts_mount(a.scripts_dir)],
    }
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": a.import_name,
        "enableServiceLinks": False,
        "nodeSelector": dict(a.node_selector),
        "containers": [container],
        "volumes": [scripts_volume()],
    }
    return {
        "backoffLimit": a.import_backoff_limit,
        "activeDeadlineSeconds": a.import_timeout_seconds,
        "template": {
            "metadata": {"labels": {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_WEIGHTS_IMPORT}},
            "spec": harden_pod_spec(pod, restricted=True),
        },
    }
