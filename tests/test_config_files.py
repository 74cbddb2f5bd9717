"""Your own config files (jobConfigFiles): each stack's own, from an experiment too, installed for its job only, and
installed again when edited, on a standing cluster too.

Oracles: the real install program (pod_programs/install_configs.py) on real files, in a copy of the release's tree
the way the image holds it, then NeMo-RL's own config loader with real hydra-core on the argv the real /bin/sh hands
the entry script (tests/nemo_rl_oracle.py); Kubernetes' ConfigMap key rule (apimachinery IsConfigMapKey, kept in
tests/oracles/kubernetes/ and checked against core.catalog by tests/test_replacements.py); the KubeRay CRDs and the
Kubernetes OpenAPI (tests/k8s_validation.py).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pod_programs
from core import catalog, recipes
from core.catalog import NEMO_RL_RELEASES
from core.recipes import config_tree
from core.settings import platform
from pod_programs import install_configs
from synth import engine
from synth.render import manifest_of
from tests.k8s_validation import validate_any
from tests.nemo_rl_oracle import loader, script_calls
from tests.standin import release_tree
from tests.standin.grpo_trainer import load_nemo_rl_config

ROOT = Path(__file__).parents[1]
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
INSTALL = pod_programs.USER_CONFIGS.name


# --- the install program on files ------------------------------------------------------------------------------------
def ship(scripts: Path, files: dict[str, str]) -> list[str]:
    """Write the ConfigMap's files as the kubelet mounts them; the program's FILE=INSTALL_PATH arguments."""
    scripts.mkdir(exist_ok=True)
    pairs = []
    for install, text in files.items():
        k = recipes.user_config_key(install, text)
        (scripts / k).write_text(text)
        pairs.append(f"{k}={install}")
    return pairs


def run_install(scripts: Path, workdir: Path, pairs: list[str]) -> subprocess.CompletedProcess:
    program = ROOT / "pod_programs" / INSTALL
    argv = [sys.executable, str(program), "--from", str(scripts), "--to", str(workdir), "--timeout", "0", *pairs]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


MINE = "examples/configs/mine.yaml"


@pytest.mark.unit
def test_an_edited_file_replaces_the_copy_an_earlier_job_installed_on_the_same_head(tmp_path):
    # A standing cluster's head keeps /opt/nemo-rl between jobs: the second job brings an edit of the same file.
    workdir = tmp_path / "opt-nemo-rl"
    (workdir / "examples" / "configs").mkdir(parents=True)
    first = run_install(tmp_path / "cm1", workdir, ship(tmp_path / "cm1", {MINE: "grpo:\n  seed: 1\n"}))
    assert first.returncode == 0, first.stderr
    second = run_install(tmp_path / "cm2", workdir, ship(tmp_path / "cm2", {MINE: "grpo:\n  seed: 2\n"}))
    assert second.returncode == 0, second.stderr
    assert (workdir / MINE).read_text() == "grpo:\n  seed: 2\n"
    # The same content again is a no-op.
    assert run_install(tmp_path / "cm2", workdir, ship(tmp_path / "cm2", {MINE: "grpo:\n  seed: 2\n"})).returncode == 0


@pytest.mark.unit
def test_a_file_of_the_image_is_never_overwritten(tmp_path):
    workdir = tmp_path / "opt-nemo-rl"
    (workdir / "examples" / "configs").mkdir(parents=True)
    (workdir / MINE).write_text("the image's own\n")
    done = run_install(tmp_path / "cm", workdir, ship(tmp_path / "cm", {MINE: "grpo:\n  seed: 1\n"}))
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"install_configs: {workdir / MINE} exists in the image with other content; not overwritten"
    )
    assert (workdir / MINE).read_text() == "the image's own\n"


@pytest.mark.unit
def test_a_file_an_earlier_job_installed_and_this_one_does_not_list_is_removed(tmp_path):
    workdir = tmp_path / "opt-nemo-rl"
    (workdir / "examples" / "configs").mkdir(parents=True)
    other = "examples/configs/other.yaml"
    assert run_install(tmp_path / "a", workdir, ship(tmp_path / "a", {MINE: "a: 1\n", other: "b: 1\n"})).returncode == 0
    assert run_install(tmp_path / "b", workdir, ship(tmp_path / "b", {MINE: "a: 2\n"})).returncode == 0
    assert not (workdir / other).exists() and (workdir / MINE).read_text() == "a: 2\n"


@pytest.mark.unit
def test_a_pod_stopped_between_the_record_and_the_copy_still_owns_its_file(tmp_path, monkeypatch):
    # The record lists a new content before the file is replaced: stop right after the replace, before the record
    # is narrowed, and the next job still recognises the file as its own.
    workdir = tmp_path / "opt-nemo-rl"
    (workdir / "examples" / "configs").mkdir(parents=True)
    assert run_install(tmp_path / "a", workdir, ship(tmp_path / "a", {MINE: "a: 1\n"})).returncode == 0
    real = install_configs.write_file

    def stop_after(dest, data):
        real(dest, data)
        raise SystemExit("stopped")

    monkeypatch.setattr(install_configs, "write_file", stop_after)
    with pytest.raises(SystemExit):
        install_configs.install(str(tmp_path / "b"), str(workdir), 0, ship(tmp_path / "b", {MINE: "a: 2\n"}))
    monkeypatch.setattr(install_configs, "write_file", real)
    assert run_install(tmp_path / "c", workdir, ship(tmp_path / "c", {MINE: "a: 3\n"})).returncode == 0
    assert (workdir / MINE).read_text() == "a: 3\n"


# --- a platform's job: edit the file and run again ------------------------------------------------------------------
def _job_script(result: engine.SynthResult) -> str:
    return result.get(RAYJOB, "rayjob").get("spec.entrypoint")


def _install_argv(entrypoint: str) -> list[str]:
    (argv,) = [c for c in script_calls(entrypoint) if c[:3] == ["uv", "run", "python"] and c[3].endswith(INSTALL)]
    return argv


def _training_words(entrypoint: str, release) -> list[str]:
    (argv,) = [c for c in script_calls(entrypoint) if c[3:4] == [release.grpo_entry]]
    return argv[4:]


def _head_spec(rayjob_or_cluster: engine.Registration) -> dict:
    spec = rayjob_or_cluster.get("spec.rayClusterSpec.headGroupSpec.template.spec")
    return spec if spec is not None else rayjob_or_cluster.get("spec.headGroupSpec.template.spec")


@pytest.mark.graph
def test_editing_a_file_and_running_again_installs_the_edit_on_a_standing_cluster(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "configs").mkdir(parents=True)
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", project)
    release = NEMO_RL_RELEASES["v0.5.0"]
    mine = "examples/configs/grpo_math_8B_mine.yaml"
    workdir = tmp_path / "opt-nemo-rl"
    shutil.copytree(release_tree("v0.5.0"), workdir)  # the head's image tree, kept between jobs
    overrides = {
        "jobRecipe": "none",
        "jobConfigFiles": json.dumps({mine: "configs/mine.yaml"}),
        "jobOverrides": json.dumps(
            {
                "config_path": mine,
                "model_revision": "0e9e39f249a16976918f6564b8830bc894c89659",
                "model_params": 8 * 10**9,
            }
        ),
    }
    for seed in (1, 2):  # the first job, then the same stack after an edit of the file
        (project / "configs" / "mine.yaml").write_text(f"defaults: grpo_math_8B.yaml\ngrpo:\n  seed: {seed}\n")
        r = engine.run("dev", overrides)
        assert r.error is None, r.error
        data = r.get(CONFIG_MAP, "job-scripts").get("data")
        scripts = tmp_path / f"scripts-{seed}"
        scripts.mkdir()
        for name, text in data.items():
            (scripts / name).write_text(text)
        argv = _install_argv(_job_script(r))
        # The entrypoint's own argv, with the pod's directories swapped for this test's.
        args = [a.replace(recipes.IMAGE_PATHS.scripts_dir, str(scripts)) for a in argv[3:]]
        args[args.index("--to") + 1] = str(workdir)
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        with contextlib.chdir(workdir):
            config = load_nemo_rl_config(loader("v0.5.0"), mine, _training_words(_job_script(r), release)[2:])
        assert config["grpo"]["seed"] == seed


# --- an experiment's own files ---------------------------------------------------------------------------------------
def _readme_blocks() -> tuple[str, dict, tuple[str, str]]:
    """The config file and the experiment's stack file of the README's "Your own run", as written there, and the
    (experiment, principal) its `pulumi config set` lists on the platform."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Your own run") : text.index("## Shipped stacks")]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (config_file,) = [b for b in blocks if b.lstrip().startswith("# configs/")]
    (stack_file,) = [b for b in blocks if "platformStack" in b]
    ((name, principal),) = re.findall(
        r"pulumi config set --path 'experiments\[\"([^\"]+)\"\]\[0\]' (\S+) -s codelab", section
    )
    return config_file, yaml.safe_load(stack_file), (name, principal)


@pytest.fixture
def readme_experiment(tmp_path, monkeypatch):
    """The README's own run, synthesized as written: its file in a project of its own, its stack file beside."""
    config_file, stack, (name, principal) = _readme_blocks()
    project = tmp_path / "project"
    files = stack["config"]["nemo-rl-gke:jobConfigFiles"]
    ((install, source),) = files.items()
    (project / source).parent.mkdir(parents=True)
    (project / source).write_text(re.sub(r"^ {3}", "", config_file, flags=re.M))
    monkeypatch.setattr(config_tree, "PROJECT_ROOT", project)
    stack_path = tmp_path / "Pulumi.codelab-mine.yaml"
    stack_path.write_text(yaml.safe_dump(stack))
    # Its platform lists it, as the README's first step does.
    listed = yaml.safe_load((ROOT / "Pulumi.codelab.yaml").read_text())["config"]["nemo-rl-gke:experiments"]
    assert name == "codelab-mine"
    platform_run = engine.run("codelab", {"experiments": json.dumps({**listed, name: [principal]})})
    assert platform_run.error is None, platform_run.error
    refs = {stack["config"]["nemo-rl-gke:platformStack"]: engine.StackOutputs.of(platform_run)}
    r = engine.run(name, stack_file=stack_path, stack_references=refs)
    assert r.error is None, r.error
    return r, install, (project / source).read_text()


@pytest.mark.graph
def test_the_readmes_own_run_ships_its_file_in_a_configmap_of_its_own_that_only_its_job_mounts(readme_experiment):
    r, install, text = readme_experiment
    # Its own, beside the scripts ConfigMap of its namespace: the platform's ConfigMaps are not the experiment's.
    cm = r.get(CONFIG_MAP, "job-configs")
    assert cm.name == "job-configs" and cm.get("metadata.name") == "nemo-codelab-mine-job-configs"
    (key,) = cm.get("data")
    assert cm.get("data") == {recipes.user_config_key(install, text): text}
    assert key not in r.get(CONFIG_MAP, "job-scripts").get("data")  # the programs only
    # Kubernetes' ConfigMap key rule (IsConfigMapKey): at most 253 of [-._a-zA-Z0-9], not '.'-prefixed twice.
    assert len(key) <= catalog.K8S_CONFIGMAP_KEY_MAX and re.fullmatch(catalog.K8S_CONFIGMAP_KEY_RE, key)
    assert not key.startswith("..")
    rayjob = r.get(RAYJOB, "rayjob")
    assert r.depends_on(rayjob, cm)
    head = _head_spec(rayjob)
    volumes = {v["name"]: v for v in head["volumes"]}
    assert volumes["job-configs"]["configMap"]["name"] == cm.get("metadata.name")
    (mount,) = [m for m in head["containers"][0]["volumeMounts"] if m["name"] == "job-configs"]
    assert mount == {"name": "job-configs", "mountPath": recipes.IMAGE_PATHS.configs_dir, "readOnly": True}
    # No worker mounts it: the driver on the head is the only reader of configs.
    for group in rayjob.get("spec.rayClusterSpec.workerGroupSpecs"):
        assert "job-configs" not in {v["name"] for v in group["template"]["spec"].get("volumes", [])}
    for obj in (cm, rayjob):
        validate_any(manifest_of(obj))


@pytest.mark.graph
def test_the_readmes_own_run_reaches_nemo_rls_loader_as_written_from_the_installed_file(readme_experiment, tmp_path):
    r, install, text = readme_experiment
    release = NEMO_RL_RELEASES["v0.5.0"]
    entrypoint = _job_script(r)
    argv = _install_argv(entrypoint)
    assert argv[argv.index("--from") + 1] == recipes.IMAGE_PATHS.configs_dir
    mounted, workdir = tmp_path / "configs-mount", tmp_path / "opt-nemo-rl"
    mounted.mkdir()
    for name, content in r.get(CONFIG_MAP, "job-configs").get("data").items():
        (mounted / name).write_text(content)
    shutil.copytree(release_tree("v0.5.0"), workdir)
    args = argv[3:]
    args[0] = str(ROOT / "pod_programs" / INSTALL)
    args[args.index("--from") + 1], args[args.index("--to") + 1] = str(mounted), str(workdir)
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with contextlib.chdir(workdir):
        config = load_nemo_rl_config(loader("v0.5.0"), install, _training_words(entrypoint, release)[2:])
    # The file's own keys, its parent's batch shape and layout, the program's paths.
    assert config["policy"]["optimizer"]["kwargs"]["lr"] == 1.0e-6 and config["grpo"]["seed"] == 7
    assert (config["grpo"]["num_prompts_per_step"], config["grpo"]["num_generations_per_prompt"]) == (64, 32)
    assert config["cluster"] == {"gpus_per_node": 8, "num_nodes": 1}
    assert config["checkpointing"]["checkpoint_dir"].startswith("/lustre/checkpoints/my-grpo-codelab-mine-")
    # Its workers are the config's one node.
    (group,) = r.get(RAYJOB, "rayjob").get("spec.rayClusterSpec.workerGroupSpecs")
    assert group["replicas"] == 1


@pytest.mark.graph
def test_a_platforms_config_files_are_its_own_and_never_reach_its_experiments(synth):
    assert "jobConfigFiles" in platform.EXPERIMENT_KEYS
    r = synth("codelab")
    assert "jobConfigFiles" not in r.outputs[platform.CONTRACT_OUTPUT]["settings"]


@pytest.mark.graph
def test_config_files_on_a_stack_without_a_job_of_its_own_are_refused_not_dropped(synth):
    files = {"examples/configs/mine.yaml": "nemo-rl-reference/v0.5.0/examples/configs/grpo_math_1B.yaml"}
    r = synth("codelab", {"jobEnabled": "false", "jobConfigFiles": json.dumps(files)})
    assert r.error is not None and r.resources == []
    lines = [ln.strip()[2:] for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith(
        "nemo-rl-gke:jobConfigFiles: this stack runs no job of its own (nemo-rl-gke:jobEnabled is false)"
    ), lines
