"""Why the RayJob's submitter must end only with its Ray job: KubeRay's own rule, read from its source.

KubeRay 1.5.0 to 1.7.0 (tests/oracles/kuberay/v1.7.0, byte-identical at each of those tags; absent from 1.4.2) fail a
K8sJobMode RayJob once its submitter Job has finished, Complete or Failed, for 30 s, without asking the Ray job. The
real submitter, on a real Ray cluster whose log stream drops, is in tests/test_submitter_ray.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core import shell

pytestmark = pytest.mark.unit

ORACLE = Path(__file__).parent / "oracles" / "kuberay" / "v1.7.0"


def _go(name: str) -> str:
    return (ORACLE / f"{name}.go.txt").read_text()


def test_kuberay_fails_a_rayjob_30_s_after_its_submitter_ends_whatever_the_ray_job_does():
    consts = _go("rayjob_controller-constants")
    assert re.search(r"DefaultSubmitterFinishedTimeout = 30 \* time\.Second", consts)
    src = _go("checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded")
    # The only ways out before the verdict: the submitter has not finished, or finished under 30 s ago.
    decisions = re.findall(r"if (.+) \{\n\t\treturn false", src)
    assert decisions == ["finishedAt == nil", "time.Now().Before(finishedAt.Add(DefaultSubmitterFinishedTimeout))"]
    assert "jobInfo" not in src and "IsJobTerminal" not in src  # the Ray job's own status is never read
    assert "rayJob.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed" in src
    # "Finished" is either condition of the submitter Job: a submitter that exits 0 counts as much as a failed one.
    finished = _go("getJobFinishedCondition")
    assert "condition.Type == batchv1.JobComplete || condition.Type == batchv1.JobFailed" in finished


def test_the_submitter_reads_only_the_variables_kuberay_gives_a_user_template_and_runs_under_bash_e():
    command = shell.job_submitter_command("sh -c 'true'", unreachable_seconds=60)
    assert command[:3] == ["/bin/bash", "-ce", "--"]  # KubeRay's own submitter shell (GetContainerCommand(["e"]))
    (script,) = command[3:]
    assigned = set(re.findall(r"(?:^|[\s;])([A-Za-z_]\w*)=", script))
    read = set(re.findall(r"\$\{?([A-Za-z_]\w*)", script))
    assert read - assigned == {"RAY_DASHBOARD_ADDRESS", "RAY_JOB_SUBMISSION_ID"}
    # It waits out an unreachable dashboard for the time given, in polls, then gives the Job's next pod its turn.
    found = re.search(r'"\$n" -gt (\d+)', script)
    assert found is not None
    polls = int(found.group(1))
    assert polls * shell.SUBMITTER_POLL_SECONDS >= 60
