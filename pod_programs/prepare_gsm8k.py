"""Write GSM8K as JSONL for NeMo-RL's ResponseDataset ({"question", "answer"} rows), once per Lustre instance.

Usage: python prepare_gsm8k.py <output directory> [--pinned-by <prefetch marker>]

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py) and mounted read-only on the Ray
head, where the RayJob's entrypoint runs it with NeMo-RL's `uv run python` before training. It therefore runs
in the NeMo-RL image: the standard library and `datasets` only, and nothing here may depend on the stack (the
output directory comes on the command line, the Hugging Face cache from $HF_HOME).

- HF_HOME must be set: the Ray pods and the job's runtime env put it on Lustre, so the download happens once
  for every node. Without it `datasets` would fill the head pod's ephemeral disk, so it is an error.
- With `<output directory>/_SUCCESS` present it does nothing: every resubmission after a preemption skips it.
- Every row is checked first; then `train.jsonl` and `test.jsonl` are each written to a temporary name,
  fsynced and renamed, and `_SUCCESS` (row counts) last, so an interrupted run never leaves a marker over
  partial files.
- `--pinned-by <marker>`: the weights prefetch's marker (pod_programs/prefetch_hf.py), which records the commit that
  `openai/gsm8k@main` resolved to when the prefetch downloaded it; the dataset is loaded at exactly that commit
  (`load_dataset(..., revision=<commit>)`), so the job reads what was prefetched even if `main` moved since. A
  marker that does not list the dataset is an error, never a silent fall-back to `main`.
- `answer` is GSM8K's final answer, the number after `####` with thousands separators removed: NeMo-RL's math
  environment compares it with the model's boxed answer. A row without one is an error.
"""

import json
import os
import sys

MARKER = "_SUCCESS"
SPLITS = ("train", "test")


def fail(message):
    sys.exit(f"prepare_gsm8k: {message}")


def write_atomically(path, lines):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def final_answer(solution):
    """'... #### 1,500' -> '1500'; '' when the solution has no '####' line."""
    if "####" not in solution:
        return ""
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def rows_as_jsonl(split, rows):
    lines = []
    for i, row in enumerate(rows):
        question, answer = str(row["question"]).strip(), final_answer(str(row["answer"]))
        if not question or not answer:
            fail(f"{split} row {i} has no question or no '#### <answer>' line: {row!r}")
        lines.append(json.dumps({"question": question, "answer": answer}, ensure_ascii=False))
    if not lines:
        fail(f"split {split!r} is empty")
    return lines


DATASET = "openai/gsm8k"


def pinned_revision(marker_path):
    """The commit the prefetch recorded for the dataset in its marker."""
    try:
        with open(marker_path, encoding="utf-8") as f:
            marker = json.load(f)
    except (OSError, ValueError) as err:
        fail(f"cannot read the prefetch marker {marker_path}: {err}")
    for item in marker.get("items", []) if isinstance(marker, dict) else []:
        if item.get("kind") == "dataset" and item.get("repo_id") == DATASET and item.get("commit"):
            return item["commit"]
    fail(f"the prefetch marker {marker_path} does not list {DATASET}")


def main(argv):
    args = argv[1:]
    marker_path = None
    if len(args) == 3 and args[1] == "--pinned-by" and os.path.isabs(args[2]):
        marker_path = args[2]
        args = args[:1]
    if len(args) != 1 or not os.path.isabs(args[0]):
        fail("usage: prepare_gsm8k.py <absolute output directory> [--pinned-by <absolute prefetch marker>]")
    out = args[0]
    if not os.environ.get("HF_HOME"):
        fail("HF_HOME is not set; the Ray pods and the job's runtime env set it to the cache on Lustre")
    marker = os.path.join(out, MARKER)
    if os.path.exists(marker):
        print(f"gsm8k: already prepared in {out}", flush=True)
        return 0

    from datasets import load_dataset  # NeMo-RL's environment has it; imported only when there is work

    # "main" is GSM8K's config name; the revision is the commit the prefetch pinned (None: the Hub's main).
    revision = pinned_revision(marker_path) if marker_path else None
    ds = load_dataset(DATASET, "main", revision=revision)
    # Every row is checked before the first file is written: bad data leaves nothing behind.
    jsonl = {split: rows_as_jsonl(split, ds[split]) for split in SPLITS}
    os.makedirs(out, exist_ok=True)
    for split, lines in jsonl.items():
        write_atomically(os.path.join(out, f"{split}.jsonl"), lines)
    counts = {split: len(lines) for split, lines in jsonl.items()}
    write_atomically(marker, [json.dumps(counts, sort_keys=True)])
    print(f"gsm8k: wrote {counts} to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
