"""The RayJob entrypoint through the three interpreters it really passes, run with the real local bash and /bin/sh.

Chain (sources in core/shell.py): KubeRay's submitter runs `/bin/bash -ce -- "<... ray job submit ... --
<entrypoint> ; fi ; ...>"` (kuberay common/job.go GetK8sJobCommand @ v1.4.2, BuildJobSubmitCommand @ v1.7.0;
kuberay#3802); the image's `ray job submit` re-joins the words after `--` with `subprocess.list2cmdline`
(ray python/ray/dashboard/modules/job/cli.py @ 2.46.0, 2.49.2, 2.55.1; `shlex.join` from ray PR #63797, Ray
2.60); the job supervisor runs the string with `Popen(shell=True)`, i.e. `/bin/sh -c` (job_supervisor.py). Here
a stand-in `ray` on the submitter's PATH records the argv bash gives it, the join rule of the image's Ray is
applied to the words after `--`, and /bin/sh runs the result; a stand-in `uv` records the training program's
argv. The local Ray (2.60) is not used for the join: its rule differs from the images'.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
import yaml

from core import gate, recipes, shell
from core.catalog import NEMO_RL_RELEASES
from core.settings import load_settings
from core.settings.job import JobSettings
from pod_programs import attempts as attempts_program

ADDRESS = "nemo-dev-ray-head-svc.nemo-rl.svc.cluster.local:8265"
SUBMISSION_ID = "nemo-dev-grpo-x7k2q"
# KubeRay's default submitters (1.4.2, 1.7.0) and the program's own, which the RayJob renders (core.shell).
PROGRAM = "nemo-rl-gke"
SUBMITTERS = (*shell.KUBERAY_SUBMITTERS, PROGRAM)


@pytest.fixture
def tools(tmp_path):
    """Stand-ins for the image's `ray` (records `ray job submit`'s argv; `ray job status` says "no such job" so
    the submit branch runs) and `uv` (records its argv), and `python` for KubeRay 1.7's dashboard health
    loop (healthy at once)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    records = tmp_path / "records"
    records.mkdir()
    (bin_dir / "ray").write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "if sys.argv[1:3] == ['job', 'status']:\n"
        # Before the submit: no such job (the submit branch runs); after it: the job is done (the program's
        # submitter then ends, as on a real head: tests/test_submitter_ray.py).
        f"    if os.path.exists({str(records / 'submit.json')!r}):\n"
        "        print(f\"Job '{sys.argv[-1]}' succeeded\")\n"
        "        sys.exit(0)\n"
        "    sys.exit(1)\n"
        "if sys.argv[1:3] == ['job', 'submit']:\n"
        f"    open({str(records / 'submit.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    (bin_dir / "uv").write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(records / 'uv.jsonl')!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    (bin_dir / "python").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    return env, records


@pytest.fixture
def paths(tmp_path) -> recipes.ImagePaths:
    """The image's work directory and the head's scripts mount, as directories of the test's own."""
    image = recipes.ImagePaths(workdir=str(tmp_path / "opt-nemo-rl"), scripts_dir=str(tmp_path / "etc-nemo-rl-gke"))
    Path(image.workdir).mkdir()
    Path(image.scripts_dir).mkdir()
    return image


def run_chain(
    entrypoint: str, runtime_env_yaml: str, *, kuberay: str, rule: str, env: dict, records: Path
) -> tuple[list[str], list[list[str]]]:
    """(words `ray job submit` got after `--`, argv of every `uv` call the job made)."""
    if kuberay == PROGRAM:
        # The submitter the RayJob renders: KubeRay gives it the address and the submission id as variables.
        submitter = shell.job_submitter_command(entrypoint, runtime_env_yaml=runtime_env_yaml, unreachable_seconds=60)
        env = {**env, "RAY_DASHBOARD_ADDRESS": ADDRESS, "RAY_JOB_SUBMISSION_ID": SUBMISSION_ID}
    else:
        submitter = shell.submitter_command(
            entrypoint, kuberay=kuberay, address=ADDRESS, submission_id=SUBMISSION_ID, runtime_env_yaml=runtime_env_yaml
        )
    done = subprocess.run(submitter, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    submit = json.loads((records / "submit.json").read_text())
    # The runtime env crossed bash intact too (strconv.Quote'd JSON in double quotes).
    renv = submit[submit.index("--runtime-env-json") + 1]
    assert json.loads(renv) == yaml.safe_load(runtime_env_yaml)
    words = submit[submit.index("--") + 1 :]
    job = subprocess.run(
        shell.supervisor_argv(shell.ray_cli_join(words, rule)),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=records,
    )
    assert job.returncode == 0, job.stderr
    uv_file = records / "uv.jsonl"
    calls = [json.loads(line) for line in uv_file.read_text().splitlines()] if uv_file.exists() else []
    return words, calls


def expected_calls(
    recipe, release, mount: str, run: str, paths: recipes.ImagePaths, gate_options: Optional[list[str]] = None
) -> list[list[str]]:
    calls = []
    if gate_options:
        calls.append(recipes.gate_command(gate_options, paths.scripts_dir)[1:])
    if recipe.train_backend == "megatron":
        calls.append(
            recipes.megatron_guard_command(
                recipe.model_name,
                paths.scripts_dir,
                own=recipes.megatron_run_dir(mount, run),
                shared=recipes.megatron_shared_dir(mount),
                hf_overrides_hash=recipes.megatron_hf_overrides_hash(recipe, release),
            )[1:]
        )
    calls.append(["run", "python", *recipes.render_args(recipe, release, mount_path=mount, run_name=run)])
    return calls


# Values the settings accept that the shells must carry unchanged: spaces (Hydra-quoted, so the script gains
# quotes), `=`, `,`, `:`, `;`, `|`, `&`, `*`, `~`, `%`, `#`, parentheses, braces, non-ASCII.
ACCEPTED_NAMES = ["grpo run 1", "a=b,c:d", "x;y|z&w", "*~%#", "(x){y}[z]", "essai-été"]


# Every (recipe, release) the program renders: a release that does not ship the recipe's config is refused before.
RENDERED = [
    (name, tag)
    for name in sorted(recipes.RECIPES)
    for tag in sorted(NEMO_RL_RELEASES)
    if recipes.config_tree.shipped(tag, recipes.RECIPES[name].config_path)
]


@pytest.mark.unit
@pytest.mark.parametrize("kuberay", SUBMITTERS)
@pytest.mark.parametrize("recipe_name,tag", RENDERED)
def test_training_argv_survives_kuberay_the_images_ray_cli_and_sh(recipe_name, tag, kuberay, tools, tmp_path, paths):
    env, records = tools
    release = NEMO_RL_RELEASES[tag]
    recipe = recipes.RECIPES[recipe_name]
    mount, run = str(tmp_path / "lustre"), f"{recipe_name}-dev"
    # The readiness gate's command line as the dev stack renders it (on by default), on this test's mount.
    s = load_settings(
        "dev",
        "example-project",
        values={"jobRecipe": recipe_name, "gpuNodes": recipe.num_nodes, "gateRerun": "node-7 replaced"},
        secret_state={"hfToken": "secret", "wandbApiKey": "secret"},
    )
    gate_options = gate.options(dataclasses.replace(gate.GateArgs.of(s), mount_path=mount, run_name=run))
    entry = recipes.entrypoint(
        recipe, release, recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths, gate=gate_options)
    )
    renv = recipes.runtime_env_yaml(recipe, mount_path=mount, gate_rerun=s.gate.rerun)
    words, calls = run_chain(entry, renv, kuberay=kuberay, rule=release.ray_cli_join, env=env, records=records)
    assert words[:2] == ["sh", "-c"]
    assert calls == expected_calls(recipe, release, mount, run, paths, gate_options)
    assert Path(recipes.checkpoint_dir(mount, run)).is_dir()


@pytest.mark.unit
@pytest.mark.parametrize("value", ACCEPTED_NAMES)
def test_accepted_override_values_reach_hydra_unchanged(value, tools, tmp_path, paths):
    env, records = tools
    release = NEMO_RL_RELEASES["v0.5.0"]
    job = JobSettings.model_validate(
        {"jobOverrides": {"wandb_name": value, "model_name": f"org/{value}", "model_revision": "0" * 40}}
    )
    assert recipes.check_job(job, release=release, worker_replicas=2, gpus_per_node=8, stack_name="dev") == []
    recipe = recipes.resolve_recipe(job, release)
    mount, run = str(tmp_path / "lustre"), "r1"
    entry = recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths))
    _, calls = run_chain(
        entry,
        recipes.runtime_env_yaml(recipe, mount_path=mount),
        kuberay="1.7.0",
        rule=release.ray_cli_join,
        env=env,
        records=records,
    )
    assert calls == expected_calls(recipe, release, mount, run, paths)
    assert f"logger.wandb.name={recipes.hydra_value(value)}" in calls[-1]


@pytest.mark.unit
@pytest.mark.parametrize(
    "value, mangled", [("run$HOME", True), ("a`echo b`c", True), ("a\\\\b", True), ('say "hi"', False), ("it's", False)]
)
def test_unsafe_characters_are_refused_naming_the_key(value, mangled, tools, tmp_path, paths):
    """The refusal is needed: with the images' list2cmdline, `$`, backticks and `\\` reach NeMo-RL changed (or run
    a command), while Ray 2.60's shlex.join would carry them. Quotes survive today's chain by the interplay of
    three rules; they are refused too (see core/shell.py)."""
    env, records = tools
    release = NEMO_RL_RELEASES["v0.5.0"]
    base = recipes.RECIPES["gemma3-27b-gsm8k"]
    recipe = base.model_copy(update={"wandb_name": value})  # what the settings refuse, rendered anyway
    mount, run = str(tmp_path / "lustre"), "r1"
    script = recipes.job_script(recipe, release, recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths))
    entry = recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths))
    assert shlex.split(entry) == ["sh", "-c", script]
    outcomes = {}
    for rule in ("list2cmdline", "shlex.join"):
        (records / "uv.jsonl").unlink(missing_ok=True)
        _, calls = run_chain(
            entry,
            recipes.runtime_env_yaml(recipe, mount_path=mount),
            kuberay="1.4.2",
            rule=rule,
            env=env,
            records=records,
        )
        outcomes[rule] = calls == expected_calls(recipe, release, mount, run, paths)
    assert outcomes == {"list2cmdline": not mangled, "shlex.join": True}

    job = JobSettings.model_validate({"jobOverrides": {"wandb_name": value}})
    problems = recipes.check_job(job, release=release, worker_replicas=2, gpus_per_node=8, stack_name="dev")
    assert len(problems) == 1 and problems[0].startswith("nemo-rl-gke:jobOverrides.wandb_name: "), problems


@pytest.mark.unit
def test_the_images_ray_cli_joins_with_list2cmdline():
    # ray python/ray/dashboard/modules/job/cli.py `submit`: `entrypoint=list2cmdline(entrypoint)` at 2.46.0,
    # 2.49.2 and 2.55.1 (read from the PyPI wheels); ray PR #63797 switched POSIX to shlex.join for 2.60.
    assert {r.ray_version: r.ray_cli_join for r in NEMO_RL_RELEASES.values()} == {
        "2.46.0": "list2cmdline",
        "2.49.2": "list2cmdline",
        "2.55.1": "list2cmdline",
    }


@pytest.mark.unit
def test_submitter_command_has_kuberays_shape():
    # kuberay v1.4.2 rayjob_controller.go: Command = GetContainerCommand(["e"]) = ["/bin/bash", "-ce", "--"],
    # Args = [strings.Join(GetK8sJobCommand(...), " ")]; the entrypoint is pasted after `--` untouched.
    cmd = shell.submitter_command("  python x.py  ", kuberay="1.4.2", address=ADDRESS, submission_id="j1")
    assert cmd[:3] == ["/bin/bash", "-ce", "--"] and len(cmd) == 4
    assert cmd[3] == (
        f"if ! ray job status --address http://{ADDRESS} j1 >/dev/null 2>&1 ; then ray job submit "
        f"--address http://{ADDRESS} --no-wait --submission-id j1 -- python x.py ; fi ; "
        f"ray job logs --address http://{ADDRESS} --follow j1"
    )
    v17 = shell.submitter_command("python x.py", kuberay="1.7.0", address=ADDRESS, submission_id="j1")[3]
    assert v17.startswith("until python -c ") and v17.endswith(cmd[3])


@pytest.mark.unit
def test_go_quote_matches_strconv_quote():
    # Go: strconv.Quote("a\"b\\c\n\x01é") == `"a\"b\\c\n\x01é"`.
    assert shell.go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'


@pytest.mark.graph
@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"jobOverrides": {"wandb_name": "run-$USER"}}, "nemo-rl-gke:jobOverrides.wandb_name: "),
        ({"jobOverrides": {"model_name": "org/`id`"}}, "nemo-rl-gke:jobOverrides.model_name: "),
        ({"lustreMountPath": "/lustre\\x"}, "nemo-rl-gke:lustreMountPath: "),
        # In the runtime env and metadata JSON, which KubeRay strconv.Quote's into its bash command line.
        ({"gateRerun": "node-`date`"}, "nemo-rl-gke:gateRerun: "),
    ],
)
def test_stack_settings_refuse_values_the_shells_would_change(synth, overrides, key):
    # One line naming the key, before anything is registered.
    r = synth("dev", overrides)
    assert r.error is not None and r.resources == []
    lines = [line.strip() for line in r.error.splitlines()[1:]]
    assert len(lines) == 1 and lines[0].startswith(f"- {key}"), r.error


@pytest.mark.unit
@pytest.mark.parametrize("kuberay", SUBMITTERS)
def test_the_bounded_attempts_line_reaches_its_program_word_for_word(kuberay, tools, tmp_path, paths):
    """Standing-cluster retries (recipes.Attempts): the whole job runs as one command of pod_programs/attempts.py whose
    steps follow `--`, separated by `---`; every step's words must reach it unchanged through KubeRay's bash, the
    image's Ray CLI join and /bin/sh, or the loop would run something else than the steps rendered."""
    env, records = tools
    release = NEMO_RL_RELEASES["v0.5.0"]
    recipe = recipes.RECIPES["gemma3-27b-gsm8k"]
    mount, run = str(tmp_path / "lustre"), "grpo-run-1"
    attempts = recipes.Attempts(attempts=4, log=recipes.attempts_log(mount, run), amount=16, capacity_wait_seconds=1800)
    entry = recipes.entrypoint(
        recipe, release, recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths, attempts=attempts)
    )
    _, calls = run_chain(
        entry,
        recipes.runtime_env_yaml(recipe, mount_path=mount),
        kuberay=kuberay,
        rule=release.ray_cli_join,
        env=env,
        records=records,
    )
    (call,) = calls  # the loop program is exec'd: nothing else runs in the script
    assert call[:3] == ["run", "python", f"{paths.scripts_dir}/{recipes.ATTEMPTS_SCRIPT}"]
    # Split by the loop program's own parser, as it splits them in the pod.
    steps = attempts_program.split_steps(call[call.index("--") + 1 :])
    assert [s[1:] for s in steps] == expected_calls(recipe, release, mount, run, paths)


@pytest.mark.unit
@pytest.mark.parametrize("kuberay", SUBMITTERS)
def test_a_warm_start_links_the_source_checkpoint_once_through_the_real_shells(kuberay, tools, tmp_path, paths):
    # jobStartFrom: the new run's directory gets the source step hard-linked (no bytes copied) while it has no
    # checkpoint of its own; a resubmission after the run saved its own leaves it alone.
    env, records = tools
    release, recipe = NEMO_RL_RELEASES["v0.5.0"], recipes.RECIPES["gemma3-27b-gsm8k"]
    mount, run = str(tmp_path / "lustre"), "new-run"
    source = Path(recipes.checkpoint_dir(mount, "old-run")) / "step_40" / "policy"
    source.mkdir(parents=True)
    (source / "weights.bin").write_bytes(b"w" * 64)
    entry = recipes.entrypoint(
        recipe,
        release,
        recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths, start_from="old-run/step_40"),
    )
    renv = recipes.runtime_env_yaml(recipe, mount_path=mount, gate_rerun=None)
    run_chain(entry, renv, kuberay=kuberay, rule=release.ray_cli_join, env=env, records=records)
    linked = Path(recipes.checkpoint_dir(mount, run)) / "step_40" / "policy" / "weights.bin"
    assert linked.stat().st_ino == (source / "weights.bin").stat().st_ino
    # The run saved step_50 and was preempted; the source lost step_40 to its own pruning: the resubmission runs.
    (linked.parents[2] / "step_50").mkdir()
    for f in sorted(source.parent.rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    source.parent.rmdir()
    (records / "uv.jsonl").unlink()
    _, calls = run_chain(entry, renv, kuberay=kuberay, rule=release.ray_cli_join, env=env, records=records)
    assert calls[-1][:3] == ["run", "python", release.grpo_entry] and linked.is_file()


@pytest.mark.unit
def test_an_interrupted_warm_start_copy_is_never_resumed_from(tools, tmp_path, paths):
    # The links go into a temporary directory renamed to step_N once complete: a copy killed half-way leaves no
    # step_* (NeMo-RL resumes only from step_<digits>), and the next submission copies again, whole.
    env, _ = tools
    release, recipe = NEMO_RL_RELEASES["v0.5.0"], recipes.RECIPES["gemma3-27b-gsm8k"]
    mount, run = str(tmp_path / "lustre"), "new-run"
    source = Path(recipes.checkpoint_dir(mount, "old-run")) / "step_40"
    for name in ("a", "b", "c"):
        (source / "policy" / name).mkdir(parents=True)
        (source / "policy" / name / "shard.distcp").write_bytes(name.encode() * 64)
    script = recipes.job_script(
        recipe,
        release,
        recipes.EntrypointArgs(mount_path=mount, run_name=run, paths=paths, start_from="old-run/step_40"),
    )
    # A `cp` killed after the first directory: it copies `a` only, then dies.
    killed = tmp_path / "killed-bin"
    killed.mkdir()
    (killed / "cp").write_text(
        '#!/bin/sh\nmkdir -p "$4/policy" && /bin/cp -a -l "$3/policy/a" "$4/policy/"\nkill -9 $$\n'
    )
    (killed / "cp").chmod(0o755)
    first = subprocess.run(
        ["/bin/sh", "-c", script], env={**env, "PATH": f"{killed}:{env['PATH']}"}, capture_output=True, timeout=60
    )
    dest = Path(recipes.checkpoint_dir(mount, run))
    assert first.returncode != 0 and not list(dest.glob("step_*")), sorted(p.name for p in dest.iterdir())
    subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, timeout=60, check=True)
    copied = sorted(p.relative_to(dest / "step_40").as_posix() for p in (dest / "step_40").rglob("*.distcp"))
    assert copied == ["policy/a/shard.distcp", "policy/b/shard.distcp", "policy/c/shard.distcp"]
    assert [p.name for p in dest.iterdir()] == ["step_40"]
