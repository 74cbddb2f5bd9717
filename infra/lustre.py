"""The Managed Lustre instance that holds the HF cache, datasets and checkpoints.

One port-mode setting drives both sides (FACTS.md §5): `legacy` creates the instance with GKE support (LNet on
6988) and the cluster turns on `enable_legacy_lustre_port`; `modern` does neither. The seeds' codelab sets only
the instance side, which cannot mount.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_gcp as gcp

from core.settings import Settings

# Creating an instance takes 10-15 min and deleting a full one can take as long; the provider default is 20 min.
TIMEOUT = "75m"


def mount_ip(mount_point: str) -> str:
    """`10.16.0.2@tcp:/lustrefs` -> `10.16.0.2`: the CSI driver wants the address before `@`."""
    return mount_point.split("@", 1)[0]


def destroy_options(on_destroy: str) -> dict:
    """Pulumi resource options for what `pulumi destroy` may do to the instance holding checkpoints."""
    return {"protect": on_destroy == "protect", "retain_on_delete": on_destroy == "retain"}


def keep_with_retained_instance(on_destroy: str) -> dict:
    """Options for what a retained instance needs to stay reachable: its VPC, the PSA range and the peering.
    Deleting them under a retained instance would strand the data behind a VPC that no longer exists."""
    return {"retain_on_delete": on_destroy == "retain"}


class LustreFilesystem(pulumi.ComponentResource):
    instance: gcp.lustre.Instance
    ip: pulumi.Output[str]

    def __init__(self, name: str, settings: Settings, network: gcp.compute.Network,
                 connection: gcp.servicenetworking.Connection, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:LustreFilesystem", name, None, opts)
        s = settings
        self.instance = gcp.lustre.Instance(
            "lustre", gcp.lustre.InstanceArgs(
                instance_id=s.names.lustre_instance, location=s.zone,
                capacity_gib=str(s.lustre.capacity_gib),
                per_unit_storage_throughput=str(s.lustre.tier),
                filesystem=s.lustre.filesystem,
                network=network.id,
                gke_support_enabled=s.lustre.gke_support_enabled,
                labels={"stack": s.stack_name, "app": "nemo-rl-gke"}),
            opts=pulumi.ResourceOptions(
                parent=self,
                # The instance takes addresses from the PSA range: it cannot be created before the peering
                # exists, and nothing in its inputs refers to the connection.
                depends_on=[connection],
                custom_timeouts=pulumi.CustomTimeouts(create=TIMEOUT, update=TIMEOUT, delete=TIMEOUT),
                **destroy_options(s.lustre_on_destroy)))
        # mount_point is only set once the instance is ACTIVE: the provider waits for the create operation,
        # so the IP is never read early (the codelab's bug after `--async`).
        self.ip = self.instance.mount_point.apply(mount_ip)
        self.register_outputs({"instance": self.instance.instance_id, "ip": self.ip})
