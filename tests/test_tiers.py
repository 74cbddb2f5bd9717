"""The tiers are declared in the test files and checked (tests/tiers.py): an undeclared test fails the collection
naming its file, and a unit test that runs the engine, starts Ray, runs the program in a subprocess or takes over
its second fails, naming why. Inner runs use pytest's own `pytester` in this process, with the same hooks."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from synth import engine
from tests import tiers
from tests.ray_local import base_env, local_cluster

pytestmark = pytest.mark.unit

# The inner runs' conftest: this suite's tier hooks.
CONFTEST = """
from tests import tiers
from tests.tiers import (  # noqa: F401
    _unit_tier_guard,
    pytest_addoption,
    pytest_make_collect_report,
    pytest_runtest_call,
)


def pytest_configure(config):
    for t in tiers.TIERS:
        config.addinivalue_line("markers", t)
"""


def _inner(pytester, **files: str):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**{k: textwrap.dedent(v) for k, v in files.items()})


def test_a_file_without_a_declared_tier_fails_its_collection_with_one_line_naming_it(pytester):
    _inner(
        pytester,
        test_declared="import pytest\npytestmark = pytest.mark.unit\ndef test_a(): pass\n",
        test_untiered="def test_b(): pass\ndef test_c(): pass\n",
    )
    result = pytester.runpytest("-p", "no:xdist", "-m", "unit")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    lines = [ln for ln in result.outlines if ln.startswith("test_untiered.py: ")]
    assert len(lines) == 1 and lines[0].startswith("test_untiered.py: test_b declares no test tier"), result.outlines
    assert "(and 1 more)" in lines[0] and not any("test_declared.py:" in ln for ln in result.outlines)


def test_a_test_with_two_tiers_fails_its_files_collection(pytester):
    _inner(pytester, test_two="import pytest\npytestmark = pytest.mark.unit\n@pytest.mark.graph\ndef test_a(): pass\n")
    result = pytester.runpytest("-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert any(ln.startswith("test_two.py: test_a declares unit and graph") for ln in result.outlines), result.outlines


def test_every_collected_test_has_exactly_one_tier(request):
    for item in request.session.items:
        assert len(tiers.declared_tiers(item)) == 1, item.nodeid


def test_a_unit_test_that_runs_the_engine_fails_naming_it():
    with pytest.raises(AssertionError, match="is a unit test but runs the program through the engine"):
        engine.run("dev")


def test_a_unit_test_that_starts_a_local_ray_cluster_fails_before_any_node_starts():
    with pytest.raises(AssertionError, match=r"is a unit test but starts Ray \(.*ray start --head\)"):
        with local_cluster(base_env()):
            pass


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "synth", "dev"],
        [sys.executable, "-m", "synth.policy_check", "dev"],
        [sys.executable, str(tiers.ROOT / "__main__.py")],
        ["make", "-s", "synth", "STACK=dev"],
        f"{sys.executable} -m synth codelab --out /nonexistent",
    ],
)
def test_a_unit_test_that_runs_the_program_in_a_subprocess_fails_naming_it(argv):
    with pytest.raises(AssertionError, match="is a unit test but (runs a subprocess synth|runs the program)"):
        subprocess.run(argv, shell=isinstance(argv, str), capture_output=True)


def test_a_unit_test_may_run_a_short_ordinary_subprocess():
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout == "42\n"


def test_a_unit_test_over_its_time_fails_naming_its_time_and_the_tier(pytester, monkeypatch):
    # A budget of a millisecond, crossed by sleeping (wall) and by computing (CPU), scaled by the load like the
    # real one; the graph test next to them is not timed.
    _inner(
        pytester,
        test_slow="""
            import time
            import pytest

            @pytest.mark.unit
            def test_sleeps():
                time.sleep(0.05)

            @pytest.mark.unit
            def test_computes():
                end = time.process_time() + 0.05
                while time.process_time() < end:
                    pass

            @pytest.mark.graph
            def test_graph_sleeps():
                time.sleep(0.05)
            """,
    )
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the inner run is serial, as `pytest -m unit`
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "-o", "unit_seconds=0.001")
    result.assert_outcomes(passed=1, failed=2)
    for name in ("test_sleeps", "test_computes"):
        assert any(f"test_slow.py::{name} is a unit test but took" in ln for ln in result.outlines), result.outlines
    assert any("over the tier's 0.001 s" in ln for ln in result.outlines)


def test_under_xdist_ray_tests_share_a_worker_and_so_do_a_module_fixtures_tests_and_a_named_groups():
    scope = tiers.xdist_scope
    assert scope("tests/test_attempts_ray.py::test_x") == scope("tests/test_token_exposure.py::test_y") == "ray"
    day2 = [scope(f"tests/test_day2_settings.py::{t}") for t in ("test_a", "test_b[x]")]
    assert day2 == ["tests/test_day2_settings.py"] * 2  # its sweep fixture is module-scoped
    named = "test_every_config_of_every_release_reads_as_nemo_rls_own_loader_reads_it"
    assert scope(f"tests/test_config_tree.py::{named}[v0.4.0]") == "nemo-rl-all-configs"
    other = "tests/test_sizing.py::test_codelab_recipe_qwen72b_on_9000gib_tier1000"
    assert scope(other) == other  # anywhere


def test_a_sweep_runs_whole_unless_a_sample_is_asked_for_and_then_the_same_cases_each_time(monkeypatch):
    from tests import sampling

    cases = [("key", i) for i in range(50)]
    monkeypatch.delenv(sampling.SAMPLE_ENV, raising=False)
    assert sampling.sample(cases) == cases and not sampling.sampled()
    monkeypatch.setenv(sampling.SAMPLE_ENV, "7")
    picked = sampling.sample(cases)
    assert len(picked) == 7 and picked == sampling.sample(list(cases)) and picked == sorted(picked)
    assert set(sampling.sample(cases + [("key", 50)])) <= set(picked) | {("key", 50)}  # a new case reshuffles none
    monkeypatch.setenv(sampling.SAMPLE_ENV, "zero")
    with pytest.raises(ValueError, match="NEMO_RL_GKE_SAMPLE='zero'"):
        sampling.sample(cases)
