"""CEL validation rules (`x-kubernetes-validations`) of a CRD schema, evaluated as the API server does on create.

The API server first fills in the structural schema's `default`s, then evaluates every rule at the schema node
it belongs to with `self` bound to the value there (rules of absent optional fields do not run). Rules that read
`oldSelf` are transition rules and only run on updates: skipped here. Evaluation uses cel-python, a conforming
CEL implementation; Kubernetes' CEL library functions beyond the standard (`split`, `quantity`, ...) are not
provided, so a rule that reaches one fails loudly rather than passing.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Iterator

import celpy


def apply_defaults(schema: dict, value: Any) -> Any:
    """A copy of `value` with the schema's defaults filled in (objects, arrays, maps; recursively)."""
    value = copy.deepcopy(value)
    _default(schema, value)
    return value


def _default(schema: dict, value: Any) -> None:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        for name, sub in props.items():
            if name in value:
                _default(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in props:
                    _default(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)


@functools.lru_cache(maxsize=None)
def _program(rule: str):
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _rules_at(schema: dict, value: Any, path: str) -> Iterator[tuple[str, dict, Any]]:
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name in value:
                yield from _rules_at(sub, value[name], f"{path}.{name}" if path else name)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in props:
                    yield from _rules_at(extra, item, f"{path}[{name}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _rules_at(schema["items"], item, f"{path}[{i}]")


def cel_problems(schema: dict, obj: dict) -> list[str]:
    """Every create-time CEL rule of `schema` that `obj` (defaults applied) violates, as 'path: message'."""
    obj = apply_defaults(schema, obj)
    problems = []
    for path, rule, value in _rules_at(schema, obj, ""):
        expr = rule["rule"]
        if "oldSelf" in expr:
            continue
        try:
            result = _program(expr).evaluate({"self": celpy.json_to_cel(value)})
        except Exception as e:  # a rule that cannot be evaluated must not pass silently
            problems.append(f"{path or '<root>'}: rule {expr!r} could not be evaluated: {e}")
            continue
        if isinstance(result, Exception) or not isinstance(result, celpy.celtypes.BoolType):
            problems.append(f"{path or '<root>'}: rule {expr!r} could not be evaluated: {result!r}")
        elif not result:
            problems.append(f"{path or '<root>'}: {rule.get('message') or expr}")
    return problems


def admission_refusals(policy: dict, obj: dict, namespace_object: dict) -> list[str]:
    """The messages of a ValidatingAdmissionPolicy's validations that refuse `obj` in a namespace `namespace_object`,
    as the API server evaluates them (Kubernetes "Validating Admission Policy": `object` and `namespaceObject` are
    bound, `spec.variables` are evaluated in order and each may use the ones before it as `variables.<name>`, every
    validation must be true; with failurePolicy Fail an evaluation error refuses, reported here as a refusal too)."""
    spec = policy["spec"]
    bound: dict = {
        "object": celpy.json_to_cel(obj),
        "namespaceObject": celpy.json_to_cel(namespace_object),
    }
    variables: dict = {}
    refusals = []
    for v in spec.get("variables") or []:
        bound["variables"] = celpy.celtypes.MapType(variables)
        try:
            value = _program(v["expression"]).evaluate(bound)
        except Exception as e:
            return [f"variable {v['name']}: could not be evaluated: {e}"]
        if isinstance(value, Exception):
            return [f"variable {v['name']}: could not be evaluated: {value!r}"]
        variables[celpy.celtypes.StringType(v["name"])] = value
    bound["variables"] = celpy.celtypes.MapType(variables)
    for rule in spec["validations"]:
        try:
            result = _program(rule["expression"]).evaluate(bound)
        except Exception as e:
            refusals.append(f"could not be evaluated: {e}: {rule['expression']}")
            continue
        if isinstance(result, Exception) or not isinstance(result, celpy.celtypes.BoolType):
            refusals.append(f"could not be evaluated: {result!r}: {rule['expression']}")
        elif not result:
            refusals.append(rule.get("message") or rule["expression"])
    return refusals
