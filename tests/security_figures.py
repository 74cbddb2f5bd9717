"""The security measures (docs/research/harden2.md), each figure computed from the engine's records of the shipped
stacks (and the CI workflow), with the oracles in tests/netpol_oracle.py and tests/pod_security_standards.py.
`figures()` returns figure name -> the value docs/security.md states (tests/test_security_measures.py
compares them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Mapping, Sequence

import yaml

from core import catalog
from core.images import is_nemo_rl_image
from synth import engine
from tests import netpol_oracle as np
from tests import pod_security_standards as pss
from tests.rendered_pods import RenderedPod, has_host_paths, pods

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
ROLE = "nemo-rl-gke/role"
WORKLOAD = "nemo-rl-gke/workload"

# Ray's ports: the dashboard / Jobs API, every Ray pod's dashboard agent, GCS, Ray Client, and samples of the
# raylet's and workers' ranges (object manager 8076, worker ports 10002-19999).
RAY_PORTS = (
    catalog.RAY_DASHBOARD_PORT,
    catalog.RAY_DASHBOARD_AGENT_PORT,
    catalog.RAY_GCS_PORT,
    catalog.RAY_CLIENT_PORT,
    8076,
    10002,
    19999,
)
WRITE_ROLES = frozenset(
    {
        "roles/storage.objectUser",
        "roles/storage.objectAdmin",
        "roles/storage.objectCreator",
        "roles/storage.admin",
        "roles/storage.legacyBucketWriter",
        "roles/storage.legacyBucketOwner",
    }
)
_PRINCIPAL = re.compile(r"/subject/ns/([^/]+)/sa/([^/]+)$")


def outside_sources(workload_ns: str) -> list[np.Endpoint]:
    """Every kind of peer outside the workload a Ray port could be reached from."""
    return [
        np.pod("pod in another namespace", "team-a", {"app": "anything", ROLE: "ray-head", WORKLOAD: "nemo-rl"}),
        np.pod("kube-system pod", "kube-system", {"k8s-app": "kube-dns"}),
        np.pod("konnectivity agent", "kube-system", dict(catalog.KONNECTIVITY_AGENT_LABELS)),
        np.pod("Managed Prometheus collector", catalog.GMP_NAMESPACE, {"app.kubernetes.io/name": "collector"}),
        np.pod("KubeRay operator (own)", catalog.KUBERAY_OPERATOR_NAMESPACE, dict(catalog.KUBERAY_OPERATOR_POD_LABELS)),
        np.Endpoint("another VM of the VPC", ip="10.128.0.7"),
        np.Endpoint("the internet", ip="203.0.113.9"),
    ]


def _endpoint(p: RenderedPod) -> np.Endpoint:
    return np.pod(p.source, p.namespace, p.labels)


def workload_namespace(result: engine.SynthResult) -> str:
    """The stack's own namespace: a platform's `namespace`, an experiment stack's the one its platform made for it."""
    if "namespace" in result.outputs:
        return result.outputs["namespace"]
    return result.config.get(f"{result.project}:namespace", "nemo-rl")


def workload_pods(result: engine.SynthResult) -> list[RenderedPod]:
    ns = workload_namespace(result)
    return [p for p in pods(result) if p.namespace == ns]


def engine_project(result: engine.SynthResult) -> str:
    return result.project


def _is_ray_node(p: RenderedPod) -> bool:
    return p.labels.get(ROLE) in ("ray-head", "ray-worker")


def policies(result: engine.SynthResult) -> np.Policies:
    return np.Policies(r.inputs for r in result.kubernetes_objects())


def ray_port_reach(result: engine.SynthResult) -> dict[str, set[int]]:
    """Source (outside the Ray nodes) -> the Ray ports it reaches on the head or a worker."""
    pol = policies(result)
    wl = workload_pods(result)
    ray_nodes = [p for p in wl if _is_ray_node(p)]
    sources = [(s.name, s) for s in outside_sources(wl[0].namespace)]
    sources += [(p.source, _endpoint(p)) for p in wl if not _is_ray_node(p)]
    out: dict[str, set[int]] = {}
    for name, src in sources:
        for dst in ray_nodes:
            for port in RAY_PORTS:
                if pol.allowed(src, _endpoint(dst), port):
                    out.setdefault(name, set()).add(port)
    return out


def dashboard_reach(result: engine.SynthResult) -> set[str]:
    """Who reaches the head's 8265 besides the Ray nodes and the submitter (the node's own traffic aside)."""
    reach = ray_port_reach(result)
    return {src for src, ports in reach.items() if catalog.RAY_DASHBOARD_PORT in ports and "submitter" not in src}


def pods_without_egress_policy(result: engine.SynthResult) -> tuple[int, int]:
    pol = policies(result)
    wl = workload_pods(result)
    return sum(not pol.egress_isolated(_endpoint(p)) for p in wl), len(wl)


def _grants(result: engine.SynthResult) -> list[tuple[str, str, str]]:
    """(resource type, role, member) of every Cloud Storage IAM grant."""
    out = []
    for r in result.resources:
        if r.type.startswith("gcp:storage/") and "iam" in r.type.lower() and "member" in r.inputs:
            out.append((r.type, r.inputs["role"], r.inputs["member"]))
    return out


def write_principals(result: engine.SynthResult) -> set[str]:
    return {m for _, role, m in _grants(result) if role in WRITE_ROLES}


OWN_PREFIX = "each under its own prefix only"


def bucket_write(result: engine.SynthResult) -> tuple[int, int, str]:
    """(pod templates with bucket write, pods, scope): scope 'whole bucket' if any write grant is bucket-level,
    else OWN_PREFIX (managed folders named after each writer's prefix: the export's, the weights staging's)."""
    principals = {tuple(_PRINCIPAL.search(m).groups()) for m in write_principals(result)}
    writers = [p for p in pods(result) if (p.namespace, p.service_account) in principals]
    scopes = {t for t, role, _ in _grants(result) if role in WRITE_ROLES}
    bucket_level = any("bucketIAM" in t for t in scopes)
    return len(writers), sum(p.replicas for p in writers), "whole bucket" if bucket_level else OWN_PREFIX


def platform_of(result: engine.SynthResult) -> str:
    """The platform stack an experiment stack reads (`platformStack: <org>/<project>/<stack>`), '' for a platform."""
    ref = result.config.get(f"{result.project}:platformStack", "")
    return ref.rsplit("/", 1)[-1] if ref else ""


def stack_write_principals(stack: str, results: Mapping[str, engine.SynthResult]) -> set[str]:
    """The Workload Identity principals a stack's pods write to the bucket as: whichever granted principal their
    (namespace, service account) is, over the grants of the stack and of its platform (an experiment stack grants
    its own export identity; a grant of its platform's would count for it too)."""
    r = results[stack]
    platform = platform_of(r)
    granted = write_principals(r) | (write_principals(results[platform]) if platform in results else set())
    by_identity = {tuple(_PRINCIPAL.search(m).groups()): m for m in granted}
    return {
        by_identity[(p.namespace, p.service_account)]
        for p in pods(r)
        if (p.namespace, p.service_account) in by_identity
    }


def sharing_groups(results: Mapping[str, engine.SynthResult]) -> list[list[str]]:
    """Groups of stacks (each sorted) writing as one principal (all shipped stacks share one placeholder project)."""
    seen: dict[str, set[str]] = {}
    for stack in results:
        for m in stack_write_principals(stack, results):
            seen.setdefault(m, set()).add(stack)
    return sorted(sorted(stacks) for stacks in seen.values() if len(stacks) > 1)


def shared_principals(results: Mapping[str, engine.SynthResult]) -> int:
    """Stacks whose write principal is also another stack's."""
    return len({s for group in sharing_groups(results) for s in group})


def _env(container: Mapping) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def _secret_keys(result: engine.SynthResult) -> dict[tuple[str, str], set[str]]:
    """(namespace, name) -> the keys each declared Secret holds."""
    out: dict[tuple[str, str], set[str]] = {}
    for r in result.kubernetes_objects():
        if r.inputs.get("kind") == "Secret":
            md = r.inputs.get("metadata") or {}
            keys = set(r.inputs.get("stringData") or {}) | set(r.inputs.get("data") or {})
            out[(md.get("namespace", ""), md.get("name", ""))] = keys
    return out


def _mounted_keys(p: RenderedPod, secrets: Mapping[tuple[str, str], set[str]] | None = None) -> set[str]:
    """The Secret keys a pod holds as files. With `secrets`, an `optional` item whose key the Secret does not
    hold gives no file (Kubernetes "Optional Secrets": the pod starts and the file is absent), so it is not counted."""
    keys = set()
    for v in p.spec.get("volumes", []):
        for src in (v.get("projected") or {}).get("sources", []):
            sec = src.get("secret", {})
            items = {i["key"] for i in sec.get("items", [])}
            if secrets is not None and sec.get("optional"):
                items &= secrets.get((p.namespace, sec.get("name", "")), set())
            keys |= items
        keys |= {i["key"] for i in (v.get("secret") or {}).get("items", [])}
    return keys


def _logs_to_wandb(result: engine.SynthResult) -> bool:
    return any(
        "logger.wandb_enabled=True" in (r.inputs.get("spec") or {}).get("entrypoint", "")
        for r in result.kubernetes_objects()
        if r.inputs.get("kind") == "RayJob"
    )


def tokens_never_read(result: engine.SynthResult) -> int:
    """Pods holding a token file nothing in them reads: the HF token where every container runs with
    HF_HUB_OFFLINE=1 (huggingface_hub then makes no request), the W&B netrc where the job does not log to W&B, the
    Ray token where Ray runs without token auth. An optional item the Secret does not hold is no file (the head's
    netrc while the job does not log to W&B)."""
    wandb = _logs_to_wandb(result)
    secrets = _secret_keys(result)
    count = 0
    for p in pods(result):
        keys = _mounted_keys(p, secrets)
        envs = [_env(c) for c in p.spec.get("containers", [])]
        unread = (
            ("hf-token" in keys and all(e.get("HF_HUB_OFFLINE") == "1" for e in envs))
            or ("wandb-netrc" in keys and not wandb)
            or (
                catalog.KUBERAY_AUTH_TOKEN_SECRET_KEY in keys
                and not any(e.get("RAY_AUTH_MODE") == "token" for e in envs)
            )
        )
        count += p.replicas if unread else 0
    return count


def namespaces_with_psa(result: engine.SynthResult, tenants: Sequence[engine.SynthResult] = ()) -> tuple[int, int]:
    """(namespaces whose labels enforce the strictest level all their pods meet and warn/audit restricted, all), the
    pods of the experiment stacks a platform hosts (`tenants`) counted in the namespaces it made for them."""
    namespaces = [r.inputs for r in result.kubernetes_objects() if r.inputs.get("kind") == "Namespace"]
    by_ns: dict[str, list[dict]] = {}
    for p in [*pods(result), *(q for t in tenants for q in pods(t))]:
        by_ns.setdefault(p.namespace, []).append(p.spec)
    good = 0
    for ns in namespaces:
        labels = ns["metadata"].get("labels") or {}
        name = ns["metadata"]["name"]
        want = pss.strictest_common(by_ns.get(name, []))
        if (
            labels.get("pod-security.kubernetes.io/enforce") == want
            and labels.get("pod-security.kubernetes.io/warn") == "restricted"
            and labels.get("pod-security.kubernetes.io/audit") == "restricted"
        ):
            good += 1
    return good, len(namespaces)


def capability_drops(result: engine.SynthResult) -> tuple[int, int]:
    """(containers dropping ALL capabilities, containers) of workload pods without the RDMA host mounts, injected
    sidecars included."""
    containers = [c for p in workload_pods(result) if not has_host_paths(p) for c in p.containers]
    drop_all = [
        c for c in containers if "ALL" in ((c.get("securityContext") or {}).get("capabilities") or {}).get("drop", [])
    ]
    return len(drop_all), len(containers)


def images(result: engine.SynthResult) -> set[str]:
    found: set[str] = set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "image" and isinstance(x, str):
                    found.add(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for r in result.kubernetes_objects():
        walk(r.inputs)
    # The Cloud Run jobs that copy and prewarm the images (imagePath: streaming) run images too.
    for r in result.of_type("gcp:cloudrunv2/job:Job"):
        walk(r.inputs)
    return found


def _name(ref: str) -> str:
    """An image's name; a stack's registry copy of the NeMo-RL image counts as that image."""
    if is_nemo_rl_image(ref):
        return catalog.NEMO_RL_IMAGE_REPO
    return ref.split("@", 1)[0].rsplit(":", 1)[0]


def digest_pins(results: Mapping[str, engine.SynthResult]) -> tuple[int, int]:
    """(images pinned by digest, distinct images) over every shipped stack (one NeMo-RL image counted once)."""
    refs = set().union(*(images(r) for r in results.values()))
    by_name: dict[str, bool] = {}
    for ref in refs:
        by_name[_name(ref)] = by_name.get(_name(ref), True) and "@sha256:" in ref
    return sum(by_name.values()), len(by_name)


def node_roles_beyond_minimum(result: engine.SynthResult) -> int:
    account = result.get("gcp:serviceaccount/account:Account", "nodes").computed["member"]
    return sum(
        1
        for r in result.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["member"] == account
        and r.inputs["role"] != catalog.NODE_SERVICE_ACCOUNT_MINIMUM_ROLE
        and r.inputs["role"] != catalog.IMAGE_STREAMING_NODE_ROLE
    )


def ip_endpoint_open(result: engine.SynthResult) -> bool:
    (c,) = result.of_type("gcp:container/cluster:Cluster")
    return not c.inputs["privateClusterConfig"].get("enablePrivateEndpoint") and not c.inputs.get(
        "masterAuthorizedNetworksConfig"
    )


def _triggers(wf: dict) -> set[str]:
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True
    return {on} if isinstance(on, str) else set(on or {})


def _pulumi_stack(wf: dict, job: dict) -> str:
    """The stack name a job's Pulumi token is used on (`format('{0}/<stack>', vars.PULUMI_ORG)`), '' if none."""
    env = {**(wf.get("env") or {}), **(job.get("env") or {})}
    m = re.search(r"format\('\{0\}/([\w-]+)'", str(env.get("STACK", "")))
    return m.group(1) if m and "pulumi/auth-actions" in yaml.safe_dump(job) else ""


def ci_figures() -> tuple[int, int, int]:
    """(jobs handing real secrets to unreviewed code, `uses:` lines not pinned by SHA, `uses:` lines) over every
    workflow. A job holding a secret or an OIDC token counts when nothing reviews the code it runs: no environment;
    a Pulumi token (Stack Read and up hold stack:decrypt) on a stack a shipped stack file names, from a pull request;
    a dispatch or push trigger without the job requiring main (a maintainer may dispatch any branch)."""
    real, uses = 0, []
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        on = _triggers(wf)
        for job in wf["jobs"].values():
            text = yaml.safe_dump(job)
            secrets = set(re.findall(r"\bsecrets\.(\w+)", text)) - {"GITHUB_TOKEN"}
            oidc = (job.get("permissions") or {}).get("id-token") == "write"
            if not (secrets or oidc):
                continue
            shipped_stack = _pulumi_stack(wf, job) in engine.available_stacks()
            unguarded = bool(on & {"workflow_dispatch", "push"}) and "refs/heads/main" not in str(job.get("if", ""))
            if "environment" not in job or ("pull_request" in on and shipped_stack) or unguarded:
                real += 1
        uses += [line for line in path.read_text().splitlines() if re.match(r"^\s*(-\s+)?uses:", line)]
    unpinned = [u for u in uses if not re.search(r"@[0-9a-f]{40}\b", u)]
    return real, len(unpinned), len(uses)


def figures(results: Mapping[str, engine.SynthResult], experiments: Mapping[str, engine.SynthResult]) -> dict[str, str]:
    """Figure -> value, in the words of the measure table in docs/security.md: over the platform stacks
    (`results`); the Workload Identity figure over the experiment stacks on them too."""

    def per_stack(f: Callable[[engine.SynthResult], object]) -> dict[str, object]:
        return {s: f(r) for s, r in sorted(results.items())}

    reach = per_stack(ray_port_reach)
    expected = {s: {"submitter", "operator"} for s in results}
    outside = {
        s: sorted(
            {
                (
                    "submitter"
                    if "submitter" in src
                    else "operator"
                    if src in ("konnectivity agent", "KubeRay operator (own)")
                    else src
                )
                for src in r
            }
        )
        for s, r in reach.items()
    }
    ray = (
        "none but the submitter and the operator's path, 3/3 stacks"
        if all(
            set(v) <= expected[s] and all(ports == {catalog.RAY_DASHBOARD_PORT} for ports in reach[s].values())
            for s, v in outside.items()
        )
        else f"{outside}"
    )
    egress = per_stack(pods_without_egress_policy)
    egress_s = ", ".join(f"{s} {a}/{b}" for s, (a, b) in egress.items())
    dash = sorted(set().union(*per_stack(dashboard_reach).values()))
    writes = per_stack(bucket_write)
    scopes = sorted({scope for _, _, scope in writes.values()})
    write_s = ", ".join(f"{s} {t} ({p} pods)" for s, (t, p, _) in writes.items()) + "; " + ", ".join(scopes)
    every_stack = {**results, **experiments}
    shared = shared_principals(every_stack)
    groups = "; ".join(", ".join(g) for g in sharing_groups(every_stack))
    never = sum(per_stack(tokens_never_read).values())
    psa = {
        s: namespaces_with_psa(r, [e for e in experiments.values() if platform_of(e) == s])
        for s, r in sorted(results.items())
    }
    psa_s = f"{sum(a for a, _ in psa.values())}/{sum(b for _, b in psa.values())}"
    caps = per_stack(capability_drops)
    caps_s = f"{sum(a for a, _ in caps.values())}/{sum(b for _, b in caps.values())}"
    dig, distinct = digest_pins(results)
    roles = sum(per_stack(node_roles_beyond_minimum).values())
    open_ = sum(per_stack(ip_endpoint_open).values())
    real, unpinned, uses = ci_figures()
    return {
        "Ray ports without a credential reachable from outside the workload": ray,
        "workload pods without an egress policy": egress_s,
        "who reaches 8265 besides the workload and the submitter": ", ".join(dash),
        "pod templates with bucket write": write_s,
        "stacks sharing one Workload Identity principal": f"{shared}/{len(every_stack)}"
        + (f" ({groups})" if groups else ""),
        "pods holding a token they never read": str(never),
        "namespaces with Pod Security labels": psa_s,
        "containers of pods without the RDMA mounts that drop all capabilities": caps_s,
        "images pinned by digest": f"{dig}/{distinct}",
        "project roles on the node account beyond GKE's minimum": str(roles),
        "stacks whose IP endpoint is open to any address": f"{open_}/{len(results)}",
        "CI jobs handing real secrets to unreviewed code; uses: lines not pinned by SHA": f"{real}; {unpinned}/{uses}",
    }
