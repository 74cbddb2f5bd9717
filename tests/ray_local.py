"""A real Ray cluster on loopback for tests: a head (with the dashboard / Jobs API) and optional worker nodes.

Each node is a `ray start --block` process in its own process group, on free loopback ports, under a short
temporary directory of its own (a worker node's is a subdirectory of the head's), as each pod of a RayCluster has
its own /tmp/ray. Stopping signals exactly those processes (never `ray stop --force`, which would kill every Ray
process on the machine, other test runs included) and waits for their groups to empty.

Why a directory per node: a node that joins without `--temp-dir` uses the head's session directory (ray 2.60.0
python/ray/_private/node.py `_init_temp`, L762-771), and picks its raylet and plasma-store socket names there by
taking the first name no file has yet, without creating it (`_make_inc_temp`, L1060-1094, "The file is not
created"; `_prepare_socket_file` L1241-1272). Two worker nodes starting together could both pick
`sockets/plasma_store.1`: the second raylet's bind then failed ("bind: Address already in use" in
plasma::PlasmaStore, SIGABRT) and its `ray start` waited out Ray's 30 s for the node to register ("The current node
timed out during startup", node.py L426-444). On a loaded machine the window between choosing and binding grows,
so the kill-a-worker test's three-node cluster failed that way mostly in whole-suite runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from ray.job_submission import JobSubmissionClient

RAY = Path(sys.executable).parent / "ray"
# Variables that would point a test's Ray at another cluster.
_FOREIGN = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")


def free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports. The sockets stay bound until all are chosen: a port released by one
    bind(0) can come back from the next, and Ray refuses two components on one port ("Ray component
    dashboard_agent_grpc is trying to use a port number ... that is used by other components")."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def free_port() -> int:
    return free_ports(1)[0]


_NODE_PORT_FLAGS = (
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "node-manager-port",
    "object-manager-port",
    "metrics-export-port",
)


def base_env(extra: Optional[dict] = None, drop: tuple = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN + tuple(drop)}
    env.update(
        {
            "RAY_USAGE_STATS_ENABLED": "0",
            # No graceful drain on SIGTERM: nothing to hand over, and it would hold teardown for 30 s.
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
        }
    )
    env.update(extra or {})
    return env


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the process group this module created
            proc.wait(timeout=10)
    # The dashboard's helper processes outlive `ray start` by a moment; wait for the group to empty.
    deadline = time.monotonic() + 15
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class LocalCluster:
    dashboard: str  # http://127.0.0.1:<port>, the Jobs API
    gcs: str  # 127.0.0.1:<port>, where nodes and drivers join
    temp_dir: str
    procs: list = field(default_factory=list)
    # Ray token authentication (RAY_AUTH_MODE=token in `env`): the token this process sends as a bearer.
    auth_token: Optional[str] = None
    logs: list = field(default_factory=list)

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.auth_token}"} if self.auth_token else {}

    def client(self) -> JobSubmissionClient:
        return JobSubmissionClient(self.dashboard, headers=self.auth_headers or None)

    def add_worker(self, cpus: int, env: dict[str, str], name: str, timeout: float = 90) -> subprocess.Popen:
        """Another worker node joining the running cluster (a replacement pod on a new node), in a directory of its
        own, on ports no node of the cluster uses; returns once it is alive. Stopped with the others."""
        ports = dict(zip(_NODE_PORT_FLAGS, free_ports(len(_NODE_PORT_FLAGS)), strict=True))
        args = [
            str(RAY),
            "start",
            "--block",
            f"--address={self.gcs}",
            f"--temp-dir={os.path.join(self.temp_dir, name)}",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={cpus}",
            "--object-store-memory=100000000",
            "--disable-usage-stats",
            *(f"--{k}={v}" for k, v in ports.items()),
        ]
        log = open(os.path.join(self.temp_dir, f"{name}.log"), "wb")
        self.logs.append(log)
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        running = [p for p in self.procs if p.poll() is None]
        _wait_for_nodes(
            self,
            len(running),
            time.monotonic() + timeout,
            lambda n: Path(self.temp_dir, f"{name}.log").read_text(),
            watch=[proc],
        )
        return proc


@contextlib.contextmanager
def local_cluster(
    env: dict[str, str],
    *,
    head_cpus: int = 2,
    worker_cpus: tuple[int, ...] = (),
    head_resources: str = "",
    timeout: float = 90,
    auth_token: Optional[str] = None,
    worker_env: Optional[dict[str, str]] = None,
    worker_resources: str = "",
    worker_envs: Optional[list[dict[str, str]]] = None,
) -> Iterator[LocalCluster]:
    """A head with `head_cpus` and one more node per entry of `worker_cpus`, all with `env` as their
    environment (the Ray pods' environment in the real cluster), or `worker_env` for the worker nodes when the
    head pod and the worker pods differ, or `worker_envs[i]` for worker i when each differs (a pod's own node name);
    yields once every node has joined.
    `auth_token`: the cluster runs with Ray token authentication and this process authenticates with it."""
    temp_dir = tempfile.mkdtemp(prefix="rayt-")  # short: Ray's socket paths must fit 107 bytes
    # Every node shares the loopback address: all the cluster's ports are chosen at once, so none repeats.
    per_node = len(_NODE_PORT_FLAGS)
    ports = free_ports(3 + per_node * (1 + len(worker_cpus)))
    gcs_port, dashboard_port, client_port = ports[:3]
    node_ports = [
        dict(zip(_NODE_PORT_FLAGS, ports[3 + i * per_node : 3 + (i + 1) * per_node], strict=True))
        for i in range(1 + len(worker_cpus))
    ]
    head = [
        str(RAY),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        "--dashboard-host=127.0.0.1",
        "--include-dashboard=true",
        f"--num-cpus={head_cpus}",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        f"--port={gcs_port}",
        f"--dashboard-port={dashboard_port}",
        f"--ray-client-server-port={client_port}",
        *(f"--{k}={v}" for k, v in node_ports[0].items()),
    ]
    if head_resources:
        head.append(f"--resources={head_resources}")
    cluster = LocalCluster(
        f"http://127.0.0.1:{dashboard_port}", f"127.0.0.1:{gcs_port}", temp_dir, auth_token=auth_token
    )
    logs = cluster.logs

    def launch(args: list[str], name: str, node_env: dict[str, str]) -> subprocess.Popen:
        log = open(os.path.join(temp_dir, f"{name}.log"), "wb")
        logs.append(log)
        proc = subprocess.Popen(args, env=node_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        cluster.procs.append(proc)
        return proc

    def tail(name: str) -> str:
        return Path(temp_dir, f"{name}.log").read_text(errors="replace")[-3000:]

    try:
        launch(head, "head", env)
        deadline = time.monotonic() + timeout
        while True:
            if cluster.procs[0].poll() is not None:
                raise RuntimeError(f"ray start (head) exited {cluster.procs[0].returncode}: {tail('head')}")
            try:
                cluster.client().list_jobs()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        for i, cpus in enumerate(worker_cpus):
            launch(
                [
                    str(RAY),
                    "start",
                    "--block",
                    f"--address={cluster.gcs}",
                    f"--temp-dir={os.path.join(temp_dir, f'w{i}')}",  # its own sockets (module docstring)
                    "--node-ip-address=127.0.0.1",
                    f"--num-cpus={cpus}",
                    "--object-store-memory=100000000",
                    "--disable-usage-stats",
                    *([f"--resources={worker_resources}"] if worker_resources else []),
                    *(f"--{k}={v}" for k, v in node_ports[1 + i].items()),
                ],
                f"worker{i}",
                worker_envs[i] if worker_envs is not None else env if worker_env is None else worker_env,
            )
        _wait_for_nodes(cluster, 1 + len(worker_cpus), deadline, tail)
        yield cluster
    finally:
        for proc in reversed(cluster.procs):  # worker nodes first, the head last
            _stop(proc)
        for log in logs:
            log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _wait_for_nodes(cluster: LocalCluster, count: int, deadline: float, tail, watch: Optional[list] = None) -> None:
    """Until the dashboard's state API lists `count` alive nodes (this process stays Ray-free); a node process of
    `watch` (default: every worker) that exits fails the wait."""
    url = f"{cluster.dashboard}/api/v0/nodes?limit=100"
    last = ""
    while True:
        for i, proc in enumerate(cluster.procs[1:] if watch is None else watch):
            if proc.poll() is not None:
                raise RuntimeError(f"ray start (worker{i}) exited {proc.returncode}: {tail(f'worker{i}')}")
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=cluster.auth_headers), timeout=10) as r:
                nodes = json.load(r)["data"]["result"]["result"]
            if sum(1 for n in nodes if n.get("state") == "ALIVE") == count:
                return
            last = json.dumps(nodes)[-500:]
        except (OSError, ValueError, KeyError) as e:
            last = repr(e)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} Ray nodes did not join: {last}")
        time.sleep(0.5)
