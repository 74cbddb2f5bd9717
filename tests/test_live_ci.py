"""The live-cloud workflow (.github/workflows/live-cloud.yml) on paper: its shape (schedule and dispatch only, one
run at a time, credentials only in the protected environment on main, a cleanup that always runs, every stack job
bounded in time) and its scripts' decisions (tools/live_ci.py) on recorded CLI outputs (tests/reference/live_ci/,
shapes from the Pulumi CLI's and KubeRay's sources) and on records the real pod programs write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pod_programs import attempts as attempts_program
from pod_programs import export_checkpoints
from pod_programs import gate_checks as gc
from synth import engine
from tests import k8s_validation
from tools import live_ci

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "live-cloud.yml"
RECORDED = Path(__file__).resolve().parent / "reference" / "live_ci"
STACK = "organization/ci-live"
DAILY = "43 4 * * *"


def recorded(name: str):
    return json.loads((RECORDED / name).read_text())


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def triggers(wf: dict) -> dict:
    return dict(wf.get("on", wf.get(True)))


def holds_credentials(job: dict) -> bool:
    text = yaml.safe_dump(job)
    return "secrets." in text or (job.get("permissions") or {}).get("id-token") == "write"


# --- the workflow's shape -------------------------------------------------------------------------------------
def test_it_runs_weekly_daily_as_janitor_and_on_dispatch_and_never_on_code_from_a_pull_request():
    on = triggers(workflow())
    assert set(on) == {"schedule", "workflow_dispatch"}
    crons = [s["cron"] for s in on["schedule"]]
    assert crons == ["17 5 * * 1", DAILY]  # Mondays; the janitor every day
    assert on["workflow_dispatch"]["inputs"]["janitor_only"]["type"] == "boolean"


def test_one_run_at_a_time_and_a_running_one_is_never_cancelled_by_the_next():
    assert workflow()["concurrency"] == {"group": "live-cloud", "cancel-in-progress": False}


def test_credentials_only_in_the_protected_environment_and_only_on_main():
    wf = workflow()
    credentialed = {name for name, job in wf["jobs"].items() if holds_credentials(job)}
    assert credentialed == {"live", "cleanup"}
    for name in credentialed:
        job = wf["jobs"][name]
        assert job["environment"] == "live-cloud", name
        assert "github.ref == 'refs/heads/main'" in job["if"], name
    assert "plan" not in credentialed and "id-token" not in str(wf["jobs"]["plan"].get("permissions", {}))
    assert "assertion.environment == 'live-cloud' && assertion.ref == 'refs/heads/main'" in WORKFLOW.read_text()


def test_the_cleanup_always_runs_after_the_run_and_the_daily_schedule_runs_only_the_cleanup():
    jobs = workflow()["jobs"]
    cleanup, live = jobs["cleanup"], jobs["live"]
    assert cleanup["if"].startswith("always()") and set(cleanup["needs"]) == {"plan", "live"}
    assert f"github.event.schedule != '{DAILY}'" in live["if"] and "inputs.janitor_only" in live["if"]
    assert live["needs"] == "plan"  # a refused cost statement stops the run before any credential
    for name in ("live", "cleanup"):
        runs = [s.get("run", "") for s in jobs[name]["steps"]]
        assert any("tools.live_ci janitor" in r for r in runs), name
    runs = [s.get("run", "") for s in live["steps"]]
    janitor = next(i for i, r in enumerate(runs) if "tools.live_ci janitor" in r)
    up = next(i for i, r in enumerate(runs) if r.startswith("pulumi up"))
    assert janitor < up  # what an earlier run left goes first
    (step,) = [s for s in cleanup["steps"] if "tools.live_ci janitor" in s.get("run", "")]
    assert step["env"]["PULUMI_K8S_DELETE_UNREACHABLE"] == "true"


def test_every_job_is_bounded_in_time_and_the_stated_hours_are_those_of_the_jobs_that_hold_the_stack():
    wf = workflow()
    assert all("timeout-minutes" in job for job in wf["jobs"].values())
    assert (
        live_ci.stack_hours(wf)
        == (wf["jobs"]["live"]["timeout-minutes"] + wf["jobs"]["cleanup"]["timeout-minutes"]) / 60
    )
    broken = {"jobs": {"live": {}, "cleanup": {"timeout-minutes": 60}}}
    with pytest.raises(ValueError, match="unbounded"):
        live_ci.stack_hours(broken)


def test_the_run_uses_the_google_auth_action_pinned_like_the_pull_request_workflow():
    text = WORKFLOW.read_text()
    pr = (ROOT / ".github" / "workflows" / "pull-request.yml").read_text()
    pin = "google-github-actions/auth@c200f3691d83b41bf9bbd8638997a462592937ed  # v2.1.13"
    assert text.count(pin) == 2 and pin in pr


def test_the_stack_file_is_no_shipped_stack_and_no_user_deploys_it():
    # Not beside Pulumi.yaml: no user stack, not in the sweeps or `make synth-all`; the workflow copies it there.
    assert "ci-live" not in engine.available_stacks()
    assert workflow()["env"]["STACK_FILE"] == ".github/live-cloud/Pulumi.ci-live.yaml"
    assert (ROOT / workflow()["env"]["STACK_FILE"]).exists()


# --- cost --------------------------------------------------------------------------------------------------------
def _estimate(per_model: dict) -> dict:
    return {"perHourByCapacityModel": per_model}


def test_the_cost_statement_takes_the_dearest_model_of_the_chain_and_never_the_reference():
    est = _estimate(
        {
            "spot": {"knownUsd": 35.40, "unknown": []},
            "flex-start": {"knownUsd": 45.40, "unknown": []},
            "list-price": {
                "knownUsd": 0.10,
                "unknown": ["GPU nodes (1 x a3-ultragpu-8g) at the list price (reference)"],
            },
        }
    )
    s = live_ci.cost_statement(est, 4.0)
    assert (s.model, s.usd) == ("flex-start", pytest.approx(181.60))
    ok, text = live_ci.cost_markdown(s, 200.0)
    assert ok and "at most $181.60: $45.40/h (GPUs on flex-start" in text
    refused, text = live_ci.cost_markdown(s, 150.0)
    assert not refused and "above the budget of $150.00" in text


def test_a_run_whose_cost_has_an_unknown_line_does_not_start():
    est = _estimate({"spot": {"knownUsd": 0.10, "unknown": ["Managed Lustre (9000 GiB, tier 1000)"]}})
    s = live_ci.cost_statement(est, 4.0)
    assert s.usd is None and s.unknown == ("Managed Lustre (9000 GiB, tier 1000)",)
    ok, text = live_ci.cost_markdown(s, None)
    assert not ok and "CI_LIVE_PRICES" in text


# --- janitor -----------------------------------------------------------------------------------------------------
def test_no_stack_no_resources_nothing_to_do():
    assert not live_ci.janitor_plan(recorded("stack-ls-other.json"), None, STACK).found
    plan = live_ci.janitor_plan(recorded("stack-ls-idle.json"), recorded("export-destroyed.json"), STACK)
    assert plan.found and plan.nothing and live_ci.janitor_commands(plan, STACK) == []


def test_a_deployed_stack_has_its_bucket_emptied_then_is_destroyed():
    plan = live_ci.janitor_plan(recorded("stack-ls-idle.json"), recorded("export-deployed.json"), STACK)
    assert (plan.cancel, plan.refresh, plan.destroy, plan.orphans) == (False, False, True, [])
    assert live_ci.janitor_commands(plan, STACK) == [
        ["gcloud", "storage", "rm", "--recursive", "--all-versions", "gs://nemo-ci-live-ci-project-4711/**"],
        ["pulumi", "destroy", "--yes", "--skip-preview", "--stack", STACK],
    ]


def test_a_stack_left_by_a_cancelled_up_is_unlocked_reconciled_destroyed_and_its_lost_creates_reported():
    plan = live_ci.janitor_plan(recorded("stack-ls-locked.json"), recorded("export-interrupted.json"), STACK)
    assert plan.cancel and plan.refresh and plan.destroy and plan.bucket is None
    assert plan.orphans == [
        "urn:pulumi:ci-live::nemo-rl-gke::nemo-rl-gke:infra:GkeCluster$gcp:container/cluster:Cluster::cluster "
        "(name nemo-ci-live)",
        "urn:pulumi:ci-live::nemo-rl-gke::nemo-rl-gke:infra:LustreFilesystem$gcp:lustre/instance:Instance::lustre "
        "(name nemo-ci-live-lustre)",
    ]
    assert [c[:2] for c in live_ci.janitor_commands(plan, STACK)] == [
        ["pulumi", "cancel"],
        ["pulumi", "refresh"],
        ["pulumi", "destroy"],
    ]
    assert "--clear-pending-creates" in live_ci.janitor_commands(plan, STACK)[1]


def test_the_stack_matches_by_the_names_the_cli_prints():
    for printed in ("ci-live", "organization/ci-live", "organization/nemo-rl-gke/ci-live"):
        assert live_ci.stack_summary([{"name": printed}], STACK) == {"name": printed}
    assert live_ci.stack_summary([{"name": "other-org/ci-live"}, {"name": "organization/ci-preview"}], STACK) is None


class Replay:
    """The CLIs as recorded: each command's output in order; records the commands."""

    def __init__(self, outputs: dict[tuple[str, ...], list[str]]):
        self.outputs, self.calls = {k: list(v) for k, v in outputs.items()}, []

    def __call__(self, cmd: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(cmd)
        key = tuple(cmd[:3])
        stdout = self.outputs[key].pop(0) if self.outputs.get(key) else ""
        return subprocess.CompletedProcess(cmd, 0, stdout=stdout)


def _text(name: str) -> str:
    return (RECORDED / name).read_text()


def test_the_janitor_destroys_and_succeeds_once_the_state_is_empty():
    replay = Replay(
        {
            ("pulumi", "stack", "ls"): [_text("stack-ls-idle.json"), _text("stack-ls-idle.json")],
            ("pulumi", "stack", "export"): [_text("export-deployed.json"), _text("export-destroyed.json")],
        }
    )
    assert live_ci.janitor(STACK, run=replay) == 0
    assert ["pulumi", "destroy", "--yes", "--skip-preview", "--stack", STACK] in replay.calls


def test_the_janitor_fails_on_interrupted_creates_even_after_a_clean_destroy(capsys):
    replay = Replay(
        {
            ("pulumi", "stack", "ls"): [_text("stack-ls-locked.json"), _text("stack-ls-idle.json")],
            ("pulumi", "stack", "export"): [_text("export-interrupted.json"), _text("export-destroyed.json")],
        }
    )
    assert live_ci.janitor(STACK, run=replay) == 1
    assert "nemo-ci-live-lustre" in capsys.readouterr().err


def test_the_janitor_fails_when_resources_remain():
    replay = Replay(
        {
            ("pulumi", "stack", "ls"): [_text("stack-ls-idle.json"), _text("stack-ls-idle.json")],
            ("pulumi", "stack", "export"): [_text("export-deployed.json"), _text("export-deployed.json")],
        }
    )
    assert live_ci.janitor(STACK, run=replay) == 1


# --- the run's result --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("state", ["running", "succeeded", "failed"])
def test_the_recorded_rayjobs_are_valid_for_both_kuberay_crds(state):
    k8s_validation.validate_crd(recorded(f"rayjob-{state}.json"))


def test_only_a_complete_and_succeeded_rayjob_ends_the_wait_well():
    assert live_ci.rayjob_state(recorded("rayjob-running.json"))[:2] == (False, False)
    assert live_ci.rayjob_state(recorded("rayjob-succeeded.json"))[:2] == (True, True)
    terminal, ok, line = live_ci.rayjob_state(recorded("rayjob-failed.json"))
    assert (terminal, ok) == (True, False) and "AppFailed" in line


def _attempts(tmp_path: Path, monkeypatch, code: int) -> list[dict]:
    """The attempts record the real pod program writes for one attempt whose step exits with `code` (the capacity is
    there at once)."""
    monkeypatch.setattr(attempts_program, "wait_for_capacity", lambda *a: (True, 0.0))
    log = tmp_path / "attempts.jsonl"
    step = [sys.executable, "-c", f"import sys; sys.exit({code})"]
    argv = ["--attempts", "1", "--log", str(log), "--amount", "8", "--capacity-wait-seconds", "1"]
    attempts_program.main([*argv, "--", *step])
    return [json.loads(line) for line in log.read_text().splitlines()]


def _gate(passed: bool) -> dict:
    checks = [
        gc.threshold_check("nccl.all_reduce.large_busbw", 412.0 if passed else 87.3, 200.0),
        *gc.network_checks(gc.NcclLogFacts(), expected_net="gIB", nodes=1, nics_per_node=8),
    ]
    return gc.summary(checks, {"nodes": 1, "gpus_per_node": 8, "gpu_type": "nvidia-h200-141gb"})


def _export(tmp_path: Path, steps: tuple[int, ...]) -> dict:
    run, dest = tmp_path / "checkpoints" / "run", tmp_path / "bucket" / "exports" / "run"
    for n in steps:
        (run / f"step_{n}" / "policy").mkdir(parents=True)
        (run / f"step_{n}" / "policy" / "weights.bin").write_bytes(b"w" * 1024)
    (tmp_path / "bucket").mkdir(exist_ok=True)  # the mount point the export Job's volume provides
    argv = ["export", "--checkpoints", str(run), "--destination", str(dest), "--root", str(tmp_path / "bucket")]
    assert export_checkpoints.main(argv) == 0
    return json.loads((dest / export_checkpoints.MANIFEST).read_text())


def test_a_run_that_gated_trained_two_steps_and_exported_passes(tmp_path, monkeypatch):
    attempts = _attempts(tmp_path, monkeypatch, 0)
    assert live_ci.run_verdict(attempts, _gate(True), _export(tmp_path, (1, 2)), steps=2) == []


def test_each_way_a_run_can_fall_short_is_named(tmp_path, monkeypatch):
    failed = _attempts(tmp_path, monkeypatch, 1)
    problems = live_ci.run_verdict(failed, _gate(False), _export(tmp_path, (1,)), steps=2)
    assert [p.split(":")[0] for p in problems] == ["attempts", "readiness gate", "export"]
    assert "nccl.all_reduce.large_busbw" in problems[1] and "'step_1', expected 'step_2'" in problems[2]
