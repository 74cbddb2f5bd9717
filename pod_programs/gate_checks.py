"""The readiness gate's decisions: from raw measurements to checks with a measured and an expected figure.

Pure standard-library Python, no Ray, no torch, no NVML: the gate program (pod_programs/readiness_gate.py)
measures on the GPU nodes and hands the raw numbers and texts to these functions on the Ray head, and the
tests feed them real-format values. Shipped next to the program in the job-scripts ConfigMap, so it must
not import anything of this repository either.

What it decides
---------------
- Collective bandwidth, exactly as nccl-tests defines it (NVIDIA/nccl-tests doc/PERFORMANCE.md @ 03a204a1):
  algbw = S / t in GB/s (1e9 bytes/s); busbw = algbw x 2(n-1)/n for all-reduce, algbw x (n-1)/n for
  all-gather, where S is the all-reduce buffer or the all-gather's whole output (per-rank count x n) and t
  the per-iteration time averaged over the ranks (nccl-tests src/common.cu: `Allreduce(args, &deltaSec,
  average)`). The all-gather threshold applies to the sweep average of busbw, the all-reduce one to the
  busbw of the largest message; both are refused above the GPU type's plausible bound (a timing error).
- Proof from NCCL's own log that the expected network plugin carried the inter-node traffic. The lines
  parsed are NCCL's INFO format, stable from NCCL 2.21.5 to 2.27.7 (NVIDIA/nccl @ v2.27.7-1
  593de54e52679b51428571c13271e2ea9f91b1b1): the prefix `<host>:<pid>:<tid> [<cudaDev>] NCCL INFO `
  (src/debug.cc), `Using network <name>` per communicator (src/init.cc:346), `Assigned NET plugin <name> to
  comm` (src/plugin/net.cc:175), and per inter-node connection `Channel 00/0 : 0[0] -> 8[0] [send] via
  NET/<name>/<netDev>[(<proxyRank>)][/GDRDMA][(PCI)][/Shared]` (src/transport/net.cc:218/222/264). The net
  name is the plugin's `ncclNet->name`, the same string NCCL_NET selects (case-insensitive,
  src/plugin/net.cc:166): `gIB` for Google's plugin. `/GDRDMA` proves GPUDirect RDMA on that connection.
- GPU health from NVML-shaped records (nvidia-ml-py field names): count, driver, volatile uncorrectable ECC,
  row-remapping failure or pending remap.
- Lustre: the mount's filesystem type from /proc/self/mountinfo (proc(5) format), throughput over the
  common wall-clock window of all nodes, and the expected figure fraction x min(aggregate, nodes x NIC).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional

GB = 1e9
PREFIX = "readiness-gate"

ALL_REDUCE = "all_reduce"
ALL_GATHER = "all_gather"
COLLECTIVES = (ALL_REDUCE, ALL_GATHER)

PASS, FAIL, SKIP = "pass", "fail", "skipped"


# --- checks -------------------------------------------------------------------------------------------
@dataclass
class Check:
    """One decision. `measured` / `expected` are what the failure line prints; `detail` says what was measured."""

    name: str
    status: str
    measured: str
    expected: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def line(self) -> str:
        """`readiness-gate FAIL nccl.all_reduce.large_busbw: measured 87.3 GB/s, expected >= 200 GB/s (...)`"""
        text = f"{PREFIX} {self.status.upper()} {self.name}: measured {self.measured}, expected {self.expected}"
        return f"{text} ({self.detail})" if self.detail else text


def _gbps(x: float) -> str:
    return f"{x:.2f} GB/s"


def threshold_check(
    name: str, measured: Optional[float], minimum: float, *, maximum: Optional[float] = None, detail: str = ""
) -> Check:
    """measured >= minimum (GB/s), and not above the plausible `maximum` when one is given."""
    if measured is None:
        return Check(name, FAIL, "nothing", f">= {_gbps(minimum)}", detail or "no measurement")
    if measured < minimum:
        return Check(name, FAIL, _gbps(measured), f">= {_gbps(minimum)}", detail)
    if maximum is not None and measured > maximum:
        return Check(
            name,
            FAIL,
            _gbps(measured),
            f"<= {_gbps(maximum)} (the GPU type's physical bound)",
            (detail + "; " if detail else "") + "a figure above the bound is a timing error",
        )
    return Check(name, PASS, _gbps(measured), f">= {_gbps(minimum)}", detail)


# --- collective bandwidth (nccl-tests definitions) -----------------------------------------------------
def busbw_factor(collective: str, ranks: int) -> float:
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    if collective == ALL_REDUCE:
        return 2 * (ranks - 1) / ranks
    if collective == ALL_GATHER:
        return (ranks - 1) / ranks
    raise ValueError(f"unknown collective {collective!r}")


def message_bytes(collective: str, size_bytes: int, ranks: int, elem_bytes: int = 4) -> tuple[int, int]:
    """(element count per call, S in bytes) for a sweep size, as nccl-tests rounds them: the all-gather's count
    is per rank, so S = count x elem x ranks; the all-reduce's S is its buffer."""
    if collective == ALL_REDUCE:
        count = size_bytes // elem_bytes
        return count, count * elem_bytes
    if collective == ALL_GATHER:
        count = size_bytes // (elem_bytes * ranks)
        return count, count * elem_bytes * ranks
    raise ValueError(f"unknown collective {collective!r}")


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> list[int]:
    """nccl-tests' `-b min -e max -f factor` sizes."""
    if min_bytes < 1 or max_bytes < min_bytes or factor < 2:
        raise ValueError("need 1 <= min_bytes <= max_bytes and factor >= 2")
    sizes, s = [], min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return sizes


@dataclass(frozen=True)
class SweepPoint:
    collective: str
    size_bytes: int  # S
    count: int  # elements per call (per rank for all-gather)
    seconds: float  # per iteration, averaged over the ranks
    ranks: int

    @property
    def algbw(self) -> float:
        return self.size_bytes / self.seconds / GB

    @property
    def busbw(self) -> float:
        return self.algbw * busbw_factor(self.collective, self.ranks)


def sweep_points(
    collective: str, ranks: int, per_rank_seconds: dict[int, list[float]], counts: dict[int, int], elem_bytes: int = 4
) -> list[SweepPoint]:
    """Points from every rank's per-iteration time at each S (`per_rank_seconds[S]`), time averaged over ranks."""
    points = []
    for size in sorted(per_rank_seconds):
        times = per_rank_seconds[size]
        if len(times) != ranks or any(t <= 0 for t in times):
            raise ValueError(f"{collective} at {size} B: need {ranks} positive times, got {times}")
        points.append(SweepPoint(collective, size, counts[size], sum(times) / ranks, ranks))
    return points


def large_message(points: list[SweepPoint]) -> SweepPoint:
    return max(points, key=lambda p: p.size_bytes)


def sweep_average_busbw(points: list[SweepPoint]) -> float:
    """nccl-tests' "Avg bus bandwidth": the arithmetic mean of busbw over the sweep's sizes."""
    return sum(p.busbw for p in points) / len(points)


def human_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def format_sweep(points: list[SweepPoint]) -> str:
    """The sweep as nccl-tests lays out its table (size, count, time in us, algbw, busbw)."""
    lines = [
        f"# {points[0].collective} over {points[0].ranks} ranks",
        "#       size         count      time   algbw   busbw",
        "#        (B)    (elements)      (us)  (GB/s)  (GB/s)",
    ]
    for p in points:
        lines.append(f"{p.size_bytes:12d}  {p.count:12d}  {p.seconds * 1e6:8.1f}  {p.algbw:6.2f}  {p.busbw:6.2f}")
    lines.append(f"# Avg bus bandwidth    : {sweep_average_busbw(points):.3f}")
    return "\n".join(lines)


def collective_checks(
    points: dict[str, list[SweepPoint]],
    *,
    min_allreduce_large: float,
    min_allgather_avg: float,
    implausible: float,
    nodes: int,
) -> list[Check]:
    where = f"{nodes} node{'s' if nodes != 1 else ''}"
    checks = []
    ar = points.get(ALL_REDUCE)
    if ar:
        p = large_message(ar)
        checks.append(
            threshold_check(
                "nccl.all_reduce.large_busbw",
                p.busbw,
                min_allreduce_large,
                maximum=implausible,
                detail=f"busbw at {human_bytes(p.size_bytes)}, {p.ranks} ranks on {where}",
            )
        )
    else:
        checks.append(threshold_check("nccl.all_reduce.large_busbw", None, min_allreduce_large))
    ag = points.get(ALL_GATHER)
    if ag:
        peak = max(p.busbw for p in ag)
        avg = sweep_average_busbw(ag)
        check = threshold_check(
            "nccl.all_gather.avg_busbw",
            avg,
            min_allgather_avg,
            detail=f"mean busbw over {human_bytes(ag[0].size_bytes)}..{human_bytes(ag[-1].size_bytes)}, "
            f"{ag[0].ranks} ranks on {where}",
        )
        if check.status == PASS and peak > implausible:
            check = threshold_check(
                "nccl.all_gather.avg_busbw",
                peak,
                min_allgather_avg,
                maximum=implausible,
                detail="peak busbw of the sweep",
            )
        checks.append(check)
    else:
        checks.append(threshold_check("nccl.all_gather.avg_busbw", None, min_allgather_avg))
    return checks


# --- NCCL's INFO log ------------------------------------------------------------------------------------
# Optional timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS; off for INFO by default), then `host:pid:tid [dev] NCCL INFO`.
_NCCL_INFO = re.compile(r"(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
_USING_NETWORK = re.compile(r"^Using network (?P<net>\S+)\s*$")
_ASSIGNED = re.compile(r"^Assigned NET plugin (?P<net>\S+) to comm\s*$")
_CHANNEL = re.compile(
    r"^Channel (?P<channel>\d+)/(?P<conn>\d+) : (?P<src>\d+)\[(?P<srcdev>\d+)\] -> (?P<dst>\d+)\[(?P<dstdev>\d+)\] "
    r"\[(?P<dir>send|receive)\] via NET/(?P<net>[^/\s]+)/(?P<netdev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>\S*)\s*$"
)
_VERSION = re.compile(r"NCCL version (?P<version>\S+)")


@dataclass
class NetChannel:
    host: str
    pid: int
    direction: str
    net: str
    netdev: int
    gdr: bool
    src_rank: int
    dst_rank: int


@dataclass
class NcclLogFacts:
    """What one NCCL debug file (one process) says about the network it used."""

    hosts: set = field(default_factory=set)
    networks: set = field(default_factory=set)  # `Using network X`
    assigned_plugins: set = field(default_factory=set)
    channels: list = field(default_factory=list)  # NetChannel for every inter-node connection
    versions: set = field(default_factory=set)
    info_lines: int = 0


def parse_nccl_log(text: str) -> NcclLogFacts:
    facts = NcclLogFacts()
    for raw in text.splitlines():
        m = _NCCL_INFO.search(raw)
        if not m:
            v = _VERSION.search(raw)
            if v:
                facts.versions.add(v.group("version"))
            continue
        facts.info_lines += 1
        facts.hosts.add(m.group("host"))
        msg = m.group("msg")
        if u := _USING_NETWORK.match(msg):
            facts.networks.add(u.group("net"))
        elif a := _ASSIGNED.match(msg):
            facts.assigned_plugins.add(a.group("net"))
        elif c := _CHANNEL.match(msg):
            facts.channels.append(
                NetChannel(
                    host=m.group("host"),
                    pid=int(m.group("pid")),
                    direction=c.group("dir"),
                    net=c.group("net"),
                    netdev=int(c.group("netdev")),
                    gdr="/GDRDMA" in c.group("rest"),
                    src_rank=int(c.group("src")),
                    dst_rank=int(c.group("dst")),
                )
            )
        elif v := _VERSION.search(msg):
            facts.versions.add(v.group("version"))
    return facts


def merge_facts(all_facts: Iterable[NcclLogFacts]) -> NcclLogFacts:
    out = NcclLogFacts()
    for f in all_facts:
        out.hosts |= f.hosts
        out.networks |= f.networks
        out.assigned_plugins |= f.assigned_plugins
        out.channels.extend(f.channels)
        out.versions |= f.versions
        out.info_lines += f.info_lines
    return out


def network_checks(facts: NcclLogFacts, *, expected_net: str, nodes: int, nics_per_node: int) -> list[Check]:
    """Inter-node traffic on `expected_net` with GPUDirect RDMA, over every NIC of every node.

    A single node has no inter-node connection: NCCL uses NVLink (P2P/NVLS) only, which is said, not failed."""
    if nodes < 2:
        return [
            Check(
                "nccl.net",
                SKIP,
                "single node",
                f"inter-node traffic over {expected_net}",
                "one node: NCCL uses NVLink only; the RDMA path is not exercised",
            )
        ]
    want = expected_net.lower()
    if facts.info_lines == 0:
        return [
            Check(
                "nccl.net",
                FAIL,
                "no NCCL INFO lines",
                f"'Using network {expected_net}' and channels via NET/{expected_net}",
                "NCCL_DEBUG=INFO output missing",
            )
        ]
    checks = []
    other_nets = sorted(n for n in facts.networks if n.lower() != want)
    used = sorted(facts.networks) or ["none"]
    if other_nets or not facts.networks:
        checks.append(
            Check(
                "nccl.net",
                FAIL,
                f"Using network {', '.join(used)}",
                f"Using network {expected_net}",
                "NCCL chose another network plugin",
            )
        )
        return checks
    inter = facts.channels
    off_net = [c for c in inter if c.net.lower() != want]
    if not inter or off_net:
        measured = (
            f"{len(off_net)} of {len(inter)} inter-node connections via "
            f"{', '.join(sorted({'NET/' + c.net for c in off_net}))}"
            if inter
            else "no inter-node connection"
        )
        checks.append(Check("nccl.net", FAIL, measured, f"every inter-node connection via NET/{expected_net}"))
    else:
        checks.append(
            Check(
                "nccl.net",
                PASS,
                f"{len(inter)} inter-node connections via NET/{expected_net}",
                f"every inter-node connection via NET/{expected_net}",
            )
        )
    if inter:
        no_gdr = [c for c in inter if not c.gdr]
        checks.append(
            Check(
                "nccl.gdrdma",
                FAIL if no_gdr else PASS,
                f"{len(inter) - len(no_gdr)} of {len(inter)} connections with /GDRDMA",
                "GPUDirect RDMA (/GDRDMA) on every inter-node connection",
                "without it every transfer is staged through host memory" if no_gdr else "",
            )
        )
        by_host: dict[str, set] = {}
        for c in inter:
            by_host.setdefault(c.host, set()).add(c.netdev)
        fewest = min(by_host.items(), key=lambda kv: (len(kv[1]), kv[0]))
        ok = len(by_host) >= nodes and len(fewest[1]) >= nics_per_node
        checks.append(
            Check(
                "nccl.nics",
                PASS if ok else FAIL,
                f"{len(fewest[1])} NICs on {fewest[0]}"
                + (f", {len(by_host)} of {nodes} nodes with inter-node connections" if len(by_host) < nodes else ""),
                f"{nics_per_node} NICs on each of {nodes} nodes",
                "fewest distinct NET devices a node's ranks used",
            )
        )
    return checks


# --- GPU health from NVML ------------------------------------------------------------------------------
def gpu_checks(probe: dict, *, expected_gpus: int) -> list[Check]:
    """One node's NVML probe (see readiness_gate.probe_gpus): devices, driver, ECC, row remapping.

    Volatile uncorrectable ECC counts (since the driver loaded) fail the node; the aggregate (lifetime)
    count is reported but does not fail it: it stays non-zero after the errors were repaired by row
    remapping (NVML reference, nvmlDeviceGetTotalEccErrors: aggregate counts persist for the device's
    lifetime; NVIDIA "GPU Memory Error Management" guide for row remapping). A failed remap, or one pending
    until a GPU reset, fails the node."""
    host = probe.get("host", "?")
    if probe.get("error"):
        return [Check(f"gpu.nvml[{host}]", FAIL, probe["error"], "NVML answers (driver loaded)")]
    checks = []
    devices = probe.get("devices", [])
    visible = probe.get("cuda_visible_count")
    count_ok = len(devices) == expected_gpus and (visible is None or visible == expected_gpus)
    checks.append(
        Check(
            f"gpu.count[{host}]",
            PASS if count_ok else FAIL,
            f"{len(devices)} GPUs in NVML" + (f", {visible} allocated to the task" if visible is not None else ""),
            f"{expected_gpus} and {expected_gpus}",
            f"driver {probe.get('driver_version', '?')}",
        )
    )
    bad = []
    aggregate = []
    for d in devices:
        where = f"GPU {d.get('index')} {d.get('uuid', '')}".strip()
        if d.get("ecc_mode_current") is False:
            bad.append(f"{where}: ECC disabled")
        volatile = d.get("ecc_uncorrected_volatile")
        if volatile:
            bad.append(f"{where}: {volatile} volatile uncorrectable ECC errors")
        if d.get("ecc_uncorrected_aggregate"):
            aggregate.append(f"{where}: {d['ecc_uncorrected_aggregate']} lifetime")
        if d.get("remap_failure"):
            bad.append(f"{where}: row remapping failed")
        if d.get("remap_pending"):
            bad.append(f"{where}: row remap pending (needs a GPU reset)")
    checks.append(
        Check(
            f"gpu.memory[{host}]",
            FAIL if bad else PASS,
            "; ".join(bad) if bad else "no uncorrectable error",
            "ECC on, no volatile uncorrectable ECC error, no failed or pending row remap",
            ("aggregate uncorrectable: " + "; ".join(aggregate)) if aggregate else "",
        )
    )
    return checks


# --- Lustre -------------------------------------------------------------------------------------------
def _unescape_mountinfo(s: str) -> str:
    # proc(5): space, tab, newline and backslash in mountinfo paths are octal escapes (\040 ...).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mount_of(path: str, mountinfo: str) -> tuple[str, str, str]:
    """(mount point, filesystem type, source) of the mount holding `path`, from /proc/self/mountinfo text.

    proc(5): `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`: field 5 is
    the mount point, and after the ` - ` separator come the filesystem type and the mount source. The
    longest mount point that is `path` or one of its parents wins; later lines win ties (over-mounts)."""
    path = os.path.normpath(path)
    best: Optional[tuple[str, str, str]] = None
    for line in mountinfo.splitlines():
        if " - " not in line:
            continue
        left, right = line.split(" - ", 1)
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        point = _unescape_mountinfo(fields[4])
        if path == point or path.startswith(point.rstrip("/") + "/") or point == "/":
            if best is None or len(point) >= len(best[0]):
                best = (point, tail[0], _unescape_mountinfo(tail[1]))
    if best is None:
        raise ValueError(f"no mount holds {path}")
    return best


def lustre_expected(fraction: float, aggregate_gbps: float, nodes: int, nic_gbps: float) -> tuple[float, str]:
    """fraction x min(instance aggregate throughput, nodes x primary NIC bandwidth), GB/s, and how."""
    if not 0 < fraction <= 1:
        raise ValueError("fraction must be in (0, 1]")
    ceiling = min(aggregate_gbps, nodes * nic_gbps)
    which = "instance aggregate" if aggregate_gbps <= nodes * nic_gbps else f"{nodes} x primary NIC"
    return fraction * ceiling, (
        f"{fraction:g} x min({aggregate_gbps:.2f} GB/s instance aggregate, {nodes} x "
        f"{nic_gbps:.2f} GB/s primary NIC) = {fraction:g} x {ceiling:.2f} ({which})"
    )


def aggregate_throughput(parts: list[dict]) -> float:
    """GB/s of all nodes together: total bytes over the common wall-clock window (first start to last end),
    so a node that started late or finished early cannot inflate the figure."""
    start = min(p["start"] for p in parts)
    end = max(p["end"] for p in parts)
    if end <= start:
        raise ValueError("empty time window")
    return sum(p["bytes"] for p in parts) / (end - start) / GB


def lustre_checks(
    *,
    mounts: dict[str, tuple[str, str, str]],
    expected_fstype: str,
    probe_errors: list[str],
    write_parts: list[dict],
    read_parts: list[dict],
    expected_gbps: float,
    how: str,
    cross_node: bool,
    throughput_skipped: str = "",
) -> list[Check]:
    """`mounts`: host -> mount_of() of the Lustre path on that host. `throughput_skipped`: why the write and read
    sweeps did not run (every node passed them recently), said in their skipped checks."""
    wrong = {h: m for h, m in sorted(mounts.items()) if m[1] != expected_fstype}
    if wrong:
        measured = "; ".join(f"{h}: {fstype} at {point}" for h, (point, fstype, _src) in wrong.items())
        checks = [
            Check(
                "lustre.mount",
                FAIL,
                measured,
                f"{expected_fstype} on every node",
                "the volume is not mounted where the job expects it",
            )
        ]
    else:
        point, fstype, source = next(iter(mounts.values()))
        checks = [
            Check(
                "lustre.mount",
                PASS,
                f"{fstype} at {point} on {len(mounts)} node(s)",
                f"{expected_fstype} on every node",
                source,
            )
        ]
    checks.append(
        Check(
            "lustre.writable",
            FAIL if probe_errors else PASS,
            "; ".join(probe_errors) if probe_errors else "write, fsync, read back, delete on every node",
            "every node can write and read back",
        )
    )
    for name, parts, what in (
        ("lustre.write", write_parts, "parallel O_DIRECT write from every node"),
        (
            "lustre.read",
            read_parts,
            "O_DIRECT read of files " + ("another node wrote" if cross_node else "this node wrote (single node)"),
        ),
    ):
        if throughput_skipped:
            checks.append(Check(name, SKIP, "not measured", f">= {_gbps(expected_gbps)}", throughput_skipped))
            continue
        errors = [p["error"] for p in parts if p.get("error")]
        if errors or not parts:
            checks.append(Check(name, FAIL, "; ".join(errors) or "nothing", f">= {_gbps(expected_gbps)}", what))
            continue
        total = sum(p["bytes"] for p in parts)
        gbps = aggregate_throughput(parts)
        checks.append(threshold_check(name, gbps, expected_gbps, detail=f"{what}, {total / GB:.1f} GB; expected {how}"))
    return checks


# --- the whole gate -----------------------------------------------------------------------------------
def exit_code(checks: list[Check], mode: str) -> int:
    """enforce: 1 when any check failed (the RayJob fails); advisory: always 0 (failures are only logged)."""
    if mode not in ("enforce", "advisory"):
        raise ValueError(f"unknown mode {mode!r}")
    return 1 if mode == "enforce" and any(c.failed for c in checks) else 0


def summary(checks: list[Check], meta: dict) -> dict:
    return {
        "passed": not any(c.failed for c in checks),
        "failed": [c.name for c in checks if c.failed],
        "checks": [asdict(c) for c in checks],
        **meta,
    }


def write_json_atomically(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# --- a node's recent pass: the sweeps once per node, not once per submission ---------------------------
# After a full gate that passed, each node gets a record (one JSON file per node, `<records dir>/<node>.json`). A later
# gate skips the Lustre and NCCL sweeps when EVERY node it runs on has a valid record in a directory it trusts, and
# always runs the GPU health check and the Lustre mount probe; any node without one makes it run the full gate on all
# of its nodes (the collectives are one sweep over every rank: the new node is measured with the others, as training
# will use it). A record is valid only while what the pass proved still holds:
# - the same node and the same boot: the node name (the pod's `spec.nodeName`, through the downward API) and the
#   kernel's boot ID (/proc/sys/kernel/random/boot_id: "randomly generated early at boot and is unique for every
#   running kernel instance", sd_id128_get_boot(3), https://manpages.org/sd_id128_get_machine/3), which a container
#   reads from the host's kernel; a recreated VM of the same name has another;
# - the same NVIDIA driver (NVML's nvmlSystemGetDriverVersion) and the same gIB plugin files (a digest of the gIB
#   directory the pods mount; the installer DaemonSet copies a new plugin onto the host without a reboot);
# - within the window, never from the future, never older than the last gateRerun (`not_before`);
# - terms at least as strict as this gate's: same backend and network plugin, no fewer GPUs or NICs, thresholds no
#   lower, the same Lustre filesystem, a multi-node pass when this gate spans nodes.
# Who may write a directory decides who is trusted (the records carry no signature): the program writes only its own
# directory and reads the others it is given read-only (core/gate.py says which).
RECORD_VERSION = 1
NODE_NAME_ENV = "NEMO_RL_GKE_NODE_NAME"  # the pod's spec.nodeName (downward API), on the GPU workers
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
# A record stamped later than this after the reader's clock is refused (GCE VMs keep their clocks from the metadata
# server's NTP; a record from the future is a forged or a broken one and would otherwise never expire).
CLOCK_SKEW_SECONDS = 300
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a Kubernetes node name (DNS-1123 subdomain)


@dataclass(frozen=True)
class NodeIdentity:
    """What a pass is bound to: the node, its boot, its driver and its gIB plugin."""

    node: str
    boot_id: str
    driver: Optional[str]  # None on a CPU run (no NVML)
    gib: Optional[str]  # digest of the gIB directory; None where there is none

    @classmethod
    def of(cls, probe: dict) -> Optional["NodeIdentity"]:
        """From a node probe (readiness_gate.probe_gpus); None when the node cannot be named (no record is read or
        written for it, so it gets the full gate)."""
        node, boot = probe.get("node_name") or "", probe.get("boot_id") or ""
        if not _NODE_NAME.fullmatch(node) or not boot:
            return None
        return cls(node, boot, probe.get("driver_version"), probe.get("gib_digest"))


@dataclass(frozen=True)
class PassTerms:
    """What a full pass proves, and what a gate asks of a recorded one: the record's terms must be as strict."""

    backend: str
    expect_net: str
    gpus_per_node: int
    nics_per_node: int
    inter_node: bool  # the pass ran on two nodes or more (one node exercises no RDMA)
    min_allreduce_large_busbw: float
    min_allgather_avg_busbw: float
    lustre_gbps_per_node: float  # the Lustre figure the pass required, per node
    lustre_source: str  # the Lustre mount's source (which filesystem)

    def weaker_than(self, need: "PassTerms") -> Optional[str]:
        """Why a pass on these terms does not prove what `need` asks, or None."""
        if self.backend != need.backend:
            return f"a {self.backend} pass, this gate runs {need.backend}"
        if self.expect_net.lower() != need.expect_net.lower():
            return f"passed over {self.expect_net}, this gate expects {need.expect_net}"
        if self.lustre_source != need.lustre_source:
            return f"passed on Lustre {self.lustre_source!r}, this gate mounts {need.lustre_source!r}"
        if need.inter_node and not self.inter_node:
            return "a single-node pass (no RDMA exercised), this gate spans nodes"
        for what, have, want in (
            ("GPUs per node", self.gpus_per_node, need.gpus_per_node),
            ("NICs per node", self.nics_per_node, need.nics_per_node),
            ("all-reduce GB/s", self.min_allreduce_large_busbw, need.min_allreduce_large_busbw),
            ("all-gather GB/s", self.min_allgather_avg_busbw, need.min_allgather_avg_busbw),
            ("Lustre GB/s per node", self.lustre_gbps_per_node, need.lustre_gbps_per_node),
        ):
            if have < want * (1 - 1e-9):
                return f"passed at {what} >= {have:g}, this gate asks >= {want:g}"
        return None


def node_record(identity: NodeIdentity, terms: PassTerms, *, passed_at: float, run_id: str, summary: str) -> dict:
    return {
        "version": RECORD_VERSION,
        **asdict(identity),
        "passed_at": passed_at,
        "terms": asdict(terms),
        "run_id": run_id,
        "summary": summary,
    }


def _ago(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def record_problem(
    record: object,
    identity: NodeIdentity,
    need: PassTerms,
    *,
    now: float,
    window_s: float,
    not_before: float,
    not_before_why: str = "the last gateRerun",
) -> Optional[str]:
    """Why `record` does not let `identity` skip the sweeps, or None when it does. `not_before`: passes before it
    are discarded (`not_before_why` says what set it)."""
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return "not a node record of this gate"
    try:
        terms = PassTerms(**record["terms"])
        passed_at = float(record["passed_at"])
        fields = {k: record[k] for k in ("node", "boot_id", "driver", "gib")}
    except (KeyError, TypeError, ValueError):
        return "not a node record of this gate"
    if fields["node"] != identity.node:
        return f"recorded for node {fields['node']!r}"
    if fields["boot_id"] != identity.boot_id:
        return f"another boot (recorded {str(fields['boot_id'])[:8]}, now {identity.boot_id[:8]})"
    if fields["driver"] != identity.driver:
        return f"another driver (recorded {fields['driver']}, now {identity.driver})"
    if fields["gib"] != identity.gib:
        return f"another gIB plugin (recorded {str(fields['gib'])[:19]}, now {str(identity.gib)[:19]})"
    if passed_at > now + CLOCK_SKEW_SECONDS:
        return f"stamped {_ago(passed_at - now)} in the future"
    if passed_at < not_before:
        return f"passed before {not_before_why}"
    if window_s <= 0:
        return "this gate reuses no pass (window 0)"
    if now - passed_at > window_s:
        return f"passed {_ago(now - passed_at)} ago, more than the {_ago(window_s)} window"
    return terms.weaker_than(need)


@dataclass(frozen=True)
class NodeReuse:
    """A node's verdict: the record it may rely on (where it came from), or why it has none."""

    identity: NodeIdentity
    record: Optional[dict] = None
    source: str = ""
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.record is not None

    def describe(self) -> str:
        if self.record is None:
            return f"{self.identity.node}: {self.reason}"
        return f"{self.identity.node}: passed {self.record['run_id']} ({self.source})"


def choose_record(
    identity: NodeIdentity,
    candidates: list[tuple[str, object]],
    need: PassTerms,
    *,
    now: float,
    window_s: float,
    not_before: float,
    not_before_why: str = "the last gateRerun",
) -> NodeReuse:
    """The newest valid record among `candidates` ((trusted directory, parsed record or None), in order of trust);
    without one, the first candidate's problem (the own directory's) says why."""
    best: Optional[NodeReuse] = None
    reasons = []
    for source, record in candidates:
        if record is None:
            continue
        problem = record_problem(
            record,
            identity,
            need,
            now=now,
            window_s=window_s,
            not_before=not_before,
            not_before_why=not_before_why,
        )
        if problem is None:
            assert isinstance(record, dict)
            if best is None or float(record["passed_at"]) > float(best.record["passed_at"]):  # type: ignore[index]
                best = NodeReuse(identity, record, source)
        else:
            reasons.append(problem)
    if best is not None:
        return best
    return NodeReuse(identity, reason=reasons[0] if reasons else "no pass recorded")


def rerun_floor(marker: object, token: Optional[str], now: float) -> tuple[float, Optional[dict]]:
    """(the time before which no recorded pass counts, the marker to write or None).

    A new gateRerun value discards every pass recorded before it: the first gate that sees the value runs in full
    and stores its digest with that time; later gates under the same value keep the floor; an unset value keeps the
    last floor."""
    import hashlib

    old = marker if isinstance(marker, dict) else {}
    try:
        floor = float(old.get("not_before", 0.0))
    except (TypeError, ValueError):
        floor = 0.0
    if not token:
        return floor, None
    digest = "sha256:" + hashlib.sha256(token.encode()).hexdigest()
    if old.get("token") == digest:
        return floor, None
    return now, {"token": digest, "not_before": now}


RETRY_WHY = "this run's unfinished attempt"


def retry_floor(previous_summary: object, done_at: Optional[float]) -> Optional[float]:
    """A gate of a run whose earlier gate ran and whose training did not reach its end after it (no trained marker
    written since that gate started: `done_at` is the marker's time, None without one) is a retry after a failure or
    a stop: a lost node, a NCCL error, a stopped job. It distrusts every pass that earlier attempt relied on or wrote:
    the time after which passes count again, or None (not a retry)."""
    if not isinstance(previous_summary, dict):
        return None
    try:
        started = float(previous_summary["started_at"])
    except (KeyError, TypeError, ValueError):
        return None
    if done_at is not None and done_at >= started:
        return None
    return started + 1e-3


def read_json(path: str) -> Optional[object]:
    """A JSON file, or None when it is missing or unreadable (a broken record is no record)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
