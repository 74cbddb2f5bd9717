"""Every setting with a bad value: one line naming its key, no traceback, nothing registered.

The guide's rule "bad input gets one clear line naming the key and changes nothing, never a traceback" holds only
if no rule runs on a value another rule refused: a refused release looked up by the token rule (`KeyError`), a
refused gpuNodes measured against the subnets and the recipe, a refused prefix turned into a bucket name. So each
case here sets ONE key to a value that must be refused, on a stack that is otherwise valid, and asserts exactly one
problem line, naming that key (and holding the record's expected fragment where it names one). The values are the
`bad` of each setting's record (core/settings/record.py): a record cannot be declared without one, and
`test_every_setting_key_has_a_bad_value_case` checks that every config key has its record. docs/settings.md prints
the line each one produces (synth/settings_reference.py).

Each case also runs without the optional secrets and with the job disabled (the two shapes the issue's
tracebacks came from): there a value may become acceptable, but nothing may raise, and whatever is refused is
refused naming the key and registers nothing.
"""

from __future__ import annotations

import pytest

from core.settings import config_fields
from core.settings.registry import declared
from synth import engine
from tests.sampling import sample

# key -> bad values for the `dev` stack (Standard, standing cluster, NeMo-RL v0.5.0, Gemma 3 on 2 H200 nodes), from
# the settings' records.
BAD: dict[str, tuple] = {k: tuple(b.value for b in d.record.bad) for k, d in declared().items()}
# (key, value) -> the fragment its one refusal line must contain, where the record names one.
REFUSAL = {(k, repr(b.value)): b.refusal for k, d in declared().items() for b in d.record.bad if b.refusal}

# Every case in `make test`; a sample of them with NEMO_RL_GKE_SAMPLE (tests/sampling.py).
CASES = sample([(k, v) for k, values in BAD.items() for v in values])


def _ids(case) -> str:
    k, v = case
    return f"{k}={str(v)[:24]}"


def _problem_lines(error: str) -> list[str]:
    return [ln.strip()[2:] for ln in error.splitlines() if ln.strip().startswith("- ")]


def _names_key(line: str, k: str) -> bool:
    full = f"nemo-rl-gke:{k}"
    return line.startswith(full + ":") or line.startswith(full + ".")


@pytest.mark.unit
def test_every_setting_key_has_a_bad_value_case():
    missing = sorted(set(config_fields()) - set(BAD))
    assert not missing, f"settings without a bad-value case in BAD: {missing}"
    assert not sorted(set(BAD) - set(config_fields())), "BAD names keys that are not settings"


@pytest.mark.graph
@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_one_bad_setting_is_one_line_naming_its_key_and_registers_nothing(synth, case):
    k, value = case
    r = synth("dev", {k: value})
    assert r.error is not None, f"{k}={value!r} was accepted"
    assert "Traceback" not in r.error
    lines = _problem_lines(r.error)
    assert len(lines) == 1 and _names_key(lines[0], k), (
        f"{k}={value!r}: expected one line naming nemo-rl-gke:{k}, got:\n" + "\n".join(lines)
    )
    assert REFUSAL.get((k, repr(value)), "") in lines[0], (k, value, lines[0])
    assert r.resources == []


@pytest.mark.graph
@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_bad_settings_never_raise_without_optional_secrets_or_with_the_job_disabled(synth, case):
    k, value = case
    for overrides in ({k: value}, {k: value, "jobEnabled": "false"} if k != "jobEnabled" else {k: value}):
        # engine.run raises what the program raises: a traceback fails the test here.
        r = synth("dev", overrides, {"rayAuthToken": None, "wandbApiKey": None})
        if r.error is None:
            continue
        assert "Traceback" not in r.error
        assert r.resources == []
        named = [ln for ln in _problem_lines(r.error) if _names_key(ln, k)]
        others = [ln for ln in _problem_lines(r.error) if not _names_key(ln, k)]
        # Besides the key's own line, only the missing W&B key may be reported (the dev recipe logs to W&B).
        assert all(ln.startswith("nemo-rl-gke:wandbApiKey:") for ln in others), others
        assert named or others, r.error


@pytest.mark.graph
def test_the_issue_examples_are_one_line_each(synth):
    # Found by review: an unknown nemoRlRelease without rayAuthToken raised KeyError; workerReplicas 0 / gpuNodes 0 with
    # jobEnabled false raised "replicas must be at least 1" while building the warmup placeholders.
    r = synth("dev", {"nemoRlRelease": "v9.9.9"}, {"rayAuthToken": None})
    assert _problem_lines(r.error) == [
        "nemo-rl-gke:nemoRlRelease: unknown release 'v9.9.9'; valid: v0.4.0, v0.5.0, v0.7.0"
    ]
    for k in ("gpuNodes", "workerReplicas"):
        r = synth("dev", {k: 0, "jobEnabled": "false"})
        assert r.error is None, r.error
        # No GPU worker, nothing to warm: the placeholder Job is not rendered (the pre-pull DaemonSet is).
        assert not [x for x in r.of_type("kubernetes:batch/v1:Job") if x.name == "placeholders"]
        assert [x for x in r.of_type("kubernetes:apps/v1:DaemonSet") if x.name == "cpu-prepull"]


@pytest.mark.graph
@pytest.mark.parametrize("stack", ["codelab", "autopilot"])
def test_the_same_bad_values_on_the_other_shipped_stacks_never_raise_and_stay_on_their_key(synth, stack):
    # A value bad on dev may be fine elsewhere (a flex-start wait on Autopilot); whatever is refused is refused by
    # lines about the swept key only (naming it, or, for a fit between two settings, mentioning it).
    for k, value in CASES:
        r = synth(stack, {k: value})
        if r.error is None:
            continue
        assert "Traceback" not in r.error and r.resources == []
        lines = _problem_lines(r.error)
        assert lines and all(_names_key(ln, k) or f"nemo-rl-gke:{k}" in ln for ln in lines), (k, value, lines)
        assert len(lines) == 1, (k, value, lines)


# --- no refusal after anything is registered, on every rule, experiment stacks too -----------------------------
# An experiment stack reads its platform through a StackReference and refuses what the platform does not allow;
# every such refusal must come before its first registration (a refusal raised after the Secret or the RayJob were
# registered left them in the plan of a failed `up`). Each bad value, alone, on each experiment stack, against its
# platform as shipped and in the two shapes that change what an experiment may do (no job of its own: W&B and the
# prefetch open; no export identity).
EXPERIMENTS = engine.experiment_stacks()
PLATFORM_SHAPES = {"shipped": {}, "no job": {"jobEnabled": "false"}, "no export": {"exportCheckpoints": "false"}}


@pytest.mark.graph
@pytest.mark.parametrize("shape", sorted(PLATFORM_SHAPES))
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_an_experiment_refuses_every_bad_value_before_it_registers_anything(synth, experiment, shape):
    config = engine._load_yaml(engine.ROOT / f"Pulumi.{experiment}.yaml")["config"]
    ref = str(config["nemo-rl-gke:platformStack"])
    platform_run = synth(ref.rsplit("/", 1)[1], PLATFORM_SHAPES[shape] or None)
    assert platform_run.error is None, platform_run.error
    refs = {ref: engine.StackOutputs.of(platform_run)}
    late = {}
    for k, value in [(None, None)] + CASES:
        r = engine.run(experiment, {k: value} if k else None, stack_references=refs)
        if r.error is None:
            continue
        assert "Traceback" not in r.error, (k, value, r.error)
        if r.resources:
            late[f"{k}={str(value)[:24]}"] = sorted(f"{x.type} {x.name}" for x in r.resources if x.custom)
    assert not late, late
