"""The security measures (docs/research/harden2.md), figure by figure, computed from the rendered stacks
(tests/security_figures.py), plus the paths each pod still needs; docs/security.md states the same figures (its
measure table is read here).

The oracles judge the renders by the documented semantics of NetworkPolicy / FQDNNetworkPolicy
(tests/netpol_oracle.py) and the Pod Security Standards (tests/pod_security_standards.py); both are checked on
the documentation's own examples first. Run on the commit before these measures the same functions give the
"before" column (every Ray port open to the submitter, 6/6 pods without egress policy, 2 templates with bucket
write over the whole bucket, 3/3 stacks on one principal, no Pod Security label, 5 extra node roles, 2/5 digests,
dev's IP endpoint open).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core import catalog
from synth import engine
from tests import netpol_oracle as np
from tests import pod_security_standards as pss
from tests import security_figures as f
from tests.rendered_pods import has_host_paths, pods

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = engine.platform_stacks()  # the experiment stacks: tests/test_platform_experiments.py


@pytest.fixture(scope="module")
def shipped(synth):
    return {s: synth(s) for s in SHIPPED}


@pytest.fixture(scope="module")
def experiments(synth):
    """The example experiment stacks (each reads its platform through a StackReference)."""
    return {s: synth(s) for s in engine.experiment_stacks()}


# weightsPath bucket-import (the codelab): the weights staging and import Jobs, each with Google credentials.
STAGING_ROLES = ("weights-stage", "weights-import")
RAYJOB = "kubernetes:ray.io/v1:RayJob"


def _stages(result) -> bool:
    return result.config.get("nemo-rl-gke:weightsPath") == "bucket-import"


def _pod(result, role: str) -> np.Endpoint:
    (p,) = [p for p in f.workload_pods(result) if p.labels.get(f.ROLE) == role][:1] or [None]
    assert p is not None, role
    return np.pod(p.source, p.namespace, p.labels)


# --- the oracles on the documentation's own cases -------------------------------------------------------------
@pytest.mark.unit
def test_netpol_oracle_follows_the_kubernetes_semantics():
    src_ok = np.pod("a", "other", {"app": "a"}, {"team": "x"})
    src_label_only = np.pod("b", "third", {"app": "a"})
    dst = np.pod("d", "db", {"role": "db"})
    both = {"namespaceSelector": {"matchLabels": {"team": "x"}}, "podSelector": {"matchLabels": {"app": "a"}}}
    one = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "db"},
        "spec": {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [both], "ports": [{"protocol": "TCP", "port": 5432}]}],
        },
    }
    pol = np.Policies([one])
    assert pol.allowed(src_ok, dst, 5432) and not pol.allowed(src_ok, dst, 5433)
    assert not pol.allowed(src_label_only, dst, 5432)  # one entry: namespace AND pod selector
    two = dict(
        one,
        spec=dict(
            one["spec"],
            ingress=[
                {"from": [{"namespaceSelector": both["namespaceSelector"]}, {"podSelector": both["podSelector"]}]}
            ],
        ),
    )
    assert np.Policies([two]).allowed(np.pod("c", "db", {"app": "a"}), dst, 1)  # two entries: either
    assert np.Policies([]).allowed(src_label_only, dst, 1)  # no policy selects the pod: not isolated
    assert pol.allowed(np.Endpoint("node", node_local=True), dst, 1)  # the node's own traffic always passes
    ip = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "e", "namespace": "db"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]}],
        },
    }
    assert np.Policies([ip]).allowed(dst, np.Endpoint("x", ip="203.0.113.1"), 443)
    assert not np.Policies([ip]).allowed(dst, np.Endpoint("y", ip="10.1.2.3"), 443)
    fq = {
        "kind": "FQDNNetworkPolicy",
        "metadata": {"name": "f", "namespace": "db"},
        "spec": {
            "podSelector": {},
            "egress": [{"matches": [{"pattern": "*.google.com"}], "ports": [{"protocol": "TCP", "port": 443}]}],
        },
    }
    assert np.Policies([fq]).allowed(dst, np.Endpoint("m", host="mail.google.com"), 443)
    # GKE's examples: `*.google.com` matches one level only.
    assert not np.Policies([fq]).allowed(dst, np.Endpoint("g", host="google.com"), 443)
    assert not np.Policies([fq]).allowed(dst, np.Endpoint("s", host="sub.subdomain.google.com"), 443)


@pytest.mark.unit
def test_pss_oracle_follows_the_pod_security_standards():
    good = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
        ],
    }
    assert pss.level_of(good) == "restricted"
    root = {**good, "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
    assert pss.level_of(root) == "baseline"
    host = {**good, "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    assert pss.level_of(host) == "privileged"
    caps = {**good, "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}
    assert pss.level_of(caps) == "privileged"


# --- the figures ------------------------------------------------------------------------------------------------
@pytest.mark.graph
def test_no_ray_port_is_reachable_from_outside_the_workload_but_by_the_submitter_and_the_operator(shipped):
    for stack, r in shipped.items():
        reach = f.ray_port_reach(r)
        assert reach == {"konnectivity agent": {8265}, "RayJob rayjob: submitter": {8265}}, stack


@pytest.mark.graph
def test_with_its_own_kuberay_the_dashboard_admits_the_operator_pods_and_not_the_api_servers_agents(synth):
    r = synth("dev", {"kubeRayOperator": "helm"})
    assert r.error is None, r.error
    assert f.ray_port_reach(r) == {"KubeRay operator (own)": {8265}, "RayJob rayjob: submitter": {8265}}


@pytest.mark.graph
def test_every_workload_pod_has_an_egress_policy(shipped):
    for stack, r in shipped.items():
        missing, total = f.pods_without_egress_policy(r)
        # The export and data staging Jobs are among them (both run as CPU Jobs in every stack with a job), the
        # weights staging and import Jobs where the weights are staged, and a job on a cluster of its own (codelab's,
        # queued) adds its head and GPU workers beside the standing cluster's.
        own = "rayClusterSpec" in r.get(RAYJOB, "rayjob").inputs["spec"]
        assert missing == 0 and total == (7 if stack == "autopilot" else 8) + 2 * _stages(r) + 2 * own, stack


@pytest.mark.graph
def test_only_the_operators_path_reaches_the_dashboard_besides_the_workload_and_the_submitter(shipped):
    for stack, r in shipped.items():
        assert f.dashboard_reach(r) == {"konnectivity agent"}, stack


@pytest.mark.graph
def test_the_pods_that_write_to_the_bucket_write_only_under_their_own_prefix(shipped):
    for stack, r in shipped.items():
        writers = 1 + _stages(r)  # the export Job, and the weights staging Job where the weights are staged
        assert f.bucket_write(r) == (writers, writers, f.OWN_PREFIX), stack
        accounts = {"export-ksa": "checkpoint-export", "stage-ksa": "weights-stage"}
        for ksa, role in list(accounts.items())[:writers]:
            name = r.get("kubernetes:core/v1:ServiceAccount", ksa).inputs["metadata"]["name"]
            (writer,) = [p for p in pods(r) if p.service_account == name]
            assert writer.labels[f.ROLE] == role  # never a Ray pod


@pytest.mark.graph
def test_no_two_stacks_share_a_workload_identity_principal_and_each_experiment_writes_as_its_own(
    shipped, experiments, synth
):
    assert f.shared_principals(shipped) == 0
    # An experiment stack grants its own export identity on its own folder (infra/experiment_export.py): it writes
    # as neither its platform's nor another experiment's (until this round every experiment wrote as its platform's
    # identity, to one prefix: 3/5).
    every = {**shipped, **experiments}
    assert experiments and f.sharing_groups(every) == []
    for stack, r in experiments.items():
        (principal,) = f.stack_write_principals(stack, every)
        assert principal in f.write_principals(r), stack
        assert principal not in f.write_principals(shipped[f.platform_of(r)]), stack
        (writer,) = [p for p in pods(r) if p.labels.get(f.ROLE) == "checkpoint-export"]
        assert principal.endswith(f"/ns/{writer.namespace}/sa/{writer.service_account}"), stack
    # Not even two stacks given the same namespace and Ray service account in one project.
    same = {s: synth(s, {"namespace": "rl", "ksaName": "rl"}) for s in ("dev", "codelab")}
    assert all(r.error is None for r in same.values())
    assert f.shared_principals(same) == 0


@pytest.mark.graph
def test_no_pod_holds_a_token_it_never_reads(shipped, synth):
    for stack, r in shipped.items():
        assert f.tokens_never_read(r) == 0, stack
    # Without the prefetch the head's entrypoint downloads the pinned snapshot: the head holds the token and reads it,
    # the GPU workers (which load that snapshot from Lustre) still hold none.
    r = synth("codelab", {"prefetchWeights": False})
    assert f.tokens_never_read(r) == 0
    by_role = {p.labels.get(f.ROLE): f._mounted_keys(p) for p in pods(r)}
    assert "hf-token" in by_role["ray-head"] and "hf-token" not in by_role["ray-worker"]


@pytest.mark.graph
def test_every_namespace_enforces_what_its_pods_meet_and_warns_and_audits_restricted(shipped, experiments, synth):
    for stack, r in shipped.items():
        tenants = [e for e in experiments.values() if f.platform_of(e) == stack]
        good, total = f.namespaces_with_psa(r, tenants)
        # The workload namespace, Autopilot's rdma-system, and a namespace per experiment the platform hosts.
        assert good == total == (2 if stack == "autopilot" else 1) + len(tenants), stack
    helm = synth("dev", {"kubeRayOperator": "helm"})
    ns = {
        x.inputs["metadata"]["name"]: x.inputs["metadata"]["labels"]
        for x in helm.kubernetes_objects()
        if x.inputs.get("kind") == "Namespace"
    }
    assert ns[catalog.KUBERAY_OPERATOR_NAMESPACE]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.graph
def test_each_pod_is_at_the_strictest_pod_security_level_it_can_be(shipped):
    # restricted wherever nothing root must own is written; baseline for the two root pods (the NeMo-RL image and
    # every file on Lustre belong to root); privileged only for the hostPath mounts of the GPU workers.
    want = {
        "ray-head": "baseline",
        "ray-worker": "privileged",
        "ray-job-submitter": "restricted",
        "weights-prefetch": "baseline",
        "checkpoint-export": "baseline",  # reads what root wrote on Lustre, like the head
        "data-staging": "baseline",  # writes on Lustre what root's job reads, like the prefetch
        # Writes through its GCS FUSE mount as the export does (as root: the mount's owner).
        "weights-stage": "baseline",
        "weights-import": "restricted",  # writes nothing, mounts nothing but the scripts
        "gpu-warmup": "restricted",
        "image-prepull": "restricted",
    }
    for stack, r in shipped.items():
        for p in f.workload_pods(r):
            assert pss.level_of(p.spec) == want[p.labels[f.ROLE]], (
                stack,
                p.source,
                pss.violations(p.spec, "restricted"),
            )


@pytest.mark.graph
def test_every_container_of_a_pod_without_the_rdma_mounts_drops_all_capabilities(shipped):
    for stack, r in shipped.items():
        dropping, total = f.capability_drops(r)
        assert dropping == total > 0, stack
        # The exception, with its reason in workloads/manifests/pod_security.py: the GPU workers, which mount the
        # libraries.
        for p in f.workload_pods(r):
            if has_host_paths(p):
                assert p.labels[f.ROLE] == "ray-worker"


@pytest.mark.graph
def test_images_without_a_digest_are_exactly_those_no_public_source_pins(shipped):
    pinned, distinct = f.digest_pins(shipped)
    refs = set().union(*(f.images(r) for r in shipped.values()))
    unpinned = {f._name(x) for x in refs if "@sha256:" not in x}
    assert unpinned == {catalog.NEMO_RL_IMAGE_REPO, catalog.NCCL_GIB_INSTALLER_PIN.repo}
    for pin in (*catalog.NEMO_RL_IMAGE_PINS.values(), catalog.NCCL_GIB_INSTALLER_PIN):
        assert pin.digest == "" and "no public source" in pin.digest_source
    assert (pinned, distinct) == (4, 6)  # with the copy tool, pinned by digest


@pytest.mark.graph
def test_the_node_account_holds_gkes_minimum_role_and_nothing_else(shipped):
    for stack, r in shipped.items():
        assert f.node_roles_beyond_minimum(r) == 0, stack


@pytest.mark.graph
def test_no_stack_opens_its_ip_endpoint_to_every_address(shipped):
    assert [s for s, r in shipped.items() if f.ip_endpoint_open(r)] == []


@pytest.mark.unit
def test_ci_hands_no_real_secret_to_unreviewed_code_and_pins_every_action():
    real, unpinned, uses = f.ci_figures()
    assert (real, unpinned) == (0, 0) and uses > 0


@pytest.mark.graph
def test_the_security_guides_measure_table_states_the_computed_figures(shipped, experiments):
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("\n## The measure\n", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("figure", "---"):
            rows[cells[0].replace("`", "")] = cells[2].replace("`", "")
    assert rows == f.figures(shipped, experiments)


@pytest.mark.graph
def test_only_the_export_job_carries_the_gcs_fuse_sidecar_and_the_guide_says_so(shipped, experiments):
    # The export moved from the head to a CPU Job: the webhook injects its sidecar where the annotation is.
    for stack, r in {**shipped, **experiments}.items():
        carriers = {p.labels.get(f.ROLE) for p in pods(r) if p.annotations.get("gke-gcsfuse/volumes") == "true"}
        assert carriers == {"checkpoint-export"} | ({"weights-stage"} if _stages(r) else set()), stack
        (job,) = [p for p in pods(r) if p.labels.get(f.ROLE) == "checkpoint-export"]
        (sidecar,) = [c for c in job.containers if c["name"] == "gke-gcsfuse-sidecar"]
        assert pss.violations({"containers": [sidecar], "securityContext": {}}, "restricted") == [], stack
    section = (ROOT / "docs" / "security.md").read_text().split("\n## Pod security\n", 1)[1].split("\n## ", 1)[0]
    section = " ".join(section.split())
    assert "GCS FUSE sidecar the webhook injects into the export Job" in section
    assert "into the head" not in section


# --- what each pod still needs ------------------------------------------------------------------------------------
DNS = (np.pod("kube-dns", "kube-system", dict(catalog.KUBE_DNS_LABELS)), np.Endpoint("cloud-dns", ip="169.254.169.254"))


@pytest.mark.graph
def test_the_pods_that_resolve_names_reach_kube_dns_and_cloud_dns_and_the_others_nothing(shipped):
    for stack, r in shipped.items():
        pol = f.policies(r)
        for p in f.workload_pods(r):
            src = np.pod(p.source, p.namespace, p.labels)
            resolves = p.labels[f.ROLE] in (
                "ray-head",
                "ray-worker",
                "ray-job-submitter",
                "weights-prefetch",
                "checkpoint-export",
                "data-staging",
                *STAGING_ROLES,
            )
            for dns in DNS:
                assert pol.allowed(src, dns, 53, "UDP") is resolves, (stack, p.source)
            if not resolves:
                for dst in (*f.outside_sources(p.namespace), np.Endpoint("hub", host="huggingface.co", ip="3.3.3.3")):
                    for port in (53, 80, 443, 8265):
                        assert not pol.egress_allowed(src, dst, port), (stack, p.source, dst.name, port)


HF_DOWNLOAD = (
    "huggingface.co",
    "cdn-lfs-us-1.hf.co",
    "cas-server.xethub.hf.co",
    "transfer.xethub.hf.co",
    "cas-bridge.xethub.hf.co",
    "us-east-1.aws.cdn.hf.co",
    "us-central1.us.gcp.cdn.hf.co",
)


@pytest.mark.graph
def test_outside_hosts_are_reachable_exactly_by_the_pods_that_call_them(shipped):
    for stack, r in shipped.items():
        pol = f.policies(r)
        prefetch, head, worker = (_pod(r, role) for role in ("weights-prefetch", "ray-head", "ray-worker"))
        ext = lambda host: np.Endpoint(host, host=host, ip="198.51.100.9")  # noqa: E731
        for host in HF_DOWNLOAD:
            assert pol.allowed(prefetch, ext(host), 443) and pol.allowed(head, ext(host), 443), (stack, host)
            assert not pol.allowed(worker, ext(host), 443), (stack, host)  # prefetched: the workers are offline
            assert not pol.allowed(prefetch, ext(host), 80), (stack, host)  # HTTPS only
        for host in catalog.PYPI_HOSTS:
            assert pol.allowed(prefetch, ext(host), 443) and not pol.allowed(head, ext(host), 443)
        wandb = f._logs_to_wandb(r)
        # Cloud Storage: the export Job's GCS FUSE sidecar; the head only for W&B's upload URLs (it mounts no bucket).
        assert pol.allowed(_pod(r, "checkpoint-export"), ext("storage.googleapis.com"), 443), stack
        assert pol.allowed(head, ext("storage.googleapis.com"), 443) is wandb, stack
        assert not pol.allowed(prefetch, ext("storage.googleapis.com"), 443)
        assert pol.allowed(head, ext("api.wandb.ai"), 443) is wandb, stack
        # The data staging Job: the Hub (the built-in datasets at their commits); no shipped stack reads gs:// data.
        staging = _pod(r, "data-staging")
        assert all(pol.allowed(staging, ext(host), 443) for host in HF_DOWNLOAD), stack
        assert not pol.allowed(staging, ext("storage.googleapis.com"), 443), stack
        for anything in ("example.com", "attacker.invalid"):
            assert not any(pol.allowed(x, ext(anything), 443) for x in (prefetch, head, worker, staging))
        lustre_api = ext(catalog.LUSTRE_API_HOSTS[0])
        assert not any(pol.allowed(x, lustre_api, 443) for x in (prefetch, head, worker, staging)), stack
        if _stages(r):
            # The staging Job: the Hub, PyPI for its install, Cloud Storage for its sidecar; the import Job: the
            # Managed Lustre API and nothing else.
            stage, imp = _pod(r, "weights-stage"), _pod(r, "weights-import")
            for host in (*HF_DOWNLOAD, *catalog.PYPI_HOSTS, "storage.googleapis.com"):
                assert pol.allowed(stage, ext(host), 443) and not pol.allowed(imp, ext(host), 443), (stack, host)
            assert pol.allowed(imp, lustre_api, 443) and not pol.allowed(stage, lustre_api, 443), stack
            assert not pol.allowed(imp, ext("example.com"), 443) and not pol.allowed(stage, ext("example.com"), 443)


@pytest.mark.graph
def test_only_the_jobs_with_google_credentials_reach_the_metadata_server(shipped, synth):
    # The export Job, and the weights staging and import Jobs where the weights are staged.
    metadata = np.Endpoint("metadata", ip="169.254.169.254")
    for stack, r in shipped.items():
        pol = f.policies(r)
        weights = STAGING_ROLES if _stages(r) else ()
        roles = ("checkpoint-export", "ray-head", "ray-worker", "weights-prefetch", "ray-job-submitter", "data-staging")
        for role in (*roles, *weights):
            # The data staging Job reads gs:// data as its own identity only where the job's data is there.
            credentialed = role == "checkpoint-export" or role in weights
            assert pol.allowed(_pod(r, role), metadata, 80) is credentialed, (stack, role)
    plain = synth("dev", {"exportCheckpoints": False})
    assert not [p for p in f.workload_pods(plain) if p.labels.get(f.ROLE) == "checkpoint-export"]
    assert not f.policies(plain).allowed(_pod(plain, "ray-head"), metadata, 80)


@pytest.mark.graph
def test_ray_nodes_reach_each_other_on_every_port_and_managed_prometheus_the_metrics(shipped):
    collector = np.pod("collector", catalog.GMP_NAMESPACE, {"app": "collector"})
    for stack, r in shipped.items():
        pol = f.policies(r)
        head, worker = _pod(r, "ray-head"), _pod(r, "ray-worker")
        for port in (*f.RAY_PORTS, 29500, 45123, 61000):
            assert pol.allowed(head, worker, port) and pol.allowed(worker, head, port), (stack, port)
        assert pol.allowed(collector, head, catalog.RAY_METRICS_PORT) and pol.allowed(
            collector, worker, catalog.RAY_METRICS_PORT
        )
        assert not pol.allowed(collector, head, catalog.RAY_DASHBOARD_PORT)


@pytest.mark.graph
def test_without_fqdn_policies_the_same_pods_reach_public_https_and_nothing_private(synth):
    r = synth("codelab", {"egressFqdnPolicies": False})
    assert r.error is None, r.error
    assert not [x for x in r.kubernetes_objects() if x.inputs.get("kind") == "FQDNNetworkPolicy"]
    (cluster,) = r.of_type("gcp:container/cluster:Cluster")
    assert cluster.inputs["enableFqdnNetworkPolicy"] is False
    pol = f.policies(r)
    prefetch, worker = _pod(r, "weights-prefetch"), _pod(r, "ray-worker")
    assert pol.allowed(prefetch, np.Endpoint("public", ip="198.51.100.9"), 443)
    assert not pol.allowed(prefetch, np.Endpoint("vpc", ip="10.128.0.7"), 443)
    assert not pol.allowed(prefetch, np.Endpoint("metadata", ip="169.254.169.254"), 80)
    assert not pol.allowed(worker, np.Endpoint("public", ip="198.51.100.9"), 443)
    assert f.ray_port_reach(r) == {"konnectivity agent": {8265}, "RayJob rayjob: submitter": {8265}}
