"""Run the policy pack offline, as `pulumi preview --policy-pack policy` would, without the Pulumi CLI.

Builds the pack by running this folder's `__main__.py` with pulumi-policy's gRPC server stubbed out (the
pack is built exactly as the CLI builds it, then nothing is served), then calls the analyzer it built with
protobuf requests: `GetAnalyzerInfo`, `Analyze` per resource and `AnalyzeStack` per case. Secret inputs are
wrapped in Pulumi's secret envelope, and a custom resource registered without a provider gets its package's
default provider (`pulumi:providers:<pkg>::default`), so the adapters see what the CLI sends.

    .venv-policy/bin/python policy/offline_check.py cases.json > results.json

cases.json: {"cases": {"<id>": [resource, ...]}}, a resource being {"type", "name", "urn", "custom", "protect",
"provider_urn", "inputs" (camelCase), "secret_paths" (dotted, list indexes as numbers), "parent",
"dependencies", "property_dependencies"} (the synth engine's Registration fields).
Output: {"policies": {"<name>": "MANDATORY"|"ADVISORY"}, "results": {"<id>": [{"policy", "enforcement",
"urn", "message"}]}}.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi_policy.policy as pulumi_policy_impl
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2

HERE = Path(__file__).resolve().parent
_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


class _Built(Exception):
    """Raised where PolicyPack would start serving: the pack is fully built by then."""


def build_analyzer() -> Any:
    """Run __main__.py and return the analyzer servicer its PolicyPack registered."""
    captured: dict[str, Any] = {}

    class _Server:
        def add_insecure_port(self, address: str) -> int:
            return 0

        def start(self) -> None:
            raise _Built

    pulumi_policy_impl.grpc = SimpleNamespace(server=lambda *a, **k: _Server())
    pulumi_policy_impl.analyzer_pb2_grpc = SimpleNamespace(
        add_AnalyzerServicer_to_server=lambda servicer, server: captured.setdefault("servicer", servicer)
    )
    sys.path.insert(0, str(HERE))  # as the language host does when it runs the pack's folder
    try:
        runpy.run_path(str(HERE / "__main__.py"), run_name="__main__")
    except _Built:
        pass
    return captured["servicer"]


def _with_secrets(inputs: dict, secret_paths: list[str]) -> dict:
    out = json.loads(json.dumps(inputs))
    for path in secret_paths:
        parts = path.split(".")
        parent: Any = out
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        parent[last] = {_SIG: _SECRET_SIG, "value": parent[last]}
    return out


def _struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def _provider(r: dict) -> dict:
    urn = r.get("provider_urn")
    if not urn and r.get("custom") and not r["type"].startswith("pulumi:providers:"):
        stack_project = r["urn"].split("::")[:2]
        urn = "::".join(stack_project + [f"pulumi:providers:{r['type'].split(':')[0]}", "default"])
    if not urn:
        return {}
    return {
        "provider": analyzer_pb2.AnalyzerProviderResource(
            type=urn.split("::")[-2].rsplit("$", 1)[-1], urn=urn, name=urn.rsplit("::", 1)[-1]
        )
    }


def _diagnostics(response: Any, default_urn: str = "") -> list[dict]:
    return [
        {
            "policy": d.policyName,
            "enforcement": analyzer_pb2.EnforcementLevel.Name(d.enforcementLevel),
            "urn": d.urn or default_urn,
            "message": d.message,
        }
        for d in response.diagnostics
    ]


def analyze(servicer: Any, resources: list[dict]) -> list[dict]:
    found: list[dict] = []
    stack = []
    for r in resources:
        common = dict(
            type=r["type"],
            properties=_struct(_with_secrets(r["inputs"], r.get("secret_paths") or [])),
            urn=r["urn"],
            name=r["name"],
            options=analyzer_pb2.AnalyzerResourceOptions(protect=bool(r.get("protect"))),
            **_provider(r),
        )
        found += _diagnostics(servicer.Analyze(analyzer_pb2.AnalyzeRequest(**common), None), r["urn"])
        stack.append(
            analyzer_pb2.AnalyzerResource(
                parent=r.get("parent") or "",
                dependencies=r.get("dependencies") or [],
                propertyDependencies={
                    k: analyzer_pb2.AnalyzerPropertyDependencies(urns=v)
                    for k, v in (r.get("property_dependencies") or {}).items()
                },
                **common,
            )
        )
    found += _diagnostics(servicer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=stack), None))
    return found


def main(argv: list[str]) -> int:
    cases = json.loads(Path(argv[1]).read_text())["cases"]
    servicer = build_analyzer()
    info = servicer.GetAnalyzerInfo(None, None)
    json.dump(
        {
            "pack": info.name,
            "policies": {p.name: analyzer_pb2.EnforcementLevel.Name(p.enforcementLevel) for p in info.policies},
            "results": {case: analyze(servicer, resources) for case, resources in cases.items()},
        },
        sys.stdout,
        indent=1,
        sort_keys=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
