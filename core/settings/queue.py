"""The GPU queue: whether Kueue admits the platform's and its experiments' Ray jobs (`queue`), and a job's priority in
that queue (`jobPriority`). The objects and what a queued Ray object carries: workloads/kueue.py and
workloads/manifests/kueue.py; the facts and their sources: core/catalog/kueue.py, docs/research/kueue.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from core import catalog
from core.keys import key
from core.settings.base import Section
from core.settings.record import BOTH, IN_PLACE, PLATFORM, STOPS_THE_JOB, Condition, DayTwo, setting

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

# A stack whose platform queues its jobs (an experiment stack has its platform's value of `queue`).
QUEUED = Condition("where queue is kueue", lambda s, _c: s.queue.queue == "kueue")
UNQUEUED = Condition("where queue is none (no label is rendered)", lambda s, _c: s.queue.queue != "kueue")


class QueueSettings(Section):
    """Admission of the Ray jobs through Kueue, and their priorities."""

    queue: Literal["none", "kueue"] = setting(
        "none",
        key="queue",
        description=(
            f"kueue: the platform declares a Kueue queue (ResourceFlavors, one ClusterQueue whose GPU quota is "
            f"gpuNodes x GPUs per node, WorkloadPriorityClasses, LocalQueues) and every RayJob and the standing "
            f"RayCluster wait in it, admitted whole or not at all; the cluster admin installs Kueue "
            f"{catalog.KUEUE_SUPPORTED_MINOR}.x first (docs/operations.md), which the preview checks. none: no queue, "
            "jobs start when created."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "Namespace namespace",
                "Namespace *-namespace",  # the experiments' namespaces carry the queue label too
                "NodePool cpu",
                "ResourceFlavor kueue-*",
                "ClusterQueue kueue-*",
                "LocalQueue kueue-*",
                "WorkloadPriorityClass kueue-*",
                "RayJob rayjob",
                "RayCluster raycluster",
                "Dashboard dashboard",
            ),
            note=(
                "a job's queue label cannot change while it runs (Kueue validation.go:180-187): the RayJob and the "
                "RayCluster are replaced; with kueue the platform's own job runs own-cluster"
            ),
        ),
        bad=("slurm",),
        alternatives=({"queue": "kueue"}, {"queue": "none"}),
    )
    priority: Literal["low", "normal", "high"] = setting(
        "normal",  # catalog.KUEUE_DEFAULT_PRIORITY
        key="jobPriority",
        description=(
            "The job's WorkloadPriorityClass in the platform's queue: a pending job of higher priority is admitted "
            "first and may preempt a running job of lower priority, which resumes from its newest checkpoint when "
            "admitted again (docs/operations.md). Without the queue nothing is rendered."
        ),
        owner=BOTH,
        day_two=DayTwo(
            IN_PLACE,
            touches=("RayJob rayjob", "RayCluster raycluster"),
            note="the priority label of a queued job changes in place (Kueue refuses only its removal)",
        ),
        bad=("urgent",),
        alternatives=({"jobPriority": "high"},),
    )


def check(s: "UncheckedSettings") -> list[str]:
    return []


def warnings(s: "UncheckedSettings") -> list[str]:
    """Runnable but surprising queue settings, shown by `pulumi preview`."""
    q = s.queue
    out = []
    if q.queue != "kueue" and q.priority != catalog.KUEUE_DEFAULT_PRIORITY:
        out.append(
            f"{key('jobPriority')}: {q.priority} has no effect: the platform has no queue ({key('queue')} is none)"
        )
    if q.queue == "kueue" and s.job.enabled and s.job.mode == "standing-cluster":
        out.append(
            f"{key('jobMode')}: a standing-cluster RayJob is not queued (Kueue does not manage a RayJob with "
            "clusterSelector); its GPUs are the standing RayCluster's workers, which hold their quota for as long as "
            "they exist: experiments wait until they are removed. own-cluster queues the job itself"
        )
    return out
