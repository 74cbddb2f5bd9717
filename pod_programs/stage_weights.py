"""Stage a model's training files, as plain files, in a directory of the training bucket (weightsPath bucket-import).

Usage:
  python stage_weights.py --dest <dir> [--manifest NAME] [--workers N] [--rate B/S] [--margin S] [--job-deadline S]
                          model:<repo id>@<commit>

Shipped verbatim in the `nemo-rl-scripts` ConfigMap. It runs from a Kubernetes Job on the CPU pool as soon as the
cluster and the bucket exist, before the Lustre instance does, in the small Python image with the hash-pinned
huggingface_hub 0.34.4 of prefetch-requirements.txt; `--dest` is on the bucket's staging folder, mounted through
Cloud Storage FUSE. Managed Lustre's importData later copies the directory into Lustre (pod_programs/lustre_import.py).

- Plain files: object storage has no symlinks, so the Hub cache's layout (`snapshots/<commit>/<file>` linking into
  `blobs/`) cannot be staged; each file of the model lands as `<dest>/<file>`, the layout a local model directory has
  and NeMo-RL reads as `policy.model_name`.
- What it copies is what the prefetch downloads (prefetch_hf.py `training_files`, imported from its sibling): the
  repository's top-level files at the pinned commit, with the sizes the Hub API lists, and the same deadline rule
  (the bytes at the slowest tolerated rate plus margin, refused at once beyond the Job's own deadline).
- Streamed: each file is read from the Hub (huggingface_hub's HfFileSystem in streaming mode, `block_size=0`, at the
  pinned commit) and written sequentially into a new file under `--dest`, at most `--workers` at once: the writes
  Cloud Storage FUSE streams to the bucket without staging them on local disk (new files, sequential; core/catalog
  GCSFUSE_*). Nothing of the model is kept on the node.
- Resume: a file whose size in `--dest` equals the Hub's is complete and never fetched again; any other (a copy a
  killed pod left short, or a file of another content) is removed and written again from its start (a streamed object
  cannot be appended to). So a retried Job or a restarted pod loses at most the files that were in flight.
- The manifest (`--manifest`, in `--dest`) is written last, once every file has its size: the item, each file with its
  size, the total. A rerun whose manifest lists the item with every file in place returns at once without a request.
- The token is read from the file named by --token-file or $HF_TOKEN_PATH, never from the environment (prefetch_hf.py
  `read_token`: HF_TOKEN set is refused).
"""

import argparse
import json
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import NoReturn

import prefetch_hf

MANIFEST_VERSION = 1
CHUNK = 8 * 1024 * 1024  # bytes per read and write: one GCS FUSE streaming block at a time per file


def fail(message) -> NoReturn:
    sys.exit(f"stage_weights: {message}")


def _first_line(err):
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def _sibling(fn, *args):
    """A prefetch_hf helper, its refusal worded as this program's."""
    try:
        return fn(*args)
    except SystemExit as err:
        fail(str(err.code).removeprefix("prefetch_hf: "))


def read_manifest(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # half-written or unreadable: absent, never complete


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def complete(manifest, item, dest):
    """The manifest lists this item and every file it lists is in `dest` with its size."""
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return False
    listed = manifest.get("item") or {}
    if (listed.get("repo_id"), listed.get("revision")) != (item["repo_id"], item["revision"]):
        return False
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return False
    return all(_size(os.path.join(dest, name)) == size for name, size in files.items())


def copy_one(fs, item, name, size, dest):
    """The Hub's file at the pinned commit into `<dest>/<name>`, sequentially, from its start."""
    target = os.path.join(dest, name)
    if os.path.lexists(target):
        os.remove(target)  # short or other content: a streamed object is rewritten, never appended to
    started = time.monotonic()
    try:
        with fs.open(f"{item['repo_id']}/{name}", "rb", revision=item["revision"], block_size=0) as src:
            with open(target, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
    except Exception as err:  # one line, whatever the client or the mount raised
        fail(f"{name}: {_first_line(err)}; rerun the Job (complete files are kept)")
    got = _size(target)
    if got != size:
        fail(f"{name}: wrote {got} bytes, the Hub lists {size}; rerun the Job (complete files are kept)")
    print(f"stage: {name} {size / 1e9:.2f} GB in {time.monotonic() - started:.0f} s", flush=True)


def _deadline_passed(signum, frame):
    # os._exit: the copies in flight run in threads, which a SystemExit of the main thread would wait for.
    sys.stderr.write(
        "stage_weights: staging did not finish within its deadline (sized from the repository's file list at the "
        "slowest tolerated rate); complete files are kept: rerun the Job\n"
    )
    sys.stderr.flush()
    os._exit(1)


def stage(args):
    item = _sibling(prefetch_hf.parse_item, args.item)
    if item["kind"] != "model":
        fail(f"{args.item!r} is not a model; only a model's weights are staged")
    dest = args.dest
    manifest_path = os.path.join(dest, args.manifest)
    token = _sibling(prefetch_hf.read_token, args.token_file)
    if complete(read_manifest(manifest_path), item, dest):
        print(f"stage: complete already ({manifest_path}); nothing to do", flush=True)
        return 0

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from huggingface_hub import HfApi, HfFileSystem  # imported only when there is work

    try:
        planned = prefetch_hf.planned_files(HfApi(), item, token)
    except Exception as err:
        fail(f"cannot list {item['repo_id']}@{item['revision']} on the Hub: {_first_line(err)}")
    total = sum(planned.values())
    deadline = int(total / args.rate + args.margin)
    print(
        f"stage: {len(planned)} files, {total / 1e9:.2f} GB of {item['repo_id']}@{item['revision']}; deadline "
        f"{deadline} s ({args.rate / 1e6:g} MB/s + {args.margin:g} s)",
        flush=True,
    )
    if args.job_deadline and deadline > args.job_deadline:
        fail(
            f"{total / 1e9:.2f} GB need up to {deadline} s at the slowest tolerated rate, more than the Job's "
            f"{args.job_deadline} s deadline; add the model to the catalog (its size) or stage it by hand"
        )
    signal.signal(signal.SIGALRM, _deadline_passed)
    signal.alarm(max(deadline, 1))

    os.makedirs(dest, exist_ok=True)
    todo = sorted(n for n, size in planned.items() if _size(os.path.join(dest, n)) != size)
    kept = len(planned) - len(todo)
    if kept:
        print(f"stage: {kept} files in place already, {len(todo)} to copy", flush=True)
    fs = HfFileSystem(token=token)
    pool = ThreadPoolExecutor(max_workers=max(1, args.workers))
    try:
        for done in as_completed([pool.submit(copy_one, fs, item, n, planned[n], dest) for n in todo]):
            done.result()  # the first failure ends the run; copies not started yet are cancelled
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    signal.alarm(0)

    manifest = {
        "version": MANIFEST_VERSION,
        "item": {"kind": item["kind"], "repo_id": item["repo_id"], "revision": item["revision"]},
        "files": dict(sorted(planned.items())),
        "bytes": total,
        "staged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    # Written in place, once (no rename): a streamed object appears whole when it is closed, and a reader that finds
    # it half-written takes it as absent.
    with open(manifest_path, "w", encoding="utf-8") as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"stage: wrote {manifest_path}", flush=True)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="stage_weights.py")
    parser.add_argument("--dest", required=True)
    parser.add_argument("--manifest", default=".nemo-rl-gke-staged.json")
    parser.add_argument("--token-file", default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rate", type=float, default=50e6, help="slowest tolerated download rate, bytes/s")
    parser.add_argument("--margin", type=float, default=1800, help="seconds added to the deadline")
    parser.add_argument("--job-deadline", type=int, default=0, help="the Job's activeDeadlineSeconds (0: none)")
    parser.add_argument("item")
    args = parser.parse_args(argv[1:])
    if not os.path.isabs(args.dest):
        fail(f"{args.dest!r} must be an absolute path")
    if "/" in args.manifest:
        fail(f"--manifest {args.manifest!r} must be a file name")
    return stage(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
