"""Each test's tier follows from what it uses (tests/conftest.py), so `pytest -m unit` never runs the engine or Ray."""

from __future__ import annotations

import pytest

from synth import engine


def test_a_test_using_the_engine_fixture_is_in_the_graph_tier(synth, request):
    assert request.node.get_closest_marker("graph") and not request.node.get_closest_marker("unit")


def test_a_test_of_plain_code_is_in_the_unit_tier(request):
    assert request.node.get_closest_marker("unit")


def test_a_unit_test_that_runs_the_engine_anyway_fails_naming_the_miss():
    with pytest.raises(AssertionError, match="classified unit"):
        # Spelled so that the classifier, which reads names and constants, does not see `engine.run`.
        first = "r"
        getattr(engine, first + "un")("dev")


def test_every_collected_test_has_exactly_one_tier(request):
    for item in request.session.items:
        assert sum(item.get_closest_marker(t) is not None for t in ("unit", "graph", "ray")) == 1, item.nodeid
