"""DataStaging: the Job on the CPU pool that stages and checks the job's datasets on Lustre (its spec and reasons:
workloads/manifests/staging_job.py; what it stages: core/data.py), and, with gs:// data, its own Kubernetes service
account (an experiment's is its platform's: workloads/experiment_tenancy.py).

The RayJob depends on the Job (both job modes): Pulumi creates the RayJob only once the Job has completed
(pulumi-kubernetes awaits a batch/v1 Job until it completes or fails, PR #633), so a dataset that is not there, lacks
a column or has no rows fails `pulumi up` with the Job, from a CPU pod, and no GPU is asked for. The wait is sized by
core.data.staging_timeout_seconds (the provider's default gives up after 10 minutes). `pulumi.com/replaceUnready:
"true"`: a failed Job is replaced on the next `pulumi up` (the Pulumi registry's kubernetes batch/v1 Job page), which
stages again once the data is fixed.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from workloads.manifests.pod_security import ROLE_LABEL, ROLE_STAGING
from workloads.manifests.staging_job import DataStagingArgs, job_spec

__all__ = ["DataStaging", "DataStagingArgs"]


class DataStaging(pulumi.ComponentResource):
    job: k8s.batch.v1.Job
    service_account: Optional[k8s.core.v1.ServiceAccount]

    def __init__(
        self,
        name: str,
        args: DataStagingArgs,
        provider: k8s.Provider,
        needs: Sequence[pulumi.Resource] = (),
        grants: Sequence[pulumi.Resource] = (),
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        """`needs`: what the pod names (the claim, the scripts ConfigMap, the token Secret); `grants`: the read grant on
        the gs:// data, which the GCS FUSE sidecar mounts with."""
        super().__init__("nemo-rl-gke:workloads:DataStaging", name, None, opts)
        a = args
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", ROLE_LABEL: ROLE_STAGING}
        self.service_account = None
        if a.service_account is not None and a.own_service_account:
            # Its own identity: the read grant names this account's Workload Identity principal and no other pod
            # runs as it. No token is mounted anywhere (automountServiceAccountToken false on the pod).
            self.service_account = k8s.core.v1.ServiceAccount(
                "data-ksa",
                metadata={"name": a.service_account, "namespace": a.namespace, "labels": labels},
                automount_service_account_token=False,
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        timeout = f"{a.timeout_seconds // 60}m"
        depends = [*needs, *grants, *([self.service_account] if self.service_account is not None else [])]
        self.job = k8s.batch.v1.Job(
            "data-staging",
            metadata={
                "name": a.name,
                "namespace": a.namespace,
                "labels": labels,
                "annotations": {
                    "pulumi.com/replaceUnready": "true",
                    "nemo-rl-gke/datasets-cache": a.plan["builtin"]["cache"],
                    **({"nemo-rl-gke/staged": a.plan["staged"]["dir"]} if a.plan.get("staged") else {}),
                },
            },
            spec=job_spec(a),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                depends_on=depends,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        self.register_outputs({"name": a.name, "staged": (a.plan.get("staged") or {}).get("dir")})
