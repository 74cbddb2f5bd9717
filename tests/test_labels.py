"""Every label the program renders meets the rules of the API that stores it.

- Google Cloud labels (the GKE cluster's resource labels, node pools' resource labels, Managed Lustre, Cloud
  Storage): keys 1-63 characters starting with a lowercase letter, values 0-63 characters, both "only lowercase
  letters, numeric characters, underscores, and dashes" (Resource Manager "Requirements for labels",
  https://cloud.google.com/resource-manager/docs/labels-overview#requirements).
- Kubernetes labels (object metadata, pod templates, selectors, and the node labels a GKE node pool sets): an
  optional DNS-subdomain prefix (<= 253) and `/`, a name of <= 63 characters, a value of <= 63 characters; names and
  non-empty values begin and end with an alphanumeric character and hold only alphanumerics, `-`, `_` and `.`
  (kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).

A Pulumi stack name may be `Team.Prod` (letters, digits, `-`, `_`, `.`, up to 100 characters): the stack label
is derived from it (core.naming.gcp_label_value), so the stack is run here under that name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from core import naming
from synth import engine

ROOT = Path(__file__).resolve().parents[1]

_GCP_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_GCP_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_K8S_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# GCP inputs (camelCase, as the engine records them) that hold Google Cloud labels, and those that hold Kubernetes
# node labels (a node pool's nodeConfig.labels become the nodes' Kubernetes labels).
GCP_LABEL_PATHS = ("labels", "resourceLabels", "nodeConfig.resourceLabels")
K8S_LABELS_OF_GCP = ("nodeConfig.labels",)


def gcp_label_problems(labels: dict) -> list[str]:
    return [
        f"{k}={v!r}"
        for k, v in labels.items()
        if not _GCP_KEY.match(str(k)) or not isinstance(v, str) or not _GCP_VALUE.match(v)
    ]


def k8s_label_problems(labels: dict) -> list[str]:
    bad = []
    for k, v in labels.items():
        prefix, _, name = str(k).rpartition("/")
        ok_key = _K8S_NAME.match(name) and (not prefix or (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix)))
        ok_value = isinstance(v, str) and (v == "" or _K8S_NAME.match(v))
        if not (ok_key and ok_value):
            bad.append(f"{k}={v!r}")
    return bad


def _walk_k8s_labels(node, path=""):
    """Every label map in a Kubernetes object: metadata.labels at any depth (templates, embedded clusters) and
    selectors' matchLabels."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (
                k in ("labels", "matchLabels")
                and isinstance(v, dict)
                and path.split(".")[-1]
                in ("metadata", "selector", "labelSelector", "namespaceSelector", "podSelector", "")
            ):
                yield f"{path}.{k}", v
            yield from _walk_k8s_labels(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_k8s_labels(v, path)


def _get(d: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(d, dict):
            return None
        d = d.get(part)
    return d


def all_label_problems(result) -> list[str]:
    out = []
    for r in result.resources:
        if r.type.startswith("gcp:"):
            for p in GCP_LABEL_PATHS:
                labels = _get(r.inputs, p)
                if isinstance(labels, dict):
                    out += [f"{r.type} {r.name} {p}: {x}" for x in gcp_label_problems(labels)]
            for p in K8S_LABELS_OF_GCP:
                labels = _get(r.inputs, p)
                if isinstance(labels, dict):
                    out += [f"{r.type} {r.name} {p}: {x}" for x in k8s_label_problems(labels)]
        elif r.is_kubernetes:
            for p, labels in _walk_k8s_labels(r.inputs):
                out += [f"{r.type} {r.name} {p}: {x}" for x in k8s_label_problems(labels)]
    return out


@pytest.fixture(scope="module")
def team_prod(tmp_path_factory):
    """The dev stack under the stack name `Team.Prod` (a valid Pulumi stack name), with a prefix of its own: the
    default prefix `nemo-Team.Prod` is refused naming `prefix`."""
    root = tmp_path_factory.mktemp("team-prod")
    for entry in ROOT.iterdir():
        if entry.name in ("__main__.py", "Pulumi.yaml", "core", "infra", "workloads", "pod_programs", "schemas"):
            (root / entry.name).symlink_to(entry)
    cfg = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    cfg["config"]["nemo-rl-gke:prefix"] = "team-prod"
    (root / "Pulumi.Team.Prod.yaml").write_text(yaml.safe_dump(cfg))
    r = engine.run("Team.Prod", root=root)
    assert r.error is None, r.error
    return r


@pytest.mark.unit
def test_stack_names_become_valid_label_values_that_stay_distinct():
    assert naming.gcp_label_value("dev") == "dev"  # shipped stacks keep their labels (no diff)
    v = naming.gcp_label_value("Team.Prod")
    assert _GCP_VALUE.match(v) and v.startswith("team-prod-") and v != naming.gcp_label_value("team-prod")
    long = naming.gcp_label_value("A" * 100)
    assert _GCP_VALUE.match(long) and len(long) == naming.GCP_LABEL_VALUE_MAX


@pytest.mark.graph
def test_every_rendered_label_meets_its_apis_rules(synth, stack):
    problems = all_label_problems(synth(stack))
    assert not problems, "\n".join(problems)


@pytest.mark.graph
def test_a_stack_named_team_prod_renders_valid_labels_everywhere(team_prod):
    problems = all_label_problems(team_prod)
    assert not problems, "\n".join(problems)
    labelled = {
        r.type: r.inputs.get("labels") or r.inputs.get("resourceLabels")
        for r in team_prod.resources
        if r.type in ("gcp:container/cluster:Cluster", "gcp:lustre/instance:Instance", "gcp:storage/bucket:Bucket")
    }
    assert len(labelled) == 3
    assert {lab["stack"] for lab in labelled.values()} == {naming.gcp_label_value("Team.Prod")}
