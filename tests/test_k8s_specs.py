"""The Kubernetes objects the program renders: schema-valid everywhere, and the RDMA / GPU invariants hold."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest

from core import catalog
from core.images import nemo_rl_image
from core.naming import GVNIC_NETWORK, HF_SECRET, LUSTRE_PVC, RDMA_NETWORKS
from core.settings import Settings, load_settings
from tests.k8s_validation import KUBERAY_VERSIONS, SCHEMAS_ENV, validate_any, validate_core, validate_crd
from workloads.manifests import nccl_installer, rdma
from workloads.manifests.raycluster import (
    DASHBOARD_PORT,
    HEAD_CONTAINER,
    WORKER_CONTAINER,
    RayPodsConfig,
    raycluster_manifest,
    raycluster_spec,
)

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("kubernetes_schemas")]

CLUSTER_NAME = "nemo-rl"

VARIANTS = {
    "standard-b200": {},
    "standard-h200": {"gpuType": "nvidia-h200-141gb"},
    "autopilot-spot-b200": {"clusterMode": "autopilot"},
    "autopilot-flex-h200": {"clusterMode": "autopilot", "gpuType": "nvidia-h200-141gb", "capacity": ["flex-start"]},
}


def settings_for(variant: str, **extra) -> Settings:
    return load_settings(
        "dev",
        "example-project",
        values={**VARIANTS[variant], **extra},
        secret_state={"hfToken": "secret", "wandbApiKey": "secret", "rayAuthToken": "secret"},
    )


def network_objects_for(s: Settings) -> list[dict]:
    n = s.names
    return rdma.network_objects(
        n.gvnic_network, n.gvnic_subnet, n.rdma_network, [n.rdma_subnet(i) for i in range(len(RDMA_NETWORKS))]
    )


def raycluster_for(s: Settings) -> dict:
    return raycluster_manifest(RayPodsConfig.of(s), name=CLUSTER_NAME, secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)


def own_cluster_rayjob(s: Settings) -> dict:
    """A RayJob embedding the same spec, as the job's own-cluster mode does."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "grpo", "namespace": s.storage.namespace},
        "spec": {
            "entrypoint": "python -c 'import ray; ray.init()'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": raycluster_spec(RayPodsConfig.of(s), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC),
        },
    }


def rendered(s: Settings) -> list[dict]:
    mode = "autopilot" if s.autopilot else "standard"
    objs = network_objects_for(s)
    if s.autopilot:
        objs.append(nccl_installer.namespace_manifest())
    objs.append(nccl_installer.installer_daemonset(mode, catalog.NCCL_GIB_INSTALLER_IMAGE))
    objs.append(raycluster_for(s))
    return objs


def pods_of(rc: dict) -> dict[str, dict]:
    """Pod templates of a RayCluster by role ("head", "worker:<group>")."""
    spec = rc["spec"]
    out = {"head": spec["headGroupSpec"]["template"]}
    for g in spec["workerGroupSpecs"]:
        out[f"worker:{g['groupName']}"] = g["template"]
    return out


def workers(rc: dict) -> list[dict]:
    return [t for role, t in pods_of(rc).items() if role.startswith("worker:")]


def as_pod(template: dict, name: str, namespace: str) -> dict:
    meta = {"name": name, "namespace": namespace, **copy.deepcopy(template.get("metadata", {}))}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template["spec"])}


def containers(template: dict) -> list[dict]:
    spec = template["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


@pytest.fixture(params=sorted(VARIANTS))
def variant(request) -> str:
    return request.param


# --- schemas ----------------------------------------------------------------------------------------------
def test_every_rendered_object_validates_strictly_against_both_kuberay_versions(variant):
    s = settings_for(variant)
    for obj in rendered(s) + [own_cluster_rayjob(s)]:
        validate_any(obj)


def test_ray_pod_templates_are_valid_core_pods(variant):
    s = settings_for(variant)
    for role, template in pods_of(raycluster_for(s)).items():
        validate_core(as_pod(template, role.replace(":", "-"), s.storage.namespace))


def test_unknown_field_fails_validation_naming_the_object():
    s = settings_for("standard-b200")
    rc = raycluster_for(s)
    rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["privilegedMode"] = True
    with pytest.raises(AssertionError) as err:
        validate_crd(rc)
    msg = str(err.value)
    assert f"RayCluster {s.storage.namespace}/{CLUSTER_NAME}" in msg and "privilegedMode" in msg
    for version in KUBERAY_VERSIONS:
        assert version in msg

    net = network_objects_for(s)[1]
    net["spec"]["parameterRef"] = net["spec"].pop("parametersRef")
    with pytest.raises(AssertionError, match=r"(?s)Network gvnic-1 .*parameterRef"):
        validate_crd(net)

    ds = nccl_installer.installer_daemonset("standard")
    ds["spec"]["template"]["spec"]["hostNetwrok"] = True
    with pytest.raises(AssertionError, match=r"DaemonSet kube-system/nccl-rdma-installer: .*hostNetwrok"):
        validate_core(ds)


def test_fields_only_newer_kuberay_accepts_are_rejected():
    rc = raycluster_for(settings_for("standard-b200"))
    rc["spec"]["workerGroupSpecs"][0]["labels"] = {"team": "rl"}  # KubeRay >= 1.5 only
    with pytest.raises(AssertionError, match=r"\[kuberay-v1\.4\.2\] spec\.workerGroupSpecs\[0\]: .*'labels'"):
        validate_crd(rc)


def test_duplicate_list_map_keys_fail_validation():
    rc = raycluster_for(settings_for("standard-b200"))
    ports = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    ports.append({"containerPort": DASHBOARD_PORT, "name": "dashboard-again", "protocol": "TCP"})
    with pytest.raises(AssertionError, match="same map key"):
        validate_crd(rc)


def test_schema_directory_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv(SCHEMAS_ENV, str(tmp_path / "missing"))
    with pytest.raises(AssertionError, match=SCHEMAS_ENV):
        validate_crd(network_objects_for(settings_for("standard-b200"))[0])


# --- networks and the RDMA mixin ---------------------------------------------------------------------------
def test_network_objects_pair_a_param_set_with_a_device_network_per_nic():
    s = settings_for("standard-b200")
    objs = network_objects_for(s)
    assert len(objs) == 2 * (1 + len(RDMA_NETWORKS)) == 18
    by_kind: dict[str, dict[str, dict]] = {}
    for o in objs:
        assert o["apiVersion"] == "networking.gke.io/v1" and "namespace" not in o["metadata"]
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    names = [GVNIC_NETWORK, *RDMA_NETWORKS]
    assert list(by_kind["GKENetworkParamSet"]) == names == list(by_kind["Network"])
    assert by_kind["GKENetworkParamSet"][GVNIC_NETWORK]["spec"] == {
        "vpc": s.names.gvnic_network,
        "vpcSubnet": s.names.gvnic_subnet,
        "deviceMode": "NetDevice",
    }
    for i, net in enumerate(RDMA_NETWORKS):
        assert by_kind["GKENetworkParamSet"][net]["spec"] == {
            "vpc": s.names.rdma_network,
            "vpcSubnet": s.names.rdma_subnet(i),
            "deviceMode": "RDMA",
        }
    for name, network in by_kind["Network"].items():
        assert network["spec"]["type"] == "Device"
        assert network["spec"]["parametersRef"] == {
            "group": "networking.gke.io",
            "kind": "GKENetworkParamSet",
            "name": name,
        }


def test_network_objects_need_one_subnet_per_rdma_nic():
    with pytest.raises(ValueError, match="8 RDMA subnets"):
        rdma.network_objects("g", "gs", "r", ["r0", "r1"])


def test_every_worker_pod_attaches_ten_interfaces_on_declared_networks(variant):
    s = settings_for(variant)
    declared = {o["metadata"]["name"] for o in network_objects_for(s) if o["kind"] == "Network"}
    for template in workers(raycluster_for(s)):
        ann = template["metadata"]["annotations"]
        assert ann["networking.gke.io/default-interface"] == "eth0"
        interfaces = json.loads(ann["networking.gke.io/interfaces"])
        assert [i["interfaceName"] for i in interfaces] == [f"eth{n}" for n in range(10)]
        assert interfaces[0]["network"] == "default"
        assert {i["network"] for i in interfaces[1:]} == declared
        assert len({i["network"] for i in interfaces}) == 10


def test_interfaces_annotation_is_compact_and_stable():
    first, second = rdma.interfaces_annotation(), rdma.interfaces_annotation()
    assert first == second
    assert " " not in first["networking.gke.io/interfaces"]


def test_worker_tuner_config_matches_the_gpu_type(variant):
    s = settings_for(variant)
    for template in workers(raycluster_for(s)):
        env = env_of(template["spec"]["containers"][0])
        assert env["NCCL_TUNER_CONFIG_PATH"]["value"] == s.gpu.accelerator.tuner_config
        assert env["NCCL_TUNER_CONFIG_PATH"]["value"] == catalog.ACCELERATORS[s.gpu.gpu_type].tuner_config


def test_workers_carry_the_rdma_mixin_without_privilege(variant):
    s = settings_for(variant)
    mixin = rdma.rdma_pod_mixin(s.gpu.accelerator, s.workload.release)
    for template in workers(raycluster_for(s)):
        spec, container = template["spec"], template["spec"]["containers"][0]
        assert container["name"] == WORKER_CONTAINER
        assert all(v in spec["volumes"] for v in mixin.volumes)
        assert all(m in container["volumeMounts"] for m in mixin.volume_mounts)
        assert all(e in container["env"] for e in mixin.env)
        host_paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
        assert host_paths == {"/home/kubernetes/bin/nvidia", "/home/kubernetes/bin/gib"}
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounts["/usr/local/nvidia"]["readOnly"] and mounts["/usr/local/gib"]["readOnly"]
        env = env_of(container)
        # The gIB plugin and the node's driver first, then the image's own entries (none for v0.4.0/v0.5.0).
        assert env["LD_LIBRARY_PATH"]["value"].split(":") == [
            "/usr/local/gib/lib64",
            "/usr/local/nvidia/lib64",
            *s.workload.release.image_library_path,
        ]
        expected = {
            "NCCL_NET": "gIB",
            "NCCL_IB_GID_INDEX": "3",
            "NCCL_CROSS_NIC": "0",
            "NCCL_NET_GDR_LEVEL": "PIX",
            "NCCL_SOCKET_IFNAME": "eth0",
            "GLOO_SOCKET_IFNAME": "eth0",
            "TP_SOCKET_IFNAME": "eth0",
        }
        assert {k: env[k]["value"] for k in expected} == expected


# NVIDIA-NeMo/RL docker/Dockerfile @ v0.7.0 (81aa43dd): `ENV LD_LIBRARY_PATH="/opt/nemo_rl_venv/lib/python3.13/
# site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH}"` (hermetic stage; Transformer Engine must find the pip cuDNN,
# "a version mismatch crash" otherwise), then `ENV LD_LIBRARY_PATH="/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:
# ${LD_LIBRARY_PATH}"` (release stage). v0.4.0 and v0.5.0 set none. A container `env` value replaces the image's.
IMAGE_LIBRARY_PATH = {
    "v0.4.0": [],
    "v0.5.0": [],
    "v0.7.0": [
        "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/efa/lib",
        "/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib",
    ],
}


@pytest.mark.parametrize("release", sorted(IMAGE_LIBRARY_PATH))
def test_ray_pods_keep_the_images_own_library_path_entries_after_ours(release):
    s = settings_for("standard-b200", nemoRlRelease=release, jobEnabled=False)
    rc = raycluster_for(s)
    paths = {role: env_of(t["spec"]["containers"][0])["LD_LIBRARY_PATH"]["value"] for role, t in pods_of(rc).items()}
    expected = ":".join(["/usr/local/gib/lib64", "/usr/local/nvidia/lib64", *IMAGE_LIBRARY_PATH[release]])
    # Head and workers alike: the driver on the head hands its value to every actor (test_actor_environment.py).
    assert paths and set(paths.values()) == {expected}


def test_nccl_env_is_sourced_before_kuberays_own_ray_start(variant):
    """KubeRay runs `<our args> && ulimit ...; ray start ...` unless our command already says `ray start`."""
    s = settings_for(variant)
    mixin = rdma.rdma_pod_mixin(s.gpu.accelerator, s.workload.release)
    assert "source /usr/local/gib/scripts/set_nccl_env.sh" in mixin.startup_prefix
    for template in workers(raycluster_for(s)):
        container = template["spec"]["containers"][0]
        assert "command" not in container
        assert container["args"] == [mixin.startup_prefix]
        assert "ray start" not in mixin.startup_prefix
    rc = raycluster_for(s)
    assert "ray.io/overwrite-container-cmd" not in json.dumps(rc)


def test_worker_start_stops_without_the_gib_plugin_and_inherits_its_env_otherwise(tmp_path):
    """Run the prefix the way KubeRay composes it: `bash -c -- " <args>  && <generated ray start>"`."""
    script = tmp_path / "set_nccl_env.sh"
    prefix = rdma.rdma_pod_mixin(catalog.accelerator("nvidia-b200"), catalog.NEMO_RL_RELEASES["v0.5.0"]).startup_prefix
    prefix = prefix.replace(rdma.SET_NCCL_ENV, str(script))
    generated = 'echo "ray start sees NCCL_FROM_GIB=$NCCL_FROM_GIB"'

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["/bin/bash", "-c", "--", f" {prefix}  && {generated}"], capture_output=True, text=True, timeout=30
        )

    missing = run()
    assert missing.returncode == 1 and "ray start" not in missing.stdout
    assert "nccl-rdma-installer" in missing.stderr
    script.write_text("export NCCL_FROM_GIB=yes\n")
    present = run()
    assert present.returncode == 0 and present.stdout.strip() == "ray start sees NCCL_FROM_GIB=yes"


# --- head, workers, placement --------------------------------------------------------------------------------
def test_head_requests_no_gpu_and_runs_on_cpu_capacity(variant):
    s = settings_for(variant)
    head = raycluster_for(s)["spec"]["headGroupSpec"]
    spec = head["template"]["spec"]
    container = spec["containers"][0]
    assert container["name"] == HEAD_CONTAINER
    for part in ("limits", "requests"):
        assert not any("gpu" in k for k in container["resources"].get(part, {}))
    # Ephemeral storage is requested too: without it Autopilot gives the container 1 GiB and evicts past it.
    assert container["resources"]["requests"] == {
        "cpu": str(s.workload.head_cpu),
        "memory": f"{s.workload.head_memory_gib}Gi",
        "ephemeral-storage": "8Gi" if s.autopilot else "32Gi",
    }
    assert head["rayStartParams"]["num-gpus"] == "0"
    assert head["rayStartParams"]["dashboard-host"] == "0.0.0.0"
    assert "tolerations" not in spec
    selector = spec.get("nodeSelector", {})
    # Never an accelerator: no GPU type, no GPU-bearing compute class.
    assert not any("accelerator" in k or "gpu" in k.lower() for k in selector)
    assert not any("gpu" in str(v).lower() or "accelerator" in str(v).lower() for v in selector.values())
    if s.autopilot:
        # An explicit CPU compute class (Balanced needs no machine-family selector).
        assert selector == {"cloud.google.com/compute-class": "Balanced"}
    else:
        # The autoscaling CPU pool, apart from the system pool's own work (infra/cluster.py).
        assert selector == {"cloud.google.com/gke-nodepool": s.names.cpu_pool}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"gcs-server": 6379, "dashboard": 8265, "client": 10001}


@pytest.mark.parametrize("release", sorted(catalog.NEMO_RL_RELEASES))
def test_ray_version_equals_the_images_ray(release):
    # Job recipes are release-specific (settings reject some combinations); the cluster alone is not.
    s = settings_for("standard-b200", nemoRlRelease=release, jobEnabled=False)
    rc = raycluster_for(s)
    rel = catalog.NEMO_RL_RELEASES[release]
    assert rc["spec"]["rayVersion"] == rel.ray_version
    images = {c["image"] for t in pods_of(rc).values() for c in t["spec"]["containers"]}
    # imagePath streaming (the default): the stack's Artifact Registry copy of the release's image, same tag.
    assert images == {nemo_rl_image(release, s.image_repository)}
    assert s.image_repository.startswith(f"{s.region}-docker.pkg.dev/")


def test_worker_node_selector_follows_the_stacks_gpu_type_and_compute_class(variant):
    s = settings_for(variant)
    for template in workers(raycluster_for(s)):
        selector = template["spec"]["nodeSelector"]
        assert selector["cloud.google.com/gke-accelerator"] == s.gpu.gpu_type
        # Capacity comes from the ComputeClass's models, never from a per-pod spot selector.
        assert selector["cloud.google.com/compute-class"] == s.capacity.compute_class
        assert "cloud.google.com/gke-spot" not in selector


def test_gpu_workers_are_pinned_to_the_rdma_zone(variant):
    # The RoCE networks are zonal (in `zone`); the Autopilot cluster is regional, so the pin is what keeps
    # its GPU nodes there. On Standard it matches the GPU pool's zone.
    s = settings_for(variant)
    for template in workers(raycluster_for(s)):
        assert template["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] == s.zone == "us-central1-b"


@pytest.mark.parametrize("zone", ["us-central1-a", "us-central1-c"])
@pytest.mark.parametrize("mode", ["standard", "autopilot"])
def test_worker_zone_follows_the_zone_setting(mode, zone):
    s = load_settings(
        "dev",
        "example-project",
        values={"clusterMode": mode, "zone": zone},
        secret_state={"hfToken": "secret", "wandbApiKey": "secret", "rayAuthToken": "secret"},
    )
    for template in workers(raycluster_for(s)):
        assert template["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] == zone
    head = raycluster_for(s)["spec"]["headGroupSpec"]["template"]["spec"]
    assert "topology.kubernetes.io/zone" not in head.get("nodeSelector", {})


@pytest.mark.parametrize("variant_name", ["standard-h200", "autopilot-flex-h200"])
def test_h200_raycluster_never_mentions_b200(variant_name):
    text = json.dumps(raycluster_for(settings_for(variant_name)))
    assert "nvidia-b200" not in text and "tuner_config_a4." not in text and "a4-highgpu" not in text


def test_worker_group_is_fixed_size_with_one_full_node_per_pod(variant):
    s = settings_for(variant)
    acc = s.gpu.accelerator
    group = raycluster_for(s)["spec"]["workerGroupSpecs"][0]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == s.worker_replicas
    resources = group["template"]["spec"]["containers"][0]["resources"]
    # Guaranteed QoS (CPU and memory requests = limits); ephemeral storage is requested only (QoS ignores it).
    requests = dict(resources["requests"])
    assert requests.pop("ephemeral-storage") == ("10Gi" if s.autopilot else "200Gi")
    assert resources["limits"] == requests
    assert resources["limits"]["nvidia.com/gpu"] == str(acc.gpus_per_node) == "8"
    cpu, memory = int(resources["limits"]["cpu"]), int(resources["limits"]["memory"].removesuffix("Gi"))
    # Below the machine (room for kubelet, OS and DaemonSets) but most of it (one pod per node).
    assert 0.85 * acc.vcpus <= cpu < acc.vcpus
    assert 0.85 * acc.memory_gib <= memory < acc.memory_gib
    assert memory > s.workload.shm_size_gib  # the memory-backed /dev/shm counts against the limit


def test_worker_replicas_setting_sizes_the_group():
    group = raycluster_for(settings_for("autopilot-spot-b200", workerReplicas=4))["spec"]["workerGroupSpecs"][0]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 4


def test_workers_tolerate_gpu_taint_and_preemption_notice_within_spot_grace(variant):
    for template in workers(raycluster_for(settings_for(variant))):
        spec = template["spec"]
        tolerations = {(t["key"], t["operator"]) for t in spec["tolerations"]}
        spot = {("cloud.google.com/gke-spot", "Equal")} if "spot" in settings_for(variant).capacity.models else set()
        assert (
            tolerations
            == {
                ("nvidia.com/gpu", "Exists"),
                ("cloud.google.com/impending-node-termination", "Exists"),
                ("cloud.google.com/compute-class", "Equal"),
            }
            | spot
        )
        assert 0 < spec["terminationGracePeriodSeconds"] <= 25


def test_lustre_is_mounted_everywhere_and_holds_the_hf_cache(variant):
    s = settings_for(variant, lustreMountPath="/mnt/lustre")
    for role, template in pods_of(raycluster_for(s)).items():
        spec = template["spec"]
        claims = {
            v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v
        }
        assert list(claims.values()) == [LUSTRE_PVC], role
        container = spec["containers"][0]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts["/mnt/lustre"] in claims, role
        assert env_of(container)["HF_HOME"]["value"] == "/mnt/lustre/huggingface_cache"


def test_worker_shm_is_memory_backed_with_the_configured_size(variant):
    s = settings_for(variant, shmSizeGib=128)
    for template in workers(raycluster_for(s)):
        spec = template["spec"]
        mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["mountPath"] == "/dev/shm")
        volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
        assert volume["emptyDir"] == {"medium": "Memory", "sizeLimit": "128Gi"}


def test_every_ray_pod_runs_as_the_grantless_service_account_whether_or_not_the_export_is_on(variant):
    # Least privilege: only the export may write to the bucket, and it runs as a CPU Job of its own
    # (workloads/manifests/export_job.py), so no Ray pod holds the export's identity or mounts the bucket.
    for export_on in (True, False):
        s = settings_for(variant, ksaName="rl-runner", exportCheckpoints=export_on)
        pods = pods_of(raycluster_for(s))
        assert {t["spec"]["serviceAccountName"] for t in pods.values()} == {"rl-runner"}, export_on
        for t in pods.values():
            assert "gke-gcsfuse/volumes" not in (t["metadata"].get("annotations") or {})
            assert not any("csi" in v for v in t["spec"]["volumes"])


def test_raycluster_lives_in_the_workload_namespace():
    s = settings_for("standard-b200", namespace="rl")
    assert raycluster_for(s)["metadata"] == {"name": CLUSTER_NAME, "namespace": "rl"}


# --- secrets, privilege, commands ------------------------------------------------------------------------------
@pytest.mark.parametrize("prefetch,wandb", [(True, True), (True, False), (False, True)])
def test_tokens_reach_pods_only_as_read_only_files_and_only_where_they_are_read(variant, prefetch, wandb):
    """The HF token on the head (without the prefetch Job its entrypoint downloads the pinned snapshot there) and never
    on the workers, which run with HF_HUB_OFFLINE=1 either way (they train from the snapshot on Lustre); the W&B netrc
    on the head only, as an optional
    item (the Secret holds it only while the recipe logs to W&B: test_standing_cluster.py), so the template is the
    same either way; only paths in env, no token variable at all."""
    from workloads.manifests import pod_security as ps

    s = settings_for(variant, prefetchWeights=prefetch, jobOverrides={"wandb_enabled": wandb})
    for role, template in pods_of(raycluster_for(s)).items():
        spec = template["spec"]
        tokens = [v for v in spec["volumes"] if v["name"] == ps.TOKENS_VOLUME]
        sources = [src["secret"] for v in tokens for src in v["projected"]["sources"]]
        keys = {i["key"] for src in sources for i in src["items"] if src["name"] == HF_SECRET}
        head = role == "head"
        want = ({"hf-token"} if head else set()) | ({"wandb-netrc"} if head else set())
        assert keys == want, role
        netrc = [src for src in sources if any(i["key"] == "wandb-netrc" for i in src["items"])]
        assert all(src.get("optional") is True for src in netrc), role
        for container in containers(template):
            env = env_of(container)
            assert not set(ps.TOKEN_VALUE_VARIABLES) & set(env), role
            # No value from a Secret or ConfigMap; the downward API (the node's name for the gate's records) is fine.
            assert all(set(e.get("valueFrom", {})) <= {"fieldRef"} for e in container.get("env", [])), role
            assert ("HF_TOKEN_PATH" in env) is ("hf-token" in want), role
            assert ("NETRC" in env) is ("wandb-netrc" in want), role
            # A pod that never calls the Hub says so to every Hugging Face library in it.
            assert (env.get("HF_HUB_OFFLINE", {}).get("value") == "1") is (not head), role
            mounts = {m["name"]: m for m in container["volumeMounts"]}
            if want:
                assert mounts[ps.TOKENS_VOLUME]["readOnly"] is True
            else:
                assert ps.TOKENS_VOLUME not in mounts


def test_ray_pods_are_unprivileged(variant):
    for role, template in pods_of(raycluster_for(settings_for(variant))).items():
        spec = template["spec"]
        assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")), role
        for container in containers(template):
            ctx = container.get("securityContext", {})
            assert not ctx.get("privileged") and not ctx.get("capabilities", {}).get("add"), role


_FORBIDDEN = re.compile(
    r"\bapt(-get)?\s+(update|install)\b|\bpip3?\s+install\b|\buv\s+pip\s+install\b|"
    r"\bgit\s+(pull|clone|checkout)\b|\bcurl\b|\bwget\b"
)


def _commands(obj) -> list[str]:
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("command", "args") and isinstance(v, list):
                found.extend(str(x) for x in v)
            else:
                found.extend(_commands(v))
    elif isinstance(obj, list):
        for x in obj:
            found.extend(_commands(x))
    return found


def test_no_package_installs_or_git_pulls_in_any_command(variant):
    s = settings_for(variant)
    commands = _commands(rendered(s)) + _commands(own_cluster_rayjob(s))
    assert commands  # the worker prefix and the installer script are there
    for cmd in commands:
        assert not _FORBIDDEN.search(cmd), cmd


# --- the installer DaemonSet --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["standard", "autopilot"])
def test_installer_matches_upstream_shape_with_the_pinned_image(mode):
    image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v9.9.9"
    ds = nccl_installer.installer_daemonset(mode, image)
    validate_core(ds)
    assert ds["metadata"]["namespace"] == {"standard": "kube-system", "autopilot": "rdma-system"}[mode]
    spec = ds["spec"]["template"]["spec"]
    assert spec.get("priorityClassName") == ("system-node-critical" if mode == "standard" else None)
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {
                    "key": "cloud.google.com/gke-accelerator",
                    "operator": "In",
                    "values": ["nvidia-h200-141gb", "nvidia-b200"],
                }
            ]
        }
    ]
    assert set(catalog.ACCELERATORS) <= set(terms[0]["matchExpressions"][0]["values"])
    assert spec["tolerations"] == [{"operator": "Exists"}]
    [init] = spec["initContainers"]
    assert init["image"] == image
    # Upstream dropped --install-nccl from the Standard installer only (container-engine-accelerators 2da1c92f);
    # tests/test_nccl_installer_upstream.py compares every field with Google's manifests.
    assert init["args"] == [nccl_installer.install_script(mode)]
    assert {v["hostPath"]["path"] for v in spec["volumes"]} == {
        "/home/kubernetes/bin/nvidia/lib64",
        "/home/kubernetes/bin/gib",
    }
    [pause] = spec["containers"]
    assert pause["image"].startswith("gke.gcr.io/pause:3.8@sha256:")
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()


def test_installer_image_defaults_to_the_catalog_pin():
    [init] = nccl_installer.installer_daemonset("standard")["spec"]["template"]["spec"]["initContainers"]
    assert init["image"] == catalog.NCCL_GIB_INSTALLER_IMAGE
    assert re.search(r":v\d+\.\d+\.\d+$", init["image"])


def test_installer_rejects_unknown_modes():
    with pytest.raises(ValueError, match="standard"):
        nccl_installer.installer_daemonset("gke")  # type: ignore[arg-type]


def test_autopilot_installer_namespace_is_rendered():
    ns = nccl_installer.namespace_manifest()
    validate_core(ns)
    assert ns["metadata"]["name"] == nccl_installer.installer_namespace("autopilot")


# --- determinism -----------------------------------------------------------------------------------------------------
def test_rendering_is_deterministic(variant):
    s = settings_for(variant)
    assert json.dumps(rendered(s)) == json.dumps(rendered(settings_for(variant)))
