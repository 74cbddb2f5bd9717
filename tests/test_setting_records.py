"""Each setting is declared once, as a record beside its field (core/settings/record.py), and what is generated or
driven from the records follows them: the docs' day-two table, the mode sets, the experiment/platform split.

What the records claim is checked where it can fail for the right reason: the bad values by the bad-input sweep
(tests/test_bad_input_sweep.py), the day-two classes and scopes by the day-two sweep (tests/test_day2_settings.py),
Pulumi.yaml and docs/settings.md by their own tests. Here: the declaration refuses an incomplete record, every config
key has one, each record's rule module is where its refusals come from, and the generated table is current.
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from pathlib import Path

import pytest
import yaml

from core.settings import SECRET_KEYS, platform
from core.settings.base import Section
from core.settings.record import (
    IN_PLACE,
    ON_AUTOPILOT,
    PLATFORM,
    REFUSED_BY_PROGRAM,
    STANDARD,
    STOPS_THE_JOB,
    DayTwo,
    record_of,
    setting,
)
from core.settings.registry import AUTOPILOT_ONLY, STANDARD_ONLY, declared
from synth import day_two

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def _declare(**overrides):
    kw = dict(
        key="queueName",
        description="The Kueue LocalQueue the job is admitted through.",
        owner=PLATFORM,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",)),
        bad=("Bad_x",),
        alternatives=({"queueName": "other"},),
    )
    kw.update(overrides)
    return setting("default", **kw)


def test_a_declared_setting_is_a_field_with_its_config_key_description_and_record():
    class QueueSettings(Section):
        queue: str = _declare(modes=STANDARD)

    info = QueueSettings.model_fields["queue"]
    assert info.alias == "queueName" and info.get_default() == "default"
    assert info.description == "Standard only: the Kueue LocalQueue the job is admitted through."
    record = record_of(info)
    assert record is not None and record.bad[0].value == "Bad_x" and record.modes == STANDARD
    assert QueueSettings.model_validate({"queueName": "q"}).queue == "q"


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"bad": ()}, "bad value"),
        ({"alternatives": ()}, "alternative"),
        ({"alternatives": ({"otherKey": 1},)}, "set the key itself"),
        ({"stack_alternatives": {"dev": {"otherKey": 1}}}, "set the key itself"),
        ({"owner": "nobody"}, "owner"),
        ({"modes": frozenset()}, "modes"),
    ],
)
def test_an_incomplete_record_is_refused_where_it_is_declared(overrides, words):
    with pytest.raises(TypeError, match=words):
        _declare(**overrides)


def test_a_day_two_claim_names_a_known_class_and_resource_patterns():
    with pytest.raises(ValueError, match="day-two class"):
        DayTwo(typing.cast(typing.Any, "replaced"), touches=())
    with pytest.raises(ValueError, match="touches pattern"):
        DayTwo(IN_PLACE, touches=("NodePool",))  # a type without a name


def test_every_config_key_of_pulumi_yaml_is_one_record():
    in_yaml = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    settings = {k for k in in_yaml if ":" not in k} - set(SECRET_KEYS)
    assert settings == set(declared())


def test_a_record_claims_its_class_and_the_other_modes_refusal():
    class S(Section):
        nodes: int = _declare(
            key="poolNodes",
            modes=STANDARD,
            day_two=DayTwo(STOPS_THE_JOB, touches=(), where={ON_AUTOPILOT: IN_PLACE}),
            alternatives=({"poolNodes": 2},),
        )

    record = record_of(S.model_fields["nodes"])
    assert record is not None
    assert record.claims() == [
        (STOPS_THE_JOB, None),
        (IN_PLACE, "on Autopilot"),
        (REFUSED_BY_PROGRAM, "on Autopilot (Standard only)"),
    ]


def test_each_records_rule_module_is_where_its_key_is_refused():
    # The module names the key outside its own declaration (the rule's one line), or the field's type refuses every
    # bad value by itself (a choice, a boolean, a bound): pydantic's line names the key.
    for k, d in declared().items():
        module = importlib.import_module(d.rule_module)
        source = inspect.getsource(module)
        mentions = len(re.findall(rf"[\"']{k}[\"'.]", source))  # "gpuNodes", f"jobOverrides.{key}"
        if d.rule_module == d.module:
            mentions -= 1 + sum(1 for _ in d.record.alternatives) + len(d.record.stack_alternatives)
        by_type = typing.get_origin(d.annotation) is typing.Literal or d.annotation is bool or d.constraints
        assert mentions > 0 or by_type, f"{k}: {d.rule_module} does not name it; set the record's rule="


def test_a_description_leaves_the_cluster_mode_to_the_record():
    for k, d in declared().items():
        assert not d.record.description.startswith(("Standard only", "Autopilot only")), k
    assert STANDARD_ONLY == {"controlPlane", "gpuDriverVersion", "gpuNodes", "reservationStartNodes"} | {
        "systemMachineType",
        "systemNodes",
    }
    assert AUTOPILOT_ONLY == {"flexStartWaitMinutes"}


def test_an_experiment_stack_sets_exactly_the_keys_its_records_give_it():
    owners = {k: d.record.owner for k, d in declared().items()}
    assert platform.EXPERIMENT_KEYS == {k for k, o in owners.items() if o in ("experiment", "both")}
    assert {k for k, o in owners.items() if o == "experiment"} == {"platformStack", "experiment"}


def test_the_day_two_table_of_operations_md_is_what_the_records_generate():
    text = (ROOT / "docs" / "operations.md").read_text()
    assert day_two.render(text) == text, "run `make generated`"
    block = text[text.index(day_two.BEGIN) : text.index(day_two.END)]
    for k in declared():
        assert f"| `{k}` |" in block, k
