"""The weights prefetch Job's spec (plain dicts, no Pulumi resources; workloads/weights_prefetch.py applies it).

It runs `pod_programs/prefetch_hf.py download` (shipped in the job-scripts ConfigMap), whose huggingface_hub
resumes partial files; a completion marker makes a rerun take seconds. The token reaches it as a file (the
Secret mounted read-only, HF_TOKEN_PATH), never as an environment variable.

Where it runs (`prefetchImage`): by default in a pinned slim Python image, whose init container installs the
hash-pinned huggingface_hub of `prefetch-requirements.txt` (also in the ConfigMap) into an emptyDir. The
NeMo-RL image has huggingface_hub too, but it is 20-30 GB: a Job in it starts only once that image is on the
CPU node, about four minutes after the node exists, and on the critical path (synth's report) that wait came
right before the 145 GB download. `prefetchImage: nemo-rl` keeps the NeMo-RL image for clusters without PyPI
access. It lands on the CPU nodes the Ray head uses (pod_parts.cpu_node_selector).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from core import catalog, images, prefetch, recipes, weights
from core.naming import HF_SECRET, HF_TOKEN_KEY, LUSTRE_PVC
from core.settings import Settings
from core.settings import tenancy as tenancy_settings
from workloads.manifests.pod_parts import (
    cpu_node_selector,
    hf_environment,
    lustre_mounts,
    lustre_volume,
    scripts_mount,
    scripts_volume,
    token_secret_name,
)
from workloads.manifests.pod_security import (
    HF_TOKEN_FILE,
    ROLE_LABEL,
    ROLE_PREFETCH,
    TOKEN_FILE_MODE,
    TOKENS_DIR,
    harden_pod_spec,
)

CONTAINER = "prefetch"
TOKEN_VOLUME = "hf-token"
INSTALL_CONTAINER = "install"
# The small image's packages: an emptyDir the init container fills and the download imports from.
DEPS_DIR = "/opt/prefetch-deps"


@dataclass(frozen=True)
class WeightsPrefetchArgs:
    name: str
    namespace: str
    image: str
    in_nemo_rl_image: bool  # False: the small Python image plus the pinned wheels
    plan: prefetch.PrefetchPlan
    lustre_mount_path: str
    scripts_dir: str
    node_selector: dict  # the CPU pods' placement, like the Ray head's
    backoff_limit: int = 4
    secret_name: str = HF_SECRET  # the stack's token Secret (an experiment stack has its own)
    # An experiment stack's prefetch: its own Lustre directory (markers, model links) and the shared cache, which it
    # writes (core/settings/tenancy.py; the admission policy lets only the pinned prefetch image write it).
    lustre_experiment: Optional[str] = None
    # weightsPath bucket-import: the model was imported into its path; the staging manifest's name (core/weights.py).
    imported: Optional[str] = None

    @classmethod
    def of(cls, s: Settings) -> "WeightsPrefetchArgs":
        r = s.recipe
        if r.model_revision is None:  # the startup rules refuse prefetchWeights without a pinned revision
            raise ValueError(f"prefetchWeights: model {r.model_name!r} has no pinned revision")
        in_nemo_rl_image = s.startup.prefetch_image == "nemo-rl"
        return cls(
            name=f"{s.prefix}-prefetch",
            namespace=s.storage.namespace,
            image=s.nemo_rl_image if in_nemo_rl_image else images.prefetch_python_image(),
            in_nemo_rl_image=in_nemo_rl_image,
            plan=prefetch.plan(
                model_name=r.model_name,
                revision=r.model_revision,
                mount_path=s.workload.lustre_mount_path,
            ),
            lustre_mount_path=s.workload.lustre_mount_path,
            scripts_dir=recipes.SCRIPTS_DIR,
            node_selector=cpu_node_selector(autopilot=s.autopilot, cpu_pool=s.names.cpu_pool),
            secret_name=token_secret_name(s),
            lustre_experiment=tenancy_settings.lustre_experiment(s),
            imported=weights.STAGED_MANIFEST if weights.staged(s) else None,
        )

    @property
    def download_bytes(self) -> int:
        """What the Job itself downloads (the critical-path report times it): nothing of the model when imported."""
        return 0 if self.imported else self.plan.download_bytes

    @property
    def timeout_seconds(self) -> int:
        return prefetch.job_timeout_seconds(self.plan.download_bytes)


def job_spec(a: WeightsPrefetchArgs) -> dict:
    mount = a.lustre_mount_path.rstrip("/")
    scripts = scripts_mount(a.scripts_dir)
    download: dict[str, Any] = {
        "name": CONTAINER,
        "image": a.image,
        "command": prefetch.download_argv(
            a.plan, a.scripts_dir, in_nemo_rl_image=a.in_nemo_rl_image, imported=a.imported
        ),
        "env": [
            *hf_environment(mount, a.lustre_experiment),
            {"name": "HF_TOKEN_PATH", "value": HF_TOKEN_FILE},
            {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        ],
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}},
        "volumeMounts": [
            *lustre_mounts(mount, a.lustre_experiment, cache_writable=True),
            scripts,
            {"name": TOKEN_VOLUME, "mountPath": TOKENS_DIR, "readOnly": True},
        ],
    }
    # The Hugging Face token only, as one Secret volume of its own (the Ray pods' projected `tokens` volume also
    # carries the W&B netrc, which the prefetch never reads).
    volumes = [
        lustre_volume(LUSTRE_PVC),
        scripts_volume(),
        {
            "name": TOKEN_VOLUME,
            "secret": {
                "secretName": a.secret_name,
                "defaultMode": TOKEN_FILE_MODE,
                "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}],
            },
        },
    ]
    init = []
    if a.in_nemo_rl_image:
        download["workingDir"] = catalog.NEMO_RL_WORKDIR  # `uv run` uses NeMo-RL's environment (huggingface_hub)
    else:
        deps = {"name": "prefetch-deps", "mountPath": DEPS_DIR}
        # The install sees neither the token nor Lustre: only the requirements file and the empty target.
        init.append(
            {
                "name": INSTALL_CONTAINER,
                "image": a.image,
                "command": prefetch.install_argv(a.scripts_dir, DEPS_DIR),
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
                "volumeMounts": [scripts, deps],
            }
        )
        download["env"].append({"name": "PYTHONPATH", "value": DEPS_DIR})
        download["volumeMounts"].append({**deps, "readOnly": True})
        volumes.append({"name": "prefetch-deps", "emptyDir": {"sizeLimit": "1Gi"}})
    pod = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": dict(a.node_selector),
        **({"initContainers": init} if init else {}),
        "containers": [download],
        "volumes": volumes,
    }
    # The same hardening as the Ray head (workloads/manifests/pod_security.py: every capability dropped); root like it,
    # so the HF cache it writes on Lustre belongs to the user the job runs as (a root head without capabilities
    # could not write into a non-root user's directories). Its role label is what the network policies select:
    # DNS, and Hugging Face (and PyPI for the install) by name.
    return {
        "backoffLimit": a.backoff_limit,
        "activeDeadlineSeconds": a.timeout_seconds,
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/part-of": "nemo-rl-gke", ROLE_LABEL: ROLE_PREFETCH}},
            "spec": harden_pod_spec(pod),
        },
    }
