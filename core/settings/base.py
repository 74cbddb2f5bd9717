"""What every settings section shares: the frozen pydantic base and the error that lists every problem."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
