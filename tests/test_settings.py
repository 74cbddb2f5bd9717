"""Invalid settings fail before any resource is registered, one readable line per problem naming its key."""

from __future__ import annotations

import pytest

from core.settings import PLACEHOLDER_PROJECT, SettingsError, load_settings

INVALID = [
    # (overrides, config key the message must name, a fragment of what would be valid)
    ({"gpuType": "nvidia-h100-80gb"}, "nemo-rl-gke:gpuType", "nvidia-b200"),
    ({"gpuType": "nvidia-b200", "machineType": "a3-ultragpu-8g"}, "nemo-rl-gke:machineType", "a4-highgpu-8g"),
    ({"machineType": "a4-highgpu-8g"}, "nemo-rl-gke:machineType", "a3-ultragpu-8g"),
    ({"zone": "us-east1-b"}, "nemo-rl-gke:zone", "us-central1-"),
    ({"zone": "uscentral1b"}, "nemo-rl-gke:zone", "us-central1-b"),
    ({"region": "Central US"}, "nemo-rl-gke:region", "us-central1"),
    ({"prefix": "Nemo_Dev"}, "nemo-rl-gke:prefix", "lowercase"),
    ({"prefix": "a-very-long-prefix-for-the-sa-id"}, "nemo-rl-gke:prefix", "at most 30"),
    ({"prefix": "a-long-prefix-that-is-ok-but"}, "nemo-rl-gke:prefix", "node service account id"),
    ({"bucketName": "Bad_Bucket"}, "nemo-rl-gke:bucketName", "bucket name"),
    ({"namespace": "NeMo"}, "nemo-rl-gke:namespace", "RFC 1123"),
    ({"lustreCapacityGib": 20000}, "nemo-rl-gke:lustreCapacityGib", "next valid capacity is 36000"),
    ({"lustreCapacityGib": 9000}, "nemo-rl-gke:lustreCapacityGib", "min 18000"),
    ({"lustreCapacityGib": 30000000}, "nemo-rl-gke:lustreCapacityGib", "maximum is 20016000"),
    ({"lustreTier": 750}, "nemo-rl-gke:lustreTier", "125, 250, 500, 1000"),
    ({"lustreFilesystem": "lustre-fs"}, "nemo-rl-gke:lustreFilesystem", "1-8 letters or digits"),
    ({"lustrePortMode": "988"}, "nemo-rl-gke:lustrePortMode", "'modern' or 'legacy'"),
    ({"lustreOnDestroy": "keep"}, "nemo-rl-gke:lustreOnDestroy", "'protect', 'retain' or 'delete'"),
    ({"podsCidr": "10.0.0.0/16"}, "nemo-rl-gke:podsCidr", "overlaps"),
    ({"psaCidr": "10.8.0.0/24"}, "nemo-rl-gke:psaCidr", "overlaps"),
    ({"psaCidr": "10.20.0.0/28"}, "nemo-rl-gke:psaCidr", "/24"),
    ({"primarySubnetCidr": "10.0.0.300/20"}, "nemo-rl-gke:primarySubnetCidr", "not a valid CIDR"),
    ({"rdmaSubnetCidrs": ["192.168.1.0/24"] * 8}, "nemo-rl-gke:rdmaSubnetCidrs", "overlaps"),
    ({"rdmaSubnetCidrs": ["192.168.1.0/24"]}, "nemo-rl-gke:rdmaSubnetCidrs", "exactly 8"),
    ({"capacity": ["spot"], "reservation": "res-1"}, "nemo-rl-gke:reservation", "does not list 'reservation'"),
    ({"capacity": ["on-demand"]}, "nemo-rl-gke:capacity", "no plain on-demand capacity"),
    ({"capacity": ["spot", "spot"]}, "nemo-rl-gke:capacity", "more than once"),
    ({"capacity": ["reservation", "spot"]}, "nemo-rl-gke:reservation", "no reservation name"),
    ({"capacity": ["reservation"], "reservation": "Res_1"}, "nemo-rl-gke:reservation", "not a reservation name"),
    (
        {"capacity": ["reservation"], "reservation": "res-1/reservationBlocks/Blk_1"},
        "nemo-rl-gke:reservation",
        "'Blk_1' is not a valid name",
    ),
    ({"flexStartMaxRunHours": 200}, "nemo-rl-gke:flexStartMaxRunHours", "at most 7 days"),
    (
        {"gkeVersion": "1.32.1-gke.1000000", "lustrePortMode": "legacy"},
        "nemo-rl-gke:capacity",
        "flex-start for GPUs needs GKE 1.32.2-gke.1652000",
    ),
    (
        {"capacity": ["reservation"], "reservation": "res-1", "gpuPlacement": "compact"},
        "nemo-rl-gke:gpuPlacement",
        "brings its own block placement",
    ),
    ({"computeClass": "gke-gpus"}, "nemo-rl-gke:computeClass", "reserves for its own classes"),
    (
        {"clusterMode": "autopilot", "workerReplicas": 2, "gpuNodes": 2, "gpuPlacement": "compact"},
        "nemo-rl-gke:gpuPlacement",
        "Autopilot",
    ),
    ({"flexStartWaitMinutes": 30}, "nemo-rl-gke:flexStartWaitMinutes", "only applies to Autopilot"),
    ({"gpuNodes": -1}, "nemo-rl-gke:gpuNodes", ">= 0"),
    ({"gpuNodes": "two"}, "nemo-rl-gke:gpuNodes", "integer"),
    ({"workerReplicas": 3}, "nemo-rl-gke:workerReplicas", "at most 2"),
    ({"clusterMode": "autopilot", "controlPlane": "zonal"}, "nemo-rl-gke:controlPlane", "only applies to Standard"),
    (
        {"clusterMode": "autopilot", "systemMachineType": "n2-standard-8"},
        "nemo-rl-gke:systemMachineType",
        "only applies to Standard",
    ),
    ({"clusterMode": "autopilot", "gpuDriverVersion": "DEFAULT"}, "nemo-rl-gke:gpuDriverVersion", "Standard"),
    ({"clusterMode": "kubernetes"}, "nemo-rl-gke:clusterMode", "'standard' or 'autopilot'"),
    ({"gkeVersion": "1.32"}, "nemo-rl-gke:gkeVersion", "1.33.2-gke.4780000"),
    ({"gkeVersion": "latest"}, "nemo-rl-gke:gkeVersion", "like 1.33"),
    ({"maintenanceStart": "3am"}, "nemo-rl-gke:maintenanceStart", "HH:MM"),
    ({"nemoRlRelease": "v9.9.9"}, "nemo-rl-gke:nemoRlRelease", "v0.5.0"),
    ({"rayVersion": "2.54.0"}, "nemo-rl-gke:rayVersion", "2.49.2"),
    ({"lustreMountPath": "lustre"}, "nemo-rl-gke:lustreMountPath", "absolute"),
    ({"gpuTyp": "nvidia-b200"}, "nemo-rl-gke:gpuTyp", "did you mean nemo-rl-gke:gpuType"),
    ({"gcp:region": "europe-west4"}, "gcp:region", "differs from nemo-rl-gke:region"),
]


@pytest.mark.graph
@pytest.mark.parametrize(
    "overrides,key,hint", INVALID, ids=[f"{c[1].split(':')[1]}-{i}" for i, c in enumerate(INVALID)]
)
def test_invalid_setting_is_rejected_naming_its_key_and_registers_nothing(synth, overrides, key, hint):
    r = synth("dev", overrides)
    assert r.error is not None, f"{overrides} was accepted"
    lines = [ln for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    named = [ln for ln in lines if key + ":" in ln]
    assert named, f"no line names {key}:\n{r.error}"
    assert any(hint in ln for ln in named), f"{hint!r} not in {named}"
    assert r.resources == []
    assert "Traceback" not in r.error


@pytest.mark.graph
def test_every_problem_is_reported_at_once_one_line_each(synth):
    r = synth(
        "dev",
        {
            "gpuType": "nvidia-h100",
            "zone": "europe-west4-a",
            "lustreTier": 750,
            "capacity": ["spot"],
            "reservation": "r",
            "bogusKey": 1,
        },
    )
    lines = [ln for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    keys = {ln.split(":", 2)[1] for ln in lines}
    assert {"gpuType", "zone", "lustreTier", "reservation", "bogusKey"} <= keys
    assert r.error.splitlines()[0].startswith(f"{len(lines)} problems")


@pytest.mark.graph
def test_missing_hf_token_is_reported_with_the_command_to_set_it(synth):
    r = synth("dev", secrets={"hfToken": None})
    assert "nemo-rl-gke:hfToken" in r.error and "pulumi config set --secret hfToken" in r.error
    assert r.resources == []


@pytest.mark.graph
def test_hf_token_set_in_plain_text_is_refused(synth):
    r = synth("dev", secrets={"hfToken": "hf_plain"}, plaintext_keys=("hfToken",))
    assert "stored in plain text" in r.error and r.resources == []


@pytest.mark.unit
def test_placeholder_project_is_refused_outside_the_offline_engine():
    with pytest.raises(SettingsError) as err:
        load_settings("dev", PLACEHOLDER_PROJECT, {}, {"hfToken": "secret"})
    assert "gcp:project" in str(err.value) and "pulumi config set gcp:project" in str(err.value)


@pytest.mark.graph
def test_placeholder_project_is_accepted_by_the_offline_synth(synth):
    assert synth("dev").config["gcp:project"] == PLACEHOLDER_PROJECT


@pytest.mark.graph
def test_valid_non_default_settings_are_accepted(synth):
    r = synth(
        "dev",
        {
            "lustreCapacityGib": 36000,
            "lustreTier": 500,
            "gpuNodes": 4,
            "capacity": ["reservation", "spot", "flex-start"],
            "reservation": "a3u-res/reservationBlocks/a3u-res-block-1",
            "reservationStartNodes": 2,
            "flexStartMaxRunHours": 72,
            "gpuPlacement": "compact",
            "gpuPlacementDistance": "BLOCK",
            "computeClass": "rl-gpus",
            "lustrePortMode": "legacy",
            "gkeVersion": "1.33.2-gke.4780000",
            "prefix": "rl-team",
        },
    )
    assert r.error is None
    assert r.get("gcp:container/cluster:Cluster", "cluster").inputs["name"] == "rl-team"


@pytest.mark.unit
def test_a_missing_project_is_one_clear_line():
    with pytest.raises(SettingsError) as e:
        load_settings("dev", "", values={}, secret_state={"hfToken": "secret", "wandbApiKey": "secret"})
    assert e.value.problems == ["gcp:project: is not set; run `pulumi config set gcp:project <your-project-id>`"]


@pytest.mark.unit
def test_teardown_is_safe_unless_a_stack_file_says_otherwise():
    # The stack's name no longer decides what destroy deletes: unset means protect, whatever the stack is called.
    s = load_settings("dev", "example-project", values={}, secret_state={"hfToken": "secret", "wandbApiKey": "secret"})
    assert (s.teardown.lustre_on_destroy, s.teardown.cluster_deletion_protection) == ("protect", True)
