"""Companion CLI for the Ray Jobs API of the stack's RayCluster: status, logs, stop, list, submit.

    python -m cli.ray_jobs status  <submission id> [--address http://127.0.0.1:8265]
    python -m cli.ray_jobs logs    <submission id> [--follow]
    python -m cli.ray_jobs stop    <submission id> [--wait SECONDS]
    python -m cli.ray_jobs list
    python -m cli.ray_jobs submit  --entrypoint CMD [--runtime-env-json JSON] [--submission-id ID]
                                     [--metadata-json JSON]

The address is the dashboard of the head, usually port-forwarded:
`kubectl -n <namespace> port-forward svc/<raycluster>-head-svc 8265:8265`; `host:port` means
`http://host:port`. As in Ray's own SDK, RAY_API_SERVER_ADDRESS, then RAY_ADDRESS, override --address.
Exit codes: 0 done; 1 the request was refused (unknown job, duplicate submission id, bad JSON, not a
dashboard URL); 2 the Jobs API cannot be reached. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import datetime, timezone
from typing import Optional

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
EXIT_REFUSED = 1
EXIT_UNREACHABLE = 2


class Unreachable(Exception):
    pass


class Refused(Exception):
    pass


def effective_address(flag: Optional[str]) -> str:
    """The dashboard URL to use. Ray's JobSubmissionClient lets these variables win over its address
    argument, so the same order applies here and errors name the address actually used."""
    address = os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get("RAY_ADDRESS") or flag or DEFAULT_ADDRESS
    # Without a scheme the SDK takes the address for a GCS one and blocks trying to reach the GCS.
    if "://" not in address:
        address = f"http://{address}"
    if not address.startswith(("http://", "https://")):
        raise Refused(f"{address!r} is not a dashboard URL (http://host:port, e.g. {DEFAULT_ADDRESS})")
    return address


def _client(address: str):
    import requests
    from ray.job_submission import JobSubmissionClient

    try:
        return JobSubmissionClient(address)
    except (ConnectionError, requests.exceptions.RequestException) as e:
        raise Unreachable(
            f"cannot reach the Ray Jobs API at {address} ({e.__class__.__name__}); is the head "
            "dashboard port-forwarded (kubectl port-forward svc/<raycluster>-head-svc 8265:8265)?"
        ) from e


def _when(ms: Optional[int]) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(client, job_id: str) -> int:
    info = client.get_job_info(job_id)
    line = f"{job_id}: {info.status.value}"
    if info.message:
        line += f" - {info.message.splitlines()[0]}"
    print(line)
    return 0


def _logs(client, job_id: str, follow: bool) -> int:
    # Tailing a job that has already ended would only add Ray's end-of-log polling delay.
    if not follow or client.get_job_status(job_id).is_terminal():
        sys.stdout.write(client.get_job_logs(job_id))
        return 0

    async def tail() -> None:
        async for chunk in client.tail_job_logs(job_id):
            sys.stdout.write(chunk)
            sys.stdout.flush()

    asyncio.run(tail())
    return 0


def _stop(client, job_id: str, wait: Optional[float]) -> int:
    requested = client.stop_job(job_id)
    status = client.get_job_status(job_id)
    print(f"{job_id}: {'stop requested' if requested else 'already finished'} ({status.value})")
    if wait is not None:
        deadline = time.monotonic() + wait
        while not status.is_terminal():
            if time.monotonic() > deadline:
                raise Refused(f"{job_id} still {status.value} after {wait:g} s")
            time.sleep(0.5)
            status = client.get_job_status(job_id)
        print(f"{job_id}: {status.value}")
    return 0


def _list(client) -> int:
    jobs = sorted(client.list_jobs(), key=lambda j: j.start_time or 0)
    for j in jobs:
        ep = " ".join(j.entrypoint.split())
        print(
            f"{j.submission_id or j.job_id}\t{j.status.value}\t{_when(j.start_time)}\t"
            f"{ep[:80] + ('...' if len(ep) > 80 else '')}"
        )
    if not jobs:
        print("no jobs")
    return 0


def _json_arg(text: Optional[str], what: str) -> Optional[dict]:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise Refused(f"{what} is not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise Refused(f"{what} must be a JSON object")
    return value


def _submit(
    client, entrypoint: str, runtime_env: Optional[str], submission_id: Optional[str], metadata: Optional[str]
) -> int:
    job_id = client.submit_job(
        entrypoint=entrypoint,
        runtime_env=_json_arg(runtime_env, "--runtime-env-json"),
        submission_id=submission_id,
        metadata=_json_arg(metadata, "--metadata-json"),
    )
    print(job_id)
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--address", default=None, help=f"Ray dashboard URL (default {DEFAULT_ADDRESS}; RAY_ADDRESS overrides it)"
    )
    ap = argparse.ArgumentParser(prog="python -m cli.ray_jobs", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", parents=[common], help="status of one job")
    p.add_argument("job_id")
    p = sub.add_parser("logs", parents=[common], help="driver logs of one job")
    p.add_argument("job_id")
    p.add_argument("--follow", "-f", action="store_true", help="stream until the job ends")
    p = sub.add_parser("stop", parents=[common], help="stop one job")
    p.add_argument("job_id")
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS", help="wait until it has stopped")
    sub.add_parser("list", parents=[common], help="all jobs of the cluster")
    p = sub.add_parser("submit", parents=[common], help="submit an entrypoint")
    p.add_argument("--entrypoint", required=True)
    p.add_argument("--runtime-env-json", default=None)
    p.add_argument("--submission-id", default=None)
    p.add_argument("--metadata-json", default=None)
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    import requests

    address = None
    try:
        address = effective_address(args.address)
        client = _client(address)
        if args.command == "status":
            return _status(client, args.job_id)
        if args.command == "logs":
            return _logs(client, args.job_id, args.follow)
        if args.command == "stop":
            return _stop(client, args.job_id, args.wait)
        if args.command == "list":
            return _list(client)
        return _submit(client, args.entrypoint, args.runtime_env_json, args.submission_id, args.metadata_json)
    except Unreachable as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (ConnectionError, requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
        print(f"error: lost the Ray Jobs API at {address}: {e.__class__.__name__}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (Refused, RuntimeError, ValueError) as e:
        print(f"error: {str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
