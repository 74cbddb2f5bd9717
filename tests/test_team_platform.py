"""A team on one platform: the codelab platform hosting four experiments at once (the three shipped stacks and a fourth
written here), each placed by the engine against that platform's outputs. What they may share is the cluster and the
Lustre instance; what they must not is checked here against oracles of our own making only where the upstream
semantics are written down: NetworkPolicy reachability by tests/netpol_oracle.py (Kubernetes' documented semantics,
itself checked on the documentation's examples in tests/test_netpol_oracle.py), admission by the policy's CEL run in
cel-python (tests/cel_rules.py admission_refusals), Kubernetes objects by kubernetes-validate, KubeRay's CRD for the
RayJob's resource name.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from core import catalog
from core.settings import platform
from synth import engine
from synth.render import manifest_of
from tests import netpol_oracle as np
from tests import security_figures as f
from tests.cel_rules import admission_refusals
from tests.k8s_validation import validate_any
from tests.rendered_pods import pods
from workloads.manifests import tenancy

pytestmark = pytest.mark.graph

PLATFORM = "codelab"
PLATFORM_REF = "organization/nemo-rl-gke/codelab"
SHIPPED = ("codelab-exp1", "codelab-exp2", "codelab-exp3")
FOURTH = "team-d"
EXPERIMENTS = (*SHIPPED, FOURTH)
PRINCIPALS = {
    "codelab-exp1": ["user:alice@example.com"],
    "codelab-exp2": ["user:bob@example.com"],
    "codelab-exp3": ["user:carol@example.com", "group:team-c@example.com"],
    FOURTH: ["group:team-d@example.com"],
}
ROOT = Path(__file__).resolve().parents[1]
# Every port Ray opens on a node (Ray's "Configuring Ray" ports table: GCS 6379, dashboard 8265, Ray Client 10001,
# dashboard agent 52365, metrics export 8080, object manager 8076, and samples of the raylet's, the runtime env agent's
# and the workers' ranges), and NCCL / Gloo's bootstrap ports, which Ray cannot pin.
RAY_PORTS = (
    catalog.RAY_GCS_PORT,
    catalog.RAY_DASHBOARD_PORT,
    catalog.RAY_CLIENT_PORT,
    catalog.RAY_DASHBOARD_AGENT_PORT,
    catalog.RAY_METRICS_PORT,
    8076,
    10002,
    15000,
    19999,
    29500,
    43210,
)


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> dict[str, engine.SynthResult]:
    plat = engine.run(PLATFORM, {"experiments": PRINCIPALS, "rbacSecurityGroup": "gke-security-groups@example.com"})
    assert plat.error is None, plat.error
    refs = {PLATFORM_REF: engine.StackOutputs.of(plat)}
    out = {PLATFORM: plat}
    for stack in SHIPPED:
        out[stack] = engine.run(stack, stack_references=refs)
    fourth = tmp_path_factory.mktemp("stack") / f"Pulumi.{FOURTH}.yaml"
    fourth.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "nemo-rl-gke:platformStack": PLATFORM_REF,
                    "nemo-rl-gke:nemoRlRelease": "v0.5.0",
                    "nemo-rl-gke:jobRecipe": "gemma3-27b-gsm8k",
                    "nemo-rl-gke:workerReplicas": 2,
                    # The same run name as another experiment's: their directories still cannot meet.
                    "nemo-rl-gke:runName": "shared-name",
                }
            }
        )
    )
    out[FOURTH] = engine.run(FOURTH, stack_file=fourth, stack_references=refs)
    out["codelab-exp2-same-run"] = engine.run("codelab-exp2", {"runName": "shared-name"}, stack_references=refs)
    for stack, r in out.items():
        assert r.error is None, (stack, r.error)
    return out


def hosted(team, stack: str) -> dict:
    return team[PLATFORM].outputs[platform.CONTRACT_OUTPUT][platform.EXPERIMENTS_KEY][stack]


def _head(result: engine.SynthResult) -> dict:
    (job,) = result.of_type("kubernetes:ray.io/v1:RayJob")
    return job.get("spec.rayClusterSpec.headGroupSpec.template.spec")


def test_four_experiments_have_distinct_namespaces_identities_prefixes_and_lustre_directories(team):
    seen: dict[str, set] = {k: set() for k in ("ns", "principal", "prefix", "lustre", "rayjob", "pv")}
    plat = team[PLATFORM]
    for stack in EXPERIMENTS:
        r, entry = team[stack], hosted(team, stack)
        seen["ns"].add(entry["namespace"])
        seen["principal"].add(entry["exportPrincipal"])
        (managed,) = r.of_type("gcp:storage/managedFolder:ManagedFolder")
        seen["prefix"].add(managed.get("name"))
        mounts = _head(r)["containers"][0]["volumeMounts"]
        (own,) = [m for m in mounts if m.get("subPath", "").startswith("experiments/")]
        assert own["mountPath"] == "/lustre" and not own.get("readOnly")
        seen["lustre"].add(own["subPath"])
        (job,) = r.of_type("kubernetes:ray.io/v1:RayJob")
        seen["rayjob"].add((job.get("metadata.namespace"), job.get("metadata.name")))
    for pv in plat.of_type("kubernetes:core/v1:PersistentVolume"):
        seen["pv"].add(pv.get("metadata.name"))
    for what, values in seen.items():
        want = len(EXPERIMENTS) + (1 if what == "pv" else 0)  # the platform's own PV besides one per experiment
        assert len(values) == want, (what, values)
    # No experiment's prefix is another's, or inside another's.
    for a, b in itertools.permutations(seen["prefix"], 2):
        assert not a.startswith(b), (a, b)


def test_experiments_share_the_lustre_instance_through_one_volume_handle(team):
    """The CSI driver refuses a second staging of one filesystem on a node, and kubelet stages per volumeHandle
    (core/catalog/tenancy.py): every PV of the instance carries the same handle, each bound to its own claim."""
    pvs = team[PLATFORM].of_type("kubernetes:core/v1:PersistentVolume")
    assert len({pv.get("spec.csi.volumeHandle") for pv in pvs}) == 1
    claims = {(pv.get("spec.claimRef.namespace"), pv.get("spec.claimRef.name")) for pv in pvs}
    assert len(claims) == len(pvs)
    for pv in pvs:
        validate_any(manifest_of(pv))


def test_every_experiment_writes_to_the_bucket_as_its_own_principal_only(team):
    """The figure of docs/security.md, over the platform and its four experiments: no two stacks write as one
    principal (tests/security_figures.py)."""
    stacks = {s: team[s] for s in (PLATFORM, *EXPERIMENTS)}
    assert f.sharing_groups(stacks) == []
    for stack in EXPERIMENTS:
        assert f.stack_write_principals(stack, stacks) == {hosted(team, stack)["exportPrincipal"]}


def test_the_same_run_name_in_two_experiments_names_two_directories(team):
    a, b = team[FOURTH], team["codelab-exp2-same-run"]
    assert a.outputs["runName"] == b.outputs["runName"] == "shared-name"
    # Each pod sees its own directory at /lustre: the same path names different directories on the volume.
    subpaths = [
        {m["subPath"] for m in _head(r)["containers"][0]["volumeMounts"] if m.get("subPath", "").startswith("exp")}
        for r in (a, b)
    ]
    assert subpaths[0] != subpaths[1]


# --- RBAC ------------------------------------------------------------------------------------------------------------
def _resource(type_token: str) -> tuple[str, str]:
    """(API group, resource) of a registered Kubernetes type: the core group is ""; the plural from KubeRay's CRD for
    ray.io, the lowercase kind plus "s" for the core and batch kinds an experiment registers (Kubernetes API)."""
    _, gv, kind = type_token.split(":")
    group = gv.rsplit("/", 1)[0]
    group = "" if group == "core" else group
    if group == "ray.io":
        crd = yaml.safe_load((ROOT / "schemas" / "kuberay-v1.7.0" / f"ray.io_{kind.lower()}s.yaml").read_text())
        return group, crd["spec"]["names"]["plural"]
    return group, kind.lower() + "s"


def test_the_experimenter_role_covers_exactly_the_kinds_an_experiment_stack_registers(team, synth):
    registered = set()
    variants = [team[s] for s in EXPERIMENTS]
    # A token-auth experiment on a platform with its own KubeRay, and one without a job or an export.
    helm = engine.run(
        PLATFORM,
        {"kubeRayOperator": "helm", "experiments": PRINCIPALS, "rbacSecurityGroup": "gke-security-groups@example.com"},
    )
    assert helm.error is None, helm.error
    refs = {PLATFORM_REF: engine.StackOutputs.of(helm)}
    variants.append(engine.run("codelab-exp3", {"nemoRlRelease": "v0.7.0"}, stack_references=refs))
    variants.append(engine.run("codelab-exp1", {"exportCheckpoints": False}, stack_references=refs))
    for r in variants:
        assert r.error is None, r.error
        registered |= {_resource(x.type) for x in r.kubernetes_objects()}
    assert registered == set(tenancy.MANAGED_KINDS)
    plat = team[PLATFORM]
    roles = {r.get("metadata.namespace"): r for r in plat.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")}
    bindings = {
        r.get("metadata.namespace"): r for r in plat.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    }
    for stack in EXPERIMENTS:
        ns = hosted(team, stack)["namespace"]
        role = roles[ns]
        validate_any(manifest_of(role))
        validate_any(manifest_of(bindings[ns]))
        writes = {
            (g, res)
            for rule in role.get("rules")
            for g in rule["apiGroups"]
            for res in rule["resources"]
            if "create" in rule["verbs"] and not res.startswith("pods/")
        }
        assert writes == registered, (stack, writes)
        for rule in role.get("rules"):
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], (stack, rule)
        # Nothing that changes the namespace's own guards or other identities.
        granted = {res for rule in role.get("rules") for res in rule["resources"]}
        assert not granted & {"networkpolicies", "roles", "rolebindings", "serviceaccounts", "persistentvolumeclaims"}
        subjects = {(x["kind"], x["name"]) for x in bindings[ns].get("subjects")}
        want = {("User" if p.startswith("user:") else "Group", p.split(":", 1)[1]) for p in PRINCIPALS[stack]}
        assert subjects == want
        assert bindings[ns].get("roleRef")["name"] == role.get("metadata.name")
    # Nothing cluster-wide for anyone.
    assert not plat.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert not plat.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    # Groups resolve only with Google Groups for RBAC on the cluster.
    (cluster,) = plat.of_type("gcp:container/cluster:Cluster")
    assert cluster.get("authenticatorGroupsConfig") == {"securityGroup": "gke-security-groups@example.com"}


# --- who reaches whom -----------------------------------------------------------------------------------------------
def _endpoints(team) -> list[tuple[str, str, np.Endpoint]]:
    """(stack, role, endpoint) of every pod of the platform and its experiments, with its namespace's labels."""
    ns_labels = {
        r.get("metadata.name"): r.get("metadata.labels") or {}
        for r in team[PLATFORM].of_type("kubernetes:core/v1:Namespace")
    }
    out = []
    for stack in (PLATFORM, *EXPERIMENTS):
        for p in pods(team[stack]):
            role = p.labels.get(f.ROLE, "")
            out.append((stack, role, np.pod(f"{stack}/{p.source}", p.namespace, p.labels, ns_labels.get(p.namespace))))
    return out


def test_no_ray_port_is_reachable_across_experiments_or_from_an_experiment_to_its_platform(team):
    manifests = [r.inputs for s in (PLATFORM, *EXPERIMENTS) for r in team[s].kubernetes_objects()]
    policies = np.Policies(manifests)
    eps = _endpoints(team)
    crossing, inside_missing = [], []
    for (s_stack, s_role, src), (d_stack, d_role, dst) in itertools.product(eps, eps):
        if src is dst or d_role not in ("ray-head", "ray-worker"):
            continue
        for port in RAY_PORTS:
            allowed = policies.allowed(src, dst, port)
            if s_stack != d_stack:
                if allowed:
                    crossing.append((src.name, dst.name, port))
            elif s_role in ("ray-head", "ray-worker") and not allowed:
                inside_missing.append((src.name, dst.name, port))
    assert crossing == []
    assert inside_missing == []
    # The submitter reaches its own head's dashboard, and only that.
    for stack in EXPERIMENTS:
        (sub,) = [e for s, role, e in eps if s == stack and role == "ray-job-submitter"]
        (head,) = [e for s, role, e in eps if s == stack and role == "ray-head"]
        assert policies.allowed(sub, head, catalog.RAY_DASHBOARD_PORT)
        assert [p for p in RAY_PORTS if policies.allowed(sub, head, p)] == [catalog.RAY_DASHBOARD_PORT]


def test_no_pod_of_an_experiment_reaches_any_pod_of_another_stack_on_any_port(team):
    policies = np.Policies(r.inputs for s in (PLATFORM, *EXPERIMENTS) for r in team[s].kubernetes_objects())
    eps = _endpoints(team)
    reached = [
        (src.name, dst.name)
        for (s_stack, _, src), (d_stack, _, dst) in itertools.product(eps, eps)
        if s_stack != d_stack
        and (s_stack != PLATFORM or d_stack != PLATFORM)
        and any(policies.allowed(src, dst, port) for port in (*RAY_PORTS, 22, 443, 8000))
    ]
    assert reached == []


# --- admission -------------------------------------------------------------------------------------------------
def _policy(team) -> tuple[dict, dict]:
    plat = team[PLATFORM]
    (pol,) = plat.of_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
    (binding,) = plat.of_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding")
    return manifest_of(pol), manifest_of(binding)


def _namespace_object(team, name: str) -> dict:
    (ns,) = [r for r in team[PLATFORM].of_type("kubernetes:core/v1:Namespace") if r.get("metadata.name") == name]
    return manifest_of(ns)


def test_the_admission_policy_is_valid_and_bound_to_the_experiment_namespaces_only(team):
    pol, binding = _policy(team)
    validate_any(pol)
    validate_any(binding)
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    for r in team[PLATFORM].of_type("kubernetes:core/v1:Namespace"):
        labels = {np.NS_NAME_LABEL: r.get("metadata.name"), **(r.get("metadata.labels") or {})}
        experiment = r.get("metadata.name") in {hosted(team, s)["namespace"] for s in EXPERIMENTS}
        assert np.selects(selector, labels) == experiment, r.get("metadata.name")


def test_the_admission_policy_admits_every_pod_the_experiments_render(team):
    pol, _ = _policy(team)
    for stack in EXPERIMENTS:
        ns = _namespace_object(team, hosted(team, stack)["namespace"])
        for p in pods(team[stack]):
            assert admission_refusals(pol, {"metadata": {"labels": p.labels}, "spec": p.spec}, ns) == [], (
                stack,
                p.source,
            )


def _mutations(stack: str, other: str) -> dict:
    """name -> a change to a rendered GPU worker pod that admission must refuse."""

    def lustre(spec):
        return [m for c in spec["containers"] for m in c["volumeMounts"] if m["name"] == "lustre"]

    def set_subpath(value):
        def change(spec):
            lustre(spec)[0]["subPath"] = value

        return change

    def no_subpath(spec):
        lustre(spec)[0].pop("subPath")

    def cache_writable(spec):
        for m in lustre(spec):
            m.pop("readOnly", None)

    def subpath_expr(spec):
        m = lustre(spec)[0]
        m["subPathExpr"] = m.pop("subPath")

    def host_root(spec):
        spec["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
        spec["containers"][0]["volumeMounts"].append({"name": "root", "mountPath": "/host", "readOnly": True})

    def gib_writable(spec):
        for c in spec["containers"]:
            for m in c["volumeMounts"]:
                if m["name"] == "gib-nccl-plugin":
                    m["readOnly"] = False

    def host_network(spec):
        spec["hostNetwork"] = True

    def privileged(spec):
        spec["containers"][0]["securityContext"]["privileged"] = True

    def add_capability(spec):
        spec["containers"][0]["securityContext"]["capabilities"]["add"] = ["SYS_ADMIN"]

    def inline_lustre(spec):
        spec["volumes"].append(
            {"name": "raw", "csi": {"driver": catalog.LUSTRE_CSI_DRIVER, "volumeAttributes": {"ip": "10.0.0.2"}}}
        )

    def ephemeral(spec):
        spec["volumes"].append(
            {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteMany"]}}}}
        )

    return {
        "the volume's root": no_subpath,
        "another experiment's directory": set_subpath(f"experiments/{other}"),
        "a directory named like its own": set_subpath(f"experiments/{stack}-x"),
        "the experiments directory itself": set_subpath("experiments"),
        "a checkpoint directory at the root": set_subpath("checkpoints"),
        "the cache read-write from a Ray pod": cache_writable,
        "a subPathExpr": subpath_expr,
        "the node's root": host_root,
        "a library directory read-write": gib_writable,
        "the host network": host_network,
        "a privileged container": privileged,
        "an added capability": add_capability,
        "an inline Lustre volume": inline_lustre,
        "a generic ephemeral volume": ephemeral,
    }


def test_the_admission_policy_refuses_a_pod_that_leaves_its_directories_or_reaches_the_node(team):
    import copy

    pol, _ = _policy(team)
    stack, other = "codelab-exp1", "codelab-exp2"
    ns = _namespace_object(team, hosted(team, stack)["namespace"])
    (worker,) = [p for p in pods(team[stack]) if p.labels.get(f.ROLE) == "ray-worker"]
    admitted = []
    for what, change in _mutations(stack, other).items():
        spec = copy.deepcopy(worker.spec)
        change(spec)
        if not admission_refusals(pol, {"metadata": {"labels": worker.labels}, "spec": spec}, ns):
            admitted.append(what)
    assert admitted == []
    # The same pod in another experiment's namespace is refused too: the directory is the namespace's own.
    elsewhere = _namespace_object(team, hosted(team, other)["namespace"])
    assert admission_refusals(pol, {"metadata": {"labels": worker.labels}, "spec": worker.spec}, elsewhere)


def test_only_the_pinned_prefetch_image_writes_the_shared_cache(team):
    import copy

    pol, _ = _policy(team)
    stack = "codelab-exp1"
    ns = _namespace_object(team, hosted(team, stack)["namespace"])
    (prefetch,) = [p for p in pods(team[stack]) if p.labels.get(f.ROLE) == "weights-prefetch"]
    writers = [
        m
        for c in prefetch.spec["containers"]
        for m in c["volumeMounts"]
        if m.get("subPath") == "huggingface_cache" and not m.get("readOnly")
    ]
    assert writers, "the prefetch mounts the cache read-write"
    assert admission_refusals(pol, {"spec": prefetch.spec}, ns) == []
    spec = copy.deepcopy(prefetch.spec)
    for c in spec["containers"]:
        c["image"] = "docker.io/library/python:3.12-slim"  # same program, another image
    assert admission_refusals(pol, {"spec": spec}, ns)


# --- the queue --------------------------------------------------------------------------------------------------------
KUEUE_PREFIX = "kubernetes:kueue.x-k8s.io/"


def test_four_experiments_each_get_the_queue_label_and_a_local_queue_their_rayjob_names(team):
    """codelab queues (queue: kueue): each of the four experiment namespaces is selected by the ClusterQueue's
    namespaceSelector and holds the LocalQueue its experiment's RayJob names; no experiment declares a Kueue object."""
    plat = team[PLATFORM]
    kueue = [x for x in plat.resources if x.type.startswith(KUEUE_PREFIX)]
    (cq,) = [x for x in kueue if x.type.endswith(":ClusterQueue")]
    selector = cq.get("spec.namespaceSelector.matchLabels")
    queues = {(x.get("metadata.namespace"), x.get("metadata.name")): x for x in kueue if x.type.endswith(":LocalQueue")}
    namespaces = {x.get("metadata.name"): x for x in plat.of_type("kubernetes:core/v1:Namespace")}
    for stack in EXPERIMENTS:
        ns = hosted(team, stack)["namespace"]
        assert selector.items() <= namespaces[ns].get("metadata.labels").items(), stack
        (job,) = team[stack].of_type("kubernetes:ray.io/v1:RayJob")
        assert job.get("metadata.namespace") == ns
        lq = queues[(ns, job.get("metadata.labels")[catalog.KUEUE_QUEUE_NAME_LABEL])]
        assert lq.get("spec.clusterQueue") == cq.get("metadata.name"), stack
        assert not [x for x in team[stack].resources if x.type.startswith(KUEUE_PREFIX)], stack


def test_the_experimenters_read_but_never_write_their_namespaces_queue(team):
    """What `python -m cli.team --namespace <theirs>` reads (Workloads, the LocalQueue, its pending list through
    Kueue's visibility API), and nothing of Kueue's they could change."""
    plat = team[PLATFORM]
    roles = {r.get("metadata.namespace"): r for r in plat.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")}
    for stack in EXPERIMENTS:
        rules = roles[hosted(team, stack)["namespace"]].get("rules")
        kueue = {
            (g, res): set(rule["verbs"])
            for rule in rules
            for g in rule["apiGroups"]
            for res in rule["resources"]
            if g.endswith("kueue.x-k8s.io")
        }
        assert kueue == {
            ("kueue.x-k8s.io", "workloads"): {"get", "list", "watch"},
            ("kueue.x-k8s.io", "localqueues"): {"get", "list", "watch"},
            ("visibility.kueue.x-k8s.io", "localqueues/pendingworkloads"): {"get", "list", "watch"},
        }, stack


def test_no_network_policy_stands_between_the_api_server_and_kueues_webhook(team):
    """Kueue's webhooks (defaulting a queued RayJob to suspended) are called by the API server when the experiment's
    `pulumi up` creates the RayJob, not by a pod of the experiment namespace: NetworkPolicies select pods of their own
    namespace (Kubernetes NetworkPolicy docs, "podSelector ... selects pods in the same namespace"), and none of any
    stack lives in Kueue's namespace, so no policy here can block that call."""
    policies = [
        (stack, x)
        for stack, r in team.items()
        for x in r.resources
        if x.type.endswith((":NetworkPolicy", ":FQDNNetworkPolicy"))
    ]
    where = {x.get("metadata.namespace") for _, x in policies}
    # The experiments' namespaces have theirs (default deny both ways among them).
    assert {hosted(team, s)["namespace"] for s in EXPERIMENTS} <= where
    assert catalog.KUEUE_NAMESPACE not in where, sorted(where)
