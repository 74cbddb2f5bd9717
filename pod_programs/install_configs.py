"""Install the user's own NeMo-RL config files (jobConfigFiles) into the image's /opt/nemo-rl before training.

    python install_configs.py --from DIR --to WORKDIR [--timeout S] FILE=INSTALL_PATH...

Each FILE is a file of the ConfigMap mounted at DIR (the job-scripts ConfigMap of a platform's job, or an experiment
stack's own), named `user-config-<sha256[:16]>-<name>`: the program waits up to S seconds for it (a mounted ConfigMap
reaches a running pod only at the kubelet's next sync), checks that its content has that hash (a stale mount is
refused instead of training on the old file), and copies it to WORKDIR/INSTALL_PATH, where NeMo-RL's `--config` and
`defaults:` find it.

A standing cluster's head keeps its /opt/nemo-rl from one job to the next, so the copy an earlier job installed is
still there when an edited file comes: the program keeps a record of what it installed (RECORD in WORKDIR: install
path -> sha256 of each content it wrote there) and replaces a file whose content is one it wrote itself. A file it did
not write (one of the image's) is never overwritten. A file it installed that the job no longer lists is removed, so
the tree holds exactly the image and this job's files. The record lists a new content before the file is replaced,
so a pod stopped in between leaves a file the next run still recognises as its own. Standard library only (runs with
the image's Python).
"""

import argparse
import hashlib
import json
import os
import sys
import time

RECORD = ".nemo-rl-gke-installed.json"


def fail(message):
    print(f"install_configs: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read_record(workdir):
    try:
        with open(os.path.join(workdir, RECORD), encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        fail(f"{os.path.join(workdir, RECORD)} is unreadable ({type(e).__name__}); remove it to start over")
    if not isinstance(record, dict) or not all(isinstance(v, list) for v in record.values()):
        fail(f"{os.path.join(workdir, RECORD)} is not a record of this program; remove it to start over")
    return record


def write_record(workdir, record):
    path = os.path.join(workdir, RECORD)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, sort_keys=True, indent=1)
    os.replace(tmp, path)


def write_file(dest, data):
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)


def wait_for(source, digest, deadline, timeout):
    while True:
        if os.path.isfile(source):
            with open(source, "rb") as f:
                data = f.read()
            if sha256(data)[:16] == digest:
                return data
        if time.monotonic() >= deadline:
            fail(f"{source} with sha256 {digest}... did not appear within {timeout:.0f} s")
        time.sleep(2)


def install(source_dir, workdir, timeout, pairs):
    deadline = time.monotonic() + timeout
    wanted = {}
    for pair in pairs:
        key, _, install_path = pair.partition("=")
        digest = key.split("-")[2] if key.count("-") >= 3 else ""
        wanted[install_path] = wait_for(os.path.join(source_dir, key), digest, deadline, timeout)
    record = read_record(workdir)
    for install_path, data in sorted(wanted.items()):
        dest = os.path.join(workdir, install_path)
        mine = record.get(install_path, [])
        if os.path.exists(dest):
            with open(dest, "rb") as f:
                current = sha256(f.read())
            if current == sha256(data):
                if mine != [current]:
                    record[install_path] = [current]
                    write_record(workdir, record)
                continue
            if current not in mine:
                fail(f"{dest} exists in the image with other content; not overwritten")
        record[install_path] = sorted(set(mine) | {sha256(data)})
        write_record(workdir, record)
        write_file(dest, data)
        record[install_path] = [sha256(data)]
        write_record(workdir, record)
        print(f"install_configs: {install_path}", flush=True)
    for install_path in sorted(set(record) - set(wanted)):
        dest = os.path.join(workdir, install_path)
        if os.path.exists(dest):
            with open(dest, "rb") as f:
                if sha256(f.read()) not in record[install_path]:
                    continue  # not what it installed: left alone, and no longer its own
            os.remove(dest)
            print(f"install_configs: removed {install_path} (an earlier job's)", flush=True)
        del record[install_path]
        write_record(workdir, record)
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="install_configs.py")
    p.add_argument("--from", dest="source_dir", required=True)
    p.add_argument("--to", dest="workdir", required=True)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("pairs", nargs="+")
    a = p.parse_args(argv)
    return install(a.source_dir, a.workdir, a.timeout, a.pairs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
