"""Redo an interrupted one-time Hugging Face -> Megatron conversion instead of training on half of it.

Usage: python megatron_import_guard.py --model-name <policy.model_name>

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py). The job's entrypoint runs it on the
Ray head right before NeMo-RL starts a Megatron run (core/recipes/commands.py `job_script`). Standard library only;
nothing here depends on the stack: the model name comes from argv, the directories from the environment, exactly
as NeMo-RL reads them.

Why (NVIDIA-NeMo/RL v0.4.0 nemo_rl/models/policy/megatron_policy_worker.py lines 486-499; the same test in
v0.5.0 workers/megatron_policy_worker.py and v0.7.0 nemo_rl/models/megatron/setup.py `validate_model_paths`):
NeMo-RL converts the weights once, into `<megatron dir>/<model subdir>`, and skips the conversion whenever
`<that dir>/iter_0000000` exists. The conversion (Megatron-Bridge `save_megatron_model`, training/checkpointing.py
`save_checkpoint` at 62f4704b, the submodule commit of v0.4.0) writes in this order:
  1. rank 0 creates `iter_0000000/` (empty);
  2. every rank writes its shards into it (torch_dist: `__<r>_<i>.distcp`, `common.pt`, `metadata.json`, and the
     global `.metadata` when the save finishes);
  3. after a barrier, rank 0 writes `iter_0000000/train_state.pt`, copies it to `latest_train_state.pt` next to
     `iter_0000000/`, and writes `iter_0000000/run_config.yaml` last.
A preemption anywhere in 1-3 leaves a directory NeMo-RL takes as complete, on Lustre (HF_HOME), so every retry
loads a partial checkpoint. This program treats the conversion as complete only when step 3 finished
(`latest_train_state.pt` and `iter_0000000/run_config.yaml`, both non-empty); otherwise it moves the directory
aside and deletes it, so NeMo-RL converts again. A complete conversion is never touched.

One job runs per stack at a time (a new RayJob replaces the old one first; KubeRay deletes a failed attempt's
cluster before the retry), so no conversion is running while this checks.
"""
import argparse
import os
import shutil
import sys
import time

ITER_DIR = "iter_0000000"
COMPLETE_FILES = ("latest_train_state.pt", os.path.join(ITER_DIR, "run_config.yaml"))


def megatron_dir(env):
    """NeMo-RL's get_megatron_checkpoint_dir (nemo_rl/models/policy/utils.py, v0.4.0-v0.7.0)."""
    chosen = env.get("NRL_MEGATRON_CHECKPOINT_DIR")
    if chosen is not None and chosen.strip():
        return chosen
    hf_home = env.get("HF_HOME")
    if hf_home is not None and hf_home.strip():
        return os.path.join(hf_home, "nemo_rl")
    return os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "nemo_rl")


def pretrained_path(model_name, env):
    """Where NeMo-RL converts `model_name` to (the worker code quoted in the module docstring; a local path, such
    as the prefetched snapshot, becomes `model_<path with / as _>`). No hf_config_overrides: the recipes set none."""
    subdir = model_name
    if os.path.exists(model_name):
        subdir = f"model_{subdir.replace('/', '_')}"
    return os.path.join(megatron_dir(env), subdir)


def nemo_rl_skips_conversion(path):
    """NeMo-RL's own test: the conversion is skipped when this is true."""
    return os.path.exists(path) and os.path.exists(os.path.join(path, ITER_DIR))


def conversion_complete(path):
    for name in COMPLETE_FILES:
        try:
            if os.path.getsize(os.path.join(path, name)) == 0:
                return False
        except OSError:
            return False
    return True


def remove_set_aside(path):
    """Delete what an earlier run moved aside (NeMo-RL never reads these names)."""
    parent, name = os.path.split(path.rstrip("/"))
    if not os.path.isdir(parent):
        return
    for entry in os.listdir(parent):
        if entry.startswith(f".{name}.incomplete-"):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def main(argv):
    parser = argparse.ArgumentParser(prog="megatron_import_guard.py")
    parser.add_argument("--model-name", required=True, help="policy.model_name as NeMo-RL receives it")
    args = parser.parse_args(argv[1:])
    path = pretrained_path(args.model_name, os.environ)
    remove_set_aside(path)
    if not nemo_rl_skips_conversion(path):
        print(f"megatron_import_guard: no converted checkpoint at {path}; NeMo-RL converts it", flush=True)
        return 0
    if conversion_complete(path):
        print(f"megatron_import_guard: {path} is a complete conversion", flush=True)
        return 0
    # Rename first (one metadata operation), so NeMo-RL can never see the partial directory again even if the
    # deletion below is interrupted; a leftover aside directory is deleted by the next run.
    parent, name = os.path.split(path.rstrip("/"))
    aside = os.path.join(parent, f".{name}.incomplete-{time.time_ns()}")
    os.rename(path, aside)
    print(f"megatron_import_guard: {path} is an interrupted conversion (missing {' or '.join(COMPLETE_FILES)}); "
          f"moved aside, deleting it; NeMo-RL converts again", flush=True)
    remove_set_aside(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
