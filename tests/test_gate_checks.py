"""The readiness gate's decisions on real-format inputs: nccl-tests' bandwidth definitions, NCCL's INFO lines,
NVML-shaped GPU records, /proc/self/mountinfo lines and the Lustre figures, and the catalog's thresholds."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core import catalog
from pod_programs import gate_checks as gc

pytestmark = pytest.mark.unit

GiB = 1024**3


# --- bandwidth, as nccl-tests defines it --------------------------------------------------------------
def test_all_reduce_busbw_reproduces_a_printed_nccl_tests_row():
    # all_reduce_perf on 72 ranks (a GB200 NVL72 rack), from coreweave/nccl-tests PR #43: the row
    # `8589934592  2147483648  float  sum  -1  20299  423.16  834.57` (time printed in us, rounded).
    p = gc.SweepPoint(gc.ALL_REDUCE, 8589934592, 2147483648, 20299e-6, 72)
    assert p.algbw == pytest.approx(423.16, rel=5e-4)
    assert p.busbw == pytest.approx(834.57, rel=5e-4)


def test_busbw_factors_are_the_ones_in_nccl_tests_performance_doc():
    # doc/PERFORMANCE.md "Summary": AllReduce 2*(n-1)/n, AllGather (n-1)/n.
    assert gc.busbw_factor(gc.ALL_REDUCE, 16) == 30 / 16
    assert gc.busbw_factor(gc.ALL_GATHER, 16) == 15 / 16
    assert gc.busbw_factor(gc.ALL_REDUCE, 1) == 0


def test_all_gather_size_is_the_whole_output_of_per_rank_counts():
    # PERFORMANCE.md: for AllGather S = sendcount * sizeof(datatype) * n; the count is per rank.
    count, s = gc.message_bytes(gc.ALL_GATHER, 8 * GiB, 16)
    assert (count, s) == (134217728, 8 * GiB)
    count, s = gc.message_bytes(gc.ALL_GATHER, 1000, 16)  # rounded down to whole elements per rank
    assert (count, s) == (15, 960)
    p = gc.SweepPoint(gc.ALL_GATHER, 2147483648, 33554432, 0.01, 16)
    assert p.algbw == pytest.approx(214.7483648)
    assert p.busbw == pytest.approx(201.326592)


def test_sweep_is_nccl_tests_b_e_f_and_time_is_averaged_over_ranks():
    sizes = gc.sweep_sizes(catalog.GATE_SWEEP_MIN_BYTES, catalog.GATE_SWEEP_MAX_BYTES)
    assert sizes[0] == 1024 and sizes[-1] == 8 * GiB and len(sizes) == 24  # -b 1K -e 8G -f 2
    points = gc.sweep_points(gc.ALL_REDUCE, 2, {1024: [1e-5, 3e-5]}, {1024: 256})
    assert points[0].seconds == pytest.approx(2e-5)
    with pytest.raises(ValueError):
        gc.sweep_points(gc.ALL_REDUCE, 2, {1024: [1e-5]}, {1024: 256})  # a rank missing


def _sweep(coll, ranks, busbw_by_size):
    """Points whose busbw is as given (times derived from nccl-tests' formula, inverted)."""
    pts = []
    for size, bw in busbw_by_size.items():
        t = size / (bw / gc.busbw_factor(coll, ranks) * gc.GB)
        pts.append(gc.SweepPoint(coll, size, size // 4, t, ranks))
    return pts


def test_thresholds_apply_to_large_message_all_reduce_and_to_the_all_gather_average():
    facts = catalog.GATE_GPU_FACTS["nvidia-b200"]
    ar = _sweep(gc.ALL_REDUCE, 16, {1 * GiB: 150.0, 8 * GiB: 290.0})  # only 8 GiB counts
    ag = _sweep(gc.ALL_GATHER, 16, {1024: 0.1, 1 * GiB: 180.0, 8 * GiB: 210.0})  # mean 130.03
    checks = {
        c.name: c
        for c in gc.collective_checks(
            {gc.ALL_REDUCE: ar, gc.ALL_GATHER: ag},
            min_allreduce_large=catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS,
            min_allgather_avg=catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS,
            implausible=facts.implausible_busbw_gbps,
            nodes=2,
        )
    }
    assert checks["nccl.all_reduce.large_busbw"].status == gc.PASS
    assert checks["nccl.all_reduce.large_busbw"].measured == "290.00 GB/s"
    assert checks["nccl.all_gather.avg_busbw"].measured == "130.03 GB/s"

    slow = _sweep(gc.ALL_GATHER, 16, {1024: 0.1, 1 * GiB: 120.0, 8 * GiB: 150.0})  # mean 90.03 < 100
    failed = {
        c.name: c
        for c in gc.collective_checks(
            {gc.ALL_REDUCE: _sweep(gc.ALL_REDUCE, 16, {8 * GiB: 87.3}), gc.ALL_GATHER: slow},
            min_allreduce_large=200,
            min_allgather_avg=100,
            implausible=facts.implausible_busbw_gbps,
            nodes=2,
        )
    }
    assert failed["nccl.all_reduce.large_busbw"].line() == (
        "readiness-gate FAIL nccl.all_reduce.large_busbw: measured 87.30 GB/s, expected >= 200.00 GB/s "
        "(busbw at 8 GiB, 16 ranks on 2 nodes)"
    )
    assert failed["nccl.all_gather.avg_busbw"].failed


def test_a_figure_above_the_gpu_types_physical_bound_fails_as_a_timing_error():
    h200 = catalog.GATE_GPU_FACTS["nvidia-h200-141gb"]
    ar = _sweep(gc.ALL_REDUCE, 16, {8 * GiB: 1500.0})  # above NVLink + PCIe of an H200
    ag = _sweep(gc.ALL_GATHER, 16, {1024: 1.0, 8 * GiB: 1200.0})
    checks = {
        c.name: c
        for c in gc.collective_checks(
            {gc.ALL_REDUCE: ar, gc.ALL_GATHER: ag},
            min_allreduce_large=200,
            min_allgather_avg=100,
            implausible=h200.implausible_busbw_gbps,
            nodes=2,
        )
    }
    assert checks["nccl.all_reduce.large_busbw"].failed
    assert checks["nccl.all_reduce.large_busbw"].expected == "<= 1028.00 GB/s (the GPU type's physical bound)"
    assert checks["nccl.all_gather.avg_busbw"].failed and "peak busbw" in checks["nccl.all_gather.avg_busbw"].detail


def test_catalog_bounds_sit_above_the_floors_and_above_the_nic_line_rate():
    for facts in catalog.GATE_GPU_FACTS.values():
        bound = facts.implausible_busbw_gbps
        assert bound > catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS > catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS
        # busbw may exceed one NIC's line rate (Google's own floor is twice it): the NIC is not the bound.
        assert catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS > catalog.RDMA_NIC_GBITPS / 8
    assert set(catalog.GATE_GPU_FACTS) == set(catalog.ACCELERATORS)
    assert {a.machine_type for a in catalog.ACCELERATORS.values()} == set(catalog.PRIMARY_NIC_GBITPS)


# --- NCCL's INFO lines --------------------------------------------------------------------------------
# Lines in the format NCCL prints (NVIDIA/nccl v2.27.7-1: src/debug.cc prefix `host:pid:tid [dev] NCCL INFO `,
# src/init.cc:346 `Using network %s`, src/plugin/net.cc:175 `Assigned NET plugin %s to comm`,
# src/transport/net.cc:218/264 `Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s%s`),
# with the gIB plugin's name as NCCL_NET selects it.
def _gib_log(host: str, pid: int, rank: int, dev: int, peer: int, *, net="gIB", gdr=True, netdev=None) -> str:
    nd = dev if netdev is None else netdev
    g = "/GDRDMA" if gdr else ""
    info = f"{host}:{pid}:{pid + 7} [{dev}] NCCL INFO"
    return (
        "\n".join(
            [
                f"{host}:{pid}:{pid} [{dev}] NCCL INFO NCCL_NET set by environment to {net}",
                f"{info} Assigned NET plugin {net} to comm",
                f"{info} Using network {net}",
                f"{info} Channel 00/0 : {rank}[{dev}] -> {peer}[{dev}] [send] via NET/{net}/{nd}{g}",
                f"{info} Channel 00/0 : {peer}[{dev}] -> {rank}[{dev}] [receive] via NET/{net}/{nd}{g}",
                f"{info} Channel 08/1 : {rank}[{dev}] -> {peer}[{dev}] [send] via NET/{net}/{nd}(9){g}/Shared",
                f"{info} Channel 01/0 : {rank}[{dev}] -> {rank + 1}[{dev + 1}] via P2P/CUMEM/read",
            ]
        )
        + "\n"
    )


def _two_nodes(**kw) -> gc.NcclLogFacts:
    logs = [
        _gib_log(f"gke-gpu-{n}", 1000 + 10 * d + n, n * 8 + d, d, (1 - n) * 8 + d, **kw)
        for n in range(2)
        for d in range(8)
    ]
    return gc.merge_facts(gc.parse_nccl_log(t) for t in logs)


def test_gib_on_every_nic_with_gpudirect_passes():
    facts = _two_nodes()
    assert facts.networks == {"gIB"} and facts.assigned_plugins == {"gIB"}
    assert len(facts.channels) == 48 and all(c.gdr for c in facts.channels)
    checks = {
        c.name: c
        for c in gc.network_checks(facts, expected_net="gIB", nodes=2, nics_per_node=catalog.RDMA_NICS_PER_NODE)
    }
    assert [c.status for c in checks.values()] == [gc.PASS] * 3
    assert checks["nccl.nics"].measured == "8 NICs on gke-gpu-0"


def test_parser_accepts_the_optional_timestamp_and_ignores_other_lines():
    text = (
        "[2026-07-01 10:00:00] host-a:12:13 [3] NCCL INFO Using network gIB\n"
        "NCCL version 2.27.7+cuda12.9\n"
        "host-a:12:13 [3] transport/net.cc:1 NCCL WARN something\n"
    )
    facts = gc.parse_nccl_log(text)
    assert facts.networks == {"gIB"} and facts.versions == {"2.27.7+cuda12.9"} and facts.info_lines == 1


def test_socket_fallback_fails_naming_the_network_nccl_used():
    checks = gc.network_checks(_two_nodes(net="Socket"), expected_net="gIB", nodes=2, nics_per_node=8)
    assert [c.line() for c in checks] == [
        "readiness-gate FAIL nccl.net: measured Using network Socket, expected Using network gIB "
        "(NCCL chose another network plugin)"
    ]


def test_gpudirect_off_and_missing_nics_fail():
    no_gdr = {c.name: c for c in gc.network_checks(_two_nodes(gdr=False), expected_net="gib", nodes=2, nics_per_node=8)}
    assert no_gdr["nccl.net"].status == gc.PASS  # the net name compares case-insensitively, as NCCL_NET
    assert no_gdr["nccl.gdrdma"].failed and no_gdr["nccl.gdrdma"].measured == "0 of 48 connections with /GDRDMA"
    logs = [
        _gib_log(f"gke-gpu-{n}", 2000 + d, n * 8 + d, d, (1 - n) * 8 + d, netdev=d // 2)
        for n in range(2)
        for d in range(8)
    ]  # every two GPUs share one NIC: 4 NICs in use
    nics = {
        c.name: c
        for c in gc.network_checks(
            gc.merge_facts(map(gc.parse_nccl_log, logs)), expected_net="gIB", nodes=2, nics_per_node=8
        )
    }["nccl.nics"]
    assert nics.failed and nics.measured == "4 NICs on gke-gpu-0"


def test_missing_log_fails_and_a_single_node_says_rdma_was_not_exercised():
    assert gc.network_checks(gc.NcclLogFacts(), expected_net="gIB", nodes=2, nics_per_node=8)[0].failed
    single = gc.network_checks(gc.NcclLogFacts(), expected_net="gIB", nodes=1, nics_per_node=8)
    assert [c.status for c in single] == [gc.SKIP]
    assert "NVLink only" in single[0].detail


# --- GPU health from NVML -----------------------------------------------------------------------------
def _probe(n=8, **device_overrides):
    # Field values as nvidia-ml-py returns them: nvmlDeviceGetTotalEccErrors -> int,
    # nvmlDeviceGetEccMode -> [current, pending], nvmlDeviceGetRemappedRows -> (corr, unc, pending, failure).
    devices = [
        {
            "index": i,
            "uuid": f"GPU-5c8a0f6e-0000-0000-0000-00000000000{i}",
            "name": "NVIDIA B200",
            "ecc_mode_current": True,
            "ecc_uncorrected_volatile": 0,
            "ecc_uncorrected_aggregate": 0,
            "remap_pending": False,
            "remap_failure": False,
        }
        for i in range(n)
    ]
    for i, fields in device_overrides.items():
        devices[int(i[1:])].update(fields)
    return {"host": "gke-gpu-0", "driver_version": "570.172.08", "devices": devices, "cuda_visible_count": n}


def test_healthy_node_passes_and_lifetime_errors_are_reported_not_failed():
    checks = {c.name: c for c in gc.gpu_checks(_probe(g2={"ecc_uncorrected_aggregate": 3}), expected_gpus=8)}
    assert checks["gpu.count[gke-gpu-0]"].status == gc.PASS
    assert checks["gpu.memory[gke-gpu-0]"].status == gc.PASS
    assert "3 lifetime" in checks["gpu.memory[gke-gpu-0]"].detail


def test_missing_gpu_volatile_ecc_and_remap_failures_fail_the_node():
    assert gc.gpu_checks(_probe(n=7), expected_gpus=8)[0].line() == (
        "readiness-gate FAIL gpu.count[gke-gpu-0]: measured 7 GPUs in NVML, 7 allocated to the task, "
        "expected 8 and 8 (driver 570.172.08)"
    )
    memory = gc.gpu_checks(
        _probe(g1={"ecc_uncorrected_volatile": 2}, g5={"remap_pending": True}, g6={"remap_failure": True}),
        expected_gpus=8,
    )[1]
    assert memory.failed
    assert "GPU 1 " in memory.measured and "2 volatile uncorrectable" in memory.measured
    assert "row remap pending" in memory.measured and "row remapping failed" in memory.measured
    assert gc.gpu_checks({"host": "h", "error": "nvmlInit failed: Driver Not Loaded"}, expected_gpus=8)[0].failed


# --- Lustre -------------------------------------------------------------------------------------------
# /proc/self/mountinfo lines (proc(5) format) as a Ray worker pod with the Lustre PVC sees them.
MOUNTINFO = """\
1510 1370 0:389 / / rw,relatime master:583 - overlay overlay rw,lowerdir=/var/lib/containerd/l/1,upperdir=/u,workdir=/w
1511 1510 0:392 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
1530 1510 0:75 / /lustre rw,relatime - lustre 10.90.0.4@tcp:/lfs rw,flock,lazystatfs,encrypt
1531 1510 8:1 /var/lib/kubelet/pods/x/volumes/kubernetes.io~configmap/job-scripts /etc/nemo-rl-gke ro,relatime - ext4 /dev/sda1 rw
1532 1510 0:80 / /mnt/with\\040space rw - tmpfs tmpfs rw
"""  # noqa: E501  (a real mountinfo line is as long as it is)


def test_mount_of_finds_the_lustre_mount_holding_a_path():
    assert gc.mount_of("/lustre/gate/run", MOUNTINFO) == ("/lustre", "lustre", "10.90.0.4@tcp:/lfs")
    assert gc.mount_of("/lustre", MOUNTINFO)[1] == "lustre"
    assert gc.mount_of("/lustreX", MOUNTINFO)[1] == "overlay"  # a sibling name is not under /lustre
    assert gc.mount_of("/mnt/with space/f", MOUNTINFO)[0] == "/mnt/with space"


def test_lustre_expected_figure_is_a_fraction_of_the_smaller_ceiling():
    # dev: 18,000 GiB at 500 MB/s/TiB on 2 nodes with 200 Gbps primary NICs.
    aggregate = catalog.LUSTRE_TIERS[500].throughput_bytes_per_s(18000) / gc.GB
    nic = catalog.PRIMARY_NIC_GBITPS["a3-ultragpu-8g"] / 8
    expected, how = gc.lustre_expected(0.5, aggregate, 2, nic)
    assert expected == pytest.approx(0.5 * 8.7890625)
    assert "instance aggregate" in how.split("(")[-1]
    expected, how = gc.lustre_expected(1.0, 1000.0, 2, nic)  # a huge instance: the NICs bound it
    assert expected == 50.0 and how.endswith("(2 x primary NIC)")
    for bad in (0, -0.1, 1.01):
        with pytest.raises(ValueError):
            gc.lustre_expected(bad, aggregate, 2, nic)


def test_lustre_throughput_uses_the_common_window_of_all_nodes():
    parts = [{"bytes": 10 * gc.GB, "start": 100.0, "end": 110.0}, {"bytes": 10 * gc.GB, "start": 105.0, "end": 115.0}]
    assert gc.aggregate_throughput(parts) == pytest.approx(20 / 15)


def test_lustre_checks_fail_with_measured_and_expected_figures():
    mounts = {
        "node0 gke-gpu-0": ("/lustre", "lustre", "10.90.0.4@tcp:/lfs"),
        "node1 gke-gpu-1": ("/", "overlay", "overlay"),
    }
    parts = [{"bytes": 2 * gc.GB, "start": 0.0, "end": 10.0}]
    checks = {
        c.name: c
        for c in gc.lustre_checks(
            mounts=mounts,
            expected_fstype="lustre",
            probe_errors=[],
            write_parts=parts,
            read_parts=[{"bytes": 0, "start": 0.0, "end": 1.0, "error": "gke-gpu-0 read /lustre/x: [Errno 5] EIO"}],
            expected_gbps=4.39,
            how="0.5 x ...",
            cross_node=True,
        )
    }
    assert checks["lustre.mount"].line() == (
        "readiness-gate FAIL lustre.mount: measured node1 gke-gpu-1: overlay at /, expected lustre on every node "
        "(the volume is not mounted where the job expects it)"
    )
    assert checks["lustre.write"].failed and checks["lustre.write"].measured == "0.20 GB/s"
    assert checks["lustre.read"].failed and "EIO" in checks["lustre.read"].measured


def test_exit_code_fails_the_job_only_in_enforce_mode():
    bad = [gc.Check("x", gc.FAIL, "1", "2"), gc.Check("y", gc.SKIP, "-", "-")]
    assert gc.exit_code(bad, "enforce") == 1
    assert gc.exit_code(bad, "advisory") == 0
    assert gc.exit_code(bad[1:], "enforce") == 0
    s = gc.summary(bad, {"run_id": "r"})
    assert s["passed"] is False and s["failed"] == ["x"] and s["run_id"] == "r"


def test_shipped_program_files_import_only_what_the_nemo_rl_image_has():
    """The ConfigMap ships readiness_gate.py and gate_checks.py alone: standard library, Ray, torch and NVML's
    binding (NeMo-RL's own dependencies) and each other; nothing of this repository."""
    import ast
    import sys
    from pathlib import Path

    allowed = set(sys.stdlib_module_names) | {"ray", "torch", "pynvml", "gate_checks", "__future__"}
    for name in ("readiness_gate.py", "gate_checks.py"):
        tree = ast.parse((Path(gc.__file__).parent / name).read_text())
        roots = {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        roots |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert roots <= allowed, (name, roots - allowed)
        if name == "gate_checks.py":
            assert roots <= set(sys.stdlib_module_names) | {"__future__"}


# --- a node's recent pass --------------------------------------------------------------------------------------
HOUR = 3600.0
NOW = 1_800_000_000.0
BOOT = "6fd5a44b-35f4-4ad4-a9b9-6b9be13e1fe9"
GIB = "sha256:" + "ab" * 32
# An NVML-shaped probe of an A4 node (readiness_gate.probe_gpus: its node facts, NVML's driver version string).
A4_PROBE = {
    "host": "ray-worker-abc12",
    "node_name": "gke-codelab-gpu-a4-spot-5c1d-x2vt",
    "boot_id": BOOT,
    "driver_version": "570.124.06",
    "gib_digest": GIB,
}
TERMS = gc.PassTerms(
    backend="nccl",
    expect_net="gIB",
    gpus_per_node=8,
    nics_per_node=8,
    inter_node=True,
    min_allreduce_large_busbw=catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS,
    min_allgather_avg_busbw=catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS,
    lustre_gbps_per_node=0.55,
    lustre_source="10.90.0.2@tcp:/lustrefs",
)
IDENT = gc.NodeIdentity.of(A4_PROBE)


def record(passed_at=NOW - HOUR, terms=TERMS, **identity):
    assert IDENT is not None
    ident = gc.NodeIdentity(**{**vars(IDENT), **identity})
    return gc.node_record(ident, terms, passed_at=passed_at, run_id="20270115T101500Z-42", summary="/lustre/gate/r")


def problem(rec, *, window=24 * HOUR, not_before=0.0, need=TERMS):
    assert IDENT is not None
    return gc.record_problem(rec, IDENT, need, now=NOW, window_s=window, not_before=not_before)


def test_a_pass_on_the_same_boot_driver_and_gib_within_the_window_lets_the_node_skip_the_sweeps():
    assert IDENT == gc.NodeIdentity("gke-codelab-gpu-a4-spot-5c1d-x2vt", BOOT, "570.124.06", GIB)
    assert problem(record()) is None
    assert problem(record(passed_at=NOW - 23.9 * HOUR)) is None


@pytest.mark.parametrize(
    "rec,why",
    [
        (record(passed_at=NOW - 25 * HOUR), "passed 25.0 h ago, more than the 24.0 h window"),
        (record(boot_id="0b8e3c4e-77aa-4c53-9f0e-0d6c1a0b9d11"), "another boot (recorded 0b8e3c4e, now 6fd5a44b)"),
        (record(driver="550.54.15"), "another driver (recorded 550.54.15, now 570.124.06)"),
        (record(gib="sha256:" + "cd" * 32), "another gIB plugin"),
        (record(node="gke-codelab-gpu-a4-spot-5c1d-0000"), "recorded for node 'gke-codelab-gpu-a4-spot-5c1d-0000'"),
    ],
    ids=["stale", "another-boot", "another-driver", "another-gib", "another-node"],
)
def test_a_pass_that_no_longer_holds_for_the_node_is_refused_and_says_why(rec, why):
    assert problem(rec).startswith(why)


@pytest.mark.parametrize(
    "rec,why",
    [
        # Stamped far ahead so it would never expire.
        (record(passed_at=NOW + 30 * 24 * HOUR), "stamped 720.0 h in the future"),
        ({"version": 1, "node": IDENT.node, "passed": True}, "not a node record of this gate"),
        ("passed", "not a node record of this gate"),
        ({**record(), "version": 99}, "not a node record of this gate"),
        # Lower thresholds than this gate asks, another backend, a single-node pass, another filesystem.
        (record(terms=replace(TERMS, min_allreduce_large_busbw=10.0)), "passed at all-reduce GB/s >= 10"),
        (record(terms=replace(TERMS, backend="gloo")), "a gloo pass, this gate runs nccl"),
        (record(terms=replace(TERMS, inter_node=False)), "a single-node pass"),
        (record(terms=replace(TERMS, lustre_source="/dev/sda1")), "passed on Lustre '/dev/sda1'"),
        (record(terms=replace(TERMS, lustre_gbps_per_node=0.1)), "passed at Lustre GB/s per node >= 0.1"),
    ],
    ids=["future", "no-terms", "not-an-object", "version", "weaker", "gloo", "single-node", "other-fs", "lustre"],
)
def test_a_forged_malformed_or_weaker_record_is_no_pass(rec, why):
    assert problem(rec).startswith(why)


def test_a_pass_on_stricter_terms_counts_for_a_laxer_gate():
    stricter = replace(TERMS, min_allreduce_large_busbw=300.0, lustre_gbps_per_node=2.0, nics_per_node=8)
    assert problem(record(terms=stricter)) is None


def test_window_zero_and_a_gate_rerun_discard_recorded_passes():
    assert problem(record(), window=0) == "this gate reuses no pass (window 0)"
    assert problem(record(passed_at=NOW - HOUR), not_before=NOW - 60) == "passed before the last gateRerun"


def test_a_new_gate_rerun_value_sets_the_floor_once_and_an_unset_one_keeps_it():
    floor, marker = gc.rerun_floor(None, "", NOW)
    assert (floor, marker) == (0.0, None)
    floor, marker = gc.rerun_floor(None, "again-1", NOW)
    assert floor == NOW and marker is not None and marker["not_before"] == NOW
    assert "again-1" not in json.dumps(marker)  # only its digest is kept
    # The next gates under the same value keep that floor, so passes after it count again.
    assert gc.rerun_floor(marker, "again-1", NOW + HOUR) == (NOW, None)
    assert gc.rerun_floor(marker, "", NOW + HOUR) == (NOW, None)
    floor, new = gc.rerun_floor(marker, "again-2", NOW + HOUR)
    assert floor == NOW + HOUR and new is not None and new["token"] != marker["token"]


def test_the_newest_valid_record_of_the_trusted_directories_wins_and_a_missing_one_is_said():
    assert IDENT is not None
    own, platform = "/lustre/gate/nodes", "/lustre/gate/platform-nodes"
    stale, fresh = record(passed_at=NOW - 30 * HOUR), record(passed_at=NOW - 2 * HOUR)
    v = gc.choose_record(IDENT, [(own, stale), (platform, fresh)], TERMS, now=NOW, window_s=24 * HOUR, not_before=0)
    assert v.valid and v.source == platform and v.record == fresh
    v = gc.choose_record(IDENT, [(own, None), (platform, None)], TERMS, now=NOW, window_s=24 * HOUR, not_before=0)
    assert not v.valid and v.describe() == f"{IDENT.node}: no pass recorded"
    v = gc.choose_record(IDENT, [(own, stale)], TERMS, now=NOW, window_s=24 * HOUR, not_before=0)
    assert v.describe() == f"{IDENT.node}: passed 30.0 h ago, more than the 24.0 h window"


@pytest.mark.parametrize("name", ["", "../../etc/passwd", "Node_1", "a/b", "-x"])
def test_a_node_without_a_usable_name_or_boot_id_gets_no_record(name):
    assert gc.NodeIdentity.of({**A4_PROBE, "node_name": name}) is None
    assert gc.NodeIdentity.of({**A4_PROBE, "boot_id": ""}) is None


def test_skipped_lustre_sweeps_keep_the_mount_checks_and_say_why():
    mounts = {"node0 h0": ("/lustre", "lustre", "10.90.0.2@tcp:/lustrefs")}
    checks = {
        c.name: c
        for c in gc.lustre_checks(
            mounts=mounts,
            expected_fstype="lustre",
            probe_errors=[],
            write_parts=[],
            read_parts=[],
            expected_gbps=4.39,
            how="-",
            cross_node=False,
            throughput_skipped="every node passed them within 24 h",
        )
    }
    assert checks["lustre.mount"].status == gc.PASS and checks["lustre.writable"].status == gc.PASS
    assert checks["lustre.write"].status == checks["lustre.read"].status == gc.SKIP
    assert checks["lustre.read"].detail == "every node passed them within 24 h"


def test_a_gate_after_an_unfinished_attempt_of_its_run_distrusts_that_attempts_passes():
    earlier = {"passed": True, "started_at": NOW - HOUR}
    floor = gc.retry_floor(earlier, done_at=None)
    assert floor is not None and NOW - HOUR < floor < NOW - HOUR + 1
    # The pass that attempt wrote at its start, and any before it, no longer count; a later one does.
    assert problem(record(passed_at=NOW - HOUR), not_before=floor) == "passed before the last gateRerun"
    why = gc.RETRY_WHY
    assert (
        gc.record_problem(
            record(passed_at=NOW - HOUR),
            IDENT,
            TERMS,
            now=NOW,
            window_s=24 * HOUR,
            not_before=floor,
            not_before_why=why,
        )
        == "passed before this run's unfinished attempt"
    )
    assert problem(record(passed_at=NOW - 60), not_before=floor) is None
    # Its training reached its end after that gate (the trained marker is newer), no earlier gate, or an unreadable
    # summary: not a retry. A marker from an earlier completion of the run (a resumed run that failed) does not count.
    assert gc.retry_floor(earlier, done_at=NOW - 60) is None
    assert gc.retry_floor(earlier, done_at=NOW - 2 * HOUR) == floor
    assert gc.retry_floor(None, done_at=None) is None
    assert gc.retry_floor({"passed": True}, done_at=None) is None
