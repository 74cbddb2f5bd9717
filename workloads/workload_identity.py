"""The workload's namespace (with its Pod Security labels), its Kubernetes service accounts, the token Secrets
and the namespace's network policies.

Service accounts: the Ray pods and the submitter run as `ksaName`, which holds no Google grant; with the
checkpoint export its CPU Job (workloads/manifests/export_job.py) runs as the stack's own export service account
(core.naming Names.export_ksa), the only principal with bucket write, under the export prefix (infra/bucket.py).
The grant names the Kubernetes service account directly as a Workload Identity principal, so no Google service
account or `iam.gke.io/gcp-service-account` annotation is involved; the principal is recorded as an annotation so
`kubectl describe sa` shows what it may access.

Pod Security Admission (core/catalog/security.py, PSA): the namespace enforces the level every pod in it meets —
`privileged`, because the GPU workers mount the host's NVIDIA and gIB libraries (hostPath, which `baseline`
forbids) — and warns and audits `restricted`, which the submitter, the GPU placeholders and the image pre-pull
meet; the Ray head and the prefetch run as root (workloads/manifests/raycluster.py and prefetch_job.py say why).

Token values stay Pulumi secrets end to end and reach pods only as read-only files
(workloads/manifests/pod_security.py): the Secret holds the Hugging Face token as is and, while the job logs to
W&B, the W&B key as the netrc entry wandb reads. The Ray head mounts that item as optional, so turning W&B on or
off changes the Secret (replaced: pulumi-kubernetes treats Secret data as immutable), whose content the kubelet
carries into the running head's volume, and never the RayCluster (kubernetes.io/docs/concepts/configuration/secret,
"Mounted Secrets are updated automatically"). The Ray auth token (releases with Ray token authentication) has a
Secret of its own, under the key KubeRay reads. The network policies (workloads/manifests/network_policy.py) deny
ingress and egress by default and open only each pod's own paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import data, weights
from core.naming import HF_SECRET, HF_TOKEN_KEY, RAY_AUTH_SECRET, RAY_AUTH_TOKEN_KEY, WANDB_NETRC_KEY
from core.settings import Secrets, Settings
from core.settings.job import needs_wandb_key
from core.settings.security import dashboard_peers, token_auth_enabled
from workloads.manifests.kueue import queue_namespace_labels
from workloads.manifests.network_policy import PolicyArgs, fqdn_policies, network_policies
from workloads.manifests.pod_security import namespace_labels, wandb_netrc
from workloads.manifests.rdma import rdma_pod_mixin

PRINCIPAL_ANNOTATION = "nemo-rl-gke/workload-identity-principal"


def enforce_level(worker_volumes: list[dict]) -> str:
    """The strictest Pod Security level every pod of the namespace meets: `privileged` as soon as a pod mounts a
    host path (the GPU workers' driver and gIB libraries; `baseline` forbids hostPath volumes), else `baseline`
    (the Ray head and the prefetch run as root, which `restricted` forbids)."""
    return "privileged" if any("hostPath" in v for v in worker_volumes) else "baseline"


def token_secret(
    name: str, namespace: pulumi.Input[str], secrets: Secrets, opts: pulumi.ResourceOptions, *, wandb: bool
) -> k8s.core.v1.Secret:
    """The Secret the pods mount their tokens from: the Hugging Face token and, when the job logs to W&B (`wandb`)
    and the key is set, the W&B key as a netrc."""
    data = {HF_TOKEN_KEY: secrets.hf_token}
    if wandb and secrets.wandb_api_key is not None:
        wandb_key: pulumi.Input[str] = secrets.wandb_api_key
        data[WANDB_NETRC_KEY] = pulumi.Output.secret(wandb_key).apply(wandb_netrc)
    return k8s.core.v1.Secret(
        "tokens",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace),
        type="Opaque",
        string_data=data,
        opts=opts,
    )


def ray_auth_secret(
    namespace: pulumi.Input[str], token: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    """The Ray auth token's Secret, under the name and key KubeRay's `authOptions.secretName` reads (a platform's and
    an experiment stack's own, each in its namespace)."""
    return k8s.core.v1.Secret(
        "ray-auth",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=RAY_AUTH_SECRET, namespace=namespace),
        type="Opaque",
        string_data={RAY_AUTH_TOKEN_KEY: token},
        opts=opts,
    )


@dataclass(frozen=True)
class WorkloadIdentityArgs:
    namespace: str
    ksa_name: str
    export_ksa: Optional[str]  # the export Job's service account with the export on
    wandb: bool  # the job logs to W&B: the Secret holds the netrc
    psa_enforce: str
    ray_token_auth: bool
    policies: PolicyArgs
    # With the queue: the label that lets the namespace's LocalQueue submit to the ClusterQueue (workloads/kueue.py).
    extra_labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, s: Settings) -> "WorkloadIdentityArgs":
        exporting = s.startup.export_checkpoints
        # Only the platform's own pods live here: every experiment has a namespace of its own, with its own policies
        # (workloads/experiment_tenancy.py).
        prefetching = s.job.enabled and s.startup.prefetch_weights
        # Every job stages its datasets (core/data.py); gs:// data needs Cloud Storage and Workload Identity too.
        gcs_data = s.job.enabled and bool(data.gcs_volumes(s.recipe.data))
        ns = s.storage.namespace
        return cls(
            namespace=ns,
            ksa_name=s.storage.ksa_name,
            export_ksa=s.names.export_ksa if exporting else None,
            wandb=needs_wandb_key(s),
            psa_enforce=enforce_level(rdma_pod_mixin(s.gpu.accelerator, s.workload.release).volumes),
            ray_token_auth=token_auth_enabled(s),
            extra_labels=tuple(queue_namespace_labels().items()) if s.queue.queue == "kueue" else (),
            policies=PolicyArgs(
                namespace=ns,
                dashboard_peers=dashboard_peers(s),
                head_wandb=needs_wandb_key(s),
                head_hub=True,
                prefetch=prefetching,
                prefetch_pypi=prefetching and s.startup.prefetch_image == "python",
                export_job=exporting,
                staging=s.job.enabled,
                staging_storage=gcs_data,
                weights_staging=weights.staged(s),
                fqdn=s.security.egress_fqdn_policies,
            ),
        )


class WorkloadIdentity(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    export_service_account: Optional[k8s.core.v1.ServiceAccount]
    secret: k8s.core.v1.Secret
    ray_auth_secret: Optional[k8s.core.v1.Secret]
    network_policies: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        args: WorkloadIdentityArgs,
        secrets: Secrets,
        export_principal: Optional[pulumi.Input[str]],
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:WorkloadIdentity", name, None, opts)
        a = args
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            "namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.namespace,
                labels={
                    "app.kubernetes.io/part-of": "nemo-rl-gke",
                    **namespace_labels(a.psa_enforce),
                    **dict(a.extra_labels),
                },
            ),
            opts=child,
        )
        ns = self.namespace.metadata.name
        self.service_account = k8s.core.v1.ServiceAccount(
            "ksa", metadata=k8s.meta.v1.ObjectMetaArgs(name=a.ksa_name, namespace=ns), opts=child
        )
        self.export_service_account = None
        if a.export_ksa is not None and export_principal is not None:
            self.export_service_account = k8s.core.v1.ServiceAccount(
                "export-ksa",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=a.export_ksa, namespace=ns, annotations={PRINCIPAL_ANNOTATION: export_principal}
                ),
                opts=child,
            )
        self.secret = token_secret(HF_SECRET, ns, secrets, child, wandb=a.wandb)
        self.ray_auth_secret = None
        if a.ray_token_auth and secrets.ray_auth_token is not None:
            self.ray_auth_secret = ray_auth_secret(ns, secrets.ray_auth_token, child)
        self.network_policies = []
        for m in network_policies(a.policies):
            self.network_policies.append(
                k8s.networking.v1.NetworkPolicy(
                    f"netpol-{m['metadata']['name']}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=m["metadata"]["name"], namespace=ns, labels=m["metadata"]["labels"]
                    ),
                    spec=m["spec"],
                    opts=child,
                )
            )
        for m in fqdn_policies(a.policies):
            # GKE serves this CRD once the cluster has FQDN network policies on (infra/cluster.py).
            self.network_policies.append(
                k8s.apiextensions.CustomResource(
                    f"fqdnpol-{m['metadata']['name']}",
                    api_version=m["apiVersion"],
                    kind=m["kind"],
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=m["metadata"]["name"], namespace=ns, labels=m["metadata"]["labels"]
                    ),
                    spec=m["spec"],
                    opts=child,
                )
            )
        self.register_outputs({"namespace": ns, "serviceAccount": self.service_account.metadata.name})
