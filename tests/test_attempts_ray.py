"""Runs that survive a lost node on a standing cluster: the entrypoint the program renders with bounded
attempts (core/recipes/commands.py Attempts, pod_programs/attempts.py) runs on a real local Ray cluster (head + two
worker nodes); the stand-in trainer runs on a worker node (tests/standin/ray_entry.py) and checkpoints like NeMo-RL.
Killing that worker node mid-run fails the attempt; the loop waits for capacity, reruns the steps, and the run
continues from its newest checkpoint on the other worker. One JSON line per attempt lands in the attempts log."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from ray.job_submission import JobStatus

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.ray_local import base_env, local_cluster
from tests.standin import TRAINER, fake_datasets, install_workdir, stage_gsm8k
from tests.standin.grpo_trainer import STEP_SECONDS_ENV
from workloads import job_scripts as job_scripts_module
from workloads.manifests.pod_parts import SCRIPTS_FILE_MODE

RECIPE, RELEASE = "gemma3-27b-gsm8k", "v0.5.0"
STEPS = 12
# Ray marks a killed node dead after its health checks fail (GCS health check period x threshold; defaults take
# ~30 s): shortened so the test stays short. A killed node fails each check at once (its port is closed), so a short
# period finds it; a long per-check timeout and initial delay keep a node that is merely slow on a loaded machine
# from being declared dead.
FAST_NODE_DEATH = {
    "RAY_health_check_initial_delay_ms": "10000",
    "RAY_health_check_period_ms": "2000",
    "RAY_health_check_timeout_ms": "10000",
    "RAY_health_check_failure_threshold": "3",
}


def _image(tmp: Path) -> tuple[recipes.ImagePaths, Path]:
    """/opt/nemo-rl of the release with the Ray stand-in entry, the scripts dir as the ConfigMap mounts it, and a
    `uv run python` shim (the image's) that runs this venv's Python with the offline `datasets`."""
    release = NEMO_RL_RELEASES[RELEASE]
    workdir, scripts, bin_dir = tmp / "opt-nemo-rl", tmp / "etc-nemo-rl-gke", tmp / "bin"
    install_workdir(workdir, release)
    entry = workdir / release.grpo_entry
    shutil.copyfile(TRAINER, entry.with_name("_standin_trainer.py"))
    shutil.copyfile(Path(__file__).parent / "standin" / "ray_entry.py", entry)
    scripts.mkdir()
    for name, text in job_scripts_module.job_scripts().items():
        (scripts / name).write_text(text, encoding="utf-8")
        (scripts / name).chmod(SCRIPTS_FILE_MODE)
    fake = fake_datasets.install(tmp / "site")
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(f'#!/bin/sh\nshift 2\nPYTHONPATH={fake}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} "$@"\n')
    uv.chmod(0o755)
    return recipes.ImagePaths(workdir=str(workdir), scripts_dir=str(scripts)), bin_dir


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _node_running(procs, needle: str):
    """The Ray node (a `ray start` process of tests/ray_local.py) one of whose descendants runs `needle`."""
    nodes = {p.pid: p for p in procs}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if needle not in cmdline or "python" not in cmdline:
                continue
            cur = int(pid)
            while cur > 1:
                # raylet and its workers are children of `ray start --block` or reparented into its session
                if cur in nodes or os.getsid(cur) in nodes:
                    return nodes.get(cur) or nodes[os.getsid(cur)]
                cur = _ppid(cur)
        except (OSError, ProcessLookupError, ValueError):
            continue
    raise AssertionError(f"no Ray node runs {needle!r}")


def _socket_dirs(procs) -> list[str]:
    """The sockets directory of each raylet the cluster's nodes run (from its command line, as Ray started it)."""
    groups = {p.pid for p in procs}
    dirs = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            if os.getsid(int(pid)) not in groups or not argv[0].endswith("/raylet"):
                continue
        except (OSError, ProcessLookupError):
            continue
        (store,) = [a.split("=", 1)[1] for a in argv if a.startswith("--store_socket_name=")]
        dirs.append(os.path.dirname(store))
    return dirs


@pytest.mark.ray
def test_a_killed_worker_mid_run_fails_one_attempt_and_the_run_continues_from_its_checkpoint(tmp_path):
    paths, bin_dir = _image(tmp_path)
    lustre = tmp_path / "lustre"
    release = NEMO_RL_RELEASES[RELEASE]
    job = JobSettings.model_validate(
        {"jobRecipe": RECIPE, "jobOverrides": {"max_num_steps": STEPS, "save_period": 2, "keep_top_k": 2}}
    )
    recipe = recipes.resolve_recipe(job, release)
    run = recipes.default_run_name(job, "ci", release)
    log = recipes.attempts_log(str(lustre), run)
    attempts = recipes.Attempts(
        attempts=3, log=log, amount=1, capacity_wait_seconds=60, resource="trainer", poll_seconds=1
    )
    entrypoint = recipes.entrypoint(
        recipe, release, recipes.EntrypointArgs(mount_path=str(lustre), run_name=run, paths=paths, attempts=attempts)
    )
    env = base_env(
        {**FAST_NODE_DEATH, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", STEP_SECONDS_ENV: "0.4"}
    )
    ckpt = Path(recipes.checkpoint_dir(str(lustre), run))
    stage_gsm8k(lustre, tmp_path / "site")  # the data staging Job, before the RayJob exists
    with local_cluster(env, head_cpus=2, worker_cpus=(1, 1), worker_resources='{"trainer": 1}') as cluster:
        # Each node picks its socket names in a directory no other node writes (tests/ray_local.py docstring).
        assert len(set(_socket_dirs(cluster.procs))) == 3, _socket_dirs(cluster.procs)
        client = cluster.client()
        job_id = client.submit_job(
            entrypoint=entrypoint, runtime_env=recipes.runtime_env(recipe, mount_path=str(lustre))
        )
        deadline = time.monotonic() + 60
        while not (ckpt / "step_4").exists():
            assert not client.get_job_status(job_id).is_terminal(), client.get_job_logs(job_id)
            assert time.monotonic() < deadline, client.get_job_logs(job_id)
            time.sleep(0.1)
        node = _node_running(cluster.procs[1:], "_standin_trainer.py")
        os.killpg(node.pid, signal.SIGKILL)  # the spot node goes, with everything it runs (its own session)
        while not client.get_job_status(job_id).is_terminal():
            assert time.monotonic() < deadline + 60, client.get_job_logs(job_id)
            time.sleep(0.2)
        logs = client.get_job_logs(job_id)
        assert client.get_job_status(job_id) == JobStatus.SUCCEEDED, logs
    records = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert [(r["attempt"], r["result"]) for r in records] == [(1, "failed"), (2, "succeeded")], records
    assert records[0]["exitCode"] != 0
    # (Ray forwards the task's output to the driver's log, so a line may appear twice: compare distinct values.)
    resumed = {int(m) for m in re.findall(r"resuming from step ([0-9]+) ", logs)}
    assert len(resumed) == 1 and min(resumed) >= 4, logs  # the second attempt, from the newest step_N
    assert "starting from step 0" in logs.split('"attempt": 1')[0]  # only the first attempt started fresh
    assert json.loads((ckpt / f"step_{STEPS}" / "training_info.json").read_text()) == {"step": STEPS}


@pytest.mark.unit
def test_an_attempt_that_finds_no_capacity_in_its_bound_ends_the_job_and_says_so(tmp_path, monkeypatch, capsys):
    from pod_programs import attempts as loop

    monkeypatch.setattr(loop, "ray_totals", lambda: {"GPU": 8.0})  # one node of the two came back
    log = tmp_path / "attempts.jsonl"
    argv = ["--attempts", "3", "--log", str(log), "--amount", "16", "--capacity-wait-seconds", "0"]
    assert loop.main([*argv, "--poll-seconds", "0", "--", "true"]) != 0
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["result"] == "no-capacity" and record["attempt"] == 1
    assert "waiting for capacity" not in capsys.readouterr().out  # a zero bound does not wait


@pytest.mark.unit
def test_attempts_stop_at_the_first_success_and_rerun_every_step_after_a_failure(tmp_path, monkeypatch):
    from pod_programs import attempts as loop

    monkeypatch.setattr(loop, "ray_totals", lambda: {"GPU": 16.0})
    log, flag = tmp_path / "attempts.jsonl", tmp_path / "failed-once"
    fail_once = ["sh", "-c", f"test -f {flag} || {{ touch {flag}; exit 3; }}"]
    step_log = tmp_path / "steps"
    record_step = ["sh", "-c", f"echo gate >> {step_log}"]
    argv = ["--attempts", "3", "--log", str(log), "--amount", "16", "--capacity-wait-seconds", "5", "--"]
    assert loop.main([*argv, *record_step, "---", *fail_once]) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["result"], r["exitCode"]) for r in records] == [("failed", 3), ("succeeded", 0)]
    assert step_log.read_text().split() == ["gate", "gate"]  # the first step (the gate) ran again
