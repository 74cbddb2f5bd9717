"""The RayJob's submitter on a real local Ray head whose dashboard connections drop mid-job (kuberay#4921,
ray#60665): the program's submitter (core.shell.job_submitter_command, what the RayJob renders) keeps going until the
Ray job ends and submits it once; KubeRay's own K8sJobMode submitter (its 1.7.0 words, core.shell.submitter_command)
ends while the job still runs, which KubeRay 1.5.0-1.7.0 turn into a Failed RayJob 30 s later (tests/test_submitter.py).

The submitter reaches the dashboard through a loopback TCP proxy that the test cuts once, as a lost connection to
the head Service would; the bash is real, and so are the Ray CLI (this venv's) and the dashboard.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from ray.job_submission import JobStatus

from core import shell
from tests.ray_local import LocalCluster, base_env, free_port, local_cluster

pytestmark = pytest.mark.ray

JOB_SECONDS = 25
# Prints `begun` and `ended`, words its own text does not contain (the CLI echoes the entrypoint it submits).
ENTRYPOINT = f'sh -c \'printf "be%s\\n" gun; sleep {JOB_SECONDS}; printf "en%s\\n" ded\''
BEGUN, ENDED = "\nbegun\n", "\nended\n"


class Proxy:
    """A TCP proxy on loopback to `upstream`; `drop()` closes every open connection, both ways."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.port = free_port()
        self.server = socket.create_server(("127.0.0.1", self.port))
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, up]
            for a, b in ((client, up), (up, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def drop(self) -> int:
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        return len(conns)

    def close(self) -> None:
        self.server.close()
        self.drop()


@pytest.fixture
def head_behind_a_proxy() -> Iterator[tuple[LocalCluster, Proxy]]:
    """A real local Ray head, and a proxy to its dashboard that the test can cut."""
    with local_cluster(base_env(), head_cpus=2) as cluster:
        host, port = cluster.dashboard.removeprefix("http://").split(":")
        proxy = Proxy((host, int(port)))
        try:
            yield cluster, proxy
        finally:
            proxy.close()


def _submitter_env(proxy: Proxy, submission_id: str, tmp_path: Path) -> dict[str, str]:
    """What KubeRay gives the submitter container: the dashboard address and the submission id (no scheme, as
    Status.DashboardURL); the image's `ray` and `python` are this venv's."""
    bin_dir = str(Path(sys.executable).parent)
    return base_env(
        {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "RAY_DASHBOARD_ADDRESS": f"127.0.0.1:{proxy.port}",
            "RAY_JOB_SUBMISSION_ID": submission_id,
        }
    )


def _run_dropping_once(
    command: list[str], env: dict, cluster: LocalCluster, proxy: Proxy, submission_id: str, tmp_path: Path
) -> tuple:
    """Start the submitter, cut its connections once the job runs and its logs stream, and return (exit code,
    output, seconds between the drop and the submitter's end, the job's status when the submitter ended)."""
    out = tmp_path / f"{submission_id}.log"
    with open(out, "wb") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            client = cluster.client()
            deadline = time.monotonic() + 120
            while BEGUN not in out.read_text(errors="replace"):  # the job runs and its log streams to us
                assert proc.poll() is None, out.read_text(errors="replace")
                assert time.monotonic() < deadline, out.read_text(errors="replace")
                time.sleep(0.5)
            dropped_at = time.monotonic()
            assert proxy.drop() > 0
            code = proc.wait(timeout=JOB_SECONDS + 240)
            ended_after = time.monotonic() - dropped_at
            status = client.get_job_status(submission_id)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    return code, out.read_text(errors="replace"), ended_after, status


def _wait_terminal(cluster: LocalCluster, submission_id: str, timeout: float = 120) -> JobStatus:
    client = cluster.client()
    deadline = time.monotonic() + timeout
    while not (status := client.get_job_status(submission_id)).is_terminal():
        assert time.monotonic() < deadline
        time.sleep(1)
    return status


def test_the_programs_submitter_outlives_a_dropped_log_stream_and_ends_with_the_job(head_behind_a_proxy, tmp_path):
    cluster, proxy = head_behind_a_proxy
    env = _submitter_env(proxy, "rayjob-ours-1", tmp_path)
    command = shell.job_submitter_command(ENTRYPOINT, unreachable_seconds=120)
    code, output, ended_after, status = _run_dropping_once(command, env, cluster, proxy, "rayjob-ours-1", tmp_path)
    assert code == 0, output
    # It ended only once the job had: SUCCEEDED when it exited, after the rest of the job's run.
    assert status == JobStatus.SUCCEEDED, output
    assert ENDED in output and shell.SUBMITTER_NOTE in output
    assert ended_after > 5, output
    # One submission: the reattach follows the same job, it never submits again.
    jobs = [j for j in cluster.client().list_jobs() if j.submission_id == "rayjob-ours-1"]
    assert len(jobs) == 1


def test_kuberays_own_submitter_ends_while_the_job_still_runs(head_behind_a_proxy, tmp_path):
    """What the program replaces: KubeRay 1.7.0's submitter ends on the dropped stream, long before the job does."""
    cluster, proxy = head_behind_a_proxy
    env = _submitter_env(proxy, "rayjob-kuberay-1", tmp_path)
    command = shell.submitter_command(
        ENTRYPOINT, kuberay="1.7.0", address=env["RAY_DASHBOARD_ADDRESS"], submission_id="rayjob-kuberay-1"
    )
    _code, output, ended_after, status = _run_dropping_once(command, env, cluster, proxy, "rayjob-kuberay-1", tmp_path)
    assert not status.is_terminal(), output  # the submitter is gone; the Ray job is still RUNNING
    assert ended_after < JOB_SECONDS / 2, output
    assert ENDED not in output
    assert _wait_terminal(cluster, "rayjob-kuberay-1") == JobStatus.SUCCEEDED
