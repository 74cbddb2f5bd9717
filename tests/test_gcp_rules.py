"""Real-world rules on names, the address plan, mount paths, Lustre growth and monitoring components.

Each test states the rule and where it comes from; the functions under test are core/gcp_rules.py.
"""

from __future__ import annotations

import ipaddress

import pytest

from core import catalog
from core.gcp_rules import (
    AddressRange,
    address_plan_problems,
    bucket_name_problems,
    capacity_problems,
    lustre_growth_problems,
    monitoring_components,
    mount_path_problems,
    namespace_problems,
    protected_paths,
    reservation_problems,
)
from core.recipes import SCRIPTS_DIR

pytestmark = pytest.mark.unit


def _one_line_naming(key: str, problems: list[str]) -> None:
    assert problems, "expected a problem"
    for line in problems:
        assert line.startswith(f"nemo-rl-gke:{key}: ") and "\n" not in line


# --- Cloud Storage bucket names: https://cloud.google.com/storage/docs/buckets#naming -------------------------
@pytest.mark.parametrize("name", ["nemo-dev-my-project", "abc", "a" * 63, "run_1-ckpt", "9lives"])
def test_valid_bucket_names_pass(name):
    assert bucket_name_problems(name) == []


@pytest.mark.parametrize(
    "name,why",
    [
        ("ab", "3-63"),
        ("a" * 64, "3-63"),  # length
        ("My-Bucket", "lowercase"),
        ("bucket space", "lowercase"),  # characters
        ("-bucket", "start and end"),
        ("bucket_", "start and end"),
        ("googbucket", "goog"),  # "cannot begin with the goog prefix"
        ("my-google-data", "google"),
        ("my-g00gle-data", "google"),  # "google or close misspellings such as g00gle"
        ("my.bucket.example", "dot"),  # dots need domain verification: refused
        ("192.168.5.4", "IP address"),  # "cannot be represented as an IP address"
    ],
)
def test_bucket_name_rules_refuse_what_cloud_storage_refuses(name, why):
    problems = bucket_name_problems(name)
    _one_line_naming("bucketName", problems)
    assert any(why in p for p in problems), problems


def test_ip_address_form_is_judged_by_the_ip_parser_not_a_pattern():
    # Dotted quads that are not IPv4 addresses (octet > 255) are not "IP addresses"; they still fail on the dot.
    assert not any("IP address" in p for p in bucket_name_problems("300.1.1.1"))
    ipaddress.IPv4Address("192.168.5.4")  # the documented example is one
    assert any("IP address" in p for p in bucket_name_problems("192.168.5.4"))


# --- Reservations: Compute Engine names (RFC 1035, <= 63) and the forms a node pool accepts -------------------
@pytest.mark.parametrize(
    "value",
    [
        "a4-reservation",
        "r",
        "exr-one/reservationBlocks/exr-one-block-1",
        "projects/shared-host-123/reservations/a4-shared",
        "projects/shared-host-123/reservations/a4-shared/reservationBlocks/block-2",
    ],
)
def test_reservation_forms_gke_accepts_pass(value):
    assert reservation_problems(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "A4-Reservation",
        "1abc",
        "abc-",
        "a" * 64,
        "my_res",
        "res/blocks/x",
        "projects/p/reservations/x",  # project id too short
        "projects/shared-host-123/zones/x",
        "",
    ],
)
def test_reservation_names_outside_gcp_format_are_refused(value):
    _one_line_naming("reservation", reservation_problems(value))


# --- Namespaces: never a system namespace (the program creates and deletes its namespace) ---------------------
@pytest.mark.parametrize(
    "ns",
    [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "kube-anything",
        "gke-managed-system",
        "gke-gmp-system",
        "gmp-system",
        "gmp-public",
    ],
)
def test_system_namespaces_are_refused(ns):
    # Kubernetes reserves kube-* and default (kubernetes.io namespaces page); GKE manages gke-*/gmp-* and its
    # Warden refuses writes there ("the namespace ... is managed", gitlab-org/charts/gitlab#5007).
    problems = namespace_problems(ns)
    _one_line_naming("namespace", problems)
    assert "system namespace" in problems[0]


@pytest.mark.parametrize("ns", ["nemo-rl", "team-a", "rl1"])
def test_workload_namespaces_pass(ns):
    assert namespace_problems(ns) == []


def test_namespace_must_be_a_dns_label():
    _one_line_naming("namespace", namespace_problems("Nemo_RL"))
    _one_line_naming("namespace", namespace_problems("a" * 64))


# --- The address plan as a whole ---------------------------------------------------------------------------------
def _default_plan(**change) -> list[AddressRange]:
    plan = {
        "primarySubnetCidr": ("subnet", "10.0.0.0/20"),
        "podsCidr": ("pods", "10.4.0.0/14"),
        "servicesCidr": ("services", "10.8.0.0/20"),
        "psaCidr": ("psa", "10.16.0.0/20"),
        "gvnicSubnetCidr": ("subnet", "192.168.0.0/24"),
    }
    plan.update({k: (plan[k][0], v) for k, v in change.items() if k in plan})
    ranges = [AddressRange(k, k, cidr, role) for k, (role, cidr) in plan.items()]
    rdma = change.get("rdma", [f"192.168.{i + 1}.0/24" for i in range(catalog.RDMA_NICS_PER_NODE)])
    ranges += [AddressRange("rdmaSubnetCidrs", f"rdmaSubnetCidrs[{i}]", c, "subnet") for i, c in enumerate(rdma)]
    return ranges


def test_default_address_plan_is_valid():
    assert address_plan_problems(_default_plan()) == []


@pytest.mark.parametrize(
    "change,key",
    [
        # The PSA range inside an RDMA subnet: Lustre traffic to it would leave through an RDMA NIC.
        ({"psaCidr": "192.168.3.0/24"}, "psaCidr"),
        # gVNIC and RDMA are separate VPCs but meet on every GPU node.
        ({"gvnicSubnetCidr": "192.168.1.0/24"}, "gvnicSubnetCidr"),
        ({"servicesCidr": "10.0.8.0/24"}, "servicesCidr"),
        ({"rdma": [f"192.168.{i + 1}.0/24" for i in range(7)] + ["10.4.0.0/24"]}, "rdmaSubnetCidrs"),
    ],
)
def test_any_two_ranges_of_the_plan_overlapping_are_refused(change, key):
    problems = address_plan_problems(_default_plan(**change))
    assert any(p.startswith(f"nemo-rl-gke:{key}: ") or f"({'nemo-rl-gke:' + key})" in p for p in problems), problems
    assert all("overlaps" in p for p in problems)


@pytest.mark.parametrize(
    "change,fragment",
    [
        ({"gvnicSubnetCidr": "192.168.0.0/30"}, "/4 to /29"),  # VPC: a subnet range is /4 .. /29
        ({"primarySubnetCidr": "169.254.0.0/20"}, "169.254.0.0/16"),  # link-local is prohibited
        ({"psaCidr": "10.16.0.0/25"}, "/24"),  # Managed Lustre's PSA range is at least a /24
        ({"podsCidr": "10.4.0.1/14"}, "not a valid CIDR"),  # host bits set
        ({"servicesCidr": "fd00::/64"}, "IPv4"),
    ],
)
def test_ranges_outside_gcp_limits_are_refused(change, fragment):
    problems = address_plan_problems(_default_plan(**change))
    assert any(fragment in p for p in problems), problems


def test_subnets_hold_every_node_they_serve():
    # GCP keeps 4 addresses of each primary range: a /29 holds 4 nodes, not 8.
    r = AddressRange("rdmaSubnetCidrs", "rdmaSubnetCidrs[0]", "192.168.1.0/29", "subnet")
    assert capacity_problems(r, 4) == []
    _one_line_naming("rdmaSubnetCidrs", capacity_problems(r, 5))


def test_pod_range_holds_a_slice_per_node():
    # GKE gives each Standard node a /24 of the pod range (110 pods), each Autopilot node a /26 (32 pods).
    r = AddressRange("podsCidr", "podsCidr", "10.4.0.0/22", "pods")
    assert capacity_problems(r, 4, pod_slice_prefix=24) == []
    _one_line_naming("podsCidr", capacity_problems(r, 5, pod_slice_prefix=24))
    assert capacity_problems(r, 16, pod_slice_prefix=26) == []


# --- Lustre mount path ----------------------------------------------------------------------------------------------
PROTECTED = protected_paths(SCRIPTS_DIR)


@pytest.mark.parametrize("path", ["/lustre", "/mnt/lustre", "/data/lustre", "/scratch"])
def test_plain_mount_paths_pass(path):
    assert mount_path_problems(path, PROTECTED) == []


@pytest.mark.parametrize(
    "path,hidden",
    [
        ("/dev", "/dev/shm"),
        ("/dev/shm", "/dev/shm"),  # the workers' shared memory
        ("/usr/local", "/usr/local/nvidia"),
        ("/usr/local/gib", "/usr/local/gib"),  # driver and gIB plugin mounts
        ("/opt", "/opt/nemo-rl"),
        ("/opt/nemo-rl", "/opt/nemo-rl"),  # NeMo-RL's working directory
        ("/etc", SCRIPTS_DIR),  # the job's programs on the head
        ("/tmp", "/tmp"),  # Ray's session dir /tmp/ray
    ],
)
def test_mount_paths_that_would_hide_what_pods_need_are_refused(path, hidden):
    problems = mount_path_problems(path, PROTECTED)
    _one_line_naming("lustreMountPath", problems)
    assert hidden in problems[0]


@pytest.mark.parametrize("path", ["/usr/lustre", "/tmp/lustre", "/opt/nemo-rl/data", "/proc/x", "/etc/lustre"])
def test_mount_paths_inside_system_or_mounted_trees_are_refused(path):
    _one_line_naming("lustreMountPath", mount_path_problems(path, PROTECTED))


@pytest.mark.parametrize("path", ["lustre", "/", "/lustre/", "/a/../lustre", "//lustre", "/a/./b"])
def test_mount_path_must_be_absolute_and_plain(path):
    _one_line_naming("lustreMountPath", mount_path_problems(path, PROTECTED))


# --- Managed Lustre growth: "Increase capacity" page ---------------------------------------------------------------
def test_lustre_instance_at_or_below_threshold_grows_only_up_to_it():
    tier = catalog.LUSTRE_TIERS[250]
    assert lustre_growth_problems(tier, 36_000, tier.step_until_gib) == []
    _one_line_naming("lustreCapacityGib", lustre_growth_problems(tier, 36_000, tier.step_until_gib + 288_000))


def test_lustre_capacity_never_shrinks():
    tier = catalog.LUSTRE_TIERS[500]
    _one_line_naming("lustreCapacityGib", lustre_growth_problems(tier, 36_000, 18_000))
    assert lustre_growth_problems(tier, 36_000, 36_000) == []


# --- Monitoring components and their GKE floors (pulumi-gcp 10.2.0 ClusterMonitoringConfigArgs docs) ---------------
def test_monitoring_keeps_cluster_toolkit_defaults_plus_dcgm_when_unpinned():
    # Cluster Toolkit gke-cluster variables.tf monitoring_components + enable_dcgm_monitoring.
    assert monitoring_components(None) == [
        "SYSTEM_COMPONENTS",
        "POD",
        "DAEMONSET",
        "DEPLOYMENT",
        "STATEFULSET",
        "STORAGE",
        "HPA",
        "CADVISOR",
        "KUBELET",
        "JOBSET",
        "DCGM",
    ]


@pytest.mark.parametrize(
    "version,has_jobset",
    [
        ("1.31.4-gke.1183000", False),
        ("1.32", False),
        ("1.32.1-gke.1357000", False),
        ("1.32.1-gke.1357001", True),
        ("1.33", True),
    ],
)
def test_jobset_metrics_only_from_their_gke_floor(version, has_jobset):
    comps = monitoring_components(version)
    assert ("JOBSET" in comps) is has_jobset
    assert {"SYSTEM_COMPONENTS", "CADVISOR", "KUBELET", "DCGM"} <= set(comps)


def test_kubelet_and_cadvisor_need_1_29_3():
    assert "KUBELET" not in monitoring_components("1.29.2-gke.1")
    assert "CADVISOR" in monitoring_components("1.29.3-gke.1093000")


# --- Managed Lustre tier table (performance-tiers page, read 2026-11-30) ------------------------------------------
@pytest.mark.parametrize("tier", sorted(catalog.LUSTRE_TIERS))
def test_documented_lustre_maximum_and_minimum_are_valid(tier):
    # The program used to reject every documented maximum; the "multiples of the large step above the
    # threshold" reading (an inference from the table: each maximum is 139 large steps) accepts them.
    t = catalog.LUSTRE_TIERS[tier]
    assert t.is_valid_capacity(t.min_gib) and t.is_valid_capacity(t.max_gib)
    assert t.is_valid_capacity(t.step_until_gib)
    assert not t.is_valid_capacity(t.max_gib + t.large_step_gib)


@pytest.mark.parametrize("tier,above", [(1000, 1_584_000), (500, 3_168_000), (250, 6_336_000)])
def test_first_capacity_above_the_threshold_is_the_next_multiple_of_the_large_step(tier, above):
    t = catalog.LUSTRE_TIERS[tier]
    assert t.next_valid_capacity(t.step_until_gib + 1) == above
    assert not t.is_valid_capacity(t.step_until_gib + t.large_step_gib)  # counting from the threshold: refused
