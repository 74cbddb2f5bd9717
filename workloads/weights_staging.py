"""WeightsStaging (weightsPath bucket-import): the staging Job, which copies the recipe's model into the bucket while
Lustre is created, and the import Job, which brings it into Lustre with Managed Lustre's importData, each with its
own Kubernetes service account. Their specs and reasons: workloads/manifests/weights_staging.py and core/weights.py;
the Google Cloud side (the staging folder, the grants, the import's identity): infra/weights_staging.py.

Pulumi waits for both Jobs (a batch/v1 Job is awaited until it completes or fails) with custom timeouts sized from
the bytes (core/weights.py), and `pulumi.com/replaceUnready: "true"` replaces a failed one on the next `pulumi up`
(the Pulumi registry's kubernetes batch/v1 Job page), which resumes: the staging keeps the files it completed and the
import is incremental. The annotations `nemo-rl-gke/download-bytes` and `nemo-rl-gke/import-bytes` tell the
critical-path report what each moves.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from workloads.manifests.weights_staging import WeightsStagingArgs, import_job_spec, stage_job_spec

__all__ = ["WeightsStaging", "WeightsStagingArgs"]

# The Google service account a Kubernetes service account acts as under Workload Identity (GKE "Authenticate to Google
# Cloud APIs from GKE workloads", linking Kubernetes ServiceAccounts to IAM service accounts).
GSA_ANNOTATION = "iam.gke.io/gcp-service-account"
PRINCIPAL_ANNOTATION = "nemo-rl-gke/workload-identity-principal"


def _minutes(seconds: int) -> str:
    return f"{-(-seconds // 60)}m"


class WeightsStaging(pulumi.ComponentResource):
    stage_job: k8s.batch.v1.Job
    import_job: k8s.batch.v1.Job

    def __init__(
        self,
        name: str,
        args: WeightsStagingArgs,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        *,
        stage_principal: pulumi.Input[str],
        import_account_email: pulumi.Input[str],
        stage_needs: Sequence[pulumi.Resource],
        import_needs: Sequence[pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:WeightsStaging", name, None, opts)
        a = args
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke"}
        stage_ksa = k8s.core.v1.ServiceAccount(
            "stage-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.stage_name,
                namespace=namespace,
                labels=labels,
                annotations={PRINCIPAL_ANNOTATION: stage_principal},
            ),
            opts=child,
        )
        import_ksa = k8s.core.v1.ServiceAccount(
            "import-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.import_name,
                namespace=namespace,
                labels=labels,
                annotations={GSA_ANNOTATION: import_account_email},
            ),
            opts=child,
        )
        stage_timeout, import_timeout = _minutes(a.stage_timeout_seconds), _minutes(a.import_timeout_seconds)
        self.stage_job = k8s.batch.v1.Job(
            "stage",
            metadata={
                "name": a.stage_name,
                "namespace": namespace,
                "labels": {**labels, "nemo-rl-gke/role": "weights-stage"},
                "annotations": {
                    "pulumi.com/replaceUnready": "true",
                    catalog.DOWNLOAD_BYTES_ANNOTATION: str(a.plan.download_bytes),
                },
            },
            spec=stage_job_spec(a),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # The Secret, the scripts and its grants (its GCS FUSE sidecar mounts with them); never Lustre.
                depends_on=[stage_ksa, *stage_needs],
                custom_timeouts=pulumi.CustomTimeouts(create=stage_timeout, update=stage_timeout),
            ),
        )
        self.import_job = k8s.batch.v1.Job(
            "import",
            metadata={
                "name": a.import_name,
                "namespace": namespace,
                "labels": {**labels, "nemo-rl-gke/role": "weights-import"},
                "annotations": {
                    "pulumi.com/replaceUnready": "true",
                    catalog.IMPORT_BYTES_ANNOTATION: str(a.plan.download_bytes),
                },
            },
            spec=import_job_spec(a),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # After the staging's run (Pulumi awaits it), the instance and the import's grants.
                depends_on=[import_ksa, self.stage_job, *import_needs],
                custom_timeouts=pulumi.CustomTimeouts(create=import_timeout, update=import_timeout),
            ),
        )
        self.register_outputs({"source": a.plan.gcs_source, "modelPath": a.plan.model_path})
