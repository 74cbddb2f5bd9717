"""What the hardened program renders for every shipped stack, and the bad input it refuses
(docs/research/harden.md)."""

from __future__ import annotations

import json

import pytest

from core import catalog, shell
from core.images import is_nemo_rl_image
from core.naming import HF_SECRET
from workloads.manifests import pod_security as ps
from workloads.manifests.rdma import rdma_pod_mixin

pytestmark = pytest.mark.graph

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
NAT = "gcp:compute/routerNat:RouterNat"
ROUTER = "gcp:compute/router:Router"
SUBNET = "gcp:compute/subnetwork:Subnetwork"

INVALID = [
    ({"authorizedNetworks": ["203.0.113.7/24"]}, "nemo-rl-gke:authorizedNetworks", "not a valid CIDR"),
    ({"authorizedNetworks": ["office"]}, "nemo-rl-gke:authorizedNetworks", "not a valid CIDR"),
    ({"privateEndpoint": True, "dnsEndpoint": False}, "nemo-rl-gke:privateEndpoint", "dnsEndpoint"),
    ({"rayDashboardPeers": ["kuberay-operator"]}, "nemo-rl-gke:rayDashboardPeers", "kubeRayOperator"),
    # The mirror case: the stack's own operator runs as pods in its namespace; the API server's path admits nothing
    # of it, so its status calls would time out.
    (
        {"kubeRayOperator": "helm", "rayDashboardPeers": ["konnectivity"]},
        "nemo-rl-gke:rayDashboardPeers",
        "'kuberay-operator'",
    ),
    ({"kubeRayOperator": "helm", "rayDashboardPeers": ["10.8.0.0/28"]}, "nemo-rl-gke:rayDashboardPeers", "lacks"),
    ({"rayDashboardPeers": ["control-plane"]}, "nemo-rl-gke:rayDashboardPeers", "not a valid CIDR"),
    ({"rayTokenAuth": "on"}, "nemo-rl-gke:rayTokenAuth", "Ray >= 2.52.0"),
    # GKE's add-on may run KubeRay 1.4.2, whose operator cannot send a token.
    (
        {"rayTokenAuth": "on", "nemoRlRelease": "v0.7.0", "jobEnabled": False},
        "nemo-rl-gke:rayTokenAuth",
        "kubeRayOperator",
    ),
    ({"kubeRayOperator": "kuberay"}, "nemo-rl-gke:kubeRayOperator", "must be one of"),
    # Cloud Storage soft delete accepts 7..90 days or 0 (pulumi-gcp BucketSoftDeletePolicyArgs).
    ({"exportSoftDeleteDays": 3}, "nemo-rl-gke:exportSoftDeleteDays", "7..90"),
    ({"exportSoftDeleteDays": 91}, "nemo-rl-gke:exportSoftDeleteDays", "7..90"),
]


def _objects(res, kind: str) -> list[dict]:
    return [r.inputs for r in res.kubernetes_objects() if r.inputs.get("kind") == kind]


def _pod_templates(res) -> dict[str, dict]:
    """role -> pod template, for every Ray / submitter template the stack renders."""
    out = {}
    for rc in _objects(res, "RayCluster"):
        out["head"] = rc["spec"]["headGroupSpec"]["template"]
        for g in rc["spec"]["workerGroupSpecs"]:
            out[f"worker:{g['groupName']}"] = g["template"]
    for job in _objects(res, "RayJob"):
        out["submitter"] = job["spec"]["submitterPodTemplate"]
        if "rayClusterSpec" in job["spec"]:
            out["job-head"] = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
            for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
                out[f"job-worker:{g['groupName']}"] = g["template"]
    return out


@pytest.mark.parametrize(
    "overrides,key,hint", INVALID, ids=[c[1].split(":")[1] + f"-{i}" for i, c in enumerate(INVALID)]
)
def test_bad_security_input_is_refused_naming_its_key_before_anything_is_registered(synth, overrides, key, hint):
    r = synth("dev", overrides)
    assert r.error is not None and r.resources == []
    named = [ln for ln in r.error.splitlines() if key + ":" in ln]
    assert named and any(hint in ln for ln in named), r.error


def test_token_auth_without_its_secret_is_refused_naming_the_key(synth):
    r = synth(
        "dev",
        {"nemoRlRelease": "v0.7.0", "jobEnabled": False, "kubeRayOperator": "helm"},
        secrets={"rayAuthToken": None},
    )
    assert r.error is not None and r.resources == []
    assert any("nemo-rl-gke:rayAuthToken:" in ln and "openssl rand" in ln for ln in r.error.splitlines())


def test_every_workload_pod_template_carries_the_labels_the_network_policies_select(synth, stack):
    templates = _pod_templates(synth(stack))
    assert {"head", "submitter"} <= set(templates)
    for role, t in templates.items():
        labels = t["metadata"]["labels"]
        assert labels.items() >= ps.WORKLOAD_LABELS.items(), role
    assert templates["head"]["metadata"]["labels"] == ps.RAY_HEAD_LABELS


def test_every_workload_pod_is_hardened_and_unprivileged(synth, stack):
    for role, t in _pod_templates(synth(stack)).items():
        spec = t["spec"]
        assert spec["automountServiceAccountToken"] is False, role
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, role
        for c in spec["containers"]:
            sc = c["securityContext"]
            # Every capability dropped, except on the GPU workers, which keep the default set minus NET_RAW.
            dropped = ["NET_RAW"] if "worker" in role else ["ALL"]
            assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == dropped, role
            assert not sc.get("privileged") and not sc["capabilities"].get("add"), role
            # The release's image, from nvcr.io or (imagePath streaming, the default) the stack's registry copy.
            assert ":latest" not in c["image"] and is_nemo_rl_image(c["image"]) and ":v" in c["image"], role


def _envs(value):
    """Every env list anywhere in a manifest."""
    if isinstance(value, dict):
        if isinstance(value.get("env"), list):
            yield value["env"]
        for v in value.values():
            yield from _envs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _envs(v)


@pytest.mark.parametrize(
    "variant",
    [None, {"kubeRayOperator": "helm", "nemoRlRelease": "v0.7.0", "jobEnabled": False}],
    ids=["shipped", "token-auth"],
)
def test_no_pod_env_anywhere_holds_a_token_or_refers_to_the_token_secret(synth, stack, variant):
    res = synth(stack, variant) if variant else synth(stack)
    assert res.error is None, res.error
    for r in res.kubernetes_objects():
        assert '"secretKeyRef"' not in json.dumps(r.inputs), r.name
        for env in _envs(r.inputs):
            # RAY_AUTH_TOKEN may only appear defined empty: it keeps KubeRay from injecting the token.
            assert [e for e in env if ps.carries_token(e)] == [], r.name


def test_the_submitter_runs_as_a_job_pod_and_submits_exactly_the_rayjobs_entrypoint(synth, stack):
    (job,) = _objects(synth(stack), "RayJob")
    sub = job["spec"]["submitterPodTemplate"]["spec"]
    assert sub["restartPolicy"] == "Never"
    (container,) = sub["containers"]
    # The program's own submitter (core.shell.job_submitter_command: it ends only when the Ray job has), in the
    # shape of KubeRay's: bash -ce, and the spec's entrypoint pasted after `ray job submit ... --`.
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    (script,) = container["args"]
    assert f" -- {job['spec']['entrypoint']} ; fi ;" in script
    renv = shell.go_quote(shell.kuberay_runtime_env_json(job["spec"]["runtimeEnvYAML"]))
    assert f"--runtime-env-json {renv} " in script


def test_token_auth_is_on_exactly_where_the_ray_has_it_and_the_operator_can_send_it(synth):
    # (release, operator) -> token auth. GKE's add-on never: its KubeRay may be 1.4.2, which cannot send a token.
    cases = {
        ("v0.5.0", "gke-addon"): False,
        ("v0.7.0", "gke-addon"): False,
        ("v0.5.0", "helm"): False,
        ("v0.7.0", "helm"): True,
    }
    for (release, operator), expected in cases.items():
        res = synth("dev", {"nemoRlRelease": release, "jobEnabled": release == "v0.5.0", "kubeRayOperator": operator})
        assert res.error is None, res.error
        templates = _pod_templates(res)
        for role, t in templates.items():
            for c in t["spec"]["containers"]:
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                assert (env.get("RAY_AUTH_MODE") == "token") is expected, (release, operator, role)
                if expected:
                    assert env["RAY_AUTH_TOKEN_PATH"] == ps.RAY_AUTH_TOKEN_FILE and env["RAY_AUTH_TOKEN"] == ""
        secrets = {s["metadata"]["name"] for s in _objects(res, "Secret")}
        assert ("nemo-rl-ray-auth" in secrets) is expected and HF_SECRET in secrets
        for rc in _objects(res, "RayCluster"):
            # KubeRay >= 1.6.0 reads our Secret for its own dashboard calls (authOptions.secretName).
            want = {"mode": "token", "secretName": "nemo-rl-ray-auth"} if expected else None
            assert rc["spec"].get("authOptions") == want, (release, operator)


def test_rdma_interfaces_and_gib_environment_of_the_workers_are_unchanged(synth, stack):
    res = synth(stack)
    acc = (
        catalog.ACCELERATORS[res.config["nemo-rl-gke:gpuType"]]
        if "nemo-rl-gke:gpuType" in res.config
        else catalog.ACCELERATORS["nvidia-b200"]
    )
    release = catalog.NEMO_RL_RELEASES[res.config.get("nemo-rl-gke:nemoRlRelease", "v0.5.0")]
    mixin = rdma_pod_mixin(acc, release)
    for role, t in _pod_templates(res).items():
        if "worker" not in role:
            continue
        assert t["metadata"]["annotations"] == mixin.annotations, role
        (c,) = t["spec"]["containers"]
        assert c["env"][: len(mixin.env)] == mixin.env and c["args"] == [mixin.startup_prefix], role
        mounts = c["volumeMounts"]
        assert all(m in mounts for m in mixin.volume_mounts), role


def test_network_policies_are_rendered_in_the_workload_namespace(synth, stack):
    res = synth(stack)
    (rc,) = _objects(res, "RayCluster")
    workload_ns = rc["metadata"]["namespace"]
    every = _objects(res, "NetworkPolicy") + _objects(res, "FQDNNetworkPolicy")
    # A team platform renders its experiments' namespaces' own policies too, each in that experiment's namespace.
    experiment_ns = {
        n["metadata"]["name"]
        for n in _objects(res, "Namespace")
        if catalog.EXPERIMENT_NAMESPACE_LABEL in (n["metadata"].get("labels") or {})
    }
    assert {p["metadata"]["namespace"] for p in every} <= {workload_ns, *experiment_ns}
    pols = {p["metadata"]["name"]: p for p in every if p["metadata"]["namespace"] == workload_ns}
    assert {
        "default-deny",
        "ray-nodes-internal",
        "dashboard-from-submitter",
        "submitter-to-dashboard",
        "dashboard-from-operator",
        "metrics-from-managed-prometheus",
        "dns",
    } <= set(pols)
    # The dashboard is never exposed through a load balancer or an ingress.
    assert not _objects(res, "Ingress")
    assert all(s.get("spec", {}).get("type") != "LoadBalancer" for s in _objects(res, "Service"))
    for rc in _objects(res, "RayCluster"):
        assert rc["spec"]["headGroupSpec"].get("serviceType", "ClusterIP") == "ClusterIP"


def test_nodes_are_private_and_reach_the_internet_through_nat_on_the_primary_vpc_only(synth, stack):
    res = synth(stack)
    (cluster,) = res.of_type(CLUSTER)
    assert cluster.inputs["privateClusterConfig"]["enablePrivateNodes"] is True
    assert cluster.inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    (router,) = res.of_type(ROUTER)
    (nat,) = res.of_type(NAT)
    primary = res.get(SUBNET, "primary")
    assert primary.inputs["privateIpGoogleAccess"] is True
    assert res.depends_on(nat, router) and res.depends_on(nat, primary)
    assert [s["sourceIpRangesToNats"] for s in nat.inputs["subnetworks"]] == [["ALL_IP_RANGES"]]
    assert res.depends_on(router, res.get("gcp:compute/network:Network", "primary"))
    for net in ("gvnic", "rdma"):
        assert not res.depends_on(router, res.get("gcp:compute/network:Network", net))


def test_standard_pools_run_shielded_nodes_with_secure_boot_and_autopilot_sets_nothing(synth, stack):
    res = synth(stack)
    pools = res.of_type(NODE_POOL)
    if res.config.get("nemo-rl-gke:clusterMode") == "autopilot":
        assert pools == []
        (cluster,) = res.of_type(CLUSTER)
        assert "nodeConfig" not in cluster.inputs
        return
    assert pools
    for pool in pools:
        assert pool.inputs["nodeConfig"]["shieldedInstanceConfig"] == {
            "enableIntegrityMonitoring": True,
            "enableSecureBoot": True,
        }, pool.name


def test_authorized_networks_and_a_private_endpoint_reach_the_cluster_and_the_provider(synth):
    res = synth("dev", {"privateEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]})
    assert res.error is None, res.error
    (cluster,) = res.of_type(CLUSTER)
    assert cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert cluster.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "203.0.113.0/24", "displayName": "authorized-0"}
    ]


def test_every_shipped_stack_keeps_its_ip_endpoint_private_and_opening_it_takes_two_settings(synth, stack):
    # An IP endpoint open to every address is one credential away from the control plane: the default is the DNS
    # endpoint (IAM).
    (cluster,) = synth(stack).of_type(CLUSTER)
    assert cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert cluster.inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    opened = synth("dev", {"privateEndpoint": False, "authorizedNetworks": ["198.51.100.0/24"]})
    assert opened.error is None, opened.error
    (c,) = opened.of_type(CLUSTER)
    assert c.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert [b["cidrBlock"] for b in c.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["198.51.100.0/24"]


def test_deleted_or_overwritten_exports_stay_restorable_for_the_soft_delete_window(synth, stack):
    bucket = synth(stack).get("gcp:storage/bucket:Bucket", "bucket")
    assert bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 30 * 24 * 3600}
    off = synth("dev", {"exportSoftDeleteDays": 0}).get("gcp:storage/bucket:Bucket", "bucket")
    assert off.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 0}


def test_the_cpu_pods_land_where_the_ray_head_does_and_never_on_gpu_capacity(synth, stack):
    # The prefetch Job and the image pre-pull take the CPU placement the head takes (one builder,
    # workloads/manifests/pod_parts.py), so the pre-pulled image is where the head and the prefetch start.
    res = synth(stack)
    head = _pod_templates(res)["head"]["spec"]["nodeSelector"]
    assert "cloud.google.com/gke-accelerator" not in head
    jobs = {j["metadata"]["name"]: j for j in _objects(res, "Job")}
    prefetch = [j for n, j in jobs.items() if n.endswith("-prefetch")]
    assert prefetch, "every shipped stack prefetches the weights"
    assert all(j["spec"]["template"]["spec"]["nodeSelector"] == head for j in prefetch)
    for ds in _objects(res, "DaemonSet"):
        if ds["metadata"]["name"] == "nemo-rl-image-prepull":
            assert ds["spec"]["template"]["spec"]["nodeSelector"] == head
