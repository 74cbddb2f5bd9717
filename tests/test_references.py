"""Nothing points outside the repository: every path a file names exists here, and nothing cites the team's private
notes (the facts digest, internal issue numbers) where a public source or the reason belongs.

Scanned: every tracked text file of the code, tests, policy pack, stack files, CI, the README and docs/. Frozen:
strings the program renders (the job-scripts ConfigMap's data, the critical-path report) keep their bytes until a
change meant to alter them; FROZEN lists each with where it renders, and an entry that no longer occurs fails, so the
list only shrinks.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SKIP_PREFIXES = ("charts/", "schemas/", "nemo-rl-reference/", "tests/reference/", "tests/oracles/nemo_rl_")
# This file's own self-test names a missing path and a private citation on purpose.
SELF = "tests/test_references.py"
TEXT = (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".json", ".cfg", ".ini")

# Top-level folders a path may start with, and files at the top.
TOP = (
    "core",
    "infra",
    "workloads",
    "pod_programs",
    "cli",
    "synth",
    "tools",
    "policy",
    "tests",
    "docs",
    "schemas",
    "charts",
    "nemo-rl-reference",
    ".github",
    ".ci",
)
# A file path (with its extension) under one of them; `core/v1` (a Kubernetes type token) or `policy/optimizer` (a
# checkpoint's layout) are not files of ours.
PATH = re.compile(
    r"(?<![\w./:-])((?:%s)/[A-Za-z0-9_./~-]*\.(?:py|md|yaml|yml|txt|json|toml|sh|mmd))\b"
    % "|".join(map(re.escape, TOP))
)
# An upstream repository named just before a path (`GoogleCloudPlatform/gcsfuse docs/semantics.md`): its file.
UPSTREAM = re.compile(r"\b([A-Za-z0-9][\w.-]*)/[\w.-]+[\s(]+$")
# The team's private digest, by name (spelled in two parts so this file does not cite it itself).
DIGEST = "FAC" + "TS"
PRIVATE = re.compile(r"(?<!\w)" + DIGEST + r"(?:\.md)?(?:\s*§|(?!\w))|(?<![#\w/])[Ii]ssues? \d{1,2}\b")

# (file, text): rendered bytes that keep their private references for now, and where they render.
FROZEN: set[tuple[str, str]] = {
    ("pod_programs/export_checkpoints.py", "docs/semantics.md"),  # gcsfuse's, named as "gcsfuse docs/semantics.md"
}


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if (ROOT / f).is_file()]


def scanned(files: list[str]) -> list[str]:
    keep = []
    for f in files:
        if f.startswith(SKIP_PREFIXES) or not f.endswith(TEXT):
            continue
        if f == SELF:
            continue
        keep.append(f)
    return keep


def dangling_paths(files: list[str]) -> list[tuple[str, str]]:
    out = []
    for f in files:
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace")
        for m in PATH.finditer(text):
            ref = m.group(1)
            if (ROOT / ref).exists() or not (ROOT / ref).parent.is_dir():
                continue  # present, or a folder we do not have: another repository's file
            # The words just before it, across a wrapped comment's line break.
            before = re.sub(r"\s*\n\s*#?\s*", " ", text[max(0, m.start() - 160) : m.start()])
            upstream = UPSTREAM.search(before)
            if upstream and upstream.group(1) not in TOP:
                continue
            out.append((f, ref))
    return out


def private_citations(files: list[str]) -> list[tuple[str, str]]:
    out = []
    for f in files:
        for m in PRIVATE.finditer((ROOT / f).read_text(encoding="utf-8", errors="replace")):
            out.append((f, m.group(0)))
    return out


# A dotted name of our code (`core.recipes.job_script`, `workloads.manifests.rdma`): a module, then attributes.
DOTTED = re.compile(r"(?<![\w./-])((?:core|infra|workloads|pod_programs|cli|synth|tools)(?:\.[A-Za-z_]\w*)+)")


def _resolves(ref: str) -> bool:
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ImportError:
            # A module that runs only in its pod (imports a sibling by name): present is enough.
            if i == len(parts) and (ROOT / (name.replace(".", "/") + ".py")).is_file():
                return True
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def dangling_names(files: list[str]) -> list[tuple[str, str]]:
    out = []
    for f in files:
        if f.startswith("pod_programs/") and f != "pod_programs/__init__.py":
            continue  # the programs run alone in their pods; their dotted names are their own
        for m in DOTTED.finditer((ROOT / f).read_text(encoding="utf-8", errors="replace")):
            ref = m.group(1)
            if re.search(r"\.(py|md|yaml|yml|txt|json|toml)$", ref) or _resolves(ref):
                continue
            out.append((f, ref))
    return sorted(set(out))


def _frozen(f: str, found: str) -> bool:
    return any(f == ff and (found == text or found.startswith(text)) for ff, text in FROZEN)


def test_every_path_a_file_names_exists_in_the_repository():
    bad = [(f, ref) for f, ref in dangling_paths(scanned(tracked())) if not _frozen(f, ref)]
    assert not bad, "\n".join(f"{f}: {ref}" for f, ref in bad)


def test_every_module_or_name_a_file_names_exists():
    bad = dangling_names(scanned(tracked()))
    assert not bad, "\n".join(f"{f}: {ref}" for f, ref in bad)


def test_nothing_cites_the_private_digest_or_internal_issue_numbers():
    bad = [(f, what) for f, what in private_citations(scanned(tracked())) if not _frozen(f, what)]
    assert not bad, "\n".join(f"{f}: {what}" for f, what in bad)


def test_every_frozen_entry_still_occurs():
    files = scanned(tracked())
    found = set(dangling_paths(files)) | set(private_citations(files))
    stale = [entry for entry in FROZEN if not any(_frozen(entry[0], what) for f, what in found if f == entry[0])]
    assert not stale, f"no longer frozen, remove from FROZEN: {stale}"


def test_the_scan_sees_a_dangling_path_and_a_private_citation(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "core").mkdir()
    text = f"# see core/here.py and core/gone.py ({DIGEST}.md §4; issue 18 item 3)\n"
    (tmp_path / "core" / "here.py").write_text(text)
    assert dangling_paths(["core/here.py"]) == [("core/here.py", "core/gone.py")]
    assert [w for _, w in private_citations(["core/here.py"])] == [f"{DIGEST}.md §", "issue 18"]
    assert _resolves("core.recipes.job_script") and not _resolves("core.recipes.no_such_name")
