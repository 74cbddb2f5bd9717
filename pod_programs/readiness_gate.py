"""Readiness gate: prove the GPU nodes, their NCCL path over RDMA and Lustre work before training starts.

Usage (the RayJob entrypoint runs it on the Ray head with NeMo-RL's `uv run python`, before training):
    python readiness_gate.py --nodes 2 --gpus-per-node 8 --backend nccl --summary-dir <mount>/gate/<run> ...
    (`--help` lists every option; core/recipes/commands.py renders them from the stack settings.)

Shipped verbatim in the job-scripts ConfigMap with gate_checks.py (its decisions) and mounted read-only on
the Ray head. It runs in the NeMo-RL image and imports only the standard library, Ray, torch and NVML's
Python binding (`nvidia-ml-py`, a direct dependency of NeMo-RL), all in that image's venv
(/opt/nemo_rl_venv, which is also the Python of the Ray workers). Nothing here depends on the stack: every
figure comes on the command line.

What it does, on exactly the nodes and NCCL environment training uses:
1. Places one bundle per GPU node (`STRICT_SPREAD`, {"GPU": gpus_per_node} each), so every check runs on a
   different node, on GPUs the Ray workers really hold.
2. GPU health per node through NVML, in one task holding the node's GPUs: device count (NVML and what Ray
   allocated), driver, ECC mode, volatile/aggregate uncorrectable ECC, row remapping. Xid history lives in
   the kernel log, which these unprivileged pods cannot read; it is left out (GKE's DCGM metrics show it).
3. Lustre from every node: the mount's filesystem type, a write/fsync/read-back/delete probe, then a
   duration-based parallel O_DIRECT write from every node at the same time, and an O_DIRECT read by each
   node of the files the NEXT node wrote (single node: its own), so neither the page cache nor the writer's
   client answers.
4. All-reduce and all-gather sweeps with torch.distributed over every GPU (one Ray task per GPU, like
   NeMo-RL's workers), bandwidth as nccl-tests defines it, with NCCL_DEBUG=INFO written to a file per rank
   and parsed for the network plugin, GPUDirect RDMA and the NICs that carried inter-node traffic.
Then prints one line per check, writes `<summary-dir>/summary.json` (and `attempts/<id>.json`) and exits
1 when a check failed in `enforce` mode, which fails the RayJob; `advisory` mode logs and exits 0.

Once per node, not once per submission (`--node-records-dir`, `--node-pass-window-seconds`): after a full gate that
passed, each node gets a record (its name, boot ID, driver and gIB digest, the terms it passed on). A later gate whose
every node has a valid record within the window, in its own directory or one it trusts
(`--trusted-node-records-dir`, read only), runs steps 1, 2 and the Lustre mount probe and skips the Lustre and NCCL
sweeps; any node without one makes it run everything on every node, and a new `--rerun-token` discards every pass
recorded before it (gate_checks.py: what makes a record valid). A gate of a run whose earlier gate ran and whose
training did not end (`--run-done-marker` missing: a retry after a lost node, a NCCL error or a stop) discards every
pass that earlier attempt relied on or wrote, so a retry always runs in full. A fast pass writes no record: a record
always dates from the sweeps it stands for.

`--backend gloo` runs the same program on CPU nodes (bundles of CPUs; GPU health and the NCCL log checks are
skipped and say so); the project's tests use it on a local Ray cluster.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import os
import shutil
import sys
import time
import traceback
from typing import Any

import gate_checks as gc  # shipped next to this file; only the driver (on the head) imports it

EXIT_USAGE = 2
RERUN_MARKER = ".gate-rerun.json"  # in the node-records directory: the last gateRerun value seen and its time


# --- runs on the GPU nodes (Ray pickles these by value: no reference to gate_checks) -----------------------
def node_facts() -> dict:
    import socket

    import ray

    return {
        "host": socket.gethostname(),
        "ip": ray.util.get_node_ip_address(),
        "node_id": ray.get_runtime_context().get_node_id(),
    }


def tree_digest(root: str):
    """`sha256:<hex>` of every file under `root` (relative paths, symlink targets, contents), or None without it:
    what identifies the gIB plugin installed on the node."""
    import hashlib
    import os

    if not os.path.isdir(root):
        return None
    h = hashlib.sha256()
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(d, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            if os.path.islink(path):
                h.update(b"-> " + os.readlink(path).encode() + b"\0")
                continue
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return "sha256:" + h.hexdigest()


def probe_gpus(backend: str, node_name_env: str = "", boot_id_path: str = "", gib_dir: str = "") -> dict:
    """NVML facts of every GPU of this node, plus how many GPUs Ray allocated to this task, and what names the node
    and its boot (its name from the pod's environment, the kernel's boot ID, a digest of the gIB plugin)."""
    import os

    import ray

    facts = node_facts()
    facts["ray_gpu_ids"] = [str(g) for g in ray.get_gpu_ids()]
    if node_name_env:
        facts["node_name"] = os.environ.get(node_name_env, "")
    if boot_id_path:
        try:
            with open(boot_id_path, encoding="ascii") as f:
                facts["boot_id"] = f.read().strip()
        except OSError:
            facts["boot_id"] = ""
    if gib_dir:
        try:
            facts["gib_digest"] = tree_digest(gib_dir)
        except OSError as e:
            facts["gib_digest"] = f"unreadable: {e}"
    if backend != "nccl":
        return facts
    facts["cuda_visible_count"] = len(facts["ray_gpu_ids"])
    facts["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    try:
        import pynvml
    except ImportError as e:
        return {**facts, "error": f"NVML binding not importable: {e}"}

    def text(v):
        return v.decode() if isinstance(v, bytes) else str(v)

    def optional(call, *args):
        try:
            return call(*args)
        except pynvml.NVMLError_NotSupported:
            return None

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return {**facts, "error": f"nvmlInit failed: {e}"}
    try:
        facts["driver_version"] = text(pynvml.nvmlSystemGetDriverVersion())
        devices = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            d = {"index": i, "uuid": text(pynvml.nvmlDeviceGetUUID(h)), "name": text(pynvml.nvmlDeviceGetName(h))}
            mode = optional(pynvml.nvmlDeviceGetEccMode, h)
            d["ecc_mode_current"] = None if mode is None else mode[0] == pynvml.NVML_FEATURE_ENABLED
            uncorrected = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            d["ecc_uncorrected_volatile"] = optional(
                pynvml.nvmlDeviceGetTotalEccErrors, h, uncorrected, pynvml.NVML_VOLATILE_ECC
            )
            d["ecc_uncorrected_aggregate"] = optional(
                pynvml.nvmlDeviceGetTotalEccErrors, h, uncorrected, pynvml.NVML_AGGREGATE_ECC
            )
            rows = optional(pynvml.nvmlDeviceGetRemappedRows, h)
            if rows is not None:  # (correctable rows, uncorrectable rows, pending, failure occurred)
                d.update(remap_pending=bool(rows[2]), remap_failure=bool(rows[3]))
            devices.append(d)
        facts["devices"] = devices
    except pynvml.NVMLError as e:
        facts["error"] = f"NVML query failed: {e}"
    finally:
        pynvml.nvmlShutdown()
    return facts


def pick_master() -> str:
    """`ip:port` for torch.distributed's rendezvous, on rank 0's node (a port free right now)."""
    import socket

    import ray

    with socket.socket() as s:
        s.bind(("", 0))
        port = s.getsockname()[1]
    return f"{ray.util.get_node_ip_address()}:{port}"


def run_rank(
    rank: int,
    world: int,
    master: str,
    backend: str,
    sizes: list,
    warmup: int,
    iters: int,
    timeout_s: float,
    debug_dir: str,
) -> dict:
    """One rank of the sweeps: per-iteration seconds of all-reduce and all-gather at every size, a
    correctness check, and this process's NCCL debug file (NCCL_DEBUG_FILE from the task's runtime env)."""
    import datetime
    import glob
    import os
    import socket
    import time

    import torch
    import torch.distributed as dist

    os.makedirs(debug_dir, exist_ok=True)  # before NCCL's first call opens NCCL_DEBUG_FILE in it
    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)  # Ray set CUDA_VISIBLE_DEVICES to this task's GPU

    def sync():
        if backend == "nccl":
            torch.cuda.synchronize()

    dist.init_process_group(
        backend,
        init_method=f"tcp://{master}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    out: dict[str, Any] = {
        "rank": rank,
        "host": socket.gethostname(),
        "times": {"all_reduce": {}, "all_gather": {}},
        "counts": {"all_reduce": {}, "all_gather": {}},
        "wrong": 0,
    }
    try:
        for coll in ("all_reduce", "all_gather"):
            for size in sizes:
                # nccl-tests rounding: float32 elements; the all-gather count is per rank (S = count x 4 x n).
                count = size // 4 if coll == "all_reduce" else size // (4 * world)
                if count == 0:
                    continue
                if coll == "all_reduce":
                    buf = torch.zeros(count, dtype=torch.float32, device=device)
                    op = functools.partial(dist.all_reduce, buf)
                    s_bytes = count * 4
                else:
                    inp = torch.zeros(count, dtype=torch.float32, device=device)
                    res = torch.empty(count * world, dtype=torch.float32, device=device)
                    op = functools.partial(dist.all_gather_into_tensor, res, inp)
                    s_bytes = count * 4 * world
                for _ in range(warmup):
                    op()
                sync()
                dist.barrier()
                sync()
                t0 = time.perf_counter()
                for _ in range(iters):
                    op()
                sync()
                out["times"][coll][s_bytes] = (time.perf_counter() - t0) / iters
                out["counts"][coll][s_bytes] = count
                del op
                if coll == "all_reduce":
                    del buf
                else:
                    del inp, res
        # Correctness, as nccl-tests' -c 1: known inputs, exact expected outputs.
        n = 1024 * world
        x = torch.full((n,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(x)
        out["wrong"] += int((x != world * (world + 1) / 2).sum().item())
        part = torch.full((1024,), float(rank), dtype=torch.float32, device=device)
        whole = torch.empty(n, dtype=torch.float32, device=device)
        dist.all_gather_into_tensor(whole, part)
        expect = torch.arange(world, dtype=torch.float32, device=device).repeat_interleave(1024)
        out["wrong"] += int((whole != expect).sum().item())
        sync()
    finally:
        dist.destroy_process_group()
    logs = []
    for path in sorted(glob.glob(os.path.join(debug_dir, "*"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            logs.append(f.read())
    out["nccl_log"] = "".join(logs)
    return out


def probe_lustre(probe_dir: str) -> dict:
    """The mount table this node sees, and whether it can write, fsync, read back and delete a file."""
    import os
    import socket

    facts = {"host": socket.gethostname()}
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        facts["mountinfo"] = f.read()
    probe = os.path.join(probe_dir, f"probe-{socket.gethostname()}-{os.getpid()}")
    payload = os.urandom(4096)
    try:
        os.makedirs(probe_dir, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        with open(probe, "rb") as f:
            if f.read() != payload:
                facts["error"] = f"{socket.gethostname()}: read back differs from what was written"
        os.remove(probe)
    except OSError as e:
        facts["error"] = f"{socket.gethostname()}: {e}"
    return facts


def lustre_io(
    mode: str, directory: str, threads: int, block: int, seconds: float, max_bytes: int, start_at: float
) -> dict:
    """Duration-based parallel O_DIRECT I/O from this node: `threads` files `t<j>.dat` in `directory`.

    write: each thread writes `block`-byte page-aligned buffers until the deadline or its share of
    `max_bytes`, then fsyncs. read: each thread reads its file once (until EOF or the deadline). O_DIRECT
    bypasses this node's page cache; the read side reads files another node wrote."""
    import mmap
    import os
    import socket
    import threading
    import time

    host = socket.gethostname()
    per_thread = max(block, (max_bytes // threads) // block * block)
    done = [0] * threads
    errors = []
    now = time.time()
    if start_at > now:
        time.sleep(start_at - now)
    start = time.time()
    deadline = start + seconds

    def work(j):
        buf = mmap.mmap(-1, block)  # anonymous mappings are page-aligned, as O_DIRECT needs
        path = os.path.join(directory, f"t{j}.dat")
        flags = os.O_DIRECT | (os.O_WRONLY | os.O_CREAT | os.O_TRUNC if mode == "write" else os.O_RDONLY)
        try:
            fd = os.open(path, flags, 0o644)
            try:
                while time.time() < deadline and done[j] < per_thread:
                    n = os.write(fd, buf) if mode == "write" else os.readv(fd, [buf])
                    if n <= 0:
                        break
                    done[j] += n
                if mode == "write":
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            errors.append(f"{host} {mode} {path}: {e}")
        finally:
            buf.close()

    if mode == "write":
        os.makedirs(directory, exist_ok=True)
    workers = [threading.Thread(target=work, args=(j,)) for j in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out = {"host": host, "bytes": sum(done), "start": start, "end": time.time()}
    if errors:
        out["error"] = "; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)" if len(errors) > 3 else "")
    return out


# --- runs on the head (the job's driver) ------------------------------------------------------------
def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="readiness_gate.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, required=True, help="GPU nodes the training uses")
    p.add_argument("--gpus-per-node", type=int, required=True)
    p.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    p.add_argument("--mode", choices=("enforce", "advisory"), default="enforce")
    p.add_argument("--gpu-type", default="", help="for the summary")
    p.add_argument("--summary-dir", required=True, help="where summary.json goes (on Lustre)")
    p.add_argument("--min-allreduce-large-busbw", type=float, required=True, help="GB/s at the largest size")
    p.add_argument("--min-allgather-avg-busbw", type=float, required=True, help="GB/s, sweep average")
    p.add_argument("--max-plausible-busbw", type=float, required=True, help="GB/s; above is a timing error")
    p.add_argument("--sweep-min-bytes", type=int, default=1024)
    p.add_argument("--sweep-max-bytes", type=int, default=8 * 1024**3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--expect-net", default="gIB", help="NCCL network plugin that must carry inter-node traffic")
    p.add_argument("--nics-per-node", type=int, default=8)
    p.add_argument("--lustre-path", required=True, help="the Lustre mount")
    p.add_argument("--lustre-fstype", default="lustre")
    p.add_argument("--lustre-aggregate-gbps", type=float, required=True, help="instance throughput, GB/s")
    p.add_argument("--primary-nic-gbps", type=float, required=True, help="per node, GB/s")
    p.add_argument("--lustre-fraction", type=float, required=True)
    p.add_argument("--lustre-seconds", type=float, default=15)
    p.add_argument("--lustre-threads", type=int, default=16)
    p.add_argument("--lustre-block-bytes", type=int, default=16 * 1024**2)
    p.add_argument("--lustre-max-bytes-per-node", type=int, default=64 * 1024**3)
    p.add_argument(
        "--lustre-sync-seconds",
        type=float,
        default=5,
        help="head start given to the I/O tasks so every node begins at the same moment",
    )
    p.add_argument(
        "--placement-timeout",
        type=float,
        default=1800,
        help="seconds to wait for the GPU nodes (scale-up from zero and image pull included)",
    )
    p.add_argument("--step-timeout", type=float, default=900, help="seconds per measuring step")
    p.add_argument(
        "--node-records-dir",
        default="",
        help="this gate's node records (read, and written after a full pass); empty: the full gate, no records",
    )
    p.add_argument(
        "--trusted-node-records-dir",
        action="append",
        default=[],
        help="another directory of node records this gate trusts (read only; repeatable)",
    )
    p.add_argument(
        "--node-pass-window-seconds",
        type=float,
        default=0,
        help="how long a node's full pass lets a later gate skip the Lustre and NCCL sweeps on it; 0: never",
    )
    p.add_argument("--rerun-token", default="", help="gateRerun: a new value discards every pass recorded before it")
    p.add_argument(
        "--run-done-marker",
        default="",
        help="the run's trained marker: without it, a gate after this run's earlier gate is a retry and runs in full",
    )
    p.add_argument("--gib-dir", default="/usr/local/gib", help="the gIB plugin directory on the GPU nodes")
    a = p.parse_args(argv)
    if a.nodes < 1 or a.gpus_per_node < 1:
        p.error("--nodes and --gpus-per-node must be >= 1")
    if not 0 < a.lustre_fraction <= 1:
        p.error("--lustre-fraction must be in (0, 1]")
    if a.lustre_block_bytes % mmap_page() != 0:
        p.error("--lustre-block-bytes must be a multiple of the page size (O_DIRECT)")
    return a


def mmap_page() -> int:
    import mmap

    return mmap.PAGESIZE


def _error_text(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(e).__name__


class Gate:
    def __init__(self, args: argparse.Namespace):
        import ray

        self.ray = ray
        self.a = args
        self.checks: list[gc.Check] = []
        self.report: dict = {}
        self.run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"
        self.started = time.time()
        self.sweeps_skipped = ""  # why the Lustre and NCCL sweeps did not run (decide_sweeps), or ""
        self.identities: list = []
        self.reuse: list = []
        self.need = None

    # Ray plumbing ------------------------------------------------------------------------------------
    def bundle_resources(self) -> dict:
        g = self.a.gpus_per_node
        return {"GPU": g} if self.a.backend == "nccl" else {"CPU": g}

    def in_bundle(self, fn, index: int, *, whole: bool = False, runtime_env: dict | None = None, max_calls: int = 0):
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        g = self.a.gpus_per_node if whole else 1
        res = {"num_gpus": g, "num_cpus": 0} if self.a.backend == "nccl" else {"num_gpus": 0, "num_cpus": g}
        opts = dict(
            res,
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=self.pg, placement_group_bundle_index=index
            ),
        )
        if runtime_env:
            opts["runtime_env"] = runtime_env
        remote = self.ray.remote(max_calls=max_calls)(fn) if max_calls else self.ray.remote(fn)
        return remote.options(**opts)

    def on_node(self, fn, node_id: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return self.ray.remote(fn).options(
            num_cpus=0, num_gpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        )

    def gather(self, step: str, refs: list):
        """ray.get with the step timeout; a failure becomes one failing check naming the step."""
        try:
            return self.ray.get(refs, timeout=self.a.step_timeout)
        except self.ray.exceptions.GetTimeoutError:
            for r in refs:
                self.ray.cancel(r, force=True)
            self.checks.append(
                gc.Check(step, gc.FAIL, f"no answer after {self.a.step_timeout:g} s", "every node answers")
            )
        except self.ray.exceptions.RayError as e:
            self.checks.append(gc.Check(step, gc.FAIL, _error_text(e), "the step runs on every node"))
        return None

    # steps ----------------------------------------------------------------------------------------------
    def place(self) -> bool:
        from ray.util.placement_group import placement_group

        a = self.a
        self.pg = placement_group(
            [self.bundle_resources()] * a.nodes, strategy="STRICT_SPREAD", name=f"readiness-gate-{self.run_id}"
        )
        try:
            self.ray.get(self.pg.ready(), timeout=a.placement_timeout)
        except self.ray.exceptions.GetTimeoutError:
            self.checks.append(
                gc.Check(
                    "placement",
                    gc.FAIL,
                    f"{a.nodes} bundles of {self.bundle_resources()} not placed after {a.placement_timeout:g} s",
                    f"{a.nodes} nodes with {a.gpus_per_node} free "
                    f"{'GPUs' if a.backend == 'nccl' else 'CPUs'} each (are the Ray workers up and idle?)",
                )
            )
            return False
        return True

    def gpus(self) -> list[dict]:
        a = self.a
        probes = self.gather(
            "gpu.probe",
            [
                self.in_bundle(probe_gpus, i, whole=True).remote(
                    a.backend, gc.NODE_NAME_ENV, gc.BOOT_ID_PATH, a.gib_dir
                )
                for i in range(a.nodes)
            ],
        )
        if probes is None:
            return []
        distinct = {p["node_id"] for p in probes}
        self.checks.append(
            gc.Check(
                "placement",
                gc.PASS if len(distinct) == a.nodes else gc.FAIL,
                f"{len(distinct)} distinct nodes",
                f"{a.nodes}",
                ", ".join(p["host"] for p in probes),
            )
        )
        if a.backend == "nccl":
            for p in probes:
                self.checks.extend(gc.gpu_checks(p, expected_gpus=a.gpus_per_node))
        else:
            self.checks.append(
                gc.Check("gpu", gc.SKIP, "backend gloo", "NVML on GPU nodes", "CPU run: no GPU to check")
            )
        self.report["nodes"] = [{k: v for k, v in p.items() if k != "devices"} for p in probes]
        self.report["gpus"] = {p["host"]: p.get("devices", []) for p in probes}
        return probes

    # node records ------------------------------------------------------------------------------------------
    def terms(self, mounts: dict) -> "gc.PassTerms":
        """What this gate asks of a node's recorded pass (and what its own pass proves)."""
        a = self.a
        expected, _ = gc.lustre_expected(a.lustre_fraction, a.lustre_aggregate_gbps, a.nodes, a.primary_nic_gbps)
        return gc.PassTerms(
            backend=a.backend,
            expect_net=a.expect_net,
            gpus_per_node=a.gpus_per_node,
            nics_per_node=a.nics_per_node,
            inter_node=a.nodes > 1,
            min_allreduce_large_busbw=a.min_allreduce_large_busbw,
            min_allgather_avg_busbw=a.min_allgather_avg_busbw,
            lustre_gbps_per_node=expected / a.nodes,
            lustre_source="|".join(sorted({m[2] for m in mounts.values()})),
        )

    def decide_sweeps(self, probes: list[dict], mounts: dict) -> str:
        """Why the Lustre and NCCL sweeps may be skipped (every node has a valid recent pass), or "" to run them.
        Records how each node was judged in the summary."""
        a = self.a
        self.need = self.terms(mounts)
        self.identities = [gc.NodeIdentity.of(p) for p in probes]
        if not a.node_records_dir:
            return ""
        floor, marker = gc.rerun_floor(
            gc.read_json(os.path.join(a.node_records_dir, RERUN_MARKER)), a.rerun_token, self.started
        )
        if marker is not None:
            try:
                gc.write_json_atomically(os.path.join(a.node_records_dir, RERUN_MARKER), marker)
            except OSError as e:  # the floor holds for this gate; the next one sees the token as new again
                print(f"{gc.PREFIX} node records: cannot keep the gateRerun marker: {e}", flush=True)
        why = "the last gateRerun"
        try:
            done_at = os.stat(a.run_done_marker).st_mtime if a.run_done_marker else None
        except OSError:
            done_at = None
        retry = gc.retry_floor(gc.read_json(os.path.join(a.summary_dir, "summary.json")), done_at)
        if retry is not None and retry > floor:
            floor, why = retry, gc.RETRY_WHY
        dirs = [a.node_records_dir, *a.trusted_node_records_dir]
        verdicts = []
        for probe, ident in zip(probes, self.identities, strict=True):
            if ident is None:
                verdicts.append(f"{probe.get('host', '?')}: no node name or boot ID (the full gate)")
                continue
            candidates = [(d, gc.read_json(os.path.join(d, f"{ident.node}.json"))) for d in dirs]
            v = gc.choose_record(
                ident,
                candidates,
                self.need,
                now=self.started,
                window_s=a.node_pass_window_seconds,
                not_before=floor,
                not_before_why=why,
            )
            verdicts.append(v.describe())
            self.reuse.append(v)
        valid = len(self.reuse) == a.nodes and all(v.valid for v in self.reuse)
        window = f"{a.node_pass_window_seconds / 3600:g} h"
        self.report["reuse"] = {
            "sweeps": "skipped" if valid else "run",
            "window_seconds": a.node_pass_window_seconds,
            "not_before": floor,
            "nodes": verdicts,
        }
        if valid:
            why = f"every node passed them within {window} on this boot, driver and gIB: " + "; ".join(verdicts)
            print(f"{gc.PREFIX} sweeps skipped: {why}", flush=True)
            return why
        print(f"{gc.PREFIX} full gate: not every node has a recent pass ({'; '.join(verdicts)})", flush=True)
        return ""

    def write_records(self, summary: str) -> None:
        """After a full gate that passed: one record per named node, in this gate's own directory only."""
        a = self.a
        if not a.node_records_dir or self.sweeps_skipped or any(c.failed for c in self.checks):
            return
        written, errors = [], []
        for ident in self.identities:
            if ident is None:
                continue
            record = gc.node_record(ident, self.need, passed_at=self.started, run_id=self.run_id, summary=summary)
            try:
                gc.write_json_atomically(os.path.join(a.node_records_dir, f"{ident.node}.json"), record)
                written.append(ident.node)
            except OSError as e:
                errors.append(f"{ident.node}: {e}")
        self.report["node_records"] = {"written": written, "errors": errors}
        if errors:  # not a failed check: the next submission runs the full gate on those nodes
            print(f"{gc.PREFIX} node records: not written ({'; '.join(errors)})", flush=True)

    def lustre(self, probes: list[dict]) -> None:
        a = self.a
        node_ids = [p["node_id"] for p in probes]
        data_dir = os.path.join(a.lustre_path, ".readiness-gate", self.run_id)
        facts = self.gather("lustre.probe", [self.on_node(probe_lustre, n).remote(data_dir) for n in node_ids])
        if facts is None:
            return
        try:
            mounts = {f"node{i} {f['host']}": gc.mount_of(a.lustre_path, f["mountinfo"]) for i, f in enumerate(facts)}
            self.sweeps_skipped = self.decide_sweeps(probes, mounts)
            if self.sweeps_skipped:
                expected, how = gc.lustre_expected(
                    a.lustre_fraction, a.lustre_aggregate_gbps, a.nodes, a.primary_nic_gbps
                )
                self.checks.extend(
                    gc.lustre_checks(
                        mounts=mounts,
                        expected_fstype=a.lustre_fstype,
                        probe_errors=[f["error"] for f in facts if "error" in f],
                        write_parts=[],
                        read_parts=[],
                        expected_gbps=expected,
                        how=how,
                        cross_node=a.nodes > 1,
                        throughput_skipped=self.sweeps_skipped,
                    )
                )
                self.report["lustre"] = {"mounts": mounts, "expected_gbps": expected}
                return
            start_at = time.time() + a.lustre_sync_seconds
            io = dict(
                threads=a.lustre_threads,
                block=a.lustre_block_bytes,
                seconds=a.lustre_seconds,
                max_bytes=a.lustre_max_bytes_per_node,
            )
            writes = (
                self.gather(
                    "lustre.write",
                    [
                        self.on_node(lustre_io, n).remote(
                            "write", os.path.join(data_dir, f"node{i}"), start_at=start_at, **io
                        )
                        for i, n in enumerate(node_ids)
                    ],
                )
                or []
            )
            # Each node reads what the next node wrote (itself on a single node).
            start_at = time.time() + a.lustre_sync_seconds
            reads = (
                self.gather(
                    "lustre.read",
                    [
                        self.on_node(lustre_io, n).remote(
                            "read", os.path.join(data_dir, f"node{(i + 1) % len(node_ids)}"), start_at=start_at, **io
                        )
                        for i, n in enumerate(node_ids)
                    ],
                )
                or []
            )
            expected, how = gc.lustre_expected(a.lustre_fraction, a.lustre_aggregate_gbps, a.nodes, a.primary_nic_gbps)
            self.checks.extend(
                gc.lustre_checks(
                    mounts=mounts,
                    expected_fstype=a.lustre_fstype,
                    probe_errors=[f["error"] for f in facts if "error" in f],
                    write_parts=writes,
                    read_parts=reads,
                    expected_gbps=expected,
                    how=how,
                    cross_node=a.nodes > 1,
                )
            )
            self.report["lustre"] = {"mounts": mounts, "write": writes, "read": reads, "expected_gbps": expected}
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)

    def collectives(self) -> None:
        a = self.a
        world = a.nodes * a.gpus_per_node
        sizes = gc.sweep_sizes(a.sweep_min_bytes, a.sweep_max_bytes)
        master = self.gather("nccl.rendezvous", [self.in_bundle(pick_master, 0).remote()])
        if master is None:
            return
        debug_root = f"/tmp/readiness-gate-{self.run_id}"
        refs = []
        for rank in range(world):
            debug_dir = f"{debug_root}/rank{rank}"
            env = {
                "NCCL_DEBUG": "INFO",
                "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV",
                "NCCL_DEBUG_FILE": f"{debug_dir}/nccl.%h.%p.log",
            }
            # max_calls=1: a fresh process per rank that exits afterwards, so no CUDA context or NCCL
            # communicator keeps GPU memory when training starts.
            refs.append(
                self.in_bundle(run_rank, rank // a.gpus_per_node, runtime_env={"env_vars": env}, max_calls=1).remote(
                    rank, world, master[0], a.backend, sizes, a.warmup, a.iters, a.step_timeout, debug_dir
                )
            )
        ranks = self.gather("nccl.sweep", refs)
        if ranks is None:
            return
        points = {}
        for coll in gc.COLLECTIVES:
            per_size: dict[int, list[float]] = {}
            for r in ranks:
                for s, t in r["times"][coll].items():
                    per_size.setdefault(int(s), []).append(t)
            counts = {int(s): c for s, c in ranks[0]["counts"][coll].items()}
            points[coll] = gc.sweep_points(coll, world, per_size, counts)
            print(gc.format_sweep(points[coll]), flush=True)
        implausible = a.max_plausible_busbw
        self.checks.extend(
            gc.collective_checks(
                points,
                min_allreduce_large=a.min_allreduce_large_busbw,
                min_allgather_avg=a.min_allgather_avg_busbw,
                implausible=implausible,
                nodes=a.nodes,
            )
        )
        wrong = sum(r["wrong"] for r in ranks)
        self.checks.append(
            gc.Check(
                "nccl.correctness",
                gc.FAIL if wrong else gc.PASS,
                f"{wrong} wrong elements",
                "0",
                "all-reduce and all-gather of known values on every rank",
            )
        )
        if a.backend == "nccl":
            facts = gc.merge_facts(gc.parse_nccl_log(r["nccl_log"]) for r in ranks)
            self.checks.extend(
                gc.network_checks(facts, expected_net=a.expect_net, nodes=a.nodes, nics_per_node=a.nics_per_node)
            )
            self.report["nccl_versions"] = sorted(facts.versions)
        else:
            self.checks.append(
                gc.Check(
                    "nccl.net", gc.SKIP, "backend gloo", f"inter-node traffic over {a.expect_net}", "CPU run: no NCCL"
                )
            )
        self.report["sweeps"] = {
            c: [{"size_bytes": p.size_bytes, "seconds": p.seconds, "algbw": p.algbw, "busbw": p.busbw} for p in pts]
            for c, pts in points.items()
        }

    def run(self) -> int:
        a = self.a
        t0 = time.time()
        print(f"{gc.PREFIX}: {a.nodes} node(s) x {a.gpus_per_node} {a.backend} ranks, mode {a.mode}", flush=True)
        try:
            steps = self.report.setdefault("step_seconds", {})
            t = time.time()
            if self.place():
                steps["placement"] = round(time.time() - t, 1)
                t = time.time()
                probes = self.gpus()
                steps["gpu"] = round(time.time() - t, 1)
                if probes:
                    t = time.time()
                    self.lustre(probes)
                    steps["lustre"] = round(time.time() - t, 1)
                    t = time.time()
                    if self.sweeps_skipped:
                        why = self.sweeps_skipped
                        self.checks.append(gc.Check("nccl.sweep", gc.SKIP, "not measured", "a recent pass", why))
                    else:
                        self.collectives()
                    steps["collectives"] = round(time.time() - t, 1)
        except Exception as e:  # a bug or an unexpected Ray failure still yields a summary and an exit code
            traceback.print_exc()
            self.checks.append(gc.Check("gate", gc.FAIL, _error_text(e), "the gate runs to the end"))
        finally:
            if getattr(self, "pg", None) is not None:
                from ray.util.placement_group import remove_placement_group

                remove_placement_group(self.pg)
        meta = {
            "run_id": self.run_id,
            "mode": a.mode,
            "backend": a.backend,
            "nodes": a.nodes,
            "gpus_per_node": a.gpus_per_node,
            "gpu_type": a.gpu_type,
            "started_at": self.started,
            "seconds": round(time.time() - t0, 1),
            "single_node_note": (
                "single node: NCCL used NVLink only; the RDMA path was not exercised" if a.nodes == 1 else ""
            ),
            **self.report,
        }
        attempt = os.path.join(a.summary_dir, "attempts", f"{self.run_id}.json")
        self.write_records(attempt)
        meta.update({k: self.report[k] for k in ("node_records",) if k in self.report})
        result = gc.summary(self.checks, meta)
        for c in self.checks:
            print(c.line(), flush=True)
        try:
            gc.write_json_atomically(attempt, result)
            gc.write_json_atomically(os.path.join(a.summary_dir, "summary.json"), result)
        except OSError as e:
            print(f"{gc.PREFIX} FAIL summary: cannot write to {a.summary_dir}: {e}", flush=True)
            return gc.exit_code(self.checks + [gc.Check("summary", gc.FAIL, str(e), "written")], a.mode)
        failed = [c for c in self.checks if c.failed]
        verdict = "PASSED" if not failed else ("FAILED" if a.mode == "enforce" else "FAILED (advisory: continuing)")
        print(f"{gc.PREFIX} {verdict} in {meta['seconds']:g} s; summary: {a.summary_dir}/summary.json", flush=True)
        return gc.exit_code(self.checks, a.mode)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    import ray

    ray.init(log_to_driver=True)  # inside a Ray job: joins the job's cluster (RAY_ADDRESS)
    try:
        return Gate(args).run()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
