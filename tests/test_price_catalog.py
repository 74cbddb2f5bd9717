"""Prices from the Cloud Billing Catalog (infra/price_catalog.py) and what the estimate makes of them (core/cost.py).

A loopback HTTP server plays the catalog and the OAuth token endpoint: it serves the pages in
tests/reference/billing_catalog/ (the API's shapes, hand-built, with round prices: see its SOURCES.md) page by page,
and real google-auth finds a service-account key through Application Default Credentials
(GOOGLE_APPLICATION_CREDENTIALS) whose token_uri is the loopback server. Totals are worked by hand from those pages.
Nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from core import catalog, cost
from core.catalog import billing
from core.settings import load_settings
from infra import price_catalog as pc

pytestmark = pytest.mark.unit

PAGES = Path(__file__).resolve().parent / "reference" / "billing_catalog"
SERVICE_FILES = {"6F81-5844-456A": "compute", "CCD8-9BF1-090E": "gke", "95FF-2EF5-5EA1": "storage"}
SERVICE_FILES["TEST-0000-0001"] = "lustre"
NEXT_PAGE = {"services-page-2": "services-2", "compute-page-2": "compute-2"}
TOKEN = "loopback-access-token"
SECRETS = {"hfToken": "s", "wandbApiKey": "s", "rayAuthToken": "s"}
T0 = datetime(2026, 12, 2, 9, 0, tzinfo=timezone.utc)


class Catalog:
    base = ""

    def __init__(self):
        self.reset()

    def reset(self):
        self.token_mode = "ok"  # or "refuse"
        self.mode = "ok"  # or "forbidden", "slow"
        self.requests: list[tuple[str, str, dict, str]] = []


@pytest.fixture(scope="module")
def server():
    state = Catalog()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status: int, body: dict):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.requests.append(("POST", self.path, {}, ""))
            if state.token_mode == "refuse":
                return self.reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
            return self.reply(200, {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"})

        def do_GET(self):
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            state.requests.append(("GET", url.path, query, self.headers.get("Authorization", "")))
            if state.mode == "slow":
                time.sleep(2)
            if state.mode == "forbidden":
                return self.reply(
                    403,
                    {
                        "error": {
                            "code": 403,
                            "message": "Cloud Billing API has not been used in project 123 before or it is disabled.",
                            "status": "PERMISSION_DENIED",
                        }
                    },
                )
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self.reply(401, {"error": {"code": 401, "message": "no token", "status": "UNAUTHENTICATED"}})
            parts = url.path.strip("/").split("/")  # v1/services[/<id>/skus]
            token = query.get("pageToken", "")
            if parts == ["v1", "services"]:
                name = NEXT_PAGE[token] if token else "services-1"
            elif len(parts) == 4 and parts[3] == "skus" and parts[2] in SERVICE_FILES:
                name = NEXT_PAGE[token] if token else f"{SERVICE_FILES[parts[2]]}-1"
            else:
                return self.reply(404, {"error": {"code": 404, "message": "no such path", "status": "NOT_FOUND"}})
            return self.reply(200, json.loads((PAGES / f"{name}.json").read_text()))

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture
def adc(server, key_pem, tmp_path, monkeypatch):
    """Application Default Credentials: a service-account key file whose token endpoint is the loopback server."""
    server.reset()
    path = tmp_path / "adc.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "example-project",
                "private_key_id": "0" * 40,
                "private_key": key_pem,
                "client_email": "pricing@example-project.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": f"{server.base}/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return server


def request(**changes) -> pc.PriceRequest:
    base = dict(
        region="us-central1",
        autopilot=False,
        platform=True,
        gpu_machine_type="a3-ultragpu-8g",
        gpus_per_node=8,
        gpu_vcpus=224,
        gpu_memory_gib=2952,
        cpu_machine_type="n2-standard-16",
        lustre_tier=1000,
        lustre_capacity_gib=9000,
    )
    return pc.PriceRequest(**{**base, **changes})


def read(server, tmp_path, req=None, **kw) -> cost.ReadPrices:
    kw.setdefault("now", lambda: T0)
    return pc.read_prices(req or request(), endpoint=f"{server.base}/v1", cache_dir=tmp_path / "cache", **kw)


def usd(r: cost.ReadPrices, k: str) -> float:
    return r.prices[k].usd


def test_a_standard_platform_is_priced_from_every_page_of_its_services_skus(adc, tmp_path):
    r = read(adc, tmp_path)
    # By hand from the pages: a3-ultragpu-8g = 224 vCPU x core + 2,952 GiB x RAM + 8 x H200.
    assert usd(r, "gpuNodeList") == pytest.approx(224 * 0.03 + 2952 * 0.004 + 8 * 10.0)  # 98.528
    assert usd(r, "gpuNodeSpot") == pytest.approx(224 * 0.012 + 2952 * 0.0016 + 8 * 4.0)  # 39.4112
    assert usd(r, "gpuNodeFlexStart") == pytest.approx(224 * 0.015 + 2952 * 0.002 + 8 * 5.0)  # 49.264
    assert usd(r, "cpuNode") == pytest.approx(16 * 0.03 + 64 * 0.004)  # n2-standard-16: 0.736
    assert (usd(r, "headVcpuHour"), usd(r, "headMemoryGibHour")) == (pytest.approx(0.03), pytest.approx(0.004))
    assert usd(r, "lustreGibMonth") == pytest.approx(0.73)  # the 1000-Perf SKU, not another tier's
    assert usd(r, "storageGibMonth") == pytest.approx(0.02)  # past the free tier; not the dual-region twin
    assert not r.missing and not r.notes
    origin = r.prices["gpuNodeSpot"].origin
    assert origin.startswith("Cloud Billing Catalog (read 2026-12-02): 224 x Spot Preemptible A3 Ultra Instance Core")
    assert "8 x H200 141GB GPU attached to Spot Preemptible VMs running in Americas" in origin
    gets = [(path, q) for method, path, q, _ in adc.requests if method == "GET"]
    # Both pages of services.list and of Compute Engine's SKUs, each page of 5,000 in USD, with the bearer token.
    assert [q.get("pageToken", "") for p, q in gets if p == "/v1/services"] == ["", "services-page-2"]
    compute = [q for p, q in gets if p == "/v1/services/6F81-5844-456A/skus"]
    assert [q.get("pageToken", "") for q in compute] == ["", "compute-page-2"]
    assert all(q["pageSize"] == "5000" and q["currencyCode"] == "USD" for q in compute)
    assert {auth for m, _, _, auth in adc.requests if m == "GET"} == {f"Bearer {TOKEN}"}
    assert [m for m, p, _, _ in adc.requests if p == "/token"] == ["POST"]  # one token for every page


def test_a_missing_sku_is_named_and_what_the_catalog_has_is_still_priced(adc, tmp_path):
    r = read(adc, tmp_path, request(gpu_machine_type="a4-highgpu-8g", gpu_vcpus=224, gpu_memory_gib=3968))
    # A4 has B200 slices on-demand and spot, no flex-start slice and no core or RAM SKU at all.
    assert usd(r, "gpuNodeList") == pytest.approx(8 * 12.0) and usd(r, "gpuNodeSpot") == pytest.approx(8 * 5.0)
    assert r.missing["gpuNodeFlexStart"].startswith("'Nvidia B200 (1 gpu slice)' (flex-start, us-central1)")
    (spot_note,) = [n for n in r.notes if n.startswith("gpuNodeSpot:")]
    assert "'A4 Instance Core' (spot, us-central1)" in spot_note and "'A4 Instance Ram'" in spot_note
    assert spot_note.endswith("the node is priced from its GPUs")
    s = load_settings("dev", "example-project", values={}, secret_state=SECRETS)
    assert s.gpu.accelerator.machine_type == "a4-highgpu-8g"
    est = cost.estimate(s, r)
    flex = next(line for line in est.lines if line.capacity_model == "flex-start")
    assert flex.usd_each is None
    assert "no Cloud Billing Catalog SKU 'Nvidia B200 (1 gpu slice)' (flex-start" in flex.origin
    assert "nemo-rl-gke:prices.gpuNodeFlexStart" in flex.origin
    assert any("(flex-start, us-central1)" in m for m in est.missing_skus)
    out = est.as_output()
    assert out["missingSkus"] == list(est.missing_skus) and spot_note in out["notes"]
    assert "missing SKU: 'Nvidia B200 (1 gpu slice)'" in est.format()


def test_user_prices_win_then_the_catalog_then_the_dated_catalog(adc, tmp_path):
    r = read(adc, tmp_path)
    s = load_settings(
        "dev",
        "example-project",
        values={"gpuType": "nvidia-h200-141gb", "prices": {"gpuNodeSpot": 50.0}},
        secret_state=SECRETS,
    )
    est = cost.estimate(s, r)
    by_model = {line.capacity_model: line for line in est.lines if line.capacity_model}
    assert by_model["spot"].usd_each == 50.0 and by_model["spot"].origin.startswith("user-supplied")
    assert by_model["flex-start"].usd_each == pytest.approx(49.264)
    assert by_model["list-price"].origin.startswith("Cloud Billing Catalog (read 2026-12-02)")
    (bucket,) = [n for n in est.notes if n.startswith("bucket")]
    assert "Cloud Billing Catalog" in bucket
    # Nothing read: the dated catalog's us-central1 Cloud Storage price, the rest unknown.
    fallback = cost.estimate(s, cost.NOT_READ)
    (bucket,) = [n for n in fallback.notes if n.startswith("bucket")]
    assert f"catalog: {catalog.GCS_STANDARD_GIB_MONTH['us-central1'].source}" in bucket
    assert next(line for line in fallback.lines if line.capacity_model == "list-price").usd_each is None


def test_refused_credentials_fall_back_with_one_line_and_no_catalog_request(adc, tmp_path):
    adc.token_mode = "refuse"
    r = read(adc, tmp_path)
    assert not r.prices and not r.missing
    (note,) = r.notes
    assert "\n" not in note
    assert note.startswith("prices: not read from the Cloud Billing Catalog (the credentials were refused: ")
    assert "invalid_grant" in note and note.endswith("the dated catalog and nemo-rl-gke:prices price this estimate")
    assert [m for m, *_ in adc.requests] == ["POST"]
    s = load_settings("dev", "example-project", values={}, secret_state=SECRETS)
    est = cost.estimate(s, r)
    assert note in est.notes and f"  note: {note}" in est.format()


def test_no_application_default_credentials_fall_back_with_one_line(server, tmp_path, monkeypatch):
    server.reset()
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    (note,) = read(server, tmp_path).notes
    assert "no Application Default Credentials" in note and "gcloud auth application-default login" in note
    assert "\n" not in note and server.requests == []


def test_an_api_error_falls_back_naming_its_status(adc, tmp_path):
    adc.mode = "forbidden"
    (note,) = read(adc, tmp_path).notes
    assert "HTTP 403 PERMISSION_DENIED: Cloud Billing API has not been used in project 123" in note


def test_a_slow_catalog_is_abandoned_within_the_budget(adc, tmp_path):
    adc.mode = "slow"
    started = time.monotonic()
    r = read(adc, tmp_path, budget_seconds=0.3)
    assert time.monotonic() - started < 1.0
    (note,) = r.notes
    assert "no answer within 0.3 s" in note and not r.prices


def test_the_cache_serves_a_day_then_the_catalog_is_read_again(adc, tmp_path):
    first = read(adc, tmp_path)
    calls = len(adc.requests)
    assert calls and (tmp_path / "cache" / "billing-catalog-us-central1-compute.json").exists()
    later = read(adc, tmp_path, now=lambda: T0 + timedelta(hours=23))
    assert len(adc.requests) == calls  # nothing asked: the day's cache
    assert later.prices == first.prices  # the date quoted is the day the SKUs were read
    read(adc, tmp_path, now=lambda: T0 + timedelta(hours=25))
    assert len(adc.requests) > calls
    next_day = read(adc, tmp_path, now=lambda: T0 + timedelta(hours=26))
    assert "(read 2026-12-03)" in next_day.prices["gpuNodeList"].origin
    # A damaged cache file is read past, never trusted.
    (tmp_path / "cache" / "billing-catalog-us-central1-compute.json").write_text("{not json")
    assert read(adc, tmp_path, now=lambda: T0 + timedelta(hours=26)).prices == next_day.prices


def test_autopilot_heads_are_priced_per_vcpu_and_missing_gpu_pod_skus_are_named(adc, tmp_path):
    r = read(adc, tmp_path, request(autopilot=True, gpu_machine_type="a4-highgpu-8g"))
    # 'Autopilot Pod mCPU Requests' is per mCPU-hour: $0.00004 x 1,000 = $0.04 per vCPU-hour; not the Spot or
    # Balanced twins ($0.012, $0.05).
    assert usd(r, "headVcpuHour") == pytest.approx(0.04) and usd(r, "headMemoryGibHour") == pytest.approx(0.004)
    for k, word in (("autopilotGpuPodHour", "on-demand"), ("autopilotGpuPodSpot", "spot")):
        assert r.missing[k] == f"'Autopilot B200 GPU Pod' ({word}, us-central1)"
    # Autopilot reads Kubernetes Engine, not Compute Engine.
    assert not any(p.startswith("/v1/services/6F81") for _, p, _, _ in adc.requests)
    s = load_settings("dev", "example-project", values={"clusterMode": "autopilot"}, secret_state=SECRETS)
    head = [line for line in cost.estimate(s, r).lines if line.item.startswith("Ray head")]
    # By hand: 8 vCPU x $0.04 + 32 GiB x $0.004 = $0.448 an hour.
    assert sum(line.usd_per_hour or 0 for line in head) == pytest.approx(8 * 0.04 + 32 * 0.004)


def test_an_experiments_run_is_its_gpu_nodes_and_head_for_steps_times_step_seconds(adc, tmp_path):
    s = load_settings(
        "exp1",
        "example-project",
        values={
            "platformStack": "org/proj/codelab",
            "gpuType": "nvidia-h200-141gb",
            "stepSeconds": 90,
            # What a streaming platform's contract carries (core/settings/platform.py): the repository its nodes read.
            "imageRepository": "us-central1-docker.pkg.dev/example-project/codelab-images",
        },
        secret_state=SECRETS,
    )
    req = pc.PriceRequest.of(s)
    assert not req.platform and req.services == ("compute",)
    r = read(adc, tmp_path, req)
    assert not any("95FF" in p or "TEST-0000" in p for _, p, _, _ in adc.requests)  # no bucket, no Lustre
    est = cost.estimate(s, r)
    hours = s.recipe.max_num_steps * 90 / 3600
    nodes = s.worker_replicas
    head = s.workload.head_cpu * 0.03 + s.workload.head_memory_gib * 0.004
    spot = nodes * (224 * 0.012 + 2952 * 0.0016 + 8 * 4.0)
    assert est.run_hours == pytest.approx(hours)
    assert est.run_cost("spot") == pytest.approx((spot + head) * hours)
    out = est.as_output()["run"]
    assert out["usdByCapacityModel"]["spot"] == round((spot + head) * hours, 2)
    assert out["gpuHours"] == pytest.approx(round(hours * nodes * 8, 3))
    # Per GPU-hour for the team view, from the exported estimate: the spot node / its 8 GPUs.
    assert cost.usd_per_gpu_hour(est.as_output(), "spot") == pytest.approx((spot / nodes) / 8)
    assert cost.usd_per_gpu_hour(cost.estimate(s, cost.NOT_READ).as_output(), "spot") is None


def test_several_skus_at_different_prices_are_named_never_guessed_between():
    page = json.loads((PAGES / "compute-2.json").read_text())["skus"]
    twin = json.loads(json.dumps(next(s for s in page if s["description"] == "N2 Instance Core running in Americas")))
    twin["skuId"] = "TWIN"
    twin["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = 31_000_000
    skus = [pc.compact(s) for s in page + [twin]]
    rule = billing.cpu_machine_skus("n2-standard-16")
    assert rule is not None
    hit, why = pc.find(skus, rule.core, billing.LIST, "us-central1")
    assert hit is None and why == "'N2 Instance Core' (on-demand, us-central1): 2 SKUs match at different prices"


def test_each_sku_is_classified_by_capacity_model_as_the_catalog_spells_it():
    cases = {
        ("H200 141GB GPU running in Americas", "OnDemand"): billing.LIST,
        ("H200 141GB GPU attached to Spot Preemptible VMs running in Americas", "Preemptible"): billing.SPOT,
        ("DWS Defined Duration A3 Ultra Instance Core running in Americas", "OnDemand"): billing.FLEX_START,
        ("DWS Calendar Mode H200 141GB GPU running in Americas", "OnDemand"): None,
        ("Commitment v1: H200 141GB GPU running in Americas for 1 Year", "Commit1Yr"): None,
        ("Reserved H200 141GB GPU in Americas", "OnDemand"): None,
        ("N2 Sole Tenancy Instance Core running in Americas", "OnDemand"): None,
    }
    for (description, usage), model in cases.items():
        assert billing.capacity_model(description, usage) == model, description


def test_gpu_hours_so_far_add_up_the_admitted_intervals_until_now():
    now = T0 + timedelta(hours=4)
    intervals = [
        cost.Admitted(16, T0, T0 + timedelta(hours=2)),  # ended: 32 GPU-hours
        cost.Admitted(8, T0 + timedelta(hours=2)),  # still admitted: 2 h x 8 = 16
        cost.Admitted(8, T0 + timedelta(hours=3), T0 + timedelta(hours=9)),  # ends after now: 1 h x 8 = 8
        cost.Admitted(64, T0 + timedelta(hours=5)),  # not started: 0
    ]
    assert cost.gpu_usage(intervals, now) == cost.GpuUsage(56.0, None)
    assert cost.gpu_usage(intervals, now, usd_per_gpu_hour=5.0).usd == pytest.approx(280.0)
    with pytest.raises(ValueError):
        cost.gpu_usage([cost.Admitted(8, datetime(2026, 12, 2, 9, 0))], now)
    with pytest.raises(ValueError):
        cost.gpu_usage([cost.Admitted(8, T0, T0 - timedelta(hours=1))], now)
