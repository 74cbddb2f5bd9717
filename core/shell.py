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
        cmd += ["--metadata-json", go_quote(kuberay_metadata_json(metadata))]
    cmd += ["--submission-id", submission_id, "--", entry, ";", "fi", ";", *follow]
    return ["/bin/bash", "-ce", "--", " ".join(cmd)]


def kuberay_metadata_json(metadata: dict[str, str]) -> str:
    """Go's json.Marshal of a map[string]string, as KubeRay passes spec.metadata: keys sorted, compact, HTML escaped."""
    meta = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return meta.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- the submitter this program renders -------------------------------------------------------------------------
# KubeRay 1.5.0 to 1.7.0 fail a K8sJobMode RayJob 30 s after its submitter Job finishes (Complete or Failed) unless the
# Ray job is terminal by then, whatever the Ray job is doing (rayjob_controller.go checkSubmitterFinishedTimeout-
# AndUpdateStatusIfNeeded with DefaultSubmitterFinishedTimeout = 30 s, and getJobFinishedCondition; kept in
# tests/oracles/kuberay); kuberay PR #5100 (merged after 1.7.0, in no release) keeps only the immediate
# SubmissionFailed of a failed submitter Job away from a RUNNING job, not this timeout. KubeRay's own submitter ends
# with `ray job logs --follow`, which returns when the dashboard closes the log stream (kuberay#4921, ray#60665): the
# SDK's tail_job_logs breaks on the websocket's CLOSED message (python/ray/dashboard/modules/job/sdk.py in the Ray
# 2.46.0 and 2.55.1 wheels; 2.55.1 raises only on an abnormal closure), and the CLI exits 0 whatever the job's status
# (cli.py `logs` -> `_tail_logs` -> `_log_job_status` only prints it). So on a dropped stream the submitter completes,
# and 30 s later a healthy run's RayJob is Failed; with shutdownAfterJobFinishes KubeRay then deletes its GPU cluster.
#
# This program's submitter keeps KubeRay's steps (wait for the dashboard's GCS health, submit unless the submission id
# is known, follow the logs) and finishes only when the Ray job has: after the stream ends it asks `ray job status`
# (whose non-terminal line is `Status for job '<id>': PENDING|RUNNING`, cli.py `_log_job_status` in the same wheels)
# and follows again (at most SUBMITTER_FOLLOWS times; the log starts over each time), then polls. It exits 0 at a
# terminal status, as KubeRay's submitter does (KubeRay then reads SUCCEEDED / FAILED / STOPPED itself); 1 when the
# dashboard no longer knows the job (a head that restarted without GCS fault tolerance lost it: "Job <id> does not
# exist", job_head.py), so the Job's next pod submits it again, as KubeRay's submitter retry does; 1 when the
# dashboard stays unreachable for SUBMITTER_UNREACHABLE_SECONDS. The same behaviour on every KubeRay version: 1.4.2,
# which has no such timeout, reads the same terminal status.
SUBMITTER_FOLLOWS = 4
SUBMITTER_POLL_SECONDS = 30
SUBMITTER_NOTE = "nemo-rl-gke submitter:"


def job_submitter_command(
    entrypoint: str,
    *,
    runtime_env_yaml: Optional[str] = None,
    metadata: Optional[dict[str, str]] = None,
    unreachable_seconds: int,
) -> list[str]:
    """The K8sJobMode submitter container's command + args this program renders (see above). The dashboard address
    and the submission id come from the RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID variables KubeRay gives the
    first container of a user template (rayjob_controller.go getSubmitterTemplate @v1.4.2, configureSubmitterContainer
    @v1.7.0); the submit is KubeRay 1.7.0's words (`submitter_command()`), so the entrypoint passes the same shells."""
    address, submission_id = '"$A"', '"$ID"'
    health = _V17_HEALTH % ("$A/" + _V17_HEALTH_PATH, _V17_HEALTH_TIMEOUT)
    submit = ["ray", "job", "submit", "--address", address, "--no-wait"]
    if runtime_env_yaml:
        submit += ["--runtime-env-json", go_quote(kuberay_runtime_env_json(runtime_env_yaml))]
    if metadata:
        submit += ["--metadata-json", go_quote(kuberay_metadata_json(metadata))]
    submit += ["--submission-id", submission_id, "--", entrypoint.strip()]
    status = f"ray job status --address {address} {submission_id}"
    running = "*\"Status for job '$ID': PENDING\"*|*\"Status for job '$ID': RUNNING\"*"
    polls = max(1, -(-unreachable_seconds // SUBMITTER_POLL_SECONDS))
    script = [
        'A="http://${RAY_DASHBOARD_ADDRESS#http://}" ; ID="$RAY_JOB_SUBMISSION_ID" ;',
        f'until {health} >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at $A ..." ; '
        "sleep 2 ; done ;",
        f"if ! {status} >/dev/null 2>&1 ; then {' '.join(submit)} ; fi ;",
        "f=0 ; n=0 ;",
        "while : ; do",
        f'  if [ "$n" -eq 0 ] && [ "$f" -lt {SUBMITTER_FOLLOWS} ] ; then',
        f'    if [ "$f" -gt 0 ] ; then echo "{SUBMITTER_NOTE} the log stream of $ID ended while the job runs '
        '(kuberay#4921, ray#60665); following it again, from its start" ; fi ;',
        "    f=$((f + 1)) ;",
        f"    ray job logs --address {address} --follow {submission_id} || true ;",
        f"  else sleep {SUBMITTER_POLL_SECONDS} ; fi ;",
        f"  if s=$({status} 2>&1) ; then",
        f'    n=0 ; case "$s" in {running}) ;; *) printf "%s\\n" "$s" ; exit 0 ;; esac ;',
        "  else",
        '    case "$s" in *"does not exist"*) printf "%s\\n" "$s" ; exit 1 ;; esac ;',
        f'    n=$((n + 1)) ; if [ "$n" -gt {polls} ] ; then printf "%s\\n" "$s" ; exit 1 ; fi ;',
        "  fi ;",
        "done",
    ]
    return ["/bin/bash", "-ce", "--", "\n".join(script)]


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
