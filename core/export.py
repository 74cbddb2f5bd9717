"""Keeping the result: where a run's checkpoints go in the stack's bucket, and how the Ray head gets there.

Pure code. The job's entrypoint ends with `pod_programs/export_checkpoints.py` (argv from `export_argv()`), run
on the Ray head after training succeeded; the head mounts the bucket through the GCS FUSE CSI driver (enabled
on every cluster of this project), restricted to the export prefix (`only-dir`), at EXPORT_MOUNT.

Identity (least privilege: only the export writes to the bucket): the head runs as the stack's own export service
account (core.naming Names.export_ksa), whose Workload Identity principal may write and delete under the export prefix
only (a managed folder of that name carries roles/storage.objectUser) and list the bucket (Cloud Storage FUSE checks
access with a bucket-level listing); the GPU workers' service account holds no grant (infra/bucket.py).

Why GCS FUSE and not Managed Lustre's export API (research notes docs/research/ttfs.md §3): the copy runs
with the head's own identity, needs no role for the Lustre service agent and no Lustre admin permission
(`lustre.instances.exportData`) for the workload, and no long-running-operation client in the image. The
price is one pod's bandwidth instead of a server-side transfer.

Sidecar sizing (GKE "Configure the Cloud Storage FUSE CSI driver sidecar container"): the sidecar is injected for
Pods annotated `gke-gcsfuse/volumes: "true"` and sized by `gke-gcsfuse/{cpu,memory,ephemeral-storage}-{request,
limit}`; a limit without a request becomes the request too (pkg/webhook/config.go `populateResource`, core/node_fit.py),
so both are given. The copy uses Cloud Storage FUSE's streaming writes (catalog GCSFUSE_*: on by default from GKE
1.33.2-gke.4655000, and switched on explicitly in the mount options): each new file goes to the bucket as it is
written, with about 96 MiB of memory per open file, and nothing is staged on local disk. The export keeps to what
streams: only new files (export_checkpoints.py removes an incomplete destination file before writing it again),
written sequentially, COPY_WORKERS at a time (at most the 4 files gcsfuse streams at once on the CPU node). So the
sidecar asks for a little memory and 1 GiB of disk, not room for the largest checkpoint file; its disk use is not
capped (a limit of "0"), so an unforeseen staging fallback slows the copy instead of evicting the Ray head.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import pod_programs
from core import catalog

SCRIPT = pod_programs.EXPORT.name
EXPORT_MOUNT = "/mnt/nemo-rl-export"
EXPORT_VOLUME = "export-bucket"
DEFAULT_PREFIX = "exports"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
COPY_WORKERS = 2
# Requests the scheduler counts (and Autopilot caps, core/node_fit.py) and limits; "0": no limit.
SIDECAR_REQUESTS = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}
SIDECAR_LIMITS = {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "0"}
MOUNT_OPTIONS = ("implicit-dirs", catalog.GCSFUSE_STREAMING_WRITES_OPTION)
GIB = 1024**3

_PREFIX = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")


@dataclass(frozen=True)
class Destination:
    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}"


# An experiment stack's exports: a folder of its own in its platform's bucket, beside the platform's prefix rather than
# under it (the platform's export identity holds its managed folder, which would cover nested ones); the platform
# creates the folder, the experiment stack its managed folder and grant (infra/experiment_export.py).
EXPERIMENTS_PREFIX = "experiments"


def experiment_prefix(experiment: str) -> str:
    return f"{EXPERIMENTS_PREFIX}/{experiment}"


def parse_destination(value: str, stack_bucket: str) -> tuple[Optional[Destination], Optional[str]]:
    """(destination, None) or (None, problem). `value` is `gs://<bucket>/<prefix>`, a bare prefix inside the
    stack's bucket, or empty for the default prefix; any other bucket is refused."""
    text = value.strip()
    if not text:
        return Destination(stack_bucket, DEFAULT_PREFIX), None
    if text.startswith("gs://"):
        bucket, _, prefix = text[len("gs://") :].partition("/")
        if bucket != stack_bucket:
            return None, (
                f"{text!r} is outside the stack's bucket gs://{stack_bucket}; exports go to "
                f"gs://{stack_bucket}/<prefix> (or give just the prefix)"
            )
    else:
        prefix = text
    prefix = prefix.strip("/")
    if not prefix or not _PREFIX.fullmatch(prefix) or any(part in (".", "..") for part in prefix.split("/")):
        return None, (
            f"{text!r} needs a prefix inside gs://{stack_bucket} made of letters, digits, '.', '_', "
            "'-' and '/' (no '.' or '..' parts), e.g. gs://" + stack_bucket + "/exports"
        )
    return Destination(stack_bucket, prefix), None


# Written by the job's entrypoint once NeMo-RL exited 0 (experiment stacks): the export Job on the CPU pool waits for
# it, so the copy runs after the GPU cluster is gone and a failed copy never reruns training.
TRAINED_DIR = "trained"


def trained_marker(mount_path: str, run_name: str) -> str:
    return f"{mount_path.rstrip('/')}/{TRAINED_DIR}/{run_name}"


def mark_trained_argv(mount_path: str, run_name: str) -> list[list[str]]:
    """The entrypoint's last commands: the marker the export Job waits for."""
    marker = trained_marker(mount_path, run_name)
    return [["mkdir", "-p", marker.rsplit("/", 1)[0]], ["touch", marker]]


# The optimizer state of a DTensor (DCP) checkpoint is a directory of its own, <step>/policy/optimizer (NeMo-RL
# grpo.py passes optimizer_path=<step>/policy/optimizer: v0.4.0 nemo_rl/algorithms/grpo.py L1281-1292, v0.5.0
# L1533-1540, v0.7.0 L2937-2944). A Megatron checkpoint embeds it in the weights' iter_* shards ("In Megatron,
# optimizer_path is only a flag to indicate that the optimizer state is embedded in the weights_path": v0.7.0
# nemo_rl/utils/checkpoint.py L175-183; Megatron-Bridge training/checkpointing.py generate_state_dict at 62f4704b),
# so no path of it can be left out: docs/research/platform.md §8.
OPTIMIZER_GLOB = "policy/optimizer"


def optimizer_excludes(train_backend: str, keep_optimizer: bool) -> tuple[str, ...]:
    return () if keep_optimizer or train_backend == "megatron" else (OPTIMIZER_GLOB,)


def export_argv(
    *,
    scripts_dir: str,
    checkpoint_dir: str,
    prefix: str,
    run_name: str,
    metric_name: Optional[str],
    higher_is_better: bool = True,
    exclude: tuple[str, ...] = (),
    python: tuple[str, ...] = ("uv", "run", "python"),
) -> list[str]:
    # The mount's root is the export prefix (`only-dir`, volume()): the run's directory sits right under it.
    argv = [
        *python,
        f"{scripts_dir}/{SCRIPT}",
        "--checkpoints",
        checkpoint_dir,
        "--root",
        EXPORT_MOUNT,
        "--destination",
        f"{EXPORT_MOUNT}/{run_name}",
        "--workers",
        str(COPY_WORKERS),
    ]
    if metric_name:
        argv += ["--metric", metric_name] + ([] if higher_is_better else ["--lower-is-better"])
    for pattern in exclude:
        argv += ["--exclude", pattern]
    return argv


def pod_annotations() -> dict[str, str]:
    """The sidecar's injection and every request and limit (a limit alone would also become the request)."""
    out = {"gke-gcsfuse/volumes": "true"}
    for res in ("cpu", "memory", "ephemeral-storage"):
        out[f"gke-gcsfuse/{res}-request"] = SIDECAR_REQUESTS[res]
        out[f"gke-gcsfuse/{res}-limit"] = SIDECAR_LIMITS[res]
    return out


def volume(dest: Destination) -> dict:
    """CSI ephemeral volume of the export prefix of the stack's bucket (`only-dir`): the head's identity may
    write there and nowhere else, and the folder exists before any pod mounts it (infra/bucket.py creates it and
    its managed folder with the bucket)."""
    return {
        "name": EXPORT_VOLUME,
        "csi": {
            "driver": GCSFUSE_DRIVER,
            "volumeAttributes": {
                "bucketName": dest.bucket,
                "mountOptions": ",".join([*MOUNT_OPTIONS, f"only-dir={dest.prefix}"]),
            },
        },
    }


def volume_mount() -> dict:
    return {"name": EXPORT_VOLUME, "mountPath": EXPORT_MOUNT}
