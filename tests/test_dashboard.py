"""The monitoring dashboard: valid deterministic JSON, scoped to this stack, built from documented metrics."""

import json
import re

import pytest

from infra import dashboard as d

pytestmark = pytest.mark.unit

STACK = dict(
    display_name="nemo-rl-gke dev",
    project="my-project-123",
    cluster_name="nemo-dev-gke",
    cluster_location="us-central1",
    lustre_instance="nemo-dev-lustre",
    lustre_zone="us-central1-b",
    namespace="nemo-rl",
    ray_cluster_name="nemo-dev-ray",
)


@pytest.fixture
def dash():
    return json.loads(d.dashboard_json(**STACK, lustre_throughput_bytes_per_s=8_789_062_500))


def data_sets(dash):
    for tile in dash["mosaicLayout"]["tiles"]:
        for ds in tile["widget"]["xyChart"]["dataSets"]:
            yield tile["widget"]["title"], ds


def filter_terms(flt):
    return dict(re.findall(r'([\w.]+)=("(?:[^"\\]|\\.)*")', flt))


def test_json_parses_to_the_v1_dashboard_shape(dash):
    assert dash == d.build_dashboard(**STACK, lustre_throughput_bytes_per_s=8_789_062_500)
    assert set(dash) == {"displayName", "mosaicLayout"}
    assert dash["displayName"] == "nemo-rl-gke dev"
    for title, ds in data_sets(dash):
        tsf = ds["timeSeriesQuery"]["timeSeriesFilter"]
        assert set(tsf) == {"filter", "aggregation"}
        assert set(tsf["aggregation"]) <= {"alignmentPeriod", "perSeriesAligner", "crossSeriesReducer", "groupByFields"}
        assert re.fullmatch(r"\d+s", tsf["aggregation"]["alignmentPeriod"]), title
        assert ds["plotType"] in {"LINE", "STACKED_AREA", "STACKED_BAR", "HEATMAP"}


def test_every_chart_filter_names_this_stacks_instance_or_cluster(dash):
    for title, ds in data_sets(dash):
        terms = filter_terms(ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"])
        if terms["resource.type"] == json.dumps(d.LUSTRE_INSTANCE.type):
            assert terms["resource.label.instance_id"] == '"nemo-dev-lustre"', title
            assert terms["resource.label.location"] == '"us-central1-b"', title
        else:
            assert terms["resource.label.cluster"] == '"nemo-dev-gke"', title
            assert terms["resource.label.location"] == '"us-central1"', title
            assert terms["resource.label.project_id"] == '"my-project-123"', title


def test_ray_charts_are_scoped_to_the_workload_namespace(dash):
    ray = [(t, ds) for t, ds in data_sets(dash) if "ray_" in ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"]]
    assert len(ray) == 2
    for title, ds in ray:
        assert (
            filter_terms(ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"])["resource.label.namespace"] == '"nemo-rl"'
        )
        assert "nemo-dev-ray" in title


def test_every_metric_type_used_is_in_the_documented_catalog_with_its_resource(dash):
    used = set()
    for title, ds in data_sets(dash):
        terms = filter_terms(ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"])
        metric_type = json.loads(terms["metric.type"])
        assert metric_type in d.METRICS, title
        assert json.loads(terms["resource.type"]) == d.METRICS[metric_type].resource.type, title
        used.add(metric_type)
    assert used == set(d.METRICS)  # and the catalog carries nothing the dashboard does not chart


def test_every_label_filtered_or_grouped_on_is_documented_for_its_metric(dash):
    for title, ds in data_sets(dash):
        tsf = ds["timeSeriesQuery"]["timeSeriesFilter"]
        metric = d.METRICS[json.loads(filter_terms(tsf["filter"])["metric.type"])]
        fields = list(filter_terms(tsf["filter"])) + tsf["aggregation"].get("groupByFields", [])
        for f in fields:
            if f.startswith("resource.label."):
                assert f.removeprefix("resource.label.") in metric.resource.labels, (title, f)
            elif f.startswith("metric.label."):
                assert f.removeprefix("metric.label.") in metric.labels, (title, f)
            else:
                assert f in {"metric.type", "resource.type"}, (title, f)


def test_every_catalog_entry_names_its_source_documents():
    for m in d.METRICS.values():
        assert m.sources and all(s.startswith("https://") for s in m.sources), m.type
        assert m.resource.source.startswith("https://"), m.type
        assert m.kind in {"GAUGE", "DELTA", "CUMULATIVE"}


def test_a_metric_outside_the_catalog_is_refused():
    with pytest.raises(ValueError, match="not in the documented metric catalog"):
        d.TimeSeriesFilter("kubernetes.io/container/cpu/core_usage_time", (), d.Aggregation(60, "ALIGN_RATE"))


def test_charts_cover_lustre_gpus_ray_and_checkpoint_bursts(dash):
    titles = [t["widget"]["title"] for t in dash["mosaicLayout"]["tiles"]]
    for needle in (
        "Lustre read throughput",
        "Lustre write throughput",
        "Lustre capacity",
        "Checkpoint bursts",
        "GPU utilisation per node",
        "GPU memory used per node",
        "Ray actors",
        "Ray tasks",
    ):
        assert any(needle in t for t in titles), needle


def test_burst_chart_keeps_peaks_at_60s_with_a_max_aligner(dash):
    ((title, ds),) = [(t, ds) for t, ds in data_sets(dash) if t.startswith("Checkpoint bursts")]
    agg = ds["timeSeriesQuery"]["timeSeriesFilter"]["aggregation"]
    assert agg["alignmentPeriod"] == "60s" and agg["perSeriesAligner"] == "ALIGN_MAX"
    assert ds["minAlignmentPeriod"] == "60s"
    assert d.LUSTRE_WRITE in ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"]


def test_gpu_charts_group_per_node(dash):
    for title, ds in data_sets(dash):
        if title.startswith("GPU"):
            assert ds["timeSeriesQuery"]["timeSeriesFilter"]["aggregation"]["groupByFields"] == [
                "resource.label.instance"
            ]


def test_tiles_fit_the_columns_and_do_not_overlap(dash):
    layout = dash["mosaicLayout"]
    cols = layout["columns"]
    assert 1 <= cols <= 48
    rects = []
    for t in layout["tiles"]:
        x, y, w, h = t.get("xPos", 0), t.get("yPos", 0), t["width"], t["height"]
        assert x >= 0 and y >= 0 and w >= 1 and h >= 1 and x + w <= cols, t["widget"]["title"]
        rects.append((x, y, x + w, y + h, t["widget"]["title"]))
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, (a[4], b[4])


def test_layout_refuses_a_tile_wider_than_the_grid():
    w = d.Widget("x", d.XyChart((), "y"))
    with pytest.raises(ValueError, match="does not fit"):
        d.MosaicLayout(12, (d.Tile(6, 0, 8, 4, w),))


def test_output_is_deterministic_and_key_sorted():
    a = d.dashboard_json(**STACK)
    b = d.dashboard_json(**dict(reversed(list(STACK.items()))))
    assert a == b
    assert a == json.dumps(json.loads(a), sort_keys=True, indent=2)


def test_provisioned_throughput_draws_thresholds_only_when_given(dash):
    plain = d.build_dashboard(**STACK)
    assert not any("thresholds" in t["widget"]["xyChart"] for t in plain["mosaicLayout"]["tiles"])
    bursts = [t for t in dash["mosaicLayout"]["tiles"] if t["widget"]["title"].startswith("Checkpoint bursts")][0]
    # 8.789 GB/s x 60 s = 527.34 GB per minute at most
    assert bursts["widget"]["xyChart"]["thresholds"][0]["value"] == pytest.approx(8_789_062_500 * 60)


def test_empty_stack_names_are_refused():
    with pytest.raises(ValueError, match="lustre_instance"):
        d.build_dashboard(**{**STACK, "lustre_instance": ""})


def test_driver_logs_query_targets_this_ray_head():
    q = d.driver_logs_query(
        project="my-project-123", cluster_name="nemo-dev-gke", namespace="nemo-rl", ray_cluster_name="nemo-dev-ray"
    )
    lines = q.splitlines()
    assert 'resource.type="k8s_container"' in lines
    assert 'resource.labels.cluster_name="nemo-dev-gke"' in lines
    assert 'resource.labels.namespace_name="nemo-rl"' in lines
    assert 'labels."k8s-pod/ray_io/cluster"="nemo-dev-ray"' in lines
    assert 'labels."k8s-pod/ray_io/node-type"="head"' in lines
    assert "jsonPayload.ray_submission_id:*" in lines
    one = d.driver_logs_query(
        project="p", cluster_name="c", namespace="n", ray_cluster_name="r", submission_id="grpo-42"
    )
    assert 'jsonPayload.ray_submission_id="grpo-42"' in one.splitlines()


def test_dashboard_url_accepts_an_id_or_a_resource_name_or_an_output():
    want = "https://console.cloud.google.com/monitoring/dashboards/custom/abc-123?project=my-project-123"
    assert d.dashboard_url("my-project-123", "abc-123") == want
    assert d.dashboard_url("my-project-123", "projects/my-project-123/dashboards/abc-123") == want

    class FakeOutput:
        def __init__(self, value):
            self.value = value

        def apply(self, fn):
            return FakeOutput(fn(self.value))

    assert d.dashboard_url("my-project-123", FakeOutput("projects/1234/dashboards/abc-123")).value == want


def _proto3_defaults(value, path=""):
    """Paths holding a value the Monitoring API leaves out when it returns a dashboard: 0, false, "", [], {}."""
    if isinstance(value, dict):
        if not value and path:
            yield path
        for k, v in value.items():
            yield from _proto3_defaults(v, f"{path}.{k}")
    elif isinstance(value, list):
        if not value:
            yield path
        for i, v in enumerate(value):
            yield from _proto3_defaults(v, f"{path}[{i}]")
    elif value in (0, "") and not isinstance(value, bool) or value is False:
        yield path


def _provider_suppresses(state: dict, config: dict) -> bool:
    """The provider's diff suppression, ported: drop from the state every key the config lacks, then compare
    (terraform-provider-google-beta@93c65b2d monitoring/resource_monitoring_dashboard.go:37-73)."""

    def remove_computed(old, new):
        for k in list(old):
            if new.get(k) is None:
                del old[k]
            elif isinstance(old[k], dict):
                old[k] = remove_computed(old[k], new[k])
            elif isinstance(old[k], list):
                for i, j in enumerate(old[k]):
                    if isinstance(j, dict) and len(new[k]) > i:
                        old[k][i] = remove_computed(j, new[k][i])
        return old

    return remove_computed(json.loads(json.dumps(state)), config) == config


def test_a_clean_apply_then_preview_shows_no_dashboard_change(dash):
    # The API omits zero-valued fields (tile positions; magic-modules#18515, terraform-provider-google#16173,
    # #26766 for empty arrays and strings). What it returns is our JSON without them, plus fields it adds.
    assert list(_proto3_defaults(dash)) == []
    returned = json.loads(json.dumps(dash))
    returned["etag"] = "abc"  # an API-managed field the provider's suppression drops
    assert _provider_suppresses(returned, dash)


def test_the_provider_suppression_port_sees_a_zero_position_as_a_change():
    # The failure the test above guards against: a config with "xPos": 0 against the API's answer without it.
    config = {"mosaicLayout": {"tiles": [{"xPos": 0, "width": 6}]}}
    returned = {"mosaicLayout": {"tiles": [{"width": 6}]}}
    assert not _provider_suppresses(returned, config)
