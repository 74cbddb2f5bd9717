"""What a stack costs: user-supplied prices (they win over the Cloud Billing Catalog's and the dated catalog's), and a
step time for a run's estimate (core/cost.py computes the estimate)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Optional

from pydantic import field_validator

from core import catalog
from core.keys import key
from core.settings.base import Section
from core.settings.record import BOTH, IN_PLACE, DayTwo, setting

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class CostSettings(Section):
    """Prices (USD) and the step time the cost estimate uses."""

    prices: dict[str, float] = setting(
        default_factory=dict,
        key="prices",
        description=(
            "USD prices (JSON object), e.g. {gpuNodeSpot: 50.0, lustreGibMonth: 0.2}; keys: "
            + ", ".join(catalog.USER_PRICE_KEYS)
            + ". They win over the prices read from Google's Cloud Billing Catalog at preview and over the dated "
            "catalog; the cost estimate marks them user-supplied and prints every price it still lacks as unknown."
        ),
        owner=BOTH,
        day_two=DayTwo(IN_PLACE, touches=(), note="the cost estimate only"),
        bad=('{"gpuNode": 1}', '{"gpuNodeSpot": -1}', '{"cpuNode": Infinity}'),
        alternatives=({"prices": {"cpuNode": 1.0}},),
    )
    step_seconds: Optional[float] = setting(
        None,
        key="stepSeconds",
        description=(
            "Seconds per training step you measured or expect: with the recipe's max_num_steps the estimate gives "
            "the run's GPU-hours and cost."
        ),
        owner=BOTH,
        day_two=DayTwo(IN_PLACE, touches=(), note="the cost estimate only"),
        bad=("0", "fast", "inf"),
        alternatives=({"stepSeconds": "60"},),
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
