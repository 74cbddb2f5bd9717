"""Time to the first training step and keeping the result: image path, weights prefetch, checkpoint export.

Research and evidence: docs/research/ttfs.md (docs/performance.md "Time to the first training step"). Rules:
- the model revision the prefetch pins is the recipe's `model_revision` (a commit; the recipe rules refuse
  anything else, and a model the catalog does not know without one);
- the export destination must lie inside the stack's bucket;
- image streaming needs the image in an Artifact Registry repository of the stack's project and region
  (`imageRepository`, only with `imagePath: streaming`); its GKE floor is checked with the cluster's;
- the prefetch fills the Hugging Face cache on the Lustre volume: it needs the job's recipe (the model) and a
  Lustre mount path (checked by the workload rules).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from core import catalog, export
from core.keys import key
from core.naming import is_gcp_name
from core.settings.base import Section
from core.settings.record import (
    BOTH,
    IN_PLACE,
    MEGATRON_RECIPE,
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_API,
    REFUSED_BY_PROGRAM,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)
from core.weights import STAGING_TOUCHES

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class StartupSettings(Section):
    """Image path (warmup, streaming), weights prefetch and checkpoint export."""

    image_path: Literal["prepull", "streaming", "pull"] = setting(
        "prepull",
        key="imagePath",
        description=(
            "How the NeMo-RL image reaches the nodes: prepull (low-priority GPU placeholders pull it on each new GPU "
            "node while Lustre is created; a DaemonSet pulls it on the CPU pool), streaming (the same, and the nodes "
            "stream the image from your Artifact Registry copy in imageRepository: GKE Image streaming) or pull "
            "(the Ray pods pull it when they start)."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=("DaemonSet cpu-prepull", "Job placeholders", "PriorityClass *", "NodePool *", "RayCluster *"),
        ),
        bad=("x",),
        alternatives=({"imagePath": "pull"},),
    )
    image_repository: str = setting(
        "",
        key="imageRepository",
        description=(
            "imagePath streaming: the Artifact Registry Docker repository holding a copy of the NeMo-RL image as "
            "<repository>/nemo-rl:<release>, e.g. us-central1-docker.pkg.dev/<gcpProject>/<repo>; in the stack's "
            "project and region."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "NodePool *",
                "RayCluster raycluster",
                "RayJob rayjob",
                "IAMMember *",
                "RepositoryIamMember *",
                "Service *",
                "Sleep *",
            ),
        ),
        bad=("us-central1-docker.pkg.dev/p/r",),
        alternatives=({"imagePath": "streaming", "imageRepository": "us-docker.pkg.dev/your-gcp-project-id/nemo"},),
    )
    warmup_hold_seconds: int = setting(
        1800,
        key="warmupHoldSeconds",
        description=(
            "prepull and streaming: how long the placeholders may hold GPU nodes waiting for the Ray workers "
            "(default 30 minutes); the Job's activeDeadlineSeconds enforces it in the cluster, also after a failed "
            "pulumi up. They never hold more nodes than the job's workers, and none without a job."
        ),
        ge=600,
        # The placeholders' activeDeadlineSeconds is int64, carried as a double (core/catalog/gke.py).
        le=catalog.PULUMI_EXACT_INT_MAX,
        owner=PLATFORM,
        day_two=DayTwo(SAFE_REPLACEMENT, where={ON_EXPERIMENT: IN_PLACE}, touches=("Job placeholders",)),
        bad=(
            10,
            # int64 carried as a double: exact up to 2**53 - 1 (core.catalog.PULUMI_EXACT_INT_MAX).
            2**53,
        ),
        alternatives=({"warmupHoldSeconds": 3600},),
    )
    prefetch_weights: bool = setting(
        True,
        key="prefetchWeights",
        description=(
            "Download the recipe's model (pinned revision) and datasets into the HF cache on Lustre with a Job, as "
            "soon as the Lustre volume exists; the job trains from that snapshot."
        ),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_EXPERIMENT: REFUSED_BY_PROGRAM},
            touches=("Job *", "FQDNNetworkPolicy *", "RayCluster raycluster", "RayJob rayjob", *STAGING_TOUCHES),
            note=(
                "off on an experiment: its GPU workers would download from Hugging Face, which its platform (the "
                "shipped codelab) does not let them reach"
            ),
        ),
        bad=("maybe",),
        alternatives=({"prefetchWeights": False},),
    )
    prefetch_image: Literal["python", "nemo-rl"] = setting(
        "python",
        key="prefetchImage",
        description=(
            "What the prefetch Job runs in: python (a pinned slim Python image that installs the hash-pinned "
            "huggingface_hub from PyPI, so the download starts without waiting for the 20-30 GB NeMo-RL image; "
            "needs egress to pypi.org and files.pythonhosted.org) or nemo-rl (the NeMo-RL image, no PyPI access)."
        ),
        owner=BOTH,
        day_two=DayTwo(SAFE_REPLACEMENT, touches=("Job prefetch", "FQDNNetworkPolicy *")),
        bad=("x",),
        alternatives=({"prefetchImage": "nemo-rl"},),
    )
    weights_path: Literal["lustre-download", "bucket-import"] = setting(
        "lustre-download",
        key="weightsPath",
        description=(
            "How the job's weights reach Lustre: lustre-download (the prefetch Job downloads them into the HF cache "
            "on Lustre once the volume exists) or bucket-import (a CPU Job stages them in the bucket as soon as the "
            "cluster exists, while Lustre is created, and Managed Lustre's importData brings them in; the deployer "
            "creates a custom IAM role for it). Only with prefetchWeights; experiment stacks always download: their "
            "platform's Lustre exists."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            SAFE_REPLACEMENT,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=("Job prefetch", *STAGING_TOUCHES, "NodePool cpu"),  # the CPU pool counts the staging Jobs
            note=(
                "the staging and import Jobs, their identities and grants, and the prefetch Job's arguments; the "
                "RayJob and its model path stay (the staged copy is deleted with its folder when turned off)"
            ),
        ),
        bad=("x",),
        alternatives=({"weightsPath": "bucket-import"}, {"weightsPath": "lustre-download"}),
    )
    export_checkpoints: bool = setting(
        True,
        key="exportCheckpoints",
        description=(
            "After training succeeded, copy the final checkpoint (and the best, with a metric) to the bucket."
        ),
        owner=BOTH,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: IN_PLACE},
            touches=(
                "BucketIAMMember *",
                "Folder *",
                "ManagedFolder*",
                "ServiceAccount export-ksa",
                "NetworkPolicy *",
                "FQDNNetworkPolicy *",
                "Job export",
            ),
            note=(
                "off: the export Job, its identity and grants go, and the folders' delete is refused while they hold "
                "exports; an experiment only drops its export Job"
            ),
        ),
        bad=("maybe",),
        alternatives=({"exportCheckpoints": False},),
    )
    export_optimizer: bool = setting(
        False,
        key="exportOptimizer",
        description=(
            "Copy the optimizer state too (needed only to resume training from the bucket). Default: weights, "
            "tokenizer and training state only, leaving out policy/optimizer of DTensor checkpoints; a Megatron "
            "checkpoint embeds the optimizer in its iter_* shards and is copied whole (preview warns)."
        ),
        owner=BOTH,
        day_two=DayTwo(
            SAFE_REPLACEMENT,
            where={MEGATRON_RECIPE: IN_PLACE},
            touches=("Job export",),
            note="the export Job's arguments",
        ),
        bad=("maybe",),
        alternatives=({"exportOptimizer": True},),
    )
    export_destination: str = setting(
        "",
        key="exportDestination",
        description="Where exports go: gs://<stack bucket>/<prefix> or a prefix; default: exports.",
        owner=BOTH,
        day_two=DayTwo(
            SAFE_REPLACEMENT,
            touches=("Folder *", "ManagedFolder*", "Job export"),
            note=(
                "to a folder under the old one's parent (exports -> exports/other): a new managed folder and grant, "
                "and the export Job; a destination that replaces a folder holding exports is refused by the API"
            ),
        ),
        bad=("gs://other-bucket/x",),
        alternatives=({"exportDestination": "exports/other"},),
    )
    export_soft_delete_days: int = setting(
        30,
        key="exportSoftDeleteDays",
        description=(
            "Days a deleted or overwritten object of the bucket stays restorable (Cloud Storage soft delete; 7 to "
            "90, or 0 for none; Cloud Storage's own default is 7). Soft-deleted bytes are billed."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Bucket bucket",)),
        bad=(-1, 3, 91),
        alternatives=({"exportSoftDeleteDays": 7},),
    )

    @property
    def warmup(self) -> bool:
        """Placeholders and the CPU pre-pull bring nodes and the image up early (prepull, and streaming)."""
        return self.image_path != "pull"


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    st = s.startup
    p.extend(_streaming_problems(s))
    p.extend(_weights_path_problems(s))
    if st.export_checkpoints:
        _, problem = export.parse_destination(st.export_destination, s.bucket_name)
        if problem:
            p.append(f"{key('exportDestination')}: {problem}")
    days = st.export_soft_delete_days
    if days != 0 and not catalog.SOFT_DELETE_MIN_DAYS <= days <= catalog.SOFT_DELETE_MAX_DAYS:
        p.append(
            f"{key('exportSoftDeleteDays')}: {days} is not 0 or {catalog.SOFT_DELETE_MIN_DAYS}.."
            f"{catalog.SOFT_DELETE_MAX_DAYS} (the range Cloud Storage soft delete accepts)"
        )
    return p


def export_warnings(s: "UncheckedSettings") -> list[str]:
    """The optimizer state a Megatron export cannot leave out (core/export.py OPTIMIZER_GLOB has the sources)."""
    st = s.startup
    if not (s.job.enabled and st.export_checkpoints) or st.export_optimizer or s.recipe is None:
        return []
    if s.recipe.train_backend != "megatron":
        return []
    return [
        f"{key('exportOptimizer')}: recipe {s.recipe.name!r} trains with Megatron, whose checkpoints embed the "
        "optimizer state in the weights' iter_* shards: the export copies it all the same (a weights-only export "
        "needs a Megatron-to-HF conversion, which this stack does not run); set exportOptimizer to true to say so"
    ]


def _weights_path_problems(s: "UncheckedSettings") -> list[str]:
    """bucket-import runs as a Google service account of the stack's own (core.naming Names.weights_import_account: an
    id of 6 to 30 characters, like the nodes' account). It stages what the prefetch downloads: with prefetchWeights
    false, or without a job, nothing is staged (core/weights.py staged()), so turning the prefetch off never needs a
    second key changed."""
    st = s.startup
    if st.weights_path != "bucket-import" or s.stack.platform_stack:
        return []  # an experiment stack reads its platform's value and downloads onto the existing Lustre
    account = s.names.weights_import_account
    if s.stack.prefix is None or is_gcp_name(s.stack.prefix, 30):  # a refused prefix is reported once, by its rule
        if not is_gcp_name(account, 30):
            return [
                f"{key('weightsPath')}: bucket-import's service account id {account!r} is longer than 30 characters; "
                f"choose a prefix of at most 22 (now {s.prefix!r}) or set weightsPath to lustre-download"
            ]
    return []


def _streaming_problems(s: "UncheckedSettings") -> list[str]:
    """GKE streams only from Artifact Registry (core.catalog, image streaming): the copy must be a repository
    path in the stack's project, so the node service account's grants there cover it, and in the nodes' region
    or the multi-region containing it (GKE states no location rule; where Google does, for Cloud Batch's image
    streaming, it is "the same region as Cloud Batch VMs, or in a multi-region corresponding to the region")."""
    st = s.startup
    repo = st.image_repository
    if not s.image_streaming:
        if repo:
            return [
                f"{key('imageRepository')}: only used with imagePath 'streaming' (imagePath is "
                f"{st.image_path!r}); unset it or set imagePath to streaming"
            ]
        return []
    if not repo:
        return [
            f"{key('imageRepository')}: imagePath 'streaming' needs the Artifact Registry repository holding "
            f"the NeMo-RL image copy, e.g. {s.region}-docker.pkg.dev/{s.gcp_project}/<repo> (GKE cannot "
            "stream from nvcr.io)"
        ]
    m = re.fullmatch(catalog.ARTIFACT_REGISTRY_REPO_RE, repo)
    if m is None:
        return [
            f"{key('imageRepository')}: {repo!r} is not an Artifact Registry Docker repository path "
            "<location>-docker.pkg.dev/<project>/<repository>"
        ]
    p = []
    if m["project"] != s.gcp_project:
        p.append(
            f"{key('imageRepository')}: the repository is in project {m['project']!r}, not the stack's "
            f"{s.gcp_project!r}; the node service account is granted reader and service usage there only"
        )
    allowed = {s.region} | ({s.region.split("-", 1)[0]} & catalog.ARTIFACT_REGISTRY_MULTI_REGIONS)
    if m["location"] not in allowed:
        p.append(
            f"{key('imageRepository')}: the repository is in {m['location']!r}; keep the copy in the "
            f"nodes' region {s.region!r} or its multi-region"
        )
    return p
