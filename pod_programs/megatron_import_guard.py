"""Redo an interrupted one-time Hugging Face -> Megatron conversion instead of training on half of it.

Usage: python megatron_import_guard.py --model-name <policy.model_name> [--own <dir>] [--shared <dir>]
                                      [--hf-overrides-hash <12 hex>]

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

Concurrent jobs. Experiment stacks share the platform's Lustre, so two jobs of the same model can start at once. A
conversion is therefore written only into the run's own directory: the entrypoint sets NRL_MEGATRON_CHECKPOINT_DIR
(NeMo-RL's first choice, get_megatron_checkpoint_dir in nemo_rl/models/policy/utils.py) to `--own`
(`<HF_HOME>/nemo_rl/.runs/<run name>`), whose only writer is that run's one attempt at a time (KubeRay deletes a failed
attempt's cluster before the retry; a standing cluster runs one RayJob of the stack). Complete conversions are never
written again by anyone (NeMo-RL only reads them), so they are shared by hard links:
  - the run's own conversion, when interrupted, is moved aside and deleted (as above): nobody else writes there;
  - with none of its own, the run gets a complete conversion of the same model from `--shared` (`<HF_HOME>/nemo_rl`,
    where NeMo-RL converted before the per-run directories) or from another run's directory: hard-linked into a
    temporary directory, then renamed into place (no bytes copied; a reader sees all of it or nothing);
  - a run's complete conversion is published to `--shared` the same way when `--shared` has none.
Nothing under `--shared` or another run's directory is ever deleted, so one job can no longer remove another's
conversion mid-write; two first runs of a model at the same time each convert once.

NeMo-RL v0.7.0 adds `__hfovr_<12 hex>` to the subdirectory when policy.hf_config_overrides is set (nemo_rl/models/
megatron/setup.py `validate_model_paths` L445-452: sha256 of the overrides as canonical JSON); the program computes
it from the resolved config and passes it as `--hf-overrides-hash`.
"""

import argparse
import os
import shutil
import sys
import time

ITER_DIR = "iter_0000000"
RUNS_DIR = ".runs"  # <shared>/.runs/<run name>: each run's own conversions (NRL_MEGATRON_CHECKPOINT_DIR)
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


def model_subdir(model_name, hf_overrides_hash=None):
    """NeMo-RL's subdirectory for `model_name` (a local path, such as the prefetched snapshot, becomes
    `model_<path with / as _>`), with v0.7.0's suffix for policy.hf_config_overrides."""
    subdir = model_name
    if os.path.exists(model_name):
        subdir = f"model_{subdir.replace('/', '_')}"
    if hf_overrides_hash:
        subdir = f"{subdir}__hfovr_{hf_overrides_hash}"
    return subdir


def pretrained_path(model_name, env, hf_overrides_hash=None):
    """Where NeMo-RL converts `model_name` to (the worker code quoted in the module docstring)."""
    return os.path.join(megatron_dir(env), model_subdir(model_name, hf_overrides_hash))


def link_tree(source, dest):
    """`dest` as a copy of `source` made of hard links, appearing whole or not at all: linked into a temporary
    sibling, then renamed (which fails when `dest` exists: someone else placed one first). True when placed."""
    parent, name = os.path.split(dest.rstrip("/"))
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.link-{os.getpid()}-{time.time_ns()}")
    try:
        shutil.copytree(source, tmp, symlinks=True, copy_function=os.link)
        os.rename(tmp, dest)
        return True
    except OSError as err:
        print(f"megatron_import_guard: could not place {dest} from {source} ({err.strerror or err})", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
        return False


def complete_elsewhere(shared, subdir, own_root):
    """A complete conversion of `subdir` under `shared` or in another run's directory, or None."""
    candidates = [os.path.join(shared, subdir)]
    runs = os.path.join(shared, RUNS_DIR)
    if os.path.isdir(runs):
        for run in sorted(os.listdir(runs)):
            other = os.path.join(runs, run)
            if os.path.realpath(other) != os.path.realpath(own_root):
                candidates.append(os.path.join(other, subdir))
    for path in candidates:
        if nemo_rl_skips_conversion(path) and conversion_complete(path):
            return path
    return None


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
    parser.add_argument("--own", help="the run's own conversion directory (NRL_MEGATRON_CHECKPOINT_DIR)")
    parser.add_argument("--shared", help="where complete conversions are shared (default: HF_HOME/nemo_rl)")
    parser.add_argument("--hf-overrides-hash", help="v0.7.0's __hfovr_ suffix of policy.hf_config_overrides")
    args = parser.parse_args(argv[1:])
    env = dict(os.environ)
    shared = args.shared or megatron_dir({k: v for k, v in env.items() if k != "NRL_MEGATRON_CHECKPOINT_DIR"})
    own_root = args.own or megatron_dir(env)
    subdir = model_subdir(args.model_name, args.hf_overrides_hash)
    path = os.path.join(own_root, subdir)
    remove_set_aside(path)
    if nemo_rl_skips_conversion(path) and conversion_complete(path):
        print(f"megatron_import_guard: {path} is a complete conversion", flush=True)
        if os.path.realpath(own_root) != os.path.realpath(shared):
            target = os.path.join(shared, subdir)
            if not os.path.lexists(target) and link_tree(path, target):
                print(f"megatron_import_guard: shared it as {target}", flush=True)
        return 0
    if nemo_rl_skips_conversion(path):
        # Rename first (one metadata operation), so NeMo-RL can never see the partial directory again even if the
        # deletion below is interrupted; a leftover aside directory is deleted by the next run. Only this run writes
        # its own directory.
        parent, name = os.path.split(path.rstrip("/"))
        aside = os.path.join(parent, f".{name}.incomplete-{time.time_ns()}")
        os.rename(path, aside)
        print(
            f"megatron_import_guard: {path} is an interrupted conversion (missing {' or '.join(COMPLETE_FILES)}); "
            f"moved aside, deleting it; NeMo-RL converts again",
            flush=True,
        )
        remove_set_aside(path)
    if os.path.realpath(own_root) != os.path.realpath(shared):
        found = complete_elsewhere(shared, subdir, own_root)
        if found and link_tree(found, path):
            print(f"megatron_import_guard: {path} links the complete conversion {found}; no conversion", flush=True)
            return 0
    print(f"megatron_import_guard: no converted checkpoint at {path}; NeMo-RL converts it", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
