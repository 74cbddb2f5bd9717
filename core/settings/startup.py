"""Time to the first training step and keeping the result: GPU warmup, weights prefetch, checkpoint export.

Research and evidence: docs/research/ttfs.md (README "Time to the first step"). Rules:
- the model revision the prefetch pins is the recipe's `model_revision` (a commit or a version tag; the
  recipe rule refuses a branch); a model the catalog does not know needs one set through jobOverrides;
- the export destination must lie inside the stack's bucket;
- the prefetch fills the Hugging Face cache on the Lustre volume: it needs the job's recipe (the model) and a
  Lustre mount path (checked by the workload rules).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from core import export
from core.keys import key
from core.settings.base import Section

if TYPE_CHECKING:
    from core.settings import Settings


class StartupSettings(Section):
    """GPU warmup, weights prefetch and checkpoint export."""

    image_path: Literal["prepull", "pull"] = Field("prepull", alias="imagePath", description=(
        "How the NeMo-RL image reaches the nodes: prepull (low-priority GPU placeholders pull it on each new GPU "
        "node while Lustre is created; a DaemonSet pulls it on the CPU pool) or pull (the Ray pods pull it "
        "when they start)."))
    warmup_hold_seconds: int = Field(7200, alias="warmupHoldSeconds", ge=600, description=(
        "prepull: how long the placeholders may hold GPU nodes waiting for the Ray workers."))
    prefetch_weights: bool = Field(True, alias="prefetchWeights", description=(
        "Download the recipe's model (pinned revision) and datasets into the HF cache on Lustre with a Job, as "
        "soon as the Lustre volume exists; the job trains from that snapshot."))
    prefetch_image: Literal["python", "nemo-rl"] = Field("python", alias="prefetchImage", description=(
        "What the prefetch Job runs in: python (a pinned slim Python image that installs the hash-pinned "
        "huggingface_hub from PyPI, so the download starts without waiting for the 20-30 GB NeMo-RL image; "
        "needs egress to pypi.org and files.pythonhosted.org) or nemo-rl (the NeMo-RL image, no PyPI access)."))
    export_checkpoints: bool = Field(True, alias="exportCheckpoints", description=(
        "After training succeeded, copy the final checkpoint (and the best, with a metric) to the bucket."))
    export_destination: str = Field("", alias="exportDestination", description=(
        "Where exports go: gs://<stack bucket>/<prefix> or a prefix; default: exports."))


def check(s: "Settings") -> list[str]:
    p: list[str] = []
    st = s.startup
    if st.export_checkpoints:
        _, problem = export.parse_destination(st.export_destination, s.bucket_name)
        if problem:
            p.append(f"{key('exportDestination')}: {problem}")
    if st.prefetch_weights and s.recipe is not None and s.recipe.model_revision is None:
        p.append(f"{key('prefetchWeights')}: model {s.recipe.model_name!r} has no pinned revision; set "
                 f"{key('jobOverrides')}.model_revision to a commit id or a version tag, or set prefetchWeights "
                 "to false")
    return p
