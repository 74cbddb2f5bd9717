"""Renders an engine run into files: the inventory, the Kubernetes manifests and the dependency graph.

Everything is sorted and free of timestamps, so the same commit always writes the same bytes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from synth.engine import Registration, SynthResult

COMPUTED_NOTE = "computed by the cloud at deploy time (placeholder)"


class _ManifestDumper(yaml.SafeDumper):
    """Multi-line strings (scripts, the RayJob entrypoint) as literal blocks, so reviewers can read them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_ManifestDumper.add_representer(str, _str)


def _component_of(r: Registration, urns: dict[str, Registration]) -> str:
    """The nearest ComponentResource ancestor's name (the concern a resource belongs to)."""
    cur = r
    while cur.parent and cur.parent in urns:
        cur = urns[cur.parent]
        if not cur.custom:
            return f"{cur.type.split(':')[-1]} ({cur.name})"
    return "stack"


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        if not value:
            return [(prefix, {})]
        out = []
        for k in sorted(value):
            out.extend(_flatten(value[k], f"{prefix}.{k}" if prefix else k))
        return out
    if isinstance(value, list):
        if not value or all(not isinstance(v, (dict, list)) for v in value):
            return [(prefix, value)]
        out = []
        for i, v in enumerate(value):
            out.extend(_flatten(v, f"{prefix}[{i}]"))
        return out
    return [(prefix, value)]


def kubeconfig_cluster(kubeconfig: Any) -> str:
    """A digest of the kubeconfig's active cluster entry (server, CA), the part pulumi-kubernetes's DiffConfig compares
    (provider/pkg/provider/util.go getActiveClusterFromConfig, provider.go:553 at v4.32.0); "" when it cannot be read.
    The kubeconfig is a secret input (it holds no credential: the exec plugin authenticates), so only this digest is
    recorded, for the offline replacement plan."""
    import hashlib

    try:
        config: Any = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else None
        contexts = {c["name"]: c["context"] for c in config["contexts"]}
        clusters = {c["name"]: c["cluster"] for c in config["clusters"]}
        active = clusters[contexts[config["current-context"]]["cluster"]]
    except (yaml.YAMLError, KeyError, TypeError):
        return ""
    return hashlib.sha256(json.dumps(active, sort_keys=True).encode()).hexdigest()[:16]


def inventory_records(result: SynthResult) -> list[dict]:
    """Machine-readable inventory: one record per resource, secrets redacted, sorted by (type, name)."""
    urns = result.by_urn()
    out = []
    for r in sorted(result.resources, key=lambda r: r.key):
        out.append(
            {
                "type": r.type,
                "name": r.name,
                "component": _component_of(r, urns),
                "custom": r.custom,
                "parent": urns[r.parent].name if r.parent in urns else None,
                "provider": urns[r.provider_urn].name if r.provider_urn in urns else None,
                "options": {
                    k: v
                    for k, v in (
                        ("protect", r.protect),
                        ("retainOnDelete", r.retain_on_delete),
                        ("customTimeouts", r.custom_timeouts),
                        ("ignoreChanges", r.ignore_changes),
                        ("replaceOnChanges", r.replace_on_changes),
                        # An explicit false is kept: it makes a replacement create-first.
                        ("deleteBeforeReplace", r.delete_before_replace if r.delete_before_replace_defined else None),
                        ("import", r.import_id),
                        ("replaceWith", sorted(f"{urns[u].type} {urns[u].name}" for u in r.replace_with if u in urns)),
                    )
                    if v or (k == "deleteBeforeReplace" and v is False)
                },
                "dependsOn": sorted(f"{urns[u].type} {urns[u].name}" for u in r.dependencies if u in urns),
                # Which top-level input comes from which resource: a delete-first replacement replaces the
                # dependents whose replace-only inputs come from it (synth/compare.py, the engine's rule).
                "propertyDependencies": {
                    k: sorted(f"{urns[u].type} {urns[u].name}" for u in v if u in urns and urns[u].custom)
                    for k, v in r.property_dependencies.items()
                    if any(u in urns and urns[u].custom for u in v)
                },
                "inputs": r.redacted_inputs(),
                "secretInputs": r.secret_paths,
                "computed": r.computed,
            }
        )
        if r.type == "pulumi:providers:kubernetes":
            out[-1]["kubeconfigCluster"] = kubeconfig_cluster(r.inputs.get("kubeconfig"))
    return out


def inventory_markdown(result: SynthResult) -> str:
    records = inventory_records(result)
    by_component: dict[str, list[dict]] = {}
    for rec in records:
        if rec["custom"]:
            by_component.setdefault(rec["component"], []).append(rec)
    lines = [
        f"# Inventory of stack `{result.stack}`",
        "",
        f"{sum(1 for r in records if r['custom'])} resources in {len(by_component)} components. "
        f"Values marked *computed* are {COMPUTED_NOTE}; `[secret]` values are Pulumi secrets.",
        "",
    ]
    for component in sorted(by_component):
        lines += [f"## {component}", ""]
        for rec in by_component[component]:
            opts = ", ".join(f"{k}={v}" for k, v in rec["options"].items())
            lines.append(f"### {rec['type']} `{rec['name']}`" + (f" ({opts})" if opts else ""))
            lines.append("")
            for path, value in _flatten(rec["inputs"]):
                if isinstance(value, str) and len(value) > 160:
                    value = value[:157] + "..."
                lines.append(f"- `{path}`: {json.dumps(value, sort_keys=True)}")
            for path, value in _flatten(rec["computed"]):
                lines.append(f"- `{path}`: {json.dumps(value, sort_keys=True)} *(computed)*")
            lines.append("")
    if result.outputs:
        lines += ["## Stack outputs", ""]
        for k in sorted(result.outputs):
            v = "[secret]" if k in result.secret_outputs else result.outputs[k]
            lines.append(f"- `{k}`: {json.dumps(v, sort_keys=True)}")
        lines.append("")
    return "\n".join(lines)


def manifest_of(r: Registration) -> dict:
    """The Kubernetes object as it would be applied (secret values redacted)."""
    inputs = r.redacted_inputs()
    obj: dict[str, Any] = {k: inputs[k] for k in ("apiVersion", "kind", "metadata") if k in inputs}
    obj.update({k: v for k, v in inputs.items() if k not in obj})
    return obj


def manifest_filename(r: Registration) -> str:
    m = r.inputs.get("metadata") or {}
    kind = r.inputs.get("kind") or r.type.split(":")[-1]
    parts = [kind.lower(), m.get("namespace"), m.get("name") or r.name]
    return "-".join(p for p in parts if p) + ".yaml"


def _mermaid_id(r: Registration) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{r.type}_{r.name}")


def mermaid(result: SynthResult) -> str:
    """Dependency graph: resources grouped by component, arrows from a dependency to its dependent."""
    urns = result.by_urn()
    custom = sorted((r for r in result.resources if r.custom), key=lambda r: r.key)
    groups: dict[str, list[Registration]] = {}
    for r in custom:
        groups.setdefault(_component_of(r, urns), []).append(r)
    lines = ["flowchart LR"]
    for gi, comp in enumerate(sorted(groups)):
        lines.append(f'  subgraph g{gi}["{comp}"]')
        for r in groups[comp]:
            label = f"{r.type.split(':')[-1]}<br/>{r.name}"
            lines.append(f'    {_mermaid_id(r)}["{label}"]')
        lines.append("  end")
    edges = set()
    for r in custom:
        deps = set(r.dependencies) | {u for v in r.property_dependencies.values() for u in v}
        for u in deps:
            d = urns.get(u)
            if d is None:
                continue
            if not d.custom:  # a dependency on a component means on each of its custom children
                for c in custom:
                    if c.parent == d.urn:
                        edges.add((_mermaid_id(c), _mermaid_id(r)))
            else:
                edges.add((_mermaid_id(d), _mermaid_id(r)))
        if r.provider_urn in urns and urns[r.provider_urn].custom:
            edges.add((_mermaid_id(urns[r.provider_urn]), _mermaid_id(r)))
    lines += [f"  {a} --> {b}" for a, b in sorted(edges) if a != b]
    return "\n".join(lines) + "\n"


def component_mermaid(result: SynthResult) -> str:
    """The graph collapsed to components: an arrow when something in one depends on something in the other."""
    urns = result.by_urn()

    def comp(r: Registration) -> str:
        return _component_of(r, urns)

    custom = [r for r in result.resources if r.custom]
    names = sorted({comp(r) for r in custom})
    ids = {c: f"c{i}" for i, c in enumerate(names)}
    edges = set()
    for r in custom:
        deps = set(r.dependencies) | {u for v in r.property_dependencies.values() for u in v}
        if r.provider_urn:
            deps.add(r.provider_urn)
        for u in deps:
            d = urns.get(u)
            if d is None:
                continue
            targets = [c for c in custom if c.parent == d.urn] if not d.custom else [d]
            for t in targets:
                if comp(t) != comp(r):
                    edges.add((ids[comp(t)], ids[comp(r)]))
    lines = ["flowchart LR"] + [f'  {ids[c]}["{c}"]' for c in names]
    lines += [f"  {a} --> {b}" for a, b in sorted(edges)]
    return "\n".join(lines) + "\n"


def write(result: SynthResult, out_dir: Path) -> dict[str, int]:
    """Write build/<stack>/ and return resource counts by type."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = out_dir / "manifests"
    if manifests.exists():
        for f in manifests.glob("*.yaml"):
            f.unlink()
    (out_dir / "inventory.md").write_text(inventory_markdown(result))
    (out_dir / "inventory.json").write_text(
        json.dumps(
            {
                "stack": result.stack,
                "resources": inventory_records(result),
                "outputs": {k: ("[secret]" if k in result.secret_outputs else v) for k, v in result.outputs.items()},
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    objs = result.kubernetes_objects()
    if objs:
        manifests.mkdir(exist_ok=True)
        for r in objs:
            (manifests / manifest_filename(r)).write_text(
                yaml.dump(manifest_of(r), Dumper=_ManifestDumper, sort_keys=False, width=120)
            )
    graph = mermaid(result)
    (out_dir / "graph.mmd").write_text(graph)
    (out_dir / "README.md").write_text(
        f"# Stack `{result.stack}`: dependency graph\n\nGenerated by `python -m synth {result.stack}`. Arrows go "
        "from what is needed to what needs it.\n\n## Components\n\n```mermaid\n"
        + component_mermaid(result)
        + "```\n\n## Resources\n\n```mermaid\n"
        + graph
        + "```\n"
    )
    return dict(sorted(Counter(r.type for r in result.resources if r.custom).items()))
