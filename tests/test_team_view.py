"""`python -m cli.team` on recorded cluster objects (tests/reference/team_view/, their shapes and sources in
SOURCES.md there): every job's Workload state, its position from Kueue's visibility API, its attempts, the GPUs it
holds and its GPU-hours so far; the RayJobs recorded validate against both KubeRay CRDs."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from cli import team
from tests.k8s_validation import validate_any

REF = Path(__file__).parent / "reference" / "team_view"
NOW = datetime(2026, 12, 15, 12, 0, 0, tzinfo=timezone.utc)


def recorded(name: str) -> dict:
    return json.loads((REF / name).read_text())


def fake_kubectl(pending_readable: bool = True):
    calls = []

    def run(args: list[str]) -> str:
        calls.append(args)
        if args[:2] == ["get", "workload.kueue.x-k8s.io"]:
            return (REF / "workloads.json").read_text()
        if args[:2] == ["get", "rayjob.ray.io"]:
            return (REF / "rayjobs.json").read_text()
        if args[:2] == ["get", "--raw"] and args[2] in (
            team.PENDING_PATH.format("nemo-rl"),
            team.LOCAL_PENDING_PATH.format("nemo-rl-codelab-exp3", "nemo-rl"),
        ):
            if not pending_readable:
                raise team.Refused('kubectl get --raw: Error from server (Forbidden): ... "pendingworkloads"')
            return (REF / "pendingworkloads.json").read_text()
        raise AssertionError(f"unexpected kubectl {args}")

    return run, calls


def by_job(found):
    return {r.job: r for r in found}


@pytest.mark.unit
def test_the_recorded_rayjobs_are_valid_rayjobs_of_both_kuberay_crds():
    for job in recorded("rayjobs.json")["items"]:
        validate_any(job)


@pytest.mark.unit
def test_each_job_shows_its_state_position_attempts_gpus_and_gpu_hours():
    found = by_job(
        team.rows(
            recorded("workloads.json"), recorded("rayjobs.json"), recorded("pendingworkloads.json"), NOW, "nemo-rl"
        )
    )
    platform = found["RayJob nemo-codelab-grpo"]
    assert (platform.state, platform.why, platform.gpus_held, platform.gpus_asked) == ("finished", "Succeeded", 0, 64)
    assert platform.gpu_hours == pytest.approx(5 * 64)  # admitted 02:00, finished 07:00, 8 nodes x 8 GPUs
    assert platform.attempts == 1 and platform.stack == "codelab"
    exp1, exp2, exp3 = (found[f"RayJob nemo-codelab-exp{i}-grpo"] for i in (1, 2, 3))
    assert (exp1.state, exp1.gpus_held, exp1.attempts, exp1.position) == ("admitted", 32, 1, None)
    assert exp1.gpu_hours == pytest.approx((4 * 3600 + 59 * 60 + 30) / 3600 * 32)  # since 07:00:30
    assert (exp2.gpus_held, exp2.attempts) == (16, 2)  # one failed attempt (KubeRay's status.failed) and this one
    assert exp3.state == "pending"
    # Kueue's own words (flavorassigner.go:240-243, :1368 @v0.19.2).
    assert exp3.why == (
        "couldn't assign flavors to pod set gpu-workers: insufficient unused quota for nvidia.com/gpu in flavor "
        "nemo-rl-gpu, 16 more needed"
    )
    assert (exp3.position, exp3.gpus_held, exp3.gpus_asked, exp3.gpu_hours, exp3.attempts) == (1, 0, 32, 0, 0)
    standing = found["RayCluster nemo-codelab-ray"]
    assert (standing.state, standing.gpus_held, standing.attempts) == ("admitted", 0, None)
    # Admitted first, the waiting job by position, the finished last.
    order = [
        r.job
        for r in team.rows(
            recorded("workloads.json"), recorded("rayjobs.json"), recorded("pendingworkloads.json"), NOW, "nemo-rl"
        )
    ]
    assert order[-2:] == ["RayJob nemo-codelab-exp3-grpo", "RayJob nemo-codelab-grpo"]


@pytest.mark.unit
def test_the_cli_prints_the_table_and_what_the_queue_holds(capsys):
    run, calls = fake_kubectl()
    assert team.main([], run=run, now=NOW) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "JOB",
        "STACK",
        "STATE",
        "POSITION",
        "PRIORITY",
        "ATTEMPTS",
        "EVICTIONS",
        "GPUS",
        "HELD/ASKED",
        "GPU-HOURS",
        "WHY",
    ]
    (exp3,) = [line for line in lines if "nemo-codelab-exp3-grpo" in line]
    assert " pending " in exp3 and " 0/32 " in exp3 and exp3.endswith("16 more needed")
    assert lines[-1] == "48 GPUs held, 1 job(s) waiting, 559.6 GPU-hours so far"
    assert ["get", "--raw", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nemo-rl/pendingworkloads"] in calls


@pytest.mark.unit
def test_without_the_right_to_the_visibility_api_positions_are_unknown_and_it_says_so(capsys):
    run, _ = fake_kubectl(pending_readable=False)
    assert team.main([], run=run, now=NOW) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("; queue positions unreadable (visibility API)")


@pytest.mark.unit
def test_json_lines_carry_every_column(capsys):
    run, _ = fake_kubectl()
    assert team.main(["--json"], run=run, now=NOW) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (exp3,) = [r for r in rows if r["job"] == "RayJob nemo-codelab-exp3-grpo"]
    assert exp3["position"] == 1 and exp3["gpus_asked"] == 32


@pytest.mark.unit
def test_a_refused_read_is_one_line_and_exit_one(capsys):
    def refuses(args):
        raise team.Refused("kubectl get workload.kueue.x-k8s.io: error: the server doesn't have a resource type")

    assert team.main([], run=refuses, now=NOW) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: kubectl get workload.kueue.x-k8s.io")


@pytest.mark.unit
def test_a_price_per_gpu_hour_gives_each_job_and_the_queue_their_cost(capsys):
    run, _ = fake_kubectl()
    assert team.main(["--usd-per-gpu-hour", "10"], run=run, now=NOW) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ["USD", "WHY"]
    (platform,) = [line for line in lines if "RayJob nemo-codelab-grpo " in line]
    assert platform.split()[-2:] == ["3,200", "Succeeded"]  # 320 GPU-hours
    assert lines[-1] == "48 GPUs held, 1 job(s) waiting, 559.6 GPU-hours so far ($5,596)"


@pytest.mark.graph
def test_the_platforms_cost_estimate_prices_the_gpu_hours(synth, tmp_path, capsys):
    """The costEstimate output's spot GPU node price (here a user price: the dated catalog has none for B200) over
    GPUs per node; a model without a price is one line and exit 1."""
    estimate = synth("codelab", {"prices": {"gpuNodeSpot": 40.0}}).outputs["costEstimate"]
    (tmp_path / "cost.json").write_text(json.dumps(estimate))
    run, _ = fake_kubectl()
    assert team.main(["--cost-estimate", str(tmp_path / "cost.json"), "--capacity", "spot"], run=run, now=NOW) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(f"(${559.6 * 40.0 / 8:,.0f})")
    assert team.main(["--cost-estimate", str(tmp_path / "cost.json"), "--capacity", "flex-start"], run=run) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no flex-start price per GPU node" in err


@pytest.mark.unit
def test_an_experimenter_reads_only_their_namespace_and_its_local_queues_positions(capsys):
    """With --namespace every read stays in the experiment namespace its Role covers (Workloads, RayJobs, its
    LocalQueue's pending list): no --all-namespaces, no ClusterQueue endpoint, which a namespaced Role cannot grant."""
    run, calls = fake_kubectl()
    assert team.main(["--namespace", "nemo-rl-codelab-exp3", "--json"], run=run, now=NOW) == 0
    assert calls == [
        ["get", "workload.kueue.x-k8s.io", "--namespace", "nemo-rl-codelab-exp3", "-o", "json"],
        ["get", "rayjob.ray.io", "--namespace", "nemo-rl-codelab-exp3", "-o", "json"],
        [
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/nemo-rl-codelab-exp3/localqueues/nemo-rl/"
            "pendingworkloads",
        ],
    ]
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (exp3,) = [r for r in rows if r["job"] == "RayJob nemo-codelab-exp3-grpo"]
    assert exp3["position"] == 1
