"""Shared fixtures and the test tiers.

- `synth`: the engine's records of a stack, computed once per test session for each distinct (stack, overrides,
  secrets): the first call runs the engine, later calls with the same arguments get the cached result (a deep copy
  when overrides or secrets were given, so a test that edits its result cannot change another's).
- Tiers (pyproject.toml registers the markers): every test gets exactly one, from what it uses, never by hand:
  `ray` when it or a fixture it uses starts a local Ray cluster (tests/ray_local.py `local_cluster`), `graph` when it
  runs the program through the engine (the `synth` fixture, `engine.run`, `python -m synth`), `unit` otherwise.
  `pytest -m unit` is the fast loop. A unit test that runs the engine after all fails, naming the miss.
"""

from __future__ import annotations

import copy
import json
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable

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


@pytest.fixture(params=SHIPPED_STACKS)
def stack(request) -> str:
    return request.param


# --- tiers ------------------------------------------------------------------------------------------------------
TIERS = ("unit", "graph", "ray")


def _code_names(code: types.CodeType) -> set[str]:
    """Every name and string constant a function refers to, nested functions and lambdas included."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _code_names(const)
        elif isinstance(const, str):
            out.add(const)
    return out


def _functions(item: pytest.Function) -> Iterable[Callable[..., Any]]:
    yield item.function
    for name, defs in item._fixtureinfo.name2fixturedefs.items():
        if name != "_unit_tests_run_no_engine":  # the guard below names the engine to refuse it
            for d in defs:
                yield d.func


def tier_of(item: pytest.Function) -> str:
    names: set[str] = set()
    for f in _functions(item):
        code = getattr(f, "__code__", None)
        if code is not None:
            names |= _code_names(code)
    if "local_cluster" in names:
        return "ray"
    if (
        "synth" in item.fixturenames
        or {"engine", "run"} <= names
        or {"policy_check", "main"} <= names  # synth/policy_check.py runs the stack through the engine
        or {"settings_reference", "render"} <= names  # docs/settings.md's refusal lines come from engine runs
        or "synth_main" in names
        or "synth" in names
    ):
        return "graph"
    return "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function):
            item.add_marker(tier_of(item))


@pytest.fixture(autouse=True)
def _unit_tests_run_no_engine(request, monkeypatch):
    """The tier's promise, checked: a test classified `unit` must not run the program through the engine."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return

    def refuse(*args, **kwargs):
        raise AssertionError(
            f"{request.node.nodeid} runs the engine but was classified unit: tests/conftest.py "
            "tier_of() misses how it runs it"
        )

    monkeypatch.setattr(engine, "run", refuse)
    yield
