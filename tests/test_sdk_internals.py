"""The private Pulumi SDK internals core/sdk.py relies on still exist and behave as it assumes.

An SDK upgrade that renames or reshapes them must fail here, loudly, rather than silently turning the
plain-text-secret refusal (tests/test_settings.py exercises it end to end) or the offline placeholder check off.
"""

from __future__ import annotations

import pytest
from pulumi.runtime import config as rc
from pulumi.runtime import settings as ps
from pulumi.runtime.mocks import MockMonitor

from core import sdk

pytestmark = pytest.mark.unit


def test_the_config_internals_the_settings_loader_reads_still_exist():
    assert callable(rc.get_config_env) and callable(rc.get_config_secret_keys_env)
    assert hasattr(rc.CONFIG, "get") and hasattr(rc._SECRET_KEYS, "get")
    assert hasattr(ps, "SETTINGS") and isinstance(MockMonitor, type)


def test_outside_a_program_nothing_counts_as_offline_or_configured():
    assert sdk.running_offline() is False
    assert all(k.startswith(("nemo-rl-gke:", "gcp:")) for k in sdk.present_config()) or sdk.present_config() == {}
