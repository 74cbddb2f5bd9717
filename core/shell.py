"""How a RayJob's entrypoint reaches the training program: the three interpreters it passes, as pure functions.

In K8sJobMode the entrypoint string is parsed three times before NeMo-RL sees its argv:

1. KubeRay's submitter pod runs `/bin/bash -ce -- "<words joined by spaces>"` (`-c` alone in 1.3), with the
   entrypoint pasted into that string unquoted after `ray job submit ... --` (ray-project/kuberay
   ray-operator/controllers/ray/common/job.go: `GetK8sJobCommand` at v1.4.2, `BuildJobSubmitCommand` at
   v1.7.0; rayjob_controller.go joins with `strings.Join(cmd, " ")`; kuberay#3802). `submitter_command()`
   rebuilds that container command for the default K8sJobMode submitter.
2. The Ray CLI of the image (`ray job submit`, python/ray/dashboard/modules/job/cli.py) gets the words after
   `--` as a tuple and joins them back into one string: with `subprocess.list2cmdline` in Ray 2.46.0, 2.49.2
   and 2.55.1 (the Ray of NeMo-RL v0.4.0 / v0.5.0 / v0.7.0, read from those wheels), with `shlex.join` on POSIX
   from ray-project/ray PR #63797 (Ray 2.60). `ray_cli_join()` applies the rule the catalog names for a release.
3. The job supervisor runs that string with `subprocess.Popen(entrypoint, shell=True)`, i.e. `/bin/sh -c`
   (job_supervisor.py `_exec_entrypoint`, same three versions).

`list2cmdline` quotes for the Windows C runtime: it wraps a word holding a space or tab in double quotes and
backslash-escapes `"`, but `/bin/sh` reads the result with POSIX rules, where `$` and a backtick still expand
inside double quotes and `\\` is an escape. So a value holding `$`, a backtick or `\\` reaches the program
changed (or runs a command); `"` and `'` are refused as well because they survive only by the exact interplay of
three quoting rules, and the next rule change (Ray 2.60's shlex.join) shifts it. `CHAIN_UNSAFE` is that set;
settings refuse override values containing any of it (core.recipes), and tests/test_entrypoint_shells.py runs
the whole chain with real bash and /bin/sh.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Literal, Optional

import yaml

# Characters that list2cmdline + /bin/sh change on the way, and the wider set refused in user-supplied values
# (see the module docstring).
CHAIN_MANGLED = ("$", "`", "\\")
CHAIN_UNSAFE = (*CHAIN_MANGLED, '"', "'")

JoinRule = Literal["list2cmdline", "shlex.join"]

# KubeRay versions whose submitter command `submitter_command()` reproduces (the two CRD versions in schemas/).
KUBERAY_SUBMITTERS = ("1.4.2", "1.7.0")

# ray-operator/controllers/ray/utils/constant.go @ v1.7.0 (BasePythonHealthCommand, RayDashboardGCSHealthPath,
# RayDashboardGCSHealthCheckTimeoutSeconds).
_V17_HEALTH = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('%s', timeout=%d); "
    "exit(0 if b'success' in r.read() else 1)\""
)
_V17_HEALTH_PATH = "api/gcs_healthz"
_V17_HEALTH_TIMEOUT = 10


def unsafe_characters(value: str) -> list[str]:
    """The CHAIN_UNSAFE characters in `value`, in CHAIN_UNSAFE order."""
    return [c for c in CHAIN_UNSAFE if c in value]


def go_quote(s: str) -> str:
    """Go's `strconv.Quote(s)` (a double-quoted Go literal), which KubeRay applies to the runtime env and metadata
    JSON before pasting them into the bash command. Exact for ASCII; other characters are kept when Python
    considers them printable (Go's unicode.IsPrint agrees on the characters JSON from this program carries)."""
    named = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        "\\": "\\\\",
        '"': '\\"',
    }
    out = []
    for ch in s:
        if ch in named:
            out.append(named[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x80 or ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def kuberay_runtime_env_json(runtime_env_yaml: str) -> str:
    """The JSON KubeRay derives from `spec.runtimeEnvYAML` (sigs.k8s.io/yaml YAMLToJSON, then Go's json.Marshal:
    compact, map keys sorted, `<`, `>`, `&` escaped). For the string maps this program renders."""
    text = json.dumps(yaml.safe_load(runtime_env_yaml), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def submitter_command(
    entrypoint: str,
    *,
    kuberay: str,
    address: str,
    submission_id: str,
    runtime_env_yaml: Optional[str] = None,
    metadata: Optional[dict[str, str]] = None,
) -> list[str]:
    """The default K8sJobMode submitter container's command + args, as KubeRay `kuberay` builds them.

    v1.4.2: common/job.go GetK8sJobCommand; rayjob_controller.go: Command = GetContainerCommand(["e"]) =
    ["/bin/bash", "-ce", "--"], Args = [strings.Join(cmd, " ")]. v1.7.0: common/job.go BuildJobSubmitCommand
    (adds a wait loop on the dashboard's GCS health before the same if/submit/fi/logs), same command.
    ENABLE_LOGIN_SHELL (an operator env var, off by default) would add `l` to the bash options."""
    if kuberay not in KUBERAY_SUBMITTERS:
        raise ValueError(f"kuberay must be one of {KUBERAY_SUBMITTERS} (got {kuberay!r})")
    if not address.startswith("http://"):
        address = "http://" + address
    entry = entrypoint.strip()  # strings.TrimSpace
    status = ["ray", "job", "status", "--address", address, submission_id, ">/dev/null", "2>&1"]
    follow = ["ray", "job", "logs", "--address", address, "--follow", submission_id]
    cmd: list[str] = []
    if kuberay == "1.7.0":
        health = _V17_HEALTH % (f"{address}/{_V17_HEALTH_PATH}", _V17_HEALTH_TIMEOUT)
        cmd += [
            "until",
            health,
            ">/dev/null",
            "2>&1",
            ";",
            "do",
            "echo",
            go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ..."),
            ";",
            "sleep",
            "2",
            ";",
            "done",
            ";",
        ]
    cmd += ["if", "!", *status, ";", "then", "ray", "job", "submit", "--address", address, "--no-wait"]
    if runtime_env_yaml:
        cmd += ["--runtime-env-json", go_quote(kuberay_runtime_env_json(runtime_env_yaml))]
    if metadata:
        # Go's json.Marshal of map[string]string: keys sorted, compact, HTML characters escaped.
        meta = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        meta = meta.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        cmd += ["--metadata-json", go_quote(meta)]
    cmd += ["--submission-id", submission_id, "--", entry, ";", "fi", ";", *follow]
    return ["/bin/bash", "-ce", "--", " ".join(cmd)]


def ray_cli_join(argv: list[str], rule: JoinRule) -> str:
    """The entrypoint string the image's `ray job submit` sends for the words after `--` (see the module
    docstring): the very stdlib functions Ray calls."""
    if rule == "list2cmdline":
        return subprocess.list2cmdline(argv)
    if rule == "shlex.join":
        return shlex.join(argv)
    raise ValueError(f"unknown join rule {rule!r}")


def supervisor_argv(entrypoint: str) -> list[str]:
    """What the job supervisor's `subprocess.Popen(entrypoint, shell=True)` executes on POSIX."""
    return ["/bin/sh", "-c", entrypoint]
