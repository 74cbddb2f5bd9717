"""The team's view of the platform's GPU queue, from the cluster: every job's Kueue Workload, its state, its position
in the queue, its attempts, the GPUs it holds and its GPU-hours so far.

    python -m cli.team [--cluster-queue nemo-rl] [--namespace NS] [--json] [--usd-per-gpu-hour X | --cost-estimate FILE]

It reads, with your kubectl context (the `getCredentialsCommand` output sets it up):
- `kubectl get workload.kueue.x-k8s.io -A -o json`: one Workload per queued RayJob or RayCluster (Kueue's own
  object: its conditions, its admission, the time it spent admitted before an eviction);
- `kubectl get rayjob.ray.io -A -o json`: the RayJobs the Workloads belong to (KubeRay's attempt counts, the stack
  and run the program annotates them with);
- `kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<cq>/pendingworkloads`: the pending
  Workloads in the order Kueue will consider them (Kueue's visibility API, VisibilityOnDemand, beta and on by
  default from v0.9; site/content/en/docs/tasks/manage/monitor_pending_workloads/pending_workloads_on_demand.md
  @v0.19.2). Reading it needs Kueue's ClusterRole `kueue-pending-workloads-cq-viewer-role` (aggregated into
  `kueue-batch-admin-role`; config/components/rbac/pending_workloads_cq_viewer_role.yaml @v0.19.2); without it the
  positions stay empty and the summary says so. Listing Workloads and RayJobs in every namespace needs a cluster-wide
  read of them too (`kueue-batch-admin-role` has the Workloads).

An experimenter, whose rights are their experiment namespace's Role (workloads/manifests/tenancy.py), passes
`--namespace <their namespace>`: the Workloads and RayJobs of that namespace only, and the positions from its
LocalQueue's list (`/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/<ns>/localqueues/<lq>/pendingworkloads`, the
resource Kueue's Role `pending-workloads-lq-viewer-role` grants: config/components/rbac/
pending_workloads_lq_viewer_role.yaml at kueue 14a3f57e), each item still carrying its position in the ClusterQueue.

The stack output `queue` says what the queue and its quota were at `pulumi up`; this says what they are now. Exit
codes: 0 done; 1 kubectl refused a read (one line on stderr, never a traceback). Which field of which object each
column comes from: tests/reference/team_view/SOURCES.md. With a price (`--usd-per-gpu-hour`, or `--cost-estimate` and
`--capacity`: the platform's `costEstimate` output and one of its capacity models) the GPU-hours get their cost
(core/cost.py gpu_usage).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

from core import cost

DEFAULT_CLUSTER_QUEUE = "nemo-rl"  # core/naming.py KUEUE_CLUSTER_QUEUE (the CLI imports nothing of the program)
GPU = "nvidia.com/gpu"
STACK_ANNOTATION = "nemo-rl-gke/stack"  # workloads/manifests/rayjob.py rayjob_annotations
RUN_ANNOTATION = "nemo-rl-gke/run"
PENDING_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{}/pendingworkloads"
LOCAL_PENDING_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{}/localqueues/{}/pendingworkloads"
DEFAULT_LOCAL_QUEUE = "nemo-rl"  # core/naming.py KUEUE_LOCAL_QUEUE: the same name in every queued namespace

Kubectl = Callable[[list[str]], str]


class Refused(Exception):
    pass


def kubectl(args: list[str]) -> str:
    """Run kubectl with the current context; its own error as one line."""
    try:
        done = subprocess.run(["kubectl", *args], capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        raise Refused("kubectl is not installed (gcloud components install kubectl)") from None
    if done.returncode != 0:
        first = (done.stderr or done.stdout).strip().splitlines()
        raise Refused(f"kubectl {' '.join(args[:3])}: {first[0] if first else f'exit {done.returncode}'}")
    return done.stdout


# --- quantities and times ---------------------------------------------------------------------------------------
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|Ki|Mi|Gi)?$")
_SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def quantity(value: Any) -> float:
    m = _QUANTITY.match(str(value))
    if m is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return float(m.group(1)) * _SCALE[m.group(2)]


def timestamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


# --- one row per Workload ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    namespace: str
    job: str  # "RayJob <name>" or "RayCluster <name>"
    stack: str  # the Pulumi stack that declared it ("" when not annotated)
    state: str  # admitted, pending, finished, evicted, quota reserved, deactivated
    why: str  # Kueue's reason or message for it ("" when admitted)
    position: Optional[int]  # 1-based in the ClusterQueue; None when not pending (or not readable)
    priority: Optional[int]
    attempts: Optional[int]  # KubeRay's finished attempts plus the running one; None for a RayCluster
    evictions: int  # Kueue's evictions (preemption among them): each one a restart from the newest checkpoint
    gpus_asked: float
    gpus_held: float
    gpu_hours: float
    usd: Optional[float] = None  # the GPU-hours at a price per GPU-hour (--usd-per-gpu-hour / --cost-estimate)

    def cells(self) -> list[str]:
        pos = "" if self.position is None else str(self.position)
        return (
            [
                f"{self.namespace}/{self.job}",
                self.stack,
                self.state,
                pos,
                "" if self.priority is None else str(self.priority),
                "" if self.attempts is None else str(self.attempts),
                str(self.evictions),
                f"{self.gpus_held:g}/{self.gpus_asked:g}",
                f"{self.gpu_hours:.1f}",
            ]
            + ([] if self.usd is None else [f"{self.usd:,.0f}"])
            + [self.why]
        )


HEADERS = ["JOB", "STACK", "STATE", "POSITION", "PRIORITY", "ATTEMPTS", "EVICTIONS", "GPUS HELD/ASKED", "GPU-HOURS"]
WHY = "WHY"


def _condition(wl: dict, kind: str) -> Optional[dict]:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _true(wl: dict, kind: str) -> bool:
    c = _condition(wl, kind)
    return c is not None and c.get("status") == "True"


def state_of(wl: dict) -> tuple[str, str]:
    """(state, why) from the Workload's conditions: finished, admitted, or pending with Kueue's own reason."""
    if _true(wl, "Finished"):
        return "finished", (_condition(wl, "Finished") or {}).get("reason", "")
    if (wl.get("spec") or {}).get("active") is False:
        return "deactivated", "spec.active is false"
    if _true(wl, "Admitted"):
        return "admitted", ""
    if _true(wl, "QuotaReserved"):
        return "quota reserved", "admission checks pending"
    if _true(wl, "Evicted"):
        return "evicted", (_condition(wl, "Evicted") or {}).get("reason", "")
    reserved = _condition(wl, "QuotaReserved") or {}
    return "pending", reserved.get("message", "")


def _gpus_asked(wl: dict) -> float:
    """GPUs the Workload's PodSets ask for: count x each container's GPU request (or limit)."""
    total = 0.0
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        pod = (ps.get("template") or {}).get("spec") or {}
        per_pod = 0.0
        for c in pod.get("containers") or []:
            res = c.get("resources") or {}
            amount = (res.get("requests") or {}).get(GPU, (res.get("limits") or {}).get(GPU, 0))
            per_pod += quantity(amount)
        total += per_pod * int(ps.get("count", 1))
    return total


def _gpus_admitted(wl: dict) -> float:
    admission = (wl.get("status") or {}).get("admission") or {}
    return sum(quantity((a.get("resourceUsage") or {}).get(GPU, 0)) for a in admission.get("podSetAssignments") or [])


def admitted_intervals(wl: dict, gpus: float) -> list[cost.Admitted]:
    """The Workload's admitted time as intervals holding `gpus` GPUs: the past Admit-Evict cycles Kueue accumulated
    (a duration only: placed at its creation) and the current admission, until it finished (open while it runs)."""
    out = []
    meta = wl.get("metadata") or {}
    past = int((wl.get("status") or {}).get("accumulatedPastExecutionTimeSeconds") or 0)
    if past > 0:
        start = timestamp(meta["creationTimestamp"])
        out.append(cost.Admitted(int(gpus), start, start + timedelta(seconds=past)))
    admitted = _condition(wl, "Admitted")
    if admitted is not None and admitted.get("status") == "True":
        finished = _condition(wl, "Finished")
        end = timestamp(finished["lastTransitionTime"]) if finished and finished.get("status") == "True" else None
        out.append(cost.Admitted(int(gpus), timestamp(admitted["lastTransitionTime"]), end))
    return out


def _owner(wl: dict) -> tuple[str, str]:
    for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") in ("RayJob", "RayCluster"):
            return ref["kind"], ref["name"]
    return "Workload", wl["metadata"]["name"]


def rows(
    wls: dict,
    rayjobs: dict,
    pending: Optional[dict],
    now: datetime,
    cluster_queue: str,
    usd_per_gpu_hour: Optional[float] = None,
) -> list[Row]:
    """One row per Workload of `cluster_queue`'s LocalQueues (the admitted ones by their admission, the pending ones
    by the visibility API's list), in queue order: admitted first, then pending by position."""
    jobs = {(j["metadata"]["namespace"], j["metadata"]["name"]): j for j in rayjobs.get("items") or []}
    positions = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in (pending or {}).get("items") or []}
    out = []
    for wl in wls.get("items") or []:
        meta = wl["metadata"]
        admission = (wl.get("status") or {}).get("admission") or {}
        key = (meta["namespace"], meta["name"])
        if admission.get("clusterQueue", cluster_queue) != cluster_queue and key not in positions:
            continue
        kind, name = _owner(wl)
        job = jobs.get((meta["namespace"], name)) if kind == "RayJob" else None
        status = (job or {}).get("status") or {}
        annotations = ((job or {}).get("metadata") or {}).get("annotations") or {}
        attempts = None
        if kind == "RayJob":
            finished = int(status.get("failed") or 0) + int(status.get("succeeded") or 0)
            running = _true(wl, "Admitted") and not _true(wl, "Finished")
            attempts = finished + (1 if running else 0)
        evictions = sum(
            int(e.get("count") or 0)
            for e in ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []
        )
        asked = _gpus_asked(wl)
        state, why = state_of(wl)
        held = _gpus_admitted(wl) if _true(wl, "Admitted") and not _true(wl, "Finished") else 0.0
        usage = cost.gpu_usage(admitted_intervals(wl, _gpus_admitted(wl) or asked), now, usd_per_gpu_hour)
        p = positions.get(key)
        out.append(
            Row(
                namespace=meta["namespace"],
                job=f"{kind} {name}",
                stack=annotations.get(STACK_ANNOTATION, ""),
                state=state,
                why=why,
                position=None if p is None else int(p["positionInClusterQueue"]) + 1,
                priority=(wl.get("spec") or {}).get("priority", p.get("priority") if p else None),
                attempts=attempts,
                evictions=evictions,
                gpus_asked=asked,
                gpus_held=held,
                gpu_hours=usage.gpu_hours,
                usd=usage.usd,
            )
        )
    return sorted(
        out,
        key=lambda r: (
            r.state == "finished",
            r.state in ("pending", "evicted"),
            r.position if r.position is not None else 0,
            r.namespace,
            r.job,
        ),
    )


def table(found: list[Row]) -> str:
    headers = HEADERS + (["USD"] if found and found[0].usd is not None else []) + [WHY]
    lines = [headers] + [r.cells() for r in found]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def summary(found: list[Row]) -> str:
    held = sum(r.gpus_held for r in found)
    waiting = [r for r in found if r.position is not None]
    hours = sum(r.gpu_hours for r in found)
    usd = "" if not found or found[0].usd is None else f" (${sum(r.usd or 0 for r in found):,.0f})"
    return f"{held:g} GPUs held, {len(waiting)} job(s) waiting, {hours:.1f} GPU-hours so far{usd}"


def collect(
    run: Kubectl, cluster_queue: str, namespace: Optional[str] = None, local_queue: str = DEFAULT_LOCAL_QUEUE
) -> tuple[dict, dict, Optional[dict]]:
    scope = ["--namespace", namespace] if namespace else ["--all-namespaces"]
    wls = json.loads(run(["get", "workload.kueue.x-k8s.io", *scope, "-o", "json"]))
    rayjobs = json.loads(run(["get", "rayjob.ray.io", *scope, "-o", "json"]))
    path = LOCAL_PENDING_PATH.format(namespace, local_queue) if namespace else PENDING_PATH.format(cluster_queue)
    try:
        pending = json.loads(run(["get", "--raw", path]))
    except Refused:
        pending = None  # no right to the visibility API: positions unknown
    return wls, rayjobs, pending


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cli.team", description=__doc__.split("\n\n")[0])
    p.add_argument("--cluster-queue", default=DEFAULT_CLUSTER_QUEUE, help="the platform's ClusterQueue")
    p.add_argument(
        "--namespace",
        help="only this namespace's jobs (an experimenter's own namespace), their positions from its LocalQueue",
    )
    p.add_argument("--local-queue", default=DEFAULT_LOCAL_QUEUE, help="with --namespace: the namespace's LocalQueue")
    p.add_argument("--json", action="store_true", help="one JSON object per job instead of the table")
    price = p.add_mutually_exclusive_group()
    price.add_argument("--usd-per-gpu-hour", type=float, help="price the GPU-hours at this rate")
    price.add_argument(
        "--cost-estimate",
        metavar="FILE",
        help="price them from the platform's costEstimate output (pulumi stack output costEstimate --json > FILE)",
    )
    p.add_argument("--capacity", default="spot", help="with --cost-estimate: the capacity model whose price to use")
    return p


def _price(args: argparse.Namespace) -> Optional[float]:
    if args.usd_per_gpu_hour is not None:
        return float(args.usd_per_gpu_hour)
    if args.cost_estimate:
        with open(args.cost_estimate, encoding="utf-8") as f:
            found = cost.usd_per_gpu_hour(json.load(f), args.capacity)
        if found is None:
            raise Refused(f"{args.cost_estimate}: no {args.capacity} price per GPU node in the cost estimate")
        return found
    return None


def main(argv: Optional[list[str]] = None, run: Kubectl = kubectl, now: Optional[datetime] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        price = _price(args)
        wls, rayjobs, pending = collect(run, args.cluster_queue, args.namespace, args.local_queue)
        found = rows(wls, rayjobs, pending, now or datetime.now(timezone.utc), args.cluster_queue, price)
    except Refused as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (ValueError, KeyError) as e:
        print(f"error: unexpected object from the cluster: {e}", file=sys.stderr)
        return 1
    if args.json:
        for r in found:
            print(json.dumps(asdict(r)))
    else:
        print(table(found))
        print(summary(found) + ("" if pending is not None else "; queue positions unreadable (visibility API)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
