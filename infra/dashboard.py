"""The stack's Cloud Monitoring dashboard, as typed Python rendered to `projects.dashboards` v1 JSON.

Pure: builds a dict / JSON string (and a Cloud Logging query, and a console URL); the Observability
component passes the JSON to a `gcp.monitoring.Dashboard`. Charts:
  * Managed Lustre read and write throughput and capacity of THIS instance,
  * checkpoint bursts: Lustre writes at 60 s resolution with a max aligner, so a burst survives zooming out,
  * GPU utilisation and GPU memory per node of THIS cluster (GKE-managed DCGM exporter via Managed Prometheus),
  * Ray actor and task states in THIS cluster's workload namespace (RayOperator add-on metrics collection).

Every metric comes from `METRICS`, the one catalog that names each metric's monitored resource, labels and the
document that defines it. Nothing is fetched: the sources are notes for the reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import quote

# --- sources ---------------------------------------------------------------------------------------------
SRC_LUSTRE_METRICS = "https://cloud.google.com/monitoring/api/metrics_gcp_i_o#gcp-lustre"
SRC_LUSTRE_MONITORING = "https://cloud.google.com/managed-lustre/docs/monitoring"
SRC_RESOURCES = "https://cloud.google.com/monitoring/api/resources"
SRC_PROMETHEUS_TARGET = "https://cloud.google.com/monitoring/agent/ops-agent/prometheus#prometheus_target"
# Managed Prometheus writes `prometheus.googleapis.com/<name>/<kind>` on prometheus_target, filtered by
# project_id/location/cluster/namespace/instance as in Google's own end-to-end test of the collector.
SRC_GMP_NAMING = (
    "https://github.com/GoogleCloudPlatform/prometheus-engine/blob/main/e2e/collector_test.go "
    '(metric.type="prometheus.googleapis.com/up/gauge" on resource.type="prometheus_target")'
)
SRC_DCGM_GMP = "https://cloud.google.com/stackdriver/docs/managed-prometheus/exporters/nvidia-dcgm"
SRC_DCGM_COUNTERS = "https://github.com/NVIDIA/dcgm-exporter/blob/main/etc/default-counters.csv"
SRC_RAY_GKE = "https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/how-to/collect-view-logs-metrics"
SRC_RAY_METRICS = "https://docs.ray.io/en/latest/ray-observability/reference/system-metrics.html"


# --- metric catalog --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MonitoredResource:
    type: str
    labels: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Metric:
    type: str
    resource: MonitoredResource
    kind: str  # GAUGE / DELTA, as the metric descriptor says
    unit: str
    labels: tuple[str, ...]  # metric labels usable in filters and groupByFields
    description: str
    sources: tuple[str, ...]


LUSTRE_INSTANCE = MonitoredResource(
    "lustre.googleapis.com/Instance", ("resource_container", "location", "instance_id"), SRC_RESOURCES
)
# For GKE Managed Prometheus `cluster` is the GKE cluster name, `location` the cluster's location and
# `namespace` the namespace of the scraped pod.
PROMETHEUS_TARGET = MonitoredResource(
    "prometheus_target", ("project_id", "location", "cluster", "namespace", "job", "instance"), SRC_PROMETHEUS_TARGET
)

_LUSTRE_TARGET_LABELS = ("component", "target")  # component: "ost" or "mdt"; target: the device name

METRICS: dict[str, Metric] = {
    m.type: m
    for m in (
        Metric(
            "lustre.googleapis.com/instance/read_bytes_total",
            LUSTRE_INSTANCE,
            "DELTA",
            "By",
            _LUSTRE_TARGET_LABELS + ("operation",),
            "Data bytes read from one OST; sampled every 60 s, visible after up to 120 s.",
            (SRC_LUSTRE_METRICS, SRC_LUSTRE_MONITORING),
        ),
        Metric(
            "lustre.googleapis.com/instance/write_bytes_total",
            LUSTRE_INSTANCE,
            "DELTA",
            "By",
            _LUSTRE_TARGET_LABELS + ("operation",),
            "Data bytes written to one OST; sampled every 60 s, visible after up to 120 s.",
            (SRC_LUSTRE_METRICS, SRC_LUSTRE_MONITORING),
        ),
        Metric(
            "lustre.googleapis.com/instance/capacity_bytes",
            LUSTRE_INSTANCE,
            "GAUGE",
            "By",
            _LUSTRE_TARGET_LABELS,
            "Bytes provisioned for one Lustre target; sum the OSTs for the data capacity.",
            (SRC_LUSTRE_METRICS,),
        ),
        Metric(
            "lustre.googleapis.com/instance/available_bytes",
            LUSTRE_INSTANCE,
            "GAUGE",
            "By",
            _LUSTRE_TARGET_LABELS,
            "Bytes of one target available to non-root users (what the Ray pods can still write).",
            (SRC_LUSTRE_METRICS,),
        ),
        Metric(
            "prometheus.googleapis.com/DCGM_FI_DEV_GPU_UTIL/gauge",
            PROMETHEUS_TARGET,
            "GAUGE",
            "%",
            ("gpu", "UUID"),
            "GPU utilisation (in %), one series per GPU, from the DCGM exporter.",
            (SRC_DCGM_COUNTERS, SRC_DCGM_GMP, SRC_GMP_NAMING),
        ),
        Metric(
            "prometheus.googleapis.com/DCGM_FI_DEV_FB_USED/gauge",
            PROMETHEUS_TARGET,
            "GAUGE",
            "MiBy",
            ("gpu", "UUID"),
            "Framebuffer (GPU) memory used, in MiB, one series per GPU, from the DCGM exporter.",
            (SRC_DCGM_COUNTERS, SRC_DCGM_GMP, SRC_GMP_NAMING),
        ),
        Metric(
            "prometheus.googleapis.com/ray_actors/gauge",
            PROMETHEUS_TARGET,
            "GAUGE",
            "1",
            ("Name", "State", "SessionName", "JobId"),
            "Current number of actors by State (e.g. ALIVE, DEAD, RESTARTING) and class Name.",
            (SRC_RAY_METRICS, SRC_RAY_GKE, SRC_GMP_NAMING),
        ),
        Metric(
            "prometheus.googleapis.com/ray_tasks/gauge",
            PROMETHEUS_TARGET,
            "GAUGE",
            "1",
            ("Name", "State", "IsRetry", "SessionName", "JobId"),
            "Current number of tasks (remote functions and actor calls) by State (RUNNING, FINISHED, FAILED...).",
            (SRC_RAY_METRICS, SRC_RAY_GKE, SRC_GMP_NAMING),
        ),
    )
}

LUSTRE_READ = "lustre.googleapis.com/instance/read_bytes_total"
LUSTRE_WRITE = "lustre.googleapis.com/instance/write_bytes_total"
LUSTRE_CAPACITY = "lustre.googleapis.com/instance/capacity_bytes"
LUSTRE_AVAILABLE = "lustre.googleapis.com/instance/available_bytes"
GPU_UTIL = "prometheus.googleapis.com/DCGM_FI_DEV_GPU_UTIL/gauge"
GPU_FB_USED = "prometheus.googleapis.com/DCGM_FI_DEV_FB_USED/gauge"
RAY_ACTORS = "prometheus.googleapis.com/ray_actors/gauge"
RAY_TASKS = "prometheus.googleapis.com/ray_tasks/gauge"


# --- dashboard model (camelCase JSON of monitoring.googleapis.com/v1 projects.dashboards) -----------------
@dataclass(frozen=True)
class Aggregation:
    alignment_period_s: int
    per_series_aligner: str
    cross_series_reducer: Optional[str] = None
    group_by_fields: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "alignmentPeriod": f"{self.alignment_period_s}s",
            "perSeriesAligner": self.per_series_aligner,
        }
        if self.cross_series_reducer:
            out["crossSeriesReducer"] = self.cross_series_reducer
        if self.group_by_fields:
            out["groupByFields"] = list(self.group_by_fields)
        return out


@dataclass(frozen=True)
class TimeSeriesFilter:
    metric_type: str
    selectors: tuple[tuple[str, str], ...]  # (field, value) pairs ANDed after metric.type and resource.type
    aggregation: Aggregation

    def __post_init__(self):
        if self.metric_type not in METRICS:
            raise ValueError(f"{self.metric_type} is not in the documented metric catalog (dashboard.METRICS)")

    @property
    def filter(self) -> str:
        terms = [("metric.type", self.metric_type), ("resource.type", METRICS[self.metric_type].resource.type)]
        return " ".join(f"{k}={_quote(v)}" for k, v in terms + list(self.selectors))

    def to_json(self) -> dict[str, Any]:
        return {"filter": self.filter, "aggregation": self.aggregation.to_json()}


@dataclass(frozen=True)
class TimeSeriesQuery:
    time_series_filter: TimeSeriesFilter

    def to_json(self) -> dict[str, Any]:
        return {"timeSeriesFilter": self.time_series_filter.to_json()}


@dataclass(frozen=True)
class DataSet:
    query: TimeSeriesQuery
    legend_template: Optional[str] = None
    plot_type: str = "LINE"
    min_alignment_period_s: Optional[int] = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"timeSeriesQuery": self.query.to_json(), "plotType": self.plot_type, "targetAxis": "Y1"}
        if self.legend_template:
            out["legendTemplate"] = self.legend_template
        if self.min_alignment_period_s:
            out["minAlignmentPeriod"] = f"{self.min_alignment_period_s}s"
        return out


@dataclass(frozen=True)
class Threshold:
    value: float
    label: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "label": self.label, "targetAxis": "Y1"}


@dataclass(frozen=True)
class XyChart:
    data_sets: tuple[DataSet, ...]
    y_label: str
    thresholds: tuple[Threshold, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataSets": [d.to_json() for d in self.data_sets],
            "yAxis": {"label": self.y_label, "scale": "LINEAR"},
            "chartOptions": {"mode": "COLOR"},
        }
        if self.thresholds:
            out["thresholds"] = [t.to_json() for t in self.thresholds]
        return out


@dataclass(frozen=True)
class Widget:
    title: str
    xy_chart: XyChart

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "xyChart": self.xy_chart.to_json()}


@dataclass(frozen=True)
class Tile:
    x_pos: int
    y_pos: int
    width: int
    height: int
    widget: Widget

    def to_json(self) -> dict[str, Any]:
        # Zero positions are left out: the Monitoring API omits them when it returns the dashboard, and the
        # provider's diff only drops keys the config lacks (terraform-provider-google-beta@93c65b2d
        # google-beta/services/monitoring/resource_monitoring_dashboard.go:37-73 removeComputedKeys), so a zero
        # in the config is a change on every preview (hashicorp/terraform-provider-google#16173;
        # GoogleCloudPlatform/magic-modules#18515, closed unmerged).
        position = {k: v for k, v in (("xPos", self.x_pos), ("yPos", self.y_pos)) if v}
        return {
            **position,
            "width": self.width,
            "height": self.height,
            "widget": self.widget.to_json(),
        }


@dataclass(frozen=True)
class MosaicLayout:
    columns: int
    tiles: tuple[Tile, ...]

    def __post_init__(self):
        if not 1 <= self.columns <= 48:
            raise ValueError("a mosaic layout has 1 to 48 columns")
        for t in self.tiles:
            if t.x_pos < 0 or t.y_pos < 0 or t.width < 1 or t.height < 1 or t.x_pos + t.width > self.columns:
                raise ValueError(f"tile {t.widget.title!r} does not fit in {self.columns} columns")

    def to_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "tiles": [t.to_json() for t in self.tiles]}


@dataclass(frozen=True)
class Dashboard:
    display_name: str
    layout: MosaicLayout

    def to_json(self) -> dict[str, Any]:
        return {"displayName": self.display_name, "mosaicLayout": self.layout.to_json()}


# --- the stack's dashboard -------------------------------------------------------------------------------
COLUMNS = 48
_FULL, _HEIGHT = COLUMNS, 16

# Lustre samples every 60 s, so 60 s is the finest alignment that means anything.
LUSTRE_SAMPLE_S = 60
TREND_ALIGNMENT_S = 60


def _lustre(instance: str, zone: str, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (("resource.label.instance_id", instance), ("resource.label.location", zone)) + extra


def _gke(project: str, cluster: str, location: str, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (
        ("resource.label.project_id", project),
        ("resource.label.cluster", cluster),
        ("resource.label.location", location),
    ) + extra


def build_dashboard(
    *,
    display_name: str,
    project: str,
    cluster_name: str,
    cluster_location: str,
    lustre_instance: str,
    lustre_zone: str,
    namespace: str,
    ray_cluster_name: str,
    lustre_throughput_bytes_per_s: Optional[float] = None,
) -> dict[str, Any]:
    """The dashboard as the v1 REST body. `lustre_throughput_bytes_per_s` (the instance's provisioned
    aggregate, see catalog.LustreTier.throughput_bytes_per_s) draws the ceiling on the throughput charts."""
    for name, value in (
        ("display_name", display_name),
        ("project", project),
        ("cluster_name", cluster_name),
        ("cluster_location", cluster_location),
        ("lustre_instance", lustre_instance),
        ("lustre_zone", lustre_zone),
        ("namespace", namespace),
        ("ray_cluster_name", ray_cluster_name),
    ):
        if not value:
            raise ValueError(f"build_dashboard: {name} must not be empty")

    lustre = _lustre(lustre_instance, lustre_zone)
    per_instance = ("resource.label.instance_id",)
    rate = Aggregation(TREND_ALIGNMENT_S, "ALIGN_RATE", "REDUCE_SUM", per_instance)
    ceiling: tuple[Threshold, ...] = ()
    if lustre_throughput_bytes_per_s:
        ceiling = (
            Threshold(lustre_throughput_bytes_per_s, f"provisioned {lustre_throughput_bytes_per_s / 1e9:.3g} GB/s"),
        )

    def chart(title, metric_type, selectors, aggregation, y_label, legend, thresholds=(), min_align=None):
        return Widget(
            title,
            XyChart(
                (
                    DataSet(
                        TimeSeriesQuery(TimeSeriesFilter(metric_type, selectors, aggregation)),
                        legend,
                        min_alignment_period_s=min_align,
                    ),
                ),
                y_label,
                thresholds,
            ),
        )

    read = chart(
        f"Lustre read throughput: {lustre_instance}",
        LUSTRE_READ,
        lustre,
        rate,
        "bytes/s",
        "read ${resource.labels.instance_id}",
        ceiling,
    )
    write = chart(
        f"Lustre write throughput: {lustre_instance}",
        LUSTRE_WRITE,
        lustre,
        rate,
        "bytes/s",
        "write ${resource.labels.instance_id}",
        ceiling,
    )

    # Checkpoint bursts: a DELTA metric under ALIGN_MAX keeps the busiest 60 s sample of each OST in a window,
    # so when the console widens the alignment for a long time range the burst stays visible (ALIGN_RATE would
    # average it away). Summed over OSTs it reads as bytes written in the peak minute.
    bursts_threshold: tuple[Threshold, ...] = ()
    if lustre_throughput_bytes_per_s:
        bursts_threshold = (
            Threshold(lustre_throughput_bytes_per_s * LUSTRE_SAMPLE_S, f"provisioned x {LUSTRE_SAMPLE_S} s"),
        )
    bursts = chart(
        f"Checkpoint bursts: peak Lustre writes per {LUSTRE_SAMPLE_S} s on {lustre_instance}",
        LUSTRE_WRITE,
        lustre,
        Aggregation(LUSTRE_SAMPLE_S, "ALIGN_MAX", "REDUCE_SUM", per_instance),
        f"bytes per {LUSTRE_SAMPLE_S} s",
        "peak write ${resource.labels.instance_id}",
        bursts_threshold,
        min_align=LUSTRE_SAMPLE_S,
    )

    # Data capacity is the OSTs'; the MDTs hold metadata. Used = provisioned - available (no filter arithmetic
    # in a plain timeSeriesFilter, so both lines are drawn).
    osts = _lustre(lustre_instance, lustre_zone, ("metric.label.component", "ost"))
    gauge_sum = Aggregation(TREND_ALIGNMENT_S, "ALIGN_MEAN", "REDUCE_SUM", per_instance)
    capacity = Widget(
        f"Lustre capacity (OSTs): provisioned vs available on {lustre_instance}",
        XyChart(
            (
                DataSet(TimeSeriesQuery(TimeSeriesFilter(LUSTRE_CAPACITY, osts, gauge_sum)), "provisioned"),
                DataSet(TimeSeriesQuery(TimeSeriesFilter(LUSTRE_AVAILABLE, osts, gauge_sum)), "available"),
            ),
            "bytes",
        ),
    )

    # The DCGM exporter is a DaemonSet in a system namespace, not the workload's: one scrape target
    # (resource.label.instance) per GPU node, and no namespace filter.
    gke = _gke(project, cluster_name, cluster_location)
    per_node = ("resource.label.instance",)
    gpu_util = chart(
        f"GPU utilisation per node: {cluster_name}",
        GPU_UTIL,
        gke,
        Aggregation(TREND_ALIGNMENT_S, "ALIGN_MEAN", "REDUCE_MEAN", per_node),
        "% (mean of GPUs)",
        "${resource.labels.instance}",
    )
    gpu_mem = chart(
        f"GPU memory used per node: {cluster_name}",
        GPU_FB_USED,
        gke,
        Aggregation(TREND_ALIGNMENT_S, "ALIGN_MEAN", "REDUCE_SUM", per_node),
        "MiB (sum of GPUs)",
        "${resource.labels.instance}",
    )

    # Ray pods live in the workload namespace; the RayCluster name is not a documented label of the scraped
    # series, so cluster + namespace scope the Ray charts to this stack.
    ray = _gke(project, cluster_name, cluster_location, ("resource.label.namespace", namespace))
    by_state = ("metric.label.State",)
    actors = chart(
        f"Ray actors by state: {ray_cluster_name} ({cluster_name}/{namespace})",
        RAY_ACTORS,
        ray,
        Aggregation(TREND_ALIGNMENT_S, "ALIGN_MEAN", "REDUCE_SUM", by_state),
        "actors",
        "${metric.labels.State}",
    )
    tasks = chart(
        f"Ray tasks by state: {ray_cluster_name} ({cluster_name}/{namespace})",
        RAY_TASKS,
        ray,
        Aggregation(TREND_ALIGNMENT_S, "ALIGN_MEAN", "REDUCE_SUM", by_state),
        "tasks",
        "${metric.labels.State}",
    )

    rows = [(read, write), (bursts,), (capacity, gpu_util), (gpu_mem, actors), (tasks,)]
    tiles: list[Tile] = []
    for r, row in enumerate(rows):
        width = _FULL // len(row)
        tiles.extend(Tile(i * width, r * _HEIGHT, width, _HEIGHT, w) for i, w in enumerate(row))
    return Dashboard(display_name, MosaicLayout(COLUMNS, tuple(tiles))).to_json()


def dashboard_json(**kwargs: Any) -> str:
    """build_dashboard() as a deterministic JSON string (sorted keys), for gcp.monitoring.Dashboard."""
    return json.dumps(build_dashboard(**kwargs), sort_keys=True, indent=2)


def chart_filters(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(chart title, filter) for every data set of a rendered dashboard."""
    return [
        (t["widget"]["title"], d["timeSeriesQuery"]["timeSeriesFilter"]["filter"])
        for t in dashboard["mosaicLayout"]["tiles"]
        for d in t["widget"]["xyChart"]["dataSets"]
    ]


# --- logs and links --------------------------------------------------------------------------------------
def driver_logs_query(
    *,
    project: str,
    cluster_name: str,
    namespace: str,
    ray_cluster_name: str,
    submission_id: Optional[str] = None,
    cluster_owned_by_job: bool = False,
) -> str:
    """Cloud Logging query for the Ray job driver's logs on this stack's Ray head.

    With the add-on's Ray log collection on (`ray_cluster_logging_config`), GKE ships the Ray log files as
    k8s_container entries labelled with the pod's ray.io labels, and driver lines carry
    jsonPayload.ray_submission_id (GKE "Collect and view logs and metrics for Ray clusters"). Without a
    submission id, any driver line of the cluster matches (`:*` tests that the field is present).
    """
    lines = [
        'resource.type="k8s_container"',
        f"resource.labels.project_id={_quote(project)}",
        f"resource.labels.cluster_name={_quote(cluster_name)}",
        f"resource.labels.namespace_name={_quote(namespace)}",
        # A RayJob that owns its cluster names it `<rayjob>-<random suffix>`: match the prefix (names are
        # lowercase RFC 1035, nothing to escape in the regular expression).
        (
            f'labels."k8s-pod/ray_io/cluster"=~{_quote("^" + ray_cluster_name + "-")}'
            if cluster_owned_by_job
            else f'labels."k8s-pod/ray_io/cluster"={_quote(ray_cluster_name)}'
        ),
        'labels."k8s-pod/ray_io/node-type"="head"',
        (
            f"jsonPayload.ray_submission_id={_quote(submission_id)}"
            if submission_id
            else "jsonPayload.ray_submission_id:*"
        ),
    ]
    return "\n".join(lines)


def dashboard_url(project: str, dashboard_id: Any) -> Any:
    """Console URL of a dashboard. `dashboard_id` is the id or the resource name
    (`projects/<p>/dashboards/<id>`, what gcp.monitoring.Dashboard exposes as `id`); a Pulumi Output is
    mapped with `.apply` and an Output comes back."""
    if hasattr(dashboard_id, "apply"):
        return dashboard_id.apply(lambda value: dashboard_url(project, value))
    dash = str(dashboard_id).rstrip("/").rsplit("/", 1)[-1]
    if not dash or not project:
        raise ValueError("dashboard_url needs a project and a dashboard id")
    return (
        f"https://console.cloud.google.com/monitoring/dashboards/custom/{quote(dash, safe='')}"
        f"?project={quote(project, safe='')}"
    )


def _quote(value: str) -> str:
    return json.dumps(str(value))  # double quotes with \" and \\ escaped, as the filter grammars expect
