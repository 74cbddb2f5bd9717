"""`make policy-check STACK=<stack>` (synth/policy_check.py): the policy pack over one stack's offline synth, in
the pack's own venv, one line per violation, exit 1 only on a mandatory one."""

from __future__ import annotations

import pytest

from synth import policy_check

pytestmark = pytest.mark.graph


@pytest.fixture(scope="module")
def policy_python():
    python = policy_check.default_policy_python()
    assert python.exists(), f"{python} is missing: run `make test` (it creates the policy pack's venv)"
    return python


def test_a_shipped_stack_passes_with_exit_0_and_a_summary(policy_python, capsys):
    assert policy_check.main(["dev", "--policy-python", str(policy_python)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("policy pack on stack dev: 0 mandatory, 0 advisory")


def test_an_advisory_violation_is_printed_and_does_not_fail(policy_python, capsys):
    code = policy_check.main(
        ["codelab", "--set", "clusterDeletionProtection=false", "--policy-python", str(policy_python)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "ADVISORY protected-outside-dev: " in out and "nemo-rl-gke:clusterDeletionProtection" in out


def test_refused_settings_exit_2_with_their_lines_and_run_no_pack(monkeypatch, policy_python, capsys):
    monkeypatch.setattr(policy_check, "run_pack", lambda *a: pytest.fail("the pack ran on refused settings"))
    code = policy_check.main(["dev", "--set", "lustreTier=7", "--policy-python", str(policy_python)])
    assert code == 2 and "nemo-rl-gke:lustreTier" in capsys.readouterr().err


def test_a_mandatory_violation_exits_1(monkeypatch, policy_python, capsys):
    # No shipped setting can produce a mandatory violation (the settings rules refuse those first), so the pack's
    # answer is replaced here to check how the command reports one.
    monkeypatch.setattr(
        policy_check,
        "run_pack",
        lambda cases, python: {
            "results": {
                s: [{"policy": "lustre-on-cluster-vpc", "enforcement": "MANDATORY", "urn": "urn:x", "message": "m"}]
                for s in cases
            }
        },
    )
    assert policy_check.main(["dev", "--policy-python", str(policy_python)]) == 1
    assert "MANDATORY lustre-on-cluster-vpc: urn:x: m" in capsys.readouterr().out
