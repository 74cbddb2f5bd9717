"""The standing RayCluster is what the cluster is, never what the next job does.

Any change of its pods replaces it (workloads/ray_cluster.py: KubeRay does not roll running pods), which releases
its GPU nodes, pulls the image again and reruns the readiness gate. So the job's settings must not reach its spec:
turning the job or the export on or off, another export destination or bucket, a recipe override (W&B on or off,
the step count) leave the RayCluster exactly as it is. The export is a CPU Job of its own, the W&B netrc an optional
item of the tokens Secret, the workers' offline mode follows prefetchWeights alone.
"""

from __future__ import annotations

import pytest

from synth import compare
from workloads.manifests.kueue import QUEUE_LABEL_PATH
from workloads.ray_cluster import REPLACE_ON_CHANGES

pytestmark = pytest.mark.graph

RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
SECRET = "kubernetes:core/v1:Secret"
REPLICA_FIELDS = ("replicas", "minReplicas", "maxReplicas")


def _spec(r) -> dict:
    assert r.error is None, r.error
    return r.get(RAYCLUSTER, "raycluster").inputs["spec"]


def _workers(r) -> int:
    (group,) = _spec(r)["workerGroupSpecs"]
    return group["replicas"]


@pytest.mark.parametrize(
    "change",
    [
        {"exportCheckpoints": False},
        {"exportDestination": "exports/other"},
        {"exportOptimizer": True},
        {"bucketName": "nemo-other-ckpt-bucket"},
        {"jobOverrides": {"wandb_enabled": True}},
        {"jobOverrides": {"wandb_enabled": False}},
        {"jobOverrides": {"max_num_steps": 5}},
        {"runName": "run-2"},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_standing_raycluster_spec_is_identical_whatever_the_job_and_its_export(synth, stack, change):
    assert _spec(synth(stack, change)) == _spec(synth(stack)), change


def test_standing_raycluster_spec_is_identical_with_the_job_off_at_the_same_worker_count(synth, stack):
    base = synth(stack)
    off = synth(stack, {"jobEnabled": False, "workerReplicas": _workers(base)})
    assert _spec(off) == _spec(base)


def test_a_platform_turning_its_job_off_scales_its_workers_in_place_and_keeps_its_head(synth):
    """Without a job and without workerReplicas the cluster keeps no GPU worker (core/settings/job.py
    standing_workers): only the replica counts change, which KubeRay applies to the running cluster."""
    base, off = synth("dev"), synth("dev", {"jobEnabled": False})
    assert _workers(base) > 0 and _workers(off) == 0
    before, after = compare.of_result(base), compare.of_result(off)
    name = f"{RAYCLUSTER} raycluster"
    changed = {path for path, _, _ in compare._fields(before, after, name)}
    assert changed == {f"spec.workerGroupSpecs[0].{f}" for f in REPLICA_FIELDS}
    verdict = compare.plan(before, after)[name]
    assert verdict.action == "update" and not verdict.replaced, verdict.summary()
    # And back on: the same in-place scale, the head untouched.
    back = compare.plan(after, before)[name]
    assert back.action == "update" and not back.replaced, back.summary()


def test_raycluster_replaces_on_every_spec_field_but_the_worker_replica_counts(synth):
    """A new spec field must be listed, or a change of it would leave the old pods running (KubeRay does not roll
    them); the replica counts are the one field KubeRay applies in place."""
    token_auth = {"kubeRayOperator": "helm", "nemoRlRelease": "v0.7.0", "jobEnabled": False}  # rayTokenAuth: auto
    for r in (synth("dev"), synth("dev", token_auth)):
        reg = r.get(RAYCLUSTER, "raycluster")
        # ... and its queue label (Kueue refuses a new queue on a running cluster: workloads/manifests/kueue.py).
        assert sorted(reg.replace_on_changes) == sorted([QUEUE_LABEL_PATH, *REPLACE_ON_CHANGES])
        spec = reg.inputs["spec"]
        (group,) = spec["workerGroupSpecs"]
        for key in spec:
            assert key == "workerGroupSpecs" or f"spec.{key}" in REPLACE_ON_CHANGES, key
        for key in group:
            assert key in REPLICA_FIELDS or f"spec.workerGroupSpecs[0].{key}" in REPLACE_ON_CHANGES, key
    assert "authOptions" in spec  # the token-auth variant covers the optional field


def test_the_secret_holds_the_wandb_netrc_only_while_the_job_logs_to_wandb(synth):
    """The head mounts the netrc as an optional item in every case; whether the file exists is the Secret's
    content, which updates without touching the cluster."""
    keys = {}
    for wandb in (True, False):
        r = synth("dev", {"jobOverrides": {"wandb_enabled": wandb}})
        assert r.error is None, r.error
        keys[wandb] = set(r.get(SECRET, "tokens").inputs["stringData"])
    assert keys[True] == {"hf-token", "wandb-netrc"} and keys[False] == {"hf-token"}
    assert keys[False] == set(synth("dev", {"jobEnabled": False}).get(SECRET, "tokens").inputs["stringData"])
