"""A Hugging Face Hub on loopback, for running the real huggingface_hub client against real files.

It serves the routes huggingface_hub 0.34's `snapshot_download` uses, with the Hub's headers:

- `GET /api/{models|datasets}/<org>/<name>/revision/<rev>`: repo info (`sha`, `siblings` with each file's size,
  as the Hub reports it for `files_metadata=True`);
- `HEAD|GET /[datasets/]<org>/<name>/resolve/<rev>/<file>`: small files are answered directly (`ETag` = git
  blob id, `X-Repo-Commit`); large ("LFS") files answer `302` to an absolute CDN URL with `X-Linked-Etag` (the
  sha256) and `X-Linked-Size`, as huggingface.co does, so the client takes its redirect path;
- `GET /cdn/<sha256>`: the bytes, honouring `Range: bytes=N-` with `206` + `Content-Range`.

Repos may be gated (401 without `Authorization: Bearer <token>`). Every request is logged (method, path, Range,
whether it carried the expected token) so tests can assert what the client really asked for. `break_blob(sha,
after)` makes the next download of that blob stop after `after` bytes (connection closed) and every later one
fail with 500 until `heal()`: a download interrupted for good, as a killed pod would leave it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

LFS_THRESHOLD = 1024  # bytes; above it a file is served like an LFS file (CDN redirect)


@dataclass
class Repo:
    kind: str  # "model" | "dataset"
    repo_id: str
    commit: str  # 40 hex
    files: dict[str, bytes]
    branches: dict[str, str] = field(default_factory=lambda: {})  # name -> commit
    gated: bool = False
    # Other commits of the repository and their files (a branch may point at one: `main` moved on).
    revisions: dict[str, dict[str, bytes]] = field(default_factory=lambda: {})

    def files_at(self, commit: str) -> dict[str, bytes]:
        return self.files if commit == self.commit else self.revisions[commit]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self, token: str = "hf_loopback_token"):
        self.token = token
        self.repos: list[Repo] = []
        self.log: list[dict] = []
        self._blobs: dict[str, bytes] = {}
        self._broken: dict[str, int] = {}  # sha -> bytes to send before closing
        self._failing: set[str] = set()
        self.cdn_delay = 0.0  # seconds the CDN waits before each blob (a slow link)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- setup ---
    def add(self, repo: Repo) -> Repo:
        for files in (repo.files, *repo.revisions.values()):
            for data in files.values():
                self._blobs[sha256(data)] = data
        self.repos.append(repo)
        return repo

    def break_blob(self, data: bytes, after: int) -> None:
        with self._lock:
            self._broken[sha256(data)] = after

    def heal(self) -> None:
        with self._lock:
            self._broken.clear()
            self._failing.clear()

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- lookups ---
    def _repo(self, kind: str, repo_id: str) -> Optional[Repo]:
        return next((r for r in self.repos if r.kind == kind and r.repo_id == repo_id), None)

    @staticmethod
    def _resolve(repo: Repo, rev: str) -> Optional[str]:
        rev = urllib.parse.unquote(rev)
        if rev == repo.commit or rev in repo.revisions:
            return rev
        return repo.branches.get(rev)

    def requests(self, method: Optional[str] = None, path_part: str = "") -> list[dict]:
        with self._lock:
            return [e for e in self.log if (method is None or e["method"] == method) and path_part in e["path"]]

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def _record(self):
                auth = self.headers.get("Authorization")
                with hub._lock:
                    hub.log.append(
                        {
                            "method": self.command,
                            "path": self.path.split("?")[0],
                            "range": self.headers.get("Range"),
                            "authorized": auth == f"Bearer {hub.token}",
                            "auth_header": auth is not None,
                        }
                    )
                return auth == f"Bearer {hub.token}"

            def _send(self, status, headers=None, body=b""):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if "Content-Length" not in (headers or {}):
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD" and body:
                    self.wfile.write(body)

            def _json(self, status, obj):
                self._send(status, {"Content-Type": "application/json"}, json.dumps(obj).encode())

            def _error(self, status, code, message):
                self._send(
                    status,
                    {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message},
                    json.dumps({"error": message}).encode(),
                )

            def do_HEAD(self):
                self._dispatch()

            def do_GET(self):
                self._dispatch()

            def do_POST(self):
                self._dispatch()

            def _dispatch(self):
                authorized = self._record()
                path = self.path.split("?")[0]
                m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)/revision/(.+)", path)
                if m and self.command == "GET":
                    return self._info(m.group(1)[:-1], m.group(2), m.group(3), authorized)
                m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
                if m and self.command == "GET":
                    query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                    recursive = query.get("recursive", ["false"])[0].lower() == "true"
                    return self._tree(m.group(1)[:-1], m.group(2), m.group(3), m.group(4) or "", recursive, authorized)
                m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)/paths-info/([^/]+)", path)
                if m and self.command == "POST":
                    return self._paths_info(m.group(1)[:-1], m.group(2), m.group(3), authorized)
                m = re.fullmatch(r"/(datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    return self._resolve_file(
                        "dataset" if m.group(1) else "model", m.group(2), m.group(3), m.group(4), authorized
                    )
                m = re.fullmatch(r"/cdn/([0-9a-f]{64})", path)
                if m and self.command == "GET":
                    return self._cdn(m.group(1))
                self._error(404, "EntryNotFound", f"no route {path}")

            def _checked_repo(self, kind, repo_id, authorized):
                repo = hub._repo(kind, repo_id)
                if repo is None:
                    self._error(404, "RepoNotFound", f"{repo_id} not found")
                    return None
                if repo.gated and not authorized:
                    self._error(401, "GatedRepo", f"Access to {repo_id} is restricted")
                    return None
                return repo

            def _info(self, kind, repo_id, rev, authorized):
                repo = self._checked_repo(kind, repo_id, authorized)
                if repo is None:
                    return
                commit = hub._resolve(repo, rev)
                if commit is None:
                    return self._error(404, "RevisionNotFound", f"{rev} not found")
                # With `?blobs=true` (HfApi.repo_info(files_metadata=True)) the Hub adds each file's size, blob id
                # and, for LFS files, their lfs record; the extra fields do no harm without it.
                siblings = []
                files = repo.files_at(commit)
                for n in sorted(files):
                    data = files[n]
                    sib = {"rfilename": n, "size": len(data), "blobId": git_blob_id(data)}
                    if len(data) > LFS_THRESHOLD:
                        sib["lfs"] = {"size": len(data), "sha256": sha256(data), "pointerSize": 134}
                    siblings.append(sib)
                self._json(
                    200,
                    {"id": repo.repo_id, "sha": commit, "private": False, "gated": repo.gated, "siblings": siblings},
                )

            @staticmethod
            def _entry(path, files):
                """One entry of the Hub's tree / paths-info answers: a file (with its LFS record above the threshold,
                as the Hub gives it) or a directory."""
                if path in files:
                    data = files[path]
                    entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(data)}
                    if len(data) > LFS_THRESHOLD:
                        entry["lfs"] = {"oid": sha256(data), "size": len(data), "pointerSize": 134}
                    return entry
                if any(n.startswith(path + "/") for n in files) or path == "":
                    return {"type": "directory", "path": path, "oid": hashlib.sha1(path.encode()).hexdigest()}
                return None

            def _tree(self, kind, repo_id, rev, prefix, recursive, authorized):
                """`GET /api/<kind>s/<repo>/tree/<rev>[/<path>][?recursive=true]`: the entries under a directory (its
                children, or every descendant), as HfApi.list_repo_tree and HfFileSystem read them."""
                repo = self._checked_repo(kind, repo_id, authorized)
                if repo is None:
                    return
                commit = hub._resolve(repo, rev)
                if commit is None:
                    return self._error(404, "RevisionNotFound", f"{rev} not found")
                files = repo.files_at(commit)
                prefix = urllib.parse.unquote(prefix).strip("/")
                if prefix and self._entry(prefix, files) is None:
                    return self._error(404, "EntryNotFound", f"{prefix} not found")
                under = prefix + "/" if prefix else ""
                paths = set()
                for n in files:
                    if not n.startswith(under):
                        continue
                    rest = n[len(under) :].split("/")
                    depth = len(rest) if recursive else 1
                    for i in range(1, depth + 1):
                        paths.add(under + "/".join(rest[:i]))
                self._json(200, [self._entry(p, files) for p in sorted(paths)])

            def _paths_info(self, kind, repo_id, rev, authorized):
                """`POST /api/<kind>s/<repo>/paths-info/<rev>` with form field(s) `paths`: the entries of those
                paths that exist (HfApi.get_paths_info)."""
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                repo = self._checked_repo(kind, repo_id, authorized)
                if repo is None:
                    return
                commit = hub._resolve(repo, rev)
                if commit is None:
                    return self._error(404, "RevisionNotFound", f"{rev} not found")
                if "json" in (self.headers.get("Content-Type") or ""):
                    wanted = json.loads(body or "{}").get("paths", [])
                else:
                    wanted = urllib.parse.parse_qs(body).get("paths", [])
                wanted = [wanted] if isinstance(wanted, str) else wanted
                files = repo.files_at(commit)
                found = [self._entry(p.strip("/"), files) for p in wanted]
                self._json(200, [e for e in found if e is not None])

            def _resolve_file(self, kind, repo_id, rev, filename, authorized):
                repo = self._checked_repo(kind, repo_id, authorized)
                if repo is None:
                    return
                commit = hub._resolve(repo, rev)
                filename = urllib.parse.unquote(filename)
                if commit is None or filename not in repo.files_at(commit):
                    return self._error(404, "EntryNotFound", f"{filename} not found")
                data = repo.files_at(commit)[filename]
                if len(data) > LFS_THRESHOLD:
                    host, port = hub.server.server_address[:2]
                    return self._send(
                        302,
                        {
                            "Location": f"http://{host}:{port}/cdn/{sha256(data)}",
                            "X-Repo-Commit": commit,
                            "X-Linked-Etag": f'"{sha256(data)}"',
                            "X-Linked-Size": str(len(data)),
                            "ETag": f'"{git_blob_id(data)}"',
                        },
                    )
                self._send(
                    200,
                    {
                        "X-Repo-Commit": commit,
                        "ETag": f'"{git_blob_id(data)}"',
                        "Content-Type": "application/octet-stream",
                    },
                    data,
                )

            def _cdn(self, sha):
                if hub.cdn_delay:
                    time.sleep(hub.cdn_delay)
                data = hub._blobs.get(sha)
                if data is None:
                    return self._error(404, "EntryNotFound", "no blob")
                with hub._lock:
                    if sha in hub._failing:
                        fail = True
                        cut = None
                    else:
                        fail = False
                        cut = hub._broken.get(sha)
                        if cut is not None:
                            hub._failing.add(sha)
                if fail:
                    return self._error(500, "InternalError", "storage unavailable")
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    m = re.fullmatch(r"bytes=(\d+)-", rng)
                    start = int(m.group(1)) if m else 0
                body = data[start:]
                headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(body))}
                status = 200
                if rng:
                    status = 206
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if cut is not None:
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(body)

        return Handler
