"""The policy pack over one stack's offline synth: what `pulumi preview --policy-pack policy` would report.

    make policy-check STACK=dev
    .venv/bin/python -m synth.policy_check dev [--set key=value ...] [--policy-python .venv-policy/bin/python]

Runs the program under the in-process engine, hands every registration (components, secret envelopes and
explicit providers included) to policy/offline_check.py in the pack's own venv (pulumi-policy pins protobuf 5,
the program's venv has protobuf 6), and prints one line per violation. Exit 0: no mandatory violation
(advisories are printed); 1: a mandatory one; 2: the stack's settings were refused (their lines are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from synth import engine

ROOT = Path(__file__).resolve().parents[1]
POLICY_DIR = ROOT / "policy"


def record(r: engine.Registration) -> dict:
    """One registration in offline_check.py's case format."""
    return {
        "type": r.type,
        "name": r.name,
        "urn": r.urn,
        "custom": bool(r.custom),
        "protect": r.protect,
        "provider_urn": r.provider_urn,
        "inputs": r.inputs,
        "secret_paths": list(r.secret_paths),
        "parent": r.parent,
        "dependencies": list(r.dependencies),
        "property_dependencies": dict(r.property_dependencies),
    }


def default_policy_python() -> Path:
    venv = Path(os.environ.get("POLICY_VENV", ".venv-policy"))
    return (venv if venv.is_absolute() else ROOT / venv) / "bin" / "python"


def run_pack(cases: dict[str, list[dict]], policy_python: Path) -> dict:
    """offline_check.py's answer for `cases` ({"policies", "results": {case: [diagnostic]}})."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.json"
        path.write_text(json.dumps({"cases": cases}))
        proc = subprocess.run(
            [str(policy_python), str(POLICY_DIR / "offline_check.py"), str(path)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=POLICY_DIR,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"policy/offline_check.py failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m synth.policy_check", description=__doc__.splitlines()[0])
    ap.add_argument("stack")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    ap.add_argument(
        "--policy-python",
        type=Path,
        default=None,
        help="the policy pack venv's python (default: $POLICY_VENV or .venv-policy)",
    )
    ap.add_argument(
        "--stack-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the stack's config file when it is not Pulumi.<stack>.yaml here (the CLI's --config-file)",
    )
    args = ap.parse_args(argv)
    overrides = dict(kv.split("=", 1) for kv in args.set)
    python = args.policy_python or default_policy_python()
    if not python.exists():
        print(
            f"{python} is missing: run `make .venv-policy/.installed` (it creates the policy pack's venv from "
            "policy/requirements.txt) or pass --policy-python",
            file=sys.stderr,
        )
        return 2
    try:
        result = engine.run(args.stack, overrides, stack_file=args.stack_file)
    except (engine.StackNotFound, engine.StackConfigError) as e:
        print(e, file=sys.stderr)
        return 2
    if result.error:
        print(result.error, file=sys.stderr)
        return 2
    found = run_pack({args.stack: [record(r) for r in result.resources]}, python)["results"][args.stack]
    for d in sorted(found, key=lambda d: (d["enforcement"], d["policy"], d["urn"])):
        print(f"{d['enforcement']} {d['policy']}: {d['urn']}: {d['message']}")
    mandatory = sum(d["enforcement"] == "MANDATORY" for d in found)
    print(
        f"policy pack on stack {args.stack}: {mandatory} mandatory, {len(found) - mandatory} advisory "
        f"violation(s) over {len(result.resources)} resources"
    )
    return 1 if mandatory else 0


if __name__ == "__main__":
    sys.exit(main())
