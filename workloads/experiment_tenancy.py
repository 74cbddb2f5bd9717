"""ExperimentTenancy: what a platform creates for one experiment it hosts (setting `experiments`), so that the
experiment's own stack needs no cluster-wide right and meets nothing of another experiment's.

In the namespace `<platform namespace>-<experiment>` (core.naming.ExperimentNames):
- the namespace itself, labelled with the experiment (the admission policy reads the label:
  workloads/experiment_admission.py) and with Pod Security `privileged` enforced (the GPU workers mount the node's
  driver and gIB libraries; the admission policy narrows that to those two paths, read-only) and `restricted` warned
  and audited;
- the Ray pods' service account (no Google grant), the export's own, whose Workload Identity principal the
  experiment stack grants write on its own export folder (infra/experiment_export.py), and the data staging Job's,
  whose principal it grants read on its own gs:// training data (infra/data_access.py);
- a PersistentVolume for the platform's Lustre instance with the platform PV's volumeHandle, and its claim: the CSI
  driver stages one filesystem once per node, and several PVs share that staging only with one volumeHandle
  (core/catalog/tenancy.py); the pods' `subPath` gives each experiment its own directories;
- NetworkPolicies: default deny both ways, Ray's ports open only among the namespace's own Ray pods
  (workloads/manifests/network_policy.py selects pods of the policy's own namespace), DNS, and the egress an
  experiment needs (`experiment_policies`: its prefetch to Hugging Face and PyPI, its head to the Hub and W&B, its
  export to Cloud Storage, its data staging Job to the Hub and, for gs:// data, the metadata server and Cloud
  Storage), which the platform's contract publishes so an experiment that needs more is refused;
- a Role for the experiment's principals with exactly what its `pulumi up` creates and reads, and their RoleBinding
  (workloads/manifests/tenancy.py);
- where the platform queues its RayJobs (`queue: kueue`), the namespace's queue label, which the platform's
  ClusterQueue selects; its LocalQueue is the platform queue's (workloads/kueue.py KueueQueue), declared after Kueue's
  release check and this namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from core.naming import LUSTRE_PVC, ExperimentNames
from core.settings import Settings
from core.settings.security import dashboard_peers
from workloads.lustre_volume import LustreInstanceRef
from workloads.manifests import kueue
from workloads.manifests.network_policy import PolicyArgs, fqdn_policies, network_policies
from workloads.manifests.rdma import rdma_pod_mixin
from workloads.manifests.tenancy import (
    LustreClaim,
    experimenter_role,
    experimenter_role_binding,
    lustre_pv_spec,
    namespace_manifest,
)
from workloads.workload_identity import PRINCIPAL_ANNOTATION, enforce_level


def experiment_policies(s: Settings, namespace: str) -> PolicyArgs:
    """What an experiment namespace's pods may reach: the Ray nodes among themselves, DNS, and what any experiment
    needs. Its GPU workers reach no Hub: they mount the shared cache read-only, so an experiment prefetches
    (core/settings/platform.py egress_problems refuses one that does not); its prefetch runs the pinned Python image
    (the only one the admission policy lets write the cache), which installs its client from PyPI. Its data staging
    Job may read gs:// data (the platform cannot know which experiment will): the metadata server and Cloud Storage
    are open to that Job's pods only, and only its own principal holds a read grant (infra/data_access.py)."""
    return PolicyArgs(
        namespace=namespace,
        dashboard_peers=dashboard_peers(s),
        head_wandb=True,
        head_hub=True,
        workers_hub=False,
        prefetch=True,
        prefetch_pypi=True,
        export_job=True,
        staging=True,
        staging_storage=True,
        fqdn=s.security.egress_fqdn_policies,
    )


@dataclass(frozen=True)
class ExperimentTenancyArgs:
    experiment: str
    namespace: str
    principals: tuple[str, ...]
    psa_enforce: str
    ksa_name: str
    export_ksa: str
    data_ksa: str
    pv_name: str
    capacity_gib: int
    role_name: str
    policies: PolicyArgs
    # The platform's queue plan where it queues (`queue: kueue`): the namespace carries the label its ClusterQueue
    # selects. None: no queue label.
    queue: Optional[kueue.QueuePlan] = None

    @classmethod
    def of(cls, s: Settings, experiment: str, queue: Optional[kueue.QueuePlan] = None) -> "ExperimentTenancyArgs":
        names = ExperimentNames(s.names, s.storage.namespace, experiment)
        return cls(
            experiment=experiment,
            namespace=names.namespace,
            principals=tuple(s.tenancy.experiments[experiment]),
            psa_enforce=enforce_level(rdma_pod_mixin(s.gpu.accelerator, s.workload.release).volumes),
            ksa_name=s.storage.ksa_name,
            export_ksa=names.export_ksa,
            data_ksa=names.data_ksa,
            pv_name=names.lustre_pv,
            capacity_gib=s.lustre.capacity_gib,
            role_name=names.role,
            policies=experiment_policies(s, names.namespace),
            queue=queue,
        )


class ExperimentTenancy(pulumi.ComponentResource):
    args: ExperimentTenancyArgs
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    export_service_account: k8s.core.v1.ServiceAccount
    data_service_account: k8s.core.v1.ServiceAccount
    pv: k8s.core.v1.PersistentVolume
    pvc: k8s.core.v1.PersistentVolumeClaim

    def __init__(
        self,
        name: str,
        args: ExperimentTenancyArgs,
        lustre: LustreInstanceRef,
        export_principal: pulumi.Input[str],
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
        data_principal: Optional[pulumi.Input[str]] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:ExperimentTenancy", name, None, opts)
        a = self.args = args
        e = a.experiment  # children are named after it: one component per experiment, their URNs apart
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        m = namespace_manifest(
            a.namespace, e, a.psa_enforce, kueue.queue_namespace_labels() if a.queue is not None else None
        )
        self.namespace = k8s.core.v1.Namespace(
            f"{e}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(**m["metadata"]), opts=child
        )
        ns = self.namespace.metadata.name
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{e}-ksa", metadata=k8s.meta.v1.ObjectMetaArgs(name=a.ksa_name, namespace=ns), opts=child
        )
        self.export_service_account = k8s.core.v1.ServiceAccount(
            f"{e}-export-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.export_ksa, namespace=ns, annotations={PRINCIPAL_ANNOTATION: export_principal}
            ),
            opts=child,
        )
        # No Pod mounts its token (the staging Job sets automountServiceAccountToken false): the GCS FUSE sidecar
        # takes its Workload Identity token from the metadata server.
        self.data_service_account = k8s.core.v1.ServiceAccount(
            f"{e}-data-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.data_ksa,
                namespace=ns,
                annotations={PRINCIPAL_ANNOTATION: data_principal} if data_principal is not None else None,
            ),
            automount_service_account_token=False,
            opts=child,
        )
        claim = LustreClaim(pv_name=a.pv_name, namespace=a.namespace, capacity_gib=a.capacity_gib)
        spec = lustre_pv_spec(claim)
        self.pv = k8s.core.v1.PersistentVolume(
            f"{e}-lustre-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=a.pv_name),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                capacity=spec["capacity"],
                access_modes=spec["accessModes"],
                persistent_volume_reclaim_policy=spec["persistentVolumeReclaimPolicy"],
                volume_mode=spec["volumeMode"],
                storage_class_name=spec["storageClassName"],
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=ns, name=LUSTRE_PVC),
                # The platform PV's volumeHandle: one staging per node for every experiment (catalog.tenancy).
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=catalog.LUSTRE_CSI_DRIVER,
                    volume_handle=lustre.volume_handle,
                    volume_attributes={"ip": lustre.ip, "filesystem": lustre.filesystem},
                ),
            ),
            opts=child,
        )
        self.pvc = k8s.core.v1.PersistentVolumeClaim(
            f"{e}-lustre-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=LUSTRE_PVC, namespace=ns),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=spec["accessModes"],
                storage_class_name="",
                volume_name=self.pv.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests=spec["capacity"]),
            ),
            # As the platform's claim (workloads/lustre_volume.py): a static claim's request cannot grow.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["spec.resources"])),
        )
        self.network_policies: list[pulumi.Resource] = []
        for p in network_policies(a.policies):
            self.network_policies.append(
                k8s.networking.v1.NetworkPolicy(
                    f"{e}-netpol-{p['metadata']['name']}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=p["metadata"]["name"], namespace=ns, labels=p["metadata"]["labels"]
                    ),
                    spec=p["spec"],
                    opts=child,
                )
            )
        for p in fqdn_policies(a.policies):
            self.network_policies.append(
                k8s.apiextensions.CustomResource(
                    f"{e}-fqdnpol-{p['metadata']['name']}",
                    api_version=p["apiVersion"],
                    kind=p["kind"],
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=p["metadata"]["name"], namespace=ns, labels=p["metadata"]["labels"]
                    ),
                    spec=p["spec"],
                    opts=child,
                )
            )
        role = experimenter_role(a.role_name, a.namespace)
        self.role = k8s.rbac.v1.Role(
            f"{e}-experimenter-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=a.role_name, namespace=ns, labels=role["metadata"]["labels"]),
            rules=role["rules"],
            opts=child,
        )
        self.role_binding = None
        if a.principals:
            binding = experimenter_role_binding(a.role_name, a.namespace, a.principals)
            self.role_binding = k8s.rbac.v1.RoleBinding(
                f"{e}-experimenter-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=a.role_name, namespace=ns, labels=binding["metadata"]["labels"]
                ),
                role_ref=binding["roleRef"],
                subjects=binding["subjects"],
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.role])),
            )
        self.register_outputs({"namespace": ns})
