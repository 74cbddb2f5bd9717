"""The stack's prices from Google's Cloud Billing Catalog API, read at preview and up (not a Pulumi resource).

`read_prices(PriceRequest.of(settings))` returns `core.cost.ReadPrices` for `core.cost.estimate`: the price of each
key the estimate uses (catalog.USER_PRICE_KEYS) that the catalog has for this stack's machine types, region, Lustre
tier and cluster mode, the SKUs it lacks by name, and one-line notes. It never fails and never blocks for long: no
credentials, refused credentials, an API error or the time budget (catalog.CATALOG_READ_SECONDS) give one note and
no prices, and the estimate falls back to `prices` and the dated catalog. Under the offline engine it reads nothing.

How SKUs are found (the rules and their sources: core/catalog/billing.py): each service's SKUs are listed page by
page (`services.skus.list`), kept for the stack's region only, and cached a day per region and service under the
user's cache directory (`$XDG_CACHE_HOME` or `~/.cache`, then `nemo-rl-gke/`) with the date they were read, which the
estimate's lines quote. Credentials are Application Default Credentials (google-auth), scoped to
cloud-billing.readonly; the requests go through the standard library.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

import google.auth
import google.auth.exceptions
import google.auth.transport

from core import catalog, node_fit
from core.catalog import billing
from core.cost import ReadPrice, ReadPrices
from core.keys import key
from core.sdk import running_offline

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

    from core.settings import Settings

CACHE_VERSION = 1
MODEL_WORDS = {billing.LIST: "on-demand", billing.SPOT: "spot", billing.FLEX_START: "flex-start"}
# Price key -> the catalog's capacity model, for the keys priced per model.
STANDARD_GPU_KEYS = {"gpuNodeList": billing.LIST, "gpuNodeSpot": billing.SPOT, "gpuNodeFlexStart": billing.FLEX_START}
AUTOPILOT_GPU_KEYS = {
    "autopilotGpuPodHour": billing.LIST,
    "autopilotGpuPodSpot": billing.SPOT,
    "autopilotGpuPodFlexStart": billing.FLEX_START,
}
_MAX_PAGES = 200  # a token that never ends is a broken answer, not a catalog


@dataclass(frozen=True)
class PriceRequest:
    """What the stack runs that has a price: exactly what the reader looks up."""

    region: str
    autopilot: bool
    platform: bool  # its own CPU pool, Lustre and bucket (an experiment has only GPU nodes and a head)
    gpu_machine_type: str
    gpus_per_node: int
    gpu_vcpus: float
    gpu_memory_gib: float
    cpu_machine_type: str
    lustre_tier: int
    lustre_capacity_gib: int

    @classmethod
    def of(cls, s: "Settings") -> "PriceRequest":
        acc = s.gpu.accelerator
        return cls(
            region=s.region,
            autopilot=s.autopilot,
            platform=not s.stack.platform_stack,
            gpu_machine_type=acc.machine_type,
            gpus_per_node=acc.gpus_per_node,
            gpu_vcpus=acc.vcpus,
            gpu_memory_gib=acc.memory_gib,
            cpu_machine_type=s.cluster.system_machine_type,
            lustre_tier=s.lustre.tier,
            lustre_capacity_gib=s.lustre.capacity_gib,
        )

    @property
    def services(self) -> tuple[str, ...]:
        wanted = ["gke" if self.autopilot else "compute"]
        if self.platform:
            wanted += ["lustre", "storage"]
        return tuple(wanted)


class Unavailable(Exception):
    """Why the catalog could not be read: one line."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nemo-rl-gke"


def fallback_note(reason: str) -> str:
    return (
        f"prices: not read from the Cloud Billing Catalog ({reason}); the dated catalog and {key('prices')} price "
        "this estimate"
    )


def read_prices(
    request: PriceRequest,
    *,
    endpoint: str = billing.CATALOG_API,
    cache_dir: Optional[Path] = None,
    now: Optional[Callable[[], datetime]] = None,
    credentials: Optional["Credentials"] = None,
    budget_seconds: float = billing.CATALOG_READ_SECONDS,
) -> ReadPrices:
    """The stack's prices from the catalog (cached a day), or no prices and one note saying why."""
    if running_offline():
        return ReadPrices(notes=("prices: the offline synth reads no Cloud Billing Catalog (pulumi preview does)",))
    clock = now or (lambda: datetime.now(timezone.utc))
    cache = _Cache(cache_dir or default_cache_dir(), request.region, clock())
    try:
        skus: dict[str, Optional[list[dict]]] = {}
        dates: list[str] = []
        client: Optional[_Client] = None
        for service in request.services:
            hit = cache.load(service)
            if hit is None:
                if client is None:
                    client = _Client(endpoint, credentials, budget_seconds)
                hit = cache.store(service, client.skus(service, request.region))
            skus[service], read_on = hit
            dates.append(read_on)
    except Unavailable as err:
        return ReadPrices(notes=(fallback_note(str(err)),))
    return prices_from_skus(request, skus, min(dates))


# --- the HTTP side --------------------------------------------------------------------------------------------------
class _Response(google.auth.transport.Response):
    def __init__(self, status: int, headers: Mapping[str, str], data: bytes):
        self._status, self._headers, self._data = status, dict(headers), data

    @property
    def status(self) -> int:
        return self._status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    @property
    def data(self) -> bytes:
        return self._data


class _Timeout(google.auth.exceptions.TransportError):
    """No answer in time: a TransportError to google-auth (its metadata-server probe retries, then gives up)."""


class _Http(google.auth.transport.Request):
    """google-auth's transport interface over urllib (the token refresh and the catalog share the deadline)."""

    def __init__(self, budget_seconds: float):
        self.budget = budget_seconds
        self.deadline = time.monotonic() + budget_seconds

    def timeout(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Unavailable(f"no answer within {self.budget:g} s")
        return min(left, billing.CATALOG_REQUEST_SECONDS)

    def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
        req = urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method)
        wait = self.timeout() if timeout is None else min(self.timeout(), float(timeout))
        try:
            with urllib.request.urlopen(req, timeout=wait) as resp:
                return _Response(resp.status, dict(resp.headers), resp.read())
        except urllib.error.HTTPError as err:
            return _Response(err.code, dict(err.headers or {}), err.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            if isinstance(err, TimeoutError) or isinstance(getattr(err, "reason", None), TimeoutError):
                raise _Timeout(f"no answer within {self.budget:g} s") from None
            raise google.auth.exceptions.TransportError(str(getattr(err, "reason", err))) from err


def _first_line(text: object, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Client:
    def __init__(self, endpoint: str, credentials: Optional["Credentials"], budget_seconds: float):
        self.endpoint = endpoint.rstrip("/")
        self.http = _Http(budget_seconds)
        if credentials is None:
            try:
                credentials, _ = google.auth.default(scopes=[billing.CATALOG_SCOPE], request=self.http)
            except google.auth.exceptions.DefaultCredentialsError as err:
                raise Unavailable(
                    f"no Application Default Credentials: {_first_line(err, 100)}; run gcloud auth "
                    "application-default login"
                ) from None
        self.credentials = credentials
        self.service_ids: Optional[dict[str, Optional[str]]] = None

    def get(self, path: str, params: dict[str, str]) -> dict:
        url = f"{self.endpoint}/{path}?{urllib.parse.urlencode(params)}"
        headers: dict[str, str] = {"Accept": "application/json"}
        try:
            self.credentials.before_request(self.http, "GET", url, headers)
            resp = self.http(url, "GET", headers=headers)
        except _Timeout as err:
            raise Unavailable(str(err)) from None
        except google.auth.exceptions.RefreshError as err:
            raise Unavailable(
                f"the credentials were refused: {_first_line(err.args[0] if err.args else err)}"
            ) from None
        except google.auth.exceptions.TransportError as err:
            raise Unavailable(f"unreachable: {_first_line(err)}") from None
        try:
            body = json.loads(resp.data or b"{}")
        except ValueError:
            body = None
        if resp.status != 200:
            error = body.get("error", {}) if isinstance(body, dict) else {}
            what = error.get("status") or ""
            raise Unavailable(f"HTTP {resp.status} {what}: {_first_line(error.get('message') or resp.data[:200])}")
        if not isinstance(body, dict):
            raise Unavailable("the answer is not a JSON object")
        return body

    def pages(self, path: str, field: str) -> list[dict]:
        items: list[dict] = []
        token = ""
        for _ in range(_MAX_PAGES):
            params = {"pageSize": str(billing.CATALOG_PAGE_SIZE), **({"currencyCode": "USD"} if "skus" in path else {})}
            if token:
                params["pageToken"] = token
            body = self.get(path, params)
            items += body.get(field) or []
            token = body.get("nextPageToken") or ""
            if not token:
                return items
        raise Unavailable(f"{path}: more than {_MAX_PAGES} pages")

    def service_id(self, service: str) -> Optional[str]:
        if self.service_ids is None:
            self.service_ids = {}
            listed = self.pages("services", "services")
            for name, display in billing.SERVICE_NAMES.items():
                self.service_ids[name] = next((s["serviceId"] for s in listed if s.get("displayName") == display), None)
            for name, word in billing.SERVICE_NAME_CONTAINS.items():
                self.service_ids[name] = next(
                    (s["serviceId"] for s in listed if word in str(s.get("displayName", "")).lower()), None
                )
        return self.service_ids.get(service)

    def skus(self, service: str, region: str) -> Optional[list[dict]]:
        """The service's SKUs offered in `region`, compacted; None when the catalog has no such service."""
        sid = self.service_id(service)
        if sid is None:
            return None
        return [c for c in (compact(s) for s in self.pages(f"services/{sid}/skus", "skus")) if region in c["regions"]]


def _usd(unit_price: Mapping[str, Any]) -> Optional[float]:
    if unit_price.get("currencyCode", "USD") != "USD":
        return None
    return int(unit_price.get("units") or 0) + int(unit_price.get("nanos") or 0) / 1e9


def compact(sku: Mapping[str, Any]) -> dict:
    """The fields the rules read (the API reference's Sku: description, category, serviceRegions, the latest
    pricingInfo's usageUnit and tieredRates as [startUsageAmount, USD])."""
    category = sku.get("category") or {}
    infos = sorted(sku.get("pricingInfo") or [], key=lambda i: str(i.get("effectiveTime", "")))
    expression = (infos[-1].get("pricingExpression") if infos else None) or {}
    tiers = []
    for rate in expression.get("tieredRates") or []:
        usd = _usd(rate.get("unitPrice") or {})
        if usd is not None:
            tiers.append([float(rate.get("startUsageAmount") or 0), usd])
    return {
        "id": sku.get("skuId", ""),
        "description": sku.get("description", ""),
        "group": category.get("resourceGroup", ""),
        "usage": category.get("usageType", ""),
        "regions": list(sku.get("serviceRegions") or []),
        "unit": expression.get("usageUnit", ""),
        "tiers": tiers,
    }


class _Cache:
    """One file per region and service: {"version", "region", "service", "readAt", "skus"}; honoured for
    catalog.CATALOG_CACHE_HOURS."""

    def __init__(self, root: Path, region: str, now: datetime):
        self.root, self.region, self.now = root, region, now

    def path(self, service: str) -> Path:
        return self.root / f"billing-catalog-{self.region}-{service}.json"

    def load(self, service: str) -> Optional[tuple[Optional[list[dict]], str]]:
        try:
            data = json.loads(self.path(service).read_text())
            read_at = datetime.fromisoformat(data["readAt"])
            fresh = timedelta(0) <= self.now - read_at < timedelta(hours=billing.CATALOG_CACHE_HOURS)
            if data.get("version") != CACHE_VERSION or data.get("region") != self.region or not fresh:
                return None
            return data["skus"], read_at.date().isoformat()
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, service: str, skus: Optional[list[dict]]) -> tuple[Optional[list[dict]], str]:
        data = {
            "version": CACHE_VERSION,
            "region": self.region,
            "service": service,
            "readAt": self.now.isoformat(),
            "skus": skus,
        }
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.path(service).with_suffix(".tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.path(service))
        except OSError:
            pass  # an unwritable cache only costs the next preview another read
        return skus, self.now.date().isoformat()


# --- from SKUs to prices (pure) ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Found:
    usd: float  # per the rule's unit
    description: str
    sku_id: str


def _factor(unit: str, per: str, description: str) -> Optional[float]:
    """USD per `per` from USD per the SKU's usageUnit ("h", "GiBy.h", "GiBy.d", "GiBy.mo", TiBy likewise)."""
    hours = {"h": 1.0, "d": 24.0, "mo": float(catalog.HOURS_PER_MONTH)}
    if per in ("vcpu-hour", "gpu-hour"):
        if unit != "h":
            return None
        return 1000.0 if per == "vcpu-hour" and "mcpu" in billing.normalized(description) else 1.0
    size, _, span = unit.partition(".")
    if size not in ("GiBy", "TiBy") or span not in hours:
        return None
    per_gib = 1.0 if size == "GiBy" else 1 / 1024
    want = 1.0 if per == "gib-hour" else float(catalog.HOURS_PER_MONTH)
    return per_gib * want / hours[span]


def _rate(tiers: list[list[float]], quantity: float) -> Optional[float]:
    applies = [usd for start, usd in sorted(tiers) if start <= quantity]
    return applies[-1] if applies else None


def find(
    skus: Optional[list[dict]], rule: billing.SkuRule, model: str, region: str, quantity: float = 0
) -> tuple[Optional[_Found], str]:
    """The one price `rule` names on `model` in `region`, or None and the SKU's name with why it was not used."""
    where = f"'{rule.name}' ({MODEL_WORDS[model]}, {region})"
    if skus is None:
        return None, f"{where}: the catalog lists no {billing.SERVICE_NAMES.get(rule.service, 'Lustre')} service"
    found = []
    for sku in skus:
        d = billing.normalized(sku["description"])
        matches = d.startswith(rule.contains[0]) if rule.anchored else True
        if not (matches and all(t in d for t in rule.contains) and region in sku["regions"]):
            continue
        if (rule.group and sku["group"] != rule.group) or billing.capacity_model(
            sku["description"], sku["usage"]
        ) != model:
            continue
        factor, rate = _factor(sku["unit"], rule.per, sku["description"]), _rate(sku["tiers"], quantity)
        if factor is None or rate is None or rate <= 0:
            continue  # another unit, no rate, or a $0 placeholder
        found.append(_Found(rate * factor, sku["description"], sku["id"]))
    if not found:
        return None, where
    if len({round(f.usd, 9) for f in found}) > 1:
        return None, f"{where}: {len(found)} SKUs match at different prices"
    return found[0], ""


def _compose(
    parts: list[tuple[float, Optional[billing.SkuRule]]],
    skus: Optional[list[dict]],
    model: str,
    region: str,
    read_on: str,
    quantity: float = 0,
) -> tuple[Optional[ReadPrice], list[str], list[str]]:
    """Sum of quantity x SKU price over the parts: (the price or None, required SKUs missing, optional missing)."""
    total, terms = 0.0, []
    missing: list[str] = []
    optional: list[str] = []
    for qty, rule in parts:
        if rule is None:
            continue
        hit, why = find(skus, rule, model, region, quantity)
        if hit is None:
            (missing if rule.required else optional).append(why)
            continue
        total += qty * hit.usd
        terms.append(f"{qty:g} x {hit.description} [{hit.sku_id}]")
    if missing or not terms:
        return None, missing, optional
    return ReadPrice(total, f"Cloud Billing Catalog (read {read_on}): {' + '.join(terms)}"), missing, optional


def prices_from_skus(request: PriceRequest, skus: Mapping[str, Optional[list[dict]]], read_on: str) -> ReadPrices:
    """The price of every key the stack uses, from its region's SKUs (service key -> compacted SKUs)."""
    prices: dict[str, ReadPrice] = {}
    missing: dict[str, str] = {}
    notes: list[str] = []
    region = request.region

    def put(price_key: str, result: tuple[Optional[ReadPrice], list[str], list[str]], optional_note: str = ""):
        price, gaps, optional = result
        if price is not None:
            prices[price_key] = price
            if optional:
                notes.append(f"{price_key}: no SKU {', '.join(optional)}{optional_note}")
        else:
            missing[price_key] = ", ".join(gaps + optional) or "(none found)"

    if request.autopilot:
        gke = skus.get("gke")
        pod = billing.autopilot_gpu_pod(request.gpu_machine_type)
        for price_key, model in AUTOPILOT_GPU_KEYS.items():
            put(price_key, _compose([(request.gpus_per_node, pod)], gke, model, region, read_on))
        if prices.keys() & AUTOPILOT_GPU_KEYS.keys():
            notes.append("Autopilot GPU Pods: priced by their GPUs' SKUs; the Pods' CPU and memory are not in it")
        put("headVcpuHour", _compose([(1, billing.AUTOPILOT_POD_CPU)], gke, billing.LIST, region, read_on))
        put("headMemoryGibHour", _compose([(1, billing.AUTOPILOT_POD_MEMORY)], gke, billing.LIST, region, read_on))
    else:
        compute = skus.get("compute")
        node = billing.GPU_MACHINE_SKUS.get(request.gpu_machine_type)
        for price_key, model in STANDARD_GPU_KEYS.items():
            if node is None:
                missing[price_key] = f"rule for {request.gpu_machine_type} (core/catalog/billing.py)"
                continue
            parts = [
                (request.gpu_vcpus, node.core),
                (request.gpu_memory_gib, node.ram),
                (request.gpus_per_node, node.gpu),
            ]
            put(price_key, _compose(parts, compute, model, region, read_on), "; the node is priced from its GPUs")
        cpu = billing.cpu_machine_skus(request.cpu_machine_type)
        shape = node_fit.machine_shape(request.cpu_machine_type)
        if cpu is None or shape is None:
            for price_key in ("cpuNode", "headVcpuHour", "headMemoryGibHour"):
                missing[price_key] = f"rule for the {request.cpu_machine_type} series (core/catalog/billing.py)"
        else:
            if request.platform:
                parts = [(shape.cpu, cpu.core), (shape.memory_gib, cpu.ram)]
                put("cpuNode", _compose(parts, compute, billing.LIST, region, read_on))
            put("headVcpuHour", _compose([(1, cpu.core)], compute, billing.LIST, region, read_on))
            put("headMemoryGibHour", _compose([(1, cpu.ram)], compute, billing.LIST, region, read_on))
    if request.platform:
        lustre = billing.lustre_capacity(request.lustre_tier)
        put(
            "lustreGibMonth",
            _compose([(1, lustre)], skus.get("lustre"), billing.LIST, region, read_on, request.lustre_capacity_gib),
        )
        # The rate that applies past the first TiB (a free tier, where a region has one, is the billing account's).
        put(
            "storageGibMonth",
            _compose([(1, billing.GCS_STANDARD)], skus.get("storage"), billing.LIST, region, read_on, 1024),
        )
    return ReadPrices(MappingProxyType(prices), MappingProxyType(missing), tuple(notes))
