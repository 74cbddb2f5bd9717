"""The static Lustre PersistentVolume and its claim, built from the instance's outputs.

Pre-bound both ways (PV.claimRef -> PVC, PVC.volumeName -> PV) so no storage class or provisioner is involved,
and `Retain` so deleting the claim never touches the data. It waits for the instance (its attributes come
from the instance's outputs) and for nothing else on the Google Cloud side.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from core import catalog
from core.naming import LUSTRE_PVC
from core.settings import Settings


class LustreVolume(pulumi.ComponentResource):
    pv: k8s.core.v1.PersistentVolume
    pvc: k8s.core.v1.PersistentVolumeClaim

    def __init__(self, name: str, settings: Settings, instance: gcp.lustre.Instance, ip: pulumi.Output[str],
                 namespace: pulumi.Input[str], provider: k8s.Provider,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:LustreVolume", name, None, opts)
        s = settings
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        capacity = f"{s.lustre.capacity_gib}Gi"
        pv_name = f"{s.prefix}-lustre"
        handle = pulumi.Output.all(instance.project, instance.location, instance.instance_id).apply(
            lambda a: f"{a[0] or s.gcp_project}/{a[1]}/{a[2]}")
        self.pv = k8s.core.v1.PersistentVolume(
            "lustre-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=pv_name),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                capacity={"storage": capacity},
                access_modes=["ReadWriteMany"],
                persistent_volume_reclaim_policy="Retain",
                volume_mode="Filesystem",
                storage_class_name="",
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=namespace, name=LUSTRE_PVC),
                csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
                    driver=catalog.LUSTRE_CSI_DRIVER, volume_handle=handle,
                    volume_attributes={"ip": ip, "filesystem": instance.filesystem})), opts=child)
        self.pvc = k8s.core.v1.PersistentVolumeClaim(
            "lustre-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=LUSTRE_PVC, namespace=namespace),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteMany"], storage_class_name="", volume_name=self.pv.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": capacity})),
            opts=child)
        self.register_outputs({"pv": self.pv.metadata.name, "pvc": self.pvc.metadata.name})
