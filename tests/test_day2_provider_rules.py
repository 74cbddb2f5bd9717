"""Day two on the shipped stacks: what the providers' rules beyond schema ForceNew (read in tests/oracles/, checked in
tests/test_replacements.py) do to a change, resource by resource, and what the program renders against them.

The whole sweep (every setting, every stack) is tests/test_day2_settings.py; here the single facts behind the
classes it expects: a cluster that FQDN policies off replaces, a refused subnet update, a refused PSA range delete,
an export destination that is created before the old one is released, a placement policy that a new prefix
replaces, an experiment whose provider the platform cluster's id identifies.
"""

from __future__ import annotations

import pytest

from core.settings import platform
from synth import compare, engine

pytestmark = pytest.mark.graph

CLUSTER = "gcp:container/cluster:Cluster cluster"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy gpu-flex-placement"
PROVIDER = "pulumi:providers:kubernetes k8s"


def plan(synth, stack: str, change: dict, base: dict | None = None) -> dict[str, compare.Verdict]:
    before, after = synth(stack, base), synth(stack, {**(base or {}), **change})
    assert before.error is None and after.error is None, (before.error, after.error)
    return compare.plan(compare.of_result(before), compare.of_result(after))


def test_fqdn_policies_off_replace_the_cluster_which_a_protected_stack_refuses(synth):
    dev = plan(synth, "dev", {"egressFqdnPolicies": False})[CLUSTER]
    assert dev.replaced and dev.order == "delete first" and "stops the job" in dev.consequences
    assert any(r.startswith("enableFqdnNetworkPolicy") for r in dev.reasons) and not dev.refused
    # Outside dev the cluster carries Pulumi's protect with its deletion protection: refused in the plan, before the
    # delete-first cascade takes the node pools.
    for stack in ("codelab", "autopilot"):
        assert synth(stack).get("gcp:container/cluster:Cluster", "cluster").protect, stack
        assert plan(synth, stack, {"egressFqdnPolicies": False})[CLUSTER].refused, stack
    assert not synth("dev").get("gcp:container/cluster:Cluster", "cluster").protect
    # Turning them on again is an update.
    back = plan(synth, "dev", {"egressFqdnPolicies": True}, base={"egressFqdnPolicies": False})
    assert CLUSTER not in back or not back[CLUSTER].replaced


def test_a_deletion_protected_cluster_without_pulumi_protect_fails_at_its_delete(synth):
    # A stack deployed before the cluster carried protect: the provider refuses the delete, after the pools went.
    before = compare.of_result(synth("codelab"))
    for rec in before.pulumi.values():
        rec["options"] = {k: v for k, v in rec["options"].items() if k != "protect"}
    after = compare.of_result(synth("codelab", {"egressFqdnPolicies": False}))
    v = compare.plan(before, after)[CLUSTER]
    assert v.replaced and not v.refused and "deletion_protection" in v.fails


@pytest.mark.parametrize("key,value", [("podsCidr", "10.32.0.0/14"), ("servicesCidr", "10.12.0.0/20")])
def test_a_changed_pod_or_service_range_is_refused_by_the_api(synth, key, value):
    v = plan(synth, "dev", {key: value})["gcp:compute/subnetwork:Subnetwork primary"]
    assert not v.replaced and v.fails.startswith("secondaryIpRanges") and "GKE" in v.fails


def test_a_new_psa_range_is_refused_while_the_connection_and_lustre_use_the_old_one(synth, stack):
    v = plan(synth, stack, {"psaCidr": "10.24.0.0/20"})["gcp:compute/globalAddress:GlobalAddress psa-range"]
    assert v.replaced and "service-networking connection" in v.fails


def test_export_folders_are_never_force_deleted_and_the_managed_folder_keeps_its_objects(synth, stack):
    r = synth(stack)
    # weightsPath bucket-import's staging folder holds only a copy of the pinned Hub snapshot
    # (infra/weights_staging.py): it may go with its objects. Every other folder holds exports.
    export_folders = [x for x in r.of_type("gcp:storage/folder:Folder") if x.name != "weights-folder"]
    assert export_folders
    for folder in export_folders:
        assert folder.get("forceDestroy") is False, folder.name
        assert folder.delete_before_replace_defined and not folder.delete_before_replace, folder.name
    managed = r.get("gcp:storage/managedFolder:ManagedFolder", "export-managed-folder")
    assert managed.get("forceDestroy") is True  # allowNonEmpty: the managed folder goes, its objects stay
    assert managed.delete_before_replace_defined and not managed.delete_before_replace


def test_a_new_export_destination_is_granted_before_the_old_folder_is_released(synth):
    verdicts = plan(synth, "dev", {"exportDestination": "exports/b"}, base={"exportDestination": "exports/a"})
    folder = verdicts["gcp:storage/folder:Folder export-folder-1"]
    managed = verdicts["gcp:storage/managedFolder:ManagedFolder export-managed-folder"]
    grant = verdicts["gcp:storage/managedFolderIamMember:ManagedFolderIamMember export-object-user"]
    # Created first: the new folder, managed folder and grant exist before anything old is deleted; only the old
    # folder's delete is refused (it holds exports), at the end of the `up`.
    assert (folder.order, managed.order, grant.order) == ("create first",) * 3
    assert "holds objects" in folder.fails and managed.fails == "" and grant.fails == ""


def test_turning_exports_off_refuses_only_the_folders_delete(synth, stack):
    verdicts = plan(synth, stack, {"exportCheckpoints": False})
    refused = sorted(n for n, v in verdicts.items() if v.action == "delete")
    assert refused and all(n.startswith("gcp:storage/folder:Folder ") for n in refused), refused


def test_a_new_prefix_replaces_the_flex_start_placement_policy(synth):
    policy = synth("dev").get("gcp:compute/resourcePolicy:ResourcePolicy", "gpu-flex-placement")
    assert policy.replace_on_changes == ["name"] and policy.delete_before_replace
    v = plan(synth, "dev", {"prefix": "nemo-x"})[POLICY]
    assert v.replaced and v.order == "delete first" and "name (replaceOnChanges)" in v.reasons and not v.fails


def test_an_experiment_provider_is_identified_by_its_platform_cluster(synth):
    platform_run = synth("codelab")
    cluster = platform_run.get("gcp:container/cluster:Cluster", "cluster")
    cluster_id = engine._computed(cluster.type, cluster.name, cluster.inputs, platform_run.config["gcp:project"])[0]
    assert platform_run.outputs[platform.CONTRACT_OUTPUT][platform.CLUSTER_ID_KEY] == cluster_id
    for experiment in engine.experiment_stacks():
        (provider,) = synth(experiment).of_type("pulumi:providers:kubernetes")
        assert provider.get("clusterIdentifier") == cluster_id, experiment


def _experiment_plan(synth, experiment: str, platform_change: dict) -> dict[str, compare.Verdict]:
    ref = str(synth(experiment).config["nemo-rl-gke:platformStack"])
    before, changed = synth("codelab"), synth("codelab", platform_change)
    runs = [engine.run(experiment, stack_references={ref: engine.StackOutputs.of(p)}) for p in (before, changed)]
    assert all(r.error is None for r in runs), [r.error for r in runs]
    return compare.plan(*(compare.of_result(r) for r in runs))


@pytest.mark.parametrize("change", [{"privateEndpoint": False}, {"dnsEndpoint": False, "privateEndpoint": False}])
def test_a_platform_endpoint_change_replaces_no_experiment_object(synth, change):
    # The kubeconfig the experiment reads changes (another server, a CA): without clusterIdentifier pulumi-kubernetes
    # would replace its provider and every object (provider.go:553).
    for experiment in engine.experiment_stacks():
        verdicts = _experiment_plan(synth, experiment, change)
        assert not [v.name for v in verdicts.values() if v.replaced], experiment


def test_an_experiment_on_a_platform_without_a_cluster_id_is_refused_before_anything_is_registered(synth):
    platform_run = synth("codelab")
    outputs = dict(platform_run.outputs)
    outputs[platform.CONTRACT_OUTPUT] = {
        k: v for k, v in outputs[platform.CONTRACT_OUTPUT].items() if k != platform.CLUSTER_ID_KEY
    }
    ref = str(synth("codelab-exp1").config["nemo-rl-gke:platformStack"])
    old = engine.StackOutputs(outputs, engine.StackOutputs.of(platform_run).secret_names)
    r = engine.run("codelab-exp1", stack_references={ref: old})
    assert r.error is not None and "nemo-rl-gke:platformStack:" in r.error and "cluster id" in r.error
    assert r.resources == []
