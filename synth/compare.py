"""Offline diff of two synth outputs: what a change adds, removes or changes, field by field.

`python -m synth <stack> --compare <dir>` compares the run's output folder with a previous `build/<stack>`-
style folder, so a reviewer without cloud credentials sees what a pull request does to a stack:
- GCP (and other non-Kubernetes) resources from inventory.json, identified as Pulumi does, by type and
  logical name; their inputs and resource options (protect, retainOnDelete, timeouts...) are compared;
- Kubernetes objects from manifests/*.yaml, identified as Kubernetes does, by kind.group and
  namespace/name (a renamed object shows as removed + added: the cluster replaces it).

Changed fields are dotted paths (`spec.workerGroupSpecs[0].replicas`) with `old -> new`; a field or list
element that appears or disappears is listed leaf by leaf against `(absent)`. A string holding a JSON object
or array (a dashboard, a runtime env) is compared field by field inside it, and multi-line text (scripts,
entrypoints) is shown as a line diff. Secret values are already `[secret]` in both folders, and computed
placeholders are not compared.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

ABSENT = "(absent)"


class NotASynthOutput(Exception):
    pass


@dataclass
class Snapshot:
    """The comparable content of one synth output folder."""

    gcp: dict[str, dict] = field(default_factory=dict)  # "type name" -> {"inputs", "options"}
    other: dict[str, dict] = field(default_factory=dict)  # providers and other non-GCP resources
    kubernetes: dict[str, dict] = field(default_factory=dict)  # "Kind.group namespace/name" -> manifest


@dataclass
class Section:
    title: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, list[tuple[str, Any, Any]]] = field(default_factory=dict)  # key -> [(path, old, new)]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def kubernetes_key(manifest: dict) -> str:
    """`RayCluster.ray.io nemo-rl/nemo-dev-ray`, `Namespace nemo-rl` (kubectl's kind.group notation)."""
    api_version = str(manifest.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    meta = manifest.get("metadata") or {}
    name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    return f"{manifest.get('kind')}{'.' + group if group else ''} {name}"


def load(folder: Path) -> Snapshot:
    """Read inventory.json and manifests/*.yaml of a synth output folder."""
    inventory = folder / "inventory.json"
    if not inventory.is_file():
        raise NotASynthOutput(
            f"{folder} has no inventory.json: pass a folder written by `python -m synth "
            "<stack>` (e.g. a copy of build/<stack> from the base branch)"
        )
    snap = Snapshot()
    for rec in json.loads(inventory.read_text())["resources"]:
        if not rec["custom"] or rec["type"].startswith("kubernetes:"):
            continue  # components hold nothing of their own; Kubernetes objects come from the manifests
        bucket = snap.gcp if rec["type"].startswith("gcp:") else snap.other
        bucket[f"{rec['type']} {rec['name']}"] = {"inputs": rec["inputs"], "options": rec.get("options") or {}}
    for path in sorted((folder / "manifests").glob("*.yaml")):
        manifest = yaml.safe_load(path.read_text())
        snap.kubernetes[kubernetes_key(manifest)] = manifest
    return snap


def _nested_list(value: Any) -> bool:
    """A list compared element by element; lists of scalars (node locations, scopes) count as one value."""
    return isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Leaf fields of a value, as diff_values reports them."""
    if isinstance(value, dict) and value:
        for k in sorted(value):
            yield from _leaves(value[k], f"{path}.{k}" if path else k)
    elif _nested_list(value):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def diff_values(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, old, new) for every leaf that differs; ABSENT on the side where it does not exist."""
    if isinstance(old, dict) and isinstance(new, dict) and (old or new):
        out = []
        for k in sorted(set(old) | set(new)):
            p = f"{path}.{k}" if path else k
            if k not in old:
                out += [(lp, ABSENT, v) for lp, v in _leaves(new[k], p)]
            elif k not in new:
                out += [(lp, v, ABSENT) for lp, v in _leaves(old[k], p)]
            else:
                out += diff_values(old[k], new[k], p)
        return out
    if isinstance(old, list) and isinstance(new, list) and (_nested_list(old) or _nested_list(new)):
        out = []
        for i in range(max(len(old), len(new))):
            p = f"{path}[{i}]"
            if i >= len(old):
                out += [(lp, ABSENT, v) for lp, v in _leaves(new[i], p)]
            elif i >= len(new):
                out += [(lp, v, ABSENT) for lp, v in _leaves(old[i], p)]
            else:
                out += diff_values(old[i], new[i], p)
        return out
    if isinstance(old, str) and isinstance(new, str) and old != new:
        parsed_old, parsed_new = _json_container(old), _json_container(new)
        if parsed_old is not None and parsed_new is not None:
            return diff_values(parsed_old, parsed_new, path)
    return [] if old == new else [(path, old, new)]


def _json_container(text: str) -> Any:
    """The object or array a string holds as JSON, else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _section(title: str, old: dict[str, Any], new: dict[str, Any], fields) -> Section:
    s = Section(title, added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)))
    for key in sorted(set(old) & set(new)):
        changes = fields(old[key], new[key])
        if changes:
            s.changed[key] = changes
    return s


def _pulumi_fields(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    return diff_values(old["inputs"], new["inputs"]) + diff_values(old["options"], new["options"], "options")


def compare(old: Snapshot, new: Snapshot) -> list[Section]:
    return [
        _section("GCP resources", old.gcp, new.gcp, _pulumi_fields),
        _section("Kubernetes objects", old.kubernetes, new.kubernetes, diff_values),
        _section("Other Pulumi resources", old.other, new.other, _pulumi_fields),
    ]


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _show(value: Any) -> str:
    return _clip(value if value is ABSENT else json.dumps(value, sort_keys=True, ensure_ascii=False))


def _change_lines(path: str, old: Any, new: Any) -> list[str]:
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        diff = [
            line
            for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if not line.startswith(("---", "+++", "@@"))
        ]
        return [f"      {path}: text, {len(diff)} lines differ"] + [f"        {_clip(line)}" for line in diff]
    return [f"      {path}: {_show(old)} -> {_show(new)}"]


def format_report(sections: list[Section], against: str) -> str:
    """Human-readable report; `no changes` when the outputs are equivalent."""
    if all(s.empty for s in sections):
        return f"compared with {against}: no changes\n"
    lines = [f"compared with {against}:"]
    for s in sections:
        if s.empty:
            continue
        lines.append(f"{s.title}: {len(s.added)} added, {len(s.removed)} removed, {len(s.changed)} changed")
        lines += [f"  + {k}" for k in s.added]
        lines += [f"  - {k}" for k in s.removed]
        for key, changes in s.changed.items():
            lines.append(f"  ~ {key}")
            for path, o, n in changes:
                lines += _change_lines(path, o, n)
    return "\n".join(lines) + "\n"
