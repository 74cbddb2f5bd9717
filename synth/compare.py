"""Offline diff of two synth outputs: what a change adds, removes or changes, field by field.

`python -m synth <stack> --compare <dir>` compares the run's output folder with a previous `build/<stack>`-
style folder, so a reviewer without cloud credentials sees what a pull request does to a stack:
- GCP (and other non-Kubernetes) resources from inventory.json, identified as Pulumi does, by type and
  logical name; their inputs and resource options (protect, retainOnDelete, timeouts...) are compared;
- Kubernetes objects from manifests/*.yaml, identified as Kubernetes does, by kind.group and
  namespace/name (a renamed object shows as removed + added: the cluster replaces it).

Each changed resource is then classified as the providers will plan it (core/catalog/replacements.py, rules read
in the providers' source): updated in place, or REPLACED (delete first / create first) with the fields that force
it, and what that does: stops a running job, deletes data, refused (a protected resource), collides (a
create-first or retained replacement that reuses a fixed name: 409 ALREADY_EXISTS), or fails (the API, or the
provider in front of it, refuses a step while `up` applies the plan: an update of a range GKE uses, the delete of a
folder that holds exports, of a protected cluster...; what ran before it stays done). Replacements the engine adds
are followed too: `replaceOnChanges`, `replaceWith`, a replaced Kubernetes provider (every object it manages: its
clusterIdentifier changed, or without one the kubeconfig's cluster), and the dependents a delete-first replacement
takes with it. Resources a change removes are listed when their delete is refused.

Changed fields are dotted paths (`spec.workerGroupSpecs[0].replicas`) with `old -> new`; a field or list
element that appears or disappears is listed leaf by leaf against `(absent)`. A string holding a JSON object
or array (a dashboard, a runtime env) is compared field by field inside it, and multi-line text (scripts,
entrypoints) is shown as a line diff. Secret values are already `[secret]` in both folders, and computed
placeholders are not compared.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

from core.catalog import replacements

ABSENT = replacements.ABSENT


class NotASynthOutput(Exception):
    pass


@dataclass
class Snapshot:
    """The comparable content of one synth output folder."""

    gcp: dict[str, dict] = field(default_factory=dict)  # "type name" -> {"inputs", "options"}
    other: dict[str, dict] = field(default_factory=dict)  # providers and other non-GCP resources
    kubernetes: dict[str, dict] = field(default_factory=dict)  # "Kind.group namespace/name" -> manifest
    # Pulumi's view of every custom resource, for the replacement plan: "type name" -> {"type", "key" (the
    # section key), "inputs", "options", "provider", "propertyDependencies"}.
    pulumi: dict[str, dict] = field(default_factory=dict)


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
    manifests = [yaml.safe_load(p.read_text()) for p in sorted((folder / "manifests").glob("*.yaml"))]
    return snapshot(json.loads(inventory.read_text())["resources"], manifests)


def snapshot(records: list[dict], manifests: list[dict]) -> Snapshot:
    """A Snapshot from inventory records (synth/render.inventory_records) and the rendered manifests."""
    snap = Snapshot()
    for rec in records:
        if not rec["custom"]:
            continue  # components hold nothing of their own
        name = f"{rec['type']} {rec['name']}"
        if rec["type"].startswith("kubernetes:"):
            key = kubernetes_key(rec["inputs"])  # Kubernetes objects are compared from the manifests
        else:
            key = name
            bucket = snap.gcp if rec["type"].startswith("gcp:") else snap.other
            bucket[key] = {"inputs": rec["inputs"], "options": rec.get("options") or {}}
        snap.pulumi[name] = {
            "type": rec["type"],
            "key": key,
            "inputs": rec["inputs"],
            "options": rec.get("options") or {},
            "provider": rec.get("provider"),
            "propertyDependencies": rec.get("propertyDependencies") or {},
            # A Kubernetes provider's kubeconfig is a secret input: its active cluster travels as a digest.
            "kubeconfigCluster": rec.get("kubeconfigCluster") or "",
        }
    for manifest in manifests:
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


def _with_options(snap: Snapshot) -> dict[str, Any]:
    """Kubernetes objects with their Pulumi resource options (replaceWith, ignoreChanges...) beside them."""
    options = {r["key"]: r["options"] for r in snap.pulumi.values() if r["type"].startswith("kubernetes:")}
    return {k: {"manifest": m, "options": options.get(k) or {}} for k, m in snap.kubernetes.items()}


def _kubernetes_fields(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    return diff_values(old["manifest"], new["manifest"]) + diff_values(old["options"], new["options"], "options")


def compare(old: Snapshot, new: Snapshot) -> list[Section]:
    return [
        _section("GCP resources", old.gcp, new.gcp, _pulumi_fields),
        _section("Kubernetes objects", _with_options(old), _with_options(new), _kubernetes_fields),
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


def format_report(sections: list[Section], against: str, plan_text: str = "") -> str:
    """Human-readable report; `no changes` when the outputs are equivalent."""
    if all(s.empty for s in sections):
        return f"compared with {against}: no changes\n"
    lines = [f"compared with {against}:"]
    if plan_text:
        lines.append(plan_text.rstrip("\n"))
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


# --- the replacement plan ------------------------------------------------------------------------------------
@dataclass
class Verdict:
    """What the providers and the engine will do with one changed resource."""

    name: str  # "type logical-name"
    key: str  # the section key the report lists it under
    action: str  # "update" | "update, recreates the nodes" | "replace" | "delete" (a removed resource)
    order: str = ""  # replace: "delete first" | "create first"
    reasons: list[str] = field(default_factory=list)  # "path (rule source)" or "replaceWith X" ...
    consequences: list[str] = field(default_factory=list)  # catalog CONSEQUENCES
    refused: str = ""  # why the engine refuses it before anything changes
    collides: str = ""  # why the create meets the resource it replaces
    fails: str = ""  # why the API (or the provider in front of it) refuses a step of it while `up` applies the plan

    @property
    def replaced(self) -> bool:
        return self.action == "replace"

    @property
    def marked(self) -> bool:
        """Listed in the plan's summary: anything but a plain, working in-place update."""
        return self.action != "update" or bool(self.fails)

    def summary(self) -> str:
        head = self.action.upper() if self.replaced else self.action
        parts = [f"{head} ({self.order})" if self.order else head]
        if self.refused:
            parts.append(f"REFUSED: {self.refused}")
        if self.collides:
            parts.append(f"COLLIDES: {self.collides}")
        if self.fails:
            parts.append(f"FAILS: {self.fails}")
        parts += [c.upper() if c == "deletes data" else c for c in self.consequences]
        return " - ".join(parts)


def _fields(old: Snapshot, new: Snapshot, name: str) -> list[tuple[str, Any, Any]]:
    """The changed leaves the engine diffs: paths under `ignoreChanges` keep their old value (ENGINE
    `processIgnoreChanges`, step_generator.go:3028)."""
    o, n = old.pulumi[name], new.pulumi[name]
    if o["key"] in old.kubernetes and n["key"] in new.kubernetes:
        changes = diff_values(old.kubernetes[o["key"]], new.kubernetes[n["key"]])
    else:
        changes = diff_values(o["inputs"], n["inputs"])
    ignored = n["options"].get("ignoreChanges") or []
    return [c for c in changes if not any(c[0] == p or c[0].startswith((p + ".", p + "[")) for p in ignored)]


_BRACKET_KEY = re.compile(r'\["((?:[^"\\]|\\.)*)"\]')


def _dotted(path: str) -> str:
    """A Pulumi property path in the dotted form diff_values writes: bracket notation, which keys holding a `.` or a
    `/` need (`metadata.labels["kueue.x-k8s.io/queue-name"]`; https://www.pulumi.com/docs/reference/property-paths/,
    used by replaceOnChanges), becomes `.key`."""
    return _BRACKET_KEY.sub(lambda m: "." + m.group(1).replace('\\"', '"'), path).lstrip(".")


def plan(old: Snapshot, new: Snapshot) -> dict[str, Verdict]:
    """Every resource present in both snapshots that changes or is replaced, keyed by "type name"."""
    verdicts: dict[str, Verdict] = {}
    common = sorted(set(old.pulumi) & set(new.pulumi))
    for name in common:
        rec = new.pulumi[name]
        typ = rec["type"]
        changes = _fields(old, new, name)
        o_rec = old.pulumi[name]
        if typ == "pulumi:providers:kubernetes" and replacements.kubeconfig_cluster_changed(
            o_rec["inputs"], rec["inputs"], o_rec.get("kubeconfigCluster", ""), rec.get("kubeconfigCluster", "")
        ):
            v = verdicts[name] = Verdict(name, rec["key"], "replace", "provider")
            v.reasons.append(
                "kubeconfig: its active cluster changed and no clusterIdentifier is set before and after "
                f"({replacements.K8S_PROVIDER}:486-502, :553)"
            )
        if not changes:
            continue
        v = verdicts.get(name) or Verdict(name, rec["key"], "update")
        replace_on = [_dotted(p) for p in rec["options"].get("replaceOnChanges") or []]
        for path, o, n in changes:
            rule = replacements.triggered(typ, path, old.pulumi[name]["inputs"], rec["inputs"], o, n)
            if rule and rule.kind == "recreates-nodes":
                if not v.replaced:
                    v.action = "update, recreates the nodes"
                v.reasons.append(f"{path} ({rule.source})")
            elif rule:
                v.action = "replace"
                v.order = v.order or "provider"
                v.reasons.append(f"{path} ({rule.source})")
            elif any(path == p or path.startswith(p + ".") for p in replace_on):
                v.action = "replace"
                v.order = v.order or "engine"
                v.reasons.append(f"{path} (replaceOnChanges)")
        verdicts[name] = v
    # Replacements that follow others, until nothing more is replaced: a replaced Kubernetes provider replaces
    # every object it manages; `replaceWith`; the dependents of a delete-first replacement whose replace-only
    # inputs come from it (their inputs become unknown, and the provider plans a replacement).
    while True:
        for v in verdicts.values():
            if v.replaced and v.order in ("provider", "engine"):
                v.order = _order(v, new.pulumi[v.name])
        replaced = {n for n, v in verdicts.items() if v.replaced}
        grown = False
        for name in common:
            if name in replaced:
                continue
            rec = new.pulumi[name]
            why, order = "", "engine"
            provider = f"pulumi:providers:kubernetes {rec['provider']}" if rec["provider"] else ""
            if rec["type"].startswith("kubernetes:") and provider in replaced:
                why = f"its provider {provider} is replaced"
                if new.pulumi[provider]["inputs"].get("clusterIdentifier"):
                    # With a clusterIdentifier the provider is replaced only with the cluster: the objects are
                    # created in a new, empty cluster, so nothing collides.
                    order = "into the new cluster"
            for target in rec["options"].get("replaceWith") or []:
                if target in replaced and not why:
                    why = f"replaceWith {target}"
            for prop, sources in rec["propertyDependencies"].items():
                for src in sources:
                    if (
                        not why
                        and src in replaced
                        and verdicts[src].order == "delete first"
                        and _has_rule_under(rec, prop)
                    ):
                        # The engine deletes such dependents before the resource (ENGINE :3220): delete first.
                        why, order = f"{prop} comes from {src}, replaced delete-first", "delete first"
            if why:
                v = verdicts.setdefault(name, Verdict(name, rec["key"], "update"))
                v.action, v.order = "replace", v.order or order
                v.reasons.append(why)
                grown = True
        if not grown:
            break
    for v in verdicts.values():
        # A replacement under another Kubernetes name or namespace cannot meet the object it replaces.
        _consequences(
            v,
            new.pulumi[v.name],
            same_identity=old.pulumi[v.name]["key"] == new.pulumi[v.name]["key"],
            old=old.pulumi[v.name],
        )
        if not v.replaced:
            # An in-place update the API refuses (a range GKE uses, a PATCH at a name that does not exist yet).
            for path, o, _ in _fields(old, new, v.name):
                refusal = replacements.api_refusal(new.pulumi[v.name]["type"], path, o)
                if refusal and not v.fails:
                    v.fails = f"{path}: {refusal.why} ({refusal.source})"
    # Resources the change removes: their delete may be refused (a folder that holds exports).
    for name in sorted(set(old.pulumi) - set(new.pulumi)):
        rec = old.pulumi[name]
        if rec["options"].get("retainOnDelete"):
            continue
        why = replacements.delete_refusal(rec["type"], rec["inputs"])
        if why:
            verdicts[name] = Verdict(name, rec["key"], "delete", fails=why)
    return verdicts


def _has_rule_under(rec: dict, prop: str) -> bool:
    return any(r.path == prop or r.path.startswith(prop + ".") for r in replacements.rules_for(rec["type"]))


def _order(v: Verdict, rec: dict) -> str:
    """Delete first or create first, as the engine will run the replacement."""
    if "deleteBeforeReplace" in rec["options"]:
        # The option, true or false, overrides the provider (ENGINE step_generator.go:2044-2047).
        return "delete first" if rec["options"]["deleteBeforeReplace"] else "create first"
    typ = rec["type"]
    if typ.startswith("kubernetes:"):
        # The provider's own replacements of a fixed-name object are delete-first; the engine's are not.
        return "delete first" if v.order == "provider" else "create first"
    return "delete first" if typ in replacements.DELETE_FIRST else "create first"


def _protected(rec: dict, old: Optional[dict]) -> bool:
    # The engine refuses a replacement only of a resource protected before and after (step_generator.go:1955-1962:
    # `new.Protect && old.Protect`): unprotecting and replacing in one `up` is allowed.
    return bool(rec["options"].get("protect")) and (old is None or bool(old["options"].get("protect")))


def _consequences(v: Verdict, rec: dict, same_identity: bool = True, old: Optional[dict] = None) -> None:
    typ, options = rec["type"], rec["options"]
    if v.replaced and not same_identity and typ.startswith("kubernetes:"):
        pass
    elif v.replaced:
        if _protected(rec, old):
            v.refused = "protected: the engine refuses to replace it (pulumi step_generator.go:1955-1962)"
        elif options.get("retainOnDelete"):
            v.collides = "retained: its delete is skipped and the new one reuses its name (pulumi step.go:661)"
        elif v.order == "into the new cluster":
            pass
        elif v.order == "create first" and (typ in replacements.FIXED_ID or typ.startswith("kubernetes:")):
            v.collides = replacements.FIXED_ID.get(typ, "metadata.name is fixed: AlreadyExists")
        else:
            v.collides = replacements.unawaited_delete(typ, rec["inputs"])
    if v.replaced and _protected(rec, old):
        v.refused = v.refused or "protected: the engine refuses to replace it (pulumi step_generator.go:1955-1962)"
    if v.replaced and not v.refused and not options.get("retainOnDelete"):
        # The old resource is deleted either way (delete-first, or after the creates): a refused delete fails the up.
        v.fails = replacements.delete_refusal(typ, (old or rec)["inputs"])
    if v.replaced or v.action.endswith("recreates the nodes"):
        v.consequences = list(replacements.CONSEQUENCES.get(typ, ()))
        if not v.replaced:
            v.consequences = [c for c in v.consequences if c != "deletes data"]


def format_plan(verdicts: dict[str, Verdict]) -> str:
    """The replacement summary: one block per replaced resource or node recreation (empty when none)."""
    marked = [v for v in verdicts.values() if v.marked]
    if not marked:
        return ""
    lines = [f"Replacements, node recreations and refused steps: {len(marked)}"]
    for v in sorted(marked, key=lambda v: v.name):
        lines.append(f"  ! {v.name}: {v.summary()}")
        lines += [f"      because {r}" for r in _grouped(v.reasons)]
    return "\n".join(lines) + "\n"


def _grouped(reasons: list[str]) -> list[str]:
    """One line per rule: `path (source)` reasons that share a source are shown as the first path + a count."""
    by_source: dict[str, list[str]] = {}
    for r in reasons:
        path, sep, source = r.partition(" (")
        by_source.setdefault(sep + source if sep else "", []).append(path if sep else r)
    out = []
    for source, paths in by_source.items():
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        out.append(f"{paths[0]}{more}{source}")
    return out


def of_result(result: Any) -> Snapshot:
    """The Snapshot of an engine run held in memory (what `load` reads back from the folder it writes)."""
    from synth import render

    return snapshot(render.inventory_records(result), [render.manifest_of(r) for r in result.kubernetes_objects()])
