"""The Pod Security Standards' checks (baseline, restricted) for a pod spec, written from the Kubernetes page
"Pod Security Standards" (kubernetes.io/docs/concepts/security/pod-security-standards, the policy version the
namespaces pin: v1.33), for judging what the program renders (not a copy of workloads/manifests/pod_security.py).

`violations(spec, level)` lists every control of `level` the spec breaks; `level_of(spec)` is the strictest level
it meets. Windows-only controls (hostProcess) and fields the program never renders (sysctls, AppArmor, SELinux
options, /proc mount types) are checked as the page states them, so a template that starts using one is judged.
"""

from __future__ import annotations

from typing import Iterable, Mapping

LEVELS = ("privileged", "baseline", "restricted")

# Baseline: capabilities that may be added (page: "Capabilities", baseline).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
# Restricted: the only volume types allowed (page: "Volume Types").
RESTRICTED_VOLUME_TYPES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})


def _containers(spec: Mapping) -> list[Mapping]:
    return [*spec.get("initContainers", []), *spec.get("containers", []), *spec.get("ephemeralContainers", [])]


def _baseline(spec: Mapping) -> list[str]:
    out = []
    pod_ctx = spec.get("securityContext") or {}
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(k):
            out.append(f"host namespaces: {k}")
    if (pod_ctx.get("windowsOptions") or {}).get("hostProcess"):
        out.append("hostProcess")
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            out.append(f"hostPath volume {v['name']}")
    if (pod_ctx.get("seccompProfile") or {}).get("type") == "Unconfined":
        out.append("seccomp Unconfined (pod)")
    for s in pod_ctx.get("sysctls") or []:
        if s["name"] not in SAFE_SYSCTLS:
            out.append(f"sysctl {s['name']}")
    if (pod_ctx.get("seLinuxOptions") or {}).get("type", "") not in SELINUX_TYPES:
        out.append("SELinux type (pod)")
    for c in _containers(spec):
        ctx = c.get("securityContext") or {}
        name = c["name"]
        if ctx.get("privileged"):
            out.append(f"{name}: privileged")
        if (ctx.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"{name}: hostProcess")
        added = set((ctx.get("capabilities") or {}).get("add") or [])
        if added - BASELINE_CAPABILITIES:
            out.append(f"{name}: adds capabilities {sorted(added - BASELINE_CAPABILITIES)}")
        for p in c.get("ports", []):
            if p.get("hostPort"):
                out.append(f"{name}: hostPort {p['hostPort']}")
        if (ctx.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(f"{name}: seccomp Unconfined")
        if ctx.get("procMount", "Default") != "Default":
            out.append(f"{name}: procMount {ctx['procMount']}")
        se = ctx.get("seLinuxOptions") or {}
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            out.append(f"{name}: SELinux options")
        profile = (ctx.get("appArmorProfile") or {}).get("type")
        if profile not in (None, "RuntimeDefault", "Localhost"):
            out.append(f"{name}: AppArmor {profile}")
    return out


def _restricted(spec: Mapping) -> list[str]:
    out = []
    pod_ctx = spec.get("securityContext") or {}
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            out.append(f"volume {v['name']} of type {sorted(kinds)}")
    pod_non_root = pod_ctx.get("runAsNonRoot") is True
    pod_seccomp = (pod_ctx.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")
    if pod_ctx.get("runAsUser") == 0:
        out.append("runAsUser 0 (pod)")
    for c in _containers(spec):
        ctx = c.get("securityContext") or {}
        name = c["name"]
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation not false")
        non_root = ctx.get("runAsNonRoot")
        if not (non_root is True or (non_root is None and pod_non_root)):
            out.append(f"{name}: runAsNonRoot not true")
        if ctx.get("runAsUser") == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or {}).get("type")
        if not (seccomp in ("RuntimeDefault", "Localhost") or (seccomp is None and pod_seccomp)):
            out.append(f"{name}: seccomp profile not set to RuntimeDefault or Localhost")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{name}: does not drop ALL capabilities")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{name}: adds capabilities other than NET_BIND_SERVICE")
    return out


def violations(spec: Mapping, level: str) -> list[str]:
    if level == "privileged":
        return []
    out = _baseline(spec)
    if level == "restricted":
        out += _restricted(spec)
    return out


def level_of(spec: Mapping) -> str:
    """The strictest level the pod spec meets."""
    for level in reversed(LEVELS):
        if not violations(spec, level):
            return level
    return "privileged"


def strictest_common(specs: Iterable[Mapping]) -> str:
    """The strictest level every spec meets."""
    levels = [LEVELS.index(level_of(s)) for s in specs]
    return LEVELS[min(levels)] if levels else "restricted"
