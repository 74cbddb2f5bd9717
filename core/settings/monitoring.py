"""Dashboard and the checkpoint I/O budget; the budget rule (will checkpoints stall the GPUs?)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from core import catalog, sizing
from core.settings.base import Section
from core.settings.lustre import valid as lustre_valid
from core.settings.record import BOTH, IN_PLACE, PLATFORM, DayTwo, setting

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class MonitoringSettings(Section):
    """Dashboard and the checkpoint I/O budget."""

    dashboard: bool = setting(
        True,
        key="dashboard",
        description="Create the stack's Cloud Monitoring dashboard.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Dashboard dashboard",)),
        bad=("maybe",),
        alternatives=({"dashboard": False},),
    )
    checkpoint_budget_seconds: int = setting(
        300,
        key="checkpointBudgetSeconds",
        description=(
            "Longest acceptable checkpoint write (s) at the Lustre instance's aggregate throughput; preview fails "
            "with the smallest capacity or tier that meets it. 0: no budget."
        ),
        ge=0,
        owner=BOTH,
        rule="core.sizing",
        day_two=DayTwo(IN_PLACE, touches=()),
        bad=(-1, 1),
        alternatives=({"checkpointBudgetSeconds": 600},),
    )

    @property
    def budget(self) -> Optional[float]:
        return float(self.checkpoint_budget_seconds) if self.checkpoint_budget_seconds > 0 else None


def checkpoint_inputs(s: "UncheckedSettings") -> Optional[sizing.CheckpointInputs]:
    """What sizing the stack's checkpoints reads (None without a recipe)."""
    if s.recipe is None:
        return None
    return sizing.CheckpointInputs(
        s.recipe.model_name,
        params=s.recipe.model_params,
        save_optimizer=s.recipe.save_optimizer,
        capacity_gib=s.lustre.capacity_gib,
        tier=s.lustre.tier,
        keep_top_k=s.recipe.keep_top_k,
        budget_seconds=s.monitoring.budget,
    )


def check(s: "UncheckedSettings") -> list[str]:
    # Checked here so preview fails before anything is registered.
    inputs = checkpoint_inputs(s)
    if inputs is None or not s.job.enabled or not lustre_valid(s):
        return []
    return sizing.check_budget(inputs)


def checkpoint_sizing(s: "UncheckedSettings") -> Optional[sizing.CheckpointSizing]:
    """The sizing report of the stack's job (None without a job, or for a model whose size is not known)."""
    inputs = checkpoint_inputs(s)
    if inputs is None or not s.job.enabled:
        return None
    if inputs.model_name not in catalog.MODEL_PARAMS and inputs.params is None:
        return None
    return sizing.size_checkpoints(inputs)
