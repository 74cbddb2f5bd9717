"""The synth output is reproducible, and `python -m synth <stack> --compare <dir>` reports exactly what differs.

Reproducible: two runs of the same commit, in separate processes with different hash seeds and output folders,
at least a few seconds apart, write byte-identical folders for every shipped stack (no timestamps, random
names, set-order effects or absolute paths).

Offline diffs: the report names every added, removed and changed GCP resource and Kubernetes object, with
the changed fields; for pairs of runs that differ in known ways it reports those fields and nothing else (the
"nothing else" is checked against the engine's own records, so new resources of the program are covered).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from synth import compare, engine, render
from synth.__main__ import main as synth_main

pytestmark = pytest.mark.graph

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = engine.available_stacks()
OVERRIDES = {"gpuNodes": "4", "lustreCapacityGib": "36000"}


def _start(stack: str, out: Path, *extra: str, seed: str = "0") -> subprocess.Popen:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.Popen(
        [sys.executable, "-m", "synth", stack, "--out", str(out), *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(procs: dict[str, subprocess.Popen]) -> dict[str, str]:
    out = {}
    for key, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{key}: exit {proc.returncode}\n{stderr}"
        out[key] = stdout
    return out


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> Path:
    """Every shipped stack synthesized once (concurrently), in <tmp>/<stack>."""
    base = tmp_path_factory.mktemp("run1")
    _finish({s: _start(s, base / s, seed="1") for s in SHIPPED})
    return base


# --- determinism -----------------------------------------------------------------------------------------------
def test_synth_output_is_byte_identical_across_runs_of_the_same_commit(first_run, tmp_path):
    # The second wave starts after the first has finished (a run takes seconds), so a timestamp of any
    # resolution down to seconds would differ; another hash seed changes any set iteration order.
    _finish({s: _start(s, tmp_path / s, seed="2") for s in SHIPPED})
    for s in SHIPPED:
        a, b = _tree(first_run / s), _tree(tmp_path / s)
        assert "inventory.json" in a and any(k.startswith("manifests/") for k in a), sorted(a)
        assert sorted(a) == sorted(b), f"{s}: different files"
        differing = [name for name in a if a[name] != b[name]]
        assert not differing, f"{s}: {differing} differ between two runs of the same commit"
        assert not any(str(first_run).encode() in data for data in a.values()), f"{s}: output names its folder"


# --- offline diffs -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compared(first_run, tmp_path_factory) -> dict:
    """`--compare` runs against dev's output: dev with two overrides, and the codelab stack."""
    base = tmp_path_factory.mktemp("compare")
    sets = [a for k, v in OVERRIDES.items() for a in ("--set", f"{k}={v}")]
    printed = _finish(
        {
            "overrides": _start("dev", base / "overrides", *sets, "--compare", str(first_run / "dev")),
            "codelab": _start("codelab", base / "codelab", "--compare", str(first_run / "dev")),
        }
    )
    old = compare.load(first_run / "dev")
    return {
        name: {
            "printed": printed[name],
            "dir": base / name,
            "sections": {s.title: s for s in compare.compare(old, compare.load(base / name))},
        }
        for name in printed
    }


def _leaf_values(value, path=""):
    """Every leaf of a nested value, lists indexed (the oracle's own flattening, independent of compare.py)."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaf_values(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaf_values(v, f"{path}[{i}]")
    else:
        yield path, json.dumps(value, sort_keys=True)


def _engine_view(result: engine.SynthResult) -> dict[str, dict[str, dict]]:
    """Section title -> key -> comparable content, straight from the engine's records."""
    view: dict[str, dict[str, dict]] = {"GCP resources": {}, "Kubernetes objects": {}, "Other Pulumi resources": {}}
    for rec in render.inventory_records(result):
        if rec["custom"] and not rec["type"].startswith("kubernetes:"):
            title = "GCP resources" if rec["type"].startswith("gcp:") else "Other Pulumi resources"
            view[title][f"{rec['type']} {rec['name']}"] = {"inputs": rec["inputs"], "options": rec["options"]}
    for r in result.kubernetes_objects():
        view["Kubernetes objects"][compare.kubernetes_key(render.manifest_of(r))] = render.manifest_of(r)
    return view


def _comparable(title: str, content: dict) -> dict[str, str]:
    """Leaf path -> value of a manifest, or of a Pulumi resource's inputs plus its options under `options.`."""
    if title == "Kubernetes objects":
        return dict(_leaf_values(content))
    return {**dict(_leaf_values(content["inputs"])), **dict(_leaf_values(content["options"], "options"))}


def _covers(a: str, b: str) -> bool:
    """Whether dotted paths a and b name the same field or one lies inside the other."""
    short, long_ = sorted((a, b), key=len)
    return long_ == short or long_.startswith(short + ".") or long_.startswith(short + "[")


def assert_report_matches_engine(
    sections: dict[str, compare.Section], old: engine.SynthResult, new: engine.SynthResult
) -> None:
    """The report lists exactly the keys and fields in which the two runs' records differ."""
    before, after = _engine_view(old), _engine_view(new)
    for title, section in sections.items():
        b, a = before[title], after[title]
        assert section.added == sorted(set(a) - set(b)), title
        assert section.removed == sorted(set(b) - set(a)), title
        truly_changed = {}
        for key in set(a) & set(b):
            old_leaves, new_leaves = _comparable(title, b[key]), _comparable(title, a[key])
            paths = {p for p in set(old_leaves) | set(new_leaves) if old_leaves.get(p) != new_leaves.get(p)}
            if paths:
                truly_changed[key] = paths
        assert sorted(section.changed) == sorted(truly_changed), title
        for key, paths in truly_changed.items():
            reported = [path for path, _o, _n in section.changed[key]]
            assert all(any(_covers(r, t) for t in paths) for r in reported), (key, reported, paths)
            assert all(any(_covers(t, r) for r in reported) for t in paths), (key, reported, paths)


def test_compare_reports_exactly_the_fields_two_overrides_change(compared, synth):
    run = compared["overrides"]
    gcp, k8s = run["sections"]["GCP resources"], run["sections"]["Kubernetes objects"]
    # Every GPU pool starts at zero and scales to the workload's request: only the maximum moves.
    for pool in ("gpu-spot", "gpu-flex"):
        assert gcp.changed[f"gcp:container/nodePool:NodePool {pool}"] == [("autoscaling.maxNodeCount", 2, 4)]
    assert gcp.changed["gcp:lustre/instance:Instance lustre"] == [("capacityGib", "18000", "36000")]
    assert k8s.changed["PersistentVolume nemo-dev-lustre"] == [("spec.capacity.storage", "18000Gi", "36000Gi")]
    assert k8s.changed["PersistentVolumeClaim nemo-rl/lustre-pvc"] == [
        ("spec.resources.requests.storage", "18000Gi", "36000Gi")
    ]
    assert k8s.changed["RayCluster.ray.io nemo-rl/nemo-dev-ray"] == [
        (f"spec.workerGroupSpecs[0].{f}", 2, 4) for f in ("maxReplicas", "minReplicas", "replicas")
    ]
    assert not any(s.added or s.removed for s in run["sections"].values())
    assert_report_matches_engine(run["sections"], synth("dev"), synth("dev", OVERRIDES))
    printed = run["printed"]
    assert '      capacityGib: "18000" -> "36000"\n' in printed
    assert "      spec.workerGroupSpecs[0].replicas: 2 -> 4\n" in printed


def test_compare_reports_what_differs_between_two_stacks(compared, synth):
    run = compared["codelab"]
    gcp, k8s = run["sections"]["GCP resources"], run["sections"]["Kubernetes objects"]
    lustre = gcp.changed["gcp:lustre/instance:Instance lustre"]
    for change in [
        ("capacityGib", "18000", "9000"),
        ("perUnitStorageThroughput", "500", "1000"),
        ("location", "us-central1-b", "us-east1-b"),
        ("options.protect", compare.ABSENT, True),
    ]:
        assert change in lustre, lustre
    pool = gcp.changed["gcp:container/nodePool:NodePool gpu-spot"]
    assert ("nodeConfig.machineType", "a3-ultragpu-8g", "a4-highgpu-8g") in pool
    assert ("nodeConfig.guestAccelerators[0].type", "nvidia-h200-141gb", "nvidia-b200") in pool
    # Kubernetes identity: renamed objects are replaced, not changed.
    assert {"RayCluster.ray.io nemo-rl/nemo-dev-ray", "PersistentVolume nemo-dev-lustre"} <= set(k8s.removed)
    assert {"RayCluster.ray.io nemo-rl/nemo-codelab-ray", "PersistentVolume nemo-codelab-lustre"} <= set(k8s.added)
    assert k8s.changed["GKENetworkParamSet.networking.gke.io rdma-0"] == [
        ("spec.vpc", "nemo-dev-rdma-net", "nemo-codelab-rdma-net"),
        ("spec.vpcSubnet", "nemo-dev-rdma-sub-0", "nemo-codelab-rdma-sub-0"),
    ]
    # The namespace is the same object; codelab's queue (queue: kueue) only labels it for Kueue's namespace selector.
    assert k8s.changed["Namespace nemo-rl"] == [("metadata.labels.nemo-rl-gke/queue", compare.ABSENT, "kueue")]
    assert_report_matches_engine(run["sections"], synth("dev"), synth("codelab"))
    assert "  - RayCluster.ray.io nemo-rl/nemo-dev-ray\n" in run["printed"]


def test_compare_lists_hand_made_edits_exactly(first_run, tmp_path, capsys):
    """An old folder edited by hand: one resource and one object more, one less, fields changed/added/removed."""
    old = tmp_path / "old"
    shutil.copytree(first_run / "dev", old)
    inventory = json.loads((old / "inventory.json").read_text())
    records = [r for r in inventory["resources"] if r["type"] != "gcp:storage/bucket:Bucket"]
    lustre = next(r for r in records if r["type"] == "gcp:lustre/instance:Instance")
    lustre["inputs"]["capacityGib"] = "9000"
    lustre["options"]["retainOnDelete"] = True
    records.append(
        {
            "type": "gcp:compute/address:Address",
            "name": "legacy-ip",
            "custom": True,
            "inputs": {"name": "legacy-ip"},
            "options": {},
        }
    )
    inventory["resources"] = records
    (old / "inventory.json").write_text(json.dumps(inventory))
    (old / "manifests" / "namespace-nemo-rl.yaml").unlink()
    (old / "manifests" / "configmap-nemo-rl-old.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old", "namespace": "nemo-rl"}})
    )
    ray_file = old / "manifests" / "raycluster-nemo-rl-nemo-dev-ray.yaml"
    ray = yaml.safe_load(ray_file.read_text())
    current_ray_version = ray["spec"]["rayVersion"]
    ray["spec"]["rayVersion"] = "2.0.0"
    ray["metadata"].setdefault("annotations", {})["example.com/old"] = "yes"
    tolerations = ray["spec"]["workerGroupSpecs"][0]["template"]["spec"]["tolerations"]
    dropped = tolerations.pop()
    ray_file.write_text(yaml.safe_dump(ray))

    assert synth_main(["dev", "--out", str(tmp_path / "new"), "--compare", str(old)]) == 0
    report = capsys.readouterr().out.split("compared with", 1)[1]
    tol = f"spec.workerGroupSpecs[0].template.spec.tolerations[{len(tolerations)}]"
    assert report == "".join(
        [
            f" {old}:\n",
            # The RayCluster is replaced on any spec change (replaceOnChanges), and the RayJob with it (replaceWith).
            "Replacements, node recreations and refused steps: 2\n",
            "  ! kubernetes:ray.io/v1:RayCluster raycluster: REPLACE (delete first) - stops the job\n",
            f"      because spec.rayVersion and {len(dropped)} more (replaceOnChanges)\n",
            "  ! kubernetes:ray.io/v1:RayJob rayjob: REPLACE (delete first) - stops the job\n",
            "      because replaceWith kubernetes:ray.io/v1:RayCluster raycluster\n",
            "GCP resources: 1 added, 1 removed, 1 changed\n",
            "  + gcp:storage/bucket:Bucket bucket\n",
            "  - gcp:compute/address:Address legacy-ip\n",
            "  ~ gcp:lustre/instance:Instance lustre\n",
            '      capacityGib: "9000" -> "18000"\n',
            "      options.retainOnDelete: true -> (absent)\n",
            "Kubernetes objects: 1 added, 1 removed, 1 changed\n",
            "  + Namespace nemo-rl\n",
            "  - ConfigMap nemo-rl/old\n",
            "  ~ RayCluster.ray.io nemo-rl/nemo-dev-ray\n",
            '      metadata.annotations.example.com/old: "yes" -> (absent)\n',
            f'      spec.rayVersion: "2.0.0" -> "{current_ray_version}"\n',
            *[f"      {tol}.{k}: (absent) -> {json.dumps(dropped[k])}\n" for k in sorted(dropped)],
        ]
    )


def test_compare_with_an_identical_output_prints_no_changes(first_run, tmp_path, capsys):
    assert synth_main(["dev", "--out", str(tmp_path / "again"), "--compare", str(first_run / "dev")]) == 0
    assert capsys.readouterr().out.endswith(f"compared with {first_run / 'dev'}: no changes\n")


def test_compare_reads_the_previous_output_before_rewriting_the_same_folder(tmp_path, capsys):
    folder = tmp_path / "dev"
    assert synth_main(["dev", "--out", str(folder), "--set", "gpuNodes=4"]) == 0
    capsys.readouterr()
    assert synth_main(["dev", "--out", str(folder), "--compare", str(folder)]) == 0
    assert "      autoscaling.maxNodeCount: 4 -> 2\n" in capsys.readouterr().out


def test_compare_refuses_a_folder_that_is_not_a_synth_output(tmp_path, capsys):
    assert synth_main(["dev", "--out", str(tmp_path / "x"), "--compare", str(tmp_path / "missing")]) == 2
    assert "has no inventory.json" in capsys.readouterr().err
