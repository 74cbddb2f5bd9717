"""The Managed Lustre instance and its rules (tier table, filesystem name)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from core import catalog
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    DELETES_DATA,
    IN_PLACE,
    LUSTRE_PROTECTED,
    PLATFORM,
    REFUSED_BY_ENGINE,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

# Managed Lustre filesystem names: 1-8 letters or digits (Managed Lustre "Create a Managed Lustre instance",
# https://cloud.google.com/managed-lustre/docs/create-instance).
_FILESYSTEM = re.compile(r"^[A-Za-z0-9]{1,8}$")


class LustreSettings(Section):
    """The Managed Lustre instance."""

    capacity_gib: int = setting(
        18000,
        key="lustreCapacityGib",
        description="Capacity in GiB (valid for the tier).",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "Instance lustre",
                "PersistentVolume lustre-pv",
                "PersistentVolume *-lustre-pv",
                "Dashboard dashboard",
                "RayJob rayjob",
            ),
            note="grows in place; the readiness gate's expected Lustre throughput is in the RayJob",
        ),
        bad=(1, 20000),
        alternatives=({"lustreCapacityGib": 36000},),
    )
    tier: int = setting(
        500,
        key="lustreTier",
        description="Throughput tier in MB/s per TiB: 125, 250, 500 or 1000.",
        owner=PLATFORM,
        day_two=DayTwo(
            DELETES_DATA,
            where={LUSTRE_PROTECTED: REFUSED_BY_ENGINE},
            touches=(
                "Instance lustre",
                "PersistentVolume lustre-pv",
                "PersistentVolume *-lustre-pv",
                "Dashboard dashboard",
                "RayJob rayjob",
            ),
            note="the tier cannot change after creation: the Lustre instance is replaced delete-first",
        ),
        bad=(7,),
        alternatives=(
            {"lustreTier": 1000, "lustreCapacityGib": 18000},
            {"lustreTier": 500, "lustreCapacityGib": 18000},
        ),
    )
    filesystem: str = setting(
        "lustrefs",
        key="lustreFilesystem",
        description="Filesystem name (1-8 letters or digits).",
        owner=PLATFORM,
        day_two=DayTwo(
            DELETES_DATA,
            where={LUSTRE_PROTECTED: REFUSED_BY_ENGINE},
            touches=("Instance lustre", "PersistentVolume lustre-pv", "PersistentVolume *-lustre-pv"),
            note="the Lustre instance (and every checkpoint) is replaced delete-first",
        ),
        bad=("lustre-fs",),
        alternatives=({"lustreFilesystem": "ckptfs"},),
    )
    root_squash: bool = setting(
        True,
        key="lustreRootSquash",
        description=(
            "Squash root to nobody for every Lustre client outside the cluster's nodes (the primary subnet keeps root: "
            "the NeMo-RL image runs as root). Changing it updates the instance in place."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Instance lustre",)),
        bad=("maybe",),
        alternatives=({"lustreRootSquash": False},),
    )
    port_mode: Literal["modern", "legacy"] = setting(
        "modern",
        key="lustrePortMode",
        description=(
            "modern: port 988, needs GKE >= 1.33.2-gke.4780000; legacy: instance with GKE support on 6988 and the "
            "cluster's legacy Lustre port. Drives both sides."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster", "Firewall lustre-ingress", "Instance lustre")),
        bad=("x",),
        alternatives=({"lustrePortMode": "legacy"},),
    )

    @property
    def tier_info(self) -> catalog.LustreTier:
        return catalog.LUSTRE_TIERS[self.tier]

    @property
    def gke_support_enabled(self) -> bool:
        return self.port_mode == "legacy"

    @property
    def port(self) -> int:
        return catalog.LUSTRE_LEGACY_PORT if self.port_mode == "legacy" else catalog.LUSTRE_PORT

    @property
    def throughput_bytes_per_s(self) -> float:
        return self.tier_info.throughput_bytes_per_s(self.capacity_gib)


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    lu = s.lustre
    tier = catalog.LUSTRE_TIERS.get(lu.tier)
    if tier is None:
        p.append(
            f"{key('lustreTier')}: {lu.tier} is not a tier; valid: "
            f"{', '.join(str(t) for t in sorted(catalog.LUSTRE_TIERS))} (MB/s per TiB)"
        )
    elif not tier.is_valid_capacity(lu.capacity_gib):
        nxt = tier.next_valid_capacity(lu.capacity_gib)
        hint = f"; the next valid capacity is {nxt}" if nxt else f"; the maximum is {tier.max_gib}"
        p.append(
            f"{key('lustreCapacityGib')}: {lu.capacity_gib} GiB is not valid for tier {lu.tier} "
            f"(min {tier.min_gib}, step {tier.step_gib} up to {tier.step_until_gib}, then "
            f"{tier.large_step_gib}, max {tier.max_gib}){hint}"
        )
    if not _FILESYSTEM.match(lu.filesystem):
        p.append(f"{key('lustreFilesystem')}: {lu.filesystem!r} must be 1-8 letters or digits")
    return p


def valid(s: "UncheckedSettings") -> bool:
    """True when the tier exists and the capacity is valid for it (rules that use the throughput need it)."""
    tier = catalog.LUSTRE_TIERS.get(s.lustre.tier)
    return tier is not None and tier.is_valid_capacity(s.lustre.capacity_gib)
