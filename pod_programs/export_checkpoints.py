"""Copy a run's final checkpoint (and its best one, when the run ranks checkpoints by a metric) to the bucket.

Usage: python export_checkpoints.py --checkpoints <run dir on Lustre> --destination <dir in the mounted bucket>
           [--root <bucket mount>] [--metric <training_info key> [--lower-is-better]] [--exclude <glob>]...
           [--workers N]

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py). The job's entrypoint runs it on the
Ray head after training succeeded; the head mounts the stack's bucket through the GCS FUSE CSI driver, so the
destination is a directory and this is a plain file copy with the standard library. Nothing here depends on
the stack: paths come from argv.

Which checkpoints (the rules of NeMo-RL's CheckpointManager, nemo_rl/utils/checkpoint.py v0.4.0/v0.5.0):
- final: the `step_N` directory with the highest N (`tmp_step_N` / `old_step_N` are never complete ones);
- best, with --metric: the `step_N` whose training_info.json has the highest (with --lower-is-better the
  lowest) value of that key. A checkpoint without the key ranks last, as in NeMo-RL's pruning
  (`.get(metric, -inf)`); with no checkpoint having it, best = final. Equal values go to the newest step
  (NeMo-RL keeps the newest on ties when pruning).

Copy rules:
- `<destination>/step_N/...` mirrors the checkpoint; `--exclude` globs (relative to the step directory, e.g.
  `policy/optimizer`) leave parts out.
- A destination file of the same size is taken as already exported, so a rerun after an interruption copies
  only what is missing. Through Cloud Storage FUSE an object appears only when its file is closed (staged
  writes upload on close; streaming writes finalize on close), so an interrupted copy leaves no partial object;
  on a plain directory a partial file has the wrong size: it is removed and copied again as a new file (what
  Cloud Storage FUSE streams without staging it on disk; core/export.py).
- `<destination>/EXPORT.json` (what was exported, from where, how many bytes) is written last, through a
  temporary name: its presence means the export is complete.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import sys
import time

STEP_DIR = re.compile(r"step_(\d+)")
MANIFEST = "EXPORT.json"
COPY_BUFFER = 16 * 1024 * 1024


def fail(message):
    sys.exit(f"export_checkpoints: {message}")


def complete_checkpoints(checkpoints):
    """(step, path) of every complete checkpoint, oldest first."""
    found = []
    for name in os.listdir(checkpoints):
        m = STEP_DIR.fullmatch(name)
        path = os.path.join(checkpoints, name)
        if m and os.path.isdir(path):
            found.append((int(m.group(1)), path))
    return sorted(found)


def training_info(path):
    try:
        with open(os.path.join(path, "training_info.json"), encoding="utf-8") as f:
            info = json.load(f)
    except FileNotFoundError:
        return None
    if not isinstance(info, dict):
        fail(f"{path}/training_info.json is not a JSON object")
    return info


def choose(checkpoints, metric, higher_is_better):
    """(final path, best path or None, note)."""
    found = complete_checkpoints(checkpoints)
    if not found:
        fail(f"no complete checkpoint (step_N) under {checkpoints}")
    final = found[-1][1]
    if metric is None:
        return final, None, None
    ranked = [(step, path, training_info(path) or {}) for step, path in found]
    scored = [(sign_value(info[metric], higher_is_better), step, path) for step, path, info in ranked if metric in info]
    if not scored:
        return final, final, f"no training_info.json has {metric!r}; best = final"
    # A checkpoint without the value ranks below every other one, as in NeMo-RL's pruning.
    return final, max(scored)[2], None


def sign_value(value, higher_is_better):
    return float(value) if higher_is_better else -float(value)


def excluded(relative, patterns):
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.rstrip("/") + "/*") for p in patterns)


def plan(source, target, patterns):
    """(source file, target file, size) for every file to export from one checkpoint directory."""
    files = []
    for root, dirs, names in os.walk(source):
        rel_root = os.path.relpath(root, source)
        dirs[:] = sorted(d for d in dirs if not excluded(os.path.normpath(os.path.join(rel_root, d)), patterns))
        for name in sorted(names):
            rel = os.path.normpath(os.path.join(rel_root, name))
            if not excluded(rel, patterns):
                src = os.path.join(source, rel)
                files.append((src, os.path.join(target, rel), os.path.getsize(src)))
    return files


def copy_file(src, dst, size):
    """True when copied, False when the destination already holds a file of that size."""
    try:
        if os.path.getsize(dst) == size:
            return False
        # Cloud Storage FUSE streams only NEW files written sequentially; rewriting an existing object falls back
        # to staging the whole file on the sidecar's disk (gcsfuse docs/semantics.md, "Streaming Writes"). Remove
        # it, so the copy is a new file again.
        os.remove(dst)
    except OSError:
        pass
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, COPY_BUFFER)
    written = os.path.getsize(dst)
    if written != size:
        fail(f"{dst}: wrote {written} bytes, expected {size}")
    return True


def write_manifest(destination, content):
    path = os.path.join(destination, MANIFEST)
    tmp = os.path.join(destination, f".{MANIFEST}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(content, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def main(argv):
    parser = argparse.ArgumentParser(prog="export_checkpoints.py")
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--destination", required=True)
    parser.add_argument("--root", default=None)
    parser.add_argument("--metric", default=None)
    parser.add_argument("--lower-is-better", action="store_true")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv[1:])
    for path in (args.checkpoints, args.destination):
        if not os.path.isabs(path):
            fail(f"{path!r} must be an absolute path")
    if not os.path.isdir(args.checkpoints):
        fail(f"{args.checkpoints} is not a directory")
    # The bucket's mount point must exist (the prefix under it is created); without --root, the parent of the
    # destination. Anything else means the volume is missing and the copy would fill the pod's disk.
    root = args.root or os.path.dirname(os.path.normpath(args.destination))
    if args.root and os.path.commonpath(
        [os.path.normpath(args.root), os.path.normpath(args.destination)]
    ) != os.path.normpath(args.root):
        fail(f"{args.destination} is not under {args.root}")
    if not os.path.isdir(root):
        fail(f"{root} does not exist; is the bucket mounted?")

    started = time.monotonic()
    final, best, note = choose(args.checkpoints, args.metric, not args.lower_is_better)
    if note:
        print(f"export: {note}", flush=True)
    chosen = sorted({final, best} - {None})
    work = []
    for source in chosen:
        work.extend(plan(source, os.path.join(args.destination, os.path.basename(source)), args.exclude))
    os.makedirs(args.destination, exist_ok=True)
    total = sum(size for _, _, size in work)
    print(
        f"export: {', '.join(os.path.basename(c) for c in chosen)} from {args.checkpoints}: {len(work)} files, "
        f"{total / 1e9:.2f} GB -> {args.destination}",
        flush=True,
    )
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        copied = sum(pool.map(lambda w: copy_file(*w), work))
    manifest = write_manifest(
        args.destination,
        {
            "source": args.checkpoints,
            "final": os.path.basename(final),
            "best": os.path.basename(best) if best else None,
            "metric": args.metric,
            "higher_is_better": None if args.metric is None else not args.lower_is_better,
            "excluded": sorted(args.exclude),
            "files": len(work),
            "bytes": total,
            "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    print(
        f"export: copied {copied} of {len(work)} files in {time.monotonic() - started:.0f} s; wrote {manifest}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
