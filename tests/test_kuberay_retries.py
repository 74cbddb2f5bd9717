"""Retries as KubeRay runs them, checked against KubeRay's own source at every version the GKE add-on may run
(it publishes none): the RayJob validation of v1.4.2, v1.5.1, v1.6.0 and v1.7.0 and the retry decision of v1.4.2 and
v1.7.0, kept unmodified in tests/oracles/kuberay (SOURCES.md there). What we render must be accepted by all of them,
and `jobBackoffLimit` must mean the same number of attempts in both job modes."""

from __future__ import annotations

from pathlib import Path

import pytest

ORACLES = Path(__file__).parent / "oracles" / "kuberay"
VALIDATION_TAGS = ("v1.4.2", "v1.5.1", "v1.6.0", "v1.7.0")
CONTROLLER_TAGS = ("v1.4.2", "v1.7.0")
RAYJOB = "kubernetes:ray.io/v1:RayJob"
SELECTOR_REFUSAL = "BackoffLimit is incompatible with ClusterSelector mode"


def source(tag: str, function: str) -> str:
    return (ORACLES / tag / f"{function}.go.txt").read_text()


def block(src: str, head: str) -> str:
    """The body of the Go block that starts with `head` (which ends at its opening brace), braces matched."""
    start = src.index(head) + len(head)
    depth = 1
    for i in range(start, len(src)):
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            return src[start:i]
    raise ValueError(f"unclosed block {head!r}")


@pytest.mark.graph
def test_kuberay_refuses_retries_on_a_selected_cluster_from_v1_6_0_and_we_never_render_them(synth):
    refused = {
        t: SELECTOR_REFUSAL in block(source(t, "ValidateRayJobSpec"), "if isClusterSelectorMode {")
        for t in VALIDATION_TAGS
    }
    assert refused == {"v1.4.2": False, "v1.5.1": False, "v1.6.0": True, "v1.7.0": True}
    # Standing cluster: a clusterSelector and never a backoffLimit, valid at every version; the retries are the
    # entrypoint's own loop instead.
    # codelab queues its own job (own-cluster by default there); on its standing cluster when asked.
    for stack, overrides in (("dev", None), ("codelab", {"jobMode": "standing-cluster"}), ("autopilot", None)):
        spec = synth(stack, overrides).get(RAYJOB, "rayjob").get("spec")
        assert "clusterSelector" in spec and "backoffLimit" not in spec, stack
        assert "attempts.py --attempts " in spec["entrypoint"], stack


@pytest.mark.graph
def test_an_own_cluster_rayjob_uses_the_one_submission_mode_that_takes_retries_at_every_version(synth):
    for tag in VALIDATION_TAGS:
        src = source(tag, "ValidateRayJobSpec")
        # InteractiveMode refuses backoffLimit > 0 at every tag; K8sJobMode is the CRD default.
        interactive = src.index("rayv1.InteractiveMode")
        assert "BackoffLimit" in src[interactive : interactive + 200], tag
    # The experiments' jobs and codelab's own, queued: own-cluster.
    for stack in ("codelab-exp1", "codelab-exp2", "codelab"):
        spec = synth(stack).get(RAYJOB, "rayjob").get("spec")
        assert "clusterSelector" not in spec and spec["submissionMode"] == "K8sJobMode"
        assert spec["backoffLimit"] > 0


@pytest.mark.unit
@pytest.mark.parametrize("tag", CONTROLLER_TAGS)
def test_a_backoff_limit_of_n_is_n_plus_one_attempts_and_a_deadline_is_never_retried(tag):
    src = source(tag, "checkBackoffLimitAndUpdateStatusIfNeeded")
    # Each failed attempt counts in status.failed; another attempt while failed < backoffLimit + 1.
    assert "failedCount++" in src
    assert "*rayJob.Status.Failed < *rayJob.Spec.BackoffLimit+1" in src
    retry = block(src, "*rayJob.Status.Failed < *rayJob.Spec.BackoffLimit+1 {")
    assert "rayJob.Status.Reason == rayv1.DeadlineExceeded" in retry and "return" in retry
    assert "JobDeploymentStatusRetrying" in retry


@pytest.mark.graph
def test_job_backoff_limit_gives_the_same_attempts_in_both_modes(synth):
    """KubeRay: backoffLimit N = N + 1 attempts (above); the standing cluster's loop takes N + 1 attempts too."""
    own = synth("codelab-exp1").get(RAYJOB, "rayjob").get("spec")
    assert own["backoffLimit"] == 5  # the stack file's jobBackoffLimit: 6 attempts
    standing = synth("dev", {"jobBackoffLimit": 5}).get(RAYJOB, "rayjob").get("spec")
    assert "attempts.py --attempts 6 " in standing["entrypoint"]
