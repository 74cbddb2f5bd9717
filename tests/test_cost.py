"""The cost estimate (core/cost.py): only the catalog's dated, sourced prices (core/catalog/prices.py: the GKE
cluster fee, Cloud Storage Standard in us-central1) or the user's (`prices`), never an invented figure; checked
against amounts worked out by hand from those prices."""

from __future__ import annotations

import pytest

from core import catalog

pytestmark = pytest.mark.graph

PRICES = {"gpuNodeSpot": 50.0, "cpuNode": 1.0, "lustreGibMonth": 0.73}


def by_item(estimate: dict) -> dict[str, dict]:
    return {line["item"]: line for line in estimate["lines"]}


def test_a_platform_costs_per_hour_what_the_hand_worked_sum_of_its_prices_gives(synth):
    c = synth("codelab", {"prices": PRICES}).outputs["costEstimate"]
    lines = by_item(c)
    # By hand: fee 0.10 + 8 spot a4-highgpu-8g x 50 + 1 n2-standard-16 x 1 + 9000 GiB x 0.73 / 730 h = 410.10.
    assert lines["GKE cluster management fee"]["usdPerHour"] == 0.10
    assert lines["GPU nodes (8 x a4-highgpu-8g) on spot"]["usdPerHour"] == 400.0
    assert lines["CPU system pool (1 x n2-standard-16)"]["usdPerHour"] == 1.0
    assert lines["Managed Lustre (9000 GiB, tier 1000)"]["usdPerHour"] == pytest.approx(9.0)
    assert c["perHourByCapacityModel"]["spot"] == {"knownUsd": pytest.approx(410.10), "unknown": []}
    # flex-start has no price here: left out of the total, and named.
    flex = c["perHourByCapacityModel"]["flex-start"]
    assert flex["knownUsd"] == pytest.approx(10.10)
    assert flex["unknown"] == ["GPU nodes (8 x a4-highgpu-8g) on flex-start"]
    assert c["hoursPerMonth"] == 730
    # The list price is always there as the reference (A4 has no plain on-demand capacity; a reservation bills it).
    assert c["perHourByCapacityModel"]["list-price"]["unknown"] == [
        "GPU nodes (8 x a4-highgpu-8g) at the list price (reference)"
    ]
    listed = synth("codelab", {"prices": {**PRICES, "gpuNodeList": 80.0}}).outputs["costEstimate"]
    # By hand: 0.10 + 8 x 80 + 1 + 9 = 650.10.
    assert listed["perHourByCapacityModel"]["list-price"] == {"knownUsd": pytest.approx(650.10), "unknown": []}


def test_without_user_prices_only_sourced_figures_appear_and_every_other_line_says_where_to_find_its_price(synth):
    for stack in ("dev", "codelab", "autopilot"):
        c = synth(stack).outputs["costEstimate"]
        for line in c["lines"]:
            if line["item"] == "GKE cluster management fee":
                assert line["usdEachPerHour"] == catalog.GKE_CLUSTER_FEE.usd
                assert line["origin"].startswith("catalog: https://cloud.google.com/kubernetes-engine/pricing")
            else:
                assert line["usdEachPerHour"] is None, line
                assert line["origin"].startswith("unknown: set nemo-rl-gke:prices."), line
                assert "https://cloud.google.com/" in line["origin"]
    # Every catalog price carries its page and the date it was read.
    for price in (catalog.GKE_CLUSTER_FEE, *catalog.GCS_STANDARD_GIB_MONTH.values()):
        assert price.source.startswith("https://cloud.google.com/") and price.read_on == "2026-12-01"


def test_the_bucket_is_priced_per_tib_stored_from_the_sourced_us_central1_figure(synth):
    r = synth("dev")
    assert r.config["nemo-rl-gke:region"] == "us-central1"
    # By hand: $0.020 per GiB-month x 1024 GiB / 730 h = $0.0281/h per TiB.
    (note,) = [n for n in r.outputs["costEstimate"]["notes"] if n.startswith("bucket")]
    assert "$0.0281/h per TiB stored" in note and "https://cloud.google.com/storage/pricing" in note


def test_an_experiment_gives_its_runs_gpu_hours_and_cost_when_the_step_time_is_known(synth):
    c = synth("codelab-exp1", {"stepSeconds": 90, "prices": {"gpuNodeSpot": 50.0}}).outputs["costEstimate"]
    # By hand: 20 steps x 90 s = 0.5 h; 4 nodes x 8 GPUs x 0.5 h = 16 GPU-hours; 4 x $50 x 0.5 h = $100 on spot.
    assert c["run"]["hours"] == 0.5 and c["run"]["gpuHours"] == 16
    # The run is its GPU nodes and its Ray head: without the head's prices the run's total is unknown, the known
    # part is the GPU nodes', and the head's lines are named.
    assert c["run"]["usdByCapacityModel"] == {"spot": None, "flex-start": None, "list-price": None}
    head = ["Ray head (8 vCPU) on the CPU pool (n2)", "Ray head (32 GiB) on the CPU pool (n2)"]
    assert c["run"]["byCapacityModel"]["spot"] == {"knownUsd": 100.0, "unknown": head}
    priced = synth(
        "codelab-exp1",
        {"stepSeconds": 90, "prices": {"gpuNodeSpot": 50.0, "headVcpuHour": 0.05, "headMemoryGibHour": 0.005}},
    ).outputs["costEstimate"]
    # By hand: ($200 + 8 x $0.05 + 32 x $0.005 = $200.56 an hour) x 0.5 h = $100.28.
    assert priced["run"]["usdByCapacityModel"]["spot"] == 100.28
    # The platform's fee, CPU pool and Lustre are the platform's lines, not the experiment's.
    assert [line["item"] for line in c["lines"]] == [
        "GPU nodes (4 x a4-highgpu-8g) on spot",
        "GPU nodes (4 x a4-highgpu-8g) on flex-start",
        "GPU nodes (4 x a4-highgpu-8g) at the list price (reference)",
        *head,
    ]


def test_the_offline_synth_reads_no_price_catalog_and_says_so(synth):
    # The offline engine never touches the network: the program's read returns at once under the mock monitor.
    for stack in ("dev", "codelab-exp1"):
        notes = synth(stack).outputs["costEstimate"]["notes"]
        assert "prices: the offline synth reads no Cloud Billing Catalog (pulumi preview does)" in notes, stack


AUTOPILOT_PRICES = {"autopilotGpuPodHour": 100.0, "autopilotGpuPodSpot": 30.0, "autopilotGpuPodFlexStart": 55.0}


def test_on_autopilot_spot_flex_start_and_the_regular_price_are_three_prices(synth):
    # GKE's pricing page: Autopilot Spot Pods are 60-91 % below the regular price, so one price for every capacity
    # model overstated spot by up to 11 times.
    c = synth("autopilot", {"prices": AUTOPILOT_PRICES}).outputs["costEstimate"]
    lines = by_item(c)
    # By hand: 2 GPU Pods filling a node each x $30 (spot), x $55 (flex-start), x $100 (regular).
    assert lines["GPU nodes (2 x a4-highgpu-8g) on spot"]["usdPerHour"] == 60.0
    assert lines["GPU nodes (2 x a4-highgpu-8g) on flex-start"]["usdPerHour"] == 110.0
    assert lines["GPU nodes (2 x a4-highgpu-8g) at the regular Autopilot price (reference)"]["usdPerHour"] == 200.0
    per_hour = c["perHourByCapacityModel"]
    assert per_hour["spot"]["knownUsd"] == pytest.approx(60.10)  # + the $0.10 fee; Lustre's price unknown
    assert per_hour["flex-start"]["knownUsd"] == pytest.approx(110.10)
    assert per_hour["list-price"]["knownUsd"] == pytest.approx(200.10)
    spot = lines["GPU nodes (2 x a4-highgpu-8g) on spot"]
    assert spot["origin"] == "user-supplied (nemo-rl-gke:prices.autopilotGpuPodSpot)"


def test_on_autopilot_the_regular_price_gives_the_spot_range_and_never_the_spot_price(synth):
    c = synth("autopilot", {"prices": {"autopilotGpuPodHour": 100.0}}).outputs["costEstimate"]
    lines = by_item(c)
    assert lines["GPU nodes (2 x a4-highgpu-8g) on spot"]["usdPerHour"] is None
    assert lines["GPU nodes (2 x a4-highgpu-8g) on flex-start"]["usdPerHour"] is None
    assert "prices.autopilotGpuPodSpot" in lines["GPU nodes (2 x a4-highgpu-8g) on spot"]["origin"]
    assert catalog.AUTOPILOT_SPOT_DISCOUNT == (0.60, 0.91)
    (note,) = [n for n in c["notes"] if n.startswith("Autopilot Spot Pods")]
    # By hand: $100 x (1 - 0.91) = $9.00 to $100 x (1 - 0.60) = $40.00.
    assert "60% to 91% below the regular price: $9.00 to $40.00" in note
    assert "https://cloud.google.com/kubernetes-engine/pricing" in note


def _free_tier_note(c: dict) -> str:
    (note,) = [n for n in c["notes"] if n.startswith("GKE free tier")]
    return note


def test_the_free_tier_note_says_which_clusters_it_covers(synth):
    # GKE's pricing page: $74.40 a month per billing account, "equivalent to one free Autopilot or zonal Standard
    # cluster"; "only applied to zonal and Autopilot clusters".
    assert catalog.GKE_FREE_TIER_CREDIT.usd == 74.40 == 744 * catalog.GKE_CLUSTER_FEE.usd
    eligible = {
        "autopilot": synth("autopilot").outputs["costEstimate"],
        "zonal Standard": synth("dev", {"controlPlane": "zonal"}).outputs["costEstimate"],
    }
    for what, c in eligible.items():
        note = _free_tier_note(c)
        assert "covers the fee of one zonal Standard or Autopilot cluster, and this is" in note, what
        assert "never" not in note, what
    regional = _free_tier_note(synth("dev").outputs["costEstimate"])
    assert synth("dev").config.get("nemo-rl-gke:controlPlane", "regional") == "regional"
    assert "never covers a regional Standard cluster" in regional
    # The credit is per billing account: no stack's estimate applies it, whatever the cluster.
    for c in (*eligible.values(), synth("dev").outputs["costEstimate"]):
        assert by_item(c)["GKE cluster management fee"]["usdPerHour"] == catalog.GKE_CLUSTER_FEE.usd
