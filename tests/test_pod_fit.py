"""Every pod the stacks render fits the node or Autopilot class it lands on.

Rules, each with its source (core/node_fit.py has them in full):
- the GCS FUSE CSI webhook sizes its injected sidecar from the Pod's annotations: with only a limit the request
  equals the limit, with neither the webhook's default request applies, a limit of "0" means none
  (GoogleCloudPlatform/gcs-fuse-csi-driver pkg/webhook/config.go `populateResource` at v1.24.4, and its own
  TestPrepareConfig cases in pkg/webhook/mutatingwebhook_test.go, restated below);
- GKE keeps 10 % of the disk backing ephemeral storage as an eviction threshold and reserves min(50 %, 6 GiB +
  35 %, 100 GiB) of it (GKE "Plan node sizes");
- Autopilot gives a container without an ephemeral-storage request 1 GiB and refuses a Pod asking more than 10 GiB
  ("Resource requests in Autopilot", as quoted in gcs-fuse-csi-driver issue #21);
- a Pod's request is its containers' plus its sidecars' (Kubernetes "Sidecar containers": resource sharing).
The pods are read from the engine's records of the rendered stacks, not from the check's own list.
"""

from __future__ import annotations

import json

import pytest

from core import catalog, export, node_fit
from core.settings import PLACEHOLDER_PROJECT, load_settings
from workloads.manifests import pod_fit

ON = {"gke-gcsfuse/volumes": "true"}
DEFAULTS = node_fit.gcsfuse_sidecar_requests(ON)


def sidecar(**annotations) -> node_fit.Resources:
    return node_fit.gcsfuse_sidecar_requests({**ON, **{k.replace("_", "-"): v for k, v in annotations.items()}})


# --- the webhook's rule (TestPrepareConfig's cases, with GKE's deployment defaults: 250m, 256Mi, 5Gi) -----------
@pytest.mark.unit
def test_without_annotations_the_sidecar_gets_the_webhooks_default_requests():
    assert DEFAULTS == node_fit.Resources(0.25, 0.25, 5.0)
    assert node_fit.gcsfuse_sidecar_requests({}) is None  # no `gke-gcsfuse/volumes: "true"`: no sidecar


@pytest.mark.unit
def test_a_limit_alone_becomes_the_request_too():
    # "only limits are specified": cpu-limit 500m, memory-limit 1Gi, ephemeral-storage-limit 50Gi -> the same requests.
    got = node_fit.gcsfuse_sidecar_requests(
        {
            **ON,
            "gke-gcsfuse/cpu-limit": "500m",
            "gke-gcsfuse/memory-limit": "1Gi",
            "gke-gcsfuse/ephemeral-storage-limit": "50Gi",
        }
    )
    assert got == node_fit.Resources(0.5, 1.0, 50.0)


@pytest.mark.unit
def test_a_zero_limit_alone_keeps_the_default_request_and_an_explicit_request_wins():
    # "limits are set to '0'" -> default requests; "requests and limits are explicitly set" -> the requests.
    zero = {**ON, **{f"gke-gcsfuse/{r}-limit": "0" for r in ("cpu", "memory", "ephemeral-storage")}}
    assert node_fit.gcsfuse_sidecar_requests(zero) == DEFAULTS
    both = {
        **ON,
        "gke-gcsfuse/cpu-limit": "500m",
        "gke-gcsfuse/cpu-request": "100m",
        "gke-gcsfuse/memory-limit": "1Gi",
        "gke-gcsfuse/memory-request": "500Mi",
        "gke-gcsfuse/ephemeral-storage-limit": "50Gi",
        "gke-gcsfuse/ephemeral-storage-request": "10Gi",
    }
    assert node_fit.gcsfuse_sidecar_requests(both) == node_fit.Resources(0.1, 500 / 1024, 10.0)


# --- GKE's ephemeral-storage reservation --------------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize("disk,allocatable", [(10, 4.0), (100, 49.0), (200, 104.0), (1000, 800.0), (12000, 10700.0)])
def test_ephemeral_allocatable_follows_gkes_reservation(disk, allocatable):
    # 10 GiB: 1 eviction + min(5, 9.5, 100); 200: 20 + 76; 1000: 100 + the 100 GiB cap.
    assert node_fit.ephemeral_allocatable_gib(disk) == pytest.approx(allocatable)


@pytest.mark.unit
def test_the_sidecar_dev_used_to_render_could_never_be_scheduled_on_its_system_node():
    # Found by review: limit-only annotations with 112Gi (sized for staging) became a 112Gi request.
    old = {
        **ON,
        "gke-gcsfuse/cpu-limit": "2",
        "gke-gcsfuse/memory-limit": "4Gi",
        "gke-gcsfuse/ephemeral-storage-limit": "112Gi",
    }
    head = {"containers": [{"name": "ray-head", "resources": {"requests": {"cpu": "8", "memory": "32Gi"}}}]}
    request = node_fit.pod_request(head, old)
    room = node_fit.standard_node_room("n2-standard-16", catalog.SYSTEM_BOOT_DISK_GB, gpu=False)
    [(field, key, line)] = node_fit.pod_fit_problems(
        "the Ray head pod",
        request,
        room,
        {"cpu": "headCpu", "memory_gib": "headMemoryGib", "ephemeral_gib": "headEphemeralStorageGib"},
    )
    assert field == "ephemeral_gib" and request.total.ephemeral_gib == 112 and room.ephemeral_gib < 100
    assert line.startswith("nemo-rl-gke:headEphemeralStorageGib: the Ray head pod asks for 112 GiB")


@pytest.mark.unit
def test_init_containers_count_at_their_peak_and_sidecars_with_the_app():
    spec = {
        "initContainers": [
            {"name": "install", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        ],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "8Gi"}}}],
    }
    total = node_fit.pod_request(spec).total
    assert (total.cpu, total.memory_gib) == (3, 9)
    # Autopilot: 1 GiB of ephemeral storage for each container that names none.
    assert node_fit.pod_request(spec, autopilot=True).total.ephemeral_gib == 2


# --- the rendered stacks -------------------------------------------------------------------------------------------
def pod_templates(result) -> list[tuple[str, dict, dict]]:
    """(what, annotations, pod spec) of every pod template in the engine's records."""
    out = []

    def add(what, template):
        if template and template.get("spec"):
            out.append((what, (template.get("metadata") or {}).get("annotations") or {}, template["spec"]))

    def cluster(what, spec):
        add(f"{what} head", (spec.get("headGroupSpec") or {}).get("template"))
        for g in spec.get("workerGroupSpecs") or []:
            add(f"{what} {g['groupName']}", g.get("template"))

    for r in result.resources:
        spec = r.inputs.get("spec") or {}
        if r.type in ("kubernetes:batch/v1:Job", "kubernetes:apps/v1:DaemonSet"):
            add(f"{r.type} {r.name}", spec.get("template"))
        elif r.type == "kubernetes:ray.io/v1:RayCluster":
            cluster("RayCluster", spec)
        elif r.type == "kubernetes:ray.io/v1:RayJob":
            add("RayJob submitter", spec.get("submitterPodTemplate"))
            if spec.get("rayClusterSpec"):
                cluster("RayJob cluster", spec["rayClusterSpec"])
    return out


def settings_of(result):
    values = {
        k.split(":", 1)[1]: v
        for k, v in result.config.items()
        if k.startswith("nemo-rl-gke:") and k.split(":", 1)[1] not in ("hfToken", "wandbApiKey", "rayAuthToken")
    }
    return load_settings(
        result.stack,
        "example-project",
        values,
        {"hfToken": "secret", "wandbApiKey": "secret", "rayAuthToken": "secret"},
    )


VARIANTS = [
    {},
    {"jobMode": "own-cluster"},
    {"prefetchImage": "nemo-rl"},
    {"imagePath": "pull"},
    {"exportCheckpoints": False},
    {"jobEnabled": False},
]


@pytest.mark.graph
@pytest.mark.parametrize(
    "overrides", VARIANTS, ids=lambda o: "+".join(f"{k}={v}" for k, v in o.items()) or "as-shipped"
)
def test_every_pod_of_every_shipped_stack_fits_where_it_lands(synth, stack, overrides):
    r = synth(stack, overrides)
    assert r.error is None, r.error
    s = settings_of(r)
    pods = pod_templates(r)
    assert pods
    for what, annots, spec in pods:
        room = pod_fit.room_for(s, spec)
        request = node_fit.pod_request(spec, annots, autopilot=s.autopilot)
        assert (
            room is not None
            and node_fit.pod_fit_problems(what, request, room, {"cpu": "-", "memory_gib": "-", "ephemeral_gib": "-"})
            == []
        ), (what, request, room)


@pytest.mark.graph
def test_the_check_sees_every_pod_the_stack_renders(synth, stack):
    r = synth(stack)
    s = settings_of(r)

    def canon(spec):  # the records carry the stack file's placeholder project in the bucket name
        return json.dumps(spec, sort_keys=True).replace(PLACEHOLDER_PROJECT, "example-project")

    rendered = {canon(spec) for _, _, spec in pod_templates(r)}
    checked = {canon(p.spec) for p in pod_fit.rendered_pods(s)}
    # The kube-system gIB installer is upstream's manifest (covered by the GKE overhead): the only one not checked.
    missing = [w for w, _, spec in pod_templates(r) if canon(spec) not in checked]
    assert all("nccl-rdma-installer" in w for w in missing), missing
    assert checked <= rendered


@pytest.mark.graph
def test_ray_containers_on_autopilot_ask_for_their_ephemeral_storage_within_the_class_maximum(synth):
    r = synth("autopilot")
    s = settings_of(r)
    for what, annots, spec in pod_templates(r):
        if not what.startswith("RayCluster"):
            continue
        [ray] = [c for c in spec["containers"] if c["name"].startswith("ray-")]
        asked = node_fit.quantity(ray["resources"]["requests"]["ephemeral-storage"]) / 2**30
        assert asked > node_fit.AUTOPILOT_DEFAULT_EPHEMERAL_GIB  # more than Autopilot's 1 GiB default
        total = node_fit.pod_request(spec, annots, autopilot=True).total.ephemeral_gib
        assert total <= node_fit.AUTOPILOT_MAX_EPHEMERAL_GIB, what
    assert s.autopilot


@pytest.mark.graph
@pytest.mark.parametrize(
    "stack_name,values,key",
    [
        ("dev", {"headEphemeralStorageGib": 100}, "nemo-rl-gke:headEphemeralStorageGib"),
        ("dev", {"headCpu": 15}, "nemo-rl-gke:headCpu"),  # the n2-standard-16 offers about 14.4 after GKE's share
        ("autopilot", {"headEphemeralStorageGib": 11}, "nemo-rl-gke:headEphemeralStorageGib"),
        ("autopilot", {"workerEphemeralStorageGib": 11}, "nemo-rl-gke:workerEphemeralStorageGib"),
        ("codelab", {"workerEphemeralStorageGib": 20000}, "nemo-rl-gke:workerEphemeralStorageGib"),
    ],
)
def test_a_pod_that_cannot_fit_is_refused_in_one_line_naming_its_key(synth, stack_name, values, key):
    r = synth(stack_name, values)
    assert r.error is not None and r.resources == []
    lines = [ln.strip()[2:] for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith(key + ":"), r.error


@pytest.mark.graph
def test_autopilot_head_may_take_the_whole_pod_maximum_the_export_being_a_pod_of_its_own(synth):
    for export_on in (True, False):
        r = synth("autopilot", {"headEphemeralStorageGib": 10, "exportCheckpoints": export_on})
        assert r.error is None, r.error


@pytest.mark.graph
def test_an_export_on_a_gke_without_default_streaming_writes_is_refused(synth):
    # The sidecar stages nothing only with streaming writes, on by default from 1.33.2-gke.4655000.
    r = synth("dev", {"gkeVersion": "1.33.2-gke.1000000", "lustrePortMode": "legacy"})
    assert (
        r.error is not None and "nemo-rl-gke:gkeVersion: 1.33.2-gke.1000000 is older than 1.33.2-gke.4655000" in r.error
    )
    assert (
        synth("dev", {"gkeVersion": "1.33.2-gke.1000000", "lustrePortMode": "legacy", "exportCheckpoints": False}).error
        is None
    )
    assert export.SIDECAR_REQUESTS["ephemeral-storage"] == "1Gi"
