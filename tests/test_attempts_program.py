"""The bounded attempts program ends at once on a failure no retry can fix, and retries the others.

Steps are real processes (a Python that raises what NeMo-RL's driver raises); the cluster's capacity is given, so
only the decision is under test (tests/test_attempts_ray.py runs the loop on a real Ray cluster).
"""

from __future__ import annotations

import json
import sys

import pytest

from pod_programs import attempts as loop

pytestmark = pytest.mark.unit


def run(tmp_path, monkeypatch, *steps: list[str], attempts: int = 3) -> tuple[int, list[dict]]:
    monkeypatch.setattr(loop, "ray_totals", lambda: {"GPU": 16.0})
    log = tmp_path / "attempts.jsonl"
    argv = ["--attempts", str(attempts), "--log", str(log), "--amount", "16", "--capacity-wait-seconds", "5", "--"]
    words: list[str] = []
    for i, step in enumerate(steps):
        words += (["---"] if i else []) + step
    code = loop.main([*argv, *words])
    return code, [json.loads(line) for line in log.read_text().splitlines()]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(
    "step",
    [
        python("import nemo_rl_that_is_not_there"),
        python("from omegaconf.errors import ConfigKeyError\nraise ConfigKeyError('Key grpo.nope is not in struct')"),
        # Ray re-raises an actor's error as type(f"RayTaskError({cause.__name__})", (RayTaskError, cause), {})
        python(
            "E = type('RayTaskError(ImportError)', (ImportError,), {'__module__': 'ray.exceptions'})\n"
            "raise E('cannot import name x')"
        ),
        python("import sys; sys.exit(2)"),
        [sys.executable, "/no/such/entry_script.py"],
    ],
)
def test_a_failure_no_retry_can_fix_ends_the_attempts_at_once(step, tmp_path, monkeypatch, capsys):
    gate = tmp_path / "gate-runs"
    code, records = run(tmp_path, monkeypatch, ["sh", "-c", f"echo gate >> {gate}"], step)
    assert code != 0 and [r["result"] for r in records] == ["deterministic"]
    assert gate.read_text().split() == ["gate"]  # no second wait for capacity, no second gate
    assert "the failure would repeat on every attempt" in capsys.readouterr().out


@pytest.mark.parametrize(
    "step",
    [
        python(
            "class ActorDiedError(Exception): pass\nActorDiedError.__module__ = 'ray.exceptions'\n"
            "raise ActorDiedError('The actor died because its node has died.')"
        ),
        python("import sys; print('NCCL error: unhandled system error'); sys.exit(1)"),
    ],
)
def test_a_lost_node_or_another_failure_is_retried(step, tmp_path, monkeypatch):
    code, records = run(tmp_path, monkeypatch, step)
    assert code != 0 and [r["result"] for r in records] == ["failed", "failed", "failed"]


def test_the_steps_output_still_reaches_the_job_log(tmp_path, monkeypatch, capsys):
    code, _ = run(tmp_path, monkeypatch, python("print('step 1/20 done')"))
    assert code == 0 and "step 1/20 done" in capsys.readouterr().out
