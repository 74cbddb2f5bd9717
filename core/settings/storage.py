"""The training bucket and the workload identity that may use it; Kubernetes names and their rules."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from core.gcp_rules import namespace_problems
from core.keys import key
from core.settings.base import Section
from core.settings.record import (
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_API,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

# Kubernetes object names that are DNS labels (RFC 1123), at most 63 characters.
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class StorageSettings(Section):
    """Bucket and the workload identity that may use it."""

    bucket_name: Optional[str] = setting(
        None,
        key="bucketName",
        description="Bucket name (global); default: <prefix>-<gcp project>.",
        owner=PLATFORM,
        rule="core.gcp_rules",
        day_two=DayTwo(
            REFUSED_BY_API,
            where={ON_EXPERIMENT: SAFE_REPLACEMENT},
            touches=(
                "Bucket bucket",
                "BucketIAMMember *",
                "Folder *",
                "ManagedFolder*",
                "Job export",
                "Job stage",  # weightsPath bucket-import: the staging writes into the bucket, the import reads it
                "Job import",
            ),
            note=(
                "the bucket is replaced delete-first and its delete refused while it holds exports (it is never "
                "force-deleted); an experiment only points its export Job at the other bucket"
            ),
        ),
        bad=("$x", "-1"),
        alternatives=({"bucketName": "nemo-other-ckpt-bucket"},),
    )
    namespace: str = setting(
        "nemo-rl",
        key="namespace",
        description="Kubernetes namespace of the workload.",
        owner=PLATFORM,
        rule="core.gcp_rules",
        day_two=DayTwo(STOPS_THE_JOB, touches=("*",), note="every namespaced object, and what names it"),
        bad=("kube-system", "NeMo"),
        alternatives=({"namespace": "nemo-rl2"},),
    )
    ksa_name: str = setting(
        "nemo-rl-runner",
        key="ksaName",
        description=(
            "Kubernetes service account of the Ray pods; it holds no Google grant (the checkpoint export runs as a "
            "CPU Job under the stack's own <prefix>-export service account)."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("ServiceAccount ksa", "ServiceAccount *-ksa", "RayCluster raycluster", "RayJob rayjob"),
        ),
        bad=("Bad_x",),
        alternatives=({"ksaName": "nemo-rl-runner2"},),
    )


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    # The program creates the namespace and deletes it on destroy: never a Kubernetes or GKE system namespace.
    p.extend(namespace_problems(s.storage.namespace))
    if len(s.storage.ksa_name) > 63 or not _K8S_NAME.match(s.storage.ksa_name):
        p.append(
            f"{key('ksaName')}: {s.storage.ksa_name!r} is not a valid Kubernetes name (lowercase RFC 1123 label, <= 63)"
        )
    return p
