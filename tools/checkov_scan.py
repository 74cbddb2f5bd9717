"""Scan a stack's Ray pods with checkov: expand the rendered head and worker templates into Pod manifests,
write them beside the stack's NetworkPolicies into a temporary directory, run checkov's Kubernetes framework
on it and count the failed checks per pod.

    python -m tools.checkov_scan dev [--checkov PATH] [--set key=value ...] [--json]

checkov has heavy dependencies, so it lives in its own virtual environment (not the project's): `--checkov`,
else `$CHECKOV`, else `.venv-checkov/bin/checkov` (`make checkov` creates it), else `checkov` on PATH. Pinned version:
3.3.30.

Why expand: checkov judges Pods, Deployments and the like, not KubeRay custom resources; KubeRay creates one
Pod per group replica from the group's `template` (metadata + spec), which is what the cluster really runs.
The expansion keeps the template as rendered (KubeRay's own additions, such as the probes it injects, are
not ours to claim) and names the pods the way KubeRay does (`<cluster>-head`, `<cluster>-<group>-worker`).
NetworkPolicies are scanned together so that checks which look for a policy selecting the pod can see them.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHECKOV_VERSION = "3.3.30"
DEFAULT_CHECKOV = ".venv-checkov/bin/checkov"  # `make checkov` creates it


def _pod(name: str, namespace: Optional[str], template: dict) -> dict:
    meta = copy.deepcopy(template.get("metadata") or {})
    meta["name"] = name
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}


def ray_pods(cluster_name: str, namespace: Optional[str], spec: dict) -> list[dict]:
    """Pods for a RayCluster `spec` (or a RayJob's `rayClusterSpec`): the head, then one per worker group."""
    pods = [_pod(f"{cluster_name}-head", namespace, spec["headGroupSpec"]["template"])]
    for group in spec.get("workerGroupSpecs") or []:
        pods.append(_pod(f"{cluster_name}-{group['groupName']}-worker", namespace, group["template"]))
    return pods


def pods_and_policies(objects: Iterable[dict]) -> tuple[list[dict], list[dict]]:
    """Expand every RayCluster (and every RayJob that embeds a cluster) into Pods; collect NetworkPolicies."""
    pods: list[dict] = []
    policies: list[dict] = []
    for obj in objects:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind == "RayCluster":
            pods += ray_pods(meta["name"], meta.get("namespace"), obj["spec"])
        elif kind == "RayJob" and (obj.get("spec") or {}).get("rayClusterSpec"):
            pods += ray_pods(f"{meta['name']}-raycluster", meta.get("namespace"), obj["spec"]["rayClusterSpec"])
        elif kind == "NetworkPolicy":
            policies.append(copy.deepcopy(obj))
    return pods, policies


def stack_objects(stack: str, overrides: Optional[dict[str, Any]] = None) -> list[dict]:
    """The stack's Kubernetes objects as the offline synth renders them."""
    from synth import engine
    from synth.render import manifest_of

    result = engine.run(stack, overrides or None)
    if result.error:
        raise SystemExit(f"synth of {stack} failed: {result.error}")
    return [manifest_of(r) for r in result.kubernetes_objects()]


def find_checkov(flag: Optional[str]) -> str:
    for candidate in (flag, os.environ.get("CHECKOV"), DEFAULT_CHECKOV):
        if candidate and Path(candidate).is_file():
            return candidate
    found = shutil.which("checkov")
    if found:
        return found
    raise SystemExit(
        f"checkov not found: install checkov=={CHECKOV_VERSION} in its own venv "
        f"(`make checkov`, or python -m venv .venv-checkov && .venv-checkov/bin/pip install "
        f"checkov=={CHECKOV_VERSION}) or pass --checkov"
    )


def run_checkov(checkov: str, directory: Path) -> dict:
    proc = subprocess.run(
        [
            checkov,
            "--framework",
            "kubernetes",
            "--directory",
            str(directory),
            "--output",
            "json",
            "--compact",
            "--quiet",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    # checkov exits 1 when a check fails; anything else with no JSON is a real failure.
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise SystemExit(f"checkov exited {proc.returncode} without a JSON report:\n{proc.stderr[-3000:]}") from e
    if isinstance(report, list):  # one entry per framework
        report = next(r for r in report if r.get("check_type") == "kubernetes")
    return report


def failed_by_pod(report: dict, pods: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """Pod name -> sorted [(check id, check name)] of the failed checks whose resource is that pod."""
    names = {p["metadata"]["name"] for p in pods}
    out: dict[str, list[tuple[str, str]]] = {n: [] for n in sorted(names)}
    for check in (report.get("results") or {}).get("failed_checks", []):
        # checkov names Kubernetes resources "<Kind>.<namespace>.<name>".
        kind, _, rest = check["resource"].partition(".")
        name = rest.split(".", 1)[-1]
        if kind == "Pod" and name in out:
            out[name].append((check["check_id"], check["check_name"]))
    return {n: sorted(set(v)) for n, v in out.items()}


def scan(
    stack: str, checkov: str, overrides: Optional[dict[str, Any]] = None, keep: Optional[Path] = None
) -> dict[str, list[tuple[str, str]]]:
    pods, policies = pods_and_policies(stack_objects(stack, overrides))
    if not pods:
        raise SystemExit(f"stack {stack} renders no Ray pods")
    tmp = Path(tempfile.mkdtemp(prefix="checkov-"))
    try:
        for obj in pods + policies:
            name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
            (tmp / name).write_text(yaml.safe_dump(obj, sort_keys=True))
        report = run_checkov(checkov, tmp)
        if keep is not None:
            shutil.copytree(tmp, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return failed_by_pod(report, pods)


def _parse_set(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set wants key=value, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.checkov_scan", description=__doc__.splitlines()[0])
    ap.add_argument("stack")
    ap.add_argument("--checkov", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", action="store_true", help="print the failed checks as JSON")
    ap.add_argument("--keep", type=Path, default=None, help="copy the scanned manifests to this directory")
    args = ap.parse_args(argv)
    result = scan(args.stack, find_checkov(args.checkov), _parse_set(args.set), args.keep)
    if args.json:
        print(json.dumps({pod: [list(c) for c in checks] for pod, checks in result.items()}, indent=2))
        return 0
    for pod, checks in result.items():
        print(f"{pod}: {len(checks)} failed checks")
        for check_id, name in checks:
            print(f"  {check_id}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
