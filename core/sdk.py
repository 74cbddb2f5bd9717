"""The Pulumi SDK internals the program cannot avoid, in one place.

The settings loader must tell config values the CLI passed from values the in-process engine set, know which
config keys the CLI marked secret (to refuse a token stored in plain text), and know whether it runs under the
engine's mock monitor (to accept the placeholder project offline only). The public `pulumi.Config` API answers
none of these. tests/test_sdk_internals.py fails loudly when an SDK upgrade moves them.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import config as _rc
from pulumi.runtime import settings as _settings
from pulumi.runtime.mocks import MockMonitor


def present_config() -> dict[str, Any]:
    """Every config value visible to the program: passed by the CLI (environment) or set in-process."""
    values = dict(_rc.get_config_env())
    values.update(_rc.CONFIG.get())
    return values


def secret_config_keys() -> set[str]:
    """Full config keys (`ns:key`) marked secret, by the CLI or in-process."""
    return set(_rc._SECRET_KEYS.get()) | set(_rc.get_config_secret_keys_env())


def running_offline() -> bool:
    """True under the in-process engine (Pulumi's mock monitor), False under the real CLI."""
    return isinstance(getattr(_settings.SETTINGS, "monitor", None), MockMonitor)
