"""tools/preview_replacements.py on a recorded `pulumi preview --json` (tests/reference/preview/SOURCES.md: the
CLI's PreviewDigest shape and step order, pulumi/pulumi v3.259.0 pkg/display/json.go and step_generator.go)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import preview_replacements as pr

pytestmark = pytest.mark.unit

PREVIEW = Path(__file__).resolve().parent / "reference" / "preview" / "dev-day2.json"


def _by_name() -> dict[tuple[str, str], pr.Entry]:
    import json

    return {(e.type, e.name): e for e in pr.entries(json.loads(PREVIEW.read_text()))}


def test_every_replace_and_delete_is_listed_with_its_order():
    got = {k: (e.action, e.order) for k, e in _by_name().items()}
    assert got == {
        ("gcp:compute/resourcePolicy:ResourcePolicy", "gpu-flex-placement"): ("replace", "delete first"),
        ("gcp:container/nodePool:NodePool", "gpu-flex"): ("replace", "delete first"),
        ("gcp:container/nodePool:NodePool", "system"): ("update, recreates the nodes", ""),
        ("gcp:lustre/instance:Instance", "lustre"): ("replace", "delete first"),
        ("kubernetes:core/v1:PersistentVolume", "lustre-pv"): ("replace", "delete first"),
        ("kubernetes:batch/v1:Job", "placeholders"): ("replace", "delete first"),
        ("gcp:storage/bucket:Bucket", "bucket"): ("delete", ""),
    }


def test_reasons_are_the_replacing_paths_and_consequences_come_from_the_table():
    e = _by_name()
    assert e[("gcp:compute/resourcePolicy:ResourcePolicy", "gpu-flex-placement")].reasons == [
        "workloadPolicy.maxTopologyDistance"
    ]
    assert e[("gcp:container/nodePool:NodePool", "gpu-flex")].consequences == ["stops the job"]
    assert e[("gcp:container/nodePool:NodePool", "system")].reasons == ["nodeConfig.machineType"]
    assert e[("gcp:lustre/instance:Instance", "lustre")].consequences == ["stops the job", "deletes data"]
    # force_destroy false: a bucket holding exports is never deleted (the delete is refused; an empty one holds none).
    bucket = e[("gcp:storage/bucket:Bucket", "bucket")]
    assert bucket.consequences == [] and "holds objects" in bucket.warning
    assert e[("gcp:compute/resourcePolicy:ResourcePolicy", "gpu-flex-placement")].consequences == []


def test_a_skip_await_job_replacement_is_flagged_as_meeting_itself():
    job = _by_name()[("kubernetes:batch/v1:Job", "placeholders")]
    assert "not awaited" in job.warning


def test_the_summary_is_markdown_naming_each_resource(capsys):
    assert pr.main([str(PREVIEW), "dev"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Replacements and deletes in `dev`")
    assert "| `gcp:lustre/instance:Instance` `lustre` | replace (delete first) |" in out
    assert "DELETES DATA" in out and "the delete fails: force_destroy false" in out


def test_an_empty_preview_says_everything_updates_in_place(tmp_path, capsys):
    f = tmp_path / "p.json"
    f.write_text('{"steps": [], "changeSummary": {"same": 3}}')
    assert pr.main([str(f)]) == 0
    assert "None: every change updates in place." in capsys.readouterr().out


def test_a_file_that_is_not_a_preview_is_refused_with_one_line(tmp_path, capsys):
    f = tmp_path / "p.json"
    f.write_text("not json")
    assert pr.main([str(f)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_update_the_api_refuses_is_flagged():
    # A changed pod range is an update of the subnet in the plan; the API refuses it (replacements.API_REFUSES).
    old = {"secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"}]}
    new = {"secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.32.0.0/14"}]}
    step = {
        "op": "update",
        "urn": "urn:pulumi:dev::nemo-rl-gke::gcp:compute/subnetwork:Subnetwork::primary",
        "oldState": {"type": "gcp:compute/subnetwork:Subnetwork", "inputs": old},
        "newState": {"type": "gcp:compute/subnetwork:Subnetwork", "inputs": new},
        "detailedDiff": {"secondaryIpRanges[0].ipCidrRange": {"kind": "update"}},
    }
    (e,) = pr.entries({"steps": [step]})
    assert (e.action, e.reasons) == ("update", ["secondaryIpRanges[0].ipCidrRange"])
    assert e.warning.startswith("the update fails: a secondary range GKE uses")
