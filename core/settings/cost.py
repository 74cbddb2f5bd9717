"""What a stack costs: user-supplied prices for what the catalog has no sourced price for, and a step time for an
experiment's run estimate (core/cost.py computes the estimate)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Optional

from pydantic import Field, field_validator

from core import catalog
from core.keys import key
from core.settings.base import Section

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class CostSettings(Section):
    """Prices (USD) and the step time the cost estimate uses."""

    prices: dict[str, float] = Field(
        default_factory=dict,
        alias="prices",
        description=(
            "USD prices the catalog has no sourced figure for (JSON object), e.g. {gpuNodeSpot: 50.0, lustreGibMonth: "
            "0.2}; keys: " + ", ".join(catalog.USER_PRICE_KEYS) + ". The cost estimate marks them user-supplied and "
            "prints every price it lacks as unknown."
        ),
    )
    step_seconds: Optional[float] = Field(
        None,
        alias="stepSeconds",
        description=(
            "Seconds per training step you measured or expect: with the recipe's max_num_steps the estimate gives "
            "the run's GPU-hours and cost."
        ),
    )

    @field_validator("prices", mode="before")
    @classmethod
    def _prices_from_json(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return json.loads(v)
            except json.JSONDecodeError:
                return v
        return v


def check(s: "UncheckedSettings") -> list[str]:
    p = []
    for k, v in sorted(s.cost.prices.items()):
        if k not in catalog.USER_PRICE_KEYS:
            p.append(
                f"{key(f'prices.{k}')}: is not a price the estimate uses; keys: {', '.join(catalog.USER_PRICE_KEYS)}"
            )
        elif not (v > 0 and math.isfinite(v)):
            # inf passes `> 0` and turns every total it enters into inf.
            p.append(f"{key(f'prices.{k}')}: must be a positive, finite USD amount (got {v:g})")
    if s.cost.step_seconds is not None and not (s.cost.step_seconds > 0 and math.isfinite(s.cost.step_seconds)):
        p.append(f"{key('stepSeconds')}: must be a positive, finite number of seconds (got {s.cost.step_seconds:g})")
    return p
