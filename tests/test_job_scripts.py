"""The job's programs ship as a ConfigMap the Ray head mounts: checked on the engine's records of every stack."""

from __future__ import annotations

import re

import pytest

from core import recipes
from core.naming import JOB_SCRIPTS
from synth import render
from tests.k8s_validation import validate_any
from workloads import job_scripts as scripts
from workloads.manifests.pod_parts import SCRIPTS_FILE_MODE
from workloads.manifests.raycluster import HEAD_CONTAINER

pytestmark = pytest.mark.graph

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
COMPONENT = "nemo-rl-gke:workloads:JobScripts"
# Kubernetes ConfigMap data keys; a ConfigMap holds at most 1 MiB.
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def config_map(r):
    return r.get(CONFIG_MAP, "job-scripts")


def head_pods(r):
    """Head pod specs: the standing RayCluster's and an own-cluster RayJob's embedded one."""
    for res in r.of_type(RAYCLUSTER):
        yield res, res.get("spec.headGroupSpec.template.spec")
    for res in r.of_type(RAYJOB):
        spec = res.get("spec.rayClusterSpec.headGroupSpec.template.spec")
        if spec is not None:
            yield res, spec


def test_config_map_holds_the_scripts_in_the_workload_namespace(synth, stack):
    r = synth(stack)
    cm = config_map(r)
    namespace = r.get("kubernetes:core/v1:Namespace", "namespace")
    assert cm.get("metadata.name") == JOB_SCRIPTS
    assert cm.get("metadata.namespace") == namespace.get("metadata.name")
    assert r.depends_on(cm, namespace)
    assert cm.get("data") == scripts.job_scripts()
    assert all(_CONFIG_MAP_KEY.fullmatch(k) for k in cm.get("data"))
    assert sum(len(v.encode()) for v in cm.get("data").values()) < 1024 * 1024
    assert not cm.secret_paths


def test_config_map_is_the_only_child_of_its_component_and_uses_the_cluster_provider(synth):
    r = synth("dev")
    cm = config_map(r)
    parent = r.by_urn()[cm.parent]
    assert parent.type == COMPONENT and r.children(parent) == [cm]
    pvc = r.get("kubernetes:core/v1:PersistentVolumeClaim", "lustre-pvc")
    assert cm.provider_urn is not None and cm.provider_urn == pvc.provider_urn


def test_ray_head_mounts_the_scripts_read_only_at_the_scripts_dir(synth, stack):
    r = synth(stack)
    heads = list(head_pods(r))
    assert heads
    for res, spec in heads:
        volumes = {v["name"]: v for v in spec["volumes"]}
        container = next(c for c in spec["containers"] if c["name"] == HEAD_CONTAINER)
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == recipes.SCRIPTS_DIR)
        assert mount.get("readOnly") is True and "subPath" not in mount, res.key
        assert volumes[mount["name"]]["configMap"] == {"name": JOB_SCRIPTS, "defaultMode": SCRIPTS_FILE_MODE}
        # Not on the GPU workers: only the driver, on the head, runs the programs.
        for group in res.get("spec.workerGroupSpecs") or res.get("spec.rayClusterSpec.workerGroupSpecs"):
            mounts = group["template"]["spec"]["containers"][0]["volumeMounts"]
            assert recipes.SCRIPTS_DIR not in {m["mountPath"] for m in mounts}


def test_ray_cluster_and_job_wait_for_the_config_map(synth, stack):
    r = synth(stack)
    cm = config_map(r)
    dependents = r.of_type(RAYCLUSTER) + r.of_type(RAYJOB)
    assert dependents
    for res in dependents:
        assert r.depends_on(res, cm), res.key


@pytest.mark.parametrize(
    "overrides", [{"jobMode": "own-cluster"}, {"jobEnabled": False}], ids=["own-cluster", "no-job"]
)
def test_every_head_has_its_config_map_whatever_the_job_mode(synth, overrides):
    r = synth("dev", overrides)
    assert r.error is None, r.error
    cm = config_map(r)
    heads = list(head_pods(r))
    assert heads
    for res, _spec in heads:
        assert r.depends_on(res, cm), res.key


def test_config_map_and_ray_objects_validate_strictly(synth, stack):
    r = synth(stack)
    for res in [config_map(r), *r.of_type(RAYCLUSTER), *r.of_type(RAYJOB)]:
        validate_any(render.manifest_of(res))
