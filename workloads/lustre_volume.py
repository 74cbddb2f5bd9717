"""The static Lustre PersistentVolume and its claim, built from the instance's outputs.

Pre-bound both ways (PV.claimRef -> PVC, PVC.volumeName -> PV) so no storage class or provisioner is involved,
and `Retain` so deleting the claim never touches the data. It waits for the instance (its attributes come
from the instance's outputs) and for nothing else on the Google Cloud side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import catalog
from core.naming import LUSTRE_PVC
from core.settings import Settings


@dataclass(frozen=True)
class LustreVolumeArgs:
    pv_name: str
    capacity_gib: int

    @classmethod
    def of(cls, s: Settings) -> "LustreVolumeArgs":
        return cls(pv_name=s.names.lustre_pv, capacity_gib=s.lustre.capacity_gib)


@dataclass(frozen=True)
class LustreInstanceRef:
    """The instance's outputs the volume needs (from infra:LustreFilesystem, wired in __main__.py)."""

    volume_handle: pulumi.Input[str]  # <project>/<zone>/<instance id>
    ip: pulumi.Input[str]  # the mount point's address, before `@`
    filesystem: pulumi.Input[str]


class LustreVolume(pulumi.ComponentResource):
    pv: k8s.core.v1.PersistentVolume
    pvc: k8s.core.v1.PersistentVolumeClaim

    def __init__(
        self,
        name: str,
        args: LustreVolumeArgs,
        instance: LustreInstanceRef,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:LustreVolume", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        capacity = f"{args.capacity_gib}Gi"
        self.pv = k8s.core.v1.PersistentVolume(
            "lustre-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.pv_name),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                capacity={"storage": capacity},
                access_modes=["ReadWriteMany"],
                persistent_volume_reclaim_policy="Retain",
                volume_mode="Filesystem",
                storage_class_name="",
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=namespace, name=LUSTRE_PVC),
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=catalog.LUSTRE_CSI_DRIVER,
                    volume_handle=instance.volume_handle,
                    volume_attributes={"ip": instance.ip, "filesystem": instance.filesystem},
                ),
            ),
            opts=child,
        )
        self.pvc = k8s.core.v1.PersistentVolumeClaim(
            "lustre-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=LUSTRE_PVC, namespace=namespace),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteMany"],
                storage_class_name="",
                volume_name=self.pv.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": capacity}),
            ),
            # The request is the capacity at creation, never updated: Kubernetes refuses to grow a claim that no
            # expandable StorageClass provisioned ("only dynamically provisioned pvc can be resized and the
            # storageclass that provisions the pvc must support resize", kubernetes/kubernetes
            # plugin/pkg/admission/storage/persistentvolume/resize/admission.go), so a lustreCapacityGib increase
            # would fail the `up`. The bound claim gets the PV's capacity, which follows the instance.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["spec.resources"])),
        )
        self.register_outputs({"pv": self.pv.metadata.name, "pvc": self.pvc.metadata.name})
