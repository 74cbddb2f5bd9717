"""Import a Cloud Storage prefix into a Managed Lustre instance and wait for it (weightsPath bucket-import).

Usage:
  python lustre_import.py --instance projects/<p>/locations/<zone>/instances/<id> --source gs://<bucket>/<prefix>/
                          [--lustre-path /] [--api URL] [--metadata URL] [--poll S] [--permission-wait S]
                          [--timeout S]

Shipped verbatim in the `nemo-rl-scripts` ConfigMap; standard library only, so it runs in the small Python image
without packages. It runs from a Kubernetes Job once the Lustre instance exists and the staging Job has put the model's
files under `--source`.

- The token: the GKE metadata server's `instance/service-accounts/default/token` (header `Metadata-Flavor: Google`),
  which answers with the access token of the Google service account the pod's Kubernetes service account acts as
  (Workload Identity). It is fetched again for every call (the metadata server caches it) and never printed.
- The call: `POST <api>/<instance>:importData` with `{requestId, gcsPath: {uri}, lustrePath: {path}}`
  (projects.locations.instances.importData); the `requestId` (a UUID4) is the same for every retry, so a retried call
  never starts a second import. A refusal while a fresh IAM grant propagates (403) is retried for
  `--permission-wait` seconds, a 429 or a 5xx a few times; anything else fails at once.
- The wait: `GET <api>/<operation name>` every `--poll` seconds until the operation is `done`, within `--timeout`.
  Done with `error`, or with objects that failed (the ImportDataMetadata's TransferCounters and ErrorSummary), is a
  failure; each failure is one line naming what failed (the HTTP status, the API's code and message, the first failed
  object and its details) and what to check.
- The transfer is incremental (files already at the destination are skipped), so a rerun after a failure copies what
  is missing only.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import NoReturn

METADATA = "http://metadata.google.internal"
TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
API = "https://lustre.googleapis.com/v1"
RETRIES = 5  # 429 and 5xx


def fail(message) -> NoReturn:
    sys.exit(f"lustre_import: {message}")


class ApiError(Exception):
    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


def _read_json(resp):
    body = resp.read()
    return json.loads(body) if body else {}


def token(metadata):
    req = urllib.request.Request(metadata.rstrip("/") + TOKEN_PATH, headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            got = _read_json(resp).get("access_token")
    except (urllib.error.URLError, OSError, ValueError) as err:
        fail(
            f"no token from the metadata server ({getattr(err, 'reason', err)}); the pod needs Workload Identity (its "
            "node pool's GKE metadata server) and egress to 169.254.169.254"
        )
    if not got:
        fail("the metadata server answered without an access_token")
    return got


def call(method, url, metadata, body=None):
    """One API call with a fresh token; the decoded JSON, or ApiError with the API's code and message."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token(metadata)}", "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return _read_json(resp)
    except urllib.error.HTTPError as err:
        try:
            e = json.loads(err.read() or b"{}").get("error") or {}
        except ValueError:
            e = {}
        raise ApiError(err.code, e.get("status") or err.reason, e.get("message") or "(no message)") from None
    except (urllib.error.URLError, OSError) as err:
        raise ApiError(0, "UNAVAILABLE", str(getattr(err, "reason", err))) from None


def call_with_retries(method, url, metadata, body, permission_wait, what):
    """Retries 429/5xx/unreachable a few times and 403 for `permission_wait` seconds (IAM propagation)."""
    started, attempt = time.monotonic(), 0
    while True:
        try:
            return call(method, url, metadata, body)
        except ApiError as err:
            attempt += 1
            transient = err.status in (0, 429) or err.status >= 500
            propagating = err.status == 403 and time.monotonic() - started < permission_wait
            if not (propagating or (transient and attempt < RETRIES)):
                hint = {
                    401: "the token was refused: check the import's Workload Identity binding",
                    403: "the import's service account needs lustre.instances.importData and lustre.operations.get",
                    404: "no such instance or operation: check --instance",
                    400: "the request was refused: check --source (gs://<bucket>/<prefix>/) and --lustre-path",
                }.get(err.status, "see the API's message")
                fail(f"{what} failed ({err}); {hint}")
            wait = min(30.0, 2.0**attempt) if not propagating else min(15.0, max(1.0, permission_wait / 20))
            print(f"import: {what}: {err}; retrying in {wait:.0f} s", flush=True)
            time.sleep(wait)


def _counters(op):
    md = (op.get("metadata") or {}).get("operationMetadata") or {}
    return {k: int(v) for k, v in (md.get("counters") or {}).items()}, md.get("errorSummaries") or []


def _first_error(summaries):
    for s in summaries:
        for entry in s.get("errorLogEntries") or []:
            details = "; ".join(entry.get("errorDetails") or [])
            return f"{s.get('errorCode', 'UNKNOWN')} x{s.get('errorCount', '?')}, e.g. {entry.get('uri')}: {details}"
        return f"{s.get('errorCode', 'UNKNOWN')} x{s.get('errorCount', '?')}"
    return "no error summary"


def run(args):
    if not args.source.startswith("gs://") or not args.source.endswith("/"):
        fail(f"--source {args.source!r} must be gs://<bucket>/<prefix>/ (importData needs the trailing slash)")
    if not args.lustre_path.startswith("/"):
        fail(f"--lustre-path {args.lustre_path!r} must start with /")
    api = args.api.rstrip("/")
    body = {
        "requestId": str(uuid.uuid4()),
        "gcsPath": {"uri": args.source},
        "lustrePath": {"path": args.lustre_path},
    }
    started = time.monotonic()
    print(f"import: {args.source} -> {args.instance}:{args.lustre_path}", flush=True)
    op = call_with_retries(
        "POST", f"{api}/{args.instance}:importData", args.metadata, body, args.permission_wait, "importData"
    )
    name = op.get("name")
    if not name:
        fail("importData answered without an operation name")
    print(f"import: operation {name}", flush=True)
    while not op.get("done"):
        if time.monotonic() - started > args.timeout:
            fail(
                f"operation {name} not done within {args.timeout:.0f} s; it may still run: "
                f"gcloud lustre operations describe {name.rsplit('/', 1)[-1]} --location <zone>"
            )
        time.sleep(args.poll)
        op = call_with_retries("GET", f"{api}/{name}", args.metadata, None, args.permission_wait, f"polling {name}")
    counters, summaries = _counters(op)
    # google.rpc.Code 7 / PERMISSION_DENIED: the service agent, not the caller, reads the bucket.
    denied = any(s.get("errorCode") == "PERMISSION_DENIED" for s in summaries)
    hint = "; the Lustre service agent needs roles/storage.objectViewer on the bucket" if denied else ""
    if op.get("error"):
        e = op["error"]
        fail(f"operation {name} failed (code {e.get('code')}: {e.get('message', '')}); {_first_error(summaries)}{hint}")
    failed = counters.get("objectsFailedCount", 0)
    if failed:
        fail(f"operation {name} finished with {failed} objects not imported: {_first_error(summaries)}{hint}")
    print(
        f"import: done in {time.monotonic() - started:.0f} s: {counters.get('objectsCopiedCount', 0)} objects "
        f"({counters.get('bytesCopiedCount', 0) / 1e9:.2f} GB) copied, {counters.get('objectsSkippedCount', 0)} "
        "already there",
        flush=True,
    )
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="lustre_import.py")
    parser.add_argument("--instance", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--lustre-path", default="/")
    parser.add_argument("--api", default=API)
    parser.add_argument("--metadata", default=METADATA)
    parser.add_argument("--poll", type=float, default=10)
    parser.add_argument("--permission-wait", type=float, default=420)
    parser.add_argument("--timeout", type=float, default=3 * 3600)
    args = parser.parse_args(argv[1:])
    parts = args.instance.split("/")
    if len(parts) != 6 or parts[0::2] != ["projects", "locations", "instances"] or not all(parts[1::2]):
        fail(f"--instance {args.instance!r} must be projects/<project>/locations/<zone>/instances/<id>")
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
