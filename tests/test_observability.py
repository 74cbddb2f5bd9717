"""The stack's dashboard, logs query and checkpoint sizing, as the program registers and exports them."""

from __future__ import annotations

import json

import pytest

from infra.dashboard import METRICS, chart_filters

pytestmark = pytest.mark.graph

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"


def test_dashboard_is_scoped_to_this_stacks_instance_and_cluster(synth, stack):
    r = synth(stack)
    body = json.loads(r.get(DASHBOARD, "dashboard").inputs["dashboardJson"])
    instance = r.get("gcp:lustre/instance:Instance", "lustre").inputs["instanceId"]
    cluster = r.get("gcp:container/cluster:Cluster", "cluster").inputs["name"]
    filters = chart_filters(body)
    assert filters
    for title, flt in filters:
        assert f'"{instance}"' in flt or f'"{cluster}"' in flt, title
        metric = flt.split('metric.type="', 1)[1].split('"', 1)[0]
        assert metric in METRICS, metric


def test_dashboard_waits_for_the_instance_and_cluster_it_charts(synth):
    r = synth("dev")
    d = r.get(DASHBOARD, "dashboard")
    assert r.depends_on(d, r.get("gcp:lustre/instance:Instance", "lustre"))
    assert r.depends_on(d, r.get("gcp:container/cluster:Cluster", "cluster"))


def test_dashboard_can_be_turned_off(synth):
    r = synth("dev", {"dashboard": False})
    assert r.of_type(DASHBOARD) == [] and "dashboardUrl" not in r.outputs


def test_outputs_give_dashboard_url_logs_query_and_sizing(synth, stack):
    out = synth(stack).outputs
    assert out["dashboardUrl"].startswith("https://console.cloud.google.com/monitoring/dashboards/custom/")
    assert 'resource.type="k8s_container"' in out["driverLogsQuery"]
    sz = out["checkpointSizing"]
    assert sz["checkpointBytes"] > 0 and sz["minWriteSeconds"] > 0 and "per checkpoint" in sz["summary"]


def test_codelab_sizing_matches_the_hand_computed_numbers(synth):
    sz = synth("codelab").outputs["checkpointSizing"]
    # Qwen2.5-72B: 72.7e9 params x 14 B = 1.0178e12 B; 9000 GiB = 8.789 TiB x 1000 MB/s = 8.789e9 B/s.
    assert sz["checkpointBytes"] == 72_700_000_000 * 14
    assert abs(sz["minWriteSeconds"] - 1.0178e12 / (9000 / 1024 * 1e9)) < 0.1


def test_over_budget_checkpoints_fail_the_preview_with_the_capacity_that_fits(synth):
    r = synth("dev", {"checkpointBudgetSeconds": 20})
    assert r.resources == []
    # gemma-3-27b: 27.4e9 x 14 = 383.6 GB; at 500 MB/s/TiB it needs 383.6e9 / 20 s = 19.18 GB/s
    # -> 38.4 TiB -> 39,300 GiB -> next valid step of 18,000 is 54,000 GiB.
    assert "nemo-rl-gke:checkpointBudgetSeconds" in r.error and "lustreCapacityGib to 54000" in r.error


def test_keep_top_k_that_would_fill_lustre_is_a_warning_not_an_error(synth):
    r = synth("dev", {"jobOverrides": {"keep_top_k": 60}})
    assert r.error is None
    assert any("keep_top_k=60" in w and "lustreCapacityGib" in w for w in r.warnings)
    assert not synth("dev").warnings


def test_logs_query_follows_the_cluster_a_rayjob_owns(synth):
    q = synth("codelab", {"jobMode": "own-cluster"}).outputs["driverLogsQuery"]
    assert 'labels."k8s-pod/ray_io/cluster"=~"^nemo-codelab-grpo-"' in q
    q = synth("codelab", {"jobMode": "standing-cluster"}).outputs["driverLogsQuery"]
    assert 'labels."k8s-pod/ray_io/cluster"="nemo-codelab-ray"' in q


def test_a_zero_budget_turns_the_checkpoint_check_off(synth):
    r = synth("codelab", {"checkpointBudgetSeconds": 0})
    assert r.error is None and r.outputs["checkpointSizing"]["budgetSeconds"] is None


def test_gpu_metrics_are_collected_in_both_cluster_modes(synth, stack):
    cfg = synth(stack).get("gcp:container/cluster:Cluster", "cluster").inputs["monitoringConfig"]
    assert "DCGM" in cfg["enableComponents"] and cfg["managedPrometheus"]["enabled"] is True
