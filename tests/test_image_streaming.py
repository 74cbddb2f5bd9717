"""`imagePath: streaming`: GKE Image streaming of the NeMo-RL image from the stack's Artifact Registry copy.

What GKE requires (core.catalog, image streaming, with its sources) checked on the rendered graph of every
shipped stack: the Container File System API, COS containerd with `gcfsConfig` on every Standard pool (Autopilot
streams on its own), Service Usage Consumer for the node service account, and every pod that runs the NeMo-RL
image naming the copy. Switching it on changes nothing else. Bad input is refused before anything is
registered, naming the key.
"""

from __future__ import annotations

import pytest

from core import catalog
from core.images import is_nemo_rl_image

pytestmark = pytest.mark.graph

POOL = "gcp:container/nodePool:NodePool"
SERVICE = "gcp:projects/service:Service"
IAM = "gcp:projects/iAMMember:IAMMember"
REPO_IAM = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"


def repository(base) -> str:
    return f"{base.config['nemo-rl-gke:region']}-docker.pkg.dev/{base.config['gcp:project']}/nemo-images"


@pytest.fixture()
def pair(synth, stack):
    base = synth(stack)
    repo = repository(base)
    streaming = synth(stack, {"imagePath": "streaming", "imageRepository": repo})
    assert base.error is None and streaming.error is None, streaming.error
    return base, streaming, repo


def images_of(value) -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [v] if k == "image" and isinstance(v, str) else images_of(v)
    elif isinstance(value, list):
        for v in value:
            found += images_of(v)
    return found


def test_every_nemo_rl_pod_pulls_the_registry_copy(pair):
    _, r, repo = pair
    refs = [i for x in r.resources if x.type.startswith("kubernetes:") for i in images_of(x.inputs)]
    nemo = [i for i in refs if is_nemo_rl_image(i)]
    assert nemo, "no NeMo-RL image rendered"
    assert all(i.startswith(f"{repo}/{catalog.NEMO_RL_IMAGE_NAME}:") for i in nemo), sorted(set(nemo))
    assert not any(i.startswith(catalog.NEMO_RL_IMAGE_REPO) for i in refs)


def test_the_pools_stream_after_the_container_file_system_api_is_on(pair, stack):
    _, r, _ = pair
    api = next(s for s in r.of_type(SERVICE) if s.get("service") == catalog.IMAGE_STREAMING_API)
    pools = r.of_type(POOL)
    if stack == "autopilot":
        assert pools == []  # Autopilot streams eligible images itself; the API is still required
        cluster = r.get("gcp:container/cluster:Cluster", "cluster")
        assert r.depends_on(cluster, api)
    for pool in pools:
        assert pool.get("nodeConfig.imageType") == catalog.IMAGE_STREAMING_NODE_IMAGE, pool.name
        assert pool.get("nodeConfig.gcfsConfig") == {"enabled": True}, pool.name
        assert r.depends_on(pool, api), pool.name


def test_the_nodes_read_the_copy_through_a_grant_on_that_repository_alone(pair):
    # No project-wide Artifact Registry reader (least privilege): the copy's repository grants the nodes reads.
    base, r, repo = pair
    assert not [m for m in base.of_type(IAM) if m.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE]
    (grant,) = r.of_type(REPO_IAM)
    location, project, repository = repo.split("/")[0].removesuffix("-docker.pkg.dev"), *repo.split("/")[1:]
    assert (grant.get("location"), grant.get("project"), grant.get("repository")) == (location, project, repository)
    assert grant.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE
    assert grant.get("member") == r.get("gcp:serviceaccount/account:Account", "nodes").computed["member"]
    for pool in r.of_type(POOL):
        assert r.depends_on(pool, grant), pool.name


def test_the_node_service_account_may_use_the_image_projects_services_before_nodes_exist(pair):
    _, r, _ = pair
    grant = next(m for m in r.of_type(IAM) if m.get("role") == catalog.IMAGE_STREAMING_NODE_ROLE)
    assert grant.get("project") == r.config["gcp:project"]
    account = r.get("gcp:serviceaccount/account:Account", "nodes")
    assert r.depends_on(grant, account)
    for pool in r.of_type(POOL):
        assert r.depends_on(pool, grant), pool.name
    assert r.depends_on(r.get("gcp:container/cluster:Cluster", "cluster"), grant)


def test_switching_streaming_on_adds_the_api_and_the_grant_and_changes_nothing_else(pair):
    base, r, _ = pair

    def keys(res):
        return {(x.type, x.name) for x in res.resources}

    added = keys(r) - keys(base)
    assert keys(base) - keys(r) == set()
    assert {t for t, _ in added} == {SERVICE, IAM, REPO_IAM} and len(added) == 3
    # Without streaming the pools leave the node image to GKE (its default is the same COS containerd).
    for pool in base.of_type(POOL):
        assert pool.get("nodeConfig.imageType") is None, pool.name


def test_streaming_off_is_rendered_so_turning_it_off_takes_effect(pair):
    # gcfs_config is Optional+Computed (terraform-provider-google-beta@93c65b2d container/node_config.go:241-257):
    # an absent block is no diff, so a pool that streamed would keep streaming. The off state is the upstream
    # acceptance test's (resource_container_node_pool_test.go:2692-2722: `gcfs_config { enabled = false }`).
    base, _, _ = pair
    for pool in base.of_type(POOL):
        assert pool.get("nodeConfig.gcfsConfig") == {"enabled": False}, pool.name


@pytest.mark.parametrize(
    "overrides, needle",
    [
        ({"imagePath": "streaming"}, "needs the Artifact Registry repository"),
        ({"imagePath": "streaming", "imageRepository": "nvcr.io/nvidia"}, "is not an Artifact Registry"),
        (
            {"imagePath": "streaming", "imageRepository": "us-central1-docker.pkg.dev/someone-elses-proj/nemo"},
            "not the stack's",
        ),
        (
            {"imagePath": "streaming", "imageRepository": "europe-west4-docker.pkg.dev/your-gcp-project-id/nemo"},
            "nodes' region",
        ),
        (
            {"imagePath": "prepull", "imageRepository": "us-central1-docker.pkg.dev/your-gcp-project-id/nemo"},
            "only used with imagePath 'streaming'",
        ),
    ],
)
def test_bad_streaming_input_is_refused_before_anything_is_registered(synth, overrides, needle):
    r = synth("dev", overrides)
    assert r.error is not None and r.resources == []
    lines = [ln.strip() for ln in r.error.splitlines() if needle in ln]
    assert len(lines) == 1 and lines[0].startswith("- nemo-rl-gke:imageRepository:"), r.error


def test_the_multi_region_containing_the_nodes_region_is_accepted(synth):
    base = synth("dev")
    assert base.config["nemo-rl-gke:region"].startswith("us-")
    r = synth(
        "dev",
        {"imagePath": "streaming", "imageRepository": f"us-docker.pkg.dev/{base.config['gcp:project']}/nemo-images"},
    )
    assert r.error is None, r.error


@pytest.mark.parametrize(
    "stack, floor",
    [("dev", catalog.IMAGE_STREAMING_MIN_GKE_STANDARD), ("autopilot", catalog.IMAGE_STREAMING_MIN_GKE_AUTOPILOT)],
)
def test_a_gke_version_older_than_image_streaming_is_refused_naming_the_reason(synth, stack, floor):
    base = synth(stack)
    r = synth(stack, {"imagePath": "streaming", "imageRepository": repository(base), "gkeVersion": "1.18"})
    assert r.error is not None and r.resources == []
    line = next(ln for ln in r.error.splitlines() if "image streaming" in ln)
    assert line.strip().startswith("- nemo-rl-gke:gkeVersion:") and floor in line
