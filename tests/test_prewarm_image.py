"""pod_programs/prewarm_image.py: the prewarm request Artifact Registry documents, its long-running operation awaited,
the token taken from the metadata server and never printed, and every failure one line and exit 1.

A loopback double serves the two endpoints in the shapes their references give: the metadata server's token
(Cloud Run container contract: `Metadata-Flavor: Google` required) and Artifact Registry's
`POST .../repositories/R:prewarmArtifact` returning an Operation, then `GET <operation name>` until `done`
(googleapis.dev Google.Apis.ArtifactRegistry.v1 PrewarmArtifactRequest / Operation).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core import catalog, image_copy
from core.naming import Names
from pod_programs import prewarm_image

pytestmark = pytest.mark.unit

TOKEN = "ya29.canary-token-5d1e"
REPO = "projects/p-123456/locations/us-central1/repositories/nemo-dev-images"
TAG = f"{REPO}/packages/nemo-rl/tags/v0.5.0"


class FakeGoogle:
    """The metadata server and Artifact Registry's prewarm, on one loopback port."""

    def __init__(self, polls_until_done: int = 2, error: dict | None = None, prewarm_status: int = 200):
        self.requests: list[tuple[str, str, dict, dict]] = []
        self.polls_until_done = polls_until_done
        self.error = error
        self.prewarm_status = prewarm_status
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                fake.requests.append(("GET", self.path, dict(self.headers), {}))
                if self.path == prewarm_image.TOKEN_PATH:
                    if self.headers.get("Metadata-Flavor") != "Google":
                        return self._reply(403, {"error": "Missing Metadata-Flavor:Google header"})
                    return self._reply(200, {"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"})
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._reply(401, {"error": {"code": 401}})
                fake.polls_until_done -= 1
                done = fake.polls_until_done <= 0
                op: dict = {"name": "projects/p-123456/locations/us-central1/operations/op-1", "done": done}
                if done and fake.error:
                    op["error"] = fake.error
                return self._reply(200, op)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(("POST", self.path, dict(self.headers), body))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._reply(401, {"error": {"code": 401}})
                if fake.prewarm_status != 200:
                    return self._reply(fake.prewarm_status, {"error": {"code": fake.prewarm_status}})
                return self._reply(200, {"name": "projects/p-123456/locations/us-central1/operations/op-1"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    made: list[FakeGoogle] = []

    def make(**kw) -> FakeGoogle:
        made.append(FakeGoogle(**kw))
        return made[-1]

    yield make
    for f in made:
        f.close()


def argv(g: FakeGoogle, *extra: str) -> list[str]:
    return [
        "--repository",
        REPO,
        "--tag",
        TAG,
        "--stream-location",
        "us-central1",
        "--architecture",
        "amd64",
        "--os",
        "linux",
        "--poll-seconds",
        "0.01",
        "--timeout",
        "5",
        "--api",
        g.url,
        "--metadata",
        g.url,
        *extra,
    ]


def test_the_prewarm_asks_for_the_tag_in_the_nodes_region_for_amd64_and_waits_for_its_operation(fake, capsys):
    g = fake(polls_until_done=3)
    assert prewarm_image.main(argv(g)) == 0
    posts = [r for r in g.requests if r[0] == "POST"]
    assert len(posts) == 1
    _, path, headers, body = posts[0]
    assert path == f"/{REPO}:prewarmArtifact"
    assert body == {
        "tag": TAG,
        "streamLocation": "us-central1",
        "platform": {"architecture": "amd64", "os": "linux"},
    }
    polls = [r for r in g.requests if r[0] == "GET" and r[1].startswith("/projects/")]
    assert len(polls) == 3 and all(p[1] == "/projects/p-123456/locations/us-central1/operations/op-1" for p in polls)
    out = capsys.readouterr()
    assert "is in the image-streaming cache of us-central1" in out.out
    assert TOKEN not in out.out + out.err


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"error": {"code": 9, "message": "multi-arch"}}, "failed"),
        ({"prewarm_status": 403}, "HTTP 403"),
        ({"polls_until_done": 10_000}, "not done after"),
    ],
)
def test_a_refused_or_failed_or_endless_prewarm_fails_the_job_in_one_line(fake, capsys, kw, needle):
    g = fake(**kw)
    extra = ("--timeout", "0.2") if "polls_until_done" in kw else ()
    assert prewarm_image.main(argv(g, *extra)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prewarm: error:") and needle in err[0]
    assert TOKEN not in err[0]


def test_the_rendered_job_arguments_are_what_the_program_takes():
    # The plan's arguments parse with the program's own parser, naming the copy's tag and the stack's region.
    repo = image_copy.Repository.parse("us-central1-docker.pkg.dev/p-123456/nemo-dev-images")
    for c in image_copy.plan(Names("nemo-dev"), repo, "us-central1"):
        assert c.prewarm.command[:2] == ("python", "-c") and c.prewarm.command[2] == image_copy.prewarm_program()
        args = prewarm_image.parse_args(list(c.prewarm.args))
        assert args.repository == repo.resource and args.tag == image_copy.tag_resource(repo, c.release_tag)
        assert args.stream_location == "us-central1" and args.architecture == "amd64"
        assert args.after == c.copy.token
        assert args.timeout < catalog.IMAGE_COPY_TASK_TIMEOUT_SECONDS
