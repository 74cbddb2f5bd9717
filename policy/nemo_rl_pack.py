"""pulumi-policy adapters: turn each rule of `nemo_rl_policies` into a Resource/StackValidationPolicy.

pulumi-policy 1.21 hands a callback `args.resource_type`, `args.props` (inputs; for stack policies the
outputs), `args.opts` (protect, parent, ...; no retainOnDelete), `args.provider` (type, urn, name) and, for
stacks, `args.resources` with `property_dependencies` as resource objects. Props are proxies that raise
`UnknownValueError` on any unknown value; the adapters read the raw values underneath instead, so one
unknown field does not silence a whole rule (the rules skip the unknown sentinels themselves).
"""

from __future__ import annotations

from typing import Any, Mapping

import nemo_rl_policies as rules
from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import _DictProxy, _ListProxy
from pulumi_policy.secret import Secret, _DictSecretsProxy, _ListSecretsProxy

PACK_NAME = "nemo-rl-gke"
_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}
_PROXIES = (_DictProxy, _ListProxy, _DictSecretsProxy, _ListSecretsProxy)


def plain(value: Any) -> Any:
    """Deep copy of pulumi-policy props as dicts and lists, unknowns kept as their sentinel strings."""
    if isinstance(value, _PROXIES):
        value = value["__target"]  # the raw container; reading through the proxy would raise on unknowns
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _resource(
    type_: str,
    name: str,
    urn: str,
    props: Any,
    opts: Any,
    provider: Any,
    property_dependencies: Mapping[str, list] | None = None,
) -> rules.Resource:
    return rules.Resource(
        type=type_,
        name=name,
        props=plain(props),
        urn=urn,
        stack=rules.stack_of_urn(urn),
        protect=bool(getattr(opts, "protect", False)),
        retain_on_delete=None,
        custom=None,
        provider_urn=provider.urn if provider is not None and provider.urn else None,
        property_dependencies={k: [d.urn for d in v] for k, v in (property_dependencies or {}).items()},
    )


def _resource_policy(rule: rules.Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation) -> None:
        r = _resource(args.resource_type, args.name, args.urn, args.props, args.opts, args.provider)
        for message in rule.check(r):
            report_violation(message, None)

    return ResourceValidationPolicy(
        name=rule.name, description=rule.description, validate=validate, enforcement_level=_LEVELS[rule.enforcement]
    )


def _stack_policy(rule: rules.Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation) -> None:
        resources = [
            _resource(r.resource_type, r.name, r.urn, r.props, r.opts, r.provider, r.property_dependencies)
            for r in args.resources
        ]
        for urn, message in rule.check(resources):
            report_violation(message, urn or None)

    return StackValidationPolicy(
        name=rule.name, description=rule.description, validate=validate, enforcement_level=_LEVELS[rule.enforcement]
    )


def policies() -> list:
    """One pulumi-policy policy per rule, with the rule's enforcement level."""
    return [_stack_policy(r) if r.scope == "stack" else _resource_policy(r) for r in rules.RULES]
