"""GPU nodes: type, capacity model, pool size, and their rules."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal, Optional

from pydantic import Field

from core import catalog
from core.gcp_rules import reservation_problems
from core.keys import key
from core.settings.base import Section

if TYPE_CHECKING:
    from core.settings import Settings


class GpuSettings(Section):
    """GPU nodes: type, capacity model, pool size."""

    standard_only: ClassVar[frozenset[str]] = frozenset(
        {"reservation", "gpuNodes", "gpuMinNodes", "gpuMaxNodes", "gpuDriverVersion"})

    gpu_type: str = Field("nvidia-b200", alias="gpuType",
                          description="GPU type: nvidia-b200 (A4) or nvidia-h200-141gb (A3 Ultra).")
    machine_type: Optional[str] = Field(None, alias="machineType",
                                        description="Machine type; default and only valid value: the GPU type's.")
    spot: bool = Field(True, alias="spot", description="Use Spot VMs for GPU nodes.")
    reservation: Optional[str] = Field(None, alias="reservation", description=(
        "Standard only: consume this specific reservation (excludes spot)."))
    nodes: int = Field(2, alias="gpuNodes", description="Standard only: initial GPU node count.")
    min_nodes: int = Field(0, alias="gpuMinNodes", description="Standard only: autoscaling minimum of the GPU pool.")
    max_nodes: Optional[int] = Field(None, alias="gpuMaxNodes", description=(
        "Standard only: autoscaling maximum of the GPU pool; default: gpuNodes."))
    driver_version: Literal["LATEST", "DEFAULT"] = Field("LATEST", alias="gpuDriverVersion", description=(
        "Standard only: GPU driver GKE installs (LATEST or DEFAULT)."))

    @property
    def accelerator(self) -> catalog.Accelerator:
        return catalog.accelerator(self.gpu_type)

    @property
    def max_nodes_effective(self) -> int:
        return self.max_nodes if self.max_nodes is not None else self.nodes


def check(s: "Settings") -> list[str]:
    p: list[str] = []
    g = s.gpu
    acc = catalog.ACCELERATORS.get(g.gpu_type)
    if acc is None:
        p.append(f"{key('gpuType')}: unknown GPU type {g.gpu_type!r}; valid: {', '.join(sorted(catalog.ACCELERATORS))}")
    elif g.machine_type is not None and g.machine_type != acc.machine_type:
        p.append(f"{key('machineType')}: {g.machine_type!r} does not carry {acc.gpu_type}; use "
                 f"{acc.machine_type} (or unset it)")
    if g.reservation:
        # A Compute Engine reservation name, or a block of it, or a shared one (core/gcp_rules.py).
        p.extend(reservation_problems(g.reservation))
    if g.spot and g.reservation:
        p.append(f"{key('reservation')}: a specific reservation cannot be combined with spot VMs; set "
                 f"{key('spot')} to false or unset {key('reservation')}")
    for k, val in (("gpuNodes", g.nodes), ("gpuMinNodes", g.min_nodes), ("gpuMaxNodes", g.max_nodes)):
        if val is not None and val < 0:
            p.append(f"{key(k)}: must be >= 0 (got {val})")
    if g.min_nodes > g.max_nodes_effective:
        p.append(f"{key('gpuMinNodes')}: {g.min_nodes} is above the maximum {g.max_nodes_effective} "
                 f"({key('gpuMaxNodes')})")
    if g.max_nodes is not None and g.nodes > g.max_nodes:
        p.append(f"{key('gpuNodes')}: {g.nodes} is above {key('gpuMaxNodes')} ({g.max_nodes})")
    if g.nodes < g.min_nodes:
        p.append(f"{key('gpuNodes')}: {g.nodes} is below {key('gpuMinNodes')} ({g.min_nodes})")
    return p
