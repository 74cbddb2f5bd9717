"""Shared fixtures: the engine's records of every shipped stack, computed once per test session."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from synth import engine  # noqa: E402

SHIPPED_STACKS = engine.available_stacks()


@pytest.fixture(scope="session")
def synth():
    """synth(stack, **overrides) -> SynthResult, memoized for runs without overrides."""
    cache: dict[str, engine.SynthResult] = {}

    def _synth(stack: str, overrides=None, secrets=None, **kw) -> engine.SynthResult:
        if overrides or secrets or kw:
            return engine.run(stack, overrides, secrets, **kw)
        if stack not in cache:
            cache[stack] = engine.run(stack)
            assert cache[stack].error is None, cache[stack].error
        return cache[stack]

    return _synth


@pytest.fixture(params=SHIPPED_STACKS)
def stack(request) -> str:
    return request.param
