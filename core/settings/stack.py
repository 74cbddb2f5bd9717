"""Where and under which names everything is created, and what `pulumi destroy` may delete.

Rules: the project id, the region/zone pair (and `gcp:region`, which the provider uses, must agree with
`region`), the names derived from the prefix (every one of them, from core.naming), the bucket name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, Optional

from core import catalog
from core.gcp_rules import bucket_name_problems
from core.keys import key
from core.naming import is_gcp_name
from core.settings.base import Section
from core.settings.record import (
    BOTH,
    DELETES_DATA,
    EXPERIMENT,
    IN_PLACE,
    LUSTRE_PROTECTED,
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_API,
    REFUSED_BY_ENGINE,
    REFUSED_BY_PROGRAM,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
# Project ids: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter
# (https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin).
_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")


class StackSettings(Section):
    """Where and under which names everything is created."""

    prefix: Optional[str] = setting(
        None,
        key="prefix",
        description="Prefix of every cloud resource name (lowercase, starts with a letter). Default: nemo-<stack>.",
        owner=BOTH,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: STOPS_THE_JOB, LUSTRE_PROTECTED: REFUSED_BY_ENGINE},
            touches=("*",),
            note=(
                "every name: the cluster and the Lustre instance are replaced, and the bucket's delete is refused "
                "while it holds exports (bucketName); an experiment's own objects are renamed"
            ),
        ),
        bad=("Bad_x",),
        alternatives=({"prefix": "nemo-x"},),
    )
    region: str = setting(
        "us-central1",
        key="region",
        description="Region of the VPC subnets, cluster and bucket (must equal gcp:region when that is set).",
        owner=PLATFORM,
        day_two=DayTwo(
            REFUSED_BY_API,
            where={LUSTRE_PROTECTED: REFUSED_BY_ENGINE},
            touches=("*",),
            note=(
                "every regional resource, the Lustre instance with them; the bucket's delete is refused while it holds"
                " exports (bucketName)"
            ),
        ),
        bad=("", "Central US"),
        alternatives=(
            {"region": "us-east1", "zone": "us-east1-b", "gcp:region": "us-east1"},
            {"region": "us-central1", "zone": "us-central1-b", "gcp:region": "us-central1"},
        ),
    )
    zone: str = setting(
        "us-central1-b",
        key="zone",
        description="Zone of the GPU nodes, the RoCE network profile and the Lustre instance (in the region).",
        owner=PLATFORM,
        day_two=DayTwo(
            DELETES_DATA,
            where={LUSTRE_PROTECTED: REFUSED_BY_ENGINE},
            touches=(
                "Instance lustre",
                "PersistentVolume lustre-pv",
                "PersistentVolume *-lustre-pv",
                "NodePool *",
                "Network rdma",
                "ComputeClass *",
                "Dashboard dashboard",
                "Job placeholders",
                "RayCluster raycluster",
                "RayJob rayjob",  # an own-cluster job's workers select the zone
                "Job import",  # weightsPath bucket-import: it names the instance by its zone
            ),
            note="the GPU pools, the Lustre instance and the RoCE network are zonal",
        ),
        bad=("uscentral1b", "us-east1-b"),
        alternatives=({"zone": "us-central1-c"}, {"zone": "us-east1-c"}),
        stack_alternatives={"codelab": {"zone": "us-east1-c"}},
    )
    platform_stack: str = setting(
        "",
        key="platformStack",
        description=(
            "Makes this stack an experiment stack: <org>/<project>/<stack> of the platform stack whose cluster, Lustre "
            "and namespace it uses (pulumi.StackReference). It declares only its weights prefetch, its own-cluster "
            'RayJob and its export; platform settings are refused here (docs/operations.md "Platform and experiment '
            'stacks"). Empty: a platform stack.'
        ),
        owner=EXPERIMENT,
        day_two=DayTwo(
            REFUSED_BY_PROGRAM,
            touches=(),
            note="a platform stack's own settings are platform settings, refused on an experiment stack",
        ),
        bad=(
            "nemo-rl-gke/codelab",
            "org/nemo-rl-gke/a b",
            # Pulumi: a stack name has at most 100 characters (core.catalog.PULUMI_STACK_NAME_MAX).
            "org/nemo-rl-gke/" + "s" * 101,
        ),
        alternatives=({"platformStack": "my-org/nemo-rl-gke/platform"},),
    )


class TeardownSettings(Section):
    """What `pulumi destroy` may delete. Explicit in every stack file; the defaults are the safe ones."""

    lustre_on_destroy: Literal["protect", "retain", "delete"] = setting(
        "protect",
        key="lustreOnDestroy",
        description=(
            "What pulumi destroy does to the Lustre instance holding checkpoints: protect (refuse), retain (leave "
            "it, drop it from the state) or delete."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=(
                "Instance lustre",
                "Network primary",
                "GlobalAddress psa-range",
                "Connection psa-connection",
                "Firewall lustre-ingress",
            ),
            note="resource options of the kept set (instance, VPC, PSA range, peering, firewall)",
        ),
        bad=("keep",),
        alternatives=({"lustreOnDestroy": "retain"},),
    )
    cluster_deletion_protection: bool = setting(
        True,
        key="clusterDeletionProtection",
        description="GKE deletion protection: destroy fails until it is turned off.",
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",), note="a field of the cluster"),
        bad=("maybe",),
        alternatives=({"clusterDeletionProtection": False}, {"clusterDeletionProtection": True}),
    )
    lustre_adopt: bool = setting(
        False,
        key="lustreAdopt",
        description=(
            "Coming back after a destroy with lustreOnDestroy retain: import the kept Lustre instance, primary VPC, "
            "PSA range, peering and Lustre firewall instead of creating them (they exist under this stack's names). "
            "Needs lustreOnDestroy retain; can stay set afterwards."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=(
                "Instance lustre",
                "Network primary",
                "GlobalAddress psa-range",
                "Connection psa-connection",
                "Firewall lustre-ingress",
            ),
            note="resource options only: import the kept set, keep it on destroy",
        ),
        bad=("maybe", True),
        alternatives=({"lustreOnDestroy": "retain", "lustreAdopt": True},),
    )


# A fully qualified stack name as `pulumi stack ls --all` prints it and StackReference takes it: <org>/<project>/<stack>
# (https://www.pulumi.com/docs/iac/concepts/stacks/#stackreferences). Stack names: letters, digits, -, _ and .
_STACK_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def platform_stack_problems(value: str, stack_name: str) -> list[str]:
    if not value:
        return []
    if not _STACK_REF.match(value):
        return [
            f"{key('platformStack')}: {value!r} is not <org>/<project>/<stack> (the fully qualified name "
            "`pulumi stack ls --all` prints)"
        ]
    _, project, stack = value.split("/")
    if len(stack) > catalog.PULUMI_STACK_NAME_MAX or len(project) > catalog.PULUMI_PROJECT_NAME_MAX:
        return [
            f"{key('platformStack')}: a Pulumi stack name and a project name have at most "
            f"{catalog.PULUMI_STACK_NAME_MAX} characters each (got {len(project)} and {len(stack)})"
        ]
    if value.rsplit("/", 1)[1] == stack_name:
        return [f"{key('platformStack')}: {value!r} names this stack itself; name the platform stack"]
    return []


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = platform_stack_problems(s.stack.platform_stack, s.stack_name)
    if s.teardown.lustre_adopt and s.teardown.lustre_on_destroy != "retain":
        # Only a retained destroy leaves the set behind; adopting it under protect/delete would import resources
        # that the next destroy deletes or refuses, unlike the kept set it came from.
        p.append(
            f"{key('lustreAdopt')}: adopts what a destroy with {key('lustreOnDestroy')} retain kept; set "
            f"lustreOnDestroy to retain (now {s.teardown.lustre_on_destroy!r}) or unset lustreAdopt"
        )
    if s.gcp_project and not _PROJECT_ID.match(s.gcp_project):
        p.append(
            f"gcp:project: {s.gcp_project!r} is not a valid project id (6-30 lowercase letters, digits, "
            "hyphens, starting with a letter)"
        )

    region_ok = bool(_REGION.match(s.region))
    m = _GCP_ZONE.match(s.zone)
    if not m:
        p.append(f"{key('zone')}: {s.zone!r} is not a zone name like us-central1-b")
    elif region_ok and m.group(1) != s.region:
        p.append(
            f"{key('zone')}: {s.zone!r} is not in region {s.region!r} ({key('region')}); "
            f"use a zone {s.region}-<letter> or set region to {m.group(1)}"
        )
    if not region_ok:
        # Reported once here; the zone and gcp:region are not compared with a region that is not one.
        p.append(f"{key('region')}: {s.region!r} is not a region name like us-central1")
    elif s.gcp_region is not None and s.gcp_region != s.region:
        # The provider creates regional resources without an explicit region in gcp:region; the program
        # passes `region` everywhere, so two different values would split the stack across regions.
        p.append(
            f"gcp:region: {s.gcp_region!r} differs from {key('region')} ({s.region!r}); set both to the "
            "same region or remove gcp:region"
        )

    prefix_ok = s.stack.prefix is None or is_gcp_name(s.stack.prefix, 30)
    if not prefix_ok:
        p.append(
            f"{key('prefix')}: {s.stack.prefix!r} must be lowercase letters, digits and hyphens, start with "
            "a letter, end with a letter or digit, and be at most 30 characters"
        )
    else:
        # An experiment stack creates no Google Cloud resource: only its Kubernetes names must fit.
        gcp_names = {} if s.stack.platform_stack else s.names.all_gcp_names()
        derived = {**gcp_names, **s.names.all_kubernetes_names()}
        for name, (what, max_len) in derived.items():
            if not is_gcp_name(name, max_len):
                p.append(
                    f"{key('prefix')}: derived {what} name {name!r} is invalid or longer than {max_len} "
                    f"characters; choose a shorter prefix (now {s.prefix!r})"
                )
                break
    # Without a project, or with a refused prefix, the default bucket name means nothing (both are reported).
    if s.storage.bucket_name is not None or (s.gcp_project and prefix_ok):
        p.extend(bucket_name_problems(s.bucket_name))
    return p
