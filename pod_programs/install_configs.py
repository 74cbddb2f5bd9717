"""Install the user's own NeMo-RL config files (jobConfigFiles) into the image's /opt/nemo-rl before training.

    python install_configs.py --from DIR --to WORKDIR [--timeout S] FILE=INSTALL_PATH...

Each FILE is a file of the job-scripts ConfigMap mounted at DIR, named `user-config-<sha256[:16]>-<name>`: the
program waits up to S seconds for it (a mounted ConfigMap reaches a running pod only at the kubelet's next sync),
checks that its content has that hash (a stale mount is refused instead of training on the old file), and copies
it to WORKDIR/INSTALL_PATH, where NeMo-RL's `--config` and `defaults:` find it. An existing file there with other
content is never overwritten. Standard library only (runs with the image's Python).
"""

import argparse
import hashlib
import os
import sys
import time


def fail(message):
    print(f"install_configs: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def install(source_dir, workdir, timeout, pairs):
    deadline = time.monotonic() + timeout
    for pair in pairs:
        key, _, install_path = pair.partition("=")
        digest = key.split("-")[2] if key.count("-") >= 3 else ""
        source = os.path.join(source_dir, key)
        while True:
            if os.path.isfile(source):
                data = open(source, "rb").read()
                if hashlib.sha256(data).hexdigest()[:16] == digest:
                    break
            if time.monotonic() >= deadline:
                fail(f"{source} with sha256 {digest}... did not appear within {timeout:.0f} s")
            time.sleep(2)
        dest = os.path.join(workdir, install_path)
        if os.path.exists(dest):
            if open(dest, "rb").read() != data:
                fail(f"{dest} exists in the image with other content; not overwritten")
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = dest + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)
        print(f"install_configs: {install_path}", flush=True)
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
