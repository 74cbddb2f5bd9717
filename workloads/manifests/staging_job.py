"""The data staging Job's spec (plain dicts, no Pulumi resources; workloads/data_staging.py applies it).

It runs `pod_programs/stage_data.py` (shipped in the job-scripts ConfigMap) with the plan of core/data.py, on the CPU
pool, in the job's own NeMo-RL image with its `uv run python`: the datasets are read, and the built-in loaders' cache
is built, by the `datasets` library the training runs (the cache layout is that library's: core.catalog
DATASETS_LIBRARY). The NeMo-RL image is on the CPU nodes already where the stack pre-pulls it for the Ray head.

- The Hugging Face token reaches it as a file (the Secret mounted read-only, HF_TOKEN_PATH), never as a variable.
- Each gs:// folder of jobData is mounted read-only through the Cloud Storage FUSE CSI driver (`only-dir`: that folder
  only), as the Job's own Kubernetes service account, whose Workload Identity principal the stack grants read on those
  objects and nothing else (infra/data_access.py). Without gs:// data the pod runs as no service account at all.
- A problem with the data itself exits 3, which `podFailurePolicy` turns into a failed Job at once (the data will not
  change on a retry; batch/v1 podFailurePolicy, stable since Kubernetes 1.31); anything else is retried
  (`backoffLimit`). The program's one line is the container's termination message.
- On an experiment stack it runs in the experiment's namespace as the service account its platform made there, and
  mounts only the experiment's own Lustre directory (`subPath experiments/<name>` at the mount path), so the staged
  files, the built-in datasets' cache and whatever it downloads are the experiment's own; its namespace's admission
  policy admits exactly that (workloads/manifests/tenancy.py).
- Its role label is what the namespace's NetworkPolicies select: DNS, Hugging Face by name and, with gs:// data, the
  metadata server (Workload Identity) and Cloud Storage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

import pod_programs
from core import catalog, data, export, recipes
from core.data import DataSpec
from core.naming import HF_SECRET, HF_TOKEN_KEY, LUSTRE_PVC
from core.settings import Settings
from core.settings import tenancy as tenancy_settings
from workloads.manifests.pod_parts import (
    cpu_node_selector,
    hf_environment,
    lustre_mounts,
    lustre_volume,
    scripts_mount,
    scripts_volume,
    token_secret_name,
)
from workloads.manifests.pod_security import (
    HF_TOKEN_FILE,
    ROLE_LABEL,
    ROLE_STAGING,
    TOKEN_FILE_MODE,
    TOKENS_DIR,
    WORKLOAD_LABELS,
    harden_pod_spec,
)

CONTAINER = "stage"
TOKEN_VOLUME = "hf-token"
SCRIPT = pod_programs.STAGE_DATA.name
# The program's exit code for a problem with the data (pod_programs/stage_data.py BAD_DATA).
BAD_DATA_EXIT_CODE = 3
# datasets parses and writes Arrow files with a few threads; a large dataset is memory-mapped, not held in memory.
RESOURCES = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}


@dataclass(frozen=True)
class DataStagingArgs:
    name: str
    namespace: str
    image: str  # the job's NeMo-RL image: its `datasets` is the one the training reads with
    plan: dict  # core.data.staging_plan
    spec: Optional[DataSpec]  # jobData (its gs:// folders are mounted)
    lustre_mount_path: str
    scripts_dir: str
    node_selector: dict
    service_account: Optional[str]  # the Job's own KSA, only with gs:// data
    # An experiment stack's: its platform created the KSA in its namespace (its people create none), and the pod
    # mounts only the experiment's own Lustre directory, where its staged data and built-in datasets cache live.
    own_service_account: bool = True
    lustre_experiment: Optional[str] = None
    secret_name: str = HF_SECRET
    backoff_limit: int = 2
    pvc_name: str = LUSTRE_PVC

    @classmethod
    def of(cls, s: Settings) -> "DataStagingArgs":
        r, release, mount = s.recipe, s.workload.release, s.workload.lustre_mount_path
        plan = data.staging_plan(
            r.data,
            tag=release.tag,
            mount_path=mount,
            builtins=recipes.recipe_dataset_loads(r, release),
            gsm8k=r.data is None and r.dataset == "gsm8k",
        )
        return cls(
            name=s.names.data_job,
            namespace=s.storage.namespace,
            image=s.nemo_rl_image,
            plan=plan,
            spec=r.data,
            lustre_mount_path=mount,
            scripts_dir=recipes.SCRIPTS_DIR,
            node_selector=cpu_node_selector(autopilot=s.autopilot, cpu_pool=s.names.cpu_pool),
            service_account=tenancy_settings.data_ksa(s) if data.gcs_volumes(r.data) else None,
            secret_name=token_secret_name(s),
            own_service_account=not s.stack.platform_stack,
            lustre_experiment=tenancy_settings.lustre_experiment(s),
        )

    @property
    def timeout_seconds(self) -> int:
        return data.staging_timeout_seconds()

    @property
    def gcs_buckets(self) -> dict[str, tuple[str, ...]]:
        """bucket -> the objects or prefixes the Job reads there (its read grant)."""
        return data.gcs_grants(self.spec)


def command(a: DataStagingArgs) -> list[str]:
    """`uv run python stage_data.py --plan <json>`: argv, no shell (the plan's strings reach the program as is)."""
    plan = json.dumps(a.plan, sort_keys=True, separators=(",", ":"))
    return ["uv", "run", "python", f"{a.scripts_dir}/{SCRIPT}", "--plan", plan]


def gcs_volume(name: str, bucket: str, folder: str) -> dict:
    """A read-only CSI ephemeral volume of one gs:// folder (`only-dir`; the whole bucket for objects at its root)."""
    options = ["implicit-dirs"] + ([f"only-dir={folder}"] if folder else [])
    return {
        "name": name,
        "csi": {
            "driver": export.GCSFUSE_DRIVER,
            "readOnly": True,
            "volumeAttributes": {"bucketName": bucket, "mountOptions": ",".join(options)},
        },
    }


def job_spec(a: DataStagingArgs) -> dict:
    mount = a.lustre_mount_path.rstrip("/")
    gcs = data.gcs_volumes(a.spec)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": a.image,
        # `uv run` uses NeMo-RL's environment, which has `datasets` at the release's version.
        "workingDir": catalog.NEMO_RL_WORKDIR,
        "command": command(a),
        "env": [
            *hf_environment(mount, a.lustre_experiment),
            {"name": "HF_TOKEN_PATH", "value": HF_TOKEN_FILE},
            {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        ],
        "resources": RESOURCES,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            # An experiment's: its own directory only (no shared cache: what it downloads lands in its directory).
            *lustre_mounts(mount, a.lustre_experiment, cache=False),
            scripts_mount(a.scripts_dir),
            {"name": TOKEN_VOLUME, "mountPath": TOKENS_DIR, "readOnly": True},
            *({"name": n, "mountPath": f"{data.GCS_MOUNT_ROOT}/{n}", "readOnly": True} for n, _, _ in gcs),
        ],
    }
    volumes = [
        lustre_volume(a.pvc_name),
        scripts_volume(),
        {
            "name": TOKEN_VOLUME,
            "secret": {
                "secretName": a.secret_name,
                "defaultMode": TOKEN_FILE_MODE,
                "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}],
            },
        },
        *(gcs_volume(n, b, d) for n, b, d in gcs),
    ]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": dict(a.node_selector),
        "containers": [container],
        "volumes": volumes,
    }
    if a.service_account is not None:
        pod["serviceAccountName"] = a.service_account
    metadata: dict[str, Any] = {"labels": {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_STAGING}}
    if gcs:
        metadata["annotations"] = export.pod_annotations()
    # The same hardening as the prefetch (root without capabilities: the files it writes on Lustre belong to the user
    # the job runs as).
    return {
        "backoffLimit": a.backoff_limit,
        "activeDeadlineSeconds": a.timeout_seconds,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [BAD_DATA_EXIT_CODE]},
                }
            ]
        },
        "template": {"metadata": metadata, "spec": harden_pod_spec(pod)},
    }
