"""The NeMo-RL images where the nodes are: what the stack copies into its Artifact Registry repository and prewarms.

Pure code (the decision and its sources: core.catalog, "The copy in the stack's Artifact Registry"). With
`imagePath: streaming` a platform stack copies every release of the catalog (an experiment stack may name any of
them and declares no Google Cloud resource of its own) into `<repository>/nemo-rl:<tag>` with gcrane in a Cloud Run
job, then prewarms that tag's amd64 image in the stack's region with a second job
(pod_programs/prewarm_image.py). Each job's `run_execution_token` is derived from exactly what it runs, so the job
runs again when, and only when, that changes.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass

import pod_programs
from core import catalog, images
from core.naming import RUN_EXECUTION_TOKEN_LEN, Names


@dataclass(frozen=True)
class Repository:
    location: str
    project: str
    repository: str

    @property
    def path(self) -> str:
        return f"{self.location}-docker.pkg.dev/{self.project}/{self.repository}"

    @property
    def resource(self) -> str:
        return f"projects/{self.project}/locations/{self.location}/repositories/{self.repository}"

    @classmethod
    def parse(cls, path: str) -> "Repository":
        m = re.fullmatch(catalog.ARTIFACT_REGISTRY_REPO_RE, path)
        if m is None:
            raise ValueError(f"{path!r} is not an Artifact Registry Docker repository path")
        return cls(m["location"], m["project"], m["repository"])


@dataclass(frozen=True)
class CloudRunTask:
    """One Cloud Run job's container: image, command (empty: the image's entrypoint) and arguments."""

    job_name: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]

    @property
    def token(self) -> str:
        """The run_execution_token: what the job runs, hashed (a new value starts a new execution)."""
        text = shlex.join([self.image, *self.command, *self.args])
        return hashlib.sha256(text.encode()).hexdigest()[:RUN_EXECUTION_TOKEN_LEN]


@dataclass(frozen=True)
class ImageCopy:
    """One release image: its copy, then its prewarm."""

    release_tag: str
    source: str
    target: str
    copy: CloudRunTask
    prewarm: CloudRunTask


def tag_resource(repo: Repository, release_tag: str) -> str:
    return f"{repo.resource}/packages/{catalog.NEMO_RL_IMAGE_NAME}/tags/{release_tag}"


def prewarm_program() -> str:
    return (pod_programs.DIR / pod_programs.PREWARM.name).read_text(encoding="utf-8")


def plan(names: Names, repo: Repository, region: str) -> tuple[ImageCopy, ...]:
    """Every catalog release's copy into `repo` and its prewarm in `region` (the nodes' region)."""
    out = []
    for tag in sorted(catalog.NEMO_RL_RELEASES):
        source = images.nemo_rl_image(tag)
        target = images.nemo_rl_image(tag, repo.path)
        copy = CloudRunTask(names.image_copy_job(tag), images.image_copy_tool_image(), (), ("cp", source, target))
        prewarm_args = (
            "--repository",
            repo.resource,
            "--tag",
            tag_resource(repo, tag),
            "--stream-location",
            region,
            "--architecture",
            catalog.IMAGE_PREWARM_PLATFORM["architecture"],
            "--os",
            catalog.IMAGE_PREWARM_PLATFORM["os"],
            "--timeout",
            str(catalog.IMAGE_COPY_TASK_TIMEOUT_SECONDS - 60),
            # The copy's own token: a new copy is prewarmed again.
            "--after",
            copy.token,
        )
        prewarm = CloudRunTask(
            names.image_prewarm_job(tag),
            images.prefetch_python_image(),
            ("python", "-c", prewarm_program()),
            prewarm_args,
        )
        out.append(ImageCopy(tag, source, target, copy, prewarm))
    return tuple(out)
