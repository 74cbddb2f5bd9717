"""Your own environment, through the job the program renders: a jobEntry script in your image registers it, and the
config selects it.

The worked example of the docs (docs/examples/custom-environment: the environment, the entry script) runs through
the entrypoint the program renders with `jobEntry`, on a real local Ray cluster, in a directory standing in for
/opt/nemo-rl of each release with a registry (v0.5.0, v0.7.0): the release's real configs and config loader, the
stand-in trainer at examples/run_grpo.py, and the release's own environment registry code (tests/oracles/
nemo_rl_registry, kept with its source). The trainer creates the environment the config names with that code, as a
Ray actor configured by `env.<name>`, and has it score a sample. Without the entry, NeMo-RL's own assert refuses
the name; without the actor's Python environment, its get_actor_python_env does. The program refuses both at
preview, and a jobEntry on v0.4.0, which has no registry.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.ray_local import base_env, local_cluster
from tests.standin import fake_datasets, install_registry, install_workdir, stage_gsm8k
from tests.standin.grpo_trainer import STEP_SECONDS_ENV
from workloads import job_scripts as job_scripts_module
from workloads.manifests.pod_parts import SCRIPTS_FILE_MODE

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "custom-environment"
RECIPE = "gemma3-27b-gsm8k"
ENV_NAME = "contains_answer"
JOB_IMAGE = "us-central1-docker.pkg.dev/your-gcp-project-id/nemo-dev-images/grpo@sha256:" + "1" * 64
# The config selecting the environment and configuring it, per layout (flat data.* / data.default.*).
SELECT = {
    "v0.5.0": {"data.env_name": ENV_NAME, f"+env.{ENV_NAME}.reward": 2.5},
    "v0.7.0": {"data.default.env_name": ENV_NAME, f"+env.{ENV_NAME}.reward": 2.5},
}


def the_image(tmp: Path, release_tag: str) -> tuple[Path, Path]:
    """(/opt/nemo-rl of the release with its registry, /opt/my-env as the example's Dockerfile lays it out)."""
    release = NEMO_RL_RELEASES[release_tag]
    workdir = tmp / f"opt-nemo-rl-{release_tag}"
    install_workdir(workdir, release)
    install_registry(workdir, release)
    mine = tmp / "opt-my-env"
    shutil.copytree(EXAMPLE / "answer_env", mine / "answer_env", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(EXAMPLE / "run_my_grpo.py", mine / "run_my_grpo.py")
    return workdir, mine


def render(release_tag: str, lustre: Path, paths: recipes.ImagePaths, entry, overrides: dict):
    release = NEMO_RL_RELEASES[release_tag]
    settings = JobSettings.model_validate(
        {"jobRecipe": RECIPE, "jobOverrides": {"max_num_steps": 2, "save_period": 2, "keep_top_k": 1, **overrides}}
    )
    recipe = recipes.resolve_recipe(settings, release)
    run = recipes.default_run_name(settings, "ci", release)
    return (
        recipes.entrypoint(
            recipe, release, recipes.EntrypointArgs(mount_path=str(lustre), run_name=run, paths=paths, entry=entry)
        ),
        recipes.runtime_env(recipe, mount_path=str(lustre)),
    )


# --- what the program refuses at preview --------------------------------------------------------------------------
@pytest.mark.graph
@pytest.mark.parametrize("release_tag", ["v0.5.0", "v0.7.0"])
def test_the_program_renders_the_entry_and_refuses_the_environment_without_it(synth, release_tag):
    base = {"nemoRlRelease": release_tag, "jobOverrides": SELECT[release_tag]}
    ok = synth("dev", {**base, "jobImage": JOB_IMAGE, "jobEntry": "/opt/my-env/run_my_grpo.py"})
    assert ok.error is None, ok.error
    entrypoint = ok.get("kubernetes:ray.io/v1:RayJob", "rayjob").get("spec.entrypoint")
    assert "uv run python /opt/my-env/run_my_grpo.py --config " in entrypoint
    assert "examples/run_grpo_math.py" not in entrypoint and "examples/run_grpo.py" not in entrypoint
    assert f"data.{'default.' if release_tag == 'v0.7.0' else ''}env_name={ENV_NAME}" in entrypoint
    refused = synth("dev", base)
    assert refused.error is not None and refused.resources == []
    (line,) = [ln.strip() for ln in refused.error.splitlines() if ENV_NAME in ln]
    assert line.startswith("- nemo-rl-gke:jobEntry:") and "set jobEntry" in line, refused.error


@pytest.mark.graph
def test_a_selected_environment_without_its_config_section_is_refused_naming_the_key(synth):
    r = synth(
        "dev",
        {"jobOverrides": {"data.env_name": ENV_NAME}, "jobImage": JOB_IMAGE, "jobEntry": "/opt/my-env/run_my_grpo.py"},
    )
    assert r.error is not None and r.resources == []
    (line,) = [ln.strip() for ln in r.error.splitlines() if f"env.{ENV_NAME}" in ln]
    assert line.startswith("- nemo-rl-gke:jobOverrides:") and f"jobOverrides.+env.{ENV_NAME}" in line


@pytest.mark.graph
def test_a_job_entry_on_a_release_without_a_registry_is_refused_with_the_reason(synth):
    r = synth("codelab", {"jobImage": JOB_IMAGE.replace("us-central1", "us-east1"), "jobEntry": "/opt/x/run.py"})
    assert r.error is not None and r.resources == []
    (line,) = [ln.strip() for ln in r.error.splitlines() if "jobEntry" in ln]
    assert "v0.4.0 has no environment registry" in line and "MathEnvironment" in line


# --- through a real Ray cluster, with each release's registry code --------------------------------------------------
@pytest.fixture(scope="module", params=["v0.5.0", "v0.7.0"])
def cluster(request, tmp_path_factory):
    """A local Ray head and worker whose image holds release `param`'s /opt/nemo-rl (its registry) and the example's
    /opt/my-env on the Python path (the Dockerfile's PYTHONPATH), plus the image's `uv` and `datasets`."""
    tmp = tmp_path_factory.mktemp(f"image-{request.param}")
    workdir, mine = the_image(tmp, request.param)
    scripts = tmp / "etc-nemo-rl-gke"
    scripts.mkdir()
    for name, text in job_scripts_module.job_scripts().items():
        (scripts / name).write_text(text, encoding="utf-8")
        (scripts / name).chmod(SCRIPTS_FILE_MODE)
    site = fake_datasets.install(tmp / "site")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(
        "#!/bin/sh\n"
        '[ "$1" = run ] && [ "$2" = python ] || { echo "uv stand-in: only uv run python" >&2; exit 2; }\n'
        "shift 2\n"
        f'exec {sys.executable} "$@"\n'
    )
    (bin_dir / "uv").chmod(0o755)
    # nemo_rl comes with the image's environment (here: the release tree), the example's package from its
    # PYTHONPATH; the driver hands its environment to the environment's actor (create_env's env_vars).
    env = base_env(
        {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "PYTHONPATH": os.pathsep.join([str(mine), str(workdir), str(site)]),
            STEP_SECONDS_ENV: "0.1",
        },
        drop=("HF_HOME",),
    )
    with local_cluster(env, head_cpus=2, worker_cpus=(1,)) as c:
        yield request.param, c.dashboard, recipes.ImagePaths(workdir=str(workdir), scripts_dir=str(scripts)), mine, site


def submit(cluster, tmp_path, entry, overrides) -> tuple[str, str]:
    from ray.job_submission import JobSubmissionClient

    release_tag, dashboard, paths, _, site = cluster
    client = JobSubmissionClient(dashboard)
    stage_gsm8k(tmp_path / "lustre", site)  # the data staging Job, before the RayJob
    entrypoint, runtime_env = render(release_tag, tmp_path / "lustre", paths, entry, overrides)
    job = client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env, submission_id=f"env-{time.time_ns()}")
    deadline = time.monotonic() + 120
    while not client.get_job_status(job).is_terminal():
        assert time.monotonic() < deadline, client.get_job_logs(job)
        time.sleep(0.2)
    return str(client.get_job_status(job)), client.get_job_logs(job)


@pytest.mark.ray
def test_the_entry_registers_the_environment_the_config_selects_and_the_run_uses_it(cluster, tmp_path):
    release_tag, _, _, mine, _ = cluster
    status, logs = submit(cluster, tmp_path, str(mine / "run_my_grpo.py"), SELECT[release_tag])
    assert status == "SUCCEEDED", logs
    # The actor scored with env.contains_answer.reward: the response holding the answer, then the one that does not.
    assert f"environment {ENV_NAME}: rewards [2.5, 0.0]" in logs
    assert "finished at step 2" in logs


@pytest.mark.ray
def test_without_the_entry_nemo_rl_refuses_the_unregistered_environment(cluster, tmp_path):
    release_tag, _, _, _, _ = cluster
    status, logs = submit(cluster, tmp_path, NEMO_RL_RELEASES[release_tag].registry_entry, SELECT[release_tag])
    assert status == "FAILED", logs
    assert f"Env name {ENV_NAME} is not registered in ENV_REGISTRY" in logs


@pytest.mark.ray
def test_an_entry_that_skips_the_actor_environment_fails_in_get_actor_python_env(cluster, tmp_path):
    release_tag, _, _, mine, _ = cluster
    text = (mine / "run_my_grpo.py").read_text(encoding="utf-8")
    line = "ACTOR_ENVIRONMENT_REGISTRY[ACTOR] = PY_EXECUTABLES.SYSTEM\n"
    assert line in text
    partial = tmp_path / "run_partial.py"
    partial.write_text(text.replace(line, ""), encoding="utf-8")
    status, logs = submit(cluster, tmp_path, str(partial), SELECT[release_tag])
    assert status == "FAILED", logs
    assert "No actor environment registered for answer_env.environment.ContainsAnswerEnvironment" in logs
