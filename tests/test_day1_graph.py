"""The first `pulumi up` in a fresh project: ordering and settings the real APIs need (Google Cloud side;
docs/research/day1gcp.md).

Each test names the real-world rule and its source; the graph comes from the engine's records of the shipped
stacks (the `synth` fixture), asserted by (type, name).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import yaml

from core import catalog

ROOT = Path(__file__).resolve().parents[1]

SLEEP = ("time:index/sleep:Sleep", "api-propagation")
CLUSTER = ("gcp:container/cluster:Cluster", "cluster")


def _gcp_resources(result):
    return [r for r in result.resources if r.custom and r.type.startswith("gcp:")]


@pytest.mark.graph
def test_every_api_the_program_calls_is_enabled_and_never_disabled_on_destroy(synth, stack):
    # Declared in the graph, kept on destroy (other stacks may use them). Service Usage is not declared: it must
    # be on to declare the others (terraform-provider-google google_project_service docs).
    result = synth(stack)
    services = {r.inputs["service"]: r for r in result.resources if r.type == "gcp:projects/service:Service"}
    # imagePath streaming (the default, every shipped stack): image streaming's API and the image copies' APIs too.
    streaming = {catalog.IMAGE_STREAMING_API, *catalog.IMAGE_COPY_APIS}
    assert set(services) == set(catalog.REQUIRED_APIS) | streaming
    assert "serviceusage.googleapis.com" not in services
    for r in services.values():
        assert r.inputs["disableOnDestroy"] is False


@pytest.mark.graph
def test_every_google_cloud_resource_waits_for_api_propagation(synth, stack):
    # Enabling is eventually consistent: the first call can fail "API has not been used in project ... wait a few
    # minutes" (terraform-provider-google guide google_project_service, "Newly activated service errors",
    # issue #8214); the guide's mitigation is a sleep between enabling and using.
    result = synth(stack)
    sleep = result.get(*SLEEP)
    assert sleep.inputs["createDuration"] == catalog.API_PROPAGATION_WAIT
    for svc in (r for r in result.resources if r.type == "gcp:projects/service:Service"):
        assert result.depends_on(sleep, svc)
    for r in _gcp_resources(result):
        if r.type != "gcp:projects/service:Service":
            assert result.depends_on(r, sleep), f"{r.type} {r.name} may call an API before it has propagated"


@pytest.mark.graph
def test_project_number_lookup_waits_for_the_apis(synth):
    # The invoke is in output form with depends_on (pulumi >= 3.140 InvokeOutputOptions): the principal built
    # from its number, and so the bucket grant, depend on the sleep.
    result = synth("dev")
    grant = result.get("gcp:storage/managedFolderIamMember:ManagedFolderIamMember", "export-object-user")
    assert result.depends_on(grant, result.get(*SLEEP))


@pytest.mark.graph
def test_workload_identity_grant_waits_for_the_cluster(synth, stack):
    # `<project>.svc.id.goog` exists only after the project's first Workload Identity cluster; a binding naming
    # it before fails "Identity Pool does not exist" (GKE attached-clusters Managed Prometheus:
    # "fails unless at least one cluster has been created").
    result = synth(stack)
    for grant in (
        result.get("gcp:storage/managedFolderIamMember:ManagedFolderIamMember", "export-object-user"),
        result.get("gcp:storage/bucketIAMMember:BucketIAMMember", "export-bucket-list"),
    ):
        assert "svc.id.goog" in grant.inputs["member"]
        assert result.depends_on(grant, result.get(*CLUSTER))


@pytest.mark.graph
def test_cluster_and_pools_wait_for_the_node_service_account_roles(synth, stack):
    # roles/container.defaultNodeServiceAccount is GKE's minimum node role (kubernetes-engine/docs/how-to/
    # service-accounts); nodes that boot before their bindings exist cannot log or pull.
    result = synth(stack)
    bindings = [
        r for r in result.resources if r.type == "gcp:projects/iAMMember:IAMMember" and r.name.startswith("nodes-")
    ]
    # With imagePath streaming (the default) the nodes also need Service Usage Consumer (GKE "Use Image streaming").
    expected = {*catalog.NODE_SERVICE_ACCOUNT_ROLES, catalog.IMAGE_STREAMING_NODE_ROLE}
    assert {b.inputs["role"] for b in bindings} == expected
    assert "roles/container.defaultNodeServiceAccount" in {b.inputs["role"] for b in bindings}
    consumers = [
        r for r in result.resources if r.type in ("gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool")
    ]
    assert consumers
    for c in consumers:
        for b in bindings:
            assert result.depends_on(c, b), f"{c.name} does not wait for {b.inputs['role']}"


@pytest.mark.graph
def test_shipped_stacks_hold_back_no_node_patch(synth, stack):
    # An exclusion until end of support would keep security patches off the nodes for months.
    policy = synth(stack).get(*CLUSTER).inputs["maintenancePolicy"]
    assert not policy.get("maintenanceExclusions")
    assert policy["dailyMaintenanceWindow"]["startTime"]


@pytest.mark.graph
def test_a_run_window_blocks_minor_and_node_upgrades_for_at_most_its_days(synth):
    # The blueprint's scope (cluster-toolkit examples/gke-a4/gke-a4.yaml: NO_MINOR_OR_NODE_UPGRADES), bounded: both
    # ends come from the settings, never from "now" (a moving value would diff on every `up`), and exactly one of
    # end_time / end_time_behavior is set (pulumi-gcp 10.2.0).
    policy = (
        synth("dev", {"maintenanceExclusionStart": "2026-12-01", "maintenanceExclusionDays": 21})
        .get(*CLUSTER)
        .inputs["maintenancePolicy"]
    )
    (excl,) = policy["maintenanceExclusions"]
    assert excl["exclusionOptions"] == {"scope": "NO_MINOR_OR_NODE_UPGRADES"}
    assert (excl["startTime"], excl["endTime"]) == ("2026-12-01T00:00:00Z", "2026-12-22T00:00:00Z")


@pytest.mark.graph
@pytest.mark.parametrize(
    "overrides,key",
    [
        ({"maintenanceExclusionStart": "2026-12-01", "maintenanceExclusionDays": 31}, "maintenanceExclusionDays"),
        ({"maintenanceExclusionDays": 0}, "maintenanceExclusionDays"),
        ({"maintenanceExclusionStart": "next monday"}, "maintenanceExclusionStart"),
        ({"maintenanceExclusionStart": "2026-2-1"}, "maintenanceExclusionStart"),
    ],
)
def test_an_unbounded_or_malformed_window_is_refused_naming_its_key(synth, overrides, key):
    r = synth("dev", overrides)
    assert r.error is not None and r.resources == []
    assert any(f"nemo-rl-gke:{key}:" in line for line in r.error.splitlines()), r.error


@pytest.mark.unit
def test_a_window_that_has_ended_is_a_preview_warning():
    import datetime

    from core.settings.cluster import ClusterSettings, exclusion_warnings

    c = ClusterSettings.model_validate({"maintenanceExclusionStart": "2026-01-01", "maintenanceExclusionDays": 14})
    assert exclusion_warnings(c, today=datetime.date(2026, 1, 10)) == []
    (warning,) = exclusion_warnings(c, today=datetime.date(2026, 1, 15))
    assert "nemo-rl-gke:maintenanceExclusionStart" in warning and "2026-01-15" in warning


@pytest.mark.graph
def test_monitoring_names_every_component_cluster_toolkit_keeps_plus_dcgm(synth, stack):
    # enable_components replaces GKE's default list (Cluster Toolkit gke-cluster variables.tf).
    comps = synth(stack).get(*CLUSTER).inputs["monitoringConfig"]["enableComponents"]
    assert comps == list(catalog.MONITORING_COMPONENTS)


@pytest.mark.graph
def test_monitoring_respects_component_floors_of_a_pinned_gke_version(synth):
    # JOBSET needs GKE >= 1.32.1-gke.1357001 (pulumi-gcp 10.2.0 ClusterMonitoringConfigArgs); GKE refuses an
    # unsupported component with a 400. A3 Ultra on the legacy Lustre port may pin 1.31 (with spot capacity
    # only: flex-start for GPUs needs 1.32.2-gke.1652000; and without the checkpoint export, whose streaming writes
    # need 1.33.2-gke.4655000).
    result = synth(
        "dev",
        {
            "gpuType": "nvidia-h200-141gb",
            "gkeVersion": "1.31.6-gke.1020000",
            "lustrePortMode": "legacy",
            "capacity": ["spot"],
            "exportCheckpoints": False,
        },
    )
    assert result.error is None, result.error
    comps = result.get(*CLUSTER).inputs["monitoringConfig"]["enableComponents"]
    assert "JOBSET" not in comps and {"KUBELET", "CADVISOR", "DCGM", "SYSTEM_COMPONENTS"} <= set(comps)


@pytest.mark.graph
def test_gcp_resources_request_the_pinned_sdks_provider_build(synth, stack):
    # REMOVE_PEERING (psa.py) exists in the provider build the pinned SDK requests (pulumi-gcp 10.2.0 documents
    # it on servicenetworking.Connection.deletion_policy). Each resource asks for the SDK's own plugin version
    # (_utilities.get_resource_opts_defaults); nothing may override it: no explicit gcp provider, no version=.
    pinned = next(
        ln.split("==")[1].strip()
        for ln in (ROOT / "requirements.txt").read_text().splitlines()
        if ln.startswith("pulumi-gcp==")
    )
    assert importlib.metadata.version("pulumi_gcp") == pinned
    result = synth(stack)
    assert not [r for r in result.resources if r.type == "pulumi:providers:gcp"]
    gcp = _gcp_resources(result)
    assert gcp and {r.version for r in gcp} == {pinned}
    connection = result.get("gcp:servicenetworking/connection:Connection", "psa-connection")
    assert connection.inputs["deletionPolicy"] == "REMOVE_PEERING"


@pytest.mark.unit
def test_no_plugin_pin_in_the_project_file_overrides_the_sdk():
    # A `plugins:` block in Pulumi.yaml would make the CLI load another gcp provider build.
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert "plugins" not in project
