"""Stop with one line when the Pulumi CLI on PATH is older than the project needs.

Pulumi.yaml's `requiredPulumiVersion` (`>=X.Y.Z`, generated from core/catalog/gke.py PULUMI_CLI_MIN_VERSION by
synth/project_file.py) is enforced by the CLI itself only from 3.219.0 on; an older CLI ignores the key and the
first `up` would stop half-way through the graph at the RayJob ("does not support the ReplaceWith option"). So
`make preview`, `make up` and `make destroy` run this first:

    python3 -m tools.cli_version            # exit 0 and one line, or exit 1 and one line saying what to do

Standard library only: it runs with any python3, before a virtualenv exists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "curl -fsSL https://get.pulumi.com | sh"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_REQUIRED = re.compile(r"^requiredPulumiVersion:\s*['\"]?>=\s*v?(\d+\.\d+\.\d+)['\"]?\s*$", re.MULTILINE)


def parse(version: str) -> Optional[tuple[int, int, int]]:
    m = _VERSION.search(version)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def required(project_file: Path = ROOT / "Pulumi.yaml") -> str:
    m = _REQUIRED.search(project_file.read_text())
    if not m:
        raise SystemExit(f"{project_file.name}: no `requiredPulumiVersion: '>=X.Y.Z'`; run `make project-file`")
    return m[1]


def check(pulumi: str = "pulumi", project_file: Path = ROOT / "Pulumi.yaml") -> tuple[bool, str]:
    """(ok, the one line to print)."""
    need = required(project_file)
    exe = shutil.which(pulumi)
    if exe is None:
        return False, f"pulumi: not found on PATH; install the Pulumi CLI {need} or later: {INSTALL}"
    try:
        out = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"pulumi version: could not run ({e}); install the Pulumi CLI {need} or later: {INSTALL}"
    have, want = parse(out), parse(need)
    if have is None or want is None:
        return False, f"pulumi version: cannot read {out!r}; this project needs the Pulumi CLI {need} or later"
    if have < want:
        return False, (
            f"Pulumi CLI {out} is older than {need}, which this project needs (the RayJob's replaceWith "
            f"option; Pulumi.yaml requiredPulumiVersion); upgrade it: {INSTALL}"
        )
    return True, f"Pulumi CLI {out} (this project needs {need} or later)"


def main(argv: Sequence[str] = ()) -> int:
    ok, line = check(argv[0] if argv else "pulumi")
    print(line, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
