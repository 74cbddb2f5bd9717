"""The graph layer of the Kubernetes half: what only the engine's records of a whole stack show (every object valid,
the Lustre volume wired to the real instance, dependencies, annotations, the secret canary). What the Ray pods are
made of is tested once, on the pure builders, in tests/test_k8s_specs.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from synth import engine, render
from tests.k8s_validation import check_crd_schemas, validate_any

pytestmark = pytest.mark.graph

ROOT = Path(__file__).resolve().parents[1]
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def _worker_pods(r):
    """(pod template, container) of every GPU worker group in RayClusters and RayJobs' own clusters."""
    for res in r.resources:
        spec = res.inputs.get("spec") or {}
        for rc in (spec, spec.get("rayClusterSpec") or {}):
            for group in rc.get("workerGroupSpecs") or []:
                yield group, group["template"]


def test_every_rendered_kubernetes_object_validates_strictly(synth, stack, tmp_path):
    r = synth(stack)
    objs = r.kubernetes_objects()
    assert objs
    for res in objs:
        validate_any(render.manifest_of(res))


def test_every_kept_crd_schema_made_strict_is_a_valid_schema():
    # The validators of tests/k8s_validation.py rely on it (checked once here rather than before each validation).
    check_crd_schemas()


def test_manifests_written_by_synth_validate_strictly(tmp_path):
    out = tmp_path / "dev"
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "dev", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    files = sorted((out / "manifests").glob("*.yaml"))
    assert len(files) >= 25
    for f in files:
        validate_any(yaml.safe_load(f.read_text()))


def test_lustre_pv_names_the_real_instance_and_an_ip_without_port(synth, stack):
    r = synth(stack)
    pv, pvc = r.get(PV, "lustre-pv"), r.get(PVC, "lustre-pvc")
    inst = r.get("gcp:lustre/instance:Instance", "lustre")
    csi = pv.get("spec.csi")
    assert csi["driver"] == "lustre.csi.storage.gke.io"
    assert csi["volumeHandle"] == f"{r.config['gcp:project']}/{inst.inputs['location']}/{inst.inputs['instanceId']}"
    assert "@" not in csi["volumeAttributes"]["ip"]
    assert csi["volumeAttributes"]["ip"] == inst.computed["mountPoint"].split("@")[0]
    assert csi["volumeAttributes"]["filesystem"] == inst.inputs["filesystem"]
    assert pv.get("spec.persistentVolumeReclaimPolicy") == "Retain"
    assert pv.get("spec.claimRef.name") == pvc.get("metadata.name")
    assert pvc.get("spec.volumeName") == pv.get("metadata.name")
    assert pv.get("spec.capacity.storage") == f"{inst.inputs['capacityGib']}Gi"
    assert r.depends_on(pv, inst)


def test_lustre_volume_waits_only_for_the_instance_on_the_gcp_side(synth):
    r = synth("dev")
    pv = r.get(PV, "lustre-pv")
    urns = r.by_urn()
    gcp_deps = {urns[u].type for u in pv.dependencies if urns[u].type.startswith("gcp:")}
    assert gcp_deps == {"gcp:lustre/instance:Instance"}


def test_service_account_annotation_matches_the_bucket_grant(synth, stack):
    # The export's own service account carries the principal its grants name; the Ray pods' holds none.
    r = synth(stack)
    ksa = r.get("kubernetes:core/v1:ServiceAccount", "export-ksa")
    for t, n in (
        ("gcp:storage/managedFolderIamMember:ManagedFolderIamMember", "export-object-user"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "export-bucket-list"),
    ):
        assert (
            ksa.get("metadata.annotations")["nemo-rl-gke/workload-identity-principal"] == r.get(t, n).inputs["member"]
        )
    assert not (r.get("kubernetes:core/v1:ServiceAccount", "ksa").get("metadata.annotations") or {})


def test_ray_outputs_give_the_dashboard_command_and_mount_path(synth, stack):
    out = synth(stack).outputs
    # The standing cluster's dashboard always; the job's where it runs on a cluster of its own (codelab's queue).
    assert out["rayClusterName"] and out["rayClusterName"] in out["rayClusterDashboardCommand"]
    job_on_its_own = out["rayDashboardCommand"].startswith("kubectl ray session rayjob/")
    assert (out["rayJobName"] if job_on_its_own else out["rayClusterName"]) in out["rayDashboardCommand"]
    assert out["lustreMountPath"] == "/lustre"


CANARY_HF = "hf_CANARY_7f3a9c1e5b2d4a6f8e0c"
CANARY_WANDB = "wandb_CANARY_0d8b6f4a2c9e1b3d5f7a"


def test_secret_canary_appears_only_in_secret_inputs(tmp_path):
    result = engine.run("dev", secrets={"hfToken": CANARY_HF, "wandbApiKey": CANARY_WANDB})
    assert result.error is None, result.error
    found_secret = []
    for res in result.resources:
        for path, value in render._flatten(res.inputs):
            if isinstance(value, str) and (CANARY_HF in value or CANARY_WANDB in value):
                dotted = path.replace("[", ".").replace("]", "")
                assert any(dotted == p or dotted.startswith(p + ".") for p in res.secret_paths), (
                    f"{res.key} {path} carries a secret unmarked"
                )
                found_secret.append(res.key)
    assert ("kubernetes:core/v1:Secret", "tokens") in found_secret
    assert CANARY_HF not in json.dumps(result.outputs) and CANARY_WANDB not in json.dumps(result.outputs)
    out = tmp_path / "build"
    render.write(result, out)
    for f in out.rglob("*"):
        if f.is_file():
            text = f.read_text()
            assert CANARY_HF not in text and CANARY_WANDB not in text, f
