"""Prewarm GKE's image-streaming cache for one image tag, then wait until Artifact Registry has done it.

Runs as a Cloud Run job (infra/image_copy.py) right after the job that copied the tag into the repository, with
the standard library only (the pinned slim Python image). Artifact Registry "Reduce latency with image
prewarming" (https://docs.cloud.google.com/artifact-registry/docs/prewarm-images): the Image Streaming cache
"typically populates on the first pull from a client that has image streaming enabled"; the Prewarm Artifact API
fills it before any node asks. The request (googleapis.dev Google.Apis.ArtifactRegistry.v1 PrewarmArtifactRequest):

    POST {api}/{repository}:prewarmArtifact
    {"tag": "projects/P/locations/L/repositories/R/packages/PKG/tags/T", "streamLocation": "<region>",
     "platform": {"architecture": "amd64", "os": "linux"}}

returns a long-running operation, polled at {api}/{operation name} until `done` (an `error` in it fails the job).
The access token comes from the metadata server of the job's service account (Cloud Run's container contract:
http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token with
`Metadata-Flavor: Google`). It prints one line per step and never the token.

    python prewarm_image.py --repository projects/P/locations/L/repositories/R --tag <tag resource> \
        --stream-location us-central1 --architecture amd64 --os linux --timeout 3000 [--after <copy token>]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request

METADATA = "http://metadata.google.internal"
TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
API = "https://artifactregistry.googleapis.com/v1"
PREFIX = "prewarm:"


class PrewarmError(Exception):
    pass


def _call(url: str, *, token: str = "", body: dict | None = None, headers: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")[:500]
        raise PrewarmError(f"{req.get_method()} {url.split('?')[0]}: HTTP {e.code}: {detail}") from None


def access_token(metadata: str) -> str:
    got = _call(metadata + TOKEN_PATH, headers={"Metadata-Flavor": "Google"})
    token = got.get("access_token")
    if not isinstance(token, str) or not token:
        raise PrewarmError("the metadata server returned no access_token")
    return token


def request_body(args: argparse.Namespace) -> dict:
    body: dict = {"tag": args.tag, "streamLocation": args.stream_location}
    if args.architecture:
        body["platform"] = {"architecture": args.architecture, "os": args.os}
    return body


def prewarm(args: argparse.Namespace, *, sleep=time.sleep, clock=time.monotonic) -> dict:
    """Starts the prewarm and waits for its operation; returns the finished operation."""
    token = access_token(args.metadata)
    op = _call(f"{args.api}/{args.repository}:prewarmArtifact", token=token, body=request_body(args))
    name = op.get("name")
    after = f" after copy {args.after}" if args.after else ""
    print(f"{PREFIX} requested {args.tag} in {args.stream_location}{after} (operation {name})", flush=True)
    deadline = clock() + args.timeout
    while not op.get("done"):
        if not isinstance(name, str) or not name:
            raise PrewarmError(f"the prewarm returned no operation name: {op}")
        if clock() > deadline:
            raise PrewarmError(f"operation {name} not done after {args.timeout} s")
        sleep(args.poll_seconds)
        op = _call(f"{args.api}/{name}", token=access_token(args.metadata))
    if op.get("error"):
        raise PrewarmError(f"operation {name} failed: {json.dumps(op['error'])[:500]}")
    print(f"{PREFIX} {args.tag} is in the image-streaming cache of {args.stream_location}", flush=True)
    return op


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Prewarm one image tag in GKE's image-streaming cache")
    ap.add_argument("--repository", required=True, help="projects/P/locations/L/repositories/R")
    ap.add_argument("--tag", required=True, help="projects/P/locations/L/repositories/R/packages/PKG/tags/T")
    ap.add_argument("--stream-location", required=True)
    ap.add_argument("--architecture", default="")
    ap.add_argument("--os", default="linux")
    ap.add_argument("--timeout", type=float, default=3000)
    ap.add_argument("--poll-seconds", type=float, default=15)
    ap.add_argument("--api", default=API)
    ap.add_argument("--metadata", default=METADATA)
    ap.add_argument("--after", default="", help="the copy this prewarm follows (its execution token); printed only")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        prewarm(args)
    except (PrewarmError, OSError, ValueError) as e:
        print(f"{PREFIX} error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
