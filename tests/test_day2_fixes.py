"""The day-two rendered fixes, each on the shipped stacks, with the provider rule it answers.

The classification of every setting change is tests/test_day2_settings.py; here the individual facts.
"""

from __future__ import annotations

import pytest

from core.catalog import replacements as rp

pytestmark = pytest.mark.graph

JOB = "kubernetes:batch/v1:Job"
PROVIDER = "pulumi:providers:kubernetes"


def test_the_warmup_job_can_be_replaced_without_meeting_itself(synth, stack):
    # skipAwait Job deletes are not awaited and Foreground propagation keeps the Job until its pods are gone
    # (pulumi-kubernetes overrides.go:68-79, :168-209; pulumi/pulumi-kubernetes#3154): a template change (release,
    # image path, gpuNodes, hold time) replaced it delete-first and the create failed with AlreadyExists.
    r = synth(stack)
    jobs = [j for j in r.of_type(JOB) if j.get("metadata.annotations", {}).get("pulumi.com/skipAwait") == "true"]
    assert jobs, "the warm-up placeholders Job is rendered with skipAwait"
    for job in jobs:
        assert rp.unawaited_delete(job.type, job.inputs) == "", job.name
        assert job.get("metadata.annotations")[rp.DELETION_PROPAGATION_ANNOTATION] == "background"


def test_the_kubernetes_provider_is_identified_by_the_cluster_id(synth, stack):
    # pulumi-kubernetes DiffConfig (provider.go:484-502, since v4.16.0): an unchanged clusterIdentifier keeps the
    # provider, whatever the kubeconfig's server or CA does; without it an endpoint change replaces every object.
    r = synth(stack)
    (provider,) = r.of_type(PROVIDER)
    cluster = r.get("gcp:container/cluster:Cluster", "cluster")
    ident = provider.get("clusterIdentifier")
    assert (
        ident
        == f"projects/{r.config['gcp:project']}/locations/{cluster.get('location')}/clusters/{cluster.get('name')}"
    )
    assert "https://" not in ident and "gke.goog" not in ident  # not the endpoint


def test_endpoint_settings_keep_the_provider_identity(synth):
    base = synth("dev")
    other = synth("dev", {"privateEndpoint": False})
    assert other.error is None, other.error
    (a,), (b,) = base.of_type(PROVIDER), other.of_type(PROVIDER)
    assert a.get("clusterIdentifier") == b.get("clusterIdentifier")


def test_the_lustre_instance_is_replaced_delete_first(synth, stack):
    # instance_id is Required (not auto-named): the bridge's create-first replacement would collide (409).
    lustre = synth(stack).get("gcp:lustre/instance:Instance", "lustre")
    assert lustre.delete_before_replace


def test_the_lustre_claim_keeps_its_request_when_the_capacity_grows(synth):
    # A statically bound claim cannot grow (kubernetes plugin/pkg/admission/storage/persistentvolume/resize/
    # admission.go: "only dynamically provisioned pvc can be resized ..."); the PV follows the instance.
    base, grown = synth("dev"), synth("dev", {"lustreCapacityGib": 36000})
    pvc = grown.get("kubernetes:core/v1:PersistentVolumeClaim", "lustre-pvc")
    assert "spec.resources" in pvc.ignore_changes
    pv_old = base.get("kubernetes:core/v1:PersistentVolume", "lustre-pv")
    pv_new = grown.get("kubernetes:core/v1:PersistentVolume", "lustre-pv")
    assert (pv_old.get("spec.capacity.storage"), pv_new.get("spec.capacity.storage")) == ("18000Gi", "36000Gi")


ADOPT = {"lustreOnDestroy": "retain", "lustreAdopt": True}


def _sdk_import_formats(type_token: str) -> list[str]:
    """The `## Import` formats the pinned pulumi-gcp documents for a resource, as regexes."""
    import importlib
    import inspect
    import re

    pkg, cls = type_token.split(":")[1].split("/")[0], type_token.rsplit(":", 1)[1]
    source = inspect.getsource(getattr(importlib.import_module(f"pulumi_gcp.{pkg}"), cls))
    section = source[source.index("## Import") :][:1500]
    formats = re.findall(r"\* `([^`]+)`", section)
    return [re.escape(f).replace(r"\{\{", "{{").replace(r"\}\}", "}}") for f in formats]


def test_adopting_imports_exactly_the_set_a_retained_destroy_keeps(synth):
    # Kept together, adopted together: the instance, the VPC, the PSA range, the peering and the firewall that lets
    # LNet in (the firewall used to be deleted, so a kept instance was unreachable).
    r = synth("dev", ADOPT)
    assert r.error is None, r.error
    kept = {x.key for x in r.resources if x.custom and x.retain_on_delete}
    adopted = {x.key for x in r.resources if x.custom and x.import_id}
    assert (
        kept
        == adopted
        == {
            ("gcp:lustre/instance:Instance", "lustre"),
            ("gcp:compute/network:Network", "primary"),
            ("gcp:compute/globalAddress:GlobalAddress", "psa-range"),
            ("gcp:servicenetworking/connection:Connection", "psa-connection"),
            ("gcp:compute/firewall:Firewall", "lustre-ingress"),
        }
    )


def test_adopted_ids_are_the_ids_the_provider_records(synth):
    # Oracle: the provider's id templates (terraform-provider-google-beta d.SetId, cited in IMPORT_IDS) checked
    # against the resource the program renders, and the import formats the pinned SDK documents.
    import re
    from urllib.parse import unquote

    r = synth("dev", ADOPT)
    project = r.config["gcp:project"]
    for x in (x for x in r.resources if x.import_id):
        if x.type == "gcp:servicenetworking/connection:Connection":
            network, service = x.import_id.split(":")
            assert "/" not in network  # url.QueryEscape of the network id (connection.go:402-404)
            net = r.get("gcp:compute/network:Network", "primary")
            assert unquote(network) == f"projects/{project}/global/networks/{net.get('name')}"
            assert service == x.get("service")
            continue
        name = x.get("instanceId") or x.get("name")
        assert x.import_id.startswith(f"projects/{project}/") and x.import_id.endswith(f"/{name}"), x.import_id
        if x.type == "gcp:lustre/instance:Instance":
            assert f"/locations/{x.get('location')}/instances/" in x.import_id
        patterns = [re.sub(r"\{\{[\w-]+\}\}", r"[^/]+", f) for f in _sdk_import_formats(x.type)]
        assert any(re.fullmatch(p, x.import_id) for p in patterns), (x.type, x.import_id, patterns)


def test_adopting_without_a_retained_destroy_is_refused_naming_the_key(synth):
    r = synth("dev", {"lustreAdopt": True})  # dev deletes its instance on destroy
    assert r.error is not None and "nemo-rl-gke:lustreAdopt:" in r.error
    assert not [x for x in r.resources if x.custom]
