"""What every settings section shares: the frozen pydantic base, the error that lists every problem, and
the CIDR parser the network rules use."""
from __future__ import annotations

import ipaddress
from typing import Optional

from pydantic import BaseModel, ConfigDict

from core.keys import key


class SettingsError(Exception):
    """Invalid settings: one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))

    def __str__(self) -> str:
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the stack settings (nothing was created):"
        return "\n".join([head] + [f"  - {p}" for p in self.problems])


class Section(BaseModel):
    """A group of config keys; each field's alias is its config key."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def parse_cidr(k: str, value: str, problems: list[str]) -> Optional[ipaddress.IPv4Network]:
    """The IPv4 network `value` of config key `k`, or None after recording why it is not one."""
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        problems.append(f"{key(k)}: {value!r} is not a valid CIDR ({e}); e.g. 10.0.0.0/20")
        return None
    if net.version != 4:
        problems.append(f"{key(k)}: {value!r} must be an IPv4 range")
        return None
    return net
