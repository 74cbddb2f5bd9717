"""The test tiers, declared where the tests are and checked (tests/conftest.py registers these hooks).

Every test has exactly one tier, declared in its file: `pytestmark = pytest.mark.<tier>` when the whole file is one
tier, else `@pytest.mark.<tier>` on each test. A file with an undeclared test fails its collection with one line
naming it (and the run stops: "Interrupted: 1 error during collection"). The tiers (pyproject.toml registers them):

- `unit`: pure code, files and short subprocesses on loopback; each test's call phase under `UNIT_SECONDS`. It never
  runs the program through the engine, starts Ray, or starts a subprocess that runs the program (`python -m synth`,
  `__main__.py`, a make target that synthesizes): the guard below makes such a test fail, naming what it did.
  `pytest -m unit` is the loop while editing.
- `graph`: the engine runs whole stacks, and the heavier oracles (every config of every release through NeMo-RL's
  own loader, subprocess synths, pod programs that take seconds); parallel with pytest-xdist (`-n 2`).
- `ray`: starts local Ray clusters (tests/ray_local.py); run serially (`make test` runs them in a pytest run of their
  own; under xdist with `--dist loadgroup` they share one worker, so no two clusters start at once).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

TIERS = ("unit", "graph", "ray")
ROOT = Path(__file__).resolve().parents[1]
# A unit test's call phase: at most this much wall time and CPU time (the test's process and the subprocesses it
# waited for), on an idle machine; on a loaded one (a shared 2-core machine, xdist workers) both scale by
# `max(1, load / cores)`, since contention slows the CPU time of the same work too.
# `-o unit_seconds=<s>` sets another (tests/test_tiers.py checks the guard with a tiny one).
UNIT_SECONDS = 1.0
# Make targets that run the program through the engine (Makefile).
_SYNTH_TARGETS = {"synth", "synth-all", "policy-check", "sizing-report", "settings-doc", "generated", "checkov", "test"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("unit_seconds", "a unit test's time budget in seconds (tests/tiers.py)", default=str(UNIT_SECONDS))


def declared_tiers(item: pytest.Item) -> list[str]:
    return [t for t in TIERS if any(m.name == t for m in item.iter_markers())]


def _tier_problem(path: str, item: pytest.Item) -> str:
    tiers = declared_tiers(item)
    if not tiers:
        return (
            f"{path}: {item.name} declares no test tier; put `pytestmark = pytest.mark.<unit|graph|ray>` in the file, "
            "or `@pytest.mark.<tier>` on each test when the file mixes tiers (tests/tiers.py)"
        )
    if len(tiers) > 1:
        return f"{path}: {item.name} declares {' and '.join(tiers)}; a test has exactly one tier (tests/tiers.py)"
    return ""


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A module (or class) with a test of no tier, or of two, fails its collection with one line naming the file:
    every run stops on it, whatever `-m` selects, with or without xdist."""
    report = yield
    if isinstance(collector, (pytest.Module, pytest.Class)) and report.passed:
        path = os.path.relpath(str(collector.path), str(collector.config.rootpath))
        problems = [p for item in report.result if isinstance(item, pytest.Item) if (p := _tier_problem(path, item))]
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            report.outcome, report.longrepr, report.result = "failed", problems[0] + more, []
    return report


# --- xdist: what must share a worker -----------------------------------------------------------------------------
# pytest-xdist 3.8.0's own `--dist loadgroup` writes the group into `item._nodeid`, which pytest 9 no longer reads
# (nodes.py: `nodeid` returns `self._id`), so its xdist_group markers group nothing here. This scheduler does the
# grouping from the test files themselves, in the controller, with `--dist loadgroup` (as `make test` runs):
# - every test of a file with a Ray test shares one worker ("ray"): never two local clusters at once;
# - every test of a file with a module-scoped fixture (the day-two sweep, the synth-determinism runs) shares one,
#   so the fixture is computed once;
# - a test marked `@pytest.mark.xdist_group("<name>")` shares one with the others of that name (a cache they share);
# - every other test goes wherever a worker is free (each worker keeps its own session caches: `synth`).
def _decorator_names(node: ast.AST) -> list[ast.expr]:
    return list(getattr(node, "decorator_list", []))


@functools.lru_cache(maxsize=None)
def file_groups(path: str) -> tuple[str, dict[str, str]]:
    """(the whole file's group or "", test function -> its own group) of a test file."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return "", {}
    text = ast.unparse(tree)
    if "pytest.mark.ray" in text:
        return "ray", {}
    for node in ast.walk(tree):
        for d in _decorator_names(node):
            if "fixture" in ast.unparse(d) and re.search(r"scope=['\"](module|package|class)['\"]", ast.unparse(d)):
                return os.path.relpath(path, ROOT), {}
    own = {}
    for node in tree.body:
        for d in _decorator_names(node):
            m = re.fullmatch(r"pytest\.mark\.xdist_group\(['\"]([^'\"]+)['\"]\)", ast.unparse(d))
            if m and isinstance(node, ast.FunctionDef):
                own[node.name] = m.group(1)
    return "", own


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test belongs to: tests of one scope run on one worker, in order."""
    path, _, name = nodeid.partition("::")
    whole, own = file_groups(str(ROOT / path))
    return whole or own.get(name.split("[")[0], "") or nodeid


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown to a run without it (`-p no:xdist`)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return _Scheduling(config, log)


def unit_budget(seconds: float) -> float:
    """The budget of a unit test's call phase on this machine now."""
    cores = os.cpu_count() or 1
    return seconds * max(1.0, os.getloadavg()[0] / cores)


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    if "unit" not in declared_tiers(item):
        return (yield)
    wall, cpu = time.perf_counter(), _cpu_seconds()
    result = yield  # a failing test's own error goes first
    wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
    seconds = float(item.config.getini("unit_seconds"))
    budget = unit_budget(seconds)
    # On an xdist worker (make test) the wall time measures the other workers and the Ray run as much as the test:
    # there only its CPU time is held to the budget; `pytest -m unit` (make test-unit) holds both.
    timed_wall = "PYTEST_XDIST_WORKER" not in os.environ
    if cpu > budget or (timed_wall and wall > budget):
        raise AssertionError(
            f"{item.nodeid} is a unit test but took {wall:.2f} s ({cpu:.2f} s CPU) over the tier's {seconds:g} s "
            f"({budget:.2f} s at this load): make it faster, or declare it graph (tests/tiers.py)"
        )
    return result


def _words(args: Any) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        return re.split(r"\s+", os.fsdecode(args))
    return [os.fsdecode(a) for a in args]


def program_run(args: Any) -> str:
    """Why a subprocess with these arguments is not for the unit tier ('' when it is)."""
    words = [w for w in _words(args) if w]
    if not words:
        return ""
    names = [os.path.basename(w) for w in words]
    if names[0] == "ray" or (len(words) > 1 and names[0].startswith("python") and words[1:3] == ["-m", "ray"]):
        return f"starts Ray ({' '.join(words[:3])})"
    for i, w in enumerate(words[:-1]):
        if w == "-m" and (words[i + 1] == "synth" or words[i + 1].startswith("synth.")):
            return f"runs a subprocess synth (python -m {words[i + 1]})"
    if any(Path(w).resolve() == ROOT / "__main__.py" for w in words if w.endswith("__main__.py")):
        return "runs the program (__main__.py) in a subprocess"
    if names[0] == "make" and _SYNTH_TARGETS & set(words[1:]):
        return f"runs the program through `make {' '.join(sorted(_SYNTH_TARGETS & set(words[1:])))}`"
    return ""


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    """The unit tier's promise, checked: a unit test that runs the engine, starts Ray or runs the program in a
    subprocess fails at that call, naming what it did (the timing is checked in pytest_runtest_call)."""
    if "unit" not in declared_tiers(request.node):
        yield
        return
    nodeid = request.node.nodeid

    def refuse(what: str):
        def _refused(*args, **kwargs):
            raise AssertionError(f"{nodeid} is a unit test but {what}: declare it graph or ray (tests/tiers.py)")

        return _refused

    from synth import engine

    # Every engine run goes through run_in_stack (synth/engine.py run), however `run` was imported.
    monkeypatch.setattr(engine, "run_in_stack", refuse("runs the program through the engine (synth.engine)"))
    ray = sys.modules.get("ray")
    if ray is not None:
        monkeypatch.setattr(ray, "init", refuse("starts Ray in-process (ray.init)"))

    class GuardedPopen(subprocess.Popen):
        def __init__(self, args, *a, **kw):
            why = program_run(args)
            if why:
                refuse(why)()
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", GuardedPopen)
    yield
