"""jobImage: your image, built on the release's, by digest only, in Artifact Registry where the nodes may read it.

Every NeMo-RL container runs it (the Ray head and workers, the job's submitter, the GPU placeholders, the CPU
pre-pull, the prefetch when it runs in the NeMo-RL image); the release's record still applies (its Ray version);
the stack grants its nodes reads on the image's repository. An experiment stack declares no grant: its image must
be in a repository its platform's nodes read (the platform's imageRepository or jobImageRepositories).
"""

from __future__ import annotations

import pytest

from core import catalog
from core.images import is_nemo_rl_image
from synth import engine

pytestmark = pytest.mark.graph

REPO_IAM = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
DIGEST = "sha256:" + "1" * 64
TEAM = "us-docker.pkg.dev/your-gcp-project-id/team-images"
MINE = f"{TEAM}/grpo@{DIGEST}"
PLATFORM_REF = "organization/nemo-rl-gke/codelab"


def images_of(value) -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [v] if k == "image" and isinstance(v, str) else images_of(v)
    elif isinstance(value, list):
        for v in value:
            found += images_of(v)
    return found


def rendered_images(r) -> dict[str, set[str]]:
    return {x.name: set(images_of(x.inputs)) for x in r.resources if x.type.startswith("kubernetes:") and x.custom}


def test_every_nemo_rl_container_runs_your_image_and_none_the_release_image(synth, stack):
    r = synth(stack, {"jobImage": MINE, "prefetchImage": "nemo-rl"})
    assert r.error is None, r.error
    by_object = rendered_images(r)
    assert not [i for imgs in by_object.values() for i in imgs if is_nemo_rl_image(i)]
    users = {name for name, imgs in by_object.items() if MINE in imgs}
    assert {"raycluster", "rayjob", "placeholders", "prefetch"} <= users
    if stack != "autopilot":
        assert "cpu-prepull" in users
    ray = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster")
    release = catalog.NEMO_RL_RELEASES[r.config["nemo-rl-gke:nemoRlRelease"]]
    assert ray.get("spec.rayVersion") == release.ray_version  # the base's record still applies
    head = ray.get("spec.headGroupSpec.template.spec.containers")[0]
    assert head["image"] == MINE
    job = r.get("kubernetes:ray.io/v1:RayJob", "rayjob")
    submitter = job.get("spec.submitterPodTemplate.spec.containers")[0]
    assert submitter["image"] == MINE


def test_the_nodes_read_your_images_repository_through_a_grant_on_it_alone(synth):
    r = synth("dev", {"jobImage": MINE})
    assert r.error is None, r.error
    grant = r.get(REPO_IAM, "nodes-reader-us-team-images")
    assert (grant.get("location"), grant.get("project"), grant.get("repository")) == (
        "us",
        "your-gcp-project-id",
        "team-images",
    )
    assert grant.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE
    assert grant.get("member") == r.get("gcp:serviceaccount/account:Account", "nodes").computed["member"]
    for pool in r.of_type("gcp:container/nodePool:NodePool"):
        assert r.depends_on(pool, grant), pool.name
    # In the stack's own image repository already read by the nodes: no second grant.
    own = synth("dev", {"jobImage": f"us-central1-docker.pkg.dev/your-gcp-project-id/nemo-dev-images/grpo@{DIGEST}"})
    assert own.error is None, own.error
    assert [g.name for g in own.of_type(REPO_IAM) if g.name.startswith("nodes-")] == ["nodes-image-repository-reader"]


@pytest.mark.parametrize(
    "image, needle",
    [
        (f"{TEAM}/grpo:v1", "has no digest"),
        (f"{TEAM}/grpo:v1@{DIGEST}", "carries a tag"),
        (f"nvcr.io/nvidia/nemo-rl@{DIGEST}", "is not in Artifact Registry"),
        (f"us-docker.pkg.dev/someone-elses-proj/team/grpo@{DIGEST}", "not the stack's"),
        (f"europe-docker.pkg.dev/your-gcp-project-id/team/grpo@{DIGEST}", "nodes' region"),
    ],
)
def test_an_image_not_by_digest_or_out_of_reach_is_refused_naming_job_image(synth, image, needle):
    r = synth("dev", {"jobImage": image})
    assert r.error is not None and r.resources == []
    (line,) = [ln.strip() for ln in r.error.splitlines() if needle in ln]
    assert line.startswith("- nemo-rl-gke:jobImage:"), r.error


def _experiment(platform_overrides: dict, overrides: dict) -> engine.SynthResult:
    platform = engine.run("codelab", platform_overrides or None)
    assert platform.error is None, platform.error
    return engine.run("codelab-exp1", overrides, stack_references={PLATFORM_REF: engine.StackOutputs.of(platform)})


def test_an_experiment_runs_an_image_from_a_repository_its_platform_reads_and_declares_no_grant():
    in_platform_repo = f"us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images/grpo@{DIGEST}"
    r = _experiment({}, {"jobImage": in_platform_repo})
    assert r.error is None, r.error
    # Decision: no cloud resource of its own for its image; the only ones it declares are its export folder's grants.
    assert {x.name for x in r.resources if x.type.startswith("gcp:")} <= {
        "export-managed-folder",
        "export-object-user",
        "export-bucket-list",
    }
    assert in_platform_repo in rendered_images(r)["rayjob"]
    # Elsewhere: refused, unless the platform lists the repository (and then grants its nodes reads there).
    refused = _experiment({}, {"jobImage": MINE})
    assert refused.error is not None and refused.resources == []
    (line,) = [ln.strip() for ln in refused.error.splitlines() if "jobImage" in ln]
    assert line.startswith("- nemo-rl-gke:jobImage:") and "jobImageRepositories" in line
    listed = _experiment({"jobImageRepositories": [TEAM]}, {"jobImage": MINE})
    assert listed.error is None, listed.error
    platform = engine.run("codelab", {"jobImageRepositories": [TEAM]})
    assert platform.get(REPO_IAM, "nodes-reader-us-team-images").get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE


def test_an_experiment_streams_its_platforms_copy_of_its_own_release(synth):
    # codelab runs v0.4.0, codelab-exp2 v0.5.0: the platform copies every release, the experiment names its own.
    platform, exp = synth("codelab"), synth("codelab-exp2")
    repo = platform.outputs["experimentPlatform"]["settings"]["imageRepository"]
    assert repo == "us-east1-docker.pkg.dev/your-gcp-project-id/nemo-codelab-images"
    ray_images = rendered_images(exp)["rayjob"]
    assert ray_images == {f"{repo}/{catalog.NEMO_RL_IMAGE_NAME}:v0.5.0"}
    copies = {
        j.get("template.template.containers")[0]["args"][2]
        for j in platform.of_type("gcp:cloudrunv2/job:Job")
        if j.name.startswith("image-copy-")
    }
    assert ray_images <= copies
