"""The hardening builders on their own: NetworkPolicies, security contexts, token files and image pins are
strictly valid Kubernetes, select what they claim, and refuse what they must."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core import catalog
from core.catalog import ImagePin
from core.images import ImageRefError, nccl_gib_installer_image, nemo_rl_image, parse_ref, pinned_ref
from tests.k8s_validation import validate_any, validate_core
from tools.checkov_scan import pods_and_policies, ray_pods
from workloads.manifests.network_policy import PeerError, PolicyArgs, dashboard_peer, fqdn_policies, network_policies
from workloads.manifests.pod_security import (
    HF_TOKEN_FILE,
    RAY_HEAD_LABELS,
    RAY_WORKER_LABELS,
    ROLE_EXPORT,
    ROLE_LABEL,
    TOKEN_VALUE_VARIABLES,
    WANDB_NETRC_FILE,
    WORKLOAD_LABELS,
    carries_token,
    harden_pod_spec,
    token_files,
    wandb_netrc,
)

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("kubernetes_schemas")]

DIGEST = "sha256:" + "ab" * 32


def _by_name(policies: list[dict]) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in policies}


def _pod(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "nemo-rl"}, "spec": spec}


# --- NetworkPolicies ----------------------------------------------------------------------------------------
FULL = PolicyArgs(
    "nemo-rl",
    ["konnectivity"],
    head_wandb=True,
    workers_hub=True,
    prefetch=True,
    prefetch_pypi=True,
)


def test_network_policies_are_strictly_valid_for_every_kind_of_dashboard_peer():
    args = PolicyArgs(
        "nemo-rl",
        ["konnectivity", "kube-system", "kuberay-operator", "172.16.0.0/28"],
        export_job=True,
        prefetch=True,
    )
    for p in network_policies(args) + network_policies(replace(args, fqdn=False)):
        validate_core(p)
    for p in fqdn_policies(FULL):
        validate_any(p)


def test_namespace_denies_ingress_and_egress_by_default_and_opens_only_named_paths():
    pol = _by_name(network_policies(PolicyArgs("nemo-rl", ["konnectivity"])))
    assert set(pol) == {
        "default-deny",
        "ray-nodes-internal",
        "dashboard-from-submitter",
        "submitter-to-dashboard",
        "dashboard-from-operator",
        "metrics-from-managed-prometheus",
        "dns",
    }
    deny = pol["default-deny"]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []}
    assert all(p["metadata"]["namespace"] == "nemo-rl" for p in pol.values())


def test_metrics_port_is_open_only_to_managed_prometheus():
    pol = _by_name(network_policies(PolicyArgs("nemo-rl", ["konnectivity"])))["metrics-from-managed-prometheus"]
    (rule,) = pol["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": catalog.RAY_METRICS_PORT}]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": catalog.GMP_NAMESPACE}}}
    ]


def test_dashboard_port_is_open_only_on_the_head_and_only_to_the_configured_peers():
    pol = _by_name(network_policies(PolicyArgs("nemo-rl", ["konnectivity", "10.0.0.0/20"])))
    dash = pol["dashboard-from-operator"]["spec"]
    assert dash["podSelector"] == {"matchLabels": RAY_HEAD_LABELS}
    (rule,) = dash["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": catalog.RAY_DASHBOARD_PORT}]
    assert {"ipBlock": {"cidr": "10.0.0.0/20"}} in rule["from"]


def test_konnectivity_and_operator_peers_are_one_entry_with_both_selectors():
    # Two entries would mean "any pod of that namespace, or any pod labelled like them in any namespace".
    assert dashboard_peer("konnectivity") == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": catalog.KONNECTIVITY_AGENT_LABELS},
    }
    assert dashboard_peer("kuberay-operator") == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": catalog.KUBERAY_OPERATOR_NAMESPACE}},
        "podSelector": {"matchLabels": catalog.KUBERAY_OPERATOR_POD_LABELS},
    }


@pytest.mark.parametrize("bad", ["10.0.0.1/20", "10.0.0.0/33", "control-plane", "", "kube_system"])
def test_dashboard_peer_that_is_neither_named_nor_a_cidr_is_refused(bad):
    with pytest.raises(PeerError):
        dashboard_peer(bad)


def test_no_dashboard_peer_at_all_is_refused():
    with pytest.raises(PeerError):
        network_policies(PolicyArgs("nemo-rl", []))


def test_ray_nodes_reach_each_other_on_every_port_and_the_submitter_only_the_dashboard():
    pol = _by_name(network_policies(PolicyArgs("nemo-rl", ["kube-system"])))
    ray = pol["ray-nodes-internal"]["spec"]
    selector = ray["podSelector"]
    assert selector["matchLabels"] == WORKLOAD_LABELS
    assert selector["matchExpressions"] == [
        {"key": "nemo-rl-gke/role", "operator": "In", "values": ["ray-head", "ray-worker"]}
    ]
    assert ray["ingress"] == [{"from": [{"podSelector": selector}]}]
    assert ray["egress"] == [{"to": [{"podSelector": selector}]}]
    out = pol["submitter-to-dashboard"]["spec"]
    assert out["policyTypes"] == ["Egress"]
    assert out["egress"] == [
        {
            "to": [{"podSelector": {"matchLabels": RAY_HEAD_LABELS}}],
            "ports": [{"protocol": "TCP", "port": catalog.RAY_DASHBOARD_PORT}],
        }
    ]


def test_outside_hosts_are_allowed_by_name_per_pod_and_https_only():
    pols = fqdn_policies(FULL)
    by_role: dict[str, set[str]] = {}
    for p in pols:
        (rule,) = p["spec"]["egress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 443}]
        hosts = {m.get("name") or m["pattern"] for m in rule["matches"]}
        role = p["spec"]["podSelector"]["matchLabels"]["nemo-rl-gke/role"]
        by_role.setdefault(role, set()).update(hosts)
    assert "pypi.org" in by_role["weights-prefetch"] and "huggingface.co" in by_role["weights-prefetch"]
    assert {"storage.googleapis.com", "api.wandb.ai"} <= by_role["ray-head"]
    assert "pypi.org" not in by_role["ray-head"] and "api.wandb.ai" not in by_role["ray-worker"]
    # GKE programs at most 50 resolved addresses per policy: one host group per policy keeps each one small.
    assert max(len(p["spec"]["egress"][0]["matches"]) for p in pols) <= 4


def test_without_fqdn_policies_the_same_pods_get_https_to_public_addresses_only():
    args = replace(FULL, fqdn=False)
    assert fqdn_policies(args) == []
    public = {n: p for n, p in _by_name(network_policies(args)).items() if n.endswith("-public-https")}
    assert set(public) == {"ray-head-public-https", "ray-worker-public-https", "weights-prefetch-public-https"}
    for p in public.values():
        (rule,) = p["spec"]["egress"]
        assert rule["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(catalog.NON_PUBLIC_RANGES)}}]
        assert rule["ports"] == [{"protocol": "TCP", "port": 443}]


def test_only_the_export_job_reaches_the_metadata_server_never_a_ray_pod():
    assert "export-metadata-server" not in _by_name(network_policies(PolicyArgs("nemo-rl", ["konnectivity"])))
    policies = _by_name(network_policies(replace(FULL, export_job=True)))
    meta = policies["export-metadata-server"]["spec"]
    assert meta["podSelector"] == {"matchLabels": {ROLE_LABEL: ROLE_EXPORT}}
    metadata_cidrs = {"169.254.169.254/32", "169.254.169.252/32"}
    for name, p in policies.items():
        if p["spec"]["podSelector"] in ({"matchLabels": RAY_HEAD_LABELS}, {"matchLabels": RAY_WORKER_LABELS}):
            cidrs = {t.get("ipBlock", {}).get("cidr") for r in p["spec"].get("egress", []) for t in r.get("to", [])}
            assert not cidrs & metadata_cidrs, name
    assert {(r["to"][0]["ipBlock"]["cidr"], p["port"]) for r in meta["egress"] for p in r["ports"]} == {
        ("169.254.169.254/32", 80),
        ("169.254.169.254/32", 8080),
        ("169.254.169.252/32", 987),
        ("169.254.169.252/32", 988),
    }


# --- security contexts ----------------------------------------------------------------------------------------
def test_hardened_pod_spec_is_valid_and_sets_every_control():
    spec = harden_pod_spec(
        {
            "initContainers": [{"name": "i", "image": "busybox:1.36"}],
            "containers": [{"name": "c", "image": "busybox:1.36"}],
        }
    )
    validate_core(_pod(spec))
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec["initContainers"] + spec["containers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert not sc.get("privileged") and not sc["capabilities"].get("add")
    # The GPU workers' exception keeps the default set minus NET_RAW; `restricted` adds a non-root user.
    workers = harden_pod_spec({"containers": [{"name": "c", "image": "busybox:1.36"}]}, drop_all=False)
    assert workers["containers"][0]["securityContext"]["capabilities"] == {"drop": ["NET_RAW"]}
    restricted = harden_pod_spec({"containers": [{"name": "c", "image": "busybox:1.36"}]}, restricted=True)
    validate_core(_pod(restricted))
    assert restricted["securityContext"]["runAsNonRoot"] is True and restricted["securityContext"]["fsGroup"] == 65534


def test_a_pod_that_calls_the_kubernetes_api_keeps_its_token_and_explicit_values_win():
    spec = harden_pod_spec(
        {"containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {"readOnlyRootFilesystem": True}}]},
        calls_kubernetes_api=True,
    )
    assert "automountServiceAccountToken" not in spec
    assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False


# --- token files -------------------------------------------------------------------------------------------
def test_tokens_reach_the_pod_as_read_only_files_and_only_paths_in_env():
    tf = token_files("nemo-rl-secrets", hugging_face=True, wandb=True, ray_auth_secret="ray-auth")
    spec = harden_pod_spec(
        {
            "containers": [{"name": "c", "image": "busybox:1.36", "env": tf.env, "volumeMounts": tf.volume_mounts}],
            "volumes": tf.volumes,
        }
    )
    validate_core(_pod(spec))
    env = {e["name"]: e for e in tf.env}
    assert env["HF_TOKEN_PATH"]["value"] == HF_TOKEN_FILE and env["NETRC"]["value"] == WANDB_NETRC_FILE
    # The one token variable: RAY_AUTH_TOKEN defined empty, so KubeRay injects nothing and Ray reads the file.
    assert set(TOKEN_VALUE_VARIABLES) & set(env) == {"RAY_AUTH_TOKEN"} and env["RAY_AUTH_TOKEN"]["value"] == ""
    assert not [e for e in tf.env if carries_token(e)]
    assert all("valueFrom" not in e for e in tf.env)
    assert all(m["readOnly"] for m in tf.volume_mounts)
    # The Hugging Face token must exist; the W&B key is optional (the setting is).
    (tokens,) = [v for v in tf.volumes if v["name"] == "tokens"]
    optional = {
        s["secret"]["items"][0]["key"]: s["secret"].get("optional", False) for s in tokens["projected"]["sources"]
    }
    assert optional == {"hf-token": False, "wandb-netrc": True}


def test_wandb_netrc_is_only_mounted_where_asked():
    tf = token_files("s", hugging_face=True)
    assert "NETRC" not in {e["name"] for e in tf.env}
    keys = [i["key"] for v in tf.volumes for s in v["projected"]["sources"] for i in s["secret"]["items"]]
    assert keys == ["hf-token"]


def test_wandb_netrc_is_a_netrc_entry_python_can_parse(tmp_path):
    import netrc

    f = tmp_path / "netrc"
    f.write_text(wandb_netrc("wandb_canary_0123"))
    f.chmod(0o600)
    login, _, password = netrc.netrc(str(f)).authenticators(catalog.WANDB_NETRC_MACHINE)
    assert (login, password) == ("user", "wandb_canary_0123")


# --- image pins -----------------------------------------------------------------------------------------------
def test_pinned_ref_adds_the_digest_when_known_and_refuses_moving_references():
    assert pinned_ref(ImagePin("nvcr.io/nvidia/nemo-rl", "v0.5.0", DIGEST)) == f"nvcr.io/nvidia/nemo-rl:v0.5.0@{DIGEST}"
    assert pinned_ref(ImagePin("nvcr.io/nvidia/nemo-rl", "v0.5.0")) == "nvcr.io/nvidia/nemo-rl:v0.5.0"
    for bad in (
        ImagePin("r", "latest"),
        ImagePin("r", ""),
        ImagePin("r", "v1", "sha256:xyz"),
        ImagePin("r:v1", "v1"),
        ImagePin("r", "-bad"),
    ):
        with pytest.raises(ImageRefError):
            pinned_ref(bad)


def test_parse_ref_tells_a_registry_port_from_a_tag():
    assert parse_ref("localhost:5000/ray:2.46.0") == ImagePin("localhost:5000/ray", "2.46.0", "")
    assert parse_ref(f"r/x:v1@{DIGEST}").digest == DIGEST
    for bad in ("localhost:5000/ray", "ray", "ray:latest", f"ray@{DIGEST}"):
        with pytest.raises(ImageRefError):
            parse_ref(bad)


def test_catalog_images_are_pinned_and_never_carry_an_invented_digest():
    for tag, pin in catalog.NEMO_RL_IMAGE_PINS.items():
        assert nemo_rl_image(tag).startswith(f"{catalog.NEMO_RL_IMAGE_REPO}:{tag}")
        assert pin.digest_source, f"{tag}: a digest (or its absence) must say where it comes from"
    # Upstream's installer is pinned by tag; the DaemonSet stays exactly as upstream ships it.
    assert nccl_gib_installer_image() == catalog.NCCL_GIB_INSTALLER_IMAGE
    with pytest.raises(ImageRefError):
        nemo_rl_image("v9.9.9")


# --- catalog facts the builders rely on -------------------------------------------------------------------
def test_token_auth_follows_the_ray_version_of_each_release():
    supports = {t: catalog.ray_supports_token_auth(r.ray_version) for t, r in catalog.NEMO_RL_RELEASES.items()}
    assert supports == {"v0.4.0": False, "v0.5.0": False, "v0.7.0": True}


def test_secure_boot_is_claimed_only_for_checked_gpu_machines_and_signed_images():
    assert all(catalog.supports_secure_boot(a.machine_type) for a in catalog.ACCELERATORS.values())
    assert catalog.supports_secure_boot("n2-standard-16")
    assert not catalog.supports_secure_boot("a3-highgpu-8g")  # a GPU machine nobody checked
    assert not catalog.supports_secure_boot("n2-standard-16", "UBUNTU_CONTAINERD")


# --- the checkov expansion --------------------------------------------------------------------------------
def test_checkov_expansion_names_pods_as_kuberay_does_and_keeps_templates():
    spec = {
        "headGroupSpec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}},
        "workerGroupSpecs": [{"groupName": "gpu-workers", "template": {"spec": {"containers": []}}}],
    }
    pods = ray_pods("c", "ns", spec)
    assert [p["metadata"]["name"] for p in pods] == ["c-head", "c-gpu-workers-worker"]
    assert pods[0]["metadata"]["labels"] == {"a": "b"} and pods[0]["metadata"]["namespace"] == "ns"
    job = {"kind": "RayJob", "metadata": {"name": "j", "namespace": "ns"}, "spec": {"rayClusterSpec": spec}}
    pol = {"kind": "NetworkPolicy", "metadata": {"name": "x"}}
    pods2, policies = pods_and_policies([job, pol, {"kind": "RayJob", "metadata": {"name": "k"}, "spec": {}}])
    assert [p["metadata"]["name"] for p in pods2] == ["j-raycluster-head", "j-raycluster-gpu-workers-worker"]
    assert policies == [pol]
