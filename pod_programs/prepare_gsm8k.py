"""GSM8K as JSONL for NeMo-RL's ResponseDataset ({"question", "answer"} rows): the data staging Job's GSM8K step.

Imported by `stage_data.py` from the same directory of the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py), in
the NeMo-RL image: the standard library only here; `datasets` is the caller's. Nothing here depends on the stack.

- `prepare(out, revision, load_dataset)` loads `openai/gsm8k`'s config `main` at `revision` (a commit: the catalog's
  pin), checks every row, then writes `train.jsonl` and `test.jsonl`, each to a temporary name, fsynced and renamed,
  and `_SUCCESS` (row counts) last, so an interrupted run never leaves a marker over partial files; with `_SUCCESS`
  present it does nothing (every later staging and every resubmission skips it).
- `answer` is GSM8K's final answer, the number after `####` with thousands separators removed: NeMo-RL's math
  environment compares it with the model's boxed answer. A row without one is an error, and nothing is written.
"""

import json
import os

MARKER = "_SUCCESS"
SPLITS = ("train", "test")
DATASET, CONFIG = "openai/gsm8k", "main"


class BadRows(ValueError):
    """The dataset's rows are not GSM8K's shape (one line saying which)."""


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
            raise BadRows(f"{split} row {i} has no question or no '#### <answer>' line: {row!r}")
        lines.append(json.dumps({"question": question, "answer": answer}, ensure_ascii=False))
    if not lines:
        raise BadRows(f"split {split!r} is empty")
    return lines


def prepare(out, revision, load_dataset, token=None):
    """Write GSM8K at `revision` into `out` once; returns the row counts (None when it was there already)."""
    marker = os.path.join(out, MARKER)
    if os.path.exists(marker):
        return None
    ds = load_dataset(DATASET, CONFIG, revision=revision, token=token)
    # Every row is checked before the first file is written: bad data leaves nothing behind.
    jsonl = {split: rows_as_jsonl(split, ds[split]) for split in SPLITS}
    os.makedirs(out, exist_ok=True)
    for split, lines in jsonl.items():
        write_atomically(os.path.join(out, f"{split}.jsonl"), lines)
    counts = {split: len(lines) for split, lines in jsonl.items()}
    write_atomically(marker, [json.dumps(counts, sort_keys=True)])
    return counts
