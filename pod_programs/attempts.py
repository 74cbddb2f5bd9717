"""Bounded attempts of a standing-cluster job: rerun the job's steps after a failure, from the newest checkpoint.

Usage (the RayJob entrypoint, on the Ray head, from NeMo-RL's work directory):
    attempts.py --attempts N --log <file.jsonl> --resource GPU --amount <nodes x GPUs> --capacity-wait-seconds S
                -- <step 1 argv> --- <step 2 argv> --- ...

A RayJob that selects a standing RayCluster gets no retries from KubeRay: `backoffLimit` > 0 with a clusterSelector
is refused from KubeRay v1.6.0 (ray-operator/controllers/ray/utils/validation.go, commit 5d59a37b3) and before that a
retry deleted the selected cluster (kuberay #4516). So the loop is ours. Each attempt:
1. waits until the cluster has the job's resources again (`ray.cluster_resources()` totals, as NeMo-RL's own check
   compares them: nemo_rl/distributed/virtual_cluster.py), up to the bound, polling; a spot node that was lost
   comes back through the cluster autoscaler and KubeRay's worker group;
2. runs every step in order (the readiness gate first: it runs again on the new node set), stopping at the first
   that fails; NeMo-RL resumes from the newest `step_N` of the run's checkpoint directory by itself;
3. appends one JSON line to the log (on Lustre, beside the gate's summary) and prints it.
It exits 0 after the first attempt whose steps all succeed, else with the last failing step's code once the attempts
are spent or the capacity did not come back in time. Standard library only; `ray` is imported only to wait.

A failure no retry can fix ends the attempts at once (result "deterministic"), instead of waiting for capacity and
running the gate again for the same error: a step that exits 2 (Python's and argparse's usage error, a script that
cannot be opened), or whose output ends with a Python exception of a kind that a new node set cannot change (an import
or syntax error, a config NeMo-RL's loader refuses: DETERMINISTIC_ERRORS). The step's output is passed through as it
comes and its last lines are kept for that test. Anything else (a lost node: Ray's ActorDiedError, NodeDiedError, a
NCCL error; a failed readiness gate) is retried.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time
from typing import Callable, Optional

SEPARATOR = "---"
PREFIX = "nemo-rl-gke attempts:"


def split_steps(words: list[str]) -> list[list[str]]:
    steps: list[list[str]] = []
    cur: list[str] = []
    for w in words:
        if w == SEPARATOR:
            if cur:
                steps.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        steps.append(cur)
    return steps


def ray_totals() -> dict:
    import ray  # NeMo-RL's environment has it; imported here only

    ray.init(address="auto", log_to_driver=False)
    try:
        return dict(ray.cluster_resources())
    finally:
        ray.shutdown()


def wait_for_capacity(
    resource: str, amount: float, bound_s: float, poll_s: float, totals: Optional[Callable[[], dict]] = None
) -> tuple[bool, float]:
    """(capacity there, seconds waited)."""
    totals = totals or ray_totals
    start = time.monotonic()
    while True:
        try:
            have = float(totals().get(resource, 0))
        except Exception as e:  # the head restarting: wait like for a node
            print(f"{PREFIX} cluster not reachable yet: {type(e).__name__}", flush=True)
            have = 0.0
        waited = time.monotonic() - start
        if have >= amount:
            return True, waited
        if waited >= bound_s:
            return False, waited
        print(f"{PREFIX} waiting for capacity: {resource} {have:g}/{amount:g}", flush=True)
        time.sleep(poll_s)


# Python exceptions a rerun on new nodes cannot change: the code or the environment cannot be imported, or the config
# is refused by NeMo-RL's loader (hydra-core's override parser, OmegaConf's struct mode), before any training. Matched
# on the last exception line of a step's output, also inside Ray's wrapper (`ray.exceptions.RayTaskError(ImportError)`).
DETERMINISTIC_ERRORS = (
    "ModuleNotFoundError",
    "ImportError",
    "SyntaxError",
    "IndentationError",
    "NameError",
    "OverrideParseException",
    "ConfigCompositionException",
    "ConfigKeyError",
    "ConfigAttributeError",
    "MissingMandatoryValue",
    "InterpolationResolutionError",
)
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(\(([\w.]+)\))?: ")
TAIL_LINES = 200


def deterministic_failure(code: int, tail: list[str]) -> Optional[str]:
    """Why a failed step would fail the same way on every attempt, or None (retry)."""
    if code == 2:
        return "exit code 2 (a usage error)"
    for line in reversed(tail):
        m = _EXCEPTION_LINE.match(line.strip())
        if m:
            names = {m.group(1).rsplit(".", 1)[-1], (m.group(3) or "").rsplit(".", 1)[-1]}
            hit = sorted(names & set(DETERMINISTIC_ERRORS))
            return f"{hit[0]}: {line.strip()[:200]}" if hit else None
    return None


def run_step(step: list[str]) -> tuple[int, list[str]]:
    """Run one step, passing its output through as it comes; (exit code, its last lines)."""
    tail: collections.deque = collections.deque(maxlen=TAIL_LINES)
    try:
        proc = subprocess.Popen(
            step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1
        )
    except OSError as e:  # the program is missing: no attempt can run it
        print(f"{PREFIX} cannot start {step[:4]}: {e}", flush=True)
        return 2, [str(e)]
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        tail.append(line.rstrip("\n"))
    return proc.wait(), list(tail)


def log_attempt(path: str, record: dict) -> None:
    line = json.dumps(record, sort_keys=True)
    print(f"{PREFIX} {line}", flush=True)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--resource", default="GPU")
    ap.add_argument("--amount", type=float, required=True)
    ap.add_argument("--capacity-wait-seconds", type=float, required=True)
    ap.add_argument("--poll-seconds", type=float, default=15)
    ap.add_argument("steps", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    words = args.steps[1:] if args.steps[:1] == ["--"] else args.steps
    steps = split_steps(words)
    if args.attempts < 1 or not steps:
        print(f"{PREFIX} error: need --attempts >= 1 and at least one step after --", file=sys.stderr)
        return 2
    code = 1
    for attempt in range(1, args.attempts + 1):
        ok, waited = wait_for_capacity(args.resource, args.amount, args.capacity_wait_seconds, args.poll_seconds)
        record: dict = {
            "attempt": attempt,
            "of": args.attempts,
            "startedAt": time.time(),
            "capacityWaitS": round(waited),
        }
        if not ok:
            record.update(result="no-capacity", exitCode=None)
            log_attempt(args.log, record)
            return code
        failed_step, tail = None, list[str]()
        for i, step in enumerate(steps):
            code, tail = run_step(step)
            if code != 0:
                failed_step = i
                break
        record.update(endedAt=time.time(), exitCode=code)
        if failed_step is None:
            record["result"] = "succeeded"
            log_attempt(args.log, record)
            return 0
        record.update(result="failed", failedStep=step[:4])
        reason = deterministic_failure(code, tail)
        if reason is not None:
            record.update(result="deterministic", reason=reason)
            log_attempt(args.log, record)
            print(f"{PREFIX} the failure would repeat on every attempt ({reason}); ending the attempts", flush=True)
            return code
        log_attempt(args.log, record)
    return code


if __name__ == "__main__":
    sys.exit(main())
