"""The live-cloud workflow's decisions (.github/workflows/live-cloud.yml): what a run costs at most, what the janitor
must do to a stack a run left behind, and whether the run trained and exported. Each decision is a pure function of
what a CLI printed (tests/reference/live_ci/ records those outputs; tests/test_live_ci.py); `main` runs the CLIs.

    python -m tools.live_ci cost INVENTORY.json WORKFLOW.yml [--budget USD]
    python -m tools.live_ci janitor ORG/STACK
    python -m tools.live_ci wait-job NAMESPACE RAYJOB --timeout-seconds N
    python -m tools.live_ci check-run ATTEMPTS.jsonl GATE_SUMMARY.json EXPORT.json --steps N

Sources of the shapes read:
- `pulumi stack ls --json`: pulumi/pulumi pkg/cmd/pulumi/stack/stack_ls.go @0dfc918789d9d0fb6d9fa153899ba195693bd606,
  `stackSummaryJSON` (name, current, lastUpdate, updateInProgress, resourceCount, url; an update in progress has no
  lastUpdate, `isUpdateInProgress`), the name as the backend's stack reference prints it (`org/project/stack`, or
  shorter for the current organization and project);
- `pulumi stack export`: the deployment's `resources` and `pending_operations` (`resource`, `type`: creating,
  updating, deleting, reading, importing; sdk/go/common/apitype/core.go and pkg/resource/deploy operation types);
  a pending create is a resource the engine started to create and never recorded: it may exist outside the state;
- `kubectl get rayjob -o json`: KubeRay's RayJob status (`jobDeploymentStatus`, `jobStatus`, `reason`, `message`;
  ray-operator/apis/ray/v1/rayjob_types.go `IsJobDeploymentTerminal`: "Terminal states are either Complete or
  Failed"; schemas/kuberay-v1.7.0 validates the recorded objects);
- the job's own records: pod_programs/attempts.py (one JSON line per attempt, `result`), pod_programs/gate_checks.py
  `summary` (`passed`, `failed`, `checks`) and pod_programs/export_checkpoints.py's `EXPORT.json` (`final`, `files`,
  `bytes`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import yaml

# The jobs during which the stack exists: the run brings it up and the cleanup takes it down (their timeouts bound
# how long anything is billed).
STACK_JOBS = ("live", "cleanup")
# Pulumi's own resources: no cloud cost, and no destroy needed for them alone.
_PULUMI_OWN = ("pulumi:pulumi:Stack", "pulumi:providers:")
BUCKET_TYPE = "gcp:storage/bucket:Bucket"


# --- cost -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostStatement:
    hours: float
    model: str  # the capacity model whose lines cost the most per hour (the chain may land on any of them)
    usd_per_hour: Optional[float]  # None while a line of that model has no price
    unknown: tuple[str, ...]

    @property
    def usd(self) -> Optional[float]:
        return None if self.usd_per_hour is None else self.usd_per_hour * self.hours


def stack_hours(workflow: dict) -> float:
    """The longest the stack can exist in one run: the timeouts of the jobs that hold it, in hours."""
    minutes = 0
    for name in STACK_JOBS:
        job = workflow["jobs"][name]
        if "timeout-minutes" not in job:
            raise ValueError(f"job {name!r} has no timeout-minutes: the stack's lifetime would be unbounded")
        minutes += int(job["timeout-minutes"])
    return minutes / 60


def cost_statement(estimate: dict, hours: float) -> CostStatement:
    """From the stack's `costEstimate` output (core/cost.py): the capacity models the stack may land on (its chain,
    not the list-price reference), the dearest per hour, times the hours the stack can exist. A model with an
    unknown line makes the statement unknown, naming the lines."""
    per_model = {m: t for m, t in estimate["perHourByCapacityModel"].items() if m != "list-price"}
    if not per_model:
        raise ValueError("the estimate names no capacity model")
    unknown = sorted({item for t in per_model.values() for item in t["unknown"]})
    model = max(per_model, key=lambda m: per_model[m]["knownUsd"])
    if unknown:
        return CostStatement(hours, model, None, tuple(unknown))
    return CostStatement(hours, model, float(per_model[model]["knownUsd"]), ())


def cost_markdown(s: CostStatement, budget: Optional[float]) -> tuple[bool, str]:
    """(the run may start, the job summary's lines)."""
    out = ["## Cost of this run (the stack's own estimate, core/cost.py)", ""]
    if s.usd_per_hour is None:
        out.append(f"unknown: no price for {', '.join(s.unknown)}; set them in the CI_LIVE_PRICES variable")
        return False, "\n".join(out) + "\n"
    assert s.usd is not None
    out.append(
        f"at most ${s.usd:,.2f}: ${s.usd_per_hour:,.2f}/h (GPUs on {s.model}, the dearest model of the chain) x "
        f"{s.hours:g} h (the timeouts of the jobs that hold the stack: {', '.join(STACK_JOBS)})"
    )
    if budget is not None and s.usd > budget:
        out.append(f"refused: above the budget of ${budget:,.2f} (CI_LIVE_MAX_USD)")
        return False, "\n".join(out) + "\n"
    return True, "\n".join(out) + "\n"


# --- janitor --------------------------------------------------------------------------------------------------
@dataclass
class JanitorPlan:
    found: bool
    cancel: bool = False  # an update holds the stack's lock (a run stopped mid-update)
    refresh: bool = False  # pending operations to reconcile with the cloud
    bucket: Optional[str] = None  # empty it before the destroy (a non-empty bucket stops the destroy)
    destroy: bool = False
    orphans: list[str] = field(default_factory=list)  # pending creates dropped from the state: check by hand

    @property
    def nothing(self) -> bool:
        return not (self.cancel or self.refresh or self.destroy)


def _matches(name: str, stack: str) -> bool:
    """A `pulumi stack ls` name against `org/stack` or `org/project/stack`: the CLI leaves out the current
    organization and project, so the shorter name matches by its last parts."""
    want, got = stack.split("/"), name.split("/")
    return got[-1] == want[-1] and (len(got) < 2 or len(want) < 2 or got[0] == want[0])


def stack_summary(stack_ls: list[dict], stack: str) -> Optional[dict]:
    found = [s for s in stack_ls if _matches(s["name"], stack)]
    if len(found) > 1:
        raise ValueError(f"{len(found)} stacks match {stack!r}: {[s['name'] for s in found]}")
    return found[0] if found else None


def cloud_resources(export: dict) -> list[dict]:
    return [r for r in export.get("deployment", {}).get("resources") or [] if not r["type"].startswith(_PULUMI_OWN)]


def _orphan(resource: dict) -> str:
    """A pending create as a person looks for it: its URN and the cloud name its inputs give it."""
    inputs = resource.get("inputs") or {}
    name = next((inputs[k] for k in ("name", "instanceId", "accountId") if inputs.get(k)), None)
    return f"{resource['urn']} (name {name})" if name else resource["urn"]


def janitor_plan(stack_ls: list[dict], export: Optional[dict], stack: str) -> JanitorPlan:
    """What to do so that nothing of `stack` is left: release a dead run's lock, reconcile pending operations (pending
    creates are dropped and reported: they may exist outside the state), empty the bucket, destroy."""
    summary = stack_summary(stack_ls, stack)
    if summary is None:
        return JanitorPlan(found=False)
    plan = JanitorPlan(found=True, cancel=bool(summary.get("updateInProgress")))
    deployment = (export or {}).get("deployment", {})
    pending = deployment.get("pending_operations") or []
    if pending:
        plan.refresh = True
        plan.orphans = sorted(_orphan(op["resource"]) for op in pending if op["type"] == "creating")
    resources = cloud_resources(export or {})
    if resources or pending:
        plan.destroy = True
    buckets = [r for r in resources if r["type"] == BUCKET_TYPE]
    if buckets:
        plan.bucket = (buckets[0].get("outputs") or {}).get("name")
    return plan


def janitor_commands(plan: JanitorPlan, stack: str) -> list[list[str]]:
    """The commands that carry the plan out, in order."""
    cmds: list[list[str]] = []
    if plan.cancel:
        cmds.append(["pulumi", "cancel", "--yes", "--stack", stack])
    if plan.refresh:
        cmds.append(["pulumi", "refresh", "--yes", "--skip-preview", "--clear-pending-creates", "--stack", stack])
    if plan.bucket:
        cmds.append(["gcloud", "storage", "rm", "--recursive", "--all-versions", f"gs://{plan.bucket}/**"])
    if plan.destroy:
        cmds.append(["pulumi", "destroy", "--yes", "--skip-preview", "--stack", stack])
    return cmds


# --- the run's result -----------------------------------------------------------------------------------------
def rayjob_state(rayjob: dict) -> tuple[bool, bool, str]:
    """(terminal, succeeded, one line) of a RayJob."""
    st = rayjob.get("status") or {}
    deployment, job = st.get("jobDeploymentStatus", ""), st.get("jobStatus", "")
    line = f"RayJob {rayjob['metadata']['name']}: deployment {deployment or 'New'}, job {job or '-'}"
    if st.get("reason") or st.get("message"):
        line += f" ({st.get('reason', '')}: {st.get('message', '')})"
    terminal = deployment in ("Complete", "Failed", "ValidationFailed")
    return terminal, deployment == "Complete" and job == "SUCCEEDED", line


def run_verdict(attempts: list[dict], gate: dict, manifest: dict, steps: int) -> list[str]:
    """Every problem of a finished run, one line each; empty when it gated, trained `steps` steps and exported."""
    problems = []
    if not attempts or attempts[-1].get("result") != "succeeded":
        last = attempts[-1] if attempts else {}
        problems.append(f"attempts: the last of {len(attempts)} ended {last.get('result', 'nowhere')!r}")
    if not gate.get("passed"):
        problems.append(f"readiness gate: failed {', '.join(gate.get('failed', [])) or '(no checks)'}")
    elif not gate.get("checks"):
        problems.append("readiness gate: the summary holds no check")
    if manifest.get("final") != f"step_{steps}":
        problems.append(f"export: final checkpoint {manifest.get('final')!r}, expected 'step_{steps}'")
    if not manifest.get("files") or not manifest.get("bytes"):
        problems.append(f"export: {manifest.get('files', 0)} files, {manifest.get('bytes', 0)} bytes")
    return problems


# --- the commands ---------------------------------------------------------------------------------------------
Runner = Callable[[list[str]], subprocess.CompletedProcess]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE)


def janitor(stack: str, run: Runner = _run) -> int:
    def state() -> tuple[list[dict], Optional[dict]]:
        listing = json.loads(run(["pulumi", "stack", "ls", "--json"]).stdout or "[]")
        if stack_summary(listing, stack) is None:
            return listing, None
        return listing, json.loads(run(["pulumi", "stack", "export", "--stack", stack]).stdout)

    plan = janitor_plan(*state(), stack)
    if not plan.found:
        print(f"janitor: no stack {stack}: nothing to clean")
        return 0
    if plan.nothing:
        print(f"janitor: {stack} holds no cloud resource: nothing to clean")
        return 0
    for cmd in janitor_commands(plan, stack):
        try:
            run(cmd)
        except subprocess.CalledProcessError as e:
            if cmd[:3] != ["gcloud", "storage", "rm"]:  # an already empty bucket is not an error here
                print(f"janitor: {' '.join(cmd)} failed ({e.returncode})", file=sys.stderr)
                return 1
    left = cloud_resources(state()[1] or {})
    if left:
        print(f"janitor: {len(left)} resources still in {stack}: {[r['urn'] for r in left][:10]}", file=sys.stderr)
        return 1
    if plan.orphans:
        print(
            "janitor: these creates were interrupted and are no longer in the state; they may still exist in the "
            "project (docs/operations.md, Live-cloud CI):\n  " + "\n  ".join(plan.orphans),
            file=sys.stderr,
        )
        return 1
    print(f"janitor: {stack} destroyed")
    return 0


def wait_job(namespace: str, name: str, timeout_seconds: float, poll_seconds: float = 30, run: Runner = _run) -> int:
    deadline = time.monotonic() + timeout_seconds
    line = ""
    while time.monotonic() < deadline:
        rayjob = json.loads(run(["kubectl", "-n", namespace, "get", "rayjob", name, "-o", "json"]).stdout)
        terminal, ok, line = rayjob_state(rayjob)
        print(line, flush=True)
        if terminal:
            return 0 if ok else 1
        time.sleep(poll_seconds)
    print(f"wait-job: not finished after {timeout_seconds:g} s: {line}", file=sys.stderr)
    return 1


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.live_ci", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cost")
    c.add_argument("inventory", type=Path, help="build/<stack>/inventory.json of the offline synth")
    c.add_argument("workflow", type=Path)
    c.add_argument("--budget", type=float, default=None)
    j = sub.add_parser("janitor")
    j.add_argument("stack", help="<org>/<stack> or <org>/<project>/<stack>")
    w = sub.add_parser("wait-job")
    w.add_argument("namespace")
    w.add_argument("rayjob")
    w.add_argument("--timeout-seconds", type=float, required=True)
    r = sub.add_parser("check-run")
    r.add_argument("attempts", type=Path)
    r.add_argument("gate", type=Path)
    r.add_argument("export", type=Path)
    r.add_argument("--steps", type=int, required=True)
    args = ap.parse_args(argv)
    if args.command == "cost":
        inventory: Any = json.loads(args.inventory.read_text())
        statement = cost_statement(
            inventory["outputs"]["costEstimate"], stack_hours(yaml.safe_load(args.workflow.read_text()))
        )
        ok, text = cost_markdown(statement, args.budget)
        print(text, end="")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(text)
        return 0 if ok else 1
    if args.command == "janitor":
        return janitor(args.stack)
    if args.command == "wait-job":
        return wait_job(args.namespace, args.rayjob, args.timeout_seconds)
    attempts = [json.loads(line) for line in args.attempts.read_text().splitlines() if line.strip()]
    problems = run_verdict(attempts, json.loads(args.gate.read_text()), json.loads(args.export.read_text()), args.steps)
    for p in problems:
        print(f"check-run: {p}", file=sys.stderr)
    if not problems:
        print(f"check-run: gated, trained {args.steps} steps, exported step_{args.steps}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
