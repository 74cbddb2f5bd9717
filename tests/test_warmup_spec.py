"""GPU warmup objects: valid for the API server, shaped exactly like the Ray workers they stand in for, at a
priority the cluster autoscaler still scales for, and a placeholder command that leaves quietly when preempted."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from core import catalog
from tests.k8s_validation import validate_core
from workloads.manifests import warmup as w

NEMO = catalog.NEMO_RL_RELEASES["v0.4.0"].image


def worker_template(result):
    ray = next(r for r in result.kubernetes_objects() if r.type == "kubernetes:ray.io/v1:RayCluster")
    return ray.get("spec.workerGroupSpecs.0.template.spec"), ray.get("spec.headGroupSpec.template.spec")


def worker_annotations(result):
    ray = next(r for r in result.kubernetes_objects() if r.type == "kubernetes:ray.io/v1:RayCluster")
    return ray.get("spec.workerGroupSpecs.0.template.metadata.annotations")


@pytest.mark.graph
@pytest.mark.parametrize("stack_name", ["codelab", "dev", "autopilot"])
def test_placeholders_carry_the_ray_workers_placement_and_resources(synth, stack_name):
    worker, _ = worker_template(synth(stack_name))
    job = w.placeholder_job(
        name="warmup",
        namespace="nemo-rl",
        worker_pod_spec=worker,
        image=NEMO,
        replicas=8,
        priority_class_name="nemo-rl-gke-warmup",
        worker_annotations=worker_annotations(synth(stack_name)),
    )
    validate_core(job)
    assert job["spec"]["template"]["metadata"]["annotations"] == worker_annotations(synth(stack_name))
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env and all("valueFrom" not in e for e in env)
    pod = job["spec"]["template"]["spec"]
    for key in ("nodeSelector", "tolerations", "affinity"):
        assert pod.get(key) == worker.get(key)
    assert pod["containers"][0]["resources"] == worker["containers"][0]["resources"]
    assert "nvidia.com/gpu" in pod["containers"][0]["resources"]["limits"]
    # Nothing that would make it wait for Lustre or touch a secret.
    assert "volumes" not in pod and pod["automountServiceAccountToken"] is False
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 8


@pytest.mark.unit
def test_priority_class_scales_nodes_up_yet_yields_to_default_priority_pods():
    pc = w.priority_class("nemo-rl-gke-warmup")
    validate_core(pc)
    # Below the autoscaler's expendable cutoff a pending Pod "doesn't cause scale up".
    assert pc["value"] >= catalog.AUTOSCALER_EXPENDABLE_PRIORITY_CUTOFF
    assert pc["value"] < 0  # Ray pods (no class, priority 0) preempt it
    assert pc["globalDefault"] is False and pc["preemptionPolicy"] == "Never"


@pytest.mark.graph
def test_cpu_prepull_daemonset_runs_on_the_head_nodes_and_is_valid(synth):
    _, head = worker_template(synth("codelab"))
    image = head["containers"][0]["image"]  # the head's: the stack's registry copy of the release (streaming)
    assert image.endswith(f"/{catalog.NEMO_RL_IMAGE_NAME}:v0.4.0") and "-docker.pkg.dev/" in image
    ds = w.cpu_prepull_daemonset(
        name="image-prepull", namespace="nemo-rl", image=image, node_selector=head["nodeSelector"]
    )
    validate_core(ds)
    spec = ds["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == head["nodeSelector"]
    assert spec["initContainers"][0]["image"] == image
    assert spec["containers"][0]["image"] == catalog.PAUSE_IMAGE


@pytest.mark.graph
def test_placeholder_command_exits_zero_on_sigterm_and_holds_otherwise():
    cmd = w.placeholder_command(30)
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        time.sleep(0.5)
        assert proc.poll() is None  # holding the node
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # what the kubelet sends PID 1 of a preempted pod
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
    finally:
        # In a container the runtime ends the rest of the pod with PID 1; here, end the background `sleep`.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert subprocess.run(w.placeholder_command(1), timeout=10).returncode == 0


@pytest.mark.unit
def test_placeholder_job_refuses_zero_replicas():
    with pytest.raises(ValueError):
        w.placeholder_job(
            name="x",
            namespace="y",
            worker_pod_spec={"containers": [{"resources": {}}]},
            image=NEMO,
            replicas=0,
            priority_class_name="p",
        )
