"""Local sampling of the sweeps: `NEMO_RL_GKE_SAMPLE=<n>` runs n cases of each sweep instead of all of them.

The sweeps (tests/test_day2_settings.py, tests/test_bad_input_sweep.py, the all-configs NeMo-RL oracles in
tests/test_config_tree.py and tests/test_open_recipes.py) run every case in `make test` and CI, where the variable
is unset. While editing, a sample keeps their loop short: the same n cases on every run (chosen by a hash of each
case, so adding a case does not reshuffle the others), in their own order.
"""

from __future__ import annotations

import hashlib
import os
from typing import Callable, Optional, Sequence, TypeVar

T = TypeVar("T")
SAMPLE_ENV = "NEMO_RL_GKE_SAMPLE"


def sample_size() -> Optional[int]:
    """The sample size asked for, or None for every case (unset or empty)."""
    raw = os.environ.get(SAMPLE_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{SAMPLE_ENV}={raw!r}: a positive whole number of cases per sweep, or unset for all")
    return int(raw)


def sample(cases: Sequence[T], key: Callable[[T], str] = repr) -> list[T]:
    """`cases` whole, or the sample of them `NEMO_RL_GKE_SAMPLE` asks for."""
    n = sample_size()
    if n is None or n >= len(cases):
        return list(cases)
    ranked = sorted(range(len(cases)), key=lambda i: hashlib.sha256(key(cases[i]).encode()).hexdigest())
    return [cases[i] for i in sorted(ranked[:n])]


def sampled() -> bool:
    return sample_size() is not None
