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
from workloads.kuberay_operator import CHART_DIR, KubeRayOperatorArgs, chart_values, operator_role

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


@pytest.mark.graph
def test_helm_mode_takes_a_peer_list_that_admits_its_operator_pods(synth):
    r = synth("dev", {"kubeRayOperator": "helm", "rayDashboardPeers": ["kuberay-operator", "10.8.0.0/28"]})
    assert r.error is None, r.error


# --- the operator's status-check timeout (KubeRay 1.7.0) ---------------------------------------------------------
ORACLES = ROOT / "tests" / "oracles" / "kuberay"


@pytest.mark.graph
def test_the_operator_waits_out_a_head_restart_before_status_checks_fail_a_run_for_good():
    values_text = (CHART / "values.yaml").read_text()
    # The chart documents the variable on the operator's environment and its default (values.yaml @v1.7.0).
    documented = values_text.split(f"- name: {catalog.KUBERAY_STATUS_CHECK_TIMEOUT_ENV}", 1)
    assert len(documented) == 2, "the chart no longer documents the status-check timeout"
    before = values_text[: values_text.index(f"- name: {catalog.KUBERAY_STATUS_CHECK_TIMEOUT_ENV}")]
    note = before.rsplit("\n# If job status checks", 1)[1]
    assert "transition the RayJob's JobDeploymentStatus to Failed" in note and "Default is 300" in note
    assert catalog.KUBERAY_STATUS_CHECK_TIMEOUT_DEFAULT == 300
    # ... which the Deployment template renders into the operator container's env.
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert "{{- with .Values.env }}\n          env:\n            {{- toYaml . | nindent 12 }}" in deployment
    # A failure for that reason is never retried (KubeRay 1.7.0, kept in tests/oracles/kuberay).
    retry = (ORACLES / "v1.7.0" / "checkBackoffLimitAndUpdateStatusIfNeeded.go.txt").read_text()
    assert "rayJob.Status.Reason == rayv1.JobStatusCheckTimeoutExceeded" in retry
    env = chart_values(KubeRayOperatorArgs(namespace="kuberay-system", watch_namespace="nemo-rl"))["env"]
    (timeout,) = [e["value"] for e in env if e["name"] == catalog.KUBERAY_STATUS_CHECK_TIMEOUT_ENV]
    assert isinstance(timeout, str)  # a container env value
    # A head pod rescheduled onto a new CPU node: the autoscaler's 15 minutes plus a cold NeMo-RL image pull and
    # Ray's start, with a margin of two.
    head_back = 15 * 60 + catalog.NOMINAL_IMAGE_BYTES.seconds / catalog.NOMINAL_IMAGE_PULL_BYTES_PER_S.seconds
    assert int(timeout) >= 2 * head_back > catalog.KUBERAY_STATUS_CHECK_TIMEOUT_DEFAULT


@pytest.mark.graph
def test_the_helm_stack_installs_the_operator_with_the_raised_status_check_timeout(synth):
    (release,) = synth("dev", HELM).helm_releases()
    env = {e["name"]: e["value"] for e in release.inputs["values"]["env"]}
    assert env == {catalog.KUBERAY_STATUS_CHECK_TIMEOUT_ENV: str(catalog.KUBERAY_STATUS_CHECK_TIMEOUT_SECONDS)}


# --- the operator's RBAC: KubeRay's own grant, trimmed to what the program renders -----------------------------
def _chart_rules() -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) of the chart's Role for a watched namespace with the chart's defaults (no batch
    scheduler, no KubernetesWAS gate): the `role.consistentRules` template of templates/_helpers.tpl @v1.7.0."""
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    body = helpers.split('{{- define "role.consistentRules" -}}\n', 1)[1].split("{{- if .kubernetesWASEnabled }}", 1)[0]
    return {
        (g, res, v)
        for rule in yaml.safe_load(body)["rules"]
        for g in rule["apiGroups"]
        for res in rule["resources"]
        for v in rule["verbs"]
    }


def _ours() -> set[tuple[str, str, str]]:
    role = operator_role(KubeRayOperatorArgs(namespace="kuberay-system", watch_namespace="nemo-rl"))
    return {
        (g, res, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for res in rule["resources"]
        for v in rule["verbs"]
    }


@pytest.mark.graph
def test_the_chart_binds_no_role_of_its_own_in_the_workload_namespace():
    values = chart_values(KubeRayOperatorArgs(namespace="kuberay-system", watch_namespace="nemo-rl"))
    assert values["crNamespacedRbacEnable"] is False
    for template in ("multiple_namespaces_role.yaml", "multiple_namespaces_rolebinding.yaml"):
        head = (CHART / "templates" / template).read_text().splitlines()[0]
        assert ".Values.crNamespacedRbacEnable" in head and ".Values.singleNamespaceInstall" in head, template
    # Its leader-election Role stays, in the operator's own namespace.
    leader = (CHART / "templates" / "leader_election_role.yaml").read_text()
    assert leader.splitlines()[0] == "{{- if .Values.rbacEnable }}" and "namespace: {{ .Release.Namespace }}" in leader


@pytest.mark.graph
def test_the_operators_role_is_part_of_kuberays_own_grant_and_keeps_reading_secrets():
    chart, ours = _chart_rules(), _ours()
    assert ours <= chart, sorted(ours - chart)
    assert {("", "secrets", v) for v in ("get", "list", "watch")} <= ours
    # What it leaves out: writes to the namespace's Secrets (the token Secrets live there), identities and RBAC
    # objects, the network policies, and the API server proxies into any pod or Service.
    for group, resource in [
        ("", "serviceaccounts"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingresses"),
        ("", "pods/proxy"),
        ("", "services/proxy"),
        ("cert-manager.io", "certificates"),
    ]:
        assert not {r for r in ours if r[:2] == (group, resource)}, resource
    assert not {r for r in ours if r[:2] == ("", "secrets") and r[2] not in ("get", "list", "watch")}
    assert len(ours) < len(chart) / 2


def _ray_cluster_specs(r) -> list[tuple[dict, dict]]:
    out = []
    for obj in r.kubernetes_objects():
        kind = obj.inputs.get("kind")
        if kind == "RayCluster":
            out.append((obj.inputs["metadata"], obj.inputs["spec"]))
        elif kind == "RayJob" and "rayClusterSpec" in obj.inputs["spec"]:
            out.append((obj.inputs["spec"].get("metadata") or {}, obj.inputs["spec"]["rayClusterSpec"]))
    return out


@pytest.mark.graph
@pytest.mark.parametrize(
    "overrides",
    [
        HELM,
        {"kubeRayOperator": "helm"},
        {"kubeRayOperator": "helm", "jobMode": "own-cluster"},
        {**HELM, "jobEnabled": True},
    ],
    ids=["token-auth", "no-token-auth", "own-cluster", "token-auth-job"],
)
def test_the_role_covers_everything_the_rendered_ray_objects_ask_kuberay_for(synth, overrides):
    """Each feature whose rights the Role leaves out is off in what the stack renders (the KubeRay lines that need
    them are in workloads/kuberay_operator.py)."""
    r = synth("dev", overrides)
    assert r.error is None, r.error
    specs = _ray_cluster_specs(r)
    assert specs
    for meta, spec in specs:
        assert spec.get("enableInTreeAutoscaling") in (None, False)  # no autoscaler Role, ServiceAccount, resize
        assert not spec["headGroupSpec"].get("enableIngress")  # no Ingress, IngressClass or Route
        assert "gcsFaultToleranceOptions" not in spec and "ray.io/ft-enabled" not in (meta.get("annotations") or {})
        auth = spec.get("authOptions")
        assert auth is None or auth.get("secretName")  # the operator creates no token Secret
        assert "tlsOptions" not in spec  # no cert-manager objects
    (release,) = r.helm_releases()
    values = release.inputs["values"]
    assert "useKubernetesProxy" not in values  # no pods/proxy, services/proxy
    assert "featureGates" not in values and "batchScheduler" not in values
    gates = {g["name"]: g["enabled"] for g in yaml.safe_load((CHART / "values.yaml").read_text())["featureGates"]}
    assert not (gates["RayCronJob"] or gates["RayClusterNetworkPolicy"] or gates["RayClusterMTLS"])


@pytest.mark.graph
def test_the_role_is_bound_to_the_charts_service_account_before_the_operator_starts(synth):
    r = synth("dev", HELM)
    role = r.get("kubernetes:rbac.authorization.k8s.io/v1:Role", "operator-role")
    binding = r.get("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "operator-role-binding")
    ns = r.config["nemo-rl-gke:namespace"]
    assert role.inputs["metadata"]["namespace"] == binding.inputs["metadata"]["namespace"] == ns
    sa = yaml.safe_load((CHART / "values.yaml").read_text())["serviceAccount"]
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["name"], "namespace": catalog.KUBERAY_OPERATOR_NAMESPACE}
    ]
    assert binding.inputs["roleRef"]["name"] == role.inputs["metadata"]["name"] != "kuberay-operator"
    (release,) = r.helm_releases()
    assert r.depends_on(release, role) and r.depends_on(release, binding)
