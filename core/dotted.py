"""Reading a value at a dotted path (`spec.headGroupSpec.template.spec`, list indexes as numbers): defined once
for the engine's records and the tests. (The policy pack and the stand-in trainer keep their own: the pack is
deployed alone in its own venv, the stand-in runs as a script inside a Ray job.)"""

from __future__ import annotations

from typing import Any

_ABSENT = object()


def get_path(obj: Any, path: str, default: Any = None) -> Any:
    """The value at `path` in nested dicts and lists, or `default` when any step is absent."""
    cur: Any = obj
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return default
    return cur


def has_path(obj: Any, path: str) -> bool:
    return get_path(obj, path, _ABSENT) is not _ABSENT
