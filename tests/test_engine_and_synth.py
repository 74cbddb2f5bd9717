"""The in-process engine and the offline synth command: what they record and what they write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from core import catalog
from core.settings import SECRET_KEYS, config_fields
from synth import engine
from synth.project_file import DEFAULT_TYPES, render

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"


@pytest.mark.unit
def test_pulumi_yaml_validates_against_the_project_schema():
    schema = json.loads((SCHEMAS / "pulumi-project.json").read_text())
    jsonschema.validate(yaml.safe_load((ROOT / "Pulumi.yaml").read_text()), schema)


@pytest.mark.unit
def test_pulumi_yaml_declares_every_setting_with_the_models_default():
    assert (ROOT / "Pulumi.yaml").read_text() == render(), "run `make generated`"
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    for key, (_s, _f, info) in config_fields().items():
        assert declared[key]["description"] and declared[key]["type"]
        default = info.get_default(call_default_factory=True)
        # Optional settings default to "" (Pulumi config has no null), which the loader reads as unset.
        assert declared[key]["default"] == ("" if default is None else default)
    assert declared["hfToken"]["secret"] is True and "default" not in declared["hfToken"]
    assert declared["pulumi:disable-default-providers"]["value"] == ["kubernetes"]


@pytest.mark.unit
def test_pulumi_yaml_defaults_have_their_declared_type_as_the_cli_requires():
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    for key, decl in declared.items():
        if "default" in decl and "type" in decl:
            want = DEFAULT_TYPES[decl["type"]]
            assert isinstance(decl["default"], want) and not (want is int and isinstance(decl["default"], bool)), key


@pytest.mark.unit
def test_only_the_hf_token_is_required_from_every_stack():
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    required = sorted(k for k, d in declared.items() if "default" not in d and "value" not in d)
    assert required == ["hfToken"]


@pytest.mark.unit
def test_pulumi_yaml_declares_every_secret_the_program_reads_as_secret():
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    for k in SECRET_KEYS:
        assert declared[k]["secret"] is True and f"--secret {k}" in declared[k]["description"], k
    # The CLI type-checks, and refuses unencrypted, only typed keys, and merges a declared default in as a plain
    # value (pulumi/pulumi pkg/workspace/config.go validateStackConfigValue): a typed secret with a default would
    # stop every stack that leaves it unset. The required HF token is typed; the optional ones are not.
    assert declared["hfToken"]["type"] == "string" and "default" not in declared["hfToken"]
    for k in set(SECRET_KEYS) - {"hfToken"}:
        assert "type" not in declared[k] and declared[k]["default"] == "", k


@pytest.mark.unit
def test_pulumi_yaml_requires_the_cli_that_has_replace_with():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["requiredPulumiVersion"] == f">={catalog.PULUMI_CLI_MIN_VERSION}"


@pytest.mark.graph
def test_an_unset_optional_secret_arrives_as_the_cli_passes_it_and_reads_as_missing(synth):
    # The CLI passes the declared "" default of an unset optional secret as a plain value: not "stored in plain
    # text", but missing, naming the key and the command to run.
    r = synth("dev", None, {"wandbApiKey": None})
    assert r.config["nemo-rl-gke:wandbApiKey"] == "" and "nemo-rl-gke:wandbApiKey" not in r.secret_keys
    lines = [ln.strip() for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith("- nemo-rl-gke:wandbApiKey:") and "plain text" not in lines[0]
    assert "pulumi config set --secret wandbApiKey" in lines[0]
    # With the job off nothing needs W&B: the stack renders, and the tokens Secret holds no netrc.
    r = synth("dev", {"jobEnabled": "false"}, {"wandbApiKey": None})
    assert r.error is None, r.error
    secret = r.get("kubernetes:core/v1:Secret", "tokens")
    assert not any("netrc" in k for k in (secret.inputs.get("stringData") or {}) | (secret.inputs.get("data") or {}))


@pytest.mark.graph
def test_engine_refuses_what_the_cli_refuses(tmp_path):
    (tmp_path / "__main__.py").write_text("raise SystemExit('the program must not run')\n")
    project = {
        "name": "nemo-rl-gke",
        "runtime": "python",
        "config": {"needed": {"type": "string"}, "typed": {"type": "integer", "default": "300"}},
    }
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(project))
    (tmp_path / "Pulumi.s.yaml").write_text("config: {}\n")
    with pytest.raises(engine.StackConfigError, match="'typed' is not of the expected type 'integer'"):
        engine.run("s", root=tmp_path)
    project["config"]["typed"]["default"] = 300
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(project))
    with pytest.raises(engine.StackConfigError, match="missing configuration values: nemo-rl-gke:needed"):
        engine.run("s", root=tmp_path)


@pytest.mark.graph
def test_optional_settings_set_through_the_cli_as_strings_are_read(synth):
    r = synth(
        "autopilot",
        {
            "capacity": '["flex-start", "spot"]',
            "flexStartWaitMinutes": "30",
            "clusterDeletionProtection": "true",
            "bucketName": "",
        },
    )
    assert r.error is None, r.error
    cc = r.get("kubernetes:cloud.google.com/v1:ComputeClass", "gpu-compute-class")
    assert cc.get("spec.priorities.0.capacityCheckWaitTimeSeconds") == 1800
    assert r.get("gcp:container/cluster:Cluster", "cluster").inputs["deletionProtection"] is True


@pytest.mark.unit
def test_runtime_uses_a_virtualenv():
    runtime = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["runtime"]
    assert runtime["name"] == "python" and runtime["options"]["virtualenv"]


@pytest.mark.unit
def test_stack_files_hold_no_secret_values():
    for path in ROOT.glob("Pulumi.*.yaml"):
        cfg = yaml.safe_load(path.read_text())["config"]
        assert not any(k.endswith(("hfToken", "wandbApiKey")) for k in cfg), path.name


@pytest.mark.graph
def test_records_carry_parent_options_and_property_dependencies(synth):
    r = synth("dev")
    lustre = r.get("gcp:lustre/instance:Instance", "lustre")
    urns = r.by_urn()
    assert urns[lustre.parent].type == "nemo-rl-gke:infra:LustreFilesystem"
    assert lustre.custom_timeouts["create"] == "75m"
    network = r.get("gcp:compute/network:Network", "primary")
    assert network.urn in lustre.property_dependencies["network"]
    conn = r.get("gcp:servicenetworking/connection:Connection", "psa-connection")
    assert conn.urn in lustre.dependencies


@pytest.mark.graph
def test_component_type_tokens_follow_the_project_scheme(synth, stack):
    for res in synth(stack).resources:
        if not res.custom:
            assert res.type.startswith(("nemo-rl-gke:infra:", "nemo-rl-gke:workloads:")), res.type


@pytest.mark.graph
def test_computed_outputs_are_labelled_placeholders(synth):
    lustre = synth("dev").get("gcp:lustre/instance:Instance", "lustre")
    assert lustre.computed["mountPoint"].startswith("192.0.2.")
    assert "mountPoint" not in lustre.inputs


@pytest.mark.graph
def test_runs_in_one_process_do_not_leak_state():
    a1 = engine.run("dev")
    b = engine.run("codelab", {"prefix": "other"})
    a2 = engine.run("dev")
    assert [x.key for x in sorted(a1.resources, key=lambda x: x.key)] == [
        x.key for x in sorted(a2.resources, key=lambda x: x.key)
    ]
    assert a1.outputs == a2.outputs
    assert b.outputs["clusterName"] == "other" and a2.outputs["clusterName"] == "nemo-dev"
    assert all(r.urn.split("::")[0] == "urn:pulumi:dev" for r in a2.resources)


@pytest.mark.graph
def test_synth_writes_inventory_graph_and_readme(tmp_path):
    out = tmp_path / "dev"
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "dev", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "resources" in proc.stdout and str(out) in proc.stdout
    graph = (out / "graph.mmd").read_text()
    assert graph.startswith("flowchart LR")
    assert "```mermaid\n" + graph in (out / "README.md").read_text()
    inv = json.loads((out / "inventory.json").read_text())
    assert any(r["type"] == "gcp:lustre/instance:Instance" for r in inv["resources"])
    assert "computed by the cloud at deploy time" in (out / "inventory.md").read_text()


@pytest.mark.graph
def test_synth_of_an_unknown_stack_fails_clearly():
    proc = subprocess.run([sys.executable, "-m", "synth", "nosuch"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "no stack 'nosuch'" in proc.stderr and "dev" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.graph
def test_synth_with_bad_settings_prints_problems_and_writes_nothing(tmp_path):
    out = tmp_path / "bad"
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "dev", "--out", str(out), "--set", "lustreTier=7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "nemo-rl-gke:lustreTier" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.graph
def test_the_architecture_guides_picture_is_the_dev_stacks_component_graph(synth):
    from synth.render import component_mermaid

    guide = (ROOT / "docs" / "architecture.md").read_text()
    assert "```mermaid\n" + component_mermaid(synth("dev")) + "```" in guide
