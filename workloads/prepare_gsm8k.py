"""Write GSM8K as JSONL for NeMo-RL's ResponseDataset ({"question", "answer"} rows), once per Lustre instance.

Usage: python prepare_gsm8k.py <output directory>

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/scripts.py) and mounted read-only on the Ray
head, where the RayJob's entrypoint runs it with NeMo-RL's `uv run python` before training. It therefore runs
in the NeMo-RL image: the standard library and `datasets` only, and nothing here may depend on the stack (the
output directory comes on the command line, the Hugging Face cache from $HF_HOME).

- HF_HOME must be set: the Ray pods and the job's runtime env put it on Lustre, so the download happens once
  for every node. Without it `datasets` would fill the head pod's ephemeral disk, so it is an error.
- With `<output directory>/_SUCCESS` present it does nothing: every resubmission after a preemption skips it.
- Every row is checked first; then `train.jsonl` and `test.jsonl` are each written to a temporary name,
  fsynced and renamed, and `_SUCCESS` (row counts) last, so an interrupted run never leaves a marker over
  partial files.
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


def main(argv):
    if len(argv) != 2 or not os.path.isabs(argv[1]):
        fail("usage: prepare_gsm8k.py <absolute output directory>")
    out = argv[1]
    if not os.environ.get("HF_HOME"):
        fail("HF_HOME is not set; the Ray pods and the job's runtime env set it to the cache on Lustre")
    marker = os.path.join(out, MARKER)
    if os.path.exists(marker):
        print(f"gsm8k: already prepared in {out}", flush=True)
        return 0

    from datasets import load_dataset  # NeMo-RL's environment has it; imported only when there is work

    ds = load_dataset("openai/gsm8k", "main")
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
