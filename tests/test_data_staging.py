"""Your own data and the built-in datasets reach NeMo-RL's own loader as the files the data staging Job stages.

Real programs, real libraries: the engine renders the stack (the staging Job's plan, the RayJob's training command and
runtime env); the staging Job's own command runs `pod_programs/stage_data.py` with the `datasets` of each release's
image (tests/datasets_envs.py: 4.0.0, 4.4.1, 4.8.5 from the releases' uv.lock) against a Hugging Face Hub on loopback
(tests/hub_server.py) whose `main` has moved past the pinned commit, or a local directory standing in for the bucket
folder the Job mounts through Cloud Storage FUSE; then the config the release's own loader builds from the rendered
command (tests/nemo_rl_oracle.py) is handed to NeMo-RL's ResponseDataset path of that release, and the built-in
loaders' own calls run with the RayJob's runtime env (tests/standin/nemo_rl_data.py, each line cited). The Lustre mount
`/lustre` and the Job's gs:// mount are directories of the test (a path prefix mapped, as the pod's mounts are).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from core import catalog, data, recipes
from core.catalog import NEMO_RL_RELEASES
from tests import datasets_envs
from tests.hub_server import FakeHub, Repo
from tests.nemo_rl_oracle import nemo_rl_config, script_calls

pytestmark = pytest.mark.graph

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "pod_programs"
JOB, RAYJOB = "kubernetes:batch/v1:Job", "kubernetes:ray.io/v1:RayJob"
MOUNT, SCRIPTS = "/lustre", "/etc/nemo-rl-gke"
TAGS = sorted(NEMO_RL_RELEASES)
# A platform stack whose recipe's config each release ships: the codelab's Qwen on v0.4.0, the dev stack's Gemma on
# v0.5.0 and v0.7.0 (its own release, and the newest).
STACK_OF = {"v0.4.0": ("codelab", {}), "v0.5.0": ("dev", {}), "v0.7.0": ("dev", {"nemoRlRelease": "v0.7.0"})}
PINNED, MAIN = "1" * 40, "2" * 40  # the commit jobData names, and where `main` has moved since


def jsonl(rows: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def rows(tag: str, n: int) -> list[dict]:
    return [{"problem": f"{tag} problem {i}?", "answer": str(i), "extra": [i]} for i in range(n)]


class Pod:
    """The paths of a pod mapped into the test's directories: /lustre, the scripts mount, the gs:// mounts."""

    def __init__(self, tmp: Path, gcs: dict[str, Path] | None = None):
        self.lustre = tmp / "lustre"
        self.lustre.mkdir()
        self.gcs = gcs or {}
        self.token = tmp / "hf-token"
        self.token.write_text("hf_loopback_token")

    def map(self, value):
        if isinstance(value, str):
            if value.startswith(f"{SCRIPTS}/"):
                return str(PROGRAMS / value.rsplit("/", 1)[1])
            for mount, local in self.gcs.items():
                if value == mount or value.startswith(mount + "/"):
                    return str(local) + value[len(mount) :]
            if value == MOUNT or value.startswith(MOUNT + "/"):
                return str(self.lustre) + value[len(MOUNT) :]
            return re.sub(r"(?<![\w/])/lustre(?=/)", str(self.lustre), value)
        if isinstance(value, list):
            return [self.map(v) for v in value]
        if isinstance(value, dict):
            return {k: self.map(v) for k, v in value.items()}
        return value


def staging_command(r) -> tuple[list[str], dict]:
    c = r.get(JOB, "data-staging").get("spec.template.spec.containers")[0]
    assert c["command"][:4] == ["uv", "run", "python", f"{SCRIPTS}/{recipes.STAGE_DATA_SCRIPT}"]
    return c["command"], {e["name"]: e["value"] for e in c["env"]}


def run_staging(tag: str, r, pod: Pod, hub: FakeHub | None):
    argv, env = staging_command(r)
    plan = pod.map(json.loads(argv[5]))
    env = datasets_envs.clean_env(
        HF_HOME=pod.map(env["HF_HOME"]),
        HF_TOKEN_PATH=str(pod.token),
        **({"HF_ENDPOINT": hub.endpoint} if hub else {}),
    )
    return datasets_envs.run(tag, [pod.map(argv[3]), "--plan", json.dumps(plan)], env, cwd=pod.lustre)


def training_command(tag: str, r) -> list[str]:
    """The entrypoint's training command, as /bin/sh runs it (the steps after it write the trained marker)."""
    entry = NEMO_RL_RELEASES[tag].grpo_entry
    [argv] = [
        c
        for c in script_calls(r.get(RAYJOB, "rayjob").get("spec.entrypoint"))
        if c[:4] == ["uv", "run", "python", entry]
    ]
    return argv


def training_data(tag: str, r, pod: Pod) -> dict:
    """The `data` section NeMo-RL's loader of `tag` builds from the rendered training command."""
    argv = training_command(tag, r)
    assert argv[4] == "--config"
    return nemo_rl_config(tag, argv[5], pod.map(argv[6:]))["data"]


def training_env(r, pod: Pod) -> dict[str, str]:
    return pod.map(yaml.safe_load(r.get(RAYJOB, "rayjob").get("spec.runtimeEnvYAML"))["env_vars"])


def response_rows(tag: str, data_config: dict, env: dict[str, str]) -> dict:
    out = datasets_envs.run(tag, [str(datasets_envs.STANDIN), "response", tag, json.dumps(data_config)], env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def conversation(row: dict) -> tuple[str, str]:
    user, assistant = row["messages"]
    assert (user["role"], assistant["role"]) == ("user", "assistant")
    return user["content"], assistant["content"]


# --- a Hub dataset at its commit --------------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", TAGS)
def test_a_hub_dataset_at_its_commit_reaches_nemo_rls_response_dataset_as_staged_while_main_moved_on(
    tag, synth, tmp_path
):
    stack, overrides = STACK_OF[tag]
    job_data = {
        "train": {"dataset": "acme/math-rl", "revision": PINNED, "inputKey": "problem", "outputKey": "answer"},
        "validation": {"dataset": "acme/math-rl", "revision": PINNED, "split": "test"},
    }
    r = synth(stack, {**overrides, "jobData": json.dumps(job_data)})
    assert r.error is None, r.error
    pinned = {"README.md": b"# acme/math-rl\n", "data/train.jsonl": jsonl(rows("pinned", 5))}
    pinned["data/test.jsonl"] = jsonl(rows("pinned-test", 2))
    moved = {"README.md": b"# acme/math-rl\n", "data/train.jsonl": jsonl(rows("main", 7))}
    moved["data/test.jsonl"] = jsonl(rows("main-test", 3))
    pod = Pod(tmp_path)
    with FakeHub() as hub:
        hub.add(Repo("dataset", "acme/math-rl", MAIN, moved, branches={"main": MAIN}, revisions={PINNED: pinned}))
        staged = run_staging(tag, r, pod, hub)
        assert staged.returncode == 0, staged.stderr[-3000:]
        # Only the pinned commit was asked for (and the token went along: the file the Job mounts).
        revs = {
            m.group(1) for e in hub.requests() if (m := re.search(r"/(?:tree|resolve|revision)/([^/]+)", e["path"]))
        }
        assert revs == {PINNED}, revs
        before = len(hub.requests())
        got = response_rows(tag, training_data(tag, r, pod), datasets_envs.clean_env(**training_env(r, pod)))
        assert len(hub.requests()) == before  # the training reads files on Lustre, never the Hub
    assert [conversation(x) for x in got["train"]] == [(x["problem"], x["answer"]) for x in rows("pinned", 5)]
    assert [conversation(x) for x in got["validation"]] == [(x["problem"], x["answer"]) for x in rows("pinned-test", 2)]
    if tag == "v0.4.0":  # its GRPO entry dispatches each row on task_name "math" (the stand-in asserts it)
        assert {x["task_name"] for x in got["train"] + got["validation"]} == {"math"}
    # The staged files hold the two columns (plus v0.4.0's task name), nothing else of the source.
    s = data.staged(data.parse(job_data, MOUNT)[0], tag, MOUNT)
    first = json.loads(Path(pod.map(s.train)).read_text().splitlines()[0])
    assert set(first) == {"problem", "answer"} | ({"task_name"} if tag == "v0.4.0" else set())
    assert json.loads(Path(pod.map(s.marker)).read_text())["rows"] == {"jobData.train": 5, "jobData.validation": 2}


# --- gs:// JSONL through the Job's bucket mount -----------------------------------------------------------------------
@pytest.mark.parametrize("tag", TAGS)
def test_a_gcs_jsonl_reaches_nemo_rls_response_dataset_as_the_staging_job_copied_it(tag, synth, tmp_path):
    stack, overrides = STACK_OF[tag]
    job_data = {
        "train": {"dataset": "gs://acme-data/rl/train.jsonl", "inputKey": "prompt", "outputKey": "reference"},
        "validation": {"dataset": "gs://acme-data/rl/val.jsonl", "inputKey": "question", "outputKey": "gold"},
    }
    r = synth(stack, {**overrides, "jobData": json.dumps(job_data)})
    assert r.error is None, r.error
    # The Job mounts the one folder, read-only, as its own service account; the grant covers those two objects.
    spec = r.get(JOB, "data-staging").get("spec.template.spec")
    (volume,) = [v for v in spec["volumes"] if "csi" in v]
    assert volume["csi"]["readOnly"] is True and volume["csi"]["volumeAttributes"]["bucketName"] == "acme-data"
    assert "only-dir=rl" in volume["csi"]["volumeAttributes"]["mountOptions"].split(",")
    ksa = r.get("kubernetes:core/v1:ServiceAccount", "data-ksa")
    assert spec["serviceAccountName"] == ksa.get("metadata.name")
    grant = r.get("gcp:storage/bucketIAMMember:BucketIAMMember", "data-read-acme-data")
    assert grant.get("member").endswith(f"/sa/{ksa.get('metadata.name')}") and grant.get("bucket") == "acme-data"
    objects = "projects/_/buckets/acme-data/objects/"
    assert grant.get("condition.expression") == (
        f'resource.type == "{catalog.BUCKET_RESOURCE_TYPE}" || resource.name == "{objects}rl/train.jsonl" || '
        f'resource.name == "{objects}rl/val.jsonl"'
    )
    assert r.depends_on(r.get(JOB, "data-staging"), grant)
    assert r.depends_on(r.get(RAYJOB, "rayjob"), r.get(JOB, "data-staging"))
    # The bucket folder as the FUSE mount shows it.
    bucket = tmp_path / "bucket" / "rl"
    bucket.mkdir(parents=True)
    train = [{"prompt": f"p{i}", "reference": f"r{i}", "id": i} for i in range(4)]
    val = [{"question": "q0", "gold": "g0"}]
    (bucket / "train.jsonl").write_bytes(jsonl(train))
    (bucket / "val.jsonl").write_bytes(jsonl(val))
    (bucket / "notes.txt").write_text("not data")
    [mount] = [m["mountPath"] for m in spec["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
    pod = Pod(tmp_path, gcs={mount: bucket})
    staged = run_staging(tag, r, pod, None)
    assert staged.returncode == 0, staged.stderr[-3000:]
    got = response_rows(tag, training_data(tag, r, pod), datasets_envs.clean_env(**training_env(r, pod)))
    assert [conversation(x) for x in got["train"]] == [(x["prompt"], x["reference"]) for x in train]
    # The validation file's own columns, staged under the train entry's names (one input_key for both).
    assert [conversation(x) for x in got["validation"]] == [("q0", "g0")]


# --- a bad dataset: one line from the CPU pod, nothing staged ---------------------------------------------------------
@pytest.mark.parametrize(
    "job_data,files,line",
    [
        (
            {"train": {"dataset": "gs://acme-data/rl/train.jsonl", "inputKey": "prompt", "outputKey": "answer"}},
            {"train.jsonl": jsonl([{"question": "q", "answer": "a"}])},
            "jobData.train.inputKey: column 'prompt' is not in gs://acme-data/rl/train.jsonl (columns: question, "
            "answer)",
        ),
        (
            {"train": {"dataset": "gs://acme-data/rl/", "files": "*.parquet"}},
            {"train.jsonl": jsonl([{"input": "q", "output": "a"}])},
            "jobData.train.dataset: no file matches '*.parquet' in gs://acme-data/rl/",
        ),
        (
            {"train": {"dataset": "gs://acme-data/rl/train.jsonl"}},
            {"train.jsonl": b""},
            "jobData.train",
        ),
    ],
    ids=["missing-column", "no-file", "no-rows"],
)
def test_a_bad_dataset_fails_the_staging_job_at_once_in_one_line_naming_its_key(job_data, files, line, synth, tmp_path):
    tag = "v0.5.0"
    # No validation data: the run validates on none (its config's val_period is refused without it, offline).
    r = synth("dev", {"jobData": json.dumps(job_data), "jobOverrides": json.dumps({"val_period": 0})})
    assert r.error is None, r.error
    bucket = tmp_path / "bucket" / "rl"
    bucket.mkdir(parents=True)
    for name, content in files.items():
        (bucket / name).write_bytes(content)
    spec = r.get(JOB, "data-staging").get("spec")
    (volume,) = [v for v in spec["template"]["spec"]["volumes"] if "csi" in v]
    [mount] = [
        m["mountPath"] for m in spec["template"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == volume["name"]
    ]
    pod = Pod(tmp_path, gcs={mount: bucket})
    out = run_staging(tag, r, pod, None)
    # The exit code the Job's podFailurePolicy fails the Job on at once: no retry, no GPU asked for.
    (rule,) = spec["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and out.returncode in rule["onExitCodes"]["values"], out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]  # one line
    assert out.stderr.strip().startswith(f"stage_data: {line}")
    staged = pod.lustre / data.STAGED_DIR
    assert not [p for p in staged.rglob("*") if p.is_file()] if staged.exists() else True  # nothing written


# --- the built-in datasets: pinned, read offline ----------------------------------------------------------------------
def builtin_repos() -> list[Repo]:
    """The Hub datasets the built-in loaders read, each at the catalog's commit with `main` moved on since."""
    out = []
    for repo_id in ("agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"):
        tag = repo_id.split("/")[1]
        files = {"README.md": f"# {repo_id}\n".encode()}
        pinned = {**files, "data/train.jsonl": jsonl(rows(f"{tag}-pinned", 3))}
        moved = {**files, "data/train.jsonl": jsonl(rows(f"{tag}-main", 4))}
        out.append(
            Repo(
                "dataset",
                repo_id,
                MAIN,
                moved,
                branches={"main": MAIN},
                revisions={catalog.DATASETS[repo_id].revision: pinned},
            )
        )
    return out


@pytest.mark.parametrize("tag", TAGS)
def test_the_built_in_loaders_read_their_pinned_commits_offline_after_the_staging_job(tag, synth, tmp_path):
    # The codelab's DeepScaler recipe: v0.4.0/v0.5.0's DeepScaler loader reads DeepScaleR and AIME 2024 itself, v0.7.0
    # renders DeepScaler (train) and AIME2024 (validation).
    r = synth("codelab", {} if tag == "v0.4.0" else {"nemoRlRelease": tag})
    assert r.error is None, r.error
    names = ["DeepScaler"] if tag != "v0.7.0" else ["DeepScaler", "AIME2024"]
    pod = Pod(tmp_path)
    with FakeHub() as hub:
        for repo in builtin_repos():
            hub.add(repo)
        staged = run_staging(tag, r, pod, hub)
        assert staged.returncode == 0, staged.stderr[-3000:]
        assert "the offline load reads it" in staged.stdout
        env = datasets_envs.clean_env(**training_env(r, pod))
        assert env["HF_DATASETS_OFFLINE"] == "1"
        before = len(hub.requests())
        for name in names:
            out = datasets_envs.run(tag, [str(datasets_envs.STANDIN), "builtin", tag, name], env)
            assert out.returncode == 0, out.stderr[-3000:]
            got = json.loads(out.stdout.strip().splitlines()[-1])
            assert all(row["problem"].split(" ")[0].endswith("-pinned") for row in got["rows"]), got["rows"]
            # Each build read is the pinned commit's (the cache directory is named by it).
            assert got["cache_files"] and all(
                any(f"/{d.revision}/" in f for d in catalog.DATASETS.values()) for f in got["cache_files"]
            )
        assert len(hub.requests()) == before  # offline: not one request
        # What the unmodified loader did before: online, it reads whatever `main` is.
        online = {k: v for k, v in env.items() if k not in ("HF_DATASETS_OFFLINE", "HF_DATASETS_CACHE")}
        online.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "elsewhere"))
        out = datasets_envs.run(tag, [str(datasets_envs.STANDIN), "builtin", tag, names[0]], online)
        assert out.returncode == 0, out.stderr[-3000:]
        assert all(
            row["problem"].split(" ")[0].endswith("-main") for row in json.loads(out.stdout.splitlines()[-1])["rows"]
        )


# --- the weights without the prefetch Job -----------------------------------------------------------------------------
@pytest.mark.parametrize("tag", TAGS)
def test_without_the_prefetch_job_the_entrypoint_downloads_the_pinned_commit_and_trains_from_it(tag, synth, tmp_path):
    stack, overrides = STACK_OF[tag]
    r = synth(stack, {**overrides, "prefetchWeights": "false"})
    assert r.error is None, r.error
    entry = r.get(RAYJOB, "rayjob").get("spec.entrypoint")
    calls = script_calls(entry)
    [download] = [c for c in calls if c[:4] == ["uv", "run", "python", f"{SCRIPTS}/prefetch_hf.py"] and "download" in c]
    train = training_command(tag, r)
    assert calls.index(download) < calls.index(train)
    [item] = [w for w in download if w.startswith("model:")]
    model, revision = item[len("model:") :].split("@")
    assert revision == catalog.MODELS[model].revision
    pod = Pod(tmp_path)
    pinned = {"config.json": b'{"pinned": true}', "model.safetensors": os.urandom(2048)}
    moved = {"config.json": b'{"pinned": false}', "model.safetensors": os.urandom(2048)}
    with FakeHub() as hub:
        hub.add(Repo("model", model, MAIN, moved, branches={"main": MAIN}, revisions={revision: pinned}, gated=True))
        head_env = datasets_envs.clean_env(
            HF_HOME=pod.map(training_env(r, pod)["HF_HOME"]), HF_TOKEN_PATH=str(pod.token), HF_ENDPOINT=hub.endpoint
        )
        out = datasets_envs.run(tag, pod.map(download[3:]), head_env)  # the release's own huggingface_hub
        assert out.returncode == 0, out.stderr[-3000:]
    [model_path] = [w.split("=", 1)[1] for w in train if w.startswith("policy.model_name=")]
    assert json.loads((Path(pod.map(model_path)) / "config.json").read_text()) == {"pinned": True}


# --- an experiment's own gs:// data ---------------------------------------------------------------------------------
GCS_DATA = {
    "train": {"dataset": "gs://team-data/rl/", "files": "train-*.jsonl"},
    "validation": {"dataset": "gs://team-data/rl/val.jsonl"},
}


def _experiment_netpols(platform_result, namespace: str) -> list:
    return [
        p
        for p in platform_result.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if p.get("metadata.namespace") == namespace
    ]


def test_an_experiments_data_staging_runs_in_its_namespace_as_its_platforms_account_in_its_own_directory():
    """The Job, its identity, its policies and its files are the experiment's: its namespace (the platform's policies
    there open DNS, the metadata server and Cloud Storage to the staging pods only), the service account its platform
    made there (its people create none), a read grant for that account's principal as the contract publishes it, its
    own Lustre directory only (which its namespace's admission policy admits), the image its platform streams."""
    from synth import engine
    from synth.render import manifest_of
    from tests import netpol_oracle as np
    from tests.cel_rules import admission_refusals

    gcs = GCS_DATA
    ref = "organization/nemo-rl-gke/codelab"
    platform = engine.run("codelab")
    assert platform.error is None, platform.error
    contract = platform.outputs["experimentPlatform"]
    entry = contract["experiments"]["codelab-exp1"]
    r = engine.run(
        "codelab-exp1", {"jobData": json.dumps(gcs)}, stack_references={ref: engine.StackOutputs.of(platform)}
    )
    assert r.error is None, r.error
    job = r.get(JOB, "data-staging")
    ns = job.get("metadata.namespace")
    assert ns == entry["namespace"] != platform.get(JOB, "data-staging").get("metadata.namespace")
    pod = job.get("spec.template.spec")
    assert pod["serviceAccountName"] == entry["dataServiceAccount"]
    assert r.of_type("kubernetes:core/v1:ServiceAccount") == []
    [ksa] = [
        a
        for a in platform.of_type("kubernetes:core/v1:ServiceAccount")
        if (a.get("metadata.namespace"), a.get("metadata.name")) == (ns, entry["dataServiceAccount"])
    ]
    assert ksa.get("automountServiceAccountToken") is False
    # Its one grant besides its export's: read on its own objects, for that account's principal.
    [grant] = [g for g in r.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if g.name.startswith("data-read-")]
    assert grant.name == "data-read-team-data" and grant.get("role") == catalog.DATA_READ_ROLE
    assert grant.get("member") == entry["dataPrincipal"]
    assert entry["dataPrincipal"].endswith(f"/subject/ns/{ns}/sa/{entry['dataServiceAccount']}")
    assert r.depends_on(job, grant) and r.depends_on(r.get(RAYJOB, "rayjob"), job)
    # Its own directory at the mount path, nothing else of the volume: the staged files land under it.
    (container,) = pod["containers"]
    lustre = [m for m in container["volumeMounts"] if m["name"] == "lustre"]
    assert lustre == [{"name": "lustre", "mountPath": "/lustre", "subPath": entry["lustreDirectory"]}]
    assert job.get("metadata.annotations")["nemo-rl-gke/staged"].startswith("/lustre/datasets/staged/")
    (policy,) = platform.of_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
    [namespace] = [n for n in platform.of_type("kubernetes:core/v1:Namespace") if n.get("metadata.name") == ns]
    template = job.get("spec.template")
    assert admission_refusals(manifest_of(policy), template, manifest_of(namespace)) == []
    # The image its platform's contract names, as its Ray pods run.
    head = r.get(RAYJOB, "rayjob").get("spec.rayClusterSpec.headGroupSpec.template.spec.containers")[0]
    assert container["image"] == head["image"]
    assert container["image"].startswith(contract["settings"]["imageRepository"].split("/")[0])
    # Its namespace's policies: DNS, and the metadata server (its GCS FUSE sidecar's token), for the staging pods.
    policies = np.Policies(manifest_of(p) for p in _experiment_netpols(platform, ns))
    me = np.pod("staging", ns, template["metadata"]["labels"])
    for ip, port in (("169.254.169.252", 988), ("169.254.169.254", 80)):
        assert policies.allowed(me, np.Endpoint("metadata", ip=ip), port), (ip, port)
    names = {p.get("metadata.name") for p in _experiment_netpols(platform, ns)}
    assert {"data-staging-dns", "data-staging-metadata-server"} <= names
    head_pod = np.pod(
        "head", ns, r.get(RAYJOB, "rayjob").get("spec.rayClusterSpec.headGroupSpec.template.metadata.labels")
    )
    assert not policies.allowed(head_pod, np.Endpoint("metadata", ip="169.254.169.252"), 988)


def test_an_experiment_with_gcs_data_on_a_platform_that_opens_no_cloud_storage_is_refused_in_one_line():
    from synth import engine

    ref = "organization/nemo-rl-gke/codelab"
    platform = engine.StackOutputs.of(engine.run("codelab"))
    earlier = json.loads(json.dumps(platform.outputs))  # a platform deployed before its experiments staged gs:// data
    earlier["experimentPlatform"]["egress"]["stagingStorage"] = False
    refs = {ref: engine.StackOutputs(earlier, platform.secret_names)}
    r = engine.run(
        "codelab-exp1",
        {"jobData": json.dumps(GCS_DATA)},
        stack_references=refs,
    )
    assert [x.type for x in r.resources if x.type != "pulumi:pulumi:StackReference"] == []
    [line] = [x.strip() for x in (r.error or "").splitlines() if x.strip().startswith("- ")]
    assert line.startswith(
        "- nemo-rl-gke:jobData: platform 'organization/nemo-rl-gke/codelab' lets no data staging Job"
    )
