"""Managed Lustre root squash: every client outside the cluster's nodes mounts squashed.

Rules and sources (core/catalog/lustre.py, LUSTRE_NO_SQUASH_RULE): pulumi-gcp 10.2.0 `access_rules_options`
(ROOT_SQUASH / NO_SQUASH, rule names of at most 16 alphanumerics or '_', a squash uid/gid of 0 squashing nothing);
magic-modules mmv1/products/lustre/Instance.yaml @055860ea: accessRulesOptions is updatable (no `immutable`), so
the setting changes a deployed instance in place; the NeMo-RL image runs as root (NVIDIA-NeMo/RL docker/Dockerfile
@00d2af95 "USER root") and the pods set no runAsUser, so the nodes, whose kernels are the Lustre clients, keep root.
"""

from __future__ import annotations

import re

import pytest

from core import catalog
from core.catalog import replacements

pytestmark = pytest.mark.graph

LUSTRE = "gcp:lustre/instance:Instance"


def _rules(r):
    return r.get(LUSTRE, "lustre").inputs.get("accessRulesOptions")


def test_every_stack_squashes_root_except_from_the_nodes_subnet(synth, stack):
    r = synth(stack)
    opts = _rules(r)
    assert opts["defaultSquashMode"] == "ROOT_SQUASH"
    assert opts["defaultSquashUid"] == opts["defaultSquashGid"] == catalog.LUSTRE_SQUASH_ID != 0
    (rule,) = opts["accessRules"]
    assert re.fullmatch(r"[A-Za-z0-9_]{1,16}", rule["name"]) and rule["squashMode"] == "NO_SQUASH"
    subnet = r.get("gcp:compute/subnetwork:Subnetwork", "primary").inputs["ipCidrRange"]
    # Nothing else is exempt: not the pod range, not the PSA range, not the GPU VPCs.
    assert rule["ipAddressRanges"] == [subnet]


def test_root_squash_can_be_turned_off_and_either_way_the_instance_is_updated_not_replaced(synth):
    r = synth("dev", {"lustreRootSquash": "false"})
    assert r.error is None and _rules(r) is None
    old, new = synth("dev").get(LUSTRE, "lustre"), r.get(LUSTRE, "lustre")
    assert "accessRulesOptions" not in old.replace_on_changes
    # accessRulesOptions is updatable (magic-modules Instance.yaml): no replace-only rule of the provider covers it.
    assert replacements.triggered(LUSTRE, "accessRulesOptions", old.inputs, new.inputs) is None


def test_the_exempt_range_follows_the_primary_subnet_setting(synth):
    r = synth("dev", {"primarySubnetCidr": "10.1.0.0/20"})
    assert r.error is None, r.error
    assert _rules(r)["accessRules"][0]["ipAddressRanges"] == ["10.1.0.0/20"]
