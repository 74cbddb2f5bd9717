"""How the recipe's weights reach Lustre (`weightsPath`): downloaded onto Lustre once the volume exists, or staged in
the training bucket while Lustre is created and imported into it when it is ready. Pure code.

`lustre-download` (the default): the prefetch Job (core/prefetch.py) downloads the model into the Hugging Face cache
on Lustre and points `<mount>/models/<org>/<name>@<commit>` at the snapshot.

`bucket-import`: three Jobs, each with exactly what it needs.

1. The staging Job (pod_programs/stage_weights.py) runs on the CPU pool as soon as the cluster and the bucket exist,
   without Lustre: it copies the model's training files at the pinned commit from the Hub, as plain files (object
   storage has no symlinks, so the Hub cache's `snapshots/<commit>/<file> -> ../../blobs/<sha>` layout cannot be
   staged), into `gs://<bucket>/weights-staging/<org>/<name>@<commit>/` through Cloud Storage FUSE, and writes the
   manifest (STAGED_MANIFEST: every file with its size) last. Its Kubernetes service account may write under that
   prefix only.
2. The import Job (pod_programs/lustre_import.py) runs once the staging Job and the Lustre instance are done: it
   calls Managed Lustre's importData (core/catalog/lustre.py) for that one model's prefix into the file system's
   root, waits for the long-running operation and fails with one line when it fails. Inside the prefix the files sit
   at the path they have on Lustre (`models/<org>/<name>@<commit>/...`, the same `model_path` as the other path's
   link), because importData needs a destination other than `/` to exist already and the import pod mounts no Lustre.
3. The prefetch Job, after the import, downloads the datasets into the Hub cache as before and, for the model, checks
   the imported directory against the staged manifest instead of downloading it (`--imported`), then writes the same
   marker with the same items: the job trains from the same `policy.model_name` and its run name (a fingerprint of the
   model at its commit, never of a path: core/recipes/resolve.py run_identity) does not change with the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import pod_programs
from core import catalog, prefetch
from core.lustre_paths import mount_root

if TYPE_CHECKING:
    from core.settings import Settings

LUSTRE_DOWNLOAD = "lustre-download"
BUCKET_IMPORT = "bucket-import"
WEIGHTS_PATHS = (LUSTRE_DOWNLOAD, BUCKET_IMPORT)

STAGE_SCRIPT = pod_programs.STAGE_WEIGHTS.name
IMPORT_SCRIPT = pod_programs.LUSTRE_IMPORT.name
# The bucket prefix the staging Job writes (a hierarchical-namespace folder with a managed folder of the same name,
# infra/weights_staging.py) and where its pod mounts it (GCS FUSE `only-dir`).
STAGING_PREFIX = "weights-staging"
STAGE_MOUNT = "/mnt/weights-staging"
# Written by the staging Job last, beside the files it lists; imported with them (a reader sees every file and size).
STAGED_MANIFEST = ".nemo-rl-gke-staged.json"
# Copies in flight at once: each streams into its own new object (GCS FUSE streaming writes; at most
# catalog.GCSFUSE_STREAMING_MAX_FILES on the CPU node, beyond which files fall back to staging on the sidecar's disk).
STAGE_WORKERS = catalog.GCSFUSE_STREAMING_MAX_FILES
# The slowest import the import Job's deadline still tolerates (an instance below it is far below every tier's
# minimum: 9,000 GiB at 1000 MB/s per TiB is 8.8 GB/s, the Dynamic tier's minimum 11.5 GB/s), plus margin.
SLOWEST_IMPORT_BYTES_PER_S = 500e6
IMPORT_MARGIN_SECONDS = 30 * 60
IMPORT_POLL_SECONDS = 10
# How long the import retries a refused call (403) while a fresh IAM grant propagates ("typically within 2 minutes,
# up to 7 minutes or longer": IAM "Access change propagation", https://cloud.google.com/iam/docs/access-change-propagation).
IMPORT_PERMISSION_WAIT_SECONDS = 7 * 60


# What staging adds to a stack (infra/weights_staging.py, workloads/weights_staging.py, the namespace's policies), as
# the settings' day-two records name resources (`<Type> <logical name>`): what a setting that turns staging on or off
# touches.
STAGING_TOUCHES = (
    "Job stage",
    "Job import",
    "ServiceAccount stage-ksa",
    "ServiceAccount import-ksa",
    "Folder weights-folder",
    "ManagedFolder weights-managed-folder",
    "ManagedFolderIamMember weights-stage-object-user",
    "BucketIAMMember weights-stage-bucket-list",
    "BucketIAMMember lustre-agent-read",
    "ServiceIdentity lustre-agent",
    "Static weights-import-role-created",
    "IAMCustomRole weights-import-role",
    "Account weights-import-account",
    "IAMMember weights-import-*",
    "NetworkPolicy netpol-weights-*",
    "FQDNNetworkPolicy fqdnpol-weights-*",
)


def staged(s: "Settings") -> bool:
    """This stack stages its job's weights in the bucket: `bucket-import` on a platform stack that prefetches for a
    job of its own. An experiment stack finds its platform's Lustre created already and downloads straight onto it."""
    return (
        s.startup.weights_path == BUCKET_IMPORT
        and s.startup.prefetch_weights
        and s.job.enabled
        and s.recipe is not None
        and s.recipe.model_revision is not None
        and not s.stack.platform_stack
    )


@dataclass(frozen=True)
class StagingPlan:
    item: str  # model:<org>/<name>@<commit>, as the prefetch names it
    bucket: str
    object_prefix: str  # weights-staging/<org>/<name>@<commit>/ (ends with '/', as importData requires)
    tree: str  # the model directory relative to the Lustre root: models/<org>/<name>@<commit>
    model_path: str  # the same directory on the pods' Lustre mount
    instance: str  # projects/<project>/locations/<zone>/instances/<id>
    download_bytes: int  # 0: a model the catalog does not know

    @property
    def gcs_source(self) -> str:
        return f"gs://{self.bucket}/{self.object_prefix}"

    @property
    def stage_dir(self) -> str:
        """Where the staging pod writes the model's files: the object prefix under the mounted staging folder."""
        return f"{STAGE_MOUNT}/{self.object_prefix[len(STAGING_PREFIX) + 1 :]}{self.tree}"


def plan(
    p: prefetch.PrefetchPlan, *, bucket: str, mount_path: str, project: str, zone: str, instance_id: str
) -> StagingPlan:
    root = mount_root(mount_path)
    if not p.model_path.startswith(root + "/"):
        raise ValueError(f"the model path {p.model_path!r} is not on the Lustre mount {root!r}")
    tree = p.model_path[len(root) + 1 :]
    return StagingPlan(
        item=p.items[0],
        bucket=bucket,
        object_prefix=f"{STAGING_PREFIX}/{p.model_name}@{p.revision}/",
        tree=tree,
        model_path=p.model_path,
        instance=f"projects/{project}/locations/{zone}/instances/{instance_id}",
        download_bytes=p.download_bytes,
    )


def of(s: "Settings") -> Optional[StagingPlan]:
    """The stack's staging plan, or None when it does not stage (staged())."""
    if not staged(s):
        return None
    r = s.recipe
    assert r is not None and r.model_revision is not None  # staged() checked both
    p = prefetch.plan(model_name=r.model_name, revision=r.model_revision, mount_path=s.workload.lustre_mount_path)
    return plan(
        p,
        bucket=s.bucket_name,
        mount_path=s.workload.lustre_mount_path,
        project=s.gcp_project,
        zone=s.zone,
        instance_id=s.names.lustre_instance,
    )


def stage_timeout_seconds(download_bytes: int) -> int:
    """The staging Job's deadline and Pulumi's wait: the prefetch's (the same download, to another place)."""
    return prefetch.job_timeout_seconds(download_bytes)


def import_timeout_seconds(download_bytes: int) -> int:
    """The import Job's deadline and Pulumi's wait: the bytes at the slowest tolerated import rate, the permission
    wait and margin; a model outside the catalog takes the prefetch's ceiling of bytes."""
    size = download_bytes or prefetch.UNKNOWN_MODEL_CEILING_BYTES
    return int(size / SLOWEST_IMPORT_BYTES_PER_S) + IMPORT_PERMISSION_WAIT_SECONDS + IMPORT_MARGIN_SECONDS


def stage_argv(p: StagingPlan, scripts_dir: str) -> list[str]:
    """The staging command, with the small image's `python` (its packages come from prefetch.install_argv)."""
    return [
        "python",
        f"{scripts_dir}/{STAGE_SCRIPT}",
        "--dest",
        p.stage_dir,
        "--manifest",
        STAGED_MANIFEST,
        "--workers",
        str(STAGE_WORKERS),
        "--rate",
        f"{prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S:.0f}",
        "--margin",
        str(prefetch.TIMEOUT_MARGIN_SECONDS),
        "--job-deadline",
        str(stage_timeout_seconds(p.download_bytes)),
        p.item,
    ]


def import_argv(p: StagingPlan, scripts_dir: str) -> list[str]:
    """The import command (standard library only: the small image without packages)."""
    return [
        "python",
        f"{scripts_dir}/{IMPORT_SCRIPT}",
        "--instance",
        p.instance,
        "--source",
        p.gcs_source,
        "--lustre-path",
        "/",
        "--api",
        catalog.LUSTRE_API,
        "--poll",
        str(IMPORT_POLL_SECONDS),
        "--permission-wait",
        str(IMPORT_PERMISSION_WAIT_SECONDS),
        "--timeout",
        str(import_timeout_seconds(p.download_bytes) - IMPORT_MARGIN_SECONDS // 2),
    ]
