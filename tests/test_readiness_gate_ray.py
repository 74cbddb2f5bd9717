"""The readiness gate program run for real through the Ray Jobs API on a 2-node local Ray cluster, alone and
as the first step of the job's rendered entrypoint.

Two `ray start` nodes on loopback stand in for two GPU nodes: torch on CPU with the gloo backend instead of
NCCL (the placement group, the one-task-per-rank layout, the sweeps, the Lustre I/O and the summary are the
same code), and a temporary directory on this machine's disk instead of Lustre. Not exercised here, for want
of a GPU: NVML (its decisions are tested on NVML-shaped records in test_gate_checks.py) and NCCL's log (its
parser is tested on NCCL-format lines there).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray.job_submission import JobStatus

from core import catalog, gate, recipes
from core.settings.job import JobSettings
from pod_programs import gate_checks as gc
from tests.ray_local import base_env, local_cluster
from tests.standin.grpo_trainer import STEP_SECONDS_ENV

# The job path's stand-ins (NeMo-RL's working directory with the stand-in trainer, the scripts directory as the
# head mounts the ConfigMap, `uv`): shared with tests/test_ray_job_path.py, not copied.
from tests.test_ray_job_path import (  # noqa: F401
    HOME_RELEASE,
    QWEN,
    STEP_SECONDS,
    datasets_calls,
    fake_site,
    image_tools,
    job_scripts_dir,
    nemo_rl_image,
    steps_saved,
)

pytestmark = pytest.mark.ray

PROGRAMS = Path(__file__).resolve().parents[1] / "pod_programs"
PROGRAM_FILES = ("readiness_gate.py", "gate_checks.py")
NODES, RANKS_PER_NODE = 2, 2


NODE_NAMES = ("gate-node-0", "gate-node-1")  # each Ray node's Kubernetes node name (the downward API's, on GKE)


def node_env(extra: dict, node: str) -> dict:
    return base_env({**extra, gc.NODE_NAME_ENV: node})


@pytest.fixture(scope="module")
def cluster(image_tools):
    # GLOO_SOCKET_IFNAME plays the role the job's runtime env gives it on GKE (eth0 there, loopback here); the
    # image's `uv` goes first on PATH as in the NeMo-RL image.
    extra = {
        "GLOO_SOCKET_IFNAME": "lo",
        "PATH": f"{image_tools}:{base_env().get('PATH', '/usr/bin:/bin')}",
        STEP_SECONDS_ENV: STEP_SECONDS,
    }
    with local_cluster(
        node_env(extra, NODE_NAMES[0]),
        head_cpus=RANKS_PER_NODE,
        worker_cpus=(RANKS_PER_NODE,),
        worker_envs=[node_env(extra, NODE_NAMES[1])],
    ) as c:
        yield c


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    """The program's files as the ConfigMap ships them: the two files side by side, read-only."""
    d = tmp_path_factory.mktemp("scripts")
    for name in PROGRAM_FILES:
        shutil.copy(PROGRAMS / name, d / name)
        (d / name).chmod(0o444)
    return d / PROGRAM_FILES[0]


def fstype_of(path: Path) -> str:
    """The filesystem type holding `path`, from util-linux (an oracle independent of the gate's parser)."""
    return subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", str(path)], check=True, capture_output=True, text=True
    ).stdout.strip()


def gate_argv(program: Path, lustre: Path, **over) -> list[str]:
    args = {
        "nodes": NODES,
        "gpus-per-node": RANKS_PER_NODE,
        "backend": "gloo",
        "mode": "enforce",
        "summary-dir": lustre / "gate" / "ci-run",
        "min-allreduce-large-busbw": 1e-6,
        "min-allgather-avg-busbw": 1e-6,
        "max-plausible-busbw": 1e6,
        "sweep-min-bytes": 1024,
        "sweep-max-bytes": 1024**2,
        "warmup": 1,
        "iters": 3,
        "lustre-path": lustre,
        "lustre-fstype": fstype_of(lustre),
        "lustre-aggregate-gbps": 1e-6,
        "primary-nic-gbps": 25.0,
        "lustre-fraction": 0.5,
        "lustre-seconds": 1,
        "lustre-threads": 2,
        "lustre-block-bytes": 1024**2,
        "lustre-max-bytes-per-node": 64 * 1024**2,
        "lustre-sync-seconds": 1,
        "placement-timeout": 60,
        "step-timeout": 240,
    }
    args.update({k.replace("_", "-"): v for k, v in over.items()})
    return [sys.executable, str(program), *[f"--{k}={v}" for k, v in args.items()]]


def run_gate(cluster, argv, timeout: float = 300, runtime_env: dict | None = None):
    """Submit `argv` (a list) or an entrypoint string; wait for the end; (status, logs)."""
    client = cluster.client()
    entrypoint = argv if isinstance(argv, str) else shlex.join(argv)
    job = client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env, submission_id=f"gate-{time.time_ns()}")
    deadline = time.monotonic() + timeout
    while not (status := client.get_job_status(job)).is_terminal():
        if time.monotonic() > deadline:
            client.stop_job(job)
            raise AssertionError(f"gate still {status} after {timeout} s:\n{client.get_job_logs(job)}")
        time.sleep(0.5)
    return status, client.get_job_logs(job)


def check_lines(logs: str) -> dict[str, str]:
    """name -> the check's line as the program printed it."""
    out = {}
    for line in logs.splitlines():
        if line.startswith(gc.PREFIX + " ") and ": measured " in line:
            out[line.split()[2].rstrip(":")] = line
    return out


def test_gate_passes_on_two_nodes_and_writes_its_summary_to_the_shared_volume(cluster, program, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    status, logs = run_gate(cluster, gate_argv(program, lustre))
    assert status == JobStatus.SUCCEEDED, logs
    lines = check_lines(logs)
    summary = json.loads((lustre / "gate" / "ci-run" / "summary.json").read_text())
    assert summary["passed"] is True and summary["failed"] == []
    by_name = {c["name"]: c for c in summary["checks"]}
    assert set(by_name) == set(lines)
    # One bundle per node, on two different Ray nodes.
    assert by_name["placement"]["status"] == "pass" and by_name["placement"]["measured"] == "2 distinct nodes"
    assert len({n["node_id"] for n in summary["nodes"]}) == NODES
    # The sweeps: 1 KiB .. 1 MiB for both collectives over 4 ranks, bandwidth as nccl-tests defines it
    # (PERFORMANCE.md: busbw/algbw = 2(n-1)/n = 1.5 for all-reduce, (n-1)/n = 0.75 for all-gather at n=4).
    for coll, ratio in (("all_reduce", 1.5), ("all_gather", 0.75)):
        rows = summary["sweeps"][coll]
        assert [r["size_bytes"] for r in rows] == [1024 * 2**i for i in range(11)]
        for r in rows:
            assert r["algbw"] == pytest.approx(r["size_bytes"] / r["seconds"] / 1e9)
            assert r["busbw"] == pytest.approx(r["algbw"] * ratio)
    assert by_name["nccl.correctness"]["measured"] == "0 wrong elements"
    assert by_name["nccl.all_reduce.large_busbw"]["detail"] == "busbw at 1 MiB, 4 ranks on 2 nodes"
    # CPU run: what needs a GPU is skipped and says so.
    assert by_name["gpu"]["status"] == "skipped" and by_name["nccl.net"]["status"] == "skipped"
    # Lustre: both nodes wrote at the same time, then each read the other's files with O_DIRECT.
    assert by_name["lustre.mount"]["status"] == "pass"
    assert by_name["lustre.read"]["detail"].startswith("O_DIRECT read of files another node wrote")
    assert all(p["bytes"] > 0 for p in summary["lustre"]["write"] + summary["lustre"]["read"])
    assert not (lustre / ".readiness-gate").exists() or not any((lustre / ".readiness-gate").iterdir())
    # The attempt history keeps this run too.
    attempts = list((lustre / "gate" / "ci-run" / "attempts").glob("*.json"))
    assert [json.loads(a.read_text())["run_id"] for a in attempts] == [summary["run_id"]]
    assert "readiness-gate PASSED" in logs


def test_missing_nodes_fail_at_placement_instead_of_hanging(cluster, program, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    status, logs = run_gate(cluster, gate_argv(program, lustre, nodes=3, placement_timeout=5))
    assert status == JobStatus.FAILED, logs
    assert check_lines(logs)["placement"] == (
        "readiness-gate FAIL placement: measured 3 bundles of {'CPU': 2} not placed after 5 s, expected 3 nodes "
        "with 2 free CPUs each (are the Ray workers up and idle?)"
    )


# --- as the first step of the job's entrypoint -----------------------------------------------------------
def rendered_job(lustre: Path, image, gate_over: dict, mode: str = "on"):
    """The entrypoint and runtime env the program renders for a short run of the Qwen recipe, with the gate
    command core.gate renders, its options switched to what this CPU cluster needs (gloo, 2 x 1 ranks, small
    sweep, this disk instead of Lustre). Returns (entrypoint, runtime env, checkpoint dir)."""
    settings = JobSettings.model_validate({"jobRecipe": QWEN, "jobOverrides": {"max_num_steps": 2, "save_period": 1}})
    release = image.release
    recipe = recipes.resolve_recipe(settings, release)
    run = recipes.default_run_name(settings, "ci", release)
    opts = gate.options(
        gate.GateArgs(
            mode=mode,
            nodes=NODES,
            gpus_per_node=1,
            gpu_type="nvidia-b200",
            machine_type="a4-highgpu-8g",
            mount_path=str(lustre),
            run_name=run,
            min_allreduce_busbw=catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS,
            min_allgather_busbw=catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS,
            lustre_aggregate_gbps=1e-6,
            lustre_fraction=0.5,
        )
    )
    opts = dict(zip(opts[0::2], opts[1::2], strict=True))
    opts.update(
        {
            "--backend": "gloo",
            "--lustre-fstype": fstype_of(lustre),
            "--sweep-max-bytes": str(1024**2),
            "--warmup": "1",
            "--iters": "3",
            "--lustre-seconds": "1",
            "--lustre-threads": "2",
            "--lustre-block-bytes": str(1024**2),
            "--lustre-max-bytes-per-node": str(64 * 1024**2),
            "--lustre-sync-seconds": "1",
            "--placement-timeout": "60",
            "--step-timeout": "240",
            "--min-allreduce-large-busbw": "0.000001",
            "--min-allgather-avg-busbw": "0.000001",
        }
    )
    opts.update(gate_over)
    entrypoint = recipes.entrypoint(
        recipe,
        release,
        recipes.EntrypointArgs(
            mount_path=str(lustre), run_name=run, paths=image.paths, gate=[w for kv in opts.items() for w in kv]
        ),
    )
    env = recipes.runtime_env(recipe, mount_path=str(lustre))
    # eth0 is the pod's primary interface on GKE; this machine's two Ray nodes talk over loopback.
    env["env_vars"].update(NCCL_SOCKET_IFNAME="lo", GLOO_SOCKET_IFNAME="lo")
    return entrypoint, env, Path(recipes.checkpoint_dir(str(lustre), run))


@pytest.mark.parametrize("nemo_rl_image", [HOME_RELEASE[QWEN]], indirect=True)
def test_failed_gate_ends_the_rendered_job_before_training_starts(cluster, nemo_rl_image, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    entrypoint, env, ckpt = rendered_job(
        lustre,
        nemo_rl_image,
        {
            "--min-allreduce-large-busbw": "100000",
            "--lustre-fstype": "lustre",
            "--lustre-aggregate-gbps": "100000",
            "--lustre-fraction": "1",
        },
    )
    status, logs = run_gate(cluster, entrypoint, runtime_env=env)
    assert status == JobStatus.FAILED, logs
    assert "stand-in GRPO" not in logs and steps_saved(ckpt) == []
    # One line per failed check: its name, the measured and the expected figure.
    lines = check_lines(logs)
    assert lines["nccl.all_reduce.large_busbw"].startswith("readiness-gate FAIL nccl.all_reduce.large_busbw: measured ")
    assert lines["nccl.all_reduce.large_busbw"].endswith(
        " GB/s, expected >= 100000.00 GB/s (busbw at 1 MiB, 2 ranks on 2 nodes)"
    )
    fs = fstype_of(lustre)
    assert lines["lustre.mount"].startswith("readiness-gate FAIL lustre.mount: measured node0 ")
    assert f"{fs} at " in lines["lustre.mount"] and ", expected lustre on every node" in lines["lustre.mount"]
    # 1e5 GB/s aggregate, but 2 nodes x 25 GB/s primary NIC bound it: expected 1 x 50 GB/s.
    assert lines["lustre.write"].startswith("readiness-gate FAIL lustre.write: measured ")
    assert "expected >= 50.00 GB/s" in lines["lustre.write"]
    assert lines["nccl.all_gather.avg_busbw"].startswith("readiness-gate PASS")
    summary = json.loads((lustre / "gate" / ckpt.name / "summary.json").read_text())
    assert set(summary["failed"]) == {"nccl.all_reduce.large_busbw", "lustre.mount", "lustre.write", "lustre.read"}
    assert "readiness-gate FAILED in " in logs


@pytest.mark.parametrize("nemo_rl_image", [HOME_RELEASE[QWEN]], indirect=True)
def test_advisory_gate_logs_its_failure_and_training_runs(cluster, nemo_rl_image, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    entrypoint, env, ckpt = rendered_job(
        lustre, nemo_rl_image, {"--min-allgather-avg-busbw": "100000"}, mode="advisory"
    )
    status, logs = run_gate(cluster, entrypoint, runtime_env=env)
    assert status == JobStatus.SUCCEEDED, logs
    assert logs.index("readiness-gate FAILED (advisory: continuing)") < logs.index("stand-in GRPO")
    assert "finished at step 2" in logs and steps_saved(ckpt) == [1, 2]


# --- once per node: node records -----------------------------------------------------------------------------------
DAY = 24 * 3600
SWEEPS = ("lustre.write", "lustre.read", "nccl.sweep")


def records_argv(program: Path, lustre: Path, *, trusted: tuple[Path, ...] = (), **over) -> list[str]:
    argv = gate_argv(program, lustre, node_records_dir=lustre / "gate" / ".nodes", node_pass_window_seconds=DAY, **over)
    return argv + [f"--trusted-node-records-dir={d}" for d in trusted]


def summary_of(lustre: Path) -> dict:
    return json.loads((lustre / "gate" / "ci-run" / "summary.json").read_text())


def statuses(summary: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in summary["checks"]}


@pytest.fixture(scope="module")
def passed(cluster, program, tmp_path_factory) -> dict[str, dict]:
    """The node records a full gate that passed wrote, by node name (what every test below starts from)."""
    lustre = tmp_path_factory.mktemp("first") / "lustre"
    lustre.mkdir()
    status, logs = run_gate(cluster, records_argv(program, lustre))
    assert status == JobStatus.SUCCEEDED, logs
    summary = summary_of(lustre)
    assert summary["reuse"]["sweeps"] == "run" and all(statuses(summary)[c] == "pass" for c in SWEEPS[:2])
    records = {p.stem: json.loads(p.read_text()) for p in (lustre / "gate" / ".nodes").glob("*.json")}
    assert sorted(records) == sorted(NODE_NAMES) and sorted(summary["node_records"]["written"]) == sorted(NODE_NAMES)
    boot = Path(gc.BOOT_ID_PATH).read_text().strip()
    for node, rec in records.items():
        # Bound to the node and its boot; no NVML or gIB on this CPU machine.
        assert (rec["node"], rec["boot_id"], rec["driver"], rec["gib"]) == (node, boot, None, None)
        assert rec["run_id"] == summary["run_id"] and rec["terms"]["backend"] == "gloo"
    return records


def with_records(lustre: Path, records: dict[str, dict], where: str = ".nodes") -> Path:
    d = lustre / "gate" / where
    d.mkdir(parents=True, exist_ok=True)
    for node, rec in records.items():
        (d / f"{node}.json").write_text(json.dumps(rec))
    return d


def test_nodes_that_passed_recently_skip_the_sweeps_but_not_the_health_checks(cluster, program, passed, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    with_records(lustre, passed)
    # This run trained to its end after an earlier gate (its trained marker is there): not a retry.
    earlier = lustre / "gate" / "ci-run" / "summary.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps({"passed": True, "started_at": time.time() - 60}))
    done = lustre / "trained" / "ci-run"
    done.parent.mkdir()
    done.touch()
    status, logs = run_gate(cluster, records_argv(program, lustre, run_done_marker=done))
    assert status == JobStatus.SUCCEEDED, logs
    summary = summary_of(lustre)
    st = statuses(summary)
    assert summary["reuse"]["sweeps"] == "skipped"
    assert all(st[c] == "skipped" for c in SWEEPS)
    # What always runs: placement on distinct nodes, the GPU health step (skipped on CPU, and says so), the mount.
    assert st["placement"] == "pass" and st["lustre.mount"] == "pass" and st["lustre.writable"] == "pass"
    assert "sweeps skipped: every node passed them within 24 h" in logs
    assert summary["step_seconds"]["collectives"] < 1
    # A fast pass writes no record: the records still date from the sweeps they stand for.
    again = {p.stem: json.loads(p.read_text()) for p in (lustre / "gate" / ".nodes").glob("*.json")}
    assert again == passed and "node_records" not in summary


def test_a_stale_record_and_one_from_another_boot_get_the_full_gate_even_if_nothing_can_be_recorded(
    cluster, program, passed, tmp_path
):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    stale = {**passed[NODE_NAMES[0]], "passed_at": time.time() - 25 * 3600}
    reboot = {**passed[NODE_NAMES[1]], "boot_id": "0b8e3c4e-77aa-4c53-9f0e-0d6c1a0b9d11"}
    platform = with_records(lustre, {NODE_NAMES[0]: stale, NODE_NAMES[1]: reboot}, where=".platform-nodes")
    # The gate's own records directory cannot be written (a file stands where it should be; as root too): the gate
    # passes, records nothing, and says so.
    (lustre / "gate" / ".nodes").write_text("")
    status, logs = run_gate(cluster, records_argv(program, lustre, trusted=(platform,)))
    assert status == JobStatus.SUCCEEDED, logs
    summary = summary_of(lustre)
    assert summary["reuse"]["sweeps"] == "run" and all(statuses(summary)[c] == "pass" for c in SWEEPS[:2])
    nodes = summary["reuse"]["nodes"]
    assert f"{NODE_NAMES[0]}: passed 25.0 h ago, more than the 24.0 h window" in nodes
    assert any(n.startswith(f"{NODE_NAMES[1]}: another boot (recorded 0b8e3c4e, now ") for n in nodes), nodes
    assert summary["node_records"]["written"] == [] and len(summary["node_records"]["errors"]) == 2
    assert "readiness-gate node records: not written" in logs and "readiness-gate PASSED" in logs


def test_another_driver_and_a_forged_record_get_the_full_gate(cluster, program, passed, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    driver = {**passed[NODE_NAMES[0]], "driver": "570.124.06"}
    future = {**passed[NODE_NAMES[1]], "passed_at": time.time() + 30 * DAY}  # stamped to never expire
    with_records(lustre, {NODE_NAMES[0]: driver, NODE_NAMES[1]: future})
    # A valid copy where another experiment could write: not a directory this gate trusts, so never read.
    with_records(lustre, passed, where="../experiments/other/gate/.nodes")
    status, logs = run_gate(cluster, records_argv(program, lustre))
    assert status == JobStatus.SUCCEEDED, logs
    summary = summary_of(lustre)
    assert summary["reuse"]["sweeps"] == "run"
    assert sorted(summary["reuse"]["nodes"]) == [
        f"{NODE_NAMES[0]}: another driver (recorded 570.124.06, now None)",
        f"{NODE_NAMES[1]}: stamped 720.0 h in the future",
    ]
    # The full pass replaced both with records of this run.
    fresh = {p.stem: json.loads(p.read_text()) for p in (lustre / "gate" / ".nodes").glob("*.json")}
    assert {r["run_id"] for r in fresh.values()} == {summary["run_id"]}


def test_a_read_only_platform_directory_is_trusted_and_a_gate_rerun_discards_it(cluster, program, passed, tmp_path):
    lustre = tmp_path / "lustre"
    lustre.mkdir()
    platform = with_records(lustre, passed, where=".platform-nodes")
    platform.chmod(0o555)  # as an experiment mounts it (read-only for an ordinary user; the gate never writes it)
    try:
        status, logs = run_gate(cluster, records_argv(program, lustre, trusted=(platform,)))
        assert status == JobStatus.SUCCEEDED, logs
        summary = summary_of(lustre)
        assert summary["reuse"]["sweeps"] == "skipped"
        assert all(f"({platform})" in n for n in summary["reuse"]["nodes"])
        # A new gateRerun value: every pass recorded before it is discarded, the full gate runs, and its records
        # go to the gate's own directory, never to the platform's.
        status, logs = run_gate(cluster, records_argv(program, lustre, trusted=(platform,), rerun_token="again-1"))
        assert status == JobStatus.SUCCEEDED, logs
        summary = summary_of(lustre)
        assert summary["reuse"]["sweeps"] == "run"
        assert all(n.endswith("passed before the last gateRerun") for n in summary["reuse"]["nodes"])
        assert {p.stem: json.loads(p.read_text()) for p in platform.iterdir()} == passed
        assert sorted(summary["node_records"]["written"]) == sorted(NODE_NAMES)
    finally:
        platform.chmod(0o755)


# --- a lost node: the next attempt gates its replacement in full ------------------------------------------------------
# Ray marks a killed node dead after its health checks fail (tests/test_attempts_ray.py explains the figures).
FAST_NODE_DEATH = {
    "RAY_health_check_initial_delay_ms": "10000",
    "RAY_health_check_period_ms": "2000",
    "RAY_health_check_timeout_ms": "10000",
    "RAY_health_check_failure_threshold": "3",
}
# The step after the gate stands for training: the first attempt's fails once the test has replaced a node.
TRAIN_STEP = """
import os, sys, time
flag, go = sys.argv[1], sys.argv[2]
if os.path.exists(flag):
    sys.exit(0)
open(flag, "w").close()
while not os.path.exists(go):
    time.sleep(0.2)
sys.exit(1)
"""


def _alive_nodes(c) -> int:
    import urllib.request

    url = f"{c.dashboard}/api/v0/nodes?limit=100"
    with urllib.request.urlopen(url, timeout=10) as r:
        return sum(1 for n in json.load(r)["data"]["result"]["result"] if n.get("state") == "ALIVE")


def test_every_attempt_after_a_lost_node_gates_its_new_node_in_full(program, tmp_path):
    import os
    import signal

    lustre = tmp_path / "lustre"
    lustre.mkdir()
    flag, go = tmp_path / "training-started", tmp_path / "node-replaced"
    log = lustre / "attempts" / "ci-run.jsonl"
    gate = records_argv(program, lustre, placement_timeout=120)
    entry = [
        sys.executable,
        str(PROGRAMS / "attempts.py"),
        *("--attempts", "3", "--log", str(log), "--resource", "CPU", "--amount", "5"),
        *("--capacity-wait-seconds", "120", "--poll-seconds", "1", "--"),
        *gate,
        "---",
        *(sys.executable, "-c", TRAIN_STEP, str(flag), str(go)),
    ]
    extra = {"GLOO_SOCKET_IFNAME": "lo", **FAST_NODE_DEATH}
    # The head holds one CPU (the driver's), so both bundles of 2 CPUs land on the two GPU-node stand-ins.
    with local_cluster(
        node_env(extra, "head"),
        head_cpus=1,
        worker_cpus=(RANKS_PER_NODE, RANKS_PER_NODE),
        worker_envs=[node_env(extra, "node-a"), node_env(extra, "node-b")],
    ) as c:
        client = c.client()
        job = client.submit_job(entrypoint=shlex.join(entry), submission_id=f"lost-{time.time_ns()}")
        deadline = time.monotonic() + 240
        while not (flag.exists() and (lustre / "gate" / ".nodes" / "node-b.json").exists()):
            assert not client.get_job_status(job).is_terminal(), client.get_job_logs(job)
            assert time.monotonic() < deadline, client.get_job_logs(job)
            time.sleep(0.2)
        os.killpg(c.procs[2].pid, signal.SIGKILL)  # node-b goes, with everything it runs
        while _alive_nodes(c) != 2:
            assert time.monotonic() < deadline, client.get_job_logs(job)
            time.sleep(0.5)
        c.add_worker(RANKS_PER_NODE, node_env(extra, "node-c"), "node-c")  # its replacement, on a new node
        go.touch()
        while not client.get_job_status(job).is_terminal():
            assert time.monotonic() < deadline + 120, client.get_job_logs(job)
            time.sleep(0.5)
        logs = client.get_job_logs(job)
        assert client.get_job_status(job) == JobStatus.SUCCEEDED, logs
    attempts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(a["attempt"], a["result"]) for a in attempts] == [(1, "failed"), (2, "succeeded")], attempts
    runs = sorted(
        (json.loads(p.read_text()) for p in (lustre / "gate" / "ci-run" / "attempts").glob("*.json")),
        key=lambda s: s["run_id"],
    )
    assert len(runs) == 2 and all(r["passed"] for r in runs)
    first, second = runs
    # The second attempt's gate is a retry of an unfinished run: it distrusts node-a's pass from the first attempt
    # (a failure on the same nodes may be theirs) and finds none for node-c, so the full gate runs on both.
    assert second["reuse"]["sweeps"] == "run"
    assert sorted(second["reuse"]["nodes"]) == [
        "node-a: passed before this run's unfinished attempt",
        "node-c: no pass recorded",
    ]
    assert all(statuses(second)[c] == "pass" for c in ("lustre.write", "lustre.read", "nccl.correctness"))
    records = {p.stem: json.loads(p.read_text())["run_id"] for p in (lustre / "gate" / ".nodes").glob("*.json")}
    assert records == {"node-a": second["run_id"], "node-b": first["run_id"], "node-c": second["run_id"]}
