"""NeMo-RL GRPO job recipes (placeholder interface; the job issue fills it in)."""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class JobSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    enabled: bool = Field(True, alias="jobEnabled", description="Submit the NeMo-RL job (false: cluster only).")
    recipe: Optional[str] = Field(None, alias="jobRecipe", description="Built-in recipe name.")
    overrides: dict[str, Any] = Field(default_factory=dict, alias="jobOverrides",
                                      description="Recipe fields to override (JSON object).")
    mode: Literal["standing-cluster", "own-cluster"] = Field("standing-cluster", alias="jobMode",
                                                             description="Where the RayJob runs.")
    backoff_limit: int = Field(3, alias="jobBackoffLimit", ge=0, description="own-cluster mode: retries.")
    ttl_seconds: int = Field(3600, alias="jobTtlSeconds", ge=0, description="own-cluster mode: TTL after finish.")
    run_name: Optional[str] = Field(None, alias="runName", description="Run name (checkpoint directory).")


def check_job(job: JobSettings, *, release, worker_replicas: int, gpus_per_node: int, stack_name: str) -> list[str]:
    return []
