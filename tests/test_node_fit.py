"""Fit rules: GKE's allocatable formula, machine shapes, /dev/shm, the head and the GPU workers (core/node_fit.py)."""

from __future__ import annotations

import pytest

from core import catalog
from core.node_fit import (
    Resources,
    allocatable,
    gpu_worker_request,
    head_problems,
    machine_shape,
    reserved_cpu,
    reserved_memory_gib,
    shm_problems,
    worker_problems,
)

pytestmark = pytest.mark.unit


def test_memory_reservation_matches_a_published_worked_example():
    # hatemosphere/gke-node-allocatable-memory-calculator README, built on GKE's plan-node-sizes formula:
    # a 150 GiB node reserves 9.8577 GiB including the 100 MiB eviction threshold -> 140.1423 GiB allocatable.
    assert allocatable(4, 150).memory_gib == pytest.approx(140.1423, abs=1e-4)
    assert reserved_memory_gib(150) + 100 / 1024 == pytest.approx(9.8577, abs=1e-4)


def test_small_machines_reserve_255_mib():
    assert reserved_memory_gib(0.6) == pytest.approx(255 / 1024)


@pytest.mark.parametrize("vcpus,reserved", [(1, 0.06), (2, 0.07), (4, 0.08), (16, 0.11), (224, 0.63)])
def test_cpu_reservation_follows_gke_tiers(vcpus, reserved):
    # 6% of the first core, 1% of the next, 0.5% of the next two, 0.25% above four (plan-node-sizes).
    assert reserved_cpu(vcpus) == pytest.approx(reserved)


@pytest.mark.parametrize(
    "machine,shape",
    [
        ("n2-standard-16", (16, 64)),
        ("e2-highmem-8", (8, 64)),
        ("n1-standard-4", (4, 15)),
        ("c3-highcpu-22", (22, 44)),
        ("n2-custom-8-32768", (8, 32)),
        ("a4-highgpu-8g", (224, 3968)),
        ("a3-ultragpu-8g", (224, 2952)),
    ],
)
def test_machine_shapes_decode_predefined_and_custom_types(machine, shape):
    got = machine_shape(machine)
    assert (got.cpu, got.memory_gib) == pytest.approx(shape)


def test_unknown_machine_types_are_not_guessed():
    assert machine_shape("z9-weird-8") is None
    assert head_problems(Resources(999, 999), "z9-weird-8") == []


def test_shm_must_fit_inside_the_worker_memory_limit():
    # A Memory-medium emptyDir counts against the container's memory limit (kubernetes.io emptyDir docs).
    assert shm_problems(240, 3571) == []
    problems = shm_problems(3571, 3571)
    assert len(problems) == 1 and problems[0].startswith("nemo-rl-gke:shmSizeGib: ")


def test_default_head_fits_the_default_system_node():
    assert head_problems(Resources(8, 32), "n2-standard-16") == []


@pytest.mark.parametrize("head,key", [(Resources(16, 8), "headCpu"), (Resources(4, 64), "headMemoryGib")])
def test_head_larger_than_a_system_node_is_refused(head, key):
    problems = head_problems(head, "n2-standard-16")
    assert len(problems) == 1 and problems[0].startswith(f"nemo-rl-gke:{key}: ")
    assert "systemMachineType" in problems[0]


@pytest.mark.parametrize("gpu_type", sorted(catalog.ACCELERATORS))
@pytest.mark.parametrize("autopilot", [False, True])
def test_the_shipped_worker_request_fits_its_gpu_node(gpu_type, autopilot):
    acc = catalog.accelerator(gpu_type)
    assert worker_problems(acc, gpu_worker_request(acc), autopilot=autopilot) == []


def test_a_worker_asking_for_the_whole_machine_is_refused_and_autopilot_bound_says_unverified():
    acc = catalog.accelerator("nvidia-h200-141gb")
    problems = worker_problems(acc, Resources(acc.vcpus, acc.memory_gib), autopilot=True)
    assert len(problems) == 2 and all("unverified" in p for p in problems)
