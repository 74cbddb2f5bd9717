"""What the cluster admin installs Kueue with (deploy/kueue/, docs/operations.md "The GPU queue"): the generated files
are current, the ConfigMap is a valid core object named as Kueue's release manifests name it, and the Configuration
holds what the platform's queue relies on."""

from __future__ import annotations

import pytest
import yaml

from synth import kueue_config
from tests.k8s_validation import validate_core

pytestmark = pytest.mark.unit


def test_the_files_the_admin_applies_are_current():
    assert kueue_config.CONFIG_MAP.read_text() == kueue_config.config_map_text(), "run make generated"
    assert kueue_config.CONFIGURATION.read_text() == kueue_config.configuration_text(), "run make generated"


def test_the_config_map_is_the_managers_and_holds_the_configuration_file():
    cm = yaml.safe_load(kueue_config.CONFIG_MAP.read_text())
    validate_core(cm)
    # The release manifests' names (config/components/manager/kustomization.yaml + the kueue- prefix @v0.19.2).
    assert (cm["metadata"]["namespace"], cm["metadata"]["name"]) == ("kueue-system", "kueue-manager-config")
    (key,) = cm["data"]
    assert key == "controller_manager_config.yaml"
    assert yaml.safe_load(cm["data"][key]) == yaml.safe_load(kueue_config.CONFIGURATION.read_text())


def test_the_configuration_manages_only_queued_ray_jobs_and_leaves_ephemeral_storage_out_of_quota():
    cfg = yaml.safe_load(kueue_config.CONFIGURATION.read_text())
    assert (cfg["apiVersion"], cfg["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert cfg["manageJobsWithoutQueueName"] is False
    assert cfg["integrations"]["frameworks"] == ["ray.io/rayjob", "ray.io/raycluster"]
    assert cfg["resources"]["excludeResourcePrefixes"] == ["ephemeral-storage"]
