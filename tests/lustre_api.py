"""The Managed Lustre API and the GKE metadata server on loopback, for running pod_programs/lustre_import.py against.

Shaped per the API's reference (tests/reference/lustre-v1: the ImportData rpc and its messages, the GetOperation
rule) and Google's JSON conventions (proto3 JSON names, int64 as strings, errors as `{"error": {code, message,
status}}`):

- `GET /computeMetadata/v1/instance/service-accounts/default/token`: the token, only with `Metadata-Flavor: Google`
  (the metadata server refuses requests without it);
- `POST /v1/projects/<p>/locations/<l>/instances/<i>:importData`: checks the bearer token (401), the instance (404),
  the body (400: only ImportDataRequest's fields; `gcsPath.uri` a gs:// URI whose path ends with `/`; `lustrePath.path`
  starting with `/` and, other than `/`, existing on the file system), and answers with a long-running operation,
  not done; a repeated `requestId` answers with the same operation;
- `GET /v1/projects/<p>/locations/<l>/operations/<id>`: the operation, done after `polls_until_done` reads, its
  metadata an ImportDataMetadata with TransferCounters. When it completes it copies what it "transfers": the objects
  under the source prefix, a directory of the test's "bucket" (`bucket_root/<path inside the bucket>`), to the same
  relative paths under the Lustre path of `lustre_root`, skipping files already there with the same size
  (incremental), which is what the transfer page describes (the relative layout below the prefix is this fake's reading
  of the API, as core/weights.py says).

Knobs: `deny` (how many calls answer 403 PERMISSION_DENIED first: an IAM grant still propagating), `unavailable`
(503s first), `operation_error` (the operation ends with this google.rpc.Status and an ErrorSummary), `failing`
(object names whose copy fails: counted in objectsFailedCount with an ErrorSummary). Every request is logged.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

TYPE_PREFIX = "type.googleapis.com/google.cloud.lustre.v1."
REQUEST_FIELDS = {"requestId", "serviceAccount", "gcsPath", "lustrePath"}


@dataclass
class Operation:
    name: str
    request: dict
    polls: int = 0
    done: bool = False
    counters: dict = field(default_factory=dict)
    error: Optional[dict] = None
    summaries: list = field(default_factory=list)


class FakeLustre:
    def __init__(
        self, *, bucket: str, bucket_root: Path, lustre_root: Path, instances: set[str], token: str = "ya29.loopback"
    ):
        self.bucket, self.bucket_root, self.lustre_root = bucket, Path(bucket_root), Path(lustre_root)
        self.instances = set(instances)
        self.token = token
        self.polls_until_done = 2
        self.deny = 0
        self.unavailable = 0
        self.operation_error: Optional[dict] = None
        self.failing: set[str] = set()
        self.log: list[dict] = []
        self.operations: dict[str, Operation] = {}
        self._by_request: dict[str, str] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeLustre":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self, method: str, part: str = "") -> list[dict]:
        return [e for e in self.log if e["method"] == method and part in e["path"]]

    # --- the transfer ------------------------------------------------------------------------------------------
    def _transfer(self, op: Operation) -> None:
        uri, dest = op.request["gcsPath"]["uri"], op.request.get("lustrePath", {}).get("path", "/")
        prefix = uri[len(f"gs://{self.bucket}/") :]
        source = self.bucket_root / prefix
        target = self.lustre_root / dest.lstrip("/")
        c = dict.fromkeys(
            (
                "foundObjectsCount",
                "bytesFoundCount",
                "objectsSkippedCount",
                "bytesSkippedCount",
                "objectsCopiedCount",
                "bytesCopiedCount",
                "objectsFailedCount",
                "bytesFailedCount",
            ),
            0,
        )
        failed = []
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            rel = path.relative_to(source)
            size = path.stat().st_size
            out = target / rel
            if out.is_file() and out.stat().st_size == size:
                c["objectsSkippedCount"] += 1
                c["bytesSkippedCount"] += size
                continue
            c["foundObjectsCount"] += 1
            c["bytesFoundCount"] += size
            if str(rel) in self.failing:
                c["objectsFailedCount"] += 1
                c["bytesFailedCount"] += size
                failed.append(f"{uri}{rel}")
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
            c["objectsCopiedCount"] += 1
            c["bytesCopiedCount"] += size
        op.counters = {k: str(v) for k, v in c.items()}  # int64 in proto3 JSON
        if failed:
            op.summaries = [
                {
                    "errorCode": "PERMISSION_DENIED",
                    "errorCount": str(len(failed)),
                    "errorLogEntries": [{"uri": u, "errorDetails": ["storage.objects.get denied"]} for u in failed[:5]],
                }
            ]
        if self.operation_error is not None:
            op.error = dict(self.operation_error)
            op.summaries = [
                {
                    "errorCode": "PERMISSION_DENIED",
                    "errorCount": "1",
                    "errorLogEntries": [{"uri": uri, "errorDetails": [self.operation_error.get("message", "")]}],
                }
            ]

    def _operation_json(self, op: Operation) -> dict:
        md = {
            "@type": TYPE_PREFIX + "ImportDataMetadata",
            "operationMetadata": {
                "sourceGcsPath": {"uri": op.request["gcsPath"]["uri"]},
                "destinationLustrePath": {"path": op.request.get("lustrePath", {}).get("path", "/")},
                "counters": op.counters,
                **({"errorSummaries": op.summaries} if op.summaries else {}),
            },
            "target": op.name.split("/operations/")[0],
            "apiVersion": "v1",
        }
        out: dict = {"name": op.name, "metadata": md, "done": op.done}
        if op.done:
            if op.error is not None:
                out["error"] = op.error
            else:
                out["response"] = {"@type": TYPE_PREFIX + "ImportDataResponse"}
        return out

    # --- HTTP ----------------------------------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, obj):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _error(self, status, code, message):
                self._send(status, {"error": {"code": status, "message": message, "status": code}})

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}") if n else None

            def do_GET(self):
                self._dispatch("GET")

            def do_POST(self):
                self._dispatch("POST")

            def _dispatch(self, method):
                path = self.path.split("?")[0]
                body = self._body() if method == "POST" else None
                auth = self.headers.get("Authorization")
                with fake._lock:
                    fake.log.append(
                        {
                            "method": method,
                            "path": path,
                            "body": body,
                            "authorization": auth,
                            "metadata_flavor": self.headers.get("Metadata-Flavor"),
                        }
                    )
                if path == "/computeMetadata/v1/instance/service-accounts/default/token" and method == "GET":
                    if self.headers.get("Metadata-Flavor") != "Google":
                        return self._error(403, "FORBIDDEN", "Missing Metadata-Flavor:Google header")
                    return self._send(200, {"access_token": fake.token, "expires_in": 3599, "token_type": "Bearer"})
                if auth != f"Bearer {fake.token}":
                    return self._error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
                with fake._lock:
                    if fake.unavailable:
                        fake.unavailable -= 1
                        return self._error(503, "UNAVAILABLE", "The service is currently unavailable.")
                    if fake.deny:
                        fake.deny -= 1
                        return self._error(
                            403, "PERMISSION_DENIED", "Permission 'lustre.instances.importData' denied on resource"
                        )
                m = re.fullmatch(r"/v1/(projects/[^/]+/locations/[^/]+/instances/[^/:]+):importData", path)
                if m and method == "POST":
                    return self._import(m.group(1), body or {})
                m = re.fullmatch(r"/v1/(projects/[^/]+/locations/[^/]+/operations/[^/]+)", path)
                if m and method == "GET":
                    return self._get_operation(m.group(1))
                self._error(404, "NOT_FOUND", f"no route {method} {path}")

            def _import(self, instance, body):
                if instance not in fake.instances:
                    return self._error(404, "NOT_FOUND", f"Resource '{instance}' was not found")
                unknown = set(body) - REQUEST_FIELDS
                if unknown:
                    return self._error(400, "INVALID_ARGUMENT", f"Unknown name {sorted(unknown)[0]!r}")
                uri = (body.get("gcsPath") or {}).get("uri", "")
                m = re.fullmatch(r"gs://([a-z0-9._-]+)(/.*)?", uri)
                if not m or (m.group(2) not in (None, "/") and not uri.endswith("/")):
                    return self._error(400, "INVALID_ARGUMENT", f"invalid gcs_path.uri {uri!r}")
                if m.group(1) != fake.bucket:
                    return self._error(403, "PERMISSION_DENIED", f"the service agent cannot read gs://{m.group(1)}")
                dest = (body.get("lustrePath") or {}).get("path", "/")
                if not dest.startswith("/"):
                    return self._error(400, "INVALID_ARGUMENT", f"lustre_path.path {dest!r} must start with /")
                if dest != "/" and not (fake.lustre_root / dest.lstrip("/")).is_dir():
                    return self._error(400, "INVALID_ARGUMENT", f"lustre_path.path {dest!r} does not exist")
                with fake._lock:
                    rid = body.get("requestId")
                    if rid and rid in fake._by_request:
                        op = fake.operations[fake._by_request[rid]]
                    else:
                        project, location = instance.split("/")[1], instance.split("/")[3]
                        number = len(fake.operations) + 1
                        name = f"projects/{project}/locations/{location}/operations/operation-{number}"
                        op = fake.operations[name] = Operation(name, body)
                        if rid:
                            fake._by_request[rid] = name
                self._send(200, fake._operation_json(op))

            def _get_operation(self, name):
                with fake._lock:
                    op = fake.operations.get(name)
                    if op is None:
                        return self._error(404, "NOT_FOUND", f"Operation '{name}' was not found")
                    op.polls += 1
                    if not op.done and op.polls >= fake.polls_until_done:
                        fake._transfer(op)
                        op.done = True
                    out = fake._operation_json(op)
                self._send(200, out)

        return Handler


def tree(root: Path) -> dict[str, int]:
    """relative file path -> size, of every file under `root`."""
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(Path(root).rglob("*")) if p.is_file()}


__all__ = ["FakeLustre", "tree"]
