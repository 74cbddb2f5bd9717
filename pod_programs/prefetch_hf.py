"""Fill the Hugging Face cache on Lustre with a recipe's model and datasets, once; or wait until that is done.

Usage:
  python prefetch_hf.py download --marker <file> [--links <dir>] [--workers N] [--rate B/S] [--margin S]
                                 [--job-deadline S] ITEM...
  python prefetch_hf.py wait     --marker <file> [--timeout S] [--interval S] ITEM...
  ITEM: model:<repo id>@<revision> | dataset:<repo id>@<revision>

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py). `download` runs from a Kubernetes
Job on the CPU pool as soon as the Lustre volume exists, with huggingface_hub 0.34.4: in a small Python image
that installed prefetch-requirements.txt (the default), or in the NeMo-RL image (v0.4.0 and v0.5.0 lock it);
`wait` (standard library only) runs at the start of an own-cluster job's entrypoint, which must not start
training before the weights are there. Nothing here depends on the stack: paths come from argv, the cache from
$HF_HOME.

- HF_HOME must be set (the cache on Lustre, so every node reads one copy); without it the download would fill
  the pod's ephemeral disk.
- The token is read from the file named by --token-file or $HF_TOKEN_PATH (the Kubernetes Secret mounted as a
  file) and passed to huggingface_hub explicitly. HF_TOKEN in the environment is refused: huggingface_hub would
  prefer it (utils/_auth.py), and tokens never travel in environment variables in this project.
- Completion marker: after every item is complete, `--marker` is written atomically (temporary name, fsync,
  rename) with the items and the commit each resolved to. A rerun whose marker lists the same items returns at
  once, without importing huggingface_hub or touching the network.
- What it downloads: for a model, only what training loads (`training_files`): the repository's top-level files
  (config, tokenizer, chat template, weights index and shards), never a sub-directory (Meta's Llama repositories
  carry a second, Meta-format copy of the weights under `original/`) and, next to safetensors shards, no other
  weight format. Datasets are downloaded whole (their loaders read data files in sub-directories).
- Deadline from the real file list: before downloading, the Hub API's file list with sizes
  (`repo_info(files_metadata=True)`) gives the bytes to fetch; the program gives itself bytes / `--rate` (the
  slowest rate tolerated) + `--margin` seconds and stops with one line when that passes, and refuses at once
  when that is more than `--job-deadline` (the Job's own activeDeadlineSeconds, sized at render time from the
  catalog, or a ceiling for a model it does not know).
- Resume: complete blobs are never downloaded again. A partial file (`<blob>.incomplete`) is continued with an
  HTTP Range request only on the plain HTTP path: in huggingface_hub 0.34.4 `_download_to_tmp_and_move` passes
  the offset to `http_get(resume_size=...)` alone, while a Xet-backed file (hf_xet installed, as the pinned
  requirements do) goes to `xet_get`, which takes no offset: that file starts over, reusing the chunks already
  in the Xet chunk cache (HF_XET_CACHE, by default under HF_HOME, i.e. on Lustre). So a retried Job or a
  restarted pod loses at most the files that were in flight.
- `--links <dir>`: for each model, `<dir>/<repo id>@<revision>` becomes a relative symlink to the snapshot
  directory. A tag resolves to a commit only at download time; the link gives the job a path known at render
  time (NeMo-RL accepts a local path as policy.model_name). Where that path is a directory already (a model Managed
  Lustre imported there, weightsPath bucket-import, of the same commit), the directory stays and is the path.
- `--imported <manifest>` (weightsPath bucket-import, with `--links`): models are not downloaded; each must be in
  `<links>/<repo id>@<revision>` already as plain files, imported from the bucket, with the staging's manifest (that
  file name, written by stage_weights.py) listing the item and every file at its size. The marker records that
  directory; datasets are downloaded as always.
"""

import argparse
import glob
import json
import os
import re
import signal
import sys
import time
from typing import NoReturn

MARKER_VERSION = 1
_ITEM = re.compile(
    r"^(model|dataset):([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)@([A-Za-z0-9][A-Za-z0-9._/-]*)$"
)


def fail(message) -> NoReturn:
    sys.exit(f"prefetch_hf: {message}")


def parse_item(text):
    m = _ITEM.fullmatch(text)
    if not m or ".." in text:
        fail(f"bad item {text!r}; expected model:<org>/<name>@<revision> or dataset:<org>/<name>@<revision>")
    return {"kind": m.group(1), "repo_id": m.group(2), "revision": m.group(3)}


def requested(items):
    """The part of the marker that must match for a rerun to be a no-op (order-independent)."""
    return sorted(
        ({"kind": i["kind"], "repo_id": i["repo_id"], "revision": i["revision"]} for i in items),
        key=lambda i: (i["kind"], i["repo_id"], i["revision"]),
    )


def read_marker(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # unreadable or half-written by something else: treat as absent, never as complete


def marker_satisfies(marker, items):
    if not isinstance(marker, dict) or marker.get("version") != MARKER_VERSION:
        return False
    done = marker.get("items")
    if not isinstance(done, list) or requested(done) != requested(items):
        return False
    return all(isinstance(d.get("path"), str) and os.path.isdir(d["path"]) for d in done)


def write_atomically(path, text):
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    # The rename itself is durable only once the directory entry is.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_token(token_file):
    if os.environ.get("HF_TOKEN"):
        fail("HF_TOKEN is set in the environment; tokens come from a file (--token-file or HF_TOKEN_PATH)")
    path = token_file or os.environ.get("HF_TOKEN_PATH")
    if not path:
        return False  # anonymous: huggingface_hub must not look for a token anywhere else
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as err:
        fail(f"cannot read the token file {path}: {err.strerror}")
    if not token:
        fail(f"the token file {path} is empty")
    return token


def link_model(links_dir, item, snapshot_path):
    """<links>/<org>/<name>@<revision> -> snapshot directory (relative, so it survives another mount path)."""
    link = os.path.join(links_dir, f"{item['repo_id']}@{item['revision']}")
    if os.path.isdir(link) and not os.path.islink(link):
        return link  # imported there as plain files (--imported): the same commit, kept as the model's path
    os.makedirs(os.path.dirname(link), exist_ok=True)
    target = os.path.relpath(snapshot_path, os.path.dirname(link))
    tmp = f"{link}.tmp-{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)  # atomic: a reader sees the old link or the new one
    return link


# Weight formats a repository may carry besides safetensors; transformers loads safetensors when they are there.
ALTERNATIVE_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx", ".ot")


def training_files(names):
    """The files of a model repository that training loads (module docstring)."""
    top = [n for n in names if "/" not in n]
    if any(n.endswith(".safetensors") for n in top):
        top = [n for n in top if not n.endswith(ALTERNATIVE_WEIGHTS)]
    return sorted(top)


def planned_files(api, item, token):
    """{file: bytes} the item will download, from the Hub's file list with sizes."""
    info = api.repo_info(
        item["repo_id"], repo_type=item["kind"], revision=item["revision"], files_metadata=True, token=token
    )
    sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or []}
    if item["kind"] == "model":
        return {n: sizes[n] for n in training_files(sizes)}
    return sizes


def imported_entry(links_dir, item, manifest_name):
    """The marker entry of a model imported into <links>/<repo id>@<revision> (--imported), checked against the
    staging's manifest: the item, and every file it lists there at its size."""
    path = os.path.join(links_dir, f"{item['repo_id']}@{item['revision']}")
    where = f"{item['repo_id']}@{item['revision']}"
    try:
        with open(os.path.join(path, manifest_name), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        fail(f"{where} was not imported: no readable {manifest_name} in {path}; see the weights import Job")
    listed = manifest.get("item") or {}
    if (listed.get("repo_id"), listed.get("revision")) != (item["repo_id"], item["revision"]):
        fail(f"{path}/{manifest_name} lists {listed.get('repo_id')}@{listed.get('revision')}, not {where}")
    files = manifest.get("files") or {}
    wrong = []
    for name, size in sorted(files.items()):
        try:
            if os.path.getsize(os.path.join(path, name)) != size:
                wrong.append(name)
        except OSError:
            wrong.append(name)
    if not files or wrong:
        fail(f"{where} is incomplete in {path}: {len(wrong)} of {len(files)} files missing or short ({wrong[:3]})")
    print(f"prefetch: model {where} imported: {len(files)} files, {sum(files.values()) / 1e9:.2f} GB", flush=True)
    return dict(item, commit=item["revision"], path=path, files=len(files), bytes=sum(files.values()), imported=True)


def _deadline_passed(signum, frame):
    fail(
        "the download did not finish within its deadline (sized from the repositories' file lists at the "
        "slowest tolerated rate); see the lines above for what it fetched, then rerun: complete files are kept"
    )


def download(args):
    items = [parse_item(t) for t in args.items]
    if not os.environ.get("HF_HOME"):
        fail("HF_HOME is not set; the Job sets it to the cache on Lustre")
    token = read_token(args.token_file)
    marker = read_marker(args.marker)
    if marker_satisfies(marker, items):
        print(f"prefetch: complete already ({args.marker}); nothing to do", flush=True)
        return 0

    done_imported = {}
    if args.imported:
        if not args.links:
            fail("--imported needs --links (the directory the models were imported into)")
        for item in items:
            if item["kind"] == "model":
                done_imported[id(item)] = imported_entry(args.links, item, args.imported)
    fetch = [item for item in items if id(item) not in done_imported]
    if not fetch:
        _write_marker(args.marker, [done_imported[id(i)] for i in items])
        return 0

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # one line per item instead of tqdm noise
    from huggingface_hub import HfApi, snapshot_download  # imported only when there is work

    api = HfApi()
    plans = [planned_files(api, item, token) for item in fetch]
    total = sum(sum(p.values()) for p in plans)
    deadline = int(total / args.rate + args.margin)
    print(
        f"prefetch: {sum(len(p) for p in plans)} files, {total / 1e9:.2f} GB to fetch at most; deadline "
        f"{deadline} s ({args.rate / 1e6:g} MB/s + {args.margin:g} s)",
        flush=True,
    )
    if args.job_deadline and deadline > args.job_deadline:
        fail(
            f"{total / 1e9:.2f} GB need up to {deadline} s at the slowest tolerated rate, more than the Job's "
            f"{args.job_deadline} s deadline; add the model to the catalog (its size) or prefetch it by hand"
        )
    signal.signal(signal.SIGALRM, _deadline_passed)
    signal.alarm(max(deadline, 1))

    fetched = {}
    for item, planned in zip(fetch, plans, strict=True):
        started = time.monotonic()
        # Exact names as patterns (fnmatch, escaped): nothing but the planned files.
        allow = [glob.escape(n) for n in planned] if item["kind"] == "model" else None
        path = snapshot_download(
            repo_id=item["repo_id"],
            repo_type=item["kind"],
            revision=item["revision"],
            token=token,
            max_workers=args.workers,
            allow_patterns=allow,
        )
        commit = os.path.basename(os.path.normpath(path))
        files, size = 0, 0
        for root, _, names in os.walk(path):
            for name in names:
                files += 1
                size += os.path.getsize(os.path.join(root, name))  # follows the cache's symlinks to the blobs
        entry = dict(item, commit=commit, path=path, files=files, bytes=size)
        if item["kind"] == "model" and args.links:
            entry["link"] = link_model(args.links, item, path)
        fetched[id(item)] = entry
        print(
            f"prefetch: {item['kind']} {item['repo_id']}@{item['revision']} -> {commit}: {files} files, "
            f"{size / 1e9:.2f} GB in {time.monotonic() - started:.0f} s",
            flush=True,
        )

    signal.alarm(0)
    _write_marker(args.marker, [done_imported.get(id(i)) or fetched[id(i)] for i in items])
    return 0


def _write_marker(path, done):
    write_atomically(
        path,
        json.dumps(
            {
                "version": MARKER_VERSION,
                "items": done,
                "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=2,
            sort_keys=True,
        )
        + "\n",
    )
    print(f"prefetch: wrote {path}", flush=True)


def wait(args):
    items = [parse_item(t) for t in args.items]
    deadline = time.monotonic() + args.timeout
    announced = False
    while True:
        if marker_satisfies(read_marker(args.marker), items):
            print(f"prefetch: {args.marker} lists every item; continuing", flush=True)
            return 0
        if time.monotonic() >= deadline:
            fail(
                f"{args.marker} did not list every item within {args.timeout:.0f} s; "
                "see the prefetch Job's logs (kubectl logs job/<stack prefix>-prefetch)"
            )
        if not announced:
            print(f"prefetch: waiting for {args.marker}", flush=True)
            announced = True
        time.sleep(min(args.interval, max(0.0, deadline - time.monotonic())))


def main(argv):
    parser = argparse.ArgumentParser(prog="prefetch_hf.py")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("download")
    d.add_argument("--marker", required=True)
    d.add_argument("--links", default=None)
    d.add_argument("--imported", default=None, help="models were imported into --links: the staging manifest's name")
    d.add_argument("--token-file", default=None)
    d.add_argument("--workers", type=int, default=8)
    d.add_argument("--rate", type=float, default=50e6, help="slowest tolerated download rate, bytes/s")
    d.add_argument("--margin", type=float, default=1800, help="seconds added to the deadline")
    d.add_argument("--job-deadline", type=int, default=0, help="the Job's activeDeadlineSeconds (0: none)")
    d.add_argument("items", nargs="+")
    w = sub.add_parser("wait")
    w.add_argument("--marker", required=True)
    w.add_argument("--timeout", type=float, default=3 * 3600)
    w.add_argument("--interval", type=float, default=10)
    w.add_argument("items", nargs="+")
    args = parser.parse_args(argv[1:])
    for path in (args.marker, getattr(args, "links", None)):
        if path is not None and not os.path.isabs(path):
            fail(f"{path!r} must be an absolute path")
    return download(args) if args.command == "download" else wait(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
