"""WeightsPrefetch: a Job on the CPU pool that fills the Hugging Face cache on Lustre with the recipe's model
(at its pinned revision), as soon as the Lustre volume exists. Its spec, and where and how it runs:
workloads/manifests/prefetch_job.py.

Pulumi waits for the Job (pulumi-kubernetes awaits a batch/v1 Job until it completes or fails, PR #633) with a
custom create/update timeout sized for the download (core.prefetch.job_timeout_seconds; the provider's default
gives up after 10 minutes). `pulumi.com/replaceUnready: "true"`: a Job that failed (the Pulumi registry's kubernetes
batch/v1 Job page: a failed Job reruns only if it changes or carries this annotation) is replaced on the next `pulumi
up`, which resumes the download. The annotation `nemo-rl-gke/download-bytes` tells the critical-path report what it
downloads.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from workloads.manifests.prefetch_job import WeightsPrefetchArgs, job_spec

__all__ = ["WeightsPrefetch", "WeightsPrefetchArgs"]


class WeightsPrefetch(pulumi.ComponentResource):
    job: k8s.batch.v1.Job

    def __init__(
        self,
        name: str,
        args: WeightsPrefetchArgs,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        needs: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:WeightsPrefetch", name, None, opts)
        a = args
        timeout = f"{a.timeout_seconds // 60}m"
        self.job = k8s.batch.v1.Job(
            "prefetch",
            metadata={
                "name": a.name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke", "nemo-rl-gke/role": "weights-prefetch"},
                "annotations": {
                    "pulumi.com/replaceUnready": "true",
                    catalog.DOWNLOAD_BYTES_ANNOTATION: str(a.download_bytes),
                    catalog.PREFETCH_MARKER_ANNOTATION: a.plan.marker,
                },
            },
            spec=job_spec(a),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # The pod mounts the PVC, the scripts ConfigMap and the token Secret.
                depends_on=list(needs),
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        self.marker = a.plan.marker
        self.model_path = a.plan.model_path
        self.register_outputs({"marker": a.plan.marker, "modelPath": a.plan.model_path})
