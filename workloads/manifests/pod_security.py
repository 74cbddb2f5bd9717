"""Pod-level hardening pieces shared by every workload pod template (Ray head and workers, the RayJob
submitter, the prefetch, the GPU placeholders and the image pre-pull): plain dicts, no Pulumi resources.

- `WORKLOAD_LABELS` / `ROLE_LABEL`: labels our templates carry so the namespace's NetworkPolicies
  (workloads/manifests/network_policy.py) can select the pods by what they are. KubeRay adds its `ray.io/*` labels only
  when it creates the pods, so the policies must not rely on them.
- `container_security_context()` / `pod_security_context()`: no privilege escalation, the runtime's default
  seccomp profile, every capability dropped. The GPU workers alone keep the default set minus NET_RAW
  (`drop_all=False`): whether NCCL over gIB (RDMA verbs through the host's /dev/infiniband devices exposed by
  GKE) still works without it needs a GPU run, and Google's own NCCL test pods set no security context.
- `restricted_*_context()`: Pod Security Standards `restricted` (non-root as nobody, that user's group as
  fsGroup so token files mounted 0440 stay readable) for pods that write nothing root must own later.
- `namespace_labels()`: the Pod Security Admission labels of a namespace (core/catalog/security.py, PSA).
- `token_files()`: the token Secret as read-only files (a Secret volume), never as environment variables.
  Hugging Face reads `HF_TOKEN_PATH` (huggingface_hub >= 0.23.0; `HF_TOKEN` would win, so it is never set);
  W&B reads the netrc file named by `NETRC`, mounted on the pod that runs the driver only (NeMo-RL calls
  `wandb.init` itself, after it copied the driver's environment into every actor's runtime env, so only a
  path ever travels); Ray token auth reads `RAY_AUTH_TOKEN_PATH` (Ray >= 2.52), and the container defines
  `RAY_AUTH_TOKEN` as the empty string: KubeRay injects the token from its Secret only into containers that do
  not define the variable, and Ray's token loader skips an empty one for the file (core/catalog/security.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core import catalog
from core.catalog import WANDB_NETRC_MACHINE
from core.naming import HF_TOKEN_KEY, RAY_AUTH_TOKEN_KEY, WANDB_NETRC_KEY

# One label for the Ray pods and their submitter; every pod carries its role (NetworkPolicy selectors).
WORKLOAD_LABEL = "nemo-rl-gke/workload"
WORKLOAD_LABEL_VALUE = "nemo-rl"
ROLE_LABEL = "nemo-rl-gke/role"
ROLE_HEAD, ROLE_WORKER, ROLE_SUBMITTER = "ray-head", "ray-worker", "ray-job-submitter"
ROLE_PREFETCH, ROLE_WARMUP, ROLE_PREPULL = "weights-prefetch", "gpu-warmup", "image-prepull"
ROLE_EXPORT = "checkpoint-export"  # the checkpoint export Job (workloads/manifests/export_job.py)
ROLE_STAGING = "data-staging"  # the data staging Job (workloads/manifests/staging_job.py)
# weightsPath bucket-import (workloads/manifests/weights_staging.py): the staging Job and the import Job.
ROLE_WEIGHTS_STAGE, ROLE_WEIGHTS_IMPORT = "weights-stage", "weights-import"
RAY_NODE_ROLES = (ROLE_HEAD, ROLE_WORKER)
WORKLOAD_LABELS = {WORKLOAD_LABEL: WORKLOAD_LABEL_VALUE}
RAY_HEAD_LABELS = {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_HEAD}
RAY_WORKER_LABELS = {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_WORKER}
SUBMITTER_LABELS = {**WORKLOAD_LABELS, ROLE_LABEL: ROLE_SUBMITTER}

TOKENS_VOLUME = "tokens"
TOKENS_DIR = "/var/run/secrets/nemo-rl-gke"
HF_TOKEN_FILE = f"{TOKENS_DIR}/{HF_TOKEN_KEY}"
WANDB_NETRC_FILE = f"{TOKENS_DIR}/{WANDB_NETRC_KEY}"
RAY_AUTH_VOLUME = "ray-auth"
RAY_AUTH_DIR = "/var/run/secrets/ray-auth"
RAY_AUTH_TOKEN_FILE = f"{RAY_AUTH_DIR}/{RAY_AUTH_TOKEN_KEY}"
# Owner and group may read, nobody may write or execute; the containers run as root (the NeMo-RL image does).
TOKEN_FILE_MODE = 0o440

# Names of environment variables that carry a token's value. None of them may carry a value in a pod's env or
# in a runtime env: the token files replace them (policy pack and tests check this list). The one exception is
# RAY_AUTH_TOKEN defined as the empty string (RAY_AUTH_TOKEN_BLOCKER), which carries nothing.
TOKEN_VALUE_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "RAY_AUTH_TOKEN")
RAY_AUTH_TOKEN_BLOCKER = {"name": "RAY_AUTH_TOKEN", "value": ""}


def carries_token(env_var: dict) -> bool:
    """True when an env entry could carry a token's value (a token variable other than the empty blocker)."""
    return env_var.get("name") in TOKEN_VALUE_VARIABLES and env_var != RAY_AUTH_TOKEN_BLOCKER


def container_security_context(*, drop_all: bool = True) -> dict:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL" if drop_all else "NET_RAW"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security_context() -> dict:
    return {"seccompProfile": {"type": "RuntimeDefault"}}


def restricted_container_context() -> dict:
    return {
        **container_security_context(),
        "runAsNonRoot": True,
        "runAsUser": catalog.NOBODY_UID,
        "runAsGroup": catalog.NOBODY_UID,
    }


def restricted_pod_context() -> dict:
    return {
        **pod_security_context(),
        "runAsNonRoot": True,
        "runAsUser": catalog.NOBODY_UID,
        "runAsGroup": catalog.NOBODY_UID,
        "fsGroup": catalog.NOBODY_UID,
    }


def harden_pod_spec(
    pod_spec: dict, *, calls_kubernetes_api: bool = False, drop_all: bool = True, restricted: bool = False
) -> dict:
    """`pod_spec` with the pod and container security contexts set (existing keys win, so a template that
    deliberately differs keeps its value) and the service-account token unmounted unless the pod needs it.
    `drop_all=False` only for the GPU workers; `restricted` for pods that can run as non-root."""
    out = dict(pod_spec)
    pod_ctx = restricted_pod_context() if restricted else pod_security_context()
    container_ctx = restricted_container_context() if restricted else container_security_context(drop_all=drop_all)
    out["securityContext"] = {**pod_ctx, **(pod_spec.get("securityContext") or {})}
    if not calls_kubernetes_api:
        out["automountServiceAccountToken"] = False
    for key in ("initContainers", "containers"):
        if key in pod_spec:
            out[key] = [
                {**c, "securityContext": {**container_ctx, **(c.get("securityContext") or {})}} for c in pod_spec[key]
            ]
    return out


def namespace_labels(enforce: str) -> dict[str, str]:
    """Pod Security Admission labels: enforce `enforce` (the level every pod of the namespace meets), warn and
    audit `restricted`, each pinned to the Kubernetes version the objects are validated for."""
    if enforce not in catalog.PSA_LEVELS:
        raise ValueError(f"unknown Pod Security level {enforce!r}")
    out = {}
    for mode, level in (("enforce", enforce), ("warn", "restricted"), ("audit", "restricted")):
        out[f"{catalog.PSA_LABEL_PREFIX}/{mode}"] = level
        out[f"{catalog.PSA_LABEL_PREFIX}/{mode}-version"] = catalog.PSA_VERSION
    return out


@dataclass(frozen=True)
class TokenFiles:
    """What a pod template merges in to read the tokens from files."""

    volumes: list[dict] = field(default_factory=list)
    volume_mounts: list[dict] = field(default_factory=list)
    env: list[dict] = field(default_factory=list)


def token_files(
    secret_name: str, *, hugging_face: bool, wandb: bool = False, ray_auth_secret: str | None = None
) -> TokenFiles:
    """Secret volume(s) + mounts + the *_PATH variables for the tokens this pod may use.

    `hugging_face`: every pod that calls the Hub (the prefetch, the Ray head; the GPU workers only when nothing
    was prefetched, otherwise they run with HF_HUB_OFFLINE=1). `wandb`: the pod whose driver calls `wandb.init`
    (the Ray head), when the recipe logs to W&B.
    `ray_auth_secret`: the Secret holding the Ray auth token (releases whose Ray supports token auth).
    """
    volumes: list[dict] = []
    mounts: list[dict] = []
    env: list[dict] = []
    sources: list[dict] = []
    if hugging_face:
        sources.append({"secret": {"name": secret_name, "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}]}})
        env.append({"name": "HF_TOKEN_PATH", "value": HF_TOKEN_FILE})
    if wandb:
        # The W&B key is an optional setting: without it the file is absent and the pod still starts.
        sources.append(
            {
                "secret": {
                    "name": secret_name,
                    "optional": True,
                    "items": [{"key": WANDB_NETRC_KEY, "path": WANDB_NETRC_KEY}],
                }
            }
        )
        env.append({"name": "NETRC", "value": WANDB_NETRC_FILE})
    if sources:
        # One projected volume, so each source keeps its own `optional` while both files share one directory.
        volumes.append({"name": TOKENS_VOLUME, "projected": {"sources": sources, "defaultMode": TOKEN_FILE_MODE}})
        mounts.append({"name": TOKENS_VOLUME, "mountPath": TOKENS_DIR, "readOnly": True})
    if ray_auth_secret is not None:
        volumes.append(
            {
                "name": RAY_AUTH_VOLUME,
                "secret": {
                    "secretName": ray_auth_secret,
                    "defaultMode": TOKEN_FILE_MODE,
                    "items": [{"key": RAY_AUTH_TOKEN_KEY, "path": RAY_AUTH_TOKEN_KEY}],
                },
            }
        )
        mounts.append({"name": RAY_AUTH_VOLUME, "mountPath": RAY_AUTH_DIR, "readOnly": True})
        env += [
            {"name": "RAY_AUTH_MODE", "value": "token"},
            dict(RAY_AUTH_TOKEN_BLOCKER),
            {"name": "RAY_AUTH_TOKEN_PATH", "value": RAY_AUTH_TOKEN_FILE},
        ]
    return TokenFiles(volumes, mounts, env)


def wandb_netrc(api_key: str) -> str:
    """The netrc entry wandb reads for its API host (wandb/sdk/lib/apikey.py writes the same shape)."""
    return f"machine {WANDB_NETRC_MACHINE}\n  login user\n  password {api_key}\n"
