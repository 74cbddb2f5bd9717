"""Time to the first training step and keeping the result: image path, weights prefetch, checkpoint export.

Research and evidence: docs/research/ttfs.md (docs/performance.md "Time to the first training step"). Rules:
- the model revision the prefetch pins is the recipe's `model_revision` (a commit; the recipe rules refuse
  anything else, and a model the catalog does not know without one);
- the export destination must lie inside the stack's bucket;
- image streaming needs the image in an Artifact Registry repository of the stack's project and region
  (`imageRepository`, only with `imagePath: streaming`; unset, the stack creates its own); its GKE floor is checked
  with the cluster's;
- `jobImage` is named by digest alone and lives where the nodes may read it (an experiment: a repository its
  platform reads); `jobEntry` needs it and a release with an environment registry; the environments the resolved
  config selects are registered (by the release, or a jobEntry) and configured (`env.<name>`);
- the prefetch fills the Hugging Face cache on the Lustre volume: it needs the job's recipe (the model) and a
  Lustre mount path (checked by the workload rules).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, Optional

from core import catalog, export, images, recipes
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

    image_path: Literal["streaming", "prepull", "pull"] = setting(
        "streaming",
        key="imagePath",
        description=(
            "How the NeMo-RL image reaches the nodes: streaming (default: the stack copies the release images into "
            "an Artifact Registry repository with Cloud Run jobs that start with the graph, prewarms GKE's "
            "image-streaming cache, and every pool streams the image; low-priority GPU placeholders bring GPU "
            "nodes up and a DaemonSet warms the CPU pool), prepull (the placeholders and the DaemonSet pull it "
            "from nvcr.io) or pull (the Ray pods pull it from nvcr.io when they start)."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "Job prefetch",
                "Job data-staging",
                "PriorityClass *",
                "NodePool *",
                "RayCluster raycluster",
                "RayJob rayjob",
                "Service *",
                "Sleep *",
                "IAMMember *",
                "RepositoryIamMember *",
                "Repository image-repository",
                "Account image-copy",
                "Job image-*",
            ),
            note=(
                "the image every NeMo-RL pod names (the registry copy or nvcr.io), the pools' streaming, the copy "
                "jobs and their repository"
            ),
        ),
        bad=("x",),
        alternatives=({"imagePath": "prepull"}, {"imagePath": "streaming"}),
    )
    image_repository: str = setting(
        "",
        key="imageRepository",
        description=(
            "imagePath streaming: the Artifact Registry Docker repository the stack copies the NeMo-RL images into "
            "(<repository>/nemo-rl:<release>) and the nodes stream from. Default: one the stack creates, "
            "<region>-docker.pkg.dev/<gcpProject>/<prefix>-images. Set: a repository of yours, in the stack's "
            "project and in its region or multi-region; the stack copies into it the same way."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "Job prefetch",
                "Job data-staging",
                "NodePool *",
                "RayCluster raycluster",
                "RayJob rayjob",
                "IAMMember *",
                "RepositoryIamMember *",
                "Repository image-repository",
                "Job image-*",
                "Service *",
                "Sleep *",
            ),
            note="the copies go to the other repository; the stack's own is deleted with its copies",
        ),
        bad=("us-central1-docker.pkg.dev/p/r",),
        alternatives=({"imageRepository": "us-docker.pkg.dev/your-gcp-project-id/nemo"},),
    )
    job_image_repositories: list[str] = setting(
        default_factory=list,
        key="jobImageRepositories",
        description=(
            "Artifact Registry repositories an experiment stack's jobImage may come from besides the platform's "
            "imageRepository (JSON list of <location>-docker.pkg.dev/<gcpProject>/<repository>, in the stack's "
            "project and region or multi-region): the nodes' service account reads each one. An experiment "
            "declares no grant of its own."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("RepositoryIamMember *",), note="a read grant per repository"),
        bad=('["nvcr.io/nvidia"]',),
        alternatives=({"jobImageRepositories": ["us-docker.pkg.dev/your-gcp-project-id/team-images"]},),
    )
    job_image: Optional[str] = setting(
        None,
        key="jobImage",
        description=(
            "Your image, built FROM the nemoRlRelease image (nvcr.io/nvidia/nemo-rl:<release>), named by digest "
            "only: <location>-docker.pkg.dev/<gcpProject>/<repository>/<image>@sha256:<64 hex>. Every NeMo-RL "
            "container runs it (Ray head and workers, the job's submitter, the GPU placeholders and the CPU "
            "pre-pull); the release's record (Ray version, paths, LD_LIBRARY_PATH) still applies. The nodes read "
            "its repository: a grant the stack makes, or, on an experiment stack, the platform's imageRepository "
            "or one of its jobImageRepositories."
        ),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "Job prefetch",
                "Job data-staging",
                "RayCluster raycluster",
                "RayJob rayjob",
                "RepositoryIamMember *",
            ),
            note="every NeMo-RL pod's image",
        ),
        bad=(
            "nvcr.io/nvidia/nemo-rl:v0.5.0",
            "us-docker.pkg.dev/your-gcp-project-id/team-images/grpo:v1",
        ),
        alternatives=({"jobImage": "us-docker.pkg.dev/your-gcp-project-id/team-images/grpo@sha256:" + "1" * 64},),
        stack_alternatives={
            "codelab-exp1": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64
            },
            "codelab-exp2": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64
            },
            "codelab-exp3": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64
            },
        },
    )
    job_entry: Optional[str] = setting(
        None,
        key="jobEntry",
        description=(
            "An entry script in your jobImage that runs instead of the release's GRPO entry, with the same "
            "arguments (--config and the Hydra overrides): it registers your environment (NeMo-RL's register_env and "
            "its actor's Python environment in ACTOR_ENVIRONMENT_REGISTRY), then runs examples/run_grpo.py as "
            '__main__ (docs/operations.md "Your own environment"). An absolute path, or one relative to '
            "/opt/nemo-rl. NeMo-RL v0.5.0 or later (v0.4.0 has no environment registry)."
        ),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "RayJob rayjob",
                # set with the jobImage that holds it (and, on a v0.4.0 stack, a release with a registry)
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "Job prefetch",
                "Job data-staging",
                "Job export",
                "Job data-staging",
                "RayCluster raycluster",
                "RepositoryIamMember *",
            ),
            note="the RayJob's entrypoint; set together with the jobImage that holds the script",
        ),
        bad=("/opt/my-env/run_my_grpo.py", "/opt/my env/$run.py"),
        alternatives=(
            {
                "jobImage": "us-docker.pkg.dev/your-gcp-project-id/team-images/grpo@sha256:" + "1" * 64,
                "jobEntry": "/opt/my-env/run_my_grpo.py",
            },
        ),
        stack_alternatives={
            "codelab": {
                "jobImage": "us-docker.pkg.dev/your-gcp-project-id/team-images/grpo@sha256:" + "1" * 64,
                "jobEntry": "/opt/my-env/run_my_grpo.py",
                "nemoRlRelease": "v0.5.0",
            },
            "codelab-exp1": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64,
                "jobEntry": "/opt/my-env/run_my_grpo.py",
                "nemoRlRelease": "v0.5.0",
            },
            "codelab-exp2": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64,
                "jobEntry": "/opt/my-env/run_my_grpo.py",
            },
            "codelab-exp3": {
                "jobImage": "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@sha256:" + "1" * 64,
                "jobEntry": "/opt/my-env/run_my_grpo.py",
                "nemoRlRelease": "v0.5.0",
            },
        },
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
            "Download the recipe's model at its pinned revision into the HF cache on Lustre with a Job, as soon as "
            "the Lustre volume exists (false: the job's entrypoint downloads the same pinned snapshot on the Ray head "
            "before training); the job trains from that snapshot either way."
        ),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            where={ON_EXPERIMENT: REFUSED_BY_PROGRAM},
            touches=(
                "Job *",
                "FQDNNetworkPolicy *",
                "RayCluster raycluster",
                "RayJob rayjob",
                "NodePool cpu",  # the CPU pool's maximum counts the prefetch Jobs
                *STAGING_TOUCHES,
            ),
            note=(
                "the prefetch Job goes or comes, and the entrypoint's download step with it; off on an experiment: "
                "its head would download into the shared cache, which its Ray pods mount read-only"
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
        day_two=DayTwo(
            SAFE_REPLACEMENT,
            where={ON_EXPERIMENT: REFUSED_BY_PROGRAM},
            touches=("Job prefetch", "FQDNNetworkPolicy *"),
            note="an experiment's prefetch runs the Python image: only it may write the shared cache",
        ),
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
            where={ON_EXPERIMENT: REFUSED_BY_PROGRAM},
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
    p.extend(_job_image_repositories_problems(s))
    p.extend(_job_image_problems(s))
    p.extend(_job_entry_problems(s))
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
    """imageRepository: only with streaming; unset, the stack creates its own (an experiment uses its platform's,
    which the platform's contract names)."""
    st = s.startup
    repo = st.image_repository
    if not s.image_streaming:
        if repo:
            return [
                f"{key('imageRepository')}: only used with imagePath 'streaming' (imagePath is "
                f"{st.image_path!r}); unset it or set imagePath to streaming"
            ]
        return []
    if s.stack.platform_stack:
        # The platform's value, checked by the platform's own rules: an experiment only needs it named.
        if repo:
            return []
        return [
            f"{key('imageRepository')}: platform {s.stack.platform_stack!r} streams images but names no image "
            "repository in its contract (deployed by an earlier release): run `pulumi up` on the platform first"
        ]
    return repository_problems("imageRepository", repo, s) if repo else []


def repository_problems(k: str, repo: str, s: "UncheckedSettings") -> list[str]:
    """A repository the nodes read (and stream from): GKE streams only from Artifact Registry (core.catalog, image
    streaming), so a Docker repository path in the stack's project, whose grants the node service account gets
    (Service Usage Consumer in the project hosting the image), and in the nodes' region or the multi-region containing
    it (GKE states no location rule; where Google does, for Cloud Batch's image streaming, it is "the same region as
    Cloud Batch VMs, or in a multi-region corresponding to the region"; the prewarm names the region as its stream
    location, since "multi-region is not supported for this field")."""
    m = re.fullmatch(catalog.ARTIFACT_REGISTRY_REPO_RE, repo)
    if m is None:
        return [
            f"{key(k)}: {repo!r} is not an Artifact Registry Docker repository path "
            "<location>-docker.pkg.dev/<project>/<repository>"
        ]
    p = []
    if m["project"] != s.gcp_project:
        p.append(
            f"{key(k)}: the repository is in project {m['project']!r}, not the stack's "
            f"{s.gcp_project!r}; the node service account is granted reader and service usage there only"
        )
    allowed = {s.region} | ({s.region.split("-", 1)[0]} & catalog.ARTIFACT_REGISTRY_MULTI_REGIONS)
    if m["location"] not in allowed:
        p.append(
            f"{key(k)}: the repository is in {m['location']!r}; keep it in the nodes' region {s.region!r} or its "
            "multi-region"
        )
    return p


def _job_image_repositories_problems(s: "UncheckedSettings") -> list[str]:
    if s.stack.platform_stack:
        return []  # the platform's value, checked by the platform's rules
    p = []
    for repo in s.startup.job_image_repositories:
        p.extend(repository_problems("jobImageRepositories", repo, s))
    return p


def job_image_repository(image: str) -> Optional[str]:
    """The Artifact Registry repository path of an image reference, or None when it is not in one."""
    m = re.match(catalog.ARTIFACT_REGISTRY_REPO_RE + r"/[a-z0-9]", image)
    return m.group(0)[:-2] if m else None


def _job_image_problems(s: "UncheckedSettings") -> list[str]:
    """jobImage: by digest alone, in Artifact Registry where the nodes may read it. An experiment stack declares no
    grant (its GCP resources are its export's and its data's only): its image must be in a repository its platform's
    nodes read, the platform's imageRepository or one of its jobImageRepositories."""
    image = s.startup.job_image
    if image is None:
        return []
    try:
        images.digest_ref(image)
    except images.ImageRefError as e:
        return [f"{key('jobImage')}: {e} (a tag can move: every pod must run the same bytes)"]
    repo = job_image_repository(image)
    if repo is None:
        return [
            f"{key('jobImage')}: {image.split('@')[0]!r} is not in Artifact Registry "
            "(<location>-docker.pkg.dev/<project>/<repository>/<image>@sha256:...): the nodes read your image "
            "through a grant on its repository, and GKE streams only from Artifact Registry"
        ]
    if not s.stack.platform_stack:
        return repository_problems("jobImage", repo, s)
    # The platform's repositories are in its project and region (its rules): the image must be in one of them.
    readable = set(s.startup.job_image_repositories) | ({s.startup.image_repository} if s.image_streaming else set())
    if repo not in readable:
        where = ", ".join(sorted(r for r in readable if r)) or "none"
        return [
            f"{key('jobImage')}: platform {s.stack.platform_stack!r}'s nodes do not read {repo} (they read: {where}); "
            f"push the image to one of those, or have the platform list {repo} in {key('jobImageRepositories')}"
        ]
    return []


# An entry path the job's shells leave alone (core/shell.py): letters, digits, '.', '_', '-', '/'.
_ENTRY_PATH = re.compile(r"[A-Za-z0-9._/-]+\.py")


def _job_entry_problems(s: "UncheckedSettings") -> list[str]:
    entry = s.startup.job_entry
    rel = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)
    if entry is None or rel is None:
        return []
    if rel.registry_entry is None:
        return [
            f"{key('jobEntry')}: NeMo-RL {rel.tag} has no environment registry (its GRPO entry, {rel.grpo_entry}, "
            "builds MathEnvironment itself); set nemoRlRelease to v0.5.0 or later, whose examples/run_grpo.py creates "
            "the environment the config names"
        ]
    if s.startup.job_image is None:
        return [
            f"{key('jobEntry')}: names a script in your image, and the release image has none of yours; set "
            f"{key('jobImage')} to the image that holds {entry}"
        ]
    if not _ENTRY_PATH.fullmatch(entry) or "/../" in f"/{entry}/" or "//" in entry:
        return [
            f"{key('jobEntry')}: {entry!r} must be a Python file's path (absolute, or relative to "
            f"{catalog.NEMO_RL_WORKDIR}) of letters, digits, '.', '_', '-' and '/', ending in .py, without '..'"
        ]
    return []


def environment_problems(s: "UncheckedSettings") -> list[str]:
    """The environments the resolved config selects must be registered where the job's entry creates them, and
    configured: NeMo-RL asserts the name is in ENV_REGISTRY and passes it env.<name> (core.catalog, the release's
    environment facts); a release whose GRPO entry builds MathEnvironment itself ignores any other name."""
    if s.recipe is None or not s.job.enabled or _job_entry_problems(s) or _job_image_problems(s):
        return []  # a refused jobEntry or jobImage is reported by its own rule
    rel = catalog.NEMO_RL_RELEASES.get(s.workload.nemo_rl_release)
    if rel is None:
        return []
    config = recipes.checked_config(s.recipe, rel, recipes.recipe_tree(s.recipe, rel))
    if config is None:
        return []
    entry = s.startup.job_entry
    p = []
    selected, unreachable = recipes.selected_environments(config, rel)
    envs: dict = config["env"] if isinstance(config.get("env"), dict) else {}
    for name in unreachable:
        p.append(
            f"{key('jobOverrides')}: a data.train list entry names env_name {name!r}, which NeMo-RL {rel.tag} never "
            "creates (extract_necessary_env_names reads data.train / data.validation / data.default as sections); "
            "put env_name in data.default or use the section form"
        )
    for name, where in selected:
        if entry is None and rel.grpo_entry_math_only and name not in catalog.MATH_ENVIRONMENT_NAMES:
            p.append(
                f"{key('jobEntry')}: the config selects environment {name!r} ({where}), but NeMo-RL {rel.tag}'s GRPO "
                f"entry {rel.grpo_entry} always runs MathEnvironment"
                + (
                    "; set jobEntry to a script in your jobImage that registers it and runs examples/run_grpo.py"
                    if rel.registry_entry
                    else "; this release has no environment registry: use nemoRlRelease v0.5.0 or later with jobEntry"
                )
            )
        elif entry is None and name not in rel.env_registry:
            p.append(
                f"{key('jobEntry')}: the config selects environment {name!r} ({where}), which NeMo-RL {rel.tag} does "
                "not register (create_env asserts it is in ENV_REGISTRY); set jobEntry to a script in your jobImage "
                "that calls register_env for it"
            )
        if not isinstance(envs.get(name), dict):
            p.append(
                f"{key('jobOverrides')}: the config selects environment {name!r} ({where}) but has no env.{name} "
                f"section, which NeMo-RL passes to it (env_configs[{name!r}]); add its keys as "
                f"jobOverrides.+env.{name}.<key>"
            )
    return p
