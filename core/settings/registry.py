"""Every section of the settings and every config key with its field: what `load_settings()`, the platform contract,
Pulumi.yaml, docs/settings.md and the sweeps read.

A module of its own so that `core.settings` (which loads settings) and `core.settings.platform` (which splits them
between a platform and its experiments) both read it without importing each other.
"""

from __future__ import annotations

import json
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
from core.settings.security import SecuritySettings
from core.settings.stack import StackSettings, TeardownSettings
from core.settings.startup import StartupSettings
from core.settings.storage import StorageSettings
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
    "lustre": LustreSettings,
    "storage": StorageSettings,
    "workload": WorkloadSettings,
    "job": JobSettings,
    "monitoring": MonitoringSettings,
    "gate": GateSettings,
    "security": SecuritySettings,
    "startup": StartupSettings,
    "cost": CostSettings,
}


def config_fields() -> dict[str, tuple[str, str, FieldInfo]]:
    """config key -> (section, field name, pydantic FieldInfo)."""
    out: dict[str, tuple[str, str, FieldInfo]] = {}
    for section, model in SECTIONS.items():
        for fname, info in model.model_fields.items():
            if info.alias is None:
                raise TypeError(f"{model.__name__}.{fname} has no config key (Field alias)")
            out[info.alias] = (section, fname, info)
    return out


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
