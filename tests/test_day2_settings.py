"""Day two: every setting changed on every shipped stack, and what the change will do to the deployed stack.

Each setting's record (core/settings/record.py) claims what changing it does (`day_two`: a class, the conditions under
which a stack gets another, what it may touch) and names reviewed values to change it to (`alternatives`, per-stack
`stack_alternatives` where a companion key differs). For each key of Pulumi.yaml and each shipped stack the program
is run with the stack's value and with the record's change, and the difference is classified the way the providers
will plan it. The mocks never call a provider's diff, so the classification comes from the providers' own rules as
core/catalog/replacements.py records them (the replace-only fields of terraform-provider-google-beta and
pulumi-kubernetes, the bridge's delete-first rule for auto-named fields, pulumi-kubernetes's delete-first for fixed
names), applied by synth/compare.plan, the same code the offline diff prints. The gravest consequence decides:
- "refused by the program": the program refuses the value before anything is registered, with a line naming the key;
- "refused by the engine": the engine refuses to replace a protected resource (pulumi step_generator.go:1955-1962);
- "refused by the API": the plan runs, and a step of it is refused while `up` applies it (an update of a range GKE
  uses, the delete of a folder that holds exports or of a cluster with deletion protection): the `up` fails there,
  with what ran before it done (core/catalog/replacements.py API_REFUSES, DELETE_REFUSED);
- "deletes data": a resource holding data (the Lustre instance, the bucket, its managed folder) is replaced;
- "stops the job": a node pool is replaced or its nodes recreated, the RayCluster/RayJob, the Lustre volume...;
- "safe replacement": something is replaced, nothing that a running job or stored data depends on;
- "in place": every changed resource updates in place.

Experiment stacks (Pulumi.codelab-exp*.yaml) are swept too: their own keys (the records whose owner is experiment or
both) are changed on the experiment; every other key is changed on its platform, and the experiment is run again
against the platform's new outputs (its StackReference), which is what its next `up` sees. A platform change the
platform refuses leaves the experiment as it is: it gets the platform's refusal. The records' conditions read the
experiment's settings, its own keys over its platform's.

It fails where the plan's class is not the record's claim for that stack, on a same-name replacement that creates
before it deletes (or a delete Pulumi does not wait for), on a data-holding resource replaced where the stack
protects it or without the plan saying DELETES DATA, and on a resource that changes although the record does not
say the setting may touch it.

Cost: one engine run per (stack, key), each variant once; the stacks run in one module-scoped fixture.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from core.catalog import replacements
from core.settings import PLACEHOLDER_PROJECT, SECRET_KEYS, UncheckedSettings, load_settings, platform
from core.settings.record import (
    DELETES_DATA,
    IN_PLACE,
    REFUSED_BY_API,
    REFUSED_BY_ENGINE,
    REFUSED_BY_PROGRAM,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    SettingRecord,
)
from core.settings.registry import declared
from synth import compare, engine
from tests.sampling import sample

# The platform stacks, and the experiment stacks on them (platformStack set: they declare only their job and export,
# and refuse the platform settings, tests/test_platform_experiments.py).
STACKS = engine.platform_stacks()
EXPERIMENTS = engine.experiment_stacks()
REFUSED = (REFUSED_BY_PROGRAM, REFUSED_BY_ENGINE)  # nothing changes: the program or the engine stops it
NOT_SETTINGS = set(SECRET_KEYS)  # secrets: tested in test_token_exposure.py
RECORDS: dict[str, SettingRecord] = {k: d.record for k, d in declared().items()}


def settings_keys() -> list[str]:
    """Every setting Pulumi.yaml declares (provider keys such as `pulumi:disable-default-providers` are not)."""
    declared = engine._load_yaml(engine.ROOT / "Pulumi.yaml")["config"]
    return sorted(k for k in declared if ":" not in k and k not in NOT_SETTINGS)


def variant(base: engine.SynthResult, key: str) -> dict:
    """The change of `key` for this stack: its own entry, else the first alternative differing from its value."""
    record = RECORDS[key]
    if base.stack in record.stack_alternatives:
        return dict(record.stack_alternatives[base.stack])
    for candidate in record.alternatives:
        if base.config.get(f"nemo-rl-gke:{key}", "") != engine._config_string(candidate[key]):
            return dict(candidate)
    raise AssertionError(f"{key}: every alternative equals {base.stack}'s value")


def settings_of(result: engine.SynthResult) -> UncheckedSettings:
    """The settings the stack's run loaded, from its config (what the records' conditions read); an experiment's are
    its own keys over its platform's, as its program loads them (core.settings.load_experiment_settings)."""
    config: dict[str, Any] = result.config
    values = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{result.project}:")}
    project, region = config.get("gcp:project", ""), config.get("gcp:region")
    if result.stack in EXPERIMENTS:
        contract = _base(_platform_of(result.stack))[0].outputs[platform.CONTRACT_OUTPUT]
        values = platform.experiment_values(values, contract, result.stack)
        project, region = contract["gcpProject"], contract["gcpRegion"]
    return load_settings(
        stack_name=result.stack,
        gcp_project="example-project" if project == PLACEHOLDER_PROJECT else project,
        values=values,
        secret_state={k: "secret" for k in SECRET_KEYS},
        gcp_region=region,
    )


def claim(stack: str, key: str) -> str:
    """What the record says the stack's change of `key` does (a platform key on an experiment: changed on its
    platform, as the sweep does)."""
    base, _ = _base(stack)
    changed_on = _platform_of(stack) if stack in EXPERIMENTS and key not in platform.EXPERIMENT_KEYS else stack
    return RECORDS[key].day_two_on(settings_of(base), variant(_base(changed_on)[0], key))


_BASES: dict[str, tuple[engine.SynthResult, compare.Snapshot]] = {}


def _platform_ref(stack: str) -> str:
    """An experiment stack's `platformStack` (`<org>/<project>/<stack>`)."""
    cfg = engine._load_yaml(engine.ROOT / f"Pulumi.{stack}.yaml").get("config") or {}
    return str(cfg["nemo-rl-gke:platformStack"])


def _platform_of(stack: str) -> str:
    return _platform_ref(stack).rsplit("/", 1)[1]


def _references(experiment: str, platform_result: engine.SynthResult) -> dict[str, engine.StackOutputs]:
    return {_platform_ref(experiment): engine.StackOutputs.of(platform_result)}


def _run(stack: str, overrides=None, platform_result=None) -> engine.SynthResult:
    if stack in EXPERIMENTS:
        platform_result = platform_result or _base(_platform_of(stack))[0]
        return engine.run(stack, overrides, stack_references=_references(stack, platform_result))
    return engine.run(stack, overrides)


def _base(stack: str) -> tuple[engine.SynthResult, compare.Snapshot]:
    if stack not in _BASES:
        result = _run(stack)
        assert result.error is None, result.error
        _BASES[stack] = result, compare.of_result(result)
    return _BASES[stack]


def _short(name: str) -> str:
    """`gcp:container/nodePool:NodePool gpu-flex` -> `NodePool gpu-flex`."""
    typ, _, logical = name.partition(" ")
    return f"{typ.rsplit(':', 1)[-1]} {logical}"


def _types(*results: engine.SynthResult) -> list[str]:
    return sorted({r.type for result in results for r in result.resources if r.custom})


def classify(stack: str, key: str) -> dict:
    """Run one variant: what it changes, how the replacement plan classifies it, and the plan's text."""
    base, _ = _base(stack)
    change = variant(base, key)
    return _judge(stack, change, _run(stack, change))


def _judge(stack: str, change: dict, result: engine.SynthResult) -> dict:
    base, before = _base(stack)
    out: dict = {"change": change, "types": _types(base, result)}
    if result.error is not None:
        lines = [ln.strip()[2:] for ln in result.error.splitlines() if ln.strip().startswith("- ")]
        return {
            **out,
            "class": REFUSED_BY_PROGRAM,
            "lines": lines,
            "registered": sum(r.custom for r in result.resources),
        }
    after = compare.of_result(result)
    verdicts = compare.plan(before, after)
    common = set(before.pulumi) & set(after.pulumi)
    changed = (set(before.pulumi) ^ set(after.pulumi)) | {n for n in common if compare._fields(before, after, n)}
    marked = [v for v in verdicts.values() if v.marked]
    if any(v.refused for v in marked):
        cls = REFUSED_BY_ENGINE
    elif any(v.fails for v in marked):
        cls = REFUSED_BY_API
    elif any("deletes data" in v.consequences for v in marked):
        cls = DELETES_DATA
    elif any("stops the job" in v.consequences for v in marked):
        cls = STOPS_THE_JOB
    elif any(v.replaced for v in marked):
        cls = SAFE_REPLACEMENT
    else:
        cls = IN_PLACE
    return {
        **out,
        "class": cls,
        "changed": sorted(_short(n) for n in changed),
        # Replaced without an input change of their own: a consequence the plan names (cascade, replaceWith...).
        "derived": sorted(_short(v.name) for v in marked if v.name not in changed),
        "verdicts": [(_short(v.name), v.summary(), v.collides, v.refused, list(v.consequences)) for v in marked],
        "replaced": sorted(v.name for v in marked if v.replaced),
        "stops": sorted(v.name for v in marked if "stops the job" in v.consequences),
        "report": compare.format_plan(verdicts),
        "protected": sorted(_short(n) for n, r in after.pulumi.items() if r["options"].get("protect")),
        "lustreOnDestroy": result.config.get("nemo-rl-gke:lustreOnDestroy", ""),
    }


def _on_the_platform(experiment: str, key: str, platform_change: dict, platform_result: engine.SynthResult) -> dict:
    """A platform key changed on the experiment's platform: what the experiment's next `up` does."""
    if platform_result.error is not None or platform_change.get("class") in REFUSED:
        # The platform refuses it (its settings, or the engine): nothing the experiment reads changes.
        kept = {k: platform_change[k] for k in ("lines", "registered") if k in platform_change}
        return {
            "change": platform_change["change"],
            "types": [],
            "class": platform_change["class"],
            "on": "platform",
            "changed": [],
            **kept,
        }
    c = {**_judge(experiment, platform_change["change"], _run(experiment, None, platform_result)), "on": "platform"}
    # The experiment's pods run on the platform's nodes and mount its Lustre claim: what the platform's plan replaces
    # under them (a node pool, the cluster, the claim...) stops the experiment's job too, whatever its own plan says.
    # The platform's own RayCluster and RayJob are not the experiment's.
    under = [n for n in platform_change.get("stops", []) if n.split(" ")[0] not in OWN_JOB_TYPES]
    if under and c["class"] in (IN_PLACE, SAFE_REPLACEMENT):
        c = {**c, "class": STOPS_THE_JOB, "stopped by the platform": under}
    return c


OWN_JOB_TYPES = ("kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayJob")


def _classify(task: tuple[str, str]) -> list[tuple[tuple[str, str], dict]]:
    stack, key = task
    if stack in EXPERIMENTS:  # one of the experiment's own keys
        return [(task, classify(stack, key))]
    base, _ = _base(stack)
    change = variant(base, key)
    result = _run(stack, change)
    c = _judge(stack, change, result)
    out = [(task, c)]
    if key not in platform.EXPERIMENT_KEYS:
        for experiment in EXPERIMENTS:
            if _platform_of(experiment) == stack:
                out.append(((experiment, key), _on_the_platform(experiment, key, c, result)))
    return out


@pytest.fixture(scope="module")
def sweep() -> dict[tuple[str, str], dict]:
    """Every (stack, key) classified once, spread over two processes (the engine is CPU-bound; ~330 runs), with
    the record's claim for it."""
    import multiprocessing

    for stack in STACKS + EXPERIMENTS:  # each stack's own run, once, in this process: the forked workers inherit it
        _base(stack)
    tasks = [(stack, key) for stack in STACKS for key in settings_keys()]
    tasks += [(stack, key) for stack in EXPERIMENTS for key in settings_keys() if key in platform.EXPERIMENT_KEYS]
    # Every case in `make test`; a sample with NEMO_RL_GKE_SAMPLE (tests/sampling.py).
    tasks = sample(tasks)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        done = {k: v for results in pool.imap_unordered(_classify, tasks, chunksize=8) for k, v in results}
    return {task: {**c, "claim": claim(*task)} for task, c in done.items()}


@pytest.mark.unit
def test_every_setting_has_a_record_with_a_day_two_claim():
    keys = set(settings_keys())
    assert set(RECORDS) == keys, "every setting of Pulumi.yaml is declared with core.settings.record.setting()"
    assert all(RECORDS[k].alternatives and RECORDS[k].day_two.change for k in keys)


@pytest.mark.graph
def test_each_change_does_what_its_record_claims(sweep):
    wrong = {
        f"{stack}:{key}": (c["class"], c["claim"], c.get("lines") or c.get("verdicts"))
        for (stack, key), c in sweep.items()
        if c["class"] != c["claim"]
    }
    assert not wrong, "\n".join(
        f"{k}: the plan says {v[0]}, the record {v[1]}: {v[2]}" for k, v in sorted(wrong.items())
    )


@pytest.mark.graph
def test_no_replacement_meets_the_resource_it_replaces(sweep):
    # A create-first replacement that reuses a fixed name or id, a retained resource replaced, or a delete
    # pulumi-kubernetes does not wait for: the create fails with 409 AlreadyExists and the `up` stops halfway.
    collisions = {
        f"{stack}:{key}": [(name, why) for name, _, why, _, _ in c.get("verdicts", []) if why]
        for (stack, key), c in sweep.items()
    }
    assert not {k: v for k, v in collisions.items() if v}


@pytest.mark.graph
def test_data_is_deleted_only_where_the_stack_allows_it_and_the_plan_says_so(sweep):
    for (stack, key), c in sweep.items():
        for name, _, _, refused, consequences in c.get("verdicts", []):
            if "deletes data" not in consequences or refused:
                continue
            assert name not in c["protected"], (stack, key, name)
            if name == "Instance lustre":  # protect refuses (above); retain is a collision (test above)
                assert c["lustreOnDestroy"] == "delete", (stack, key)
            assert f"{name.split(' ')[0]}" in c["report"] and "DELETES DATA" in c["report"], (stack, key, name)


@pytest.mark.graph
def test_a_change_touches_only_what_the_setting_is_about(sweep):
    stray = {}
    for (stack, key), c in sweep.items():
        if "lines" in c:
            continue
        extra = [n for n in c["changed"] if not any(fnmatch.fnmatchcase(n, p) for p in RECORDS[key].day_two.touches)]
        if extra:
            stray[f"{stack}:{key}"] = extra
    assert not stray, stray


@pytest.mark.graph
def test_a_refused_change_names_its_key_and_registers_nothing(sweep):
    for (stack, key), c in sweep.items():
        if "lines" not in c:
            continue
        assert c["registered"] == 0, (stack, key)
        assert c["lines"] and any(f"nemo-rl-gke:{key}" in line for line in c["lines"]), (stack, key, c["lines"])


@pytest.mark.graph
def test_every_resource_the_sweep_registers_has_its_provider_rules_read(sweep):
    # Per resource type, of every stack and every change: the replace-only table and the diff customisations of its
    # provider (CustomizeDiff, plan modifiers) were read, or its changes are classified blind (the Artifact Registry
    # grant of `imagePath: streaming` was, until it had its rules).
    types = {t for c in sweep.values() for t in c.get("types", [])}
    unread = sorted(t for t in types if not replacements.rules_for(t) or not replacements.diff_rules_read(t))
    assert not unread, unread


@pytest.mark.graph
def test_a_platform_change_replaces_an_experiment_object_only_with_the_platform_cluster(sweep):
    # The experiment's provider carries the platform cluster's id (clusterIdentifier): a changed kubeconfig (the
    # platform's endpoint settings, a CA rotation) is an update; only another cluster replaces its objects.
    wrong = {}
    for (stack, key), c in sweep.items():
        if stack not in EXPERIMENTS or c.get("on") != "platform" or c["class"] in REFUSED:
            continue
        platform_plan = sweep[(_platform_of(stack), key)]
        if "pulumi:providers:kubernetes k8s" in c["replaced"] and "gcp:container/cluster:Cluster cluster" not in (
            platform_plan.get("replaced") or []
        ):
            wrong[f"{stack}:{key}"] = c["verdicts"]
    assert not wrong, wrong


@pytest.mark.graph
def test_a_step_the_api_refuses_is_said_in_the_plan(sweep):
    for (stack, key), c in sweep.items():
        if c["class"] == REFUSED_BY_API:
            assert "FAILS: " in c["report"], (stack, key)


@pytest.mark.graph
def test_a_new_name_replaces_a_resource_and_never_patches_it_at_the_new_name(sweep):
    # terraform-provider-google#27818 pattern: a `name` that is not ForceNew is updated by a PATCH at the new name, a
    # resource that does not exist (the flex-start placement policy under a new prefix). The program replaces those.
    patched = {
        f"{stack}:{key}": name
        for (stack, key), c in sweep.items()
        for name, summary, *_ in c.get("verdicts", [])
        if "FAILS: name: " in summary
    }
    assert not patched, patched
