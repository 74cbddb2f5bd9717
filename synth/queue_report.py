"""The platform's queue offline: `python -m synth.queue_report <platform>` synthesizes the platform and every shipped
experiment stack that names it (Pulumi.<stack>.yaml with its platformStack), and prints the queue's quota (the
platform's `queue` output) and what each queued Ray object asks of it: its pods' requests, head, workers and
submitter, as Kueue counts a Workload's PodSets (the submitter is one: kueue PR #3729). It says whether they fit
together; it does not play Kueue's admission (on the cluster: `python -m cli.team`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from core import catalog, node_fit
from synth import engine

GPU = catalog.GPU_RESOURCE


@dataclass(frozen=True)
class Demand:
    stack: str
    what: str  # "RayJob <name>" / "RayCluster <name>"
    queue: str
    priority: str
    gpus: float
    cpu: float
    memory_gib: float


def _pods(spec: dict) -> list[tuple[int, dict]]:
    """(count, pod template) of a Ray cluster spec: the head, each worker group's replicas."""
    out = [(1, spec["headGroupSpec"]["template"])]
    for g in spec.get("workerGroupSpecs") or []:
        out.append((int(g.get("replicas", 1)) * int(g.get("numOfHosts") or 1), g["template"]))
    return out


def _gpus(template: dict) -> float:
    total = 0.0
    for c in (template.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        total += node_fit.quantity((res.get("limits") or {}).get(GPU, (res.get("requests") or {}).get(GPU, 0)))
    return total


def demands(r: engine.SynthResult) -> list[Demand]:
    """What each Ray object the stack renders with a queue label asks of the queue."""
    out = []
    for reg in r.kubernetes_objects():
        kind = reg.type.rsplit(":", 1)[-1]
        if kind not in ("RayJob", "RayCluster"):
            continue
        labels = (reg.inputs.get("metadata") or {}).get("labels") or {}
        if catalog.KUEUE_QUEUE_NAME_LABEL not in labels:
            continue
        spec = reg.inputs["spec"]
        pods = _pods(spec["rayClusterSpec"] if kind == "RayJob" else spec)
        if kind == "RayJob":
            pods.append((1, spec["submitterPodTemplate"]))
        gpus = cpu = mem = 0.0
        for count, template in pods:
            req = node_fit.pod_request(template.get("spec") or {}).total
            gpus += count * _gpus(template)
            cpu += count * req.cpu
            mem += count * req.memory_gib
        out.append(
            Demand(
                stack=r.stack,
                what=f"{kind} {reg.inputs['metadata']['name']}",
                queue=labels[catalog.KUEUE_QUEUE_NAME_LABEL],
                priority=labels.get(catalog.KUEUE_PRIORITY_CLASS_LABEL, ""),
                gpus=gpus,
                cpu=cpu,
                memory_gib=mem,
            )
        )
    return out


def experiments_of(platform: str) -> list[str]:
    out = []
    for stack in engine.experiment_stacks():
        cfg = (engine._load_yaml(engine.ROOT / f"Pulumi.{stack}.yaml") or {}).get("config") or {}
        if str(cfg.get("nemo-rl-gke:platformStack", "")).rsplit("/", 1)[-1] == platform:
            out.append(stack)
    return out


def report(platform: str) -> str:
    p = engine.run(platform)
    if p.error:
        return f"{platform}: {p.error.strip().splitlines()[0]}"
    queue = p.outputs.get("queue")
    if not queue:
        return f"{platform}: no queue (queue is none): jobs start when created, nothing waits in turn"
    found = demands(p)
    for stack in experiments_of(platform):
        r = engine.run(stack)
        found += demands(r) if r.error is None else []
    gpu_quota = float(queue["gpuQuota"])
    cpu_flavor = queue["quota"]["nemo-rl-cpu"]
    lines = [
        f"queue {queue['clusterQueue']} ({queue['queueing']}, preemption {queue['preemption']}): quota "
        f"{gpu_quota:g} GPUs; heads and submitters {node_fit.quantity(cpu_flavor['cpu']):g} CPUs / "
        f"{node_fit.quantity(cpu_flavor['memory']) / 2**30:.1f} GiB",
    ]
    width = max(len(f"{d.stack}  {d.what}") for d in found)
    for d in found:
        head = f"{d.stack}  {d.what}".ljust(width)
        lines.append(
            f"  {head}  {d.gpus:>4g} GPUs  {d.cpu:>7.1f} CPUs  {d.memory_gib:>8.1f} GiB  {d.priority} in {d.queue}"
        )
    asked = sum(d.gpus for d in found)
    experiments = sum(d.gpus for d in found if d.stack != platform)
    if experiments:
        lines.append(f"the experiments alone: {experiments:g} GPUs")
    verdict = (
        "they fit at once"
        if asked <= gpu_quota
        else "more than the quota: Kueue admits each whole when its GPUs are free, the rest wait holding nothing"
    )
    lines.append(f"together {asked:g} GPUs of {gpu_quota:g}: {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m synth.queue_report <platform stack>", file=sys.stderr)
        sys.exit(2)
    print(report(sys.argv[1]))
