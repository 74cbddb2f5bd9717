"""The policy pack (policy/): every shipped stack passes every policy, and a broken variant of each policy's
subject is flagged by that policy alone, with a message that says what to change.

The rules are plain functions (policy/nemo_rl_policies.py) fed the synth engine's records here; the built
pack itself runs in its own venv (.venv-policy, made by `make test`) through policy/offline_check.py, which
drives pulumi-policy's analyzer with the same records as protobuf requests.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
from pathlib import Path
from typing import Callable

import pytest

from core import catalog
from core.dotted import get_path
from synth import engine, policy_check

ROOT = Path(__file__).resolve().parents[1]
POLICY_DIR = ROOT / "policy"
if str(POLICY_DIR) not in sys.path:
    sys.path.insert(0, str(POLICY_DIR))

import nemo_rl_policies as P  # noqa: E402

SHIPPED = engine.platform_stacks()  # the experiment stacks: tests/test_platform_experiments.py
FAKE_HF_TOKEN = "hf_" + "Ab3" * 12  # token-shaped, not a real token
FAKE_WANDB_KEY = "0123456789abcdef" * 2 + "01234567"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"


def resources_of(result: engine.SynthResult) -> list[P.Resource]:
    """The engine's custom resources as the rules see them (retainOnDelete visible, unlike in a policy pack)."""
    return [
        P.Resource(
            type=r.type,
            name=r.name,
            props=r.inputs,
            urn=r.urn,
            stack=result.stack,
            protect=r.protect,
            retain_on_delete=r.retain_on_delete,
            provider_urn=r.provider_urn,
            property_dependencies=r.property_dependencies,
            custom=True,
        )
        for r in result.resources
        if r.custom
    ]


# --- building broken variants ----------------------------------------------------------------------------------
def _one(resources: list[P.Resource], type_: str, name: str) -> P.Resource:
    found = [r for r in resources if r.type == type_ and r.name == name]
    assert len(found) == 1, f"{type_} {name} not in the stack: {sorted(r.name for r in resources if r.type == type_)}"
    return found[0]


def changed(resources, type_, name, change: Callable[[dict], None] | None = None, **options):
    """A copy of the stack where resource (type_, name) has `change` applied to a copy of its props and/or
    `options` (protect, provider_urn, property_dependencies...) replaced."""
    target = _one(resources, type_, name)
    props = copy.deepcopy(dict(target.props))
    if change:
        change(props)
    new = dataclasses.replace(target, props=props, **options)
    return [new if r is target else r for r in resources]


def without(resources, type_, name):
    """A copy of the stack without resource (type_, name)."""
    target = _one(resources, type_, name)
    return [r for r in resources if r is not target]


def added(resources, type_, name, props, like=(RAYCLUSTER, "raycluster")):
    """A copy of the stack plus one resource, with the provider of the resource `like`."""
    model = _one(resources, *like)
    urn = f"urn:pulumi:{model.stack}::nemo-rl-gke::{type_}::{name}"
    return resources + [
        P.Resource(type=type_, name=name, props=props, urn=urn, stack=model.stack, provider_urn=model.provider_urn)
    ]


def _worker(props: dict) -> dict:
    return props["spec"]["workerGroupSpecs"][0]["template"]


def _worker_env(props: dict) -> list[dict]:
    return _worker(props)["spec"]["containers"][0]["env"]


def _set_env(props: dict, name: str, value: str | None) -> None:
    env = _worker_env(props)
    env[:] = [e for e in env if e["name"] != name] + ([{"name": name, "value": value}] if value is not None else [])


def _rayjob(entrypoint="uv run python examples/run_grpo_math.py", runtime_env="", cluster_spec=None) -> dict:
    spec = {"entrypoint": entrypoint, "runtimeEnvYAML": runtime_env}
    if cluster_spec is None:
        spec["clusterSelector"] = {"ray.io/cluster": "nemo-dev-ray"}
    else:
        spec["rayClusterSpec"] = cluster_spec
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "grpo", "namespace": "nemo-rl"},
        "spec": spec,
    }


def _dig(d: dict, path: str):
    value = get_path(d, path, KeyError)
    if value is KeyError:
        raise KeyError(path)
    return value


def _network_id(resources, name):
    return _one(resources, "gcp:compute/network:Network", name)


SERVICE = "kubernetes:core/v1:Service"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"


def _service(name: str, type_: str, ports: list[dict]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "nemo-rl"},
        "spec": {"type": type_, "selector": {"ray.io/node-type": "head"}, "ports": ports},
    }


def _with_head(resources, **head) -> dict:
    """The stack's RayCluster spec with `head` set on its headGroupSpec (a RayJob's own cluster, say)."""
    spec = copy.deepcopy(dict(_one(resources, RAYCLUSTER, "raycluster").props["spec"]))
    spec["headGroupSpec"].update(head)
    return spec


def _ingress(name: str, service: str, port: dict) -> dict:
    backend = {"service": {"name": service, "port": port}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "nemo-rl"},
        "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]},
    }


# (case id, stack, build(resources) -> resources, policy that must flag it, phrase its message must contain)
BROKEN: list[tuple[str, str, Callable, str, str]] = [
    (
        "api-key-literal-in-worker-env",
        "dev",
        lambda rs: changed(rs, RAYCLUSTER, "raycluster", lambda p: _set_env(p, "NGC_API_KEY", FAKE_HF_TOKEN)),
        "no-plaintext-secrets",
        "mount it as a read-only file",
    ),
    (
        "hf-token-from-the-secret-into-worker-env",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker_env(p).append(
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "nemo-rl-secrets", "key": "hf-token"}}}
            ),
        ),
        "tokens-only-as-files",
        "HF_TOKEN_PATH",
    ),
    (
        "token-secret-as-env-under-another-name",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker_env(p).append(
                {
                    "name": "HUB_CREDENTIAL",
                    "valueFrom": {"secretKeyRef": {"name": "nemo-rl-secrets", "key": "hf-token"}},
                }
            ),
        ),
        "tokens-only-as-files",
        "reads Secret 'nemo-rl-secrets'",
    ),
    (
        "wandb-key-reference-in-runtime-env",
        "dev",
        lambda rs: added(rs, RAYJOB, "job", _rayjob(runtime_env="env_vars:\n  WANDB_API_KEY: $WANDB_API_KEY\n")),
        "tokens-only-as-files",
        "env_vars.WANDB_API_KEY",
    ),
    (
        "control-plane-open-outside-dev",
        "codelab",
        lambda rs: changed(
            rs, P.CLUSTER_TYPE, "cluster", lambda p: p["privateClusterConfig"].update(enablePrivateEndpoint=False)
        ),
        "control-plane-restricted",
        "nemo-rl-gke:authorizedNetworks",
    ),
    (
        "control-plane-open-on-dev",
        "dev",
        lambda rs: changed(
            rs, P.CLUSTER_TYPE, "cluster", lambda p: p["privateClusterConfig"].update(enablePrivateEndpoint=False)
        ),
        "control-plane-restricted",
        "nemo-rl-gke:authorizedNetworks",
    ),
    # What KubeRay injects when a container does not define RAY_AUTH_TOKEN itself (pod.go @v1.6.0).
    (
        "ray-token-from-its-secret-into-head-env",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: p["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"].append(
                {
                    "name": "RAY_AUTH_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "nemo-rl-ray-auth", "key": "auth_token"}},
                }
            ),
        ),
        "tokens-only-as-files",
        "RAY_AUTH_TOKEN_PATH",
    ),
    (
        "wandb-key-in-configmap",
        "dev",
        lambda rs: added(
            rs,
            "kubernetes:core/v1:ConfigMap",
            "settings",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "nemo-rl"},
                "data": {"WANDB_API_KEY": FAKE_WANDB_KEY, "HF_HOME": "/lustre/huggingface_cache"},
            },
        ),
        "no-plaintext-secrets",
        "move it to a Kubernetes Secret",
    ),
    (
        "token-in-rayjob-runtime-env",
        "dev",
        lambda rs: added(rs, RAYJOB, "job", _rayjob(runtime_env=f"env_vars:\n  HUB_API_KEY: {FAKE_HF_TOKEN}\n")),
        "no-plaintext-secrets",
        "shown in the Ray dashboard",
    ),
    (
        "token-in-rayjob-entrypoint",
        "dev",
        lambda rs: added(rs, RAYJOB, "job", _rayjob(entrypoint=f"HF_TOKEN={FAKE_HF_TOKEN} uv run python x.py")),
        "no-plaintext-secrets",
        "(HF_TOKEN_PATH)",
    ),
    (
        "password-in-data-prep-job-command",
        "dev",
        lambda rs: added(
            rs,
            "kubernetes:batch/v1:Job",
            "data-prep",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "prep", "namespace": "nemo-rl"},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "prep",
                                    "image": "nvcr.io/nvidia/nemo-rl:v0.5.0",
                                    "args": ["export DB_PASSWORD=s3cr3t-value && python prep.py"],
                                }
                            ],
                        }
                    }
                },
            },
        ),
        "no-plaintext-secrets",
        "mount it as a read-only file",
    ),
    (
        "lustre-gke-support-without-legacy-port",
        "dev",
        lambda rs: changed(rs, P.LUSTRE_TYPE, "lustre", lambda p: p.update(gkeSupportEnabled=True)),
        "lustre-port-mode-consistent",
        "nemo-rl-gke:lustrePortMode",
    ),
    (
        "legacy-port-without-gke-support",
        "codelab",
        lambda rs: changed(
            rs,
            P.CLUSTER_TYPE,
            "cluster",
            lambda p: _dig(p, "addonsConfig.lustreCsiDriverConfig").update(enableLegacyLustrePort=True),
        ),
        "lustre-port-mode-consistent",
        "`modern` turns both off",
    ),
    (
        "lustre-on-another-vpc",
        "dev",
        lambda rs: changed(
            rs,
            P.LUSTRE_TYPE,
            "lustre",
            lambda p: p.update(network="projects/your-gcp-project-id/global/networks/nemo-dev-gvnic-net"),
            property_dependencies={"network": [_network_id(rs, "gvnic").urn]},
        ),
        "lustre-on-cluster-vpc",
        "create the instance with network set to the cluster's VPC",
    ),
    (
        "codelab-ray-version-mismatch",
        "codelab",
        lambda rs: changed(rs, RAYCLUSTER, "raycluster", lambda p: p["spec"].update(rayVersion="2.54.0")),
        "ray-version-matches-image",
        "set rayVersion to 2.46.0",
    ),
    (
        "rayjob-own-cluster-ray-version",
        "dev",
        lambda rs: added(
            rs,
            RAYJOB,
            "job",
            _rayjob(
                cluster_spec={**copy.deepcopy(_one(rs, RAYCLUSTER, "raycluster").props["spec"]), "rayVersion": "2.46.0"}
            ),
        ),
        "ray-version-matches-image",
        "set rayVersion to 2.49.2",
    ),
    (
        "unknown-nemo-rl-release",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker(p)["spec"]["containers"][0].update(image="nvcr.io/nvidia/nemo-rl:v9.9.9"),
        ),
        "ray-version-matches-image",
        "python -m synth.policy_facts",
    ),
    (
        "unknown-nemo-rl-release-in-a-registry-copy",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker(p)["spec"]["containers"][0].update(
                image="us-central1-docker.pkg.dev/your-gcp-project-id/nemo/nemo-rl:v9.9.9"
            ),
        ),
        "ray-version-matches-image",
        "python -m synth.policy_facts",
    ),
    (
        "worker-without-interfaces-annotation",
        "dev",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker(p)["metadata"]["annotations"].pop("networking.gke.io/interfaces"),
        ),
        "gpu-pods-use-rdma",
        "add it (attach gvnic-1 and rdma-0..rdma-7",
    ),
    (
        "worker-with-eth0-only",
        "autopilot",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _worker(p)["metadata"]["annotations"].update(
                {"networking.gke.io/interfaces": '[{"interfaceName":"eth0","network":"default"}]'}
            ),
        ),
        "gpu-pods-use-rdma",
        "attaching all 8 RDMA networks",
    ),
    (
        "a3u-tuner-on-b200",
        "codelab",
        lambda rs: changed(
            rs,
            RAYCLUSTER,
            "raycluster",
            lambda p: _set_env(p, "NCCL_TUNER_CONFIG_PATH", catalog.ACCELERATORS["nvidia-h200-141gb"].tuner_config),
        ),
        "gpu-pods-use-rdma",
        "set it to /usr/local/gib/configs/tuner_config_a4.txtpb",
    ),
    (
        "no-tuner-config",
        "autopilot",
        lambda rs: changed(rs, RAYCLUSTER, "raycluster", lambda p: _set_env(p, "NCCL_TUNER_CONFIG_PATH", None)),
        "gpu-pods-use-rdma",
        "add env NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb",
    ),
    (
        "default-kubernetes-provider",
        "dev",
        lambda rs: changed(
            rs,
            "kubernetes:core/v1:Namespace",
            "namespace",
            provider_urn="urn:pulumi:dev::nemo-rl-gke::pulumi:providers:kubernetes::default_4_34_2",
        ),
        "kubernetes-explicit-provider",
        "provider=gke.provider",
    ),
    (
        "no-kubernetes-provider",
        "dev",
        lambda rs: changed(rs, "kubernetes:core/v1:ServiceAccount", "ksa", provider_urn=None),
        "kubernetes-explicit-provider",
        "provider=gke.provider",
    ),
    (
        "on-demand-gpu-pool",
        "dev",
        lambda rs: changed(rs, P.NODE_POOL_TYPE, "gpu-spot", lambda p: p["nodeConfig"].update(spot=False)),
        "gpu-capacity-spot-or-reserved",
        "nemo-rl-gke:capacity",
    ),
    (
        "on-demand-compute-class-priority",
        "autopilot",
        lambda rs: changed(rs, COMPUTE_CLASS, "gpu-compute-class", lambda p: p["spec"]["priorities"][0].pop("spot")),
        "gpu-capacity-spot-or-reserved",
        "flexStart or reservations",
    ),
    (
        "spot-only-without-checkpointing-outside-dev",
        "codelab",
        lambda rs: changed(
            without(rs, P.NODE_POOL_TYPE, "gpu-flex"),
            RAYJOB,
            "rayjob",
            lambda p: p["spec"].update(
                entrypoint=p["spec"]["entrypoint"].replace("checkpointing.enabled=True", "checkpointing.enabled=False")
            ),
        ),
        "gpu-spot-only-needs-checkpointing",
        "add flex-start or a reservation to nemo-rl-gke:capacity",
    ),
    (
        "unprotected-lustre-outside-dev",
        "codelab",
        lambda rs: changed(rs, P.LUSTRE_TYPE, "lustre", protect=False, retain_on_delete=False),
        "protected-outside-dev",
        "nemo-rl-gke:lustreOnDestroy",
    ),
    (
        "cluster-without-deletion-protection-outside-dev",
        "autopilot",
        lambda rs: changed(rs, P.CLUSTER_TYPE, "cluster", lambda p: p.update(deletionProtection=False)),
        "protected-outside-dev",
        "nemo-rl-gke:clusterDeletionProtection true",
    ),
    (
        "bucket-with-acls",
        "dev",
        lambda rs: changed(rs, P.BUCKET_TYPE, "bucket", lambda p: p.update(uniformBucketLevelAccess=False)),
        "bucket-uniform-access",
        "uniform_bucket_level_access=True",
    ),
    (
        "gpu-pool-default-compute-sa",
        "dev",
        lambda rs: changed(
            rs,
            P.NODE_POOL_TYPE,
            "gpu-spot",
            lambda p: p["nodeConfig"].update(serviceAccount="000000000000-compute@developer.gserviceaccount.com"),
        ),
        "nodes-not-default-service-account",
        "dedicated node service account",
    ),
    (
        "autopilot-nodes-without-service-account",
        "autopilot",
        lambda rs: changed(
            rs,
            P.CLUSTER_TYPE,
            "cluster",
            lambda p: _dig(p, "clusterAutoscaling.autoProvisioningDefaults").pop("serviceAccount"),
        ),
        "nodes-not-default-service-account",
        "dedicated node service account",
    ),
    (
        "cluster-without-workload-identity",
        "dev",
        lambda rs: changed(rs, P.CLUSTER_TYPE, "cluster", lambda p: p.pop("workloadIdentityConfig")),
        "workload-identity-enabled",
        "set it to <project>.svc.id.goog",
    ),
    (
        "pool-exposing-node-metadata",
        "codelab",
        lambda rs: changed(
            rs,
            P.NODE_POOL_TYPE,
            "gpu-spot",
            lambda p: p["nodeConfig"]["workloadMetadataConfig"].update(mode="GCE_METADATA"),
        ),
        "workload-identity-enabled",
        "set it to GKE_METADATA",
    ),
]

# Ray's code-running ports (KubeRay constant.go, tests/oracles/kuberay/constant-ports.go.txt) exposed outside the
# cluster, each way the program's objects or a user's could do it.
BROKEN += [
    (
        "dashboard-behind-a-load-balancer",
        "dev",
        lambda rs: added(rs, SERVICE, "dash", _service("dash", "LoadBalancer", [{"port": 80, "targetPort": 8265}])),
        "ray-ports-not-exposed",
        "dashboard (8265)",
    ),
    (
        "ray-client-on-a-node-port-by-name",
        "codelab",
        lambda rs: added(
            rs, SERVICE, "client", _service("client", "NodePort", [{"port": 10001, "targetPort": "client"}])
        ),
        "ray-ports-not-exposed",
        "client (10001)",
    ),
    (
        "ingress-to-the-head-services-dashboard-port",
        "dev",
        lambda rs: added(rs, INGRESS, "dash", _ingress("dash", "nemo-dev-ray-head-svc", {"number": 8265})),
        "ray-ports-not-exposed",
        "kubectl port-forward",
    ),
    (
        "ingress-through-a-cluster-ip-service-to-the-dashboard",
        "dev",
        lambda rs: added(
            added(rs, SERVICE, "web", _service("web", "ClusterIP", [{"name": "web", "port": 80, "targetPort": 8265}])),
            INGRESS,
            "web",
            _ingress("web", "web", {"name": "web"}),
        ),
        "ray-ports-not-exposed",
        "Ingress 'web' routes",
    ),
    (
        "head-service-of-type-load-balancer",
        "dev",
        lambda rs: changed(
            rs, RAYCLUSTER, "raycluster", lambda p: p["spec"]["headGroupSpec"].update(serviceType="LoadBalancer")
        ),
        "ray-ports-not-exposed",
        "headGroupSpec.serviceType LoadBalancer",
    ),
    (
        "head-ingress-of-an-own-cluster-rayjob",
        "dev",
        lambda rs: added(rs, RAYJOB, "job", _rayjob(cluster_spec=_with_head(rs, enableIngress=True))),
        "ray-ports-not-exposed",
        "spec.rayClusterSpec.headGroupSpec.enableIngress",
    ),
]

# Settings that change the graph in ways every policy accepts.
ACCEPTED_VARIANTS = [
    ("dev", {"lustrePortMode": "legacy"}),  # both Lustre sides on
    ("codelab", {"lustreOnDestroy": "retain"}),  # retained instead of protected
    ("dev", {"capacity": ["reservation"], "reservation": "a3u-reservation"}),  # reserved instead of spot
    ("codelab", {"capacity": ["spot"]}),  # spot only, but the job checkpoints
    ("dev", {"capacity": ["spot"], "jobEnabled": False}),  # spot only without a job: fine on dev
    ("autopilot", {"capacity": ["reservation", "flex-start", "spot"], "reservation": "b200-res"}),
    ("autopilot", {"jobMode": "own-cluster"}),  # a RayJob embedding its own GPU RayCluster
    # Ray token auth with the stack's own KubeRay: RAY_AUTH_TOKEN defined empty is no token in the environment.
    ("dev", {"kubeRayOperator": "helm", "nemoRlRelease": "v0.7.0", "jobEnabled": False}),
    ("dev", {"privateEndpoint": False, "authorizedNetworks": ["203.0.113.0/24"]}),  # an IP endpoint for one range
]


@pytest.fixture(scope="module")
def stacks(synth) -> dict[str, list[P.Resource]]:
    return {s: resources_of(synth(s)) for s in SHIPPED}


def _broken(stacks, case):
    _id, stack, build, _policy, _phrase = case
    return build(stacks[stack])


# --- the rules on the engine's records ------------------------------------------------------------------------
@pytest.mark.graph
def test_policy_catalog_copy_equals_infra_catalog():
    from synth import policy_facts

    assert policy_facts.PATH.read_text(encoding="utf-8") == policy_facts.render(), (
        "policy/catalog_facts.json is stale: run `python -m synth.policy_facts`"
    )
    assert P.NEMO_RL_RAY_VERSIONS == {t: r.ray_version for t, r in catalog.NEMO_RL_RELEASES.items()}
    assert P.NEMO_RL_IMAGE_REPO == catalog.NEMO_RL_IMAGE_REPO
    assert P.TUNER_CONFIGS == {g: a.tuner_config for g, a in catalog.ACCELERATORS.items()}
    assert P.RDMA_NICS_PER_NODE == catalog.RDMA_NICS_PER_NODE
    from core import naming
    from workloads.manifests import pod_security

    assert P.TOKEN_VALUE_VARIABLES == pod_security.TOKEN_VALUE_VARIABLES
    assert set(P.TOKEN_SECRETS) == {naming.HF_SECRET, naming.RAY_AUTH_SECRET}


@pytest.mark.graph
def test_the_ray_ports_the_pack_guards_are_kuberays_dashboard_and_client_ports(stacks):
    src = (ROOT / "tests" / "oracles" / "kuberay" / "constant-ports.go.txt").read_text()
    import re

    consts = dict(re.findall(r"^\s*(\w+)\s*=\s*(\d+|\"[^\"]*\")\s*$", src, re.M))
    upstream = {
        consts["DashboardPortName"].strip('"'): int(consts["DefaultDashboardPort"]),
        consts["ClientPortName"].strip('"'): int(consts["DefaultClientPort"]),
    }
    assert P.RAY_EXPOSED_PORTS == upstream == {"dashboard": 8265, "client": 10001}
    # Inside the cluster they stay allowed: a ClusterIP Service on the dashboard (KubeRay's own head Service is
    # one), and a load balancer in front of something else.
    rs = added(stacks["dev"], SERVICE, "dash", _service("dash", "ClusterIP", [{"port": 8265, "targetPort": 8265}]))
    rs = added(rs, SERVICE, "web", _service("web", "LoadBalancer", [{"name": "web", "port": 443, "targetPort": 8443}]))
    rs = added(rs, INGRESS, "web", _ingress("web", "web", {"name": "web"}))
    assert P.evaluate(rs) == []


@pytest.mark.unit
def test_every_rule_has_a_broken_variant_and_an_enforcement_level():
    assert {case[3] for case in BROKEN} == {r.name for r in P.RULES}
    assert {r.enforcement for r in P.RULES} == {"mandatory", "advisory"}
    assert len({r.name for r in P.RULES}) == len(P.RULES)


@pytest.mark.graph
def test_every_shipped_stack_passes_every_policy(stacks, stack):
    assert P.evaluate(stacks[stack]) == []


@pytest.mark.graph
@pytest.mark.parametrize("stack_name,overrides", ACCEPTED_VARIANTS, ids=lambda v: str(v))
def test_accepted_setting_variants_pass_every_policy(synth, stack_name, overrides):
    result = synth(stack_name, overrides)
    assert result.error is None, result.error
    assert P.evaluate(resources_of(result)) == []


@pytest.mark.graph
@pytest.mark.parametrize("case", BROKEN, ids=[c[0] for c in BROKEN])
def test_broken_variant_is_flagged_by_its_policy_alone_with_a_fix(stacks, case):
    case_id, _stack, _build, policy, phrase = case
    violations = P.evaluate(_broken(stacks, case))
    assert violations, f"{case_id}: not flagged"
    assert {v.policy for v in violations} == {policy}, violations
    assert any(phrase in v.message for v in violations), [v.message for v in violations]
    assert all(v.urn for v in violations)
    assert FAKE_HF_TOKEN not in " ".join(v.message for v in violations)  # messages never echo the secret


@pytest.mark.graph
def test_secret_references_and_non_secret_names_are_not_flagged(stacks):
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "prep", "namespace": "nemo-rl"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "prep",
                            "image": "nvcr.io/nvidia/nemo-rl:v0.5.0",
                            "args": ['HF_TOKEN="${HF_TOKEN}" TOKENIZERS_PARALLELISM=false python prep.py'],
                            "env": [
                                {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
                                {"name": "HF_HUB_DISABLE_IMPLICIT_TOKEN", "value": "1"},
                                {"name": "SSH_KEY", "value": "/var/run/keys/id"},
                                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "db"}}},
                            ],
                        }
                    ]
                }
            }
        },
    }
    rayjob = _rayjob(
        entrypoint="HF_TOKEN=$HF_TOKEN uv run python examples/run_grpo_math.py "
        "+data.input_key=problem +data.output_key=expected_answer\n"
        'uv run python -c \'import os; TOKEN = os.environ["HF_TOKEN"]; '
        'env = {"WANDB_API_KEY": os.environ["WANDB_API_KEY"]}\'',
        runtime_env="env_vars:\n  RAY_OVERRIDE_JOB_RUNTIME_ENV: '1'\n  HF_HOME: /lustre/hf\n",
    )
    rs = added(added(stacks["dev"], "kubernetes:batch/v1:Job", "prep", job), RAYJOB, "job", rayjob)
    assert P.evaluate(rs) == []


@pytest.mark.graph
def test_the_tokens_secret_is_where_credentials_belong(stacks):
    secret = _one(stacks["dev"], "kubernetes:core/v1:Secret", "tokens")
    assert secret.props["stringData"]["hf-token"]  # the engine's placeholder, a Pulumi secret
    assert P.check_plaintext_secrets(secret) == []


from synth.engine import UNKNOWN  # noqa: E402


def _preview_unknowns(rs: list[P.Resource]) -> list[P.Resource]:
    """The dev stack as a first preview sees it: ids and e-mails of resources not created yet are unknown."""

    def unknown_network(p):
        p["network"] = UNKNOWN

    rs = changed(changed(rs, P.LUSTRE_TYPE, "lustre", unknown_network), P.CLUSTER_TYPE, "cluster", unknown_network)
    rs = changed(rs, P.CLUSTER_TYPE, "cluster", lambda p: p["nodeConfig"].update(serviceAccount=UNKNOWN))
    return changed(rs, P.NODE_POOL_TYPE, "gpu-spot", lambda p: p["nodeConfig"].update(serviceAccount=UNKNOWN))


@pytest.mark.graph
def test_unknown_preview_values_are_skipped_or_decided_by_dependencies(stacks):
    unknown = UNKNOWN
    rs = stacks["dev"]
    primary, gvnic = _network_id(rs, "primary").urn, _network_id(rs, "gvnic").urn
    both_unknown = changed(
        changed(rs, P.LUSTRE_TYPE, "lustre", lambda p: p.update(network=unknown)),
        P.CLUSTER_TYPE,
        "cluster",
        lambda p: p.update(network=unknown),
    )
    assert P.evaluate(both_unknown) == []  # same Network resource behind both
    other = changed(both_unknown, P.LUSTRE_TYPE, "lustre", property_dependencies={"network": [gvnic]})
    assert [v.policy for v in P.evaluate(other)] == ["lustre-on-cluster-vpc"]
    assert primary in _one(rs, P.CLUSTER_TYPE, "cluster").property_dependencies["network"]
    ray_unknown = changed(rs, RAYCLUSTER, "raycluster", lambda p: p["spec"].update(rayVersion=unknown))
    assert P.evaluate(ray_unknown) == []
    assert P.evaluate(_preview_unknowns(rs)) == []


@pytest.mark.unit
def test_kubernetes_components_need_no_provider_of_their_own():
    chart = P.Resource(type="kubernetes:helm.sh/v3:Chart", name="chart", props={}, urn="urn:pulumi:dev::p::t::chart")
    assert P.check_explicit_provider(dataclasses.replace(chart, custom=None)) == []  # as pulumi-policy sees it
    assert P.check_explicit_provider(dataclasses.replace(chart, custom=False)) == []


@pytest.mark.unit
def test_stack_name_comes_from_the_urn():
    assert P.stack_of_urn("urn:pulumi:codelab::nemo-rl-gke::gcp:lustre/instance:Instance::lustre") == "codelab"


# --- the built pack, in its own venv ------------------------------------------------------------------------
def _policy_python() -> Path:
    venv = Path(os.environ.get("POLICY_VENV", ROOT / ".venv-policy"))
    python = (venv if venv.is_absolute() else ROOT / venv) / "bin" / "python"
    assert python.exists(), (
        f"{python} is missing: run `make test` (it creates .venv-policy from policy/requirements.txt)"
    )
    return python


def _record(r: P.Resource, secret_paths=(), parent=None, dependencies=()) -> dict:
    return {
        "type": r.type,
        "name": r.name,
        "urn": r.urn,
        "custom": bool(r.custom),
        "protect": r.protect,
        "provider_urn": r.provider_urn,
        "inputs": r.props,
        "secret_paths": list(secret_paths),
        "parent": parent,
        "dependencies": list(dependencies),
        "property_dependencies": dict(r.property_dependencies),
    }


@pytest.fixture(scope="module")
def pack_run(synth, stacks) -> dict:
    """One run of policy/offline_check.py over every shipped stack (all registrations, components and secret
    envelopes included), every broken variant, and a Lustre instance that is only retained."""
    cases: dict[str, list[dict]] = {}
    for s in SHIPPED:
        cases[f"stack:{s}"] = [policy_check.record(r) for r in synth(s).resources]
    for case in BROKEN:
        cases[case[0]] = [_record(r) for r in _broken(stacks, case)]
    cases["retain-only-lustre"] = [
        _record(r) for r in changed(stacks["codelab"], P.LUSTRE_TYPE, "lustre", protect=False, retain_on_delete=True)
    ]
    cases["preview-unknowns"] = [_record(r) for r in _preview_unknowns(stacks["dev"])]
    return policy_check.run_pack(cases, _policy_python())


@pytest.mark.graph
def test_pack_builds_from_main_with_every_rule_at_its_level(pack_run):
    assert pack_run["pack"] == "nemo-rl-gke"
    assert pack_run["policies"] == {r.name: r.enforcement.upper() for r in P.RULES}


@pytest.mark.graph
def test_pack_passes_every_shipped_stack(pack_run, stack):
    assert pack_run["results"][f"stack:{stack}"] == []


@pytest.mark.graph
@pytest.mark.parametrize("case", BROKEN, ids=[c[0] for c in BROKEN])
def test_pack_flags_broken_variant_at_its_enforcement_level(pack_run, case):
    case_id, _stack, _build, policy, phrase = case
    found = pack_run["results"][case_id]
    rule = next(r for r in P.RULES if r.name == policy)
    assert {d["policy"] for d in found} == {policy}, found
    assert {d["enforcement"] for d in found} == {rule.enforcement.upper()}
    assert any(phrase in d["message"] and d["message"].startswith(rule.description) for d in found), found
    assert all(d["urn"] for d in found)


@pytest.mark.graph
def test_pack_reads_around_unknown_preview_values(pack_run):
    # Reading an unknown through pulumi-policy's proxies would turn every rule into a "can't run during
    # preview" diagnostic; the adapters read the raw values and the rules skip or decide by dependencies.
    assert pack_run["results"]["preview-unknowns"] == []


@pytest.mark.graph
def test_pack_warns_that_it_cannot_see_retain_on_delete(pack_run):
    found = pack_run["results"]["retain-only-lustre"]
    assert [(d["policy"], d["enforcement"]) for d in found] == [("protected-outside-dev", "ADVISORY")]
    assert "cannot see retainOnDelete" in found[0]["message"]


@pytest.mark.unit
def test_the_packs_unknown_marker_is_the_python_sdks():
    # The pack runs in its own venv and keeps its own copy; the Python SDK defines only the string marker (the
    # engine's typed markers are in pulumi/sdk go/common/resource/plugin/rpc.go).
    assert UNKNOWN in P.UNKNOWN_SENTINELS
