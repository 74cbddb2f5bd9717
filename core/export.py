"""Keeping the result: where a run's checkpoints go in the stack's bucket, and how the Ray head gets there.

Pure code. The job's entrypoint ends with `workloads/export_checkpoints.py` (argv from `export_argv()`), run
on the Ray head after training succeeded; the head mounts the bucket through the GCS FUSE CSI driver (enabled
on every cluster of this project), restricted to the export prefix (`only-dir`), at EXPORT_MOUNT.

Identity (issue 19): the head runs as the stack's own export service account (core.naming Names.export_ksa),
whose Workload Identity principal may write and delete under the export prefix only (a managed folder of that
name carries roles/storage.objectUser) and list the bucket (Cloud Storage FUSE checks access with a bucket-level
listing); the GPU workers' service account holds no grant (infra/bucket.py).

Why GCS FUSE and not Managed Lustre's export API (research notes docs/research/ttfs.md §3): the copy runs
with the head's own identity, needs no role for the Lustre service agent and no Lustre admin permission
(`lustre.instances.exportData`) for the workload, and no long-running-operation client in the image. The
price is one pod's bandwidth instead of a server-side transfer.

Sidecar sizing (GKE "Configure the Cloud Storage FUSE CSI driver sidecar container"): the sidecar is injected
for Pods annotated `gke-gcsfuse/volumes: "true"` and sized by `gke-gcsfuse/{cpu,memory,ephemeral-storage}-
limit`. Cloud Storage FUSE before v3.0.0 stages each written file whole on local disk and uploads it on close;
v3 streams new sequential files (about 64 MB of memory per open file) and still falls back to staging
otherwise. GKE chooses the sidecar's version, so the ephemeral storage is sized for staging: the largest
checkpoint file (one per training rank) times the copy parallelism, with margin.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

SCRIPT = "export_checkpoints.py"
EXPORT_MOUNT = "/mnt/nemo-rl-export"
EXPORT_VOLUME = "export-bucket"
DEFAULT_PREFIX = "exports"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
COPY_WORKERS = 2
STAGING_MARGIN = 1.25
MIN_STAGING_GIB = 16
SIDECAR_CPU_LIMIT = "2"
SIDECAR_MEMORY_LIMIT = "4Gi"       # streaming writes: ~64 MB per open file; metadata caches
GIB = 1024 ** 3

_PREFIX = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")


@dataclass(frozen=True)
class Destination:
    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}"


def parse_destination(value: str, stack_bucket: str) -> tuple[Optional[Destination], Optional[str]]:
    """(destination, None) or (None, problem). `value` is `gs://<bucket>/<prefix>`, a bare prefix inside the
    stack's bucket, or empty for the default prefix; any other bucket is refused."""
    text = value.strip()
    if not text:
        return Destination(stack_bucket, DEFAULT_PREFIX), None
    if text.startswith("gs://"):
        bucket, _, prefix = text[len("gs://"):].partition("/")
        if bucket != stack_bucket:
            return None, (f"{text!r} is outside the stack's bucket gs://{stack_bucket}; exports go to "
                          f"gs://{stack_bucket}/<prefix> (or give just the prefix)")
    else:
        prefix = text
    prefix = prefix.strip("/")
    if not prefix or not _PREFIX.fullmatch(prefix) or any(part in (".", "..") for part in prefix.split("/")):
        return None, (f"{text!r} needs a prefix inside gs://{stack_bucket} made of letters, digits, '.', '_', "
                      "'-' and '/' (no '.' or '..' parts), e.g. gs://" + stack_bucket + "/exports")
    return Destination(stack_bucket, prefix), None


def export_argv(*, scripts_dir: str, checkpoint_dir: str, prefix: str, run_name: str, metric_name: Optional[str],
                higher_is_better: bool = True, exclude: tuple[str, ...] = ()) -> list[str]:
    # The mount's root is the export prefix (`only-dir`, volume()): the run's directory sits right under it.
    argv = ["uv", "run", "python", f"{scripts_dir}/{SCRIPT}", "--checkpoints", checkpoint_dir,
            "--root", EXPORT_MOUNT, "--destination", f"{EXPORT_MOUNT}/{run_name}",
            "--workers", str(COPY_WORKERS)]
    if metric_name:
        argv += ["--metric", metric_name] + ([] if higher_is_better else ["--lower-is-better"])
    for pattern in exclude:
        argv += ["--exclude", pattern]
    return argv


def staging_gib(checkpoint_bytes: int, training_ranks: int, workers: int = COPY_WORKERS) -> int:
    """Ephemeral storage for the sidecar: the largest file (one per training rank) x parallel copies, +25%."""
    largest = checkpoint_bytes / max(1, training_ranks)
    return max(MIN_STAGING_GIB, math.ceil(largest * workers * STAGING_MARGIN / GIB))


def pod_annotations(staging: int) -> dict[str, str]:
    return {
        "gke-gcsfuse/volumes": "true",
        "gke-gcsfuse/cpu-limit": SIDECAR_CPU_LIMIT,
        "gke-gcsfuse/memory-limit": SIDECAR_MEMORY_LIMIT,
        "gke-gcsfuse/ephemeral-storage-limit": f"{staging}Gi",
    }


def volume(dest: Destination) -> dict:
    """CSI ephemeral volume of the export prefix of the stack's bucket (`only-dir`): the head's identity may
    write there and nowhere else, and the folder exists before any pod mounts it (infra/bucket.py creates it and
    its managed folder with the bucket)."""
    return {"name": EXPORT_VOLUME, "csi": {"driver": GCSFUSE_DRIVER, "volumeAttributes": {
        "bucketName": dest.bucket, "mountOptions": f"implicit-dirs,only-dir={dest.prefix}"}}}


def volume_mount() -> dict:
    return {"name": EXPORT_VOLUME, "mountPath": EXPORT_MOUNT}
