"""Every setting with a bad value: one line naming its key, no traceback, nothing registered.

The guide's rule "bad input gets one clear line naming the key and changes nothing, never a traceback" holds only
if no rule runs on a value another rule refused: a refused release looked up by the token rule (`KeyError`), a
refused gpuNodes measured against the subnets and the recipe, a refused prefix turned into a bucket name. So each
case here sets ONE key to a value that must be refused, on a stack that is otherwise valid, and asserts exactly one
problem line, naming that key. `BAD` must hold a case for every config key the models declare: a new setting
without one fails `test_every_setting_key_has_a_bad_value_case`.

Each case also runs without the optional secrets and with the job disabled (the two shapes the issue's
tracebacks came from): there a value may become acceptable, but nothing may raise, and whatever is refused is
refused naming the key and registers nothing.
"""

from __future__ import annotations

import pytest

from core import catalog
from core.settings import config_fields

INT32_ABOVE = str(catalog.K8S_INT32_MAX + 1)

# key -> bad values for the `dev` stack (Standard, standing cluster, NeMo-RL v0.5.0, Gemma 3 on 2 H200 nodes).
BAD: dict[str, tuple] = {
    "prefix": ("Bad_x",),
    "region": ("", "Central US"),
    "zone": ("uscentral1b", "us-east1-b"),
    "lustreOnDestroy": ("keep",),
    "clusterDeletionProtection": ("maybe",),
    "primarySubnetCidr": ("10.0.0.300/20",),
    "podsCidr": ("x",),
    "servicesCidr": ("10.0.0.0/16",),
    "psaCidr": ("10.20.0.0/28",),
    "gvnicSubnetCidr": ("x",),
    "rdmaSubnetCidrs": ('["x"]', "notjson", '["192.168.1.0/24"]'),
    "clusterMode": ("kubernetes",),
    "controlPlane": ("x",),
    "releaseChannel": ("x",),
    "gkeVersion": ("latest",),
    "maintenanceStart": ("3am",),
    # A freeze longer than 30 days holds back node security patches (core.catalog.MAINTENANCE_EXCLUSION_MAX_DAYS).
    "maintenanceExclusionStart": ("tomorrow", "2026-13-01"),
    "maintenanceExclusionDays": (0, 31),
    "systemMachineType": ("$x", "N2 standard"),
    # GKE: 1,000 nodes per node pool per zone (core.catalog.GKE_MAX_NODES_PER_POOL_ZONE, GKE quotas page).
    "systemNodes": (0, 1001),
    "gpuType": ("nvidia-h100",),
    "machineType": ("a4-highgpu-8g",),
    "gpuNodes": (-1, 1001, "x", INT32_ABOVE),
    "gpuDriverVersion": ("x",),
    "capacity": ("[]", '["x"]', '["spot", "spot"]'),
    "reservation": ("UPPER",),
    "reservationStartNodes": (5,),
    "flexStartMaxRunHours": (0, 200),
    "flexStartWaitMinutes": (30, -1),
    "gpuPlacement": ("x",),
    "gpuPlacementDistance": ("x",),
    "computeClass": ("gke-x", "Bad_x"),
    "lustreCapacityGib": (1, 20000),
    "lustreTier": (7,),
    "lustreFilesystem": ("lustre-fs",),
    "lustrePortMode": ("x",),
    "lustreRootSquash": ("maybe",),
    "bucketName": ("$x", "-1"),
    "namespace": ("kube-system", "NeMo"),
    "ksaName": ("Bad_x",),
    "nemoRlRelease": ("v9", "", "$x"),
    "rayVersion": ("2.0.0",),
    "workerReplicas": (-1, 3, INT32_ABOVE),
    "lustreMountPath": ("$x", "lustre", "/usr"),
    "shmSizeGib": (0, 100000),
    "headCpu": (0, 10000),
    "headMemoryGib": (0, 100000),
    # More than the system node's allocatable ephemeral storage (core/node_fit.py), or none.
    "headEphemeralStorageGib": (0, 100000),
    "workerEphemeralStorageGib": (0, 100000),
    "jobEnabled": ("maybe",),
    "jobRecipe": ("x",),
    "jobOverrides": ("[]", '{"x": 1}', '{"num_nodes": 3}', '{"num_nodes": "x"}', '{"model_revision": "main"}'),
    "jobMode": ("x",),
    # Standing cluster: KubeRay refuses a TTL without shutdownAfterJobFinishes and (1.7.0) retries with a
    # clusterSelector (core/settings/job.py _mode_problems); int32 in the RayJob CRD.
    "jobBackoffLimit": (-1, 5, INT32_ABOVE),
    "jobTtlSeconds": (-1, 5, INT32_ABOVE),
    "jobDeadlineSeconds": (-1, INT32_ABOVE),
    "runName": ("a b", "../x"),
    "dashboard": ("maybe",),
    "checkpointBudgetSeconds": (-1, 1),
    "readinessGate": ("x",),
    "gateMinAllReduceBusbw": (-1, 1e9),
    "gateMinAllGatherBusbw": (0, 1e9),
    "gateLustreFraction": (2, 0),
    "gateRerun": ("$x",),
    "authorizedNetworks": ('["x"]', "notjson", str([f"10.{i}.0.0/16" for i in range(101)]).replace("'", '"')),
    "privateEndpoint": ("maybe",),
    "dnsEndpoint": ("maybe",),
    # Empty is the default (the operator's own path); 'kuberay-operator' names pods only kubeRayOperator helm has.
    "rayDashboardPeers": ('["x"]', '["kuberay-operator"]'),
    "rayTokenAuth": ("x", "on"),
    "kubeRayOperator": ("x",),
    "egressFqdnPolicies": ("maybe",),
    "imagePath": ("x",),
    "imageRepository": ("us-central1-docker.pkg.dev/p/r",),
    "warmupHoldSeconds": (10,),
    "prefetchWeights": ("maybe",),
    "prefetchImage": ("x",),
    "exportCheckpoints": ("maybe",),
    "exportDestination": ("gs://other-bucket/x",),
    # Cloud Storage soft delete: 0 or 7..90 days.
    "exportSoftDeleteDays": (-1, 3, 91),
}

CASES = [(k, v) for k, values in BAD.items() for v in values]


def _ids(case) -> str:
    k, v = case
    return f"{k}={str(v)[:24]}"


def _problem_lines(error: str) -> list[str]:
    return [ln.strip()[2:] for ln in error.splitlines() if ln.strip().startswith("- ")]


def _names_key(line: str, k: str) -> bool:
    full = f"nemo-rl-gke:{k}"
    return line.startswith(full + ":") or line.startswith(full + ".")


def test_every_setting_key_has_a_bad_value_case():
    missing = sorted(set(config_fields()) - set(BAD))
    assert not missing, f"settings without a bad-value case in BAD: {missing}"
    assert not sorted(set(BAD) - set(config_fields())), "BAD names keys that are not settings"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_one_bad_setting_is_one_line_naming_its_key_and_registers_nothing(synth, case):
    k, value = case
    r = synth("dev", {k: value})
    assert r.error is not None, f"{k}={value!r} was accepted"
    assert "Traceback" not in r.error
    lines = _problem_lines(r.error)
    assert len(lines) == 1 and _names_key(lines[0], k), (
        f"{k}={value!r}: expected one line naming nemo-rl-gke:{k}, got:\n" + "\n".join(lines)
    )
    assert r.resources == []


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_bad_settings_never_raise_without_optional_secrets_or_with_the_job_disabled(synth, case):
    k, value = case
    for overrides in ({k: value}, {k: value, "jobEnabled": "false"} if k != "jobEnabled" else {k: value}):
        # engine.run raises what the program raises: a traceback fails the test here.
        r = synth("dev", overrides, {"rayAuthToken": None, "wandbApiKey": None})
        if r.error is None:
            continue
        assert "Traceback" not in r.error
        assert r.resources == []
        named = [ln for ln in _problem_lines(r.error) if _names_key(ln, k)]
        others = [ln for ln in _problem_lines(r.error) if not _names_key(ln, k)]
        # Besides the key's own line, only the missing W&B key may be reported (the dev recipe logs to W&B).
        assert all(ln.startswith("nemo-rl-gke:wandbApiKey:") for ln in others), others
        assert named or others, r.error


def test_the_issue_examples_are_one_line_each(synth):
    # Found by review: an unknown nemoRlRelease without rayAuthToken raised KeyError; workerReplicas 0 / gpuNodes 0 with
    # jobEnabled false raised "replicas must be at least 1" while building the warmup placeholders.
    r = synth("dev", {"nemoRlRelease": "v9.9.9"}, {"rayAuthToken": None})
    assert _problem_lines(r.error) == [
        "nemo-rl-gke:nemoRlRelease: unknown release 'v9.9.9'; valid: v0.4.0, v0.5.0, v0.7.0"
    ]
    for k in ("gpuNodes", "workerReplicas"):
        r = synth("dev", {k: 0, "jobEnabled": "false"})
        assert r.error is None, r.error
        # No GPU worker, nothing to warm: the placeholder Job is not rendered (the pre-pull DaemonSet is).
        assert not [x for x in r.of_type("kubernetes:batch/v1:Job") if x.name == "placeholders"]
        assert [x for x in r.of_type("kubernetes:apps/v1:DaemonSet") if x.name == "cpu-prepull"]


@pytest.mark.parametrize("stack", ["codelab", "autopilot"])
def test_the_same_bad_values_on_the_other_shipped_stacks_never_raise_and_stay_on_their_key(synth, stack):
    # A value bad on dev may be fine elsewhere (a flex-start wait on Autopilot); whatever is refused is refused by
    # lines about the swept key only (naming it, or, for a fit between two settings, mentioning it).
    for k, value in CASES:
        r = synth(stack, {k: value})
        if r.error is None:
            continue
        assert "Traceback" not in r.error and r.resources == []
        lines = _problem_lines(r.error)
        assert lines and all(_names_key(ln, k) or f"nemo-rl-gke:{k}" in ln for ln in lines), (k, value, lines)
        assert len(lines) == 1, (k, value, lines)
