"""Resource options a component hands to its children.

Pulumi does not pass a component's `depends_on` on to the resources inside it (the SDK resolves it for the
component alone), so a component whose own resources call a Google API must repeat it on them. `__main__`
gives the components that create the first resource of an API `depends_on=[<API propagation wait>]`.
"""

from __future__ import annotations

from typing import Optional

import pulumi


def inherited_depends_on(opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Input[pulumi.Resource]]:
    """The component's own explicit dependencies, for its children."""
    d = opts.depends_on if opts is not None else None
    if d is None:
        return []
    if isinstance(d, pulumi.Resource):
        return [d]
    if isinstance(d, (list, tuple)):
        return list(d)
    # pulumi.Input also allows an Output or awaitable of the list, which no caller here passes.
    raise TypeError(f"depends_on must be a resource or a list of resources, got {type(d).__name__}")


def child_options(parent: pulumi.Resource, opts: Optional[pulumi.ResourceOptions], **extra) -> pulumi.ResourceOptions:
    """parent=the component, depends_on=the component's own depends_on (+ extra options)."""
    deps = inherited_depends_on(opts) + list(extra.pop("depends_on", []) or [])
    return pulumi.ResourceOptions(parent=parent, depends_on=deps or None, **extra)
