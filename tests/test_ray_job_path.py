"""The job path end to end on a real local Ray head: what the program renders is submitted through the Jobs
API (after the data staging program prepared GSM8K, as its CPU Job does first), runs the stand-in trainer from a
directory standing in for /opt/nemo-rl (the entrypoint's work directory is a parameter; which builds its config from the
release's real configs with NeMo-RL's own loader and real hydra-core), checkpoints to a directory standing in for
Lustre, resumes after a simulated preemption, and never exposes a secret; the companion CLI drives the same head."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from cli import ray_jobs as jobs
from core import catalog, recipes
from core.catalog import NEMO_RL_RELEASES, NemoRlRelease
from core.settings.job import JobSettings
from tests.ray_local import base_env, free_port, local_cluster
from tests.standin import fake_datasets, install_workdir, stage_gsm8k
from tests.standin.grpo_trainer import STEP_SECONDS_ENV
from tests.standin.grpo_trainer import main as standin_main
from workloads import job_scripts as job_scripts_module
from workloads.manifests.pod_parts import SCRIPTS_FILE_MODE

QWEN, GEMMA = "qwen2.5-72b-deepscaler", "gemma3-27b-gsm8k"
# The release each seed ran; /opt/nemo-rl holds one release at a time, as an image does.
HOME_RELEASE = {QWEN: "v0.4.0", GEMMA: "v0.5.0"}
# The pods get these from the Kubernetes Secret; here the head's environment plays that role.
CANARIES = {"HF_TOKEN": "hf_canary_5d1e0b", "WANDB_API_KEY": "wandb_canary_c4a9f7"}
STEP_SECONDS = "0.25"


@dataclasses.dataclass(frozen=True)
class Image:
    """What a NeMo-RL image holds for the entrypoint, laid out under the test's own directories."""

    release: NemoRlRelease
    paths: recipes.ImagePaths  # the image's work directory and the head's scripts mount, here temporary


@pytest.fixture(scope="module")
def job_scripts_dir(tmp_path_factory) -> Path:
    """`job_scripts_module.job_scripts()` with the ConfigMap volume's file mode, as the Ray head mounts them: the
    entrypoint runs the real preparation program from there."""
    scripts = tmp_path_factory.mktemp("etc-nemo-rl-gke")
    for name, text in job_scripts_module.job_scripts().items():
        (scripts / name).write_text(text, encoding="utf-8")
        (scripts / name).chmod(SCRIPTS_FILE_MODE)
    return scripts


@pytest.fixture(scope="module")
def nemo_rl_image(request, tmp_path_factory, job_scripts_dir) -> Image:
    """A directory standing in for /opt/nemo-rl of the NeMo-RL release `request.param` (indirect
    parametrization): its real configs and config loader, the stand-in trainer at its entry script."""
    release = NEMO_RL_RELEASES[request.param]
    workdir = tmp_path_factory.mktemp(f"opt-nemo-rl-{release.tag}")
    install_workdir(workdir, release)
    return Image(release, recipes.ImagePaths(workdir=str(workdir), scripts_dir=str(job_scripts_dir)))


@pytest.fixture(scope="module")
def datasets_calls(tmp_path_factory) -> Path:
    """The file where the offline `datasets` records each load_dataset call with the HF_HOME it saw."""
    return tmp_path_factory.mktemp("datasets") / "calls.jsonl"


@pytest.fixture(scope="module")
def fake_site(tmp_path_factory) -> Path:
    """The offline `datasets` stand-in (tests/standin/fake_datasets.py)."""
    return fake_datasets.install(tmp_path_factory.mktemp("image") / "site")


@pytest.fixture(scope="module")
def image_tools(tmp_path_factory, fake_site):
    """What the NeMo-RL image provides to the entrypoint: `uv` and a Python env with `datasets`.

    A `uv` shim, not the real uv: the image's `uv run python` runs NeMo-RL's project venv, which has
    `datasets`; the shim runs the test venv's Python with the offline `datasets` stand-in on its path. It goes
    first on the head's PATH (the image's environment), not into the runtime env, so the tests submit exactly
    the runtime env the program renders.
    """
    root = tmp_path_factory.mktemp("image")
    fake = fake_site
    bin_dir = root / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(
        "#!/bin/sh\n"
        'if [ "$#" -lt 2 ] || [ "$1" != run ] || [ "$2" != python ]; then\n'
        "  echo \"uv stand-in: only 'uv run python ...' is supported, got: uv $*\" >&2; exit 2\n"
        "fi\n"
        "shift 2\n"
        f'PYTHONPATH={fake}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} "$@"\n'
    )
    uv.chmod(0o755)
    return bin_dir


@pytest.fixture(scope="module")
def ray_head(job_scripts_dir, image_tools, datasets_calls):
    """A real Ray head with the dashboard (Jobs API) on loopback (tests/ray_local.py); yields its address."""
    # No HF_HOME on the head: the job's must come from the runtime env the program renders.
    env = base_env(
        {
            **CANARIES,
            "PATH": f"{image_tools}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            STEP_SECONDS_ENV: STEP_SECONDS,
            fake_datasets.CALLS_ENV: str(datasets_calls),
        },
        drop=("HF_HOME",),
    )
    with local_cluster(env, head_cpus=2) as cluster:
        yield cluster.dashboard


@pytest.fixture
def client(ray_head, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    for k, v in CANARIES.items():  # rendering happens with the secrets present in the environment
        monkeypatch.setenv(k, v)
    return JobSubmissionClient(ray_head)


def render(name: str, overrides: dict, lustre: Path, image: Image, stack: str = "ci"):
    """What the program submits for a stack on the image's release running recipe `name`: entrypoint, runtime
    env, metadata."""
    release = image.release
    settings = JobSettings.model_validate({"jobRecipe": name, "jobOverrides": overrides})
    recipe = recipes.resolve_recipe(settings, release)
    assert (
        recipes.check_job(
            settings, release=release, worker_replicas=recipe.num_nodes, gpus_per_node=8, stack_name=stack
        )
        == []
    )
    run = recipes.default_run_name(settings, stack, release)
    return (
        recipes.entrypoint(
            recipe, release, recipes.EntrypointArgs(mount_path=str(lustre), run_name=run, paths=image.paths)
        ),
        recipes.runtime_env(recipe, mount_path=str(lustre)),
        recipes.job_metadata(recipe, run_name=run, stack_name=stack),
        Path(recipes.checkpoint_dir(str(lustre), run)),
    )


def wait_for(client, job_id: str, timeout: float = 60) -> JobStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = client.get_job_status(job_id)
        if status.is_terminal():
            return status
        if time.monotonic() > deadline:
            client.stop_job(job_id)
            raise AssertionError(f"{job_id} still {status} after {timeout} s:\n{client.get_job_logs(job_id)}")
        time.sleep(0.2)


def steps_saved(ckpt_dir: Path) -> list[int]:
    return sorted(int(p.name[5:]) for p in ckpt_dir.glob("step_*") if p.name[5:].isdigit())


def dump(model) -> str:
    return json.dumps(model.model_dump() if hasattr(model, "model_dump") else model.dict(), default=str)


def assert_no_secret(client, job_id: str, *submitted) -> None:
    infos = [dump(client.get_job_info(job_id))] + [dump(j) for j in client.list_jobs() if j.submission_id == job_id]
    text = "\n".join(infos + [json.dumps(s) for s in submitted] + [client.get_job_logs(job_id)])
    for value in CANARIES.values():
        assert value not in text


# --- the stand-in itself ------------------------------------------------------------------------------
@pytest.mark.unit
def test_stand_in_fails_loudly_on_a_command_line_nemo_rl_would_not_run(tmp_path, monkeypatch, capsys):
    install_workdir(tmp_path, NEMO_RL_RELEASES["v0.5.0"])
    monkeypatch.chdir(tmp_path)
    config = ["--config", "examples/configs/grpo_math_1B.yaml"]

    def fails(*overrides: str) -> str:
        assert standin_main([*config, *overrides], nemo_rl_root=tmp_path) == 2
        return capsys.readouterr().err

    assert "required setting checkpointing.checkpoint_dir is missing" in fails("checkpointing.checkpoint_dir=null")
    assert "'results/grpo' must be absolute" in fails()  # the base config's own checkpoint_dir
    # NeMo-RL's own loader refuses these (struct mode: `+` only for a key the config lacks, and only then).
    assert "Could not override 'checkpointing.no_such_key'" in fails("checkpointing.no_such_key=1")
    assert "Could not append to config. An item is already at 'grpo.max_num_steps'" in fails("+grpo.max_num_steps=3")
    assert "OverridesError" in fails("grpo.max_num_steps=[1")
    assert standin_main(["--config", "missing.yaml"], nemo_rl_root=tmp_path) == 2
    assert "FileNotFoundError" in capsys.readouterr().err


# --- through a real Ray head -----------------------------------------------------------------------------
# Each recipe on its home release, and Gemma on v0.7.0 (examples/run_grpo.py, data.train / data.validation).
@pytest.mark.ray
@pytest.mark.parametrize("name,nemo_rl_image", [*HOME_RELEASE.items(), (GEMMA, "v0.7.0")], indirect=["nemo_rl_image"])
def test_builtin_recipe_runs_to_its_last_step_through_the_jobs_api(
    name, nemo_rl_image, client, tmp_path, datasets_calls, fake_site
):
    entrypoint, runtime_env, metadata, ckpt = render(
        name, {"max_num_steps": 4, "save_period": 2, "keep_top_k": 2}, tmp_path / "lustre", nemo_rl_image
    )
    if name == GEMMA:
        # The data staging Job's GSM8K step, before the RayJob exists (the RayJob depends on that Job).
        staged = stage_gsm8k(tmp_path / "lustre", fake_site, datasets_calls)
        assert "gsm8k: wrote {'train': 3, 'test': 1}" in staged.stdout
    job_id = client.submit_job(
        entrypoint=entrypoint,
        runtime_env=runtime_env,
        metadata=metadata,
        submission_id=f"{name}-{os.getpid()}-{time.time_ns()}",
    )
    status = wait_for(client, job_id)
    logs = client.get_job_logs(job_id)
    assert status == JobStatus.SUCCEEDED, logs
    assert "starting from step 0" in logs and "finished at step 4" in logs
    assert "HF_TOKEN visible: yes" in logs  # the pod environment reaches the driver without the runtime env
    assert steps_saved(ckpt) == [2, 4]
    assert json.loads((ckpt / "step_4" / "training_info.json").read_text()) == {"step": 4}
    assert not list(ckpt.glob("tmp_step_*"))
    info = client.get_job_info(job_id)
    assert info.runtime_env["env_vars"] == runtime_env["env_vars"] and info.metadata == metadata
    if name == GEMMA:
        # NeMo-RL's ResponseDataset path reads the files the staging Job wrote; the entrypoint prepares nothing.
        assert recipes.GSM8K_SCRIPT not in entrypoint and recipes.STAGE_DATA_SCRIPT not in entrypoint
        assert "ResponseDataset 3 train / 1 validation rows" in logs
        assert Path(recipes.gsm8k_paths(str(tmp_path / "lustre"))["marker"]).exists()
        calls = [json.loads(line) for line in datasets_calls.read_text().splitlines()]
        assert {
            "path": "openai/gsm8k",
            "name": "main",
            "revision": catalog.DATASETS["openai/gsm8k"].revision,
            "hf_home": runtime_env["env_vars"]["HF_HOME"],
        } in calls
    assert_no_secret(client, job_id, entrypoint, runtime_env, metadata)


@pytest.mark.ray
@pytest.mark.parametrize("nemo_rl_image", [HOME_RELEASE[GEMMA]], indirect=True)
def test_preempted_run_resumes_from_its_last_checkpoint(nemo_rl_image, client, tmp_path, fake_site):
    overrides = {"max_num_steps": 16, "save_period": 2, "keep_top_k": 2}
    rendering = render(GEMMA, overrides, tmp_path / "lustre", nemo_rl_image)
    stage_gsm8k(tmp_path / "lustre", fake_site)  # the data staging Job, before the RayJob
    entrypoint, runtime_env, metadata, ckpt = rendering
    first = client.submit_job(
        entrypoint=entrypoint, runtime_env=runtime_env, metadata=metadata, submission_id=f"preempt-1-{time.time_ns()}"
    )
    deadline = time.monotonic() + 60
    while not steps_saved(ckpt):
        assert not client.get_job_status(first).is_terminal(), client.get_job_logs(first)
        assert time.monotonic() < deadline, client.get_job_logs(first)
        time.sleep(0.05)
    client.stop_job(first)  # the spot node goes away mid-run
    assert wait_for(client, first) == JobStatus.STOPPED
    saved = steps_saved(ckpt)[-1]
    assert 0 < saved < overrides["max_num_steps"]

    # The RayJob is submitted again with exactly the same rendering (KubeRay gives it a new submission id).
    assert render(GEMMA, overrides, tmp_path / "lustre", nemo_rl_image) == rendering
    second = client.submit_job(
        entrypoint=entrypoint, runtime_env=runtime_env, metadata=metadata, submission_id=f"preempt-2-{time.time_ns()}"
    )
    assert wait_for(client, second) == JobStatus.SUCCEEDED, client.get_job_logs(second)
    logs = client.get_job_logs(second)
    assert f"resuming from step {saved} (" in logs
    assert "starting from step 0" not in logs
    assert all(f"step {n}/16 done" not in logs for n in range(1, saved + 1))
    assert f"step {saved + 1}/16 done" in logs
    assert steps_saved(ckpt) == [14, 16]
    assert json.loads((ckpt / "step_16" / "training_info.json").read_text()) == {"step": 16}
    for job_id in (first, second):
        assert_no_secret(client, job_id, *rendering[:3])


# Ray's own tail_job_logs opens its websocket with a deprecated aiohttp argument.
@pytest.mark.ray
@pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")
@pytest.mark.parametrize("nemo_rl_image", [HOME_RELEASE[QWEN]], indirect=True)
def test_companion_cli_drives_status_logs_list_and_stop(nemo_rl_image, ray_head, client, tmp_path, capsys):
    entrypoint, runtime_env, metadata, ckpt = render(QWEN, {"max_num_steps": 200}, tmp_path / "lustre", nemo_rl_image)
    job_id = f"cli-{time.time_ns()}"
    addr = ["--address", ray_head]
    assert (
        jobs.main(
            [
                "submit",
                *addr,
                "--entrypoint",
                entrypoint,
                "--runtime-env-json",
                json.dumps(runtime_env),
                "--metadata-json",
                json.dumps(metadata),
                "--submission-id",
                job_id,
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == job_id
    info = client.get_job_info(job_id)
    assert (info.entrypoint, info.runtime_env, info.metadata) == (entrypoint, runtime_env, metadata)

    deadline = time.monotonic() + 60
    while "step 1/200 done" not in client.get_job_logs(job_id):
        assert time.monotonic() < deadline, client.get_job_logs(job_id)
        time.sleep(0.2)
    assert jobs.main(["status", job_id, *addr]) == 0
    assert capsys.readouterr().out.startswith(f"{job_id}: RUNNING")
    assert jobs.main(["logs", job_id, *addr]) == 0
    assert "stand-in GRPO: step 1/200 done" in capsys.readouterr().out
    assert jobs.main(["list", *addr]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith(job_id + "\t")]
    assert len(row) == 1 and row[0].split("\t")[1] == "RUNNING"

    assert jobs.main(["stop", job_id, "--wait", "30", *addr]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{job_id}: STOPPED"
    assert jobs.main(["logs", job_id, "--follow", *addr]) == 0  # the job has ended: prints and returns
    assert "stand-in GRPO: step 1/200 done" in capsys.readouterr().out
    assert jobs.main(["status", job_id, *addr]) == 0
    assert capsys.readouterr().out.startswith(f"{job_id}: STOPPED")

    assert jobs.main(["submit", *addr, "--entrypoint", "true", "--submission-id", job_id]) == jobs.EXIT_REFUSED
    assert jobs.main(["status", "no-such-job", *addr]) == jobs.EXIT_REFUSED
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert_no_secret(client, job_id, entrypoint, runtime_env, metadata)


@pytest.mark.ray
@pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")
@pytest.mark.parametrize("nemo_rl_image", [HOME_RELEASE[QWEN]], indirect=True)
def test_companion_cli_follows_logs_until_the_job_ends(nemo_rl_image, ray_head, client, tmp_path, capsys):
    entrypoint, runtime_env, metadata, _ = render(QWEN, {"max_num_steps": 3}, tmp_path / "lustre", nemo_rl_image)
    job_id = client.submit_job(
        entrypoint=entrypoint, runtime_env=runtime_env, metadata=metadata, submission_id=f"follow-{time.time_ns()}"
    )
    assert jobs.main(["logs", job_id, "--follow", "--address", ray_head]) == 0
    out = capsys.readouterr().out
    assert client.get_job_status(job_id) == JobStatus.SUCCEEDED
    assert "step 3/3 done" in out and out.rstrip().endswith("finished at step 3")


@pytest.mark.unit
def test_companion_cli_takes_host_port_as_a_dashboard_url_and_refuses_other_schemes(monkeypatch):
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert jobs.effective_address("127.0.0.1:8265") == "http://127.0.0.1:8265"
    assert jobs.effective_address(None) == jobs.DEFAULT_ADDRESS
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.2:8265")
    assert jobs.effective_address("http://127.0.0.1:8265") == "http://127.0.0.2:8265"
    monkeypatch.delenv("RAY_ADDRESS")
    with pytest.raises(jobs.Refused):
        jobs.effective_address("ray://127.0.0.1:10001")


@pytest.mark.ray
def test_companion_cli_reports_an_unreachable_address_in_one_line(ray_head):
    closed = f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")}
    root = Path(__file__).resolve().parents[1]
    cases = [
        (["status", "x", "--address", closed], env),
        # RAY_ADDRESS wins over --address, as in Ray's SDK: a live --address does not help.
        (["list", "--address", ray_head], {**env, "RAY_ADDRESS": closed}),
    ]
    for argv, case_env in cases:
        result = subprocess.run(
            [sys.executable, "-m", "cli.ray_jobs", *argv],
            cwd=root,
            env=case_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == jobs.EXIT_UNREACHABLE
        assert result.stdout == ""
        assert result.stderr.splitlines() == [result.stderr.strip()]
        assert result.stderr.startswith(f"error: cannot reach the Ray Jobs API at {closed}")
        assert "Traceback" not in result.stderr
