"""`kubeRayOperator: helm`: the stack installs KubeRay 1.7.0 itself, so its operator can send the Ray token
(docs/research/harden2.md). The chart is the one kept in the repository (verbatim from ray-project/kuberay at
the tag), its CRDs are the ones the Ray objects are validated against, the values we pass exist in the chart, and
the stack then renders token auth the way KubeRay 1.6.0+ reads it (authOptions.secretName) with no token in any
environment."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from core import catalog
from synth import render
from tests.k8s_validation import validate_any
from workloads.kuberay_operator import CHART_DIR, KubeRayOperatorArgs, chart_values

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / CHART_DIR
RELEASE = "kubernetes:helm.sh/v3:Release"
HELM = {"kubeRayOperator": "helm", "nemoRlRelease": "v0.7.0", "jobEnabled": False}


@pytest.mark.unit
def test_the_kept_chart_is_kuberays_at_the_pinned_version_with_the_validated_crds():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["name"] == "kuberay-operator" and chart["version"] == catalog.KUBERAY_HELM_CHART_VERSION
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["image"]["tag"] == catalog.KUBERAY_OPERATOR_IMAGE_PIN.tag == f"v{chart['version']}"
    assert values["image"]["repository"] == catalog.KUBERAY_OPERATOR_IMAGE_PIN.repo
    # The operator we install serves exactly the CRDs the tests validate the Ray objects against.
    for crd in ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml"):
        ours = hashlib.sha256((ROOT / "schemas" / "kuberay-v1.7.0" / crd).read_bytes()).hexdigest()
        assert hashlib.sha256((CHART / "crds" / crd).read_bytes()).hexdigest() == ours, crd
    assert "59d663aeec13760646da3db9c1cf8cfe883e30b7" in (ROOT / "charts" / "SOURCES.md").read_text()
    assert "Apache License" in (CHART / "LICENSE").read_text()


@pytest.mark.unit
def test_every_value_we_pass_is_a_value_of_the_chart_and_restricts_rbac_to_the_workload_namespace():
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    ours = chart_values(KubeRayOperatorArgs(namespace="kuberay-system", watch_namespace="nemo-rl"))
    # watchNamespace is commented out in values.yaml but read by templates/deployment.yaml and the Roles.
    templates = "".join(p.read_text() for p in (CHART / "templates").glob("*.yaml"))
    for key in ours:
        assert key in defaults or f".Values.{key}" in templates, key
    assert ours["singleNamespaceInstall"] is True and ours["watchNamespace"] == ["nemo-rl"]
    # With singleNamespaceInstall the chart renders Roles, never its ClusterRole (templates/role.yaml @v1.7.0).
    assert "not .Values.singleNamespaceInstall" in (CHART / "templates" / "role.yaml").read_text()
    # The chart's pod security context meets `restricted` (enforced on its namespace).
    sc = defaults["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["runAsNonRoot"] is True
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["seccompProfile"]["type"] == "RuntimeDefault"


@pytest.mark.graph
def test_helm_mode_installs_the_kept_chart_turns_the_addon_off_and_waits_for_it(synth):
    r = synth("dev", HELM)
    assert r.error is None, r.error
    (release,) = r.helm_releases()
    assert release.type == RELEASE
    assert release.inputs["chart"] == catalog.KUBERAY_HELM_CHART_DIR  # a path in the repository, never a URL
    assert "repositoryOpts" not in release.inputs
    assert release.inputs["namespace"] == catalog.KUBERAY_OPERATOR_NAMESPACE
    assert release.inputs["values"]["watchNamespace"] == [r.config["nemo-rl-gke:namespace"]]
    (cluster,) = r.of_type("gcp:container/cluster:Cluster")
    ray = cluster.inputs["addonsConfig"]["rayOperatorConfigs"][0]
    assert ray["enabled"] is False
    raycluster = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster")
    assert r.depends_on(raycluster, release)
    # Without helm: GKE's add-on, no release.
    base = synth("dev")
    assert base.helm_releases() == []
    (c,) = base.of_type("gcp:container/cluster:Cluster")
    assert c.inputs["addonsConfig"]["rayOperatorConfigs"][0]["enabled"] is True


@pytest.mark.graph
def test_helm_mode_renders_token_auth_kuberay_reads_from_our_secret_with_no_token_in_any_env(synth):
    r = synth("dev", HELM)
    rc = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster").inputs
    assert rc["spec"]["authOptions"] == {"mode": "token", "secretName": "nemo-rl-ray-auth"}
    secret = r.get("kubernetes:core/v1:Secret", "ray-auth").inputs
    assert set(secret["stringData"]) == {catalog.KUBERAY_AUTH_TOKEN_SECRET_KEY}  # the key KubeRay reads
    for group in [rc["spec"]["headGroupSpec"], *rc["spec"]["workerGroupSpecs"]]:
        for c in group["template"]["spec"]["containers"]:
            env = {e["name"]: e for e in c["env"]}
            # Defined, and empty: KubeRay then injects nothing (EnvVarExists), Ray reads RAY_AUTH_TOKEN_PATH.
            assert env["RAY_AUTH_TOKEN"] == {"name": "RAY_AUTH_TOKEN", "value": ""}
            assert env["RAY_AUTH_TOKEN_PATH"]["value"].endswith(catalog.KUBERAY_AUTH_TOKEN_SECRET_KEY)


@pytest.mark.graph
def test_helm_mode_objects_validate_against_the_kuberay_it_installs(synth):
    for overrides in (HELM, {"kubeRayOperator": "helm"}, {"kubeRayOperator": "helm", "jobMode": "own-cluster"}):
        r = synth("dev", overrides)
        assert r.error is None, r.error
        for obj in r.kubernetes_objects():
            validate_any(render.manifest_of(obj), kuberay_versions=("kuberay-v1.7.0",))


@pytest.mark.graph
@pytest.mark.parametrize("overrides", [{"kubeRayOperator": "helm"}, {}])
def test_a_release_without_token_auth_renders_no_auth_options(synth, overrides):
    r = synth("dev", overrides)  # v0.5.0: Ray 2.49 has no token auth, whatever the operator
    rc = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster").inputs
    assert "authOptions" not in rc["spec"]
