"""The Pulumi CLI version check in front of `make preview` / `make up` / `make destroy` (tools/cli_version.py).

The CLI enforces Pulumi.yaml's requiredPulumiVersion only from 3.219.0 on (pulumi/pulumi CHANGELOG 3.219.0, PR
#21627); an older one ignores it. So the make targets ask `pulumi version` first and stop with one line. The
`pulumi` here is a stand-in script in a temporary directory that prints a version and records its arguments.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import catalog
from tools import cli_version

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def _fake_pulumi(tmp_path: Path, version: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "pulumi"
    exe.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\necho {version}\n')
    exe.chmod(0o755)
    return exe


def test_the_check_reads_the_floor_pulumi_yaml_declares():
    assert cli_version.required() == catalog.PULUMI_CLI_MIN_VERSION


@pytest.mark.parametrize("version", ["v3.206.0", "v3.99.9", "v2.25.2"])
def test_an_older_cli_is_refused_with_one_line_saying_what_to_do(tmp_path, version):
    ok, line = cli_version.check(str(_fake_pulumi(tmp_path, version)))
    assert not ok and "\n" not in line
    assert version in line and catalog.PULUMI_CLI_MIN_VERSION in line and "get.pulumi.com" in line


@pytest.mark.parametrize("version", [f"v{catalog.PULUMI_CLI_MIN_VERSION}", "v3.218.1", "v3.259.0", "v3.300.0-dev.0"])
def test_the_floor_and_later_clis_pass(tmp_path, version):
    ok, line = cli_version.check(str(_fake_pulumi(tmp_path, version)))
    assert ok, line


def test_a_missing_cli_is_one_line_with_the_install_command(tmp_path):
    ok, line = cli_version.check(str(tmp_path / "no-such-pulumi"))
    assert not ok and "not found" in line and "get.pulumi.com" in line


def test_make_preview_stops_before_pulumi_runs_when_the_cli_is_too_old(tmp_path):
    _fake_pulumi(tmp_path, "v3.206.0")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for target in ("preview", "up", "destroy"):
        proc = subprocess.run(
            ["make", "-s", target, "STACK=dev", f"PYTHON={sys.executable}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode != 0, target
        assert "is older than" in proc.stderr and "Traceback" not in proc.stderr
    # `pulumi version` ran; `pulumi preview/up/destroy` never did.
    assert {line.split()[0] for line in (tmp_path / "calls").read_text().splitlines()} == {"version"}
