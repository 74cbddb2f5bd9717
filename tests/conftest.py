"""Shared fixtures and the test tiers.

- `synth`: the engine's records of a stack, computed once per test session for each distinct (stack, overrides,
  secrets): the first call runs the engine, later calls with the same arguments get the cached result (a deep copy
  when overrides or secrets were given, so a test that edits its result cannot change another's).
- Tiers: declared in each test file (`pytestmark = pytest.mark.unit|graph|ray`, or a marker per test where a file
  mixes tiers) and checked by the hooks of tests/tiers.py, registered here: an undeclared test stops the collection
  naming its file; a unit test that runs the engine, starts Ray, runs the program in a subprocess or takes over a
  second fails, naming why.
- Sampling (`NEMO_RL_GKE_SAMPLE=<n>`): the sweeps run a deterministic sample of their cases (`sample()`); unset,
  as in `make test`, they run whole.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from synth import engine  # noqa: E402

# The shipped platform stacks; the example experiment stacks on them (platformStack set) are tested on their own
# (tests/test_platform_experiments.py): they declare no cloud resource and no cluster.
SHIPPED_STACKS = engine.platform_stacks()
EXPERIMENT_STACKS = engine.experiment_stacks()


def _key(stack: str, overrides, secrets) -> str:
    return json.dumps([stack, overrides or {}, secrets or {}], sort_keys=True, default=str)


@pytest.fixture(scope="session")
def synth():
    """synth(stack, overrides=None, secrets=None, **kw) -> SynthResult, memoized per distinct arguments (runs with
    engine keywords such as `root=` are not cached)."""
    cache: dict[str, engine.SynthResult] = {}

    def _synth(stack: str, overrides=None, secrets=None, **kw) -> engine.SynthResult:
        if kw:
            return engine.run(stack, overrides, secrets, **kw)
        key = _key(stack, overrides, secrets)
        if key not in cache:
            cache[key] = engine.run(stack, overrides, secrets)
            if not overrides and not secrets:
                assert cache[key].error is None, cache[key].error
        result = cache[key]
        # The shipped stacks' runs are shared as they are (read-only by convention, as before); a variant is copied.
        return copy.deepcopy(result) if overrides or secrets else result

    return _synth


@pytest.fixture(scope="session")
def kubernetes_schemas() -> None:
    """The kept CRD schemas parsed once per session, before the first test that validates against them (a test
    module takes it with `pytest.mark.usefixtures("kubernetes_schemas")`)."""
    from tests import k8s_validation

    k8s_validation.load_crd_validators()


@pytest.fixture(scope="session")
def nemo_rl_checkpoint():
    """NeMo-RL's checkpoint module (tests/oracles/nemo_rl_checkpoint.py), imported at the first test that takes it:
    it imports torch, which takes seconds, so not at collection."""
    from tests.oracles import nemo_rl_checkpoint as module

    return module


@pytest.fixture(params=SHIPPED_STACKS)
def stack(request) -> str:
    return request.param


# --- tiers (tests/tiers.py) -------------------------------------------------------------------------------------
from tests.tiers import (  # noqa: E402, F401
    _unit_tier_guard,
    pytest_addoption,
    pytest_make_collect_report,
    pytest_runtest_call,
    pytest_xdist_make_scheduler,
)

pytest_plugins = ["pytester"]  # tests/test_tiers.py runs pytest on files of its own
