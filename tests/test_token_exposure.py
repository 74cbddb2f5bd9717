"""Tokens stay out of everything Ray exposes, proven on a real local Ray head.

The head runs with the environment the program renders for the Ray head container (token *paths* only), the
token files hold canary values in a temporary directory standing in for the Secret volume, and a job is
submitted the way KubeRay's submitter does (`ray job submit` against the Jobs API). The driver behaves like
NeMo-RL: it starts an actor and a task with the driver's whole `os.environ` as `runtime_env.env_vars`, and they
read the tokens through the libraries' file mechanisms (huggingface_hub's HF_TOKEN_PATH, netrc via NETRC).
Then everything Ray serves is read back — job info, the state API's actors / tasks / workers / jobs / runtime
envs (with `serialized_runtime_env`), the dashboard's HTTP endpoints on loopback, the driver's logs and every
file of the Ray session — and no canary may appear. A control job proves the probe would see a token that
travels in the environment.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from ray.job_submission import JobStatus, JobSubmissionClient

from core import catalog
from tests.ray_local import RAY, base_env, local_cluster
from workloads.manifests import pod_security as ps

pytestmark = pytest.mark.ray

HF_CANARY = "hf_canaryQ7v2Xk93LmP0"
WANDB_CANARY = "wandbcanary5c1e0b7d3a9f2"
RAY_AUTH_CANARY = "rayauthcanary8f3d1c2b"
LEAK_CANARY = "leakcanary_in_env_0042"  # the control: a value that does travel in the environment
CANARIES = (HF_CANARY, WANDB_CANARY, RAY_AUTH_CANARY)

DRIVER = textwrap.dedent('''
    """Stand-in for NeMo-RL's driver: actors get the driver's whole environment (nemo_rl/distributed)."""
    import hashlib, json, netrc, os, sys, time
    import ray

    def digest(s):
        return hashlib.sha256(s.encode()).hexdigest()

    def tokens_seen():
        import huggingface_hub
        hf = huggingface_hub.get_token()            # honours HF_TOKEN_PATH (and HF_TOKEN, which must be unset)
        wb = netrc.netrc(os.environ["NETRC"]).authenticators("api.wandb.ai") if os.environ.get("NETRC") else None
        return {"hf": digest(hf) if hf else None, "wandb": digest(wb[2]) if wb else None,
                # A variable defined empty (RAY_AUTH_TOKEN, the KubeRay blocker) carries nothing.
                "token_vars": sorted(v for v in %(token_vars)r if os.environ.get(v))}

    ray.init()

    @ray.remote(num_cpus=0)
    class Policy:
        def seen(self):
            return tokens_seen()

    @ray.remote(num_cpus=0)
    def generation_task():
        return tokens_seen()

    env = dict(os.environ)
    actor = Policy.options(name="canary-policy", runtime_env={"env_vars": env}).remote()
    report = {"driver": tokens_seen(), "actor": ray.get(actor.seen.remote()),
              "task": ray.get(generation_task.options(runtime_env={"env_vars": env}).remote())}
    print("REPORT " + json.dumps(report), flush=True)
    release = sys.argv[1]
    deadline = time.time() + 120
    while not os.path.exists(release) and time.time() < deadline:   # keep the actor alive while probed
        time.sleep(0.2)
    print("driver done", flush=True)
''') % {"token_vars": ps.TOKEN_VALUE_VARIABLES}


def _sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def rendered_head_env(synth, stack: str, overrides: dict, root: Path) -> dict[str, str]:
    """The env the program renders for the Ray head container, token paths moved under `root`."""
    res = synth(stack, overrides) if overrides else synth(stack)
    assert res.error is None, res.error
    (cluster,) = [r for r in res.kubernetes_objects() if r.inputs.get("kind") == "RayCluster"]
    (head,) = cluster.inputs["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    env = {}
    for e in head.get("env", []):
        assert "valueFrom" not in e, f"{e['name']} comes from a Secret into the environment"
        value = e["value"]
        for prefix, local in ((ps.TOKENS_DIR, root / "tokens"), (ps.RAY_AUTH_DIR, root / "ray-auth")):
            if value.startswith(prefix):
                value = str(local) + value[len(prefix) :]
        env[e["name"]] = value
    env["HF_HOME"] = str(root / "hf-home")
    return env


def write_token_files(root: Path) -> None:
    (root / "tokens").mkdir(parents=True)
    (root / "ray-auth").mkdir(parents=True)
    (root / "tokens" / ps.HF_TOKEN_KEY).write_text(HF_CANARY)
    (root / "tokens" / ps.WANDB_NETRC_KEY).write_text(ps.wandb_netrc(WANDB_CANARY))
    (root / "ray-auth" / ps.RAY_AUTH_TOKEN_KEY).write_text(RAY_AUTH_CANARY)
    for f in (root / "tokens").iterdir():
        f.chmod(ps.TOKEN_FILE_MODE)  # as the Secret volume mounts them (owner and group may read)
    (root / "ray-auth" / ps.RAY_AUTH_TOKEN_KEY).chmod(ps.TOKEN_FILE_MODE)


def submit_like_kuberay(
    address: str, entrypoint: str, runtime_env: dict, submission_id: str, env: dict[str, str]
) -> None:
    """What KubeRay's submitter pod runs (`ray job submit --address ... --no-wait ... -- <entrypoint>`)."""
    cmd = [
        str(RAY),
        "job",
        "submit",
        f"--address={address}",
        "--no-wait",
        f"--submission-id={submission_id}",
        f"--runtime-env-json={json.dumps(runtime_env)}",
        "--",
        *entrypoint.split(),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def http_get(url: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


DASHBOARD_PATHS = (
    "/api/jobs/",
    "/api/v0/actors?detail=1&limit=1000",
    "/api/v0/tasks?detail=1&limit=1000",
    "/api/v0/workers?detail=1&limit=1000",
    "/api/v0/jobs?detail=1",
    "/api/v0/runtime_envs?detail=1",
    "/nodes?view=summary",
    "/logical/actors",
    "/api/cluster_status",
)


def everything_ray_exposes(address: str, job_id: str, temp_dir: Path, token: str | None = None) -> dict[str, str]:
    """Surface name -> text of what the head serves about the job, and every file of its session."""
    from ray.util.state.api import StateApiClient
    from ray.util.state.common import ListApiOptions, StateResource

    auth = {"Authorization": f"Bearer {token}"} if token else {}
    client = JobSubmissionClient(address, headers=auth or None)
    dump = lambda x: json.dumps(x, default=lambda o: getattr(o, "__dict__", str(o)), sort_keys=True)  # noqa: E731
    out = {
        "job_info": dump(client.get_job_info(job_id).model_dump()),
        "job_list": dump([j.model_dump() for j in client.list_jobs()]),
        "driver_logs": client.get_job_logs(job_id),
    }
    # What `ray list actors --detail` and friends call (ray.util.state.list_*), with the caller's credentials.
    state = StateApiClient(address=address, headers={"Content-Type": "application/json", **auth})
    for resource in (
        StateResource.ACTORS,
        StateResource.TASKS,
        StateResource.WORKERS,
        StateResource.JOBS,
        StateResource.RUNTIME_ENVS,
        StateResource.NODES,
    ):
        listed = state.list(resource, ListApiOptions(limit=10000, detail=True), raise_on_missing_output=False)
        out[f"state.{resource.value}"] = dump(listed)
        if resource == StateResource.NODES:
            node_ids = [n.node_id for n in listed]
    node_logs = [f"/api/v0/logs?node_id={n}" for n in node_ids]  # the log files each node offers
    for path in (*DASHBOARD_PATHS, *node_logs, f"/api/jobs/{job_id}", f"/api/jobs/{job_id}/logs"):
        status, body = http_get(address + path, token)
        assert status == 200, f"GET {path}: {status} {body[:300]}"  # the probe really read the surface
        out[f"GET {path}"] = body
    for f in sorted(temp_dir.rglob("*")):
        if f.is_file() and not f.is_symlink():
            out[f"file {f.relative_to(temp_dir)}"] = f.read_bytes().decode("utf-8", "replace")
    return out


def run_canary_job(
    head, env: dict[str, str], root: Path, runtime_env: dict, submit_env: dict[str, str], token: str | None = None
) -> tuple[dict, dict[str, str]]:
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    job_id = f"canary-{time.time_ns()}"
    release = root / f"release-{job_id}"
    submit_like_kuberay(head.dashboard, f"{sys.executable} {driver} {release}", runtime_env, job_id, submit_env)
    client = JobSubmissionClient(head.dashboard, headers={"Authorization": f"Bearer {token}"} if token else None)
    deadline = time.monotonic() + 120
    while "REPORT " not in client.get_job_logs(job_id):
        assert not client.get_job_status(job_id).is_terminal(), client.get_job_logs(job_id)
        assert time.monotonic() < deadline, client.get_job_logs(job_id)
        time.sleep(0.3)
    exposed = everything_ray_exposes(head.dashboard, job_id, Path(head.temp_dir), token)  # actor still alive
    release.touch()
    while not client.get_job_status(job_id).is_terminal():
        assert time.monotonic() < deadline + 60, client.get_job_logs(job_id)
        time.sleep(0.3)
    assert client.get_job_status(job_id) == JobStatus.SUCCEEDED, client.get_job_logs(job_id)
    logs = client.get_job_logs(job_id)
    report = json.loads(logs.split("REPORT ", 1)[1].splitlines()[0])
    exposed["driver_logs_final"] = logs
    return report, exposed


def assert_nowhere(canaries, exposed: dict[str, str]) -> None:
    found = [(c, surface) for c in canaries for surface, text in exposed.items() if c in text]
    assert not found, f"token canaries exposed: {found}"


def test_tokens_in_mounted_files_appear_nowhere_ray_exposes(synth, tmp_path, monkeypatch):
    root = tmp_path
    write_token_files(root)
    head_env = rendered_head_env(synth, "dev", {}, root)
    assert {"HF_TOKEN_PATH", "NETRC"} <= set(head_env) and not set(ps.TOKEN_VALUE_VARIABLES) & set(head_env)
    rayjob = [r for r in synth("dev").kubernetes_objects() if r.inputs.get("kind") == "RayJob"][0]
    runtime_env = yaml.safe_load(rayjob.inputs["spec"]["runtimeEnvYAML"])
    # The runtime env as rendered, with the Lustre paths of the job moved under the test's directory.
    runtime_env = json.loads(json.dumps(runtime_env).replace("/lustre", str(root / "lustre")))
    for var in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", *ps.TOKEN_VALUE_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    env = base_env(head_env, drop=ps.TOKEN_VALUE_VARIABLES)
    submitter_env = base_env(drop=ps.TOKEN_VALUE_VARIABLES)
    with local_cluster(env) as head:
        report, exposed = run_canary_job(head, env, root, runtime_env, submitter_env)
        # The tokens were usable where NeMo-RL needs them: driver, actor and task read them from the files...
        for where in ("driver", "actor", "task"):
            assert report[where]["hf"] == _sha(HF_CANARY), where
            assert report[where]["wandb"] == _sha(WANDB_CANARY), where
            assert report[where]["token_vars"] == [], where
        # ...we looked where the leak was (the actor's serialized runtime env carries the driver's environment)...
        assert "serialized_runtime_env" in exposed["state.actors"] and "HF_TOKEN_PATH" in exposed["state.actors"]
        # ...and no token value is anywhere Ray serves or writes.
        assert_nowhere(CANARIES, exposed)

        # Control: a value that travels in the environment is served by the same probe.
        control_env = dict(runtime_env, env_vars={**runtime_env.get("env_vars", {}), "LEAK_PROBE": LEAK_CANARY})
        _, leaked = run_canary_job(head, env, root, control_env, submitter_env)
        assert LEAK_CANARY in leaked["state.actors"] and LEAK_CANARY in leaked["job_info"]


def test_ray_token_auth_refuses_anonymous_calls_and_its_token_stays_in_its_file(synth, tmp_path, monkeypatch):
    """Token auth as rendered with the stack's own KubeRay: RAY_AUTH_TOKEN defined empty (so KubeRay >= 1.6.0
    injects no token into the environment) and RAY_AUTH_TOKEN_PATH naming the file. Ray's loader skips the empty
    variable and reads the file (authentication_token_loader.cc), on the head as in the submitter's `ray job
    submit`."""
    root = tmp_path
    write_token_files(root)
    head_env = rendered_head_env(
        synth, "dev", {"nemoRlRelease": "v0.7.0", "jobEnabled": False, "kubeRayOperator": "helm"}, root
    )
    assert head_env.get("RAY_AUTH_MODE") == "token" and "RAY_AUTH_TOKEN_PATH" in head_env
    assert head_env["RAY_AUTH_TOKEN"] == ""
    for var in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", *ps.TOKEN_VALUE_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    env = base_env(head_env, drop=ps.TOKEN_VALUE_VARIABLES)
    assert env["RAY_AUTH_TOKEN"] == ""
    # The submitter's container gets the same three variables (token_files) and nothing else of the head.
    auth_vars = {k: head_env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    auth_client_env = base_env(auth_vars, drop=ps.TOKEN_VALUE_VARIABLES)
    token = (root / "ray-auth" / ps.RAY_AUTH_TOKEN_KEY).read_text()

    import ray

    assert catalog.ray_supports_token_auth(ray.__version__)  # requirements.txt pins a Ray with token auth
    with local_cluster(env, auth_token=token) as head:
        assert http_get(head.dashboard + "/api/jobs/")[0] == 401
        assert http_get(head.dashboard + "/api/v0/actors?detail=1")[0] == 401
        report, exposed = run_canary_job(head, env, root, {}, auth_client_env, token=token)
        assert report["actor"]["hf"] == _sha(HF_CANARY) and report["actor"]["token_vars"] == []
        assert_nowhere(CANARIES, exposed)
