"""Real-world rules on names, the address plan and mount paths that can be checked before anything exists.

Pure functions over plain values. Each returns problem lines (`nemo-rl-gke:<key>: ...`), empty when the
value is fine; settings validation (core/settings/) calls them and raises before anything is registered.
The facts behind them live in core/catalog/ with their sources; the rule-specific limits below cite theirs.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from core import catalog, export
from core.keys import key as _key

# --- Cloud Storage bucket names ---------------------------------------------------------------------------
# https://cloud.google.com/storage/docs/buckets#naming (read 2026-11-30): lowercase letters, digits, `-`, `_`
# and `.`; start and end with a letter or digit; 3-63 characters (dotted names up to 222, but dots need domain
# verification, so we refuse them); not an IP address in dotted-decimal notation; not starting with "goog";
# not containing "google" or close misspellings "such as g00gle".
_BUCKET_CHARS = re.compile(r"^[a-z0-9_.-]+$")
_BUCKET_ENDS = re.compile(r"^[a-z0-9].*[a-z0-9]$")
# "google" with o/0 and l/1 swapped: the documented example (g00gle) and the same kind of misspelling.
_GOOGLE_LIKE = re.compile(r"g[o0][o0]g[l1]e")


def bucket_name_problems(name: str, key: str = "bucketName") -> list[str]:
    """Offline-checkable Cloud Storage bucket-name rules, as one line naming the key (every rule the name breaks,
    joined). Global uniqueness can only be checked by creating it."""
    why: list[str] = []
    rules = "see https://cloud.google.com/storage/docs/buckets#naming"
    if not 3 <= len(name) <= 63:
        why.append(f"must be 3-63 characters long (is {len(name)})")
    if not _BUCKET_CHARS.match(name):
        why.append("may contain only lowercase letters, digits, '-' and '_'")
    elif "." in name:
        why.append("contains a dot; bucket names with dots need domain-ownership verification, use '-' instead")
    elif name and not _BUCKET_ENDS.match(name):
        why.append("must start and end with a letter or digit")
    if name.startswith("goog"):
        why.append("must not start with 'goog' (reserved by Cloud Storage)")
    m = _GOOGLE_LIKE.search(name)
    if m:
        why.append(f"must not contain 'google' or a misspelling of it ({m.group(0)!r})")
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        why.append("must not be an IP address")
    return [f"{_key(key)}: bucket name {name!r} {'; '.join(why)}; {rules}"] if why else []


# --- Compute Engine reservations ----------------------------------------------------------------------------
# A reservation name is an RFC 1035 resource name, 1-63 characters (Compute Engine reservations.insert: name
# "[a-z]([-a-z0-9]*[a-z0-9])?"). A node pool names it as `<name>`, a block of it as
# `<name>/reservationBlocks/<block>`, and a shared reservation from another project as
# `projects/<project>/reservations/<name>` (Cluster Toolkit modules/compute/gke-node-pool
# reservation_definitions.tf @10470803 splits names the same way).
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")


def reservation_problems(value: str, key: str = "reservation") -> list[str]:
    parts = value.split("/")
    shape = (
        "a reservation name (lowercase letter first, then lowercase letters, digits or '-', at most 63), "
        "optionally '<name>/reservationBlocks/<block>' or 'projects/<project>/reservations/<name>'"
    )
    if parts[:1] == ["projects"]:
        if len(parts) not in (4, 6) or parts[2] != "reservations" or not _PROJECT_ID.match(parts[1]):
            return [f"{_key(key)}: {value!r} is not {shape}"]
        parts = parts[3:]
    if len(parts) == 3 and parts[1] == "reservationBlocks":
        names = [parts[0], parts[2]]
    elif len(parts) == 1:
        names = parts
    else:
        return [f"{_key(key)}: {value!r} is not {shape}"]
    bad = [n for n in names if not _RFC1035.match(n)]
    return [f"{_key(key)}: {value!r} is not {shape} ({bad[0]!r} is not a valid name)"] if bad else []


# --- Kubernetes namespaces -----------------------------------------------------------------------------------
_RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def namespace_problems(ns: str, key: str = "namespace") -> list[str]:
    """The workload namespace: a DNS label the program may create and delete (never a system namespace)."""
    if len(ns) > 63 or not _RFC1123_LABEL.match(ns):
        return [f"{_key(key)}: {ns!r} is not a valid namespace name (lowercase RFC 1123 label, at most 63)"]
    if ns in catalog.SYSTEM_NAMESPACES or ns.startswith(catalog.SYSTEM_NAMESPACE_PREFIXES):
        return [
            f"{_key(key)}: {ns!r} is a system namespace (Kubernetes or GKE owns it; the program creates "
            f"and deletes its namespace), choose another such as nemo-rl"
        ]
    return []


# --- The address plan -----------------------------------------------------------------------------------------
# VPC subnets (https://cloud.google.com/vpc/docs/subnets, "IPv4 subnet ranges"): a primary or secondary IPv4
# range is between /4 and /29 and may not be one of the prohibited ranges below; Google keeps four addresses
# of every primary range (network, gateway, second-to-last, broadcast). GKE gives each node a slice of the pod
# range sized by its maximum pods: /24 for the Standard default of 110, /26 for Autopilot's 32
# (kubernetes-engine/docs/how-to/flexible-pod-cidr).
SUBNET_LARGEST_PREFIX = 4
SUBNET_SMALLEST_PREFIX = 29
RESERVED_ADDRESSES_PER_SUBNET = 4
PROHIBITED_RANGES = tuple(
    ipaddress.ip_network(n) for n in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32")
)
POD_SLICE_PREFIX_STANDARD = 24
POD_SLICE_PREFIX_AUTOPILOT = 26
# Managed Lustre's private-service-access range: at least a /24 (Managed Lustre "Configure a VPC network",
# https://cloud.google.com/managed-lustre/docs/vpc, reserves it with --prefix-length=24 or 20).
PSA_SMALLEST_PREFIX = 24


@dataclass(frozen=True)
class AddressRange:
    """One range of the plan: the config key it comes from, how to name it in a message, the CIDR, its role."""

    key: str
    label: str
    cidr: str
    role: str  # "subnet" (primary range), "pods", "services" (secondary ranges), "psa"


def parse_cidr(k: str, value: str, p: list[str], label: str = "") -> Optional[ipaddress.IPv4Network]:
    """The IPv4 network `value` of config key `k`, or None after recording why it is not one."""
    what = f"{label} {value!r}" if label else repr(value)
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        p.append(f"{_key(k)}: {what} is not a valid CIDR ({e}); e.g. 10.0.0.0/20")
        return None
    if net.version != 4:
        p.append(f"{_key(k)}: {what} must be an IPv4 range")
        return None
    return net


def parse_range(r: AddressRange, p: list[str]) -> Optional[ipaddress.IPv4Network]:
    return parse_cidr(r.key, r.cidr, p, r.label)


def address_plan_problems(ranges: Iterable[AddressRange]) -> list[str]:
    """Every range valid and within GCP's size limits, and no two ranges of the plan overlapping.

    All ranges meet on a GPU node (its NICs sit in the primary, gVNIC and eight RDMA subnets) and Lustre answers
    from the PSA range: an overlap anywhere sends traffic out of the wrong NIC, even across VPCs.
    """
    p: list[str] = []
    parsed: list[tuple[AddressRange, ipaddress.IPv4Network]] = []
    for r in ranges:
        net = parse_range(r, p)
        if net is None:
            continue
        parsed.append((r, net))
        bad = next((b for b in PROHIBITED_RANGES if net.overlaps(b)), None)
        if bad is not None:
            p.append(f"{_key(r.key)}: {r.label} {net} overlaps {bad}, which GCP does not allow in a subnet")
        if r.role == "psa":
            if net.prefixlen > PSA_SMALLEST_PREFIX:
                p.append(
                    f"{_key(r.key)}: {r.label} {net} is smaller than the /{PSA_SMALLEST_PREFIX} Managed Lustre needs"
                )
        elif not SUBNET_LARGEST_PREFIX <= net.prefixlen <= SUBNET_SMALLEST_PREFIX:
            p.append(
                f"{_key(r.key)}: {r.label} {net} is outside GCP's subnet sizes "
                f"(/{SUBNET_LARGEST_PREFIX} to /{SUBNET_SMALLEST_PREFIX})"
            )
    for i, (ra, a) in enumerate(parsed):
        for rb, b in parsed[i + 1 :]:
            if a.overlaps(b):
                p.append(
                    f"{_key(rb.key)}: {rb.label} {b} overlaps {ra.label} {a} ({_key(ra.key)}); every range "
                    "of the plan must be disjoint"
                )
    return p


def usable_addresses(net: ipaddress.IPv4Network) -> int:
    return max(net.num_addresses - RESERVED_ADDRESSES_PER_SUBNET, 0)


def capacity_problems(r: AddressRange, nodes: int, *, pod_slice_prefix: Optional[int] = None) -> list[str]:
    """Does the range hold `nodes` nodes? One address each in a subnet, one pod slice each in a pod range."""
    p: list[str] = []
    net = parse_range(r, p)
    if net is None or nodes <= 0:
        return p
    if pod_slice_prefix is not None:
        slices = 2 ** (pod_slice_prefix - net.prefixlen) if net.prefixlen <= pod_slice_prefix else 0
        if slices < nodes:
            p.append(
                f"{_key(r.key)}: {r.label} {net} holds pod ranges for {slices} node(s) (a "
                f"/{pod_slice_prefix} each) but up to {nodes} nodes need one; use a larger range"
            )
    elif usable_addresses(net) < nodes:
        p.append(
            f"{_key(r.key)}: {r.label} {net} has {usable_addresses(net)} usable addresses (GCP keeps "
            f"{RESERVED_ADDRESSES_PER_SUBNET}) but up to {nodes} nodes need one each; use a larger range"
        )
    return p


# --- Mount paths --------------------------------------------------------------------------------------------------
def protected_paths(scripts_dir: str) -> dict[str, str]:
    """Paths in the Ray pods the Lustre mount must not hide or sit inside, with what they are."""
    paths = {
        catalog.SHM_MOUNT: "the workers' shared-memory volume",
        catalog.GPU_DRIVER_MOUNT: "the GPU driver libraries GKE mounts on GPU workers",
        catalog.GIB_MOUNT: "the gIB NCCL plugin mounted on GPU workers",
        catalog.NEMO_RL_WORKDIR: "NeMo-RL's working directory in the image",
        scripts_dir: "the job's programs (ConfigMap) on the Ray head",
        catalog.RAY_TMP_DIR: "Ray's session directory /tmp/ray",
        export.EXPORT_MOUNT: "the training bucket mounted on the Ray head for the checkpoint export",
    }
    for tree in catalog.SYSTEM_TREES:
        paths.setdefault(tree, "a system directory of the image")
    return paths


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def mount_path_problems(path: str, protected: dict[str, str], key: str = "lustreMountPath") -> list[str]:
    """An absolute, normalized path that neither hides a protected path nor lies inside one."""
    if not path.startswith("/") or path == "/":
        return [f"{_key(key)}: {path!r} must be an absolute path below / such as /lustre"]
    if posixpath.normpath(path) != path or "//" in path:
        return [
            f"{_key(key)}: {path!r} must be written plainly (no trailing '/', '//', '.' or '..'); e.g. "
            f"{posixpath.normpath(path)!r}"
        ]
    hidden = [f"{other} ({what})" for other, what in sorted(protected.items()) if _inside(other, path)]
    if hidden:
        return [
            f"{_key(key)}: mounting Lustre at {path!r} would hide {', '.join(hidden)}; choose a path such as /lustre"
        ]
    around = [other for other in protected if _inside(path, other)]
    if around:
        inner = max(around, key=len)
        return [f"{_key(key)}: {path!r} lies inside {inner} ({protected[inner]}); choose a path such as /lustre"]
    return []


# --- Managed Lustre capacity ----------------------------------------------------------------------------------------
def lustre_growth_problems(
    tier: catalog.LustreTier, old_gib: int, new_gib: int, key: str = "lustreCapacityGib"
) -> list[str]:
    """Can an existing instance of `old_gib` be resized to `new_gib`? (Managed Lustre "Increase capacity":
    never smaller; created at or below the step threshold, never above it.)"""
    if new_gib == old_gib:
        return []
    if new_gib < old_gib:
        return [
            f"{_key(key)}: {new_gib} GiB is below the instance's {old_gib} GiB; Managed Lustre capacity "
            "cannot be decreased (replace the instance to shrink it)"
        ]
    if tier.large_step_gib != tier.step_gib and old_gib <= tier.step_until_gib < new_gib:
        return [
            f"{_key(key)}: an instance created at {old_gib} GiB (at or below the {tier.step_until_gib} GiB "
            f"threshold) can only grow up to {tier.step_until_gib} GiB"
        ]
    return []


# --- GKE monitoring components ---------------------------------------------------------------------------------
def monitoring_components(gke_version: Optional[str]) -> list[str]:
    """The components to enable: every one whose GKE floor a pinned version meets (a prefix such as 1.32 counts
    as its lowest patch). Unpinned, the channel's default version applies; the newest floor here (JOBSET,
    1.32.1-gke.1357001) is older than the default of every channel when this was written (2026-11), and the
    default `modern` Lustre port already needs 1.33.2."""
    return [
        c
        for c, floor in catalog.MONITORING_COMPONENTS.items()
        if floor is None or gke_version is None or catalog.version_at_least(gke_version, floor)
    ]
