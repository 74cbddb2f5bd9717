"""Every section of the settings and every config key with its field: what `load_settings()`, the platform contract,
Pulumi.yaml, docs/settings.md and the sweeps read.

A module of its own so that `core.settings` (which loads settings) and `core.settings.platform` (which splits them
between a platform and its experiments) both read it without importing each other.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from pydantic.fields import FieldInfo

from core.settings.base import Section
from core.settings.capacity import CapacitySettings
from core.settings.cluster import ClusterSettings
from core.settings.cost import CostSettings
from core.settings.gate import GateSettings
from core.settings.gpu import GpuSettings
from core.settings.job import JobSettings
from core.settings.lustre import LustreSettings
from core.settings.monitoring import MonitoringSettings
from core.settings.network import NetworkSettings
from core.settings.queue import QueueSettings
from core.settings.record import BOTH, EXPERIMENT, SettingRecord, record_of
from core.settings.security import SecuritySettings
from core.settings.stack import StackSettings, TeardownSettings
from core.settings.startup import StartupSettings
from core.settings.storage import StorageSettings
from core.settings.tenancy import TenancySettings
from core.settings.workload import WorkloadSettings

# Secret config keys: read with get_secret/require_secret only, never part of the model.
SECRET_KEYS = {
    "hfToken": "Hugging Face token",
    "wandbApiKey": "Weights & Biases API key",
    "rayAuthToken": "Ray auth token (releases whose Ray has token authentication)",
}

# Section name (the Settings attribute) -> model. A new concern adds its module and one line here.
SECTIONS: dict[str, type[Section]] = {
    "stack": StackSettings,
    "teardown": TeardownSettings,
    "network": NetworkSettings,
    "cluster": ClusterSettings,
    "gpu": GpuSettings,
    "capacity": CapacitySettings,
    "queue": QueueSettings,
    "lustre": LustreSettings,
    "storage": StorageSettings,
    "workload": WorkloadSettings,
    "job": JobSettings,
    "monitoring": MonitoringSettings,
    "gate": GateSettings,
    "security": SecuritySettings,
    "startup": StartupSettings,
    "cost": CostSettings,
    "tenancy": TenancySettings,
}


@dataclass(frozen=True)
class Declared:
    """One setting as declared: its record (core.settings.record) and the pydantic field it sits on."""

    section: str  # the Settings attribute
    field_name: str
    info: FieldInfo
    record: SettingRecord

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def annotation(self) -> Any:
        return self.info.annotation

    @property
    def default(self) -> Any:
        return self.info.get_default(call_default_factory=True)

    @property
    def constraints(self) -> list[str]:
        """The field's bounds as the docs print them (`>= 1`)."""
        out = []
        for m in self.info.metadata:
            for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                if getattr(m, attr, None) is not None:
                    out.append(f"{sign} {getattr(m, attr)}")
        return out

    @property
    def module(self) -> str:
        """The section's module: the field and, unless the record names another, the rule."""
        return SECTIONS[self.section].__module__

    @property
    def rule_module(self) -> str:
        return self.record.rule or self.module


@functools.cache
def declared() -> dict[str, Declared]:
    """config key -> its declaration, in section order. A field without a record is a programming error."""
    out: dict[str, Declared] = {}
    for section, model in SECTIONS.items():
        for fname, info in model.model_fields.items():
            record = record_of(info)
            if record is None or info.alias != record.key:
                raise TypeError(f"{model.__name__}.{fname} is not declared with core.settings.record.setting()")
            if record.key in out:
                raise TypeError(f"{model.__name__}.{fname}: config key {record.key!r} is declared twice")
            out[record.key] = Declared(section, fname, info, record)
    return out


def config_fields() -> dict[str, tuple[str, str, FieldInfo]]:
    """config key -> (section, field name, pydantic FieldInfo)."""
    return {k: (d.section, d.field_name, d.info) for k, d in declared().items()}


def _keys_of_modes(modes: frozenset[str]) -> frozenset[str]:
    return frozenset(k for k, d in declared().items() if d.record.modes == modes)


# Keys that only one cluster mode supports (their records' `modes`): set for the other mode, they are refused.
STANDARD_ONLY = _keys_of_modes(frozenset({"standard"}))
AUTOPILOT_ONLY = _keys_of_modes(frozenset({"autopilot"}))
# The keys an experiment stack sets itself (owner experiment or both); every other key is its platform's.
EXPERIMENT_KEYS = frozenset(k for k, d in declared().items() if d.record.owner in (EXPERIMENT, BOTH))


def decode_config_value(raw: Any, info: FieldInfo) -> Any:
    """Config values arrive as strings; lists and objects are JSON; "" means unset for optional settings.
    Scalars are left to pydantic's lax coercion."""
    if raw == "" and not info.is_required() and info.get_default(call_default_factory=True) is None:
        return None
    origin = getattr(info.annotation, "__origin__", None)
    if isinstance(raw, str) and (origin in (list, dict) or info.annotation is dict):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw
