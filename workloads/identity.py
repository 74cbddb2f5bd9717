"""The workload's namespace, its Kubernetes service account, and the Secret with the HF / W&B tokens.

The bucket grant (infra/bucket.py, wired in __main__.py) names this service account directly as a Workload Identity principal, so
no Google service account or `iam.gke.io/gcp-service-account` annotation is involved; the principal is
recorded as an annotation so `kubectl describe sa` shows what it may access. Token values stay Pulumi secrets
end to end and reach pods only through `secretKeyRef`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core.naming import HF_SECRET, HF_TOKEN_KEY, WANDB_API_KEY_KEY
from core.settings import Secrets, Settings

PRINCIPAL_ANNOTATION = "nemo-rl-gke/workload-identity-principal"


@dataclass(frozen=True)
class WorkloadIdentityArgs:
    namespace: str
    ksa_name: str

    @classmethod
    def of(cls, s: Settings) -> "WorkloadIdentityArgs":
        return cls(namespace=s.storage.namespace, ksa_name=s.storage.ksa_name)


class WorkloadIdentity(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    secret: k8s.core.v1.Secret

    def __init__(self, name: str, args: WorkloadIdentityArgs, secrets: Secrets, principal: pulumi.Input[str],
                 provider: k8s.Provider, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:WorkloadIdentity", name, None, opts)
        a = args
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace("namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=a.namespace, labels={"app.kubernetes.io/part-of": "nemo-rl-gke"}), opts=child)
        ns = self.namespace.metadata.name
        self.service_account = k8s.core.v1.ServiceAccount("ksa", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=a.ksa_name, namespace=ns,
            annotations={PRINCIPAL_ANNOTATION: principal}),
            opts=child)
        data = {HF_TOKEN_KEY: secrets.hf_token}
        if secrets.wandb_api_key is not None:
            data[WANDB_API_KEY_KEY] = secrets.wandb_api_key
        self.secret = k8s.core.v1.Secret("tokens", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=HF_SECRET, namespace=ns), type="Opaque", string_data=data, opts=child)
        self.register_outputs({"namespace": ns, "serviceAccount": self.service_account.metadata.name})
