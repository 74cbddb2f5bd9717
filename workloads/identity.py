"""The workload's namespace, its Kubernetes service account, the token Secrets and the namespace's
NetworkPolicies.

The bucket grant (infra/bucket.py, wired in __main__.py) names this service account directly as a Workload
Identity principal, so no Google service account or `iam.gke.io/gcp-service-account` annotation is involved;
the principal is recorded as an annotation so `kubectl describe sa` shows what it may access.

Token values stay Pulumi secrets end to end and reach pods only as read-only files (workloads/pod_security.py):
the Secret holds the Hugging Face token as is and the W&B key as the netrc entry wandb reads; the Ray auth token
(releases with Ray token authentication) has a Secret of its own. The NetworkPolicies
(workloads/network_policy.py) deny ingress by default and open only the workload's own paths.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core.naming import HF_SECRET, HF_TOKEN_KEY, RAY_AUTH_SECRET, RAY_AUTH_TOKEN_KEY, WANDB_NETRC_KEY
from core.settings import Secrets, Settings
from core.settings.security import token_auth_enabled
from workloads.network_policy import PolicyArgs, network_policies
from workloads.pod_security import wandb_netrc

PRINCIPAL_ANNOTATION = "nemo-rl-gke/workload-identity-principal"


@dataclass(frozen=True)
class WorkloadIdentityArgs:
    namespace: str
    ksa_name: str
    dashboard_peers: tuple[str, ...]
    ray_token_auth: bool

    @classmethod
    def of(cls, s: Settings) -> "WorkloadIdentityArgs":
        return cls(namespace=s.storage.namespace, ksa_name=s.storage.ksa_name,
                   dashboard_peers=tuple(s.security.ray_dashboard_peers), ray_token_auth=token_auth_enabled(s))


class WorkloadIdentity(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    secret: k8s.core.v1.Secret
    ray_auth_secret: Optional[k8s.core.v1.Secret]
    network_policies: list[k8s.networking.v1.NetworkPolicy]

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
            data[WANDB_NETRC_KEY] = pulumi.Output.secret(secrets.wandb_api_key).apply(wandb_netrc)
        self.secret = k8s.core.v1.Secret("tokens", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=HF_SECRET, namespace=ns), type="Opaque", string_data=data, opts=child)
        self.ray_auth_secret = None
        if a.ray_token_auth and secrets.ray_auth_token is not None:
            self.ray_auth_secret = k8s.core.v1.Secret("ray-auth", metadata=k8s.meta.v1.ObjectMetaArgs(
                name=RAY_AUTH_SECRET, namespace=ns), type="Opaque",
                string_data={RAY_AUTH_TOKEN_KEY: secrets.ray_auth_token}, opts=child)
        self.network_policies = []
        for m in network_policies(PolicyArgs(namespace=a.namespace, dashboard_peers=a.dashboard_peers)):
            self.network_policies.append(k8s.networking.v1.NetworkPolicy(
                f"netpol-{m['metadata']['name']}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=m["metadata"]["name"], namespace=ns,
                                                    labels=m["metadata"]["labels"]),
                spec=m["spec"], opts=child))
        self.register_outputs({"namespace": ns, "serviceAccount": self.service_account.metadata.name})
