"""The Managed Lustre instance that holds the HF cache, datasets and checkpoints.

One port-mode setting drives both sides (Managed Lustre CSI driver, "Lustre communication ports":
https://cloud.google.com/managed-lustre/docs/lustre-csi-driver-new-volume): `legacy` creates the instance with GKE
support (LNet on 6988) and the cluster turns on `enable_legacy_lustre_port`; `modern` does neither. The seeds' codelab
sets only the instance side, which cannot mount.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import pulumi
import pulumi_gcp as gcp

from core import catalog
from core.catalog import replacements
from core.naming import resource_labels
from core.settings import Settings

# Creating an instance takes 10-15 min and deleting a full one can take as long; the provider default is 20 min.
TIMEOUT = "75m"


def mount_ip(mount_point: str) -> str:
    """`10.16.0.2@tcp:/lustrefs` -> `10.16.0.2`: the CSI driver wants the address before `@`."""
    return mount_point.split("@", 1)[0]


def destroy_options(on_destroy: str) -> dict:
    """Pulumi resource options for what `pulumi destroy` may do to the instance holding checkpoints."""
    return {"protect": on_destroy == "protect", "retain_on_delete": on_destroy == "retain"}


@dataclass(frozen=True)
class LustreArgs:
    project: str
    instance_id: str
    zone: str
    capacity_gib: int
    tier: int  # MB/s per TiB
    filesystem: str
    gke_support_enabled: bool  # legacy port mode (LNet on 6988)
    on_destroy: Literal["protect", "retain", "delete"]
    labels: dict[str, str]
    # Root squash for every client but these ranges (the nodes' primary subnet); () = no access rules.
    no_squash_ranges: tuple[str, ...] = ()
    # lustreAdopt: import the instance a retained destroy kept (its provider id) instead of creating it.
    adopt_id: Optional[str] = None

    @classmethod
    def of(cls, s: Settings) -> "LustreArgs":
        return cls(
            project=s.gcp_project,
            instance_id=s.names.lustre_instance,
            zone=s.zone,
            capacity_gib=s.lustre.capacity_gib,
            tier=s.lustre.tier,
            filesystem=s.lustre.filesystem,
            gke_support_enabled=s.lustre.gke_support_enabled,
            on_destroy=s.teardown.lustre_on_destroy,
            labels=resource_labels(s.stack_name),
            no_squash_ranges=(s.network.primary_subnet_cidr,) if s.lustre.root_squash else (),
            adopt_id=(
                replacements.import_id(
                    "gcp:lustre/instance:Instance", project=s.gcp_project, zone=s.zone, name=s.names.lustre_instance
                )
                if s.teardown.lustre_adopt
                else None
            ),
        )


def access_rules(no_squash_ranges: tuple[str, ...]) -> Optional[gcp.lustre.InstanceAccessRulesOptionsArgs]:
    """Root squash for everyone but `no_squash_ranges` (catalog: LUSTRE_NO_SQUASH_RULE, why the nodes keep root)."""
    if not no_squash_ranges:
        return None
    return gcp.lustre.InstanceAccessRulesOptionsArgs(
        default_squash_mode="ROOT_SQUASH",
        default_squash_uid=catalog.LUSTRE_SQUASH_ID,
        default_squash_gid=catalog.LUSTRE_SQUASH_ID,
        access_rules=[
            gcp.lustre.InstanceAccessRulesOptionsAccessRuleArgs(
                name=catalog.LUSTRE_NO_SQUASH_RULE, ip_address_ranges=list(no_squash_ranges), squash_mode="NO_SQUASH"
            )
        ],
    )


class LustreFilesystem(pulumi.ComponentResource):
    instance: gcp.lustre.Instance
    ip: pulumi.Output[str]
    volume_handle: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: LustreArgs,
        network: gcp.compute.Network,
        connection: gcp.servicenetworking.Connection,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:infra:LustreFilesystem", name, None, opts)
        a = args
        self.instance = gcp.lustre.Instance(
            "lustre",
            gcp.lustre.InstanceArgs(
                project=a.project,
                instance_id=a.instance_id,
                location=a.zone,
                capacity_gib=str(a.capacity_gib),
                per_unit_storage_throughput=str(a.tier),
                filesystem=a.filesystem,
                network=network.id,
                gke_support_enabled=a.gke_support_enabled,
                access_rules_options=access_rules(a.no_squash_ranges),
                labels=dict(a.labels),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                # The instance takes addresses from the PSA range: it cannot be created before the peering
                # exists, and nothing in its inputs refers to the connection.
                depends_on=[connection],
                custom_timeouts=pulumi.CustomTimeouts(create=TIMEOUT, update=TIMEOUT, delete=TIMEOUT),
                # `instance_id` is not auto-named, so a create-first replacement (the bridge's default here)
                # would meet the instance it replaces (409). A replacement can only be delete-first; with
                # `protect` the engine refuses it, with `delete` it deletes the checkpoints
                # (core/catalog/replacements.py, the offline diff and the preview summary say so).
                delete_before_replace=True,
                import_=a.adopt_id,
                **destroy_options(a.on_destroy),
            ),
        )
        # mount_point is only set once the instance is ACTIVE: the provider waits for the create operation,
        # so the IP is never read early (the codelab's bug after `--async`).
        self.ip = self.instance.mount_point.apply(mount_ip)
        # The Lustre CSI driver's volume handle: <project>/<location>/<instance id>.
        self.volume_handle = pulumi.Output.all(
            self.instance.project, self.instance.location, self.instance.instance_id
        ).apply(lambda v: "/".join(v))
        self.register_outputs({"instance": self.instance.instance_id, "ip": self.ip})
