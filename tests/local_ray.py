"""A real Ray head on loopback for tests: `ray start --head --block` as a child process with its own ports,
temp dir and environment (the environment plays the role of the head pod's), stopped by signalling the
process group we started (never `ray stop --force`, which kills every Ray process on the machine).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional

RAY = Path(sys.executable).parent / "ray"
# Variables of the test runner that would redirect Ray clients away from the head under test.
CLIENT_REDIRECTS = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class RayHead:
    address: str          # dashboard / Jobs API URL
    gcs_address: str
    temp_dir: Path        # Ray's session files and logs live under it


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@contextlib.contextmanager
def ray_head(env: Mapping[str, str], *, ready: Optional[callable] = None, num_cpus: int = 2) -> Iterator[RayHead]:
    """Start a head whose processes (and so every job driver) see exactly `env`; yield once `ready(address)`
    succeeds (default: the Jobs API lists jobs)."""
    from ray.job_submission import JobSubmissionClient

    temp_dir = Path(tempfile.mkdtemp(prefix="rayt-", dir="/tmp"))   # short: Ray's socket paths must fit 107 bytes
    dashboard_port, gcs_port = free_port(), free_port()
    ports = {"port": gcs_port, "dashboard-port": dashboard_port, "ray-client-server-port": free_port(),
             "dashboard-agent-listen-port": free_port(), "dashboard-agent-grpc-port": free_port(),
             "runtime-env-agent-port": free_port(), "node-manager-port": free_port(),
             "object-manager-port": free_port(), "metrics-export-port": free_port()}
    args = [str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
            "--include-dashboard=true", f"--num-cpus={num_cpus}", "--object-store-memory=100000000",
            "--disable-usage-stats", f"--temp-dir={temp_dir}", *(f"--{k}={v}" for k, v in ports.items())]
    log = open(temp_dir / "ray-start.log", "wb")
    head = subprocess.Popen(args, env=dict(env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard_port}"
    ready = ready or (lambda a: JobSubmissionClient(a).list_jobs())
    try:
        deadline = time.monotonic() + 90
        while True:
            if head.poll() is not None:
                raise RuntimeError(f"ray start exited {head.returncode}: "
                                   f"{(temp_dir / 'ray-start.log').read_text(errors='replace')[-3000:]}")
            try:
                ready(address)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield RayHead(address, f"127.0.0.1:{gcs_port}", temp_dir)
    finally:
        if head.poll() is None:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)   # the process group this helper created
                head.wait(timeout=10)
        # The dashboard's helper processes outlive `ray start` by a moment; wait for our process group to empty.
        deadline = time.monotonic() + 15
        while _group_alive(head.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _group_alive(head.pid):
            os.killpg(head.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def base_env(**extra: str) -> dict[str, str]:
    """The runner's environment without client redirects, usage stats off, no graceful drain on SIGTERM
    (nothing to hand over, and it would hold teardown for 30 s), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_REDIRECTS}
    env.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"})
    env.update(extra)
    return env
