"""What a NeMo-RL actor on a GPU worker sees in its environment, on a real local Ray cluster.

Rule under test: NeMo-RL's driver starts Ray with `runtime_env={"env_vars": dict(os.environ)}`
(nemo_rl/distributed/virtual_cluster.py `init_ray`, v0.4.0, v0.5.0, v0.7.0), so every actor gets the driver's
variables, and runtime-env variables replace the node's. The driver runs on the CPU head, so an actor on a GPU
worker gets the HEAD's LD_LIBRARY_PATH while it keeps the worker's NCCL_NET=gIB (the head does not set it): unless
the head carries the workers' LD_LIBRARY_PATH, NCCL looks for the gIB plugin on a path without it.

Setup (tests/ray_local.py): a head node started with the rendered head container's static env and a second node
standing in for a GPU worker pod, started with the rendered worker container's static env and a custom resource
the probe actor asks for. The driver is submitted through the Jobs API with the job's rendered runtime env and
calls `ray.init` exactly as NeMo-RL's `init_ray` does.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from core import recipes
from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import load_settings
from tests.ray_local import base_env, local_cluster
from workloads.manifests import rdma
from workloads.manifests.raycluster import HEAD_CONTAINER, WORKER_CONTAINER, RayPodsConfig, raycluster_manifest

WORKER_RESOURCE = "nemo_rl_gke_gpu_worker_pod"


SETTINGS = load_settings(
    "dev", "example-project", values={}, secret_state={"hfToken": "secret", "wandbApiKey": "secret"}
)
LIBRARY_PATH = rdma.library_path(SETTINGS.workload.release)


def rendered_cluster() -> dict:
    return raycluster_manifest(
        RayPodsConfig.of(SETTINGS), name="nemo-dev-ray", secret_name=HF_SECRET, pvc_name=LUSTRE_PVC
    )


def static_env(container: dict) -> dict[str, str]:
    """The container's env entries with a literal value (the Secret-backed ones are not the point here)."""
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def container(pod_template: dict, name: str) -> dict:
    [c] = [c for c in pod_template["spec"]["containers"] if c["name"] == name]
    return c


CLUSTER = rendered_cluster()
HEAD_ENV = static_env(container(CLUSTER["spec"]["headGroupSpec"]["template"], HEAD_CONTAINER))
WORKER_ENV = static_env(container(CLUSTER["spec"]["workerGroupSpecs"][0]["template"], WORKER_CONTAINER))


@pytest.fixture(scope="module")
def cluster():
    """The head pod's and a GPU worker pod's environments on two local Ray nodes; yields a Jobs API client."""
    pods = (*HEAD_ENV, *WORKER_ENV)  # nothing of this test process's own values for these variables
    with local_cluster(
        base_env(HEAD_ENV, drop=pods),
        head_cpus=1,
        worker_cpus=(1,),
        worker_env=base_env(WORKER_ENV, drop=pods),
        worker_resources=json.dumps({WORKER_RESOURCE: 1}),
        timeout=240,
    ) as c:
        yield c.client()


def run_job(client: JobSubmissionClient, entrypoint: str, runtime_env: dict, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            job_id = client.submit_job(
                entrypoint=entrypoint,
                runtime_env=runtime_env,
                submission_id=f"actor-env-{os.getpid()}-{time.time_ns()}",
            )
            break
        except RuntimeError as e:  # a freshly started head answers list_jobs before its agent takes jobs
            if "No available agent" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(1)
    while not client.get_job_status(job_id).is_terminal():
        if time.monotonic() > deadline:
            client.stop_job(job_id)
            raise AssertionError(f"{job_id} did not finish:\n{client.get_job_logs(job_id)}")
        time.sleep(0.2)
    logs = client.get_job_logs(job_id)
    # A job that fails before its driver starts has no logs: its message says why (e.g. the supervisor's start).
    assert client.get_job_status(job_id) == JobStatus.SUCCEEDED, (client.get_job_info(job_id).message, logs)
    return logs


# What NeMo-RL's init_ray does (virtual_cluster.py @ v0.5.0, lines 96-111), then an actor placed on the GPU
# worker reports its environment.
DRIVER = textwrap.dedent(f"""
    import json, os, ray
    env_vars = dict(os.environ)
    env_vars.pop("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES", None)
    ray.init(address="auto", log_to_driver=True, include_dashboard=False, runtime_env={{"env_vars": env_vars}})

    @ray.remote(num_cpus=0, resources={{"{WORKER_RESOURCE}": 1}})
    class Probe:
        def env(self):
            return {{k: os.environ.get(k) for k in ("LD_LIBRARY_PATH", "NCCL_NET")}}

    print("ACTOR_ENV=" + json.dumps(ray.get(Probe.remote().env.remote())))
""")


def actor_env(client: JobSubmissionClient, tmp_path: Path, prefix: str = "") -> dict:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    runtime_env = recipes.runtime_env(recipes.RECIPES["gemma3-27b-gsm8k"], mount_path=str(tmp_path / "lustre"))
    logs = run_job(client, f"{prefix}{sys.executable} {driver}", runtime_env)
    [line] = [line for line in logs.splitlines() if line.startswith("ACTOR_ENV=")]
    return json.loads(line.split("=", 1)[1])


@pytest.mark.unit
def test_head_and_workers_share_one_library_path_definition():
    assert HEAD_ENV["LD_LIBRARY_PATH"] == WORKER_ENV["LD_LIBRARY_PATH"] == LIBRARY_PATH
    assert LIBRARY_PATH.split(":")[0] == f"{rdma.GIB_MOUNT}/lib64"
    # The CPU head only gets the variable: no gIB mount, no gIB script, no NCCL_NET.
    head = container(CLUSTER["spec"]["headGroupSpec"]["template"], HEAD_CONTAINER)
    assert "NCCL_NET" not in HEAD_ENV and rdma.SET_NCCL_ENV not in json.dumps(head)
    assert not any(m["mountPath"] == rdma.GIB_MOUNT for m in head["volumeMounts"])


@pytest.mark.ray
def test_actor_on_a_gpu_worker_gets_the_gib_library_path_with_nccl_net_gib(cluster, tmp_path):
    env = actor_env(cluster, tmp_path)
    assert env["NCCL_NET"] == "gIB"  # the worker node's own variable
    assert env["LD_LIBRARY_PATH"] == LIBRARY_PATH
    assert f"{rdma.GIB_MOUNT}/lib64" in env["LD_LIBRARY_PATH"].split(":")


@pytest.mark.ray
def test_the_drivers_library_path_replaces_the_workers(cluster, tmp_path):
    # Why the head must carry the workers' value: a head with any other LD_LIBRARY_PATH hands exactly that to the
    # actor on the GPU worker, which keeps NCCL_NET=gIB but loses the plugin's directory.
    env = actor_env(cluster, tmp_path, prefix="env LD_LIBRARY_PATH=/usr/local/head-only/lib ")
    assert env == {"LD_LIBRARY_PATH": "/usr/local/head-only/lib", "NCCL_NET": "gIB"}
