"""The readiness gate's command line, rendered from the settings, and where its summary lands.

Pure code, no resources. The program itself (pod_programs/readiness_gate.py, with its decisions in
pod_programs/gate_checks.py) ships in the job-scripts ConfigMap and knows nothing of the stack: every figure
reaches it through the argv built here, from the settings and the catalog:

- nodes x GPUs per node: every GPU worker of the cluster (`workerReplicas`) x `cluster.gpus_per_node`: NeMo-RL's
  own placement groups may land on any of the workers, not only on `cluster.num_nodes` of them, so every node the
  job can use is tested (preview warns about workers the job leaves idle: core.settings.job.idle_gpu_warnings);
- thresholds: `gateMinAllReduceBusbw` / `gateMinAllGatherBusbw` or the catalog's defaults, and the GPU type's
  physical bound, above which a measurement is a timing error;
- Lustre: the instance's aggregate throughput (capacity x tier), the primary NIC of the machine type and
  `gateLustreFraction`, from which the program states its expected figure;
- the network plugin NCCL must use (catalog.NCCL_NET_PLUGIN, the pods' NCCL_NET) and NICs per node;
- once per node: where the stack's node records live and which others it trusts (NODE_RECORDS_DIR,
  PLATFORM_NODE_RECORDS_DIR), the window a node's full pass counts for (`readinessGate: on`: the catalog's
  GATE_NODE_PASS_WINDOW_SECONDS; `full`: 0) and `gateRerun`, whose new value discards every earlier pass.

The entrypoint (core/recipes/commands.py, `gate_command`) runs it first, with `set -e`: in `on` and `full` mode a
failed check exits 1 and the RayJob fails before NeMo-RL starts; `advisory` exits 0 after printing the failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from core import catalog, export
from core.recipes import GATE_MODULE, GATE_SCRIPT  # noqa: F401  (re-exported: the files the ConfigMap ships)
from pod_programs.gate_checks import NODE_NAME_ENV  # noqa: F401  (the GPU workers' node name, read by the gate)

if TYPE_CHECKING:
    from core.settings import Settings

GATE_DIR = "gate"  # under the Lustre mount: gate/<run name>/summary.json and attempts/<id>.json
# Node records (pod_programs/gate_checks.py: a node's recent full pass), under GATE_DIR. A run name never starts with
# a dot (core.recipes default_run_name strips it), so no run's summary directory can be one of these.
NODE_RECORDS_DIR = ".nodes"  # the stack's own: written by its gate after a full pass
# Where an experiment's Ray head sees its platform's records, read-only: the volume's `gate/.nodes` (the platform's
# own directory, written only by the platform's gate) mounted at `<mount>/gate/.platform-nodes`. Every experiment
# trusts the platform's records and its own, never another experiment's: a record an experimenter's pod wrote could
# be forged, and lets only that experiment skip its own checks (which `readinessGate: off` does anyway).
PLATFORM_NODE_RECORDS_DIR = ".platform-nodes"


def summary_dir(mount_path: str, run_name: str) -> str:
    return f"{mount_path.rstrip('/')}/{GATE_DIR}/{run_name}"


def summary_path(mount_path: str, run_name: str) -> str:
    return f"{summary_dir(mount_path, run_name)}/summary.json"


def node_records_dir(mount_path: str) -> str:
    return f"{mount_path.rstrip('/')}/{GATE_DIR}/{NODE_RECORDS_DIR}"


def platform_node_records_dir(mount_path: str) -> str:
    """In an experiment's pods: its platform's node records, mounted read-only (PLATFORM_NODE_RECORDS_DIR)."""
    return f"{mount_path.rstrip('/')}/{GATE_DIR}/{PLATFORM_NODE_RECORDS_DIR}"


def platform_node_records_subpath() -> str:
    """The platform's records on the volume (a `subPath`): what an experiment mounts read-only at
    platform_node_records_dir()."""
    return f"{GATE_DIR}/{NODE_RECORDS_DIR}"


@dataclass(frozen=True)
class GateArgs:
    """Exactly what the gate's command line is made of."""

    mode: str  # on | full | advisory
    nodes: int
    gpus_per_node: int
    gpu_type: str
    machine_type: str
    mount_path: str
    run_name: str
    min_allreduce_busbw: float  # GB/s at the largest all-reduce message
    min_allgather_busbw: float  # GB/s, all-gather sweep average
    lustre_aggregate_gbps: float  # instance capacity x tier, GB/s
    lustre_fraction: float
    pass_window_seconds: float = 0  # how long a node's full pass counts (0: the full gate every time)
    rerun_token: Optional[str] = None  # gateRerun
    experiment: bool = False  # an experiment stack: it also trusts its platform's node records
    run_done_marker: Optional[str] = None  # the run's trained marker (core.export): a gate without it is a retry

    @classmethod
    def of(cls, s: "Settings") -> Optional["GateArgs"]:
        """None when the gate is off or there is no job to gate."""
        if not s.gate.enabled or not s.job.enabled or s.recipe is None:
            return None
        acc = s.gpu.accelerator
        return cls(
            mode=s.gate.mode,
            nodes=s.worker_replicas,
            gpus_per_node=s.recipe.gpus_per_node,
            gpu_type=acc.gpu_type,
            machine_type=acc.machine_type,
            mount_path=s.workload.lustre_mount_path,
            run_name=s.run_name,
            min_allreduce_busbw=s.gate.allreduce_busbw,
            min_allgather_busbw=s.gate.allgather_busbw,
            lustre_aggregate_gbps=s.lustre.throughput_bytes_per_s / 1e9,
            lustre_fraction=s.gate.lustre_fraction,
            pass_window_seconds=s.gate.pass_window_seconds,
            rerun_token=s.gate.rerun,
            experiment=bool(s.stack.platform_stack),
            run_done_marker=export.trained_marker(s.workload.lustre_mount_path, s.run_name),
        )


def _num(x: float) -> str:
    """A number as a plain shell word (no exponent, no trailing zeros): `200`, `8.7890625`, `0.5`."""
    return f"{x:.6f}".rstrip("0").rstrip(".")


def options(a: GateArgs) -> list[str]:
    """The gate's options (core.recipes.gate_command puts the program in front, in the image's scripts dir)."""
    facts = catalog.GATE_GPU_FACTS[a.gpu_type]
    opts = {
        "nodes": a.nodes,
        "gpus-per-node": a.gpus_per_node,
        "backend": "nccl",
        "mode": "advisory" if a.mode == "advisory" else "enforce",
        "gpu-type": a.gpu_type,
        "summary-dir": summary_dir(a.mount_path, a.run_name),
        "min-allreduce-large-busbw": _num(a.min_allreduce_busbw),
        "min-allgather-avg-busbw": _num(a.min_allgather_busbw),
        "max-plausible-busbw": _num(facts.implausible_busbw_gbps),
        "sweep-min-bytes": catalog.GATE_SWEEP_MIN_BYTES,
        "sweep-max-bytes": catalog.GATE_SWEEP_MAX_BYTES,
        "warmup": catalog.GATE_SWEEP_WARMUP,
        "iters": catalog.GATE_SWEEP_ITERS,
        "expect-net": catalog.NCCL_NET_PLUGIN,
        "nics-per-node": catalog.RDMA_NICS_PER_NODE,
        "lustre-path": a.mount_path,
        "lustre-fstype": "lustre",
        "lustre-aggregate-gbps": _num(a.lustre_aggregate_gbps),
        "primary-nic-gbps": _num(catalog.PRIMARY_NIC_GBITPS[a.machine_type] / 8),
        "lustre-fraction": _num(a.lustre_fraction),
        "lustre-seconds": catalog.GATE_LUSTRE_SECONDS,
        "lustre-threads": catalog.GATE_LUSTRE_THREADS_PER_NODE,
        "lustre-block-bytes": catalog.GATE_LUSTRE_BLOCK_BYTES,
        "lustre-max-bytes-per-node": catalog.GATE_LUSTRE_MAX_BYTES_PER_NODE,
        "gib-dir": catalog.GIB_MOUNT,
        "node-records-dir": node_records_dir(a.mount_path),
        "node-pass-window-seconds": _num(a.pass_window_seconds),
    }
    argv: list[str] = []
    for k, v in opts.items():
        argv += [f"--{k}", str(v)]
    if a.experiment:
        argv += ["--trusted-node-records-dir", platform_node_records_dir(a.mount_path)]
    if a.rerun_token:
        argv += ["--rerun-token", a.rerun_token]
    if a.run_done_marker:
        argv += ["--run-done-marker", a.run_done_marker]
    return argv


def summary_command(namespace: str, rayjob: str, head_container: str, mount_path: str, run_name: str) -> str:
    """Prints the last gate summary from the head of the cluster the RayJob runs on (both job modes: the RayJob
    names its cluster in status.rayClusterName; KubeRay labels head pods ray.io/node-type=head)."""
    return head_cat_command(namespace, rayjob, head_container, summary_path(mount_path, run_name))


def head_cat_command(namespace: str, rayjob: str, head_container: str, path: str) -> str:
    """Prints a file from the head of the cluster the RayJob runs on (e.g. the attempts log on Lustre)."""
    cluster = f"$(kubectl -n {namespace} get rayjob {rayjob} -o jsonpath='{{.status.rayClusterName}}')"
    head = f"$(kubectl -n {namespace} get pod -l ray.io/node-type=head,ray.io/cluster={cluster} -o name)"
    return f"kubectl -n {namespace} exec {head} -c {head_container} -- cat {path}"
