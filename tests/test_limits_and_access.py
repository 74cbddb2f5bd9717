"""Limits GCP, GKE and KubeRay enforce, checked at preview, and how the control plane is reached. Each test names the
rule's source; the facts live in core/catalog/."""

from __future__ import annotations

import json
import typing

import pytest

from core import catalog
from core.settings import config_fields
from synth import render
from tests.k8s_validation import validate_any

pytestmark = pytest.mark.graph

RAYJOB = "kubernetes:ray.io/v1:RayJob"


def _lines(error: str) -> list[str]:
    return [ln.strip()[2:] for ln in error.splitlines() if ln.strip().startswith("- ")]


def _cidrs(n: int) -> str:
    return json.dumps([f"10.{i // 256}.{i % 256}.0/24" for i in range(n)])


def test_gpu_and_system_pools_stay_within_gkes_nodes_per_pool_per_zone(synth):
    # GKE "Quotas and limits": "Nodes per node pool zone: 1,000"; every pool here lives in `zone`.
    for k in ("gpuNodes", "systemNodes"):
        r = synth("dev", {k: catalog.GKE_MAX_NODES_PER_POOL_ZONE + 1})
        assert _lines(r.error) and all(ln.startswith(f"nemo-rl-gke:{k}:") for ln in _lines(r.error)), r.error
        assert "1000 nodes per node pool per zone" in r.error
        assert r.resources == []


def test_authorized_networks_stay_within_gkes_50_public_and_100_private(synth):
    # GKE "Add authorized networks for control plane access", Limitations: "Public clusters can have up to 50
    # authorized network CIDR ranges; private clusters can have up to 100."
    public = {"privateEndpoint": "false"}
    assert synth("dev", {"authorizedNetworks": _cidrs(50), **public}).error is None
    r = synth("dev", {"authorizedNetworks": _cidrs(51), **public})
    assert _lines(r.error) == [
        "nemo-rl-gke:authorizedNetworks: 51 CIDRs exceed GKE's 50 for a cluster whose IP "
        "endpoint is public (nemo-rl-gke:privateEndpoint); merge ranges into larger ones"
    ]
    assert synth("dev", {"authorizedNetworks": _cidrs(100), "privateEndpoint": "true"}).error is None
    r = synth("dev", {"authorizedNetworks": _cidrs(101), "privateEndpoint": "true"})
    assert [ln.split(":")[1] for ln in _lines(r.error)] == ["authorizedNetworks"], r.error


def test_job_ttl_and_retries_with_a_standing_cluster_are_refused_not_dropped(synth):
    # KubeRay ray-operator/controllers/ray/utils/validation.go: v1.4.2 and v1.7.0 refuse TTLSecondsAfterFinished > 0
    # without shutdownAfterJobFinishes; v1.7.0 refuses backoffLimit > 0 with a clusterSelector. The standing-cluster
    # RayJob renders neither, so these values were silently ignored.
    # (from v1.6.0: utils/validation.go, commit 5d59a37b3). A TTL is refused; retries are the entrypoint's own loop
    # instead (recipes.Attempts), never the RayJob's backoffLimit.
    r = synth("dev", {"jobTtlSeconds": 600})
    assert [ln.split(":")[1] for ln in _lines(r.error)] == ["jobTtlSeconds"], r.error
    assert "own-cluster" in r.error and r.resources == []
    r = synth("dev", {"jobBackoffLimit": 5})
    assert r.error is None, r.error
    spec = r.get(RAYJOB, "rayjob").inputs["spec"]
    assert "backoffLimit" not in spec and "clusterSelector" in spec
    assert "attempts.py --attempts 6 " in spec["entrypoint"]
    # Own cluster: both are rendered as asked, with shutdownAfterJobFinishes.
    r = synth("dev", {"jobMode": "own-cluster", "jobTtlSeconds": 600, "jobBackoffLimit": 5})
    assert r.error is None, r.error
    spec = r.get(RAYJOB, "rayjob").inputs["spec"]
    assert (spec["ttlSecondsAfterFinished"], spec["backoffLimit"], spec["shutdownAfterJobFinishes"]) == (600, 5, True)


def _integer_keys() -> list[str]:
    out = []
    for k, (_, _, info) in config_fields().items():
        ann = info.annotation
        if ann is int or int in typing.get_args(ann):
            out.append(k)
    return out


@pytest.mark.parametrize("stack,extra", [("dev", {"jobMode": "own-cluster"}), ("autopilot", {})])
def test_no_integer_setting_renders_outside_its_kubernetes_fields_format(synth, stack, extra):
    # Every integer setting at 2**31: refused naming its key, or every rendered object still validates, int32/int64
    # formats included (Kubernetes API conventions; the CRDs' `format: int32`; tests/k8s_validation.py).
    keys = _integer_keys()
    assert {"jobTtlSeconds", "jobBackoffLimit", "workerReplicas", "warmupHoldSeconds"} <= set(keys)
    for k in keys:
        r = synth(stack, {**extra, k: catalog.K8S_INT32_MAX + 1})
        if r.error is not None:
            assert _lines(r.error) and all(ln.startswith(f"nemo-rl-gke:{k}") for ln in _lines(r.error)), r.error
            assert r.resources == []
            continue
        for res in r.kubernetes_objects():
            validate_any(render.manifest_of(res))


def test_credentials_command_follows_the_endpoint_the_user_can_reach(synth):
    # gcloud container clusters get-credentials: --dns-endpoint for GKE's DNS-based endpoint; --internal-ip for "the
    # private IP address of the cluster endpoint"; the two cannot be combined.
    cmd = lambda o: synth("dev", o).outputs["getCredentialsCommand"]  # noqa: E731
    assert not cmd({"privateEndpoint": "false"}).endswith(("--dns-endpoint", "--internal-ip"))
    assert cmd({}).endswith(" --dns-endpoint")  # the default: private IP endpoint, DNS endpoint open
    closed = cmd({"privateEndpoint": "true", "dnsEndpoint": "false", "authorizedNetworks": '["10.0.0.0/8"]'})
    assert closed.endswith(" --internal-ip") and "--dns-endpoint" not in closed


def test_public_authorized_ranges_with_a_private_endpoint_warn_at_preview(synth):
    # A private IP endpoint takes no public IPs over the internet (GKE "Add authorized networks"): such an entry
    # admits nobody (unless the VPC uses it as privately used public IPs), so preview says so; internal ranges and a
    # public endpoint give no warning.
    r = synth("dev", {"privateEndpoint": "true", "authorizedNetworks": '["10.0.0.0/8", "34.1.0.0/16"]'})
    assert r.error is None, r.error
    warned = [w for w in r.warnings if w.startswith("nemo-rl-gke:authorizedNetworks:")]
    assert len(warned) == 1 and "34.1.0.0/16" in warned[0] and "10.0.0.0/8" not in warned[0]
    assert not [
        w
        for w in synth("dev", {"privateEndpoint": "false", "authorizedNetworks": '["34.1.0.0/16"]'}).warnings
        if "authorizedNetworks" in w
    ]
    assert not [
        w
        for w in synth("dev", {"privateEndpoint": "true", "authorizedNetworks": '["10.0.0.0/8"]'}).warnings
        if "authorizedNetworks" in w
    ]
