"""What a stack costs per hour, by capacity model, from read, sourced or user-supplied prices only (pure code).

Each line is a quantity times a price with the price's origin, the first of: the user (`prices.<key>`), Google's
Cloud Billing Catalog as read at preview or up (`ReadPrices`, handed in by the program: infra/price_catalog.py reads
it; this module never touches the network), the dated catalog (core/catalog/prices.py: page and date read), or
unknown (the line names the key, the SKU the read did not find and the page that has the figure, and the total
leaves it out and says so). Monthly prices are spread over catalog.HOURS_PER_MONTH hours. A platform stack's lines:
the cluster fee, its GPU nodes while a job runs on them (per capacity model; the list price is what a reservation
bills, since A4 and A3 Ultra have no plain on-demand capacity: docs/research/capacity.md), its CPU system pool (on
Autopilot its Ray head instead), its Lustre instance, and its bucket per TiB stored. An experiment stack's lines:
its own GPU nodes and Ray head, per hour and, with `stepSeconds` and the recipe's max_num_steps, for its whole run.
`gpu_usage` turns admitted-GPU intervals into GPU-hours and their cost (the CLI's team view). Nothing here is a
bill: discounts, credits, network egress and the extended-support surcharge are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from core import catalog
from core.keys import key

if TYPE_CHECKING:
    from core.settings import Settings

# Capacity model -> the price key of one GPU node per hour (Standard).
# A4 and A3 Ultra have no plain on-demand capacity: the list price is a reference (and what a reservation bills).
LIST_PRICE = "list-price"
MODEL_PRICE_KEYS = {
    "spot": "gpuNodeSpot",
    "flex-start": "gpuNodeFlexStart",
    "reservation": "gpuNodeList",
    LIST_PRICE: "gpuNodeList",
}
# Autopilot bills GPU Pods at its own prices, one per capacity model: Spot Pods are 60-91 % below the regular price
# (catalog.AUTOPILOT_SPOT_DISCOUNT), flex-start has a price of its own, and the regular price is the reference.
AUTOPILOT_PRICE_KEYS = {
    "spot": "autopilotGpuPodSpot",
    "flex-start": "autopilotGpuPodFlexStart",
    "reservation": "autopilotGpuPodHour",
    LIST_PRICE: "autopilotGpuPodHour",
}


def free_tier_note(s: "Settings") -> str:
    """Whether GKE's free-tier credit can cover this cluster's fee: Autopilot and zonal Standard clusters, one per
    billing account; never a regional Standard cluster (catalog.GKE_FREE_TIER_CREDIT)."""
    credit = catalog.GKE_FREE_TIER_CREDIT
    if s.autopilot or s.cluster.control_plane == "zonal":
        kind = "an Autopilot" if s.autopilot else f"a zonal Standard ({key('controlPlane')}: zonal)"
        return (
            f"GKE free tier: ${credit.usd:.2f} of credit a month per billing account covers the fee of one zonal "
            f"Standard or Autopilot cluster, and this is {kind} cluster; not applied here (another cluster of the "
            f"billing account may already use it) ({credit.source}, read {credit.read_on})"
        )
    return (
        f"GKE free tier: its credit never covers a regional Standard cluster's fee (only zonal Standard and Autopilot "
        f"clusters; {key('controlPlane')}: zonal makes this one eligible) ({credit.source}, read {credit.read_on})"
    )


@dataclass(frozen=True)
class ReadPrice:
    usd: float  # per the unit catalog.USER_PRICE_KEYS gives the key
    origin: str  # "Cloud Billing Catalog (read <date>): <the SKUs it is made of>"


@dataclass(frozen=True)
class ReadPrices:
    """What the program read from the Cloud Billing Catalog for this stack, by price key (catalog.USER_PRICE_KEYS):
    the prices found, the SKUs not found (price key -> their names), and one-line notes (why nothing was read, a
    SKU missing whose price still stands)."""

    prices: Mapping[str, ReadPrice] = field(default_factory=lambda: MappingProxyType({}))
    missing: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    notes: tuple[str, ...] = ()


NOT_READ = ReadPrices()


@dataclass(frozen=True)
class Line:
    item: str
    quantity: float
    unit: str  # what one price is per
    usd_each: Optional[float]  # per unit per hour; None: unknown
    origin: str  # "catalog: <page> (read <date>)" | "user-supplied (prices.<key>)" | "unknown: set ..."
    capacity_model: Optional[str] = None  # GPU lines only
    in_run: bool = False  # part of a run's cost (its GPU nodes and its Ray head)

    @property
    def usd_per_hour(self) -> Optional[float]:
        return None if self.usd_each is None else self.quantity * self.usd_each


@dataclass(frozen=True)
class Estimate:
    stack: str
    lines: tuple[Line, ...]
    models: tuple[str, ...]
    run_hours: Optional[float] = None  # experiment run, when the step time is known
    run_gpu_hours: Optional[float] = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    gpus_per_node: int = 0
    missing_skus: tuple[str, ...] = ()

    def per_hour(self, model: str) -> tuple[float, list[str]]:
        """(known USD per hour with GPUs on `model`, the items left out because their price is unknown)."""
        total, unknown = 0.0, []
        for line in self.lines:
            if line.capacity_model not in (None, model):
                continue
            if line.usd_per_hour is None:
                unknown.append(line.item)
            else:
                total += line.usd_per_hour
        return total, unknown

    def run_parts(self, model: str) -> tuple[float, list[str]]:
        """(known USD of the run on `model`: its GPU nodes and Ray head for run_hours, the items left out)."""
        total, unknown = 0.0, []
        for line in self.lines:
            if not line.in_run or line.capacity_model not in (None, model):
                continue
            if line.usd_per_hour is None:
                unknown.append(line.item)
            else:
                total += line.usd_per_hour * (self.run_hours or 0)
        return total, unknown

    def run_cost(self, model: str) -> Optional[float]:
        """The whole run's cost on `model`, or None when the step time or one of its prices is unknown."""
        if self.run_hours is None:
            return None
        total, unknown = self.run_parts(model)
        return None if unknown else total

    def as_output(self) -> dict:
        return {
            "hoursPerMonth": catalog.HOURS_PER_MONTH,
            "lines": [
                {
                    "item": line.item,
                    "quantity": line.quantity,
                    "unit": line.unit,
                    "usdEachPerHour": line.usd_each,
                    "usdPerHour": None if line.usd_per_hour is None else round(line.usd_per_hour, 4),
                    "origin": line.origin,
                    **({"capacityModel": line.capacity_model} if line.capacity_model else {}),
                }
                for line in self.lines
            ],
            "perHourByCapacityModel": {
                m: {"knownUsd": round(self.per_hour(m)[0], 4), "unknown": self.per_hour(m)[1]} for m in self.models
            },
            **(
                {
                    "run": {
                        "hours": round(self.run_hours, 3),
                        "gpuHours": round(self.run_gpu_hours or 0, 3),
                        "usdByCapacityModel": {
                            m: (None if self.run_cost(m) is None else round(self.run_cost(m) or 0, 2))
                            for m in self.models
                        },
                        "byCapacityModel": {
                            m: {"knownUsd": round(self.run_parts(m)[0], 2), "unknown": self.run_parts(m)[1]}
                            for m in self.models
                        },
                    }
                }
                if self.run_hours is not None
                else {}
            ),
            "gpusPerNode": self.gpus_per_node,
            "missingSkus": list(self.missing_skus),
            "notes": list(self.notes),
        }

    def format(self) -> str:
        out = [f"Cost per hour (stack {self.stack}; USD; not a bill, see notes)", ""]
        for line in self.lines:
            amount = "unknown" if line.usd_per_hour is None else f"${line.usd_per_hour:,.4f}/h"
            out.append(f"  {line.item:<58} {amount:>16}  {line.origin}")
        out.append("")
        for m in self.models:
            total, unknown = self.per_hour(m)
            missing = f" + unknown: {', '.join(unknown)}" if unknown else ""
            out.append(f"  with GPUs on {m}: ${total:,.2f}/h{missing}")
            if self.run_hours is not None:
                known, left_out = self.run_parts(m)
                cost = f"${known:,.2f}" + (f" + unknown: {', '.join(left_out)}" if left_out else "")
                out.append(
                    f"    run: {self.run_hours:.2f} h, {self.run_gpu_hours:,.1f} GPU-hours, GPU nodes and head {cost}"
                )
        out += [f"  missing SKU: {m}" for m in self.missing_skus]
        out += [f"  note: {n}" for n in self.notes]
        return "\n".join(out) + "\n"


def _price(
    s: "Settings",
    price_key: str,
    read: ReadPrices,
    sourced: Optional[catalog.Price] = None,
    page: Optional[str] = None,
) -> tuple[Optional[float], str]:
    """The user's price, else the one read from the Cloud Billing Catalog, else the dated catalog's, else unknown
    (naming the SKU the read did not find, the key and the page)."""
    user = s.cost.prices.get(price_key)
    if user is not None:
        return user, f"user-supplied ({key(f'prices.{price_key}')})"
    found = read.prices.get(price_key)
    if found is not None:
        return found.usd, found.origin
    if sourced is not None:
        return sourced.usd, f"catalog: {sourced.source} (read {sourced.read_on})"
    gap = read.missing.get(price_key)
    because = f"no Cloud Billing Catalog SKU {gap}; " if gap else ""
    return None, f"unknown: {because}set {key(f'prices.{price_key}')} ({page or catalog.PRICE_PAGES[price_key]})"


def _head_lines(s: "Settings", read: ReadPrices) -> list[Line]:
    """The Ray head's requests at the price of a vCPU and a GiB: of the CPU pool's machine series on Standard (its
    share of a node the pool adds or keeps), of a regular Autopilot Pod on Autopilot (what Autopilot bills)."""
    w = s.workload
    where = "an Autopilot Pod" if s.autopilot else f"the CPU pool ({s.cluster.system_machine_type.split('-', 1)[0]})"
    page = "https://cloud.google.com/kubernetes-engine/pricing" if s.autopilot else None
    out = []
    for price_key, qty, unit, what in (
        ("headVcpuHour", w.head_cpu, "vCPU-hour", f"{w.head_cpu} vCPU"),
        ("headMemoryGibHour", w.head_memory_gib, "GiB-hour", f"{w.head_memory_gib} GiB"),
    ):
        usd, origin = _price(s, price_key, read, page=page)
        out.append(Line(f"Ray head ({what}) on {where}", qty, unit, usd, origin, in_run=True))
    return out


def estimate(s: "Settings", read: ReadPrices = NOT_READ) -> Estimate:
    experiment = bool(s.stack.platform_stack)
    acc = s.gpu.accelerator
    months = catalog.HOURS_PER_MONTH
    lines: list[Line] = []
    notes = [f"monthly prices spread over {months} hours", "no discount, credit, egress or support surcharge"]
    if not experiment:
        fee = catalog.GKE_CLUSTER_FEE
        lines.append(
            Line("GKE cluster management fee", 1, fee.unit, fee.usd, f"catalog: {fee.source} (read {fee.read_on})")
        )
        notes.append(free_tier_note(s))
    # The GPU nodes a running job holds: its workers (none without a job: no GPU node is billed then).
    gpu_nodes = s.worker_replicas if s.job.enabled else 0
    what = f"GPU nodes ({gpu_nodes} x {acc.machine_type})"
    models = list(s.capacity.models)
    if "reservation" not in models:
        # The reference every model is compared with: the list price (what a reservation bills) on Standard, the
        # regular GPU Pod price on Autopilot.
        models.append(LIST_PRICE)
    price_keys = AUTOPILOT_PRICE_KEYS if s.autopilot else MODEL_PRICE_KEYS
    reference = "the regular Autopilot price" if s.autopilot else "the list price"
    for m in models:
        usd, origin = _price(s, price_keys[m], read)
        label = f"{what} at {reference} (reference)" if m == LIST_PRICE else f"{what} on {m}"
        lines.append(Line(label, gpu_nodes, "node-hour", usd, origin, capacity_model=m, in_run=True))
    if experiment or s.autopilot:
        # An experiment's own head; a platform's on Autopilot (on Standard it is on the CPU pool priced below).
        lines += _head_lines(s, read)
    if s.autopilot and "spot" in models:
        regular = _price(s, AUTOPILOT_PRICE_KEYS[LIST_PRICE], read)[0]
        low, high = catalog.AUTOPILOT_SPOT_DISCOUNT
        bound = (
            f": ${regular * (1 - high):,.2f} to ${regular * (1 - low):,.2f} an hour per node-filling Pod from the "
            f"regular price ({key('prices.autopilotGpuPodHour')} or the Cloud Billing Catalog)"
            if regular is not None
            else ""
        )
        notes.append(
            f"Autopilot Spot Pods are {low:.0%} to {high:.0%} below the regular price{bound} "
            f"({catalog.AUTOPILOT_SPOT_DISCOUNT_SOURCE})"
        )
    if "reservation" in s.capacity.models:
        notes.append("a reservation bills its nodes at the list price whether or not they run")
    if not experiment:
        if not s.autopilot:
            usd, origin = _price(s, "cpuNode", read)
            lines.append(
                Line(
                    f"CPU system pool ({s.cluster.system_nodes} x {s.cluster.system_machine_type})",
                    s.cluster.system_nodes,
                    "node-hour",
                    usd,
                    origin,
                )
            )
        usd, origin = _price(s, "lustreGibMonth", read)
        lines.append(
            Line(
                f"Managed Lustre ({s.lustre.capacity_gib} GiB, tier {s.lustre.tier})",
                s.lustre.capacity_gib,
                "GiB-hour",
                None if usd is None else usd / months,
                origin,
            )
        )
        usd, origin = _price(s, "storageGibMonth", read, catalog.GCS_STANDARD_GIB_MONTH.get(s.region))
        # The stored volume is not known before the exports: per TiB, outside the totals.
        notes.append(
            "bucket (Cloud Storage Standard): "
            + ("unknown per TiB" if usd is None else f"${usd * 1024 / months:,.4f}/h per TiB stored")
            + f" ({origin})"
        )
    run_hours = run_gpu_hours = None
    if s.cost.step_seconds is not None and s.job.enabled:
        run_hours = s.recipe.max_num_steps * s.cost.step_seconds / 3600
        run_gpu_hours = run_hours * gpu_nodes * acc.gpus_per_node
        notes.append(
            f"run: {s.recipe.max_num_steps} steps x {s.cost.step_seconds:g} s ({key('stepSeconds')}) on its GPU nodes "
            "and Ray head; startup, gate and retries not included"
        )
    notes += read.notes
    used = {k for k in read.missing if k not in s.cost.prices}
    missing = tuple(f"{read.missing[k]} (for {key(f'prices.{k}')})" for k in sorted(used))
    return Estimate(
        s.stack_name,
        tuple(lines),
        tuple(models),
        run_hours,
        run_gpu_hours,
        tuple(notes),
        gpus_per_node=acc.gpus_per_node,
        missing_skus=missing,
    )


# --- GPU-hours so far (the CLI's team view) ------------------------------------------------------------------------
@dataclass(frozen=True)
class Admitted:
    """GPUs a workload held from `start` to `end` (None: it still holds them). Times are timezone-aware."""

    gpus: int
    start: datetime
    end: Optional[datetime] = None


@dataclass(frozen=True)
class GpuUsage:
    gpu_hours: float
    usd: Optional[float]  # None without a price per GPU-hour


def gpu_usage(intervals: Iterable[Admitted], now: datetime, usd_per_gpu_hour: Optional[float] = None) -> GpuUsage:
    """GPU-hours of the admitted intervals up to `now` (an interval still open counts until now, one starting later
    counts nothing), and their cost at `usd_per_gpu_hour`. Intervals add up: two workloads admitted at once hold
    both their GPUs."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    hours = 0.0
    for i in intervals:
        if i.start.tzinfo is None or (i.end is not None and i.end.tzinfo is None):
            raise ValueError("admitted intervals must be timezone-aware")
        if i.gpus < 0 or (i.end is not None and i.end < i.start):
            raise ValueError(f"not an interval: {i.gpus} GPUs from {i.start} to {i.end}")
        end = now if i.end is None else min(i.end, now)
        if end > i.start:
            hours += i.gpus * (end - i.start).total_seconds() / 3600
    return GpuUsage(hours, None if usd_per_gpu_hour is None else hours * usd_per_gpu_hour)


def usd_per_gpu_hour(cost_estimate: Mapping[str, Any], model: str) -> Optional[float]:
    """One GPU-hour on capacity model `model` from a stack's `costEstimate` output (its GPU node line / GPUs per
    node), or None when that price is unknown."""
    per_node = cost_estimate.get("gpusPerNode") or 0
    for line in cost_estimate.get("lines", []):
        if line.get("capacityModel") == model and line.get("usdEachPerHour") is not None and per_node:
            return float(line["usdEachPerHour"]) / per_node
    return None
