"""A team platform: which experiments it hosts and who runs each (`experiments`), which experiment an experiment stack
is (`experiment`), and Google Groups for RBAC (`rbacSecurityGroup`).

The platform creates every experiment's namespace `<namespace>-<experiment>` (workloads/experiment_tenancy.py): its
Pod Security labels, service accounts, Lustre claim, network policies, a Role for its principals, and admission that
keeps its pods in their own Lustre directories (docs/security.md "Experiments on one platform"). An experiment stack
names its experiment (default: its stack name) and is refused, before anything is registered, when its platform does
not list it (core/settings/platform.py).

Rules (each problem names its key):
- `experiments`: each name a DNS label whose namespace `<namespace>-<name>` is one too (at most 63 characters) and no
  system namespace; each principal `user:<email>` or `group:<email>`; a group needs Google Groups for RBAC
  (`rbacSecurityGroup`), without which GKE never resolves a user's groups and the binding silently grants nothing.
- `experiment`: only on an experiment stack, a DNS label.
- `rbacSecurityGroup`: `gke-security-groups@<domain>` (core/catalog/tenancy.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from core import catalog
from core.gcp_rules import namespace_problems
from core.keys import key
from core.naming import EXPERIMENT_DATA_KSA, experiment_namespace
from core.settings.base import Section
from core.settings.record import (
    EXPERIMENT,
    IN_PLACE,
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_PROGRAM,
    STOPS_THE_JOB,
    Bad,
    Condition,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
PRINCIPAL = re.compile(r"^(user|group):([^@\s:]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})$")
_SECURITY_GROUP = re.compile(rf"^{catalog.GKE_SECURITY_GROUP_LOCAL_PART}@[a-z0-9.-]+\.[a-z]{{2,}}$")
EXAMPLE_PRINCIPAL = "user:alice@example.com"


# Naming, on an experiment stack, the experiment it already is by default (its stack's name): nothing moves.
SAME_EXPERIMENT = Condition(
    "where it names the experiment the stack already is",
    lambda s, c: bool(s.stack.platform_stack) and c.get("experiment") == (s.tenancy.experiment or s.stack_name),
)


class TenancySettings(Section):
    """Experiments on one platform, and the people who run them."""

    experiments: dict[str, list[str]] = setting(
        default_factory=dict,
        key="experiments",
        description=(
            "The experiments this platform hosts: name -> who runs it (`user:<email>` or `group:<email>`). Each gets "
            "a namespace <namespace>-<name> with its service accounts, Lustre claim (its own directories under "
            "experiments/<name>, the model cache read-only), network policies and a Role for its people; an "
            "experiment stack names one (experiment)."
        ),
        owner=PLATFORM,
        day_two=DayTwo(
            IN_PLACE,
            touches=(
                "Namespace *",
                "ServiceAccount *",
                "PersistentVolume *",
                "PersistentVolumeClaim *",
                "NetworkPolicy *",
                "FQDNNetworkPolicy *",
                "Role *",
                "RoleBinding *",
                "Folder *",
                "ValidatingAdmissionPolicy*",
                "LocalQueue *",
                "Release kuberay",
                "NodePool cpu",
                "ClusterQueue kueue-*",
            ),
            note=(
                "an added experiment gets its objects, its CPU pods' room in the CPU pool's maximum and, where the "
                "platform queues, its heads' in the queue's CPU quota; a removed one loses its namespace, and with it "
                "that experiment's running job (its Lustre directories and exports stay)"
            ),
        ),
        bad=(
            Bad({"Team_A": [EXAMPLE_PRINCIPAL]}, refusal="not a DNS label"),
            Bad({"team-a": ["alice@example.com"]}, refusal="user:<email> or group:<email>"),
            Bad({"team-a": ["group:team-a@example.com"]}, refusal="rbacSecurityGroup"),
            Bad({"a" * 60: [EXAMPLE_PRINCIPAL]}, refusal="at most 63"),
        ),
        alternatives=({"experiments": {"team-x": [EXAMPLE_PRINCIPAL]}},),
        stack_alternatives={
            "codelab": {
                "experiments": {
                    "codelab-exp1": [EXAMPLE_PRINCIPAL],
                    "codelab-exp2": [EXAMPLE_PRINCIPAL],
                    "codelab-exp3": [EXAMPLE_PRINCIPAL],
                    "team-x": ["user:bob@example.com"],
                }
            }
        },
    )
    experiment: Optional[str] = setting(
        None,
        key="experiment",
        description=(
            "Experiment stacks: which of its platform's experiments this stack is (the platform's experiments lists "
            "it); its objects live in that experiment's namespace. Default: the stack's name."
        ),
        owner=EXPERIMENT,
        day_two=DayTwo(
            REFUSED_BY_PROGRAM,
            where={SAME_EXPERIMENT: IN_PLACE, ON_EXPERIMENT: STOPS_THE_JOB},
            touches=("*",),
            note="another experiment's namespace: every object of the stack is created there anew",
        ),
        bad=("Team_A",),
        alternatives=({"experiment": "codelab-exp3"}, {"experiment": "codelab-exp1"}),
    )
    rbac_security_group: Optional[str] = setting(
        None,
        key="rbacSecurityGroup",
        description=(
            "Google Groups for RBAC: the cluster's security group, gke-security-groups@<your domain>, whose member "
            "groups may be experiment principals (group:<email>). Unset: users only. Removing it later leaves the "
            "cluster's setting as it is."
        ),
        owner=PLATFORM,
        day_two=DayTwo(IN_PLACE, touches=("Cluster cluster",), note="updated in place (UpdateCluster)"),
        bad=(Bad("team@example.com", refusal="gke-security-groups@"),),
        alternatives=({"rbacSecurityGroup": "gke-security-groups@example.com"},),
    )


def experiment_name(s: "UncheckedSettings") -> str:
    """The experiment an experiment stack is: `experiment`, else its stack name."""
    return s.tenancy.experiment or s.stack_name


def name_problem(name: str) -> Optional[str]:
    if len(name) > 63 or not _LABEL.match(name):
        return f"{name!r} is not a DNS label (lowercase letters, digits and '-', at most 63)"
    return None


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    t = s.tenancy
    groups = False
    for name, principals in sorted(t.experiments.items()):
        problem = name_problem(name)
        if problem:
            p.append(f"{key('experiments')}: {problem}; name experiments like team-a")
            continue
        ns = experiment_namespace(s.storage.namespace, name)
        if len(ns) > 63:
            p.append(
                f"{key('experiments')}: {name!r} makes the namespace {ns!r} ({len(ns)} characters), at most 63; "
                f"choose a shorter name or {key('namespace')}"
            )
        elif not namespace_problems(s.storage.namespace):  # a bad platform namespace is reported once, by its rule
            p.extend(f"{key('experiments')}: {line.split(': ', 1)[1]}" for line in namespace_problems(ns))
        bad = [x for x in principals if not PRINCIPAL.match(x)]
        if bad:
            p.append(
                f"{key('experiments')}.{name}: {', '.join(repr(b) for b in bad)} is not user:<email> or group:<email>"
            )
        groups = groups or any(x.startswith("group:") for x in principals)
    if groups and t.rbac_security_group is None:
        p.append(
            f"{key('experiments')}: a group principal needs Google Groups for RBAC: set {key('rbacSecurityGroup')} "
            f"to {catalog.GKE_SECURITY_GROUP_LOCAL_PART}@<your domain> (with the group as its member), or name users"
        )
    if t.rbac_security_group is not None and not _SECURITY_GROUP.match(t.rbac_security_group):
        p.append(
            f"{key('rbacSecurityGroup')}: {t.rbac_security_group!r} is not "
            f"{catalog.GKE_SECURITY_GROUP_LOCAL_PART}@<your domain> (GKE's name for the group that holds the groups "
            "used in RBAC)"
        )
    if t.experiment is not None:
        if not s.stack.platform_stack:
            p.append(
                f"{key('experiment')}: names an experiment stack's experiment; this is a platform stack "
                f"({key('platformStack')} is empty): list experiments in {key('experiments')} instead"
            )
        elif problem := name_problem(t.experiment):
            p.append(f"{key('experiment')}: {problem}")
    elif s.stack.platform_stack and (problem := name_problem(s.stack_name)):
        p.append(f"{key('experiment')}: the stack's name {problem}: set experiment to the platform's name for it")
    return p


def lustre_experiment(s: "UncheckedSettings") -> Optional[str]:
    """The experiment whose Lustre directory an experiment stack's pods mount; None on a platform (the whole
    volume)."""
    return experiment_name(s) if s.stack.platform_stack else None


def data_ksa(s: "UncheckedSettings") -> str:
    """The data staging Job's Kubernetes service account: the stack's own on a platform; on an experiment stack the
    one its platform created in its namespace (workloads/experiment_tenancy.py: its people may create none)."""
    return EXPERIMENT_DATA_KSA if s.stack.platform_stack else s.names.data_ksa
