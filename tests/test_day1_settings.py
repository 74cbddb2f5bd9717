"""Settings rules a careful engineer expects, refused before anything is registered with one line naming the key.

The rules themselves are tested in test_gcp_rules.py / test_node_fit.py; here: that the stack settings apply
them (through the real engine and a stack file), so a bad value never reaches Google Cloud.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.graph


def _problems(synth, overrides) -> list[str]:
    result = synth("dev", overrides)
    assert result.error is not None, "expected the settings to be refused"
    assert not [r for r in result.resources if r.custom], "nothing may be registered"
    return [ln.strip()[2:] for ln in str(result.error).splitlines() if ln.strip().startswith("- ")]


@pytest.mark.parametrize(
    "overrides,key,fragment",
    [
        # The PSA range inside an RDMA subnet: Lustre replies would leave through an RDMA NIC.
        ({"psaCidr": "192.168.2.0/24"}, "psaCidr", "overlaps"),
        ({"gvnicSubnetCidr": "10.0.0.0/24"}, "gvnicSubnetCidr", "overlaps"),
        ({"rdmaSubnetCidrs": [f"192.168.{i + 1}.0/30" for i in range(8)]}, "rdmaSubnetCidrs", "/29"),
        ({"namespace": "kube-system"}, "namespace", "system namespace"),
        ({"bucketName": "my-g00gle-bucket"}, "bucketName", "google"),
        ({"bucketName": "ckpt.example.com"}, "bucketName", "dot"),
        ({"capacity": ["reservation"], "reservation": "Bad_Name"}, "reservation", "reservation name"),
        ({"lustreMountPath": "/opt"}, "lustreMountPath", "/opt/nemo-rl"),
        ({"lustreMountPath": "/usr/local/gib/data"}, "lustreMountPath", "/usr/local/gib"),
        ({"shmSizeGib": 4000}, "shmSizeGib", "memory limit"),
        ({"headCpu": 64}, "headCpu", "system node"),
        ({"headMemoryGib": 512}, "headMemoryGib", "system node"),
    ],
)
def test_settings_refuse_what_google_cloud_or_the_pods_would_refuse(synth, overrides, key, fragment):
    problems = _problems(synth, overrides)
    # Each line names a key; an overlap names the other range's key too.
    mine = [p for p in problems if f"nemo-rl-gke:{key}" in p]
    assert mine and any(fragment in p for p in mine), problems


def test_primary_subnet_must_hold_every_node(synth):
    # GCP keeps 4 addresses per subnet: a /29 holds 4 nodes; dev asks for 2 GPU nodes + 1 system node = 3 -> ok,
    # 8 GPU nodes -> refused.
    problems = _problems(synth, {"primarySubnetCidr": "10.0.0.0/29", "gpuNodes": 8, "workerReplicas": 8})
    assert any(p.startswith("nemo-rl-gke:primarySubnetCidr: ") and "usable addresses" in p for p in problems)


def test_documented_lustre_maximum_is_accepted(synth):
    # The tier table's maximum (500 MB/s/TiB: 20,016,000 GiB) used to be refused. Budget off: sizing is not
    # what this test is about.
    result = synth("dev", {"lustreTier": 500, "lustreCapacityGib": 20_016_000, "checkpointBudgetSeconds": 0})
    assert result.error is None, result.error


def test_every_path_the_rendered_ray_pods_mount_is_protected_from_the_lustre_mount(synth, stack):
    # The collision rule must know every mount the pods really get (rendered by the program), not a list of
    # its own: a new mount that the rule does not protect fails here.
    from core.gcp_rules import protected_paths
    from core.recipes import SCRIPTS_DIR

    result = synth(stack)
    lustre = (
        result.config["nemo-rl-gke:lustreMountPath"] if "nemo-rl-gke:lustreMountPath" in result.config else "/lustre"
    )
    protected = protected_paths(SCRIPTS_DIR)
    mounts = set()
    for r in result.kubernetes_objects():
        if r.type == "kubernetes:ray.io/v1:RayCluster":
            spec = r.inputs["spec"]
        elif r.type == "kubernetes:ray.io/v1:RayJob":
            spec = r.inputs["spec"].get("rayClusterSpec")  # absent in standing-cluster mode
        else:
            continue
        if spec:
            groups = [spec["headGroupSpec"]] + spec.get("workerGroupSpecs", [])
            for g in groups:
                for c in g["template"]["spec"]["containers"]:
                    mounts |= {m["mountPath"] for m in c.get("volumeMounts", [])}
    assert mounts, "no Ray pods rendered"
    unprotected = {m for m in mounts - {lustre} if not any(m == p or m.startswith(p + "/") for p in protected)}
    assert not unprotected, unprotected
