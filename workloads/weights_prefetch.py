"""WeightsPrefetch: a Job on the CPU pool that fills the Hugging Face cache on Lustre with the recipe's model
(at its pinned revision) and datasets, as soon as the Lustre volume exists.

It runs `pod_programs/prefetch_hf.py download` (shipped in the job-scripts ConfigMap), whose huggingface_hub
resumes partial files; a completion marker makes a rerun take seconds. The token reaches it as a file (the
Secret mounted read-only, HF_TOKEN_PATH), never as an environment variable.

Where it runs (`prefetchImage`): by default in a pinned slim Python image, whose init container installs the
hash-pinned huggingface_hub of `prefetch-requirements.txt` (also in the ConfigMap) into an emptyDir. The
NeMo-RL image has huggingface_hub too, but it is 20-30 GB: a Job in it starts only once that image is on the
CPU node, about four minutes after the node exists, and on the critical path (synth's report) that wait came
right before the 145 GB download. `prefetchImage: nemo-rl` keeps the NeMo-RL image for clusters without PyPI
access.

Pulumi waits for the Job (pulumi-kubernetes awaits a batch/v1 Job until it completes or fails, PR #633) with a
custom create/update timeout sized for the download (core.prefetch.job_timeout_seconds; the provider's default
gives up after 10 minutes). `pulumi.com/replaceUnready: "true"`: a Job that failed (FACTS §11: a failed Job
reruns only if it changes or carries this annotation) is replaced on the next `pulumi up`, which resumes the
download. The annotation `nemo-rl-gke/download-bytes` tells the critical-path report what it downloads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog, images, lustre_paths, prefetch, recipes
from core.naming import HF_SECRET, HF_TOKEN_KEY, JOB_SCRIPTS, LUSTRE_PVC
from core.settings import Settings
from workloads.manifests.pod_security import ROLE_LABEL, ROLE_PREFETCH, TOKEN_FILE_MODE, TOKENS_DIR, harden_pod_spec
from workloads.manifests.raycluster import SCRIPTS_FILE_MODE, RayPodsConfig, raycluster_spec

TOKEN_DIR = TOKENS_DIR
CONTAINER = "prefetch"
INSTALL_CONTAINER = "install"
# The small image's packages: an emptyDir the init container fills and the download imports from.
DEPS_DIR = "/opt/prefetch-deps"


@dataclass(frozen=True)
class WeightsPrefetchArgs:
    name: str
    namespace: str
    image: str
    in_nemo_rl_image: bool               # False: the small Python image plus the pinned wheels
    plan: prefetch.PrefetchPlan
    lustre_mount_path: str
    scripts_dir: str
    node_selector: dict                  # the Ray head's CPU placement
    backoff_limit: int = 4

    @classmethod
    def of(cls, s: Settings) -> "WeightsPrefetchArgs":
        r = s.recipe
        head = raycluster_spec(RayPodsConfig.of(s), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)[
            "headGroupSpec"]["template"]["spec"]
        in_nemo_rl_image = s.startup.prefetch_image == "nemo-rl"
        return cls(name=f"{s.prefix}-prefetch", namespace=s.storage.namespace,
                   image=s.nemo_rl_image if in_nemo_rl_image else images.prefetch_python_image(),
                   in_nemo_rl_image=in_nemo_rl_image,
                   plan=prefetch.plan(model_name=r.model_name, revision=r.model_revision, dataset=r.dataset,
                                      mount_path=s.workload.lustre_mount_path),
                   lustre_mount_path=s.workload.lustre_mount_path, scripts_dir=recipes.SCRIPTS_DIR,
                   node_selector=dict(head["nodeSelector"]))

    @property
    def timeout_seconds(self) -> int:
        return prefetch.job_timeout_seconds(self.plan.download_bytes)


def job_spec(a: WeightsPrefetchArgs) -> dict:
    mount = a.lustre_mount_path.rstrip("/")
    scripts = {"name": "job-scripts", "mountPath": a.scripts_dir, "readOnly": True}
    download = {
        "name": CONTAINER,
        "image": a.image,
        "command": prefetch.download_argv(a.plan, a.scripts_dir, in_nemo_rl_image=a.in_nemo_rl_image),
        "env": [{"name": "HF_HOME", "value": lustre_paths.hf_home(mount)},
                {"name": "HF_TOKEN_PATH", "value": f"{TOKEN_DIR}/{HF_TOKEN_KEY}"},
                {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}],
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}},
        "volumeMounts": [{"name": "lustre", "mountPath": mount}, scripts,
                         {"name": "hf-token", "mountPath": TOKEN_DIR, "readOnly": True}],
    }
    volumes = [
        {"name": "lustre", "persistentVolumeClaim": {"claimName": LUSTRE_PVC}},
        {"name": "job-scripts", "configMap": {"name": JOB_SCRIPTS, "defaultMode": SCRIPTS_FILE_MODE}},
        {"name": "hf-token", "secret": {"secretName": HF_SECRET, "defaultMode": TOKEN_FILE_MODE,
                                        "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}]}},
    ]
    init = []
    if a.in_nemo_rl_image:
        download["workingDir"] = catalog.NEMO_RL_WORKDIR    # `uv run` uses NeMo-RL's environment (huggingface_hub)
    else:
        deps = {"name": "prefetch-deps", "mountPath": DEPS_DIR}
        # The install sees neither the token nor Lustre: only the requirements file and the empty target.
        init.append({"name": INSTALL_CONTAINER, "image": a.image,
                     "command": prefetch.install_argv(a.scripts_dir, DEPS_DIR),
                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
                     "volumeMounts": [scripts, deps]})
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
    # The same hardening as the Ray head (workloads/manifests/pod_security.py: every capability dropped); root like it, so
    # the HF cache it writes on Lustre belongs to the user the job runs as (a root head without capabilities
    # could not write into a non-root user's directories). Its role label is what the network policies select:
    # DNS, and Hugging Face (and PyPI for the install) by name.
    return {"backoffLimit": a.backoff_limit, "activeDeadlineSeconds": a.timeout_seconds,
            "template": {"metadata": {"labels": {"app.kubernetes.io/part-of": "nemo-rl-gke",
                                                 ROLE_LABEL: ROLE_PREFETCH}},
                         "spec": harden_pod_spec(pod)}}


class WeightsPrefetch(pulumi.ComponentResource):
    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: WeightsPrefetchArgs, namespace: pulumi.Input[str], provider: k8s.Provider,
                 needs: Sequence[pulumi.Resource], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:WeightsPrefetch", name, None, opts)
        a = args
        timeout = f"{a.timeout_seconds // 60}m"
        self.job = k8s.batch.v1.Job(
            "prefetch",
            metadata={"name": a.name, "namespace": namespace,
                      "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke", "nemo-rl-gke/role": "weights-prefetch"},
                      "annotations": {"pulumi.com/replaceUnready": "true",
                                      catalog.DOWNLOAD_BYTES_ANNOTATION: str(a.plan.download_bytes),
                                      "nemo-rl-gke/marker": a.plan.marker}},
            spec=job_spec(a),
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider,
                # The pod mounts the PVC, the scripts ConfigMap and the token Secret.
                depends_on=list(needs),
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout)))
        self.marker = a.plan.marker
        self.model_path = a.plan.model_path
        self.register_outputs({"marker": a.plan.marker, "modelPath": a.plan.model_path})
