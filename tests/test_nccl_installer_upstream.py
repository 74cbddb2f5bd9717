"""The gIB NCCL installer the program registers is Google's, field for field.

Oracle: unmodified copies of GoogleCloudPlatform/container-engine-accelerators
gpudirect-rdma/nccl-rdma-installer.yaml and nccl-rdma-installer-autopilot.yaml at commit
992db81257553607f1477945f1b3219632991829, in tests/reference/gpudirect-rdma/ (SOURCES.md there has their hashes
and the upstream history). Upstream commit 2da1c92ff7bd772a2c833710bb6c21dcfe6dfaae (2026-05-06) removed
`--install-nccl` from the Standard installer only; the Autopilot installer keeps it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from core import catalog
from synth import render
from workloads.manifests import nccl_installer
from workloads.manifests.pod_security import namespace_labels

REFERENCE = Path(__file__).resolve().parent / "reference" / "gpudirect-rdma"
UPSTREAM_FILES = {"standard": "nccl-rdma-installer.yaml", "autopilot": "nccl-rdma-installer-autopilot.yaml"}

# Differences between what we render and upstream, per mode: {path: why}, kept exact (a listed difference that
# disappears fails too):
# - image: the catalog pins the same tag upstream uses (nccl-plugin-gib:v1.1.1; asserted below), so bumping it
#   means syncing with a newer upstream commit first;
# - namespace: on Autopilot the DaemonSet's namespace is the Namespace resource's name output, which resolves to
#   upstream's `rdma-system`; on Standard it is upstream's `kube-system`;
# - upstream's YAML comments (the license header) are not part of the objects.
# - spec.updateStrategy.type: OnDelete, upstream RollingUpdate. A rolling update reruns the installer's
#   `cp -r` into /home/kubernetes/bin/{gib,nvidia/lib64} on every GPU node, including nodes under a running
#   job whose NCCL has those libraries mapped (docs/research/day2.md section 5); with OnDelete
#   a changed installer reaches new nodes, and old ones only when their pod is deleted.
ON_DELETE = {"spec.updateStrategy.type": "rolling updates rewrite NCCL libraries under running jobs"}
ALLOWED_DIFFERENCES: dict[str, dict[str, str]] = {"standard": dict(ON_DELETE), "autopilot": dict(ON_DELETE)}
# The Autopilot variant's Namespace differs by the Pod Security Admission labels every namespace of the program
# carries (workloads/manifests/pod_security.py namespace_labels): enforce privileged, warn and audit
# restricted.
NAMESPACE_ALLOWED_DIFFERENCES = {f"metadata.labels.{k}" for k in namespace_labels("privileged")}


def _upstream(mode: str) -> dict[str, dict]:
    """Upstream's objects of one variant by kind."""
    docs = [d for d in yaml.safe_load_all((REFERENCE / UPSTREAM_FILES[mode]).read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one object per kind upstream"
    return by_kind


def _differences(ours: Any, theirs: Any, path: str = "") -> dict[str, tuple[Any, Any]]:
    """Every path where two manifests differ (dict keys unordered, list items by position)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for k in sorted(set(ours) | set(theirs)):
            sub = f"{path}.{k}" if path else k
            if k not in ours or k not in theirs:
                out[sub] = (ours.get(k, "<absent>"), theirs.get(k, "<absent>"))
            else:
                out.update(_differences(ours[k], theirs[k], sub))
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return {path: (ours, theirs)}
        out = {}
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out.update(_differences(a, b, f"{path}[{i}]"))
        return out
    return {} if ours == theirs and type(ours) is type(theirs) else {path: (ours, theirs)}


def _mode_of(result) -> str:
    return result.config.get("nemo-rl-gke:clusterMode", "standard")


@pytest.mark.unit
def test_reference_copies_are_the_recorded_upstream_files():
    table = (REFERENCE / "SOURCES.md").read_text()
    assert "992db81257553607f1477945f1b3219632991829" in table
    assert "Apache License" in (REFERENCE / "LICENSE").read_text()
    for name in UPSTREAM_FILES.values():
        digest = hashlib.sha256((REFERENCE / name).read_bytes()).hexdigest()
        assert re.search(rf"\| {re.escape(name)} \| [^|]+ \| {digest} \|", table), f"{name} differs from SOURCES.md"


@pytest.mark.unit
@pytest.mark.parametrize("mode", ["standard", "autopilot"])
def test_rendered_installer_equals_googles_manifest(mode):
    up = _upstream(mode)
    diff = _differences(nccl_installer.installer_daemonset(mode), up["DaemonSet"])
    assert set(diff) == set(ALLOWED_DIFFERENCES[mode]), diff
    if mode == "autopilot":
        assert set(_differences(nccl_installer.namespace_manifest(), up["Namespace"])) == NAMESPACE_ALLOWED_DIFFERENCES
    else:
        assert set(up) == {"DaemonSet"}


@pytest.mark.unit
def test_catalog_pins_the_image_tag_upstream_uses():
    # Upstream pins by tag; a different pin would run a plugin Google's manifest was not written for.
    for mode in UPSTREAM_FILES:
        [init] = _upstream(mode)["DaemonSet"]["spec"]["template"]["spec"]["initContainers"]
        assert init["image"] == catalog.NCCL_GIB_INSTALLER_IMAGE


@pytest.mark.unit
def test_every_catalog_gpu_type_is_one_googles_installer_runs_on():
    # The installer's node affinity is upstream's list, not ours: a GPU type added to the catalog that upstream's
    # installer does not cover would get no gIB plugin (its NCCL would fall back to TCP).
    for mode in UPSTREAM_FILES:
        terms = _upstream(mode)["DaemonSet"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        covered = {
            v
            for term in terms
            for e in term["matchExpressions"]
            if e["key"] == "cloud.google.com/gke-accelerator"
            for v in e["values"]
        }
        assert set(catalog.ACCELERATORS) <= covered, mode


@pytest.mark.unit
def test_install_nccl_flag_follows_upstream_per_variant():
    # container-engine-accelerators 2da1c92f (2026-05-06): "Removed --install-nccl from default and a4x
    # installers"; the Autopilot installer still passes it at 992db812.
    assert "--install-nccl" not in nccl_installer.install_script("standard")
    assert "install --install-nccl\n" in nccl_installer.install_script("autopilot")
    for mode in UPSTREAM_FILES:
        [init] = _upstream(mode)["DaemonSet"]["spec"]["template"]["spec"]["initContainers"]
        assert init["args"] == [nccl_installer.install_script(mode)]


@pytest.mark.unit
def test_comparison_reports_a_drifted_field():
    # The comparator itself: re-adding the flag upstream dropped is reported at its path.
    ds = nccl_installer.installer_daemonset("standard")
    ds["spec"]["template"]["spec"]["initContainers"][0]["args"] = [nccl_installer.install_script("autopilot")]
    diff = _differences(ds, _upstream("standard")["DaemonSet"])
    assert set(diff) == {"spec.template.spec.initContainers[0].args[0]"} | set(ON_DELETE)


@pytest.mark.graph
def test_registered_installer_objects_equal_googles_manifest(synth, stack):
    """What the engine records (what `pulumi up` would apply), not only the builder."""
    r = synth(stack)
    mode = _mode_of(r)
    up = _upstream(mode)
    daemonsets = [x for x in r.of_type("kubernetes:apps/v1:DaemonSet") if x.get("metadata.name") == nccl_installer.NAME]
    assert len(daemonsets) == 1
    diff = _differences(render.manifest_of(daemonsets[0]), up["DaemonSet"])
    assert set(diff) == set(ALLOWED_DIFFERENCES[mode]), diff
    namespaces = {x.get("metadata.name"): x for x in r.of_type("kubernetes:core/v1:Namespace")}
    if mode == "autopilot":
        assert (
            set(_differences(render.manifest_of(namespaces["rdma-system"]), up["Namespace"]))
            == NAMESPACE_ALLOWED_DIFFERENCES
        )
        assert r.depends_on(daemonsets[0], namespaces["rdma-system"])
    else:
        # Standard: kube-system exists in every cluster; the program must never create or own it.
        assert "kube-system" not in namespaces and "rdma-system" not in namespaces


@pytest.mark.graph
def test_installer_updates_never_roll_over_nodes_under_a_running_job(synth, stack):
    # Kubernetes OpenAPI DaemonSetUpdateStrategy: "Can be "RollingUpdate" or "OnDelete". Default is RollingUpdate."
    for ds in synth(stack).of_type("kubernetes:apps/v1:DaemonSet"):
        if ds.get("metadata.name") == nccl_installer.NAME:
            assert ds.get("spec.updateStrategy") == {"type": "OnDelete"}
