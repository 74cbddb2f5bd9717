"""Every pod a rendered stack creates, as the cluster will run it: each pod template of the engine's records (Ray
head and worker groups of RayClusters and of RayJobs' own clusters, RayJob submitters, Jobs, DaemonSets), with its
namespace, labels, service account and replica count, plus what admission adds to it:

- the Cloud Storage FUSE sidecar, injected into pods annotated `gke-gcsfuse/volumes: "true"`, with the security
  context the webhook sets (gcs-fuse-csi-driver pkg/webhook/sidecar_spec.go GetSecurityContext @5fcdc04a: no
  privilege escalation, read-only root, drop ALL, RuntimeDefault seccomp, non-root as nobody) and its emptyDir
  volumes;
- KubeRay's `wait-gcs-ready` init container on Ray workers, which copies the Ray container's env, volume mounts
  and security context (ray-operator/controllers/ray/common/pod.go @v1.6.0/@v1.7.0).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Iterator

from synth import engine

GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
NOBODY = 65534
GCSFUSE_SIDECAR = {
    "name": "gke-gcsfuse-sidecar",
    "image": "gke.gcr.io/gcs-fuse-csi-driver-sidecar-mounter",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
        "runAsUser": NOBODY,
        "runAsGroup": NOBODY,
    },
}
GCSFUSE_VOLUMES = [
    {"name": "gke-gcsfuse-tmp", "emptyDir": {}},
    {"name": "gke-gcsfuse-buffer", "emptyDir": {}},
    {"name": "gke-gcsfuse-cache", "emptyDir": {}},
]


@dataclass
class RenderedPod:
    source: str  # "<Kind> <resource name>: <template>"
    namespace: str
    labels: dict
    annotations: dict
    spec: dict  # as admitted (with injected containers)
    replicas: int

    @property
    def service_account(self) -> str:
        return self.spec.get("serviceAccountName", "default")

    @property
    def containers(self) -> list[dict]:
        return [*self.spec.get("initContainers", []), *self.spec.get("containers", [])]


def _admitted(template: dict, ray_worker: bool) -> tuple[dict, dict, dict]:
    meta = template.get("metadata") or {}
    spec = copy.deepcopy(template["spec"])
    annotations = dict(meta.get("annotations") or {})
    if annotations.get(GCSFUSE_ANNOTATION) == "true":
        spec["initContainers"] = [*spec.get("initContainers", []), copy.deepcopy(GCSFUSE_SIDECAR)]
        spec["volumes"] = [*spec.get("volumes", []), *copy.deepcopy(GCSFUSE_VOLUMES)]
    if ray_worker:
        ray = spec["containers"][0]
        spec["initContainers"] = [
            *spec.get("initContainers", []),
            {
                "name": "wait-gcs-ready",
                "image": ray["image"],
                "env": copy.deepcopy(ray.get("env", [])),
                "volumeMounts": copy.deepcopy(ray.get("volumeMounts", [])),
                "securityContext": copy.deepcopy(ray.get("securityContext")),
            },
        ]
    return dict(meta.get("labels") or {}), annotations, spec


def _ray_cluster(source: str, namespace: str, spec: dict) -> Iterator[RenderedPod]:
    labels, ann, pod_spec = _admitted(spec["headGroupSpec"]["template"], ray_worker=False)
    yield RenderedPod(f"{source}: head", namespace, labels, ann, pod_spec, 1)
    for g in spec.get("workerGroupSpecs", []):
        labels, ann, pod_spec = _admitted(g["template"], ray_worker=True)
        yield RenderedPod(f"{source}: {g['groupName']}", namespace, labels, ann, pod_spec, g.get("replicas", 1))


def pods(result: engine.SynthResult) -> list[RenderedPod]:
    out: list[RenderedPod] = []
    for r in result.kubernetes_objects():
        kind, spec = r.inputs.get("kind"), r.inputs.get("spec") or {}
        ns = (r.inputs.get("metadata") or {}).get("namespace", "")
        src = f"{kind} {r.name}"
        if kind == "RayCluster":
            out += _ray_cluster(src, ns, spec)
        elif kind == "RayJob":
            labels, ann, pod_spec = _admitted(spec["submitterPodTemplate"], ray_worker=False)
            out.append(RenderedPod(f"{src}: submitter", ns, labels, ann, pod_spec, 1))
            if "rayClusterSpec" in spec:
                out += _ray_cluster(src, ns, spec["rayClusterSpec"])
        elif kind == "Job":
            labels, ann, pod_spec = _admitted(spec["template"], ray_worker=False)
            out.append(RenderedPod(src, ns, labels, ann, pod_spec, spec.get("parallelism", 1)))
        elif kind == "DaemonSet":
            labels, ann, pod_spec = _admitted(spec["template"], ray_worker=False)
            out.append(RenderedPod(src, ns, labels, ann, pod_spec, 1))
    return out


def has_host_paths(p: RenderedPod) -> bool:
    return any("hostPath" in v for v in p.spec.get("volumes", []))
