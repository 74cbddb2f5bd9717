"""One record per setting, declared once, beside its pydantic field: `setting(...)`.

A setting is a field of a section model (`core/settings/<section>.py`) whose default is `setting(...)`. The call
returns the pydantic `Field` (config key as its alias, description, bounds) and carries a frozen `SettingRecord`
in the field's metadata with everything else the program, its generated files and its sweeps know about the key:

- who sets it: the platform stack, an experiment stack, or both (`owner`); where it applies (`modes`);
- the module of its rule, when the rule is not in the section's own module (`rule`);
- what changing it on a deployed stack does (`day_two`: a class, the conditions under which a stack gets another
  class, and the resources it may touch);
- the values the program must refuse (`bad`: each refused by exactly one line naming the key, on the `dev`
  stack), and reviewed values to change it to (`alternatives`, `stack_alternatives`) for the day-two sweep.

From the records come Pulumi.yaml's config block (synth/project_file.py), docs/settings.md
(synth/settings_reference.py), the day-two table of docs/operations.md (synth/day_two.py), the experiment/platform
split (core.settings.platform.EXPERIMENT_KEYS), the mode sets (core.settings.registry.STANDARD_ONLY /
AUTOPILOT_ONLY), the bad-input sweep's cases and the day-two sweep's expectations. The day-two sweep
(tests/test_day2_settings.py) checks each record's claim against the rendered replacement plan (synth/compare.plan).

The bad values and alternatives are test data, kept here so that a new setting is one declaration: keep them few
and reviewed (one per distinct rule, a companion key only where the value alone is invalid).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Final, Literal, Mapping, Optional, Sequence, TypeVar, cast, overload

from pydantic import Field

from core.catalog import K8S_INT32_MAX

if TYPE_CHECKING:
    from core.settings import UncheckedSettings

T = TypeVar("T")

# --- who sets it ------------------------------------------------------------------------------------------------
Owner = Literal["platform", "experiment", "both"]
# Set on a platform stack; an experiment stack uses its platform's value and refuses its own (platform.py).
PLATFORM: Final = "platform"
# Set only on an experiment stack (platformStack, which makes it one).
EXPERIMENT: Final = "experiment"
# Set by each stack for itself: what a platform's own job or an experiment trains and how its Ray cluster is shaped.
BOTH: Final = "both"

# --- where it applies -------------------------------------------------------------------------------------------
Mode = Literal["standard", "autopilot"]
ALL_MODES: Final[frozenset[Mode]] = frozenset({"standard", "autopilot"})
STANDARD: Final[frozenset[Mode]] = frozenset({"standard"})
AUTOPILOT: Final[frozenset[Mode]] = frozenset({"autopilot"})
MODE_NAMES: Final[dict[Mode, str]] = {"standard": "Standard", "autopilot": "Autopilot"}

# --- what a change does on a deployed stack ----------------------------------------------------------------------
DayTwoClass = Literal[
    "in place",
    "safe replacement",
    "stops the job",
    "deletes data",
    "refused by the API",
    "refused by the engine",
    "refused by the program",
]
IN_PLACE: Final = "in place"
SAFE_REPLACEMENT: Final = "safe replacement"
STOPS_THE_JOB: Final = "stops the job"
DELETES_DATA: Final = "deletes data"
REFUSED_BY_API: Final = "refused by the API"
REFUSED_BY_ENGINE: Final = "refused by the engine"
REFUSED_BY_PROGRAM: Final = "refused by the program"

# Mildest first. A change gets the gravest class its plan shows (tests/test_day2_settings.py classify()).
CLASSES: Final[tuple[DayTwoClass, ...]] = (
    IN_PLACE,
    SAFE_REPLACEMENT,
    STOPS_THE_JOB,
    DELETES_DATA,
    REFUSED_BY_API,
    REFUSED_BY_ENGINE,
    REFUSED_BY_PROGRAM,
)

# What each class means for a running stack (the docs' day-two table, synth/day_two.py).
MEANING: Final[dict[DayTwoClass, str]] = {
    IN_PLACE: "updated in place, or nothing rendered changes; a running job keeps running",
    SAFE_REPLACEMENT: "something is replaced that neither a running job nor stored data depends on",
    STOPS_THE_JOB: (
        "a node pool is replaced or its nodes recreated, or the RayCluster, the RayJob, the Lustre volume or the "
        "cluster is replaced: the running job stops (a new RayJob resumes from the newest checkpoint when the run "
        "name is unchanged)"
    ),
    DELETES_DATA: (
        "the Lustre instance (HF cache, datasets, checkpoints) is replaced: what it holds is deleted (a bucket or an "
        "export folder holding exports is never force-deleted: its delete is refused by the API)"
    ),
    REFUSED_BY_API: (
        "the API (or the provider in front of it) refuses a step of the plan while `pulumi up` applies it: the `up` "
        "fails there, and what ran before it stays done"
    ),
    REFUSED_BY_ENGINE: (
        "the Pulumi engine refuses to replace a protected resource (the Lustre instance with lustreOnDestroy protect, "
        "the cluster with clusterDeletionProtection): `pulumi preview` fails, nothing changes"
    ),
    REFUSED_BY_PROGRAM: "the program refuses the value with one line naming the key before anything is registered",
}


@dataclass(frozen=True)
class Condition:
    """A fact of a stack (and of the change) under which a change does something else than the setting's class.
    `holds(settings, change)`: the stack's settings before the change, and the change (config key -> new value)."""

    text: str  # how the docs name it: "on Autopilot", "where lustreOnDestroy is protect"
    holds: Callable[["UncheckedSettings", Mapping[str, Any]], bool] = field(compare=False)

    def __str__(self) -> str:
        return self.text


ON_AUTOPILOT: Final = Condition("on Autopilot", lambda s, _c: s.autopilot)
ON_STANDARD: Final = Condition("on Standard", lambda s, _c: not s.autopilot)
# The Lustre instance is protected (infra/lustre.py): the engine refuses to replace it (pulumi step_generator.go
# 1955-1962). With `delete` it is replaced and its data deleted; with `retain` the replacement would meet it (the
# sweep fails on that as a collision).
LUSTRE_PROTECTED: Final = Condition(
    "where lustreOnDestroy is protect", lambda s, _c: s.teardown.lustre_on_destroy == "protect"
)
# The cluster's deletion protection also protects it in Pulumi (infra/cluster.py): a change that replaces it is
# refused in the preview, before its node pools go.
CLUSTER_PROTECTED: Final = Condition(
    "where clusterDeletionProtection is true", lambda s, _c: s.teardown.cluster_deletion_protection
)
# An experiment stack (platformStack set): its own keys change its RayJob, prefetch and export only; a platform key
# changes its platform, and the experiment only through the platform's outputs.
ON_EXPERIMENT: Final = Condition("on an experiment stack", lambda s, _c: bool(s.stack.platform_stack))
LOGS_TO_WANDB: Final = Condition(
    "where the recipe logs to W&B (the Secret holds the W&B netrc)",
    lambda s, _c: bool(s.job.enabled and s.recipe is not None and s.recipe.wandb_enabled),
)
MEGATRON_RECIPE: Final = Condition(
    "where the recipe trains with Megatron (its checkpoints are copied whole)",
    lambda s, _c: s.recipe is not None and s.recipe.train_backend == "megatron",
)


@dataclass(frozen=True)
class DayTwo:
    """What changing the setting on a deployed stack does: `change` where no condition of `where` holds (the first
    that holds decides), and the resources it may touch (`Type logical-name` fnmatch patterns, the short form the
    sweep prints: `NodePool gpu-*`). Replacements the plan derives (cascades, replaceWith, a replaced provider) are
    consequences, not extra changes. A key the stack's cluster mode does not support is refused by the program
    there without saying so here (`modes`)."""

    change: DayTwoClass
    touches: tuple[str, ...]
    where: Mapping[Condition, DayTwoClass] = field(default_factory=dict)
    note: str = ""  # why, in a few words, for the docs' table

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", MappingProxyType(dict(self.where)))
        for cls in (self.change, *self.where.values()):
            if cls not in CLASSES:
                raise ValueError(f"day-two class {cls!r} is not one of {CLASSES}")
        for pattern in self.touches:
            if not _TOUCH.match(pattern):
                raise ValueError(f"touches pattern {pattern!r} is not '<Type> <logical name>' (or '*')")


_TOUCH = re.compile(r"^(\*|[A-Za-z]+(\*|\*? \S+))$")


@dataclass(frozen=True)
class Bad:
    """A value the program must refuse, with a fragment the one refusal line contains (empty: any line naming the
    key)."""

    value: Any
    refusal: str = ""


# A value one above Kubernetes' int32 (the CRDs' integer fields).
INT32_ABOVE: Final = str(K8S_INT32_MAX + 1)


@dataclass(frozen=True)
class SettingRecord:
    """Everything the program declares about one config key besides its type and default (the field's)."""

    key: str
    description: str
    owner: Owner
    day_two: DayTwo
    bad: tuple[Bad, ...]
    alternatives: tuple[Mapping[str, Any], ...]
    stack_alternatives: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    modes: frozenset[Mode] = ALL_MODES
    rule: str = ""  # module holding its rule (dotted), when not the section's own module

    def __post_init__(self) -> None:
        problems = []
        if self.owner not in (PLATFORM, EXPERIMENT, BOTH):
            problems.append(f"owner {self.owner!r} is not platform, experiment or both")
        if not self.modes or not self.modes <= ALL_MODES:
            problems.append(f"modes {sorted(self.modes)} are not a non-empty subset of {sorted(ALL_MODES)}")
        if not self.bad:
            problems.append("needs at least one bad value (the bad-input sweep sets each on the dev stack)")
        if not self.alternatives:
            problems.append("needs at least one alternative value (the day-two sweep changes it on every stack)")
        changes = list(self.alternatives) + list(self.stack_alternatives.values())
        if any(self.key not in change for change in changes):
            problems.append("every alternative must set the key itself")
        if problems:
            raise TypeError(f"setting {self.key!r}: " + "; ".join(problems))
        object.__setattr__(self, "stack_alternatives", MappingProxyType(dict(self.stack_alternatives)))

    def day_two_on(self, s: "UncheckedSettings", change: Mapping[str, Any]) -> DayTwoClass:
        """The class of `change` on the stack whose settings are `s`."""
        mode: Mode = "autopilot" if s.autopilot else "standard"
        if mode not in self.modes:
            return REFUSED_BY_PROGRAM
        for condition, cls in self.day_two.where.items():
            if condition.holds(s, change):
                return cls
        return self.day_two.change

    def claims(self) -> list[tuple[DayTwoClass, Optional[str]]]:
        """(class, the condition it holds under; None for the setting's own class), as the docs print them."""
        out: list[tuple[DayTwoClass, Optional[str]]] = [(self.day_two.change, None)]
        out += [(cls, c.text) for c, cls in self.day_two.where.items()]
        for mode in sorted(ALL_MODES - self.modes):
            only = " and ".join(MODE_NAMES[m] for m in sorted(self.modes))
            out.append((REFUSED_BY_PROGRAM, f"on {MODE_NAMES[mode]} ({only} only)"))
        return out


def mode_prefix(modes: frozenset[Mode]) -> str:
    """`Standard only: ` for a key one mode supports (its description in Pulumi.yaml and docs/settings.md)."""
    return "" if modes == ALL_MODES else " and ".join(MODE_NAMES[m] for m in sorted(modes)) + " only: "


def _sentence_inside(text: str) -> str:
    return text[0].lower() + text[1:] if text[1:2].islower() else text


@overload
def setting(
    default: T,
    *,
    key: str,
    description: str,
    owner: Owner,
    day_two: DayTwo,
    bad: Sequence[Any],
    alternatives: Sequence[Mapping[str, Any]],
    stack_alternatives: Optional[Mapping[str, Mapping[str, Any]]] = None,
    modes: frozenset[Mode] = ALL_MODES,
    rule: str = "",
    ge: Optional[float] = None,
    le: Optional[float] = None,
) -> T: ...
@overload
def setting(
    *,
    default_factory: Callable[[], T],
    key: str,
    description: str,
    owner: Owner,
    day_two: DayTwo,
    bad: Sequence[Any],
    alternatives: Sequence[Mapping[str, Any]],
    stack_alternatives: Optional[Mapping[str, Mapping[str, Any]]] = None,
    modes: frozenset[Mode] = ALL_MODES,
    rule: str = "",
    ge: Optional[float] = None,
    le: Optional[float] = None,
) -> T: ...
def setting(
    default: Any = None,
    *,
    default_factory: Optional[Callable[[], Any]] = None,
    key: str,
    description: str,
    owner: Owner,
    day_two: DayTwo,
    bad: Sequence[Any],
    alternatives: Sequence[Mapping[str, Any]],
    stack_alternatives: Optional[Mapping[str, Mapping[str, Any]]] = None,
    modes: frozenset[Mode] = ALL_MODES,
    rule: str = "",
    ge: Optional[float] = None,
    le: Optional[float] = None,
) -> Any:
    """The field of one setting, carrying its record: `name: <type> = setting(<default>, key=..., ...)`. Typed as the
    default's type, so mypy checks the default against the field's annotation."""
    record = SettingRecord(
        key=key,
        description=description,
        owner=owner,
        day_two=day_two,
        bad=tuple(b if isinstance(b, Bad) else Bad(b) for b in bad),
        alternatives=tuple(MappingProxyType(dict(a)) for a in alternatives),
        stack_alternatives={s: MappingProxyType(dict(a)) for s, a in (stack_alternatives or {}).items()},
        modes=modes,
        rule=rule,
    )
    # "Standard only: regional or zonal ..." (an initialism keeps its capitals: "Standard only: GPU nodes ...").
    text = description if modes == ALL_MODES else mode_prefix(modes) + _sentence_inside(description)
    if default_factory is not None:
        info = Field(default_factory=default_factory, alias=key, description=text, ge=ge, le=le)
    else:
        info = Field(default, alias=key, description=text, ge=ge, le=le)
    info.metadata.append(record)
    return cast(Any, info)


def record_of(info: Any) -> Optional[SettingRecord]:
    """The record a field's metadata carries (None for a field not declared with `setting`)."""
    return next((m for m in getattr(info, "metadata", ()) if isinstance(m, SettingRecord)), None)
