"""Stand-in for NeMo-RL's entry script that trains on a Ray worker node, as NeMo-RL's actors train on the GPU workers.

Installed at the release's entry script path instead of grpo_trainer.py (tests/test_attempts_ray.py): it joins the
cluster as a driver and runs the stand-in trainer (grpo_trainer.py, beside it as `_standin_trainer.py`) in one Ray
task that needs the custom resource `trainer` (only the worker nodes have it), with no task retry. When that node
dies mid-run the task fails and this driver exits 1, as NeMo-RL's driver does when it loses an actor's node.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ray

TRAINER = Path(__file__).with_name("_standin_trainer.py")


@ray.remote(num_cpus=0, resources={"trainer": 1}, max_retries=0)
def train(argv: list[str], cwd: str, env: dict) -> int:
    print(f"stand-in entry: training on node {ray.get_runtime_context().get_node_id()}", flush=True)
    return subprocess.run([sys.executable, str(TRAINER), *argv], cwd=cwd, env=env).returncode


def main() -> int:
    ray.init(address="auto", logging_level="ERROR")
    try:
        return ray.get(train.remote(sys.argv[1:], os.getcwd(), dict(os.environ)))
    except Exception as e:  # the node died (ray.exceptions.NodeDiedError / WorkerCrashedError ...)
        print(f"stand-in entry: training failed: {type(e).__name__}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
