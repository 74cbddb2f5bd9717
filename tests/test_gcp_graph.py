"""Invariants of the Google Cloud graph, checked from the engine's records for every shipped stack."""

from __future__ import annotations

import json

import pytest

from core import catalog
from core.naming import GPU_POOLS

pytestmark = pytest.mark.graph

NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
LUSTRE = "gcp:lustre/instance:Instance"
CONNECTION = "gcp:servicenetworking/connection:Connection"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def test_every_shipped_stack_synthesizes_without_error(synth, stack):
    r = synth(stack)
    assert r.error is None
    assert r.of_type(CLUSTER) and r.of_type(LUSTRE)


def test_lustre_depends_on_the_service_networking_connection(synth, stack):
    r = synth(stack)
    assert r.depends_on(r.get(LUSTRE, "lustre"), r.get(CONNECTION, "psa-connection"))


def test_lustre_and_cluster_do_not_wait_for_each_other(synth, stack):
    r = synth(stack)
    lustre, cluster = r.get(LUSTRE, "lustre"), r.get(CLUSTER, "cluster")
    assert not r.depends_on(lustre, cluster)
    assert not r.depends_on(cluster, lustre)


def test_lustre_is_on_the_clusters_vpc(synth, stack):
    r = synth(stack)
    assert r.get(LUSTRE, "lustre").inputs["network"] == r.get(CLUSTER, "cluster").inputs["network"]


def gpu_pools(r):
    """The GPU node pools of a synth result: one per capacity model of the stack."""
    return [p for p in r.of_type(POOL) if p.name in GPU_POOLS.values()]


def test_every_gpu_pool_depends_on_cluster_and_all_nine_extra_subnets(synth, stack):
    r = synth(stack)
    if r.config["nemo-rl-gke:clusterMode"] == "autopilot":
        assert [p.name for p in r.of_type(POOL)] == []
        return
    models = json.loads(r.config["nemo-rl-gke:capacity"])
    assert sorted(p.name for p in gpu_pools(r)) == sorted(GPU_POOLS[m] for m in models)
    extra = [r.get(SUBNET, "gvnic")] + [r.get(SUBNET, f"rdma-{i}") for i in range(8)]
    for pool in gpu_pools(r):
        assert r.depends_on(pool, r.get(CLUSTER, "cluster"))
        for sn in extra:
            assert r.depends_on(pool, sn), (pool.name, sn.name)
        nets = pool.get("networkConfig.additionalNodeNetworkConfigs")
        assert [n["subnetwork"] for n in nets] == [sn.inputs["name"] for sn in extra]


def test_rdma_network_carries_the_zonal_roce_profile_of_the_pool_zone(synth, stack):
    r = synth(stack)
    zone = r.config["nemo-rl-gke:zone"]
    project = r.config["gcp:project"]
    profile = r.get(NETWORK, "rdma").inputs["networkProfile"]
    assert profile == f"projects/{project}/global/networkProfiles/{zone}-vpc-roce"
    if r.config["nemo-rl-gke:clusterMode"] == "standard":
        for pool in gpu_pools(r):
            assert pool.inputs["nodeLocations"] == [profile.split("/")[-1].removesuffix("-vpc-roce")]


def test_lustre_port_mode_is_the_same_on_instance_and_cluster(synth, stack):
    for mode in ("modern", "legacy"):
        r = synth(stack, {"lustrePortMode": mode})
        gke_support = r.get(LUSTRE, "lustre").inputs.get("gkeSupportEnabled", False)
        legacy_port = r.get(CLUSTER, "cluster").get("addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort")
        assert gke_support == legacy_port == (mode == "legacy")


def test_cluster_has_multi_networking_dataplane_v2_and_the_three_addons(synth, stack):
    c = synth(stack).get(CLUSTER, "cluster")
    assert c.inputs["enableMultiNetworking"] is True
    assert c.inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    ray = c.get("addonsConfig.rayOperatorConfigs.0")
    assert ray["enabled"] and ray["rayClusterLoggingConfig"]["enabled"] and ray["rayClusterMonitoringConfig"]["enabled"]
    assert c.get("addonsConfig.lustreCsiDriverConfig.enabled") is True
    assert c.get("addonsConfig.gcsFuseCsiDriverConfig.enabled") is True
    assert c.get("workloadIdentityConfig.workloadPool") == f"{synth(stack).config['gcp:project']}.svc.id.goog"


def test_spot_gpu_pool_matches_catalog_with_rdma_nics(synth):
    r = synth("dev")
    pool = r.get(POOL, GPU_POOLS["spot"])
    acc = catalog.ACCELERATORS[r.config["nemo-rl-gke:gpuType"]]
    cfg = pool.inputs["nodeConfig"]
    assert cfg["machineType"] == acc.machine_type
    assert cfg["guestAccelerators"][0]["type"] == acc.gpu_type and cfg["guestAccelerators"][0]["count"] == 8
    assert cfg["spot"] is True and cfg["reservationAffinity"]["consumeReservationType"] == "NO_RESERVATION"
    assert cfg["gvnic"]["enabled"] is True
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in cfg["taints"]
    assert pool.inputs["upgradeSettings"] == {"maxSurge": 0, "maxUnavailable": 1}
    assert cfg["serviceAccount"] == r.get("gcp:serviceaccount/account:Account", "nodes").computed["email"]


def test_lustre_is_protected_outside_dev_and_deletable_in_dev(synth):
    assert synth("codelab").get(LUSTRE, "lustre").protect is True
    dev = synth("dev").get(LUSTRE, "lustre")
    assert (dev.protect, dev.retain_on_delete) == (False, False)
    retained = synth("dev", {"lustreOnDestroy": "retain"}).get(LUSTRE, "lustre")
    assert (retained.protect, retained.retain_on_delete) == (False, True)


def test_lustre_timeouts_allow_at_least_an_hour(synth, stack):
    t = synth(stack).get(LUSTRE, "lustre").custom_timeouts
    for op in ("create", "delete"):
        assert int(t[op].rstrip("m")) >= 60


def test_cluster_deletion_protection_follows_the_stack(synth):
    assert synth("dev").get(CLUSTER, "cluster").inputs["deletionProtection"] is False
    assert synth("codelab").get(CLUSTER, "cluster").inputs["deletionProtection"] is True


def test_psa_teardown_removes_the_peering_instead_of_abandoning_it(synth, stack):
    conn = synth(stack).get(CONNECTION, "psa-connection")
    assert conn.inputs["deletionPolicy"] == "REMOVE_PEERING"
    assert conn.inputs["updateOnCreationFail"] is True


def test_lustre_port_is_open_from_the_psa_range_only(synth, stack):
    r = synth(stack)
    fw = r.get("gcp:compute/firewall:Firewall", "lustre-ingress")
    assert fw.inputs["sourceRanges"] == [
        r.get("gcp:compute/globalAddress:GlobalAddress", "psa-range").inputs["address"]
        + "/"
        + str(r.get("gcp:compute/globalAddress:GlobalAddress", "psa-range").inputs["prefixLength"])
    ]
    assert fw.inputs["allows"] == [{"protocol": "tcp", "ports": ["988"]}]
    legacy = synth(stack, {"lustrePortMode": "legacy"}).get("gcp:compute/firewall:Firewall", "lustre-ingress")
    assert legacy.inputs["allows"] == [{"protocol": "tcp", "ports": ["988", "6988"]}]


def test_every_vpc_uses_mtu_8896(synth, stack):
    assert {n.inputs["mtu"] for n in synth(stack).of_type(NETWORK)} == {catalog.VPC_MTU}


def test_nodes_never_run_as_the_default_compute_service_account(synth, stack):
    r = synth(stack)
    email = r.get("gcp:serviceaccount/account:Account", "nodes").computed["email"]
    c = r.get(CLUSTER, "cluster")
    if c.inputs.get("enableAutopilot"):
        assert c.get("clusterAutoscaling.autoProvisioningDefaults.serviceAccount") == email
    else:
        assert c.get("nodeConfig.serviceAccount") == email
        assert all(p.get("nodeConfig.serviceAccount") == email for p in r.of_type(POOL))


def test_bucket_grants_name_the_exports_own_service_account_and_its_prefix(synth, stack):
    r = synth(stack)
    b = r.get("gcp:storage/bucket:Bucket", "bucket")
    assert b.inputs["uniformBucketLevelAccess"] is True and b.inputs["hierarchicalNamespace"]["enabled"] is True
    assert b.inputs.get("forceDestroy", False) is False
    project = r.config["gcp:project"]
    principal = (
        "principal://iam.googleapis.com/projects/000000000000/locations/global/workloadIdentityPools/"
        f"{project}.svc.id.goog/subject/ns/nemo-rl/sa/nemo-{stack}-export"
    )
    # Write (and delete) under the export prefix only: a managed folder of that name carries the role.
    m = r.get("gcp:storage/managedFolderIamMember:ManagedFolderIamMember", "export-object-user")
    assert (m.inputs["role"], m.inputs["member"], m.inputs["managedFolder"]) == (
        "roles/storage.objectUser",
        principal,
        "exports/",
    )
    # Deleted with allowNonEmpty (force_destroy): the managed folder goes, its objects stay (tests/oracles/
    # magic-modules/ManagedFolder.yaml.txt); the folders holding them are never force-deleted.
    folder = r.get("gcp:storage/managedFolder:ManagedFolder", "export-managed-folder")
    assert folder.inputs["name"] == "exports/" and folder.inputs.get("forceDestroy") is True
    # The bucket itself: listing only (Cloud Storage FUSE's access check), by condition on the bucket resource.
    lst = r.get("gcp:storage/bucketIAMMember:BucketIAMMember", "export-bucket-list")
    assert (lst.inputs["role"], lst.inputs["member"]) == ("roles/storage.objectViewer", principal)
    assert lst.inputs["condition"]["expression"] == 'resource.type == "storage.googleapis.com/Bucket"'
    # Of the bucket-wide grants, the export's identity holds the listing alone (weightsPath bucket-import adds grants
    # of its own identities, never of this one).
    grants = r.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert {x.name for x in grants if x.inputs["member"] == principal} == {"export-bucket-list"}


def test_kubernetes_provider_kubeconfig_is_secret_and_uses_the_auth_plugin(synth, stack):
    res = synth(stack)
    p = res.get(K8S_PROVIDER, "k8s")
    assert "kubeconfig" in p.secret_paths
    assert "gke-gcloud-auth-plugin" in p.inputs["kubeconfig"]
    if res.config.get("nemo-rl-gke:privateEndpoint") == "true":
        # A private IP endpoint: the provider talks to GKE's DNS-based endpoint (publicly trusted certificate).
        assert ".gke.goog" in p.inputs["kubeconfig"] and "certificate-authority-data" not in p.inputs["kubeconfig"]
    else:
        assert "192.0.2.10" in p.inputs["kubeconfig"]


def test_every_kubernetes_resource_uses_the_explicit_provider(synth, stack):
    r = synth(stack)
    provider = r.get(K8S_PROVIDER, "k8s")
    for obj in r.resources:
        if obj.type.startswith("kubernetes:"):
            assert obj.provider_urn == provider.urn, obj.key


def test_stack_outputs_tell_the_user_what_to_do_next(synth, stack):
    out = synth(stack).outputs
    assert out["getCredentialsCommand"].startswith(f"gcloud container clusters get-credentials {out['clusterName']} ")
    assert out["lustreIp"] == "192.0.2.20" and "@" not in out["lustreIp"]
    assert out["bucketUrl"].startswith("gs://")
    assert out["lustreInstance"]


def test_names_derive_from_one_prefix(synth, stack):
    r = synth(stack)
    prefix = r.get(CLUSTER, "cluster").inputs["name"]
    for typ in (NETWORK, SUBNET):
        for res in r.of_type(typ):
            assert res.inputs["name"].startswith(prefix + "-"), res.inputs["name"]
    assert r.get(LUSTRE, "lustre").inputs["instanceId"].startswith(prefix + "-")


def test_zonal_control_plane_puts_the_cluster_in_the_zone(synth):
    c = synth("dev", {"controlPlane": "zonal"}).get(CLUSTER, "cluster")
    assert c.inputs["location"] == "us-central1-b"


def test_retained_lustre_keeps_its_vpc_range_and_peering(synth):
    r = synth("dev", {"lustreOnDestroy": "retain"})
    kept = {(x.type, x.name) for x in r.resources if x.retain_on_delete}
    assert kept == {
        (LUSTRE, "lustre"),
        (NETWORK, "primary"),
        (CONNECTION, "psa-connection"),
        ("gcp:compute/globalAddress:GlobalAddress", "psa-range"),
        # Lustre's LNet ingress rule: without it a kept instance is unreachable after the way back (lustreAdopt).
        ("gcp:compute/firewall:Firewall", "lustre-ingress"),
    }
    assert not any(x.retain_on_delete for x in synth("dev").resources)


def test_kubernetes_provider_does_not_forget_objects_of_an_unreachable_cluster(synth, stack):
    assert "deleteUnreachable" not in synth(stack).get(K8S_PROVIDER, "k8s").inputs
