"""The readiness gate before training (GPU health, NCCL over RDMA, Lustre throughput) and its rules.

The gate is the first step of the job's entrypoint (core/gate.py renders its command line); it only runs when
the job does. Thresholds default to the catalog's figures for the GPU type; a threshold must be positive and
below what the GPU type can physically move (catalog.GateGpuFacts.implausible_busbw_gbps explains the bound),
and the Lustre fraction lies in (0, 1].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional

from core import catalog, shell
from core.keys import key
from core.settings.base import Section
from core.settings.record import BOTH, STOPS_THE_JOB, DayTwo, setting

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class GateSettings(Section):
    """The readiness gate that runs on the training nodes before NeMo-RL starts."""

    mode: Literal["on", "full", "advisory", "off"] = setting(
        "on",
        key="readinessGate",
        description=(
            "on: a failed check fails the RayJob before training, and nodes that passed the full gate within a "
            "day (same boot, driver and gIB plugin) skip its Lustre and NCCL sweeps (the GPU health check always "
            "runs); full: the same, with the full gate on every node at every submission; advisory: failures are "
            "logged and training starts; off: no gate."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",)),
        bad=("x",),
        alternatives=({"readinessGate": "off"},),
    )
    min_allreduce_busbw: Optional[float] = setting(
        None,
        key="gateMinAllReduceBusbw",
        description=(
            "All-reduce bus bandwidth (GB/s) required at the largest message (8 GiB); default: the catalog's "
            "figure for the GPU type."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",), note="a new gate threshold is a new RayJob"),
        bad=(-1, 1000000000.0),
        alternatives=({"gateMinAllReduceBusbw": 100},),
    )
    min_allgather_busbw: Optional[float] = setting(
        None,
        key="gateMinAllGatherBusbw",
        description=(
            "All-gather bus bandwidth (GB/s) required as the average over the 1 KiB-8 GiB sweep; default: "
            "Cluster Toolkit's 100 GB/s."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",), note="a new gate threshold is a new RayJob"),
        bad=(0, 1000000000.0),
        alternatives=({"gateMinAllGatherBusbw": 90},),
    )
    min_lustre_fraction: Optional[float] = setting(
        None,
        key="gateLustreFraction",
        description=(
            "Required share of min(Lustre aggregate throughput, nodes x primary NIC) for the write and the "
            "read, in (0, 1]; default 0.5."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",), note="a new gate threshold is a new RayJob"),
        bad=(2, 0),
        alternatives=({"gateLustreFraction": 0.4},),
    )
    rerun: Optional[str] = setting(
        None,
        key="gateRerun",
        description=(
            "Any new value resubmits the job and discards every node's recorded pass, so the full gate runs again "
            "on every node (e.g. after a bad node was replaced)."
        ),
        owner=BOTH,
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayJob rayjob",), note="a new RayJob, which runs the gate again"),
        bad=("$x",),
        alternatives=({"gateRerun": "again-1"},),
    )

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def pass_window_seconds(self) -> float:
        """How long a node's full pass lets later gates skip its sweeps (core.catalog GATE_NODE_PASS_WINDOW_SECONDS);
        0 in `full` mode."""
        return 0 if self.mode == "full" else catalog.GATE_NODE_PASS_WINDOW_SECONDS

    @property
    def lustre_fraction(self) -> float:
        return catalog.GATE_LUSTRE_FRACTION if self.min_lustre_fraction is None else self.min_lustre_fraction

    @property
    def allreduce_busbw(self) -> float:
        return catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS if self.min_allreduce_busbw is None else self.min_allreduce_busbw

    @property
    def allgather_busbw(self) -> float:
        return (
            catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS
            if self.min_allgather_busbw is None
            else self.min_allgather_busbw
        )


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    g = s.gate
    facts = catalog.GATE_GPU_FACTS.get(s.gpu.gpu_type)  # an unknown GPU type is reported by the gpu rules
    for k, value in (
        ("gateMinAllReduceBusbw", g.min_allreduce_busbw),
        ("gateMinAllGatherBusbw", g.min_allgather_busbw),
    ):
        if value is None:
            continue
        if not value > 0:
            p.append(f"{key(k)}: must be a positive bus bandwidth in GB/s (got {value:g})")
        elif facts is not None and value > facts.implausible_busbw_gbps:
            p.append(
                f"{key(k)}: {value:g} GB/s is more than an {facts.gpu_type} GPU can move "
                f"({facts.implausible_busbw_gbps:g} GB/s = NVLink {facts.nvlink_bidirectional_gbps:g} + PCIe "
                f"{facts.pcie_bidirectional_gbps:g} GB/s, both directions); no run could pass it"
            )
    if g.rerun and shell.unsafe_characters(g.rerun):
        # The token travels in the runtime env and the job metadata, which KubeRay pastes into its submitter's
        # bash command inside strconv.Quote'd double quotes, where `$` and backticks still expand (core/shell.py).
        p.append(
            f"{key('gateRerun')}: {g.rerun!r} must not contain $ ` \\ \" or ', which KubeRay's submitter "
            "shell would change"
        )
    if not 0 < g.lustre_fraction <= 1:
        p.append(
            f"{key('gateLustreFraction')}: must be in (0, 1], a share of the Lustre ceiling (got {g.lustre_fraction:g})"
        )
    return p
