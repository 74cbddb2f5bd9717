"""`imagePath: streaming` (the default): the NeMo-RL images copied into the stack's Artifact Registry and prewarmed by
the graph, and GKE Image streaming on every pool.

What GKE requires (core.catalog, image streaming, with its sources) checked on the rendered graph of every shipped
stack: the Container File System API, COS containerd with `gcfsConfig` on every Standard pool (Autopilot streams on
its own), Service Usage Consumer for the node service account, reads on the copy's repository, and every pod that
runs the NeMo-RL image naming the copy. The copy itself: a Cloud Run job per catalog release (gcrane, pinned by
digest) that needs no cluster, then its prewarm; the pods wait for the copy, never for the prewarm. Switching
streaming off (prepull) removes exactly that. Bad input is refused before anything is registered, naming the key.
"""

from __future__ import annotations

import pytest

from core import catalog, images
from core.catalog import replacements
from core.images import is_nemo_rl_image
from core.naming import CLOUD_RUN_JOB_NAME_MAX

pytestmark = pytest.mark.graph

POOL = "gcp:container/nodePool:NodePool"
SERVICE = "gcp:projects/service:Service"
IAM = "gcp:projects/iAMMember:IAMMember"
REPO = "gcp:artifactregistry/repository:Repository"
REPO_IAM = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
RUN_JOB = "gcp:cloudrunv2/job:Job"
ACCOUNT = "gcp:serviceaccount/account:Account"
CLUSTER = "gcp:container/cluster:Cluster"


def own_repository(r) -> str:
    prefix = f"nemo-{r.stack}"
    return f"{r.config['nemo-rl-gke:region']}-docker.pkg.dev/{r.config['gcp:project']}/{prefix}-images"


@pytest.fixture()
def pair(synth, stack):
    streaming = synth(stack)  # the default
    base = synth(stack, {"imagePath": "prepull"})
    assert base.error is None and streaming.error is None, streaming.error
    return base, streaming, own_repository(streaming)


def images_of(value) -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [v] if k == "image" and isinstance(v, str) else images_of(v)
    elif isinstance(value, list):
        for v in value:
            found += images_of(v)
    return found


def container_args(job) -> list[str]:
    return job.get("template.template.containers")[0].get("args") or []


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
        assert r.depends_on(r.get(CLUSTER, "cluster"), api)
    for pool in pools:  # the GPU pools and the CPU system pool alike
        assert pool.get("nodeConfig.imageType") == catalog.IMAGE_STREAMING_NODE_IMAGE, pool.name
        assert pool.get("nodeConfig.gcfsConfig") == {"enabled": True}, pool.name
        assert r.depends_on(pool, api), pool.name


def test_the_nodes_read_the_copy_through_a_grant_on_that_repository_alone(pair):
    # No project-wide Artifact Registry reader (least privilege): the copy's repository grants the nodes reads.
    base, r, repo = pair
    assert not [m for m in base.of_type(IAM) if m.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE]
    assert not [m for m in r.of_type(IAM) if m.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE]
    grant = r.get(REPO_IAM, "nodes-image-repository-reader")
    location, project, repository = repo.split("/")[0].removesuffix("-docker.pkg.dev"), *repo.split("/")[1:]
    assert (grant.get("location"), grant.get("project"), grant.get("repository")) == (location, project, repository)
    assert grant.get("role") == catalog.ARTIFACT_REGISTRY_READER_ROLE
    assert grant.get("member") == r.get(ACCOUNT, "nodes").computed["member"]
    # The grant names the repository the stack creates, so it waits for it.
    assert r.depends_on(grant, r.get(REPO, "image-repository"))
    for pool in r.of_type(POOL):
        assert r.depends_on(pool, grant), pool.name


def test_the_node_service_account_may_use_the_image_projects_services_before_nodes_exist(pair):
    _, r, _ = pair
    grant = next(m for m in r.of_type(IAM) if m.get("role") == catalog.IMAGE_STREAMING_NODE_ROLE)
    assert grant.get("project") == r.config["gcp:project"]
    account = r.get(ACCOUNT, "nodes")
    assert r.depends_on(grant, account)
    for pool in r.of_type(POOL):
        assert r.depends_on(pool, grant), pool.name
    assert r.depends_on(r.get(CLUSTER, "cluster"), grant)


def test_every_release_is_copied_from_ngc_into_the_repository_by_a_pinned_tool(pair):
    _, r, repo = pair
    copies = {j.name: j for j in r.of_type(RUN_JOB) if j.name.startswith("image-copy-")}
    assert len(copies) == len(catalog.NEMO_RL_RELEASES)
    tool = images.image_copy_tool_image()
    assert "@sha256:" in tool and ":" not in tool.split("@")[0].rsplit("/", 1)[1]  # by digest alone
    copied = set()
    for job in copies.values():
        (container,) = job.get("template.template.containers")
        assert container["image"] == tool and not container.get("commands")  # gcrane's own entrypoint
        verb, source, target = container["args"]
        tag = source.rsplit(":", 1)[1]
        assert verb == "cp" and source == images.nemo_rl_image(tag)
        assert target == images.nemo_rl_image(tag, repo)
        copied.add(tag)
        assert job.get("location") == r.config["nemo-rl-gke:region"]
        assert job.get("deletionProtection") is False
    assert copied == set(catalog.NEMO_RL_RELEASES)


def test_the_copy_writes_as_its_own_account_with_writer_on_that_repository_only(pair):
    _, r, repo = pair
    account = r.get(ACCOUNT, "image-copy")
    writer = r.get(REPO_IAM, "image-copy-writer")
    assert writer.get("role") == catalog.ARTIFACT_REGISTRY_WRITER_ROLE
    assert writer.get("member") == account.computed["member"]
    assert writer.get("repository") == repo.rsplit("/", 1)[1]
    assert not [m for m in r.of_type(IAM) if m.get("member") == account.computed["member"]]
    for job in r.of_type(RUN_JOB):
        assert job.get("template.template.serviceAccount") == account.computed["email"], job.name
        assert r.depends_on(job, writer), job.name  # its first execution pushes or prewarms


def test_the_copy_starts_with_the_graph_and_each_prewarm_follows_its_copy(pair):
    # No cluster, pool or Lustre before the copies: they run while those are created.
    _, r, _ = pair
    cluster = r.get(CLUSTER, "cluster")
    for job in r.of_type(RUN_JOB):
        assert not r.depends_on(job, cluster), job.name
        assert not [p for p in r.of_type(POOL) if r.depends_on(job, p)], job.name
        # Pulumi waits for the execution: run_execution_token, its name and token within 63 characters.
        token = job.get("runExecutionToken")
        assert token and len(job.get("name")) <= CLOUD_RUN_JOB_NAME_MAX and len(job.get("name")) + len(token) < 63
    for tag in catalog.NEMO_RL_RELEASES:
        slug = tag.replace(".", "-")
        copy, prewarm = r.get(RUN_JOB, f"image-copy-{slug}"), r.get(RUN_JOB, f"image-prewarm-{slug}")
        assert r.depends_on(prewarm, copy)
        args = container_args(prewarm)
        assert args[args.index("--tag") + 1].endswith(f"/packages/{catalog.NEMO_RL_IMAGE_NAME}/tags/{tag}")
        assert args[args.index("--stream-location") + 1] == r.config["nemo-rl-gke:region"]
        assert args[args.index("--architecture") + 1] == "amd64"  # a multi-arch tag is prewarmed per platform


def test_the_pods_that_name_a_copy_wait_for_it_and_not_for_its_prewarm(pair, stack):
    _, r, _ = pair
    copies = [j for j in r.of_type(RUN_JOB) if j.name.startswith("image-copy-")]
    prewarms = [j for j in r.of_type(RUN_JOB) if j.name.startswith("image-prewarm-")]
    users = [
        x
        for x in r.resources
        if x.type.startswith("kubernetes:") and x.custom and any(is_nemo_rl_image(i) for i in images_of(x.inputs))
    ]
    assert {u.type.rsplit(":", 1)[1] for u in users} >= {"Job", "RayCluster", "RayJob"}
    for u in users:
        assert all(r.depends_on(u, c) for c in copies), u.name
        assert not any(r.depends_on(u, p) for p in prewarms), u.name


def test_a_token_changes_exactly_when_what_its_job_runs_changes(synth, pair):
    _, r, _ = pair
    other = synth(r.stack, {"imageRepository": f"us-docker.pkg.dev/{r.config['gcp:project']}/nemo"})
    assert other.error is None, other.error
    for job in r.of_type(RUN_JOB):
        moved = other.get(RUN_JOB, job.name)
        assert (moved.get("runExecutionToken") != job.get("runExecutionToken")) == (
            container_args(moved) != container_args(job)
        ), job.name
        assert container_args(moved) != container_args(job)  # every copy and prewarm names the repository


def test_switching_streaming_off_removes_the_copy_the_api_and_the_grants_and_nothing_else(pair):
    base, r, _ = pair

    def keys(res):
        return {(x.type, x.name) for x in res.resources}

    added = keys(r) - keys(base)
    assert keys(base) - keys(r) == set()
    releases = len(catalog.NEMO_RL_RELEASES)
    counted = {t: sum(1 for x, _ in added if x == t) for t in {t for t, _ in added}}
    assert counted == {
        SERVICE: 1 + len(catalog.IMAGE_COPY_APIS),
        IAM: 1,
        REPO_IAM: 2,
        REPO: 1,
        ACCOUNT: 1,
        RUN_JOB: 2 * releases,
        "nemo-rl-gke:infra:ImageCopy": 1,
    }
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


def test_every_type_the_stacks_render_had_its_provider_diff_rules_read(pair):
    # The day-two sweep checks this over every change; here over what the default stacks render, fast.
    _, r, _ = pair
    unread = sorted(
        {x.type for x in r.resources if x.custom}
        - {t for t in {x.type for x in r.resources} if replacements.diff_rules_read(t)}
    )
    assert not unread, unread
    for t in (REPO, RUN_JOB):
        assert replacements.rules_for(t), t


def test_a_repository_of_your_own_gets_the_copies_and_no_repository_is_created(synth):
    base = synth("dev")
    mine = f"us-docker.pkg.dev/{base.config['gcp:project']}/nemo-images"
    r = synth("dev", {"imageRepository": mine})
    assert r.error is None, r.error
    assert r.of_type(REPO) == []
    assert r.get(REPO_IAM, "image-copy-writer").get("repository") == "nemo-images"
    assert r.get(REPO_IAM, "nodes-image-repository-reader").get("location") == "us"
    targets = {container_args(j)[2] for j in r.of_type(RUN_JOB) if j.name.startswith("image-copy-")}
    assert all(t.startswith(f"{mine}/{catalog.NEMO_RL_IMAGE_NAME}:") for t in targets)


@pytest.mark.parametrize(
    "overrides, needle",
    [
        ({"imageRepository": "nvcr.io/nvidia"}, "is not an Artifact Registry"),
        ({"imageRepository": "us-central1-docker.pkg.dev/someone-elses-proj/nemo"}, "not the stack's"),
        ({"imageRepository": "europe-west4-docker.pkg.dev/your-gcp-project-id/nemo"}, "nodes' region"),
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


@pytest.mark.parametrize(
    "stack, floor",
    [("dev", catalog.IMAGE_STREAMING_MIN_GKE_STANDARD), ("autopilot", catalog.IMAGE_STREAMING_MIN_GKE_AUTOPILOT)],
)
def test_a_gke_version_older_than_image_streaming_is_refused_naming_the_reason(synth, stack, floor):
    r = synth(stack, {"gkeVersion": "1.18"})
    assert r.error is not None and r.resources == []
    line = next(ln for ln in r.error.splitlines() if "image streaming" in ln)
    assert line.strip().startswith("- nemo-rl-gke:gkeVersion:") and floor in line
