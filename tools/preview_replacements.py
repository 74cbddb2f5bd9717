"""Every replacement and delete in a `pulumi preview --json`, with its reasons and what it stops, as Markdown.

`pulumi preview --stack dev --json > preview.json; python -m tools.preview_replacements preview.json` (the
pull-request workflow appends the output to the job summary). The input is the CLI's PreviewDigest
(pulumi/pulumi v3.259.0 `pkg/display/json.go:32-76`): `steps[]`, each with `op`, `urn`, `oldState`/`newState`
(apitype.ResourceV3: `type`, `inputs`, `protect`, `retainOnDelete`, ...), `replaceReasons` and `detailedDiff`
(`{path: {kind, inputDiff}}`, kinds `add-replace`/`update-replace`/`delete-replace` for replacing paths). No field
says delete-first; the order does (`pkg/resource/deploy/step_generator.go:2143-2163`): a delete-first
replacement emits `delete-replaced` before its `replace`, a create-first one `create-replacement`, `replace`, and
the delete later. What each replacement stops comes from the same table the offline diff uses
(core/catalog/replacements.py), as do the node recreations of an in-place update (a node pool's machine type) and
the steps the API or the provider will refuse while `up` applies them (a range GKE uses, the delete of a folder
that holds exports, of a cluster with deletion protection: API_REFUSES, DELETE_REFUSED).

Exit code 0 whatever the preview holds (the summary informs the review; policy decides what fails); 2 when the
file is not a preview digest.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from core.catalog import replacements
from core.catalog.replacements import get_path

REPLACE_KINDS = ("add-replace", "update-replace", "delete-replace")


@dataclass
class Entry:
    type: str
    name: str
    action: str  # "replace" | "delete" | "update, recreates the nodes"
    order: str = ""  # replace: "delete first" | "create first"
    reasons: list[str] = field(default_factory=list)
    consequences: list[str] = field(default_factory=list)
    warning: str = ""


def _type_and_name(step: dict) -> tuple[str, str]:
    state = step.get("newState") or step.get("oldState") or {}
    urn = str(step.get("urn", ""))
    name = urn.rsplit("::", 1)[-1]
    typ = state.get("type") or urn.split("::")[-2].rsplit("$", 1)[-1] if "::" in urn else ""
    return str(typ), name


def entries(digest: dict) -> list[Entry]:
    steps = digest.get("steps") or []
    seen_delete_replaced: set[str] = set()
    out: list[Entry] = []
    for step in steps:
        op, urn = step.get("op"), str(step.get("urn", ""))
        typ, name = _type_and_name(step)
        old = step.get("oldState") or {}
        diff = step.get("detailedDiff") or {}
        if op == "delete-replaced":
            seen_delete_replaced.add(urn)
        elif op == "replace":
            e = Entry(typ, name, "replace", "delete first" if urn in seen_delete_replaced else "create first")
            paths = [p for p, d in sorted(diff.items()) if str(d.get("kind", "")) in REPLACE_KINDS]
            e.reasons = paths or [str(k) for k in step.get("replaceReasons") or []]
            e.consequences = list(replacements.CONSEQUENCES.get(typ, ()))
            if old.get("protect"):
                e.warning = "protected: `pulumi up` refuses to replace it"
            elif old.get("retainOnDelete"):
                e.warning = "retained: its delete is skipped and the new one reuses its name (409)"
            elif e.order == "create first" and (typ in replacements.FIXED_ID or typ.startswith("kubernetes:")):
                e.warning = "created before the old one is deleted, under the same name or id (409)"
            elif e.order == "delete first" and replacements.unawaited_delete(typ, old.get("inputs") or {}):
                e.warning = "its delete is not awaited (skipAwait): the create meets it (409)"
            elif refused := replacements.delete_refusal(typ, old.get("inputs") or {}):
                e.warning = f"the old one's delete fails: {refused}"
            out.append(e)
        elif op == "delete":
            e = Entry(typ, name, "delete")
            e.consequences = [] if old.get("retainOnDelete") else list(replacements.CONSEQUENCES.get(typ, ()))
            if not old.get("retainOnDelete") and (refused := replacements.delete_refusal(typ, old.get("inputs") or {})):
                e.warning = f"the delete fails: {refused}"
            out.append(e)
        elif op == "update":
            old_inputs, new_inputs = old.get("inputs") or {}, (step.get("newState") or {}).get("inputs") or {}
            recreate = [
                p
                for p in sorted(diff)
                if (rule := replacements.triggered(typ, p, old_inputs, new_inputs)) and rule.kind == "recreates-nodes"
            ]
            # A changed path whose old value existed: the API's refusal of the update, if any.
            refusals = [
                (p, r) for p in sorted(diff) if (r := replacements.api_refusal(typ, p, get_path(old_inputs, p)))
            ]
            if recreate or refusals:
                e = Entry(
                    typ,
                    name,
                    "update, recreates the nodes" if recreate else "update",
                    reasons=recreate + [p for p, _ in refusals],
                    consequences=["stops the job"] if recreate else [],
                )
                if refusals:
                    e.warning = f"the update fails: {refusals[0][1].why} ({refusals[0][1].source})"
                out.append(e)
    return out


def markdown(items: list[Entry], stack: Optional[str] = None) -> str:
    title = f"### Replacements and deletes{f' in `{stack}`' if stack else ''}"
    if not items:
        return f"{title}\n\nNone: every change updates in place.\n"
    lines = [title, "", "| resource | what happens | because | consequence |", "|---|---|---|---|"]
    for e in sorted(items, key=lambda e: (e.type, e.name)):
        what = f"{e.action} ({e.order})" if e.order else e.action
        if e.warning:
            what += f" - **{e.warning}**"
        consequence = ", ".join(c.upper() if c == "deletes data" else c for c in e.consequences) or "-"
        because = ", ".join(f"`{r}`" for r in e.reasons[:6]) + (f" +{len(e.reasons) - 6}" if len(e.reasons) > 6 else "")
        lines.append(f"| `{e.type}` `{e.name}` | {what} | {because or '-'} | {consequence} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m tools.preview_replacements PREVIEW.json [STACK]", file=sys.stderr)
        return 2
    try:
        digest: Any = json.loads(Path(args[0]).read_text())
    except (OSError, ValueError) as err:
        print(f"preview_replacements: {args[0]}: {err}", file=sys.stderr)
        return 2
    if not isinstance(digest, dict) or not isinstance(digest.get("steps", []), list):
        print(f"preview_replacements: {args[0]} is not the output of `pulumi preview --json`", file=sys.stderr)
        return 2
    print(markdown(entries(digest), args[1] if len(args) == 2 else None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
