"""Stage a job's datasets on Lustre before any GPU is asked for, and check them: the data staging Job's program.

Usage: python stage_data.py --plan '<json>'      (the plan: core/data.py staging_plan)

Shipped verbatim in the `nemo-rl-scripts` ConfigMap (workloads/job_scripts.py) and run by the data staging Job on the
CPU pool in the job's NeMo-RL image with its `uv run python`, so every dataset is read by the `datasets` library the
training will run (the cache layout of the built-in loaders is that library's). The standard library and `datasets`
only (imported when there is work); paths come from the plan, the Hugging Face cache from $HF_HOME, the token from the
file $HF_TOKEN_PATH names (HF_TOKEN in the environment is refused: tokens travel as files in this project).

Steps, each skipped when its marker says it is done (every rerun of the Job, every later run of the same data):
- `builtin`: each Hub dataset a built-in loader of the release reads, `load_dataset(<id>, <config>,
  revision=<commit>)` into the plan's own cache directory; then, in a fresh interpreter with HF_DATASETS_CACHE set to
  it and HF_DATASETS_OFFLINE=1 (what the training job runs with), the loader's own call without a revision, which must
  resolve to the pinned commit's build (its Arrow files under `.../<commit>/`);
- `gsm8k`: GSM8K at its pinned commit as JSONL (prepare_gsm8k.py, beside this file);
- `staged`: each jobData dataset: a Hub dataset at its commit (`load_dataset(<id>, <subset>, split=<split>,
  revision=<commit>, data_files=<files>)`), or the files of a folder (a gs:// folder the Job mounts through Cloud
  Storage FUSE, read-only, or a path on Lustre) by their format. The rows must exist and carry the input and output
  columns; they are written as JSONL with exactly those two columns (renamed to the train entry's names), plus
  `task_name` where the plan says so, each file to a temporary name and renamed, and the directory's `_SUCCESS` last.

A problem with the data itself (no such dataset, revision, split or file, a missing column, no rows) ends the program
with one line naming the jobData key and exit code 3, which the Job's podFailurePolicy turns into a failed Job at once
(no retry: the data will not change); the line is also the pod's termination message. Anything else (the network)
exits 1 and the Job retries.
"""

import glob
import json
import os
import subprocess
import sys
import time

BAD_DATA = 3
PLAN_VERSION = 1
MARKER = "_SUCCESS"
FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
TERMINATION_LOG = "/dev/termination-log"


class BadData(Exception):
    """One line about the data, naming its jobData key."""


def say(message):
    print(f"stage_data: {message}", flush=True)


def fail(message, code=1):
    line = f"stage_data: {message}"
    try:
        with open(TERMINATION_LOG, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass  # outside a pod
    sys.stderr.write(line + "\n")
    sys.exit(code)


def write_atomically(path, lines):
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None  # absent or half-written by something else: never taken as done


def read_token():
    if os.environ.get("HF_TOKEN"):
        fail("HF_TOKEN is set in the environment; the token comes from the file HF_TOKEN_PATH names")
    path = os.environ.get("HF_TOKEN_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError as err:
        fail(f"cannot read the token file {path}: {err.strerror}")


def _datasets():
    # One line per step instead of progress bars (read when `datasets` is imported).
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import datasets  # NeMo-RL's environment has it; imported only when there is work

    return datasets


def _first_line(err):
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _is_bad_data(err):
    """Errors `datasets` raises for a dataset, revision, config, split or file that is not there."""
    names = {c.__name__ for c in type(err).__mro__}
    return bool(
        names
        & {
            "DatasetNotFoundError",
            "FileNotFoundError",
            "EmptyDatasetError",
            "DataFilesNotFoundError",
            "DatasetGenerationError",  # a file that does not parse as its format (an empty one included)
            "ValueError",
        }
    ) and not (names & {"ConnectionError", "HTTPError", "Timeout"})


# --- the built-in loaders' cache ------------------------------------------------------------------------------------
_VERIFY = """
import json, sys
from datasets import load_dataset
repo, config = sys.argv[1], sys.argv[2] or None
ds = load_dataset(repo, config) if config else load_dataset(repo)
files = [f["filename"] for split in ds.values() for f in split.cache_files]
print(json.dumps(files))
"""


def builtin(step, token):
    cache, wanted = step["cache"], step["datasets"]
    marker = os.path.join(cache, MARKER)
    done = read_json(marker)
    if done == wanted:
        say(f"built-in datasets: already in {cache}")
        return
    if not wanted:
        return
    datasets = _datasets()
    for d in wanted:
        repo, config, rev = d["repo_id"], d["config"], d["revision"]
        started = time.monotonic()
        try:
            datasets.load_dataset(repo, config, revision=rev, cache_dir=cache, token=token)
        except Exception as err:  # noqa: BLE001 - classified, then reported in one line
            if _is_bad_data(err):
                raise BadData(f"built-in dataset {repo}@{rev}: {type(err).__name__}: {err}") from None
            raise
        # What the training job's unmodified loader gets: offline, the cache holding only this build.
        env = {**os.environ, "HF_DATASETS_CACHE": cache, "HF_DATASETS_OFFLINE": "1"}
        out = subprocess.run(
            [sys.executable, "-c", _VERIFY, repo, config or ""], env=env, capture_output=True, text=True, check=False
        )
        files = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else []
        if not files or any(f"/{rev}/" not in f for f in files):
            fail(
                f"built-in dataset {repo}: the offline load does not read the pinned commit {rev} "
                f"({files or out.stderr.strip().splitlines()[-1:]})"
            )
        say(f"built-in dataset {repo}@{rev}: cached in {time.monotonic() - started:.0f} s; the offline load reads it")
    write_atomically(marker, [json.dumps(wanted, sort_keys=True)])


def gsm8k(step, token):
    import prepare_gsm8k  # beside this file in the ConfigMap

    if os.path.exists(os.path.join(step["dir"], prepare_gsm8k.MARKER)):
        say(f"gsm8k: already prepared in {step['dir']}")
        return
    datasets = _datasets()
    try:
        counts = prepare_gsm8k.prepare(step["dir"], step["revision"], datasets.load_dataset, token=token)
    except prepare_gsm8k.BadRows as err:
        raise BadData(f"gsm8k: {err}") from None
    say(f"gsm8k: wrote {counts} to {step['dir']}")


# --- jobData -------------------------------------------------------------------------------------------------------
def _local_files(key, source):
    shown = source.get("shown_as", source["dir"])
    directory, pattern = source["dir"], source["files"]
    if not os.path.isdir(directory):
        raise BadData(f"{key}.dataset: {shown} does not exist (no folder {directory})")
    files = sorted(
        p for p in glob.glob(os.path.join(glob.escape(directory), pattern), recursive=True) if os.path.isfile(p)
    )
    if not files:
        raise BadData(f"{key}.dataset: no file matches {pattern!r} in {shown}")
    formats = {FORMATS.get(os.path.splitext(p)[1]) for p in files}
    if None in formats or len(formats) != 1:
        exts = sorted({os.path.splitext(p)[1] or "(none)" for p in files})
        raise BadData(f"{key}.files: the files of {shown} mix formats or have none of {', '.join(FORMATS)}: {exts}")
    return formats.pop(), files, shown


def load_entry(datasets, entry, token):
    key, source = entry["key"], entry["source"]
    local = "hub" not in source
    try:
        if not local:
            shown = f"{source['hub']}@{source['revision']}"
            kwargs = {"revision": source["revision"], "token": token}
            if source.get("files"):
                kwargs["data_files"] = source["files"]
            ds = datasets.load_dataset(
                source["hub"], source.get("subset"), split=source.get("split") or "train", **kwargs
            )
        else:
            fmt, files, shown = _local_files(key, source)
            if all(os.path.getsize(p) == 0 for p in files):
                raise BadData(f"{key}.dataset: {shown} has no rows (its files are empty)")
            ds = datasets.load_dataset(fmt, data_files=files, split="train")
    except BadData:
        raise
    except Exception as err:  # noqa: BLE001 - classified, then reported in one line
        # A local file that does not load is the file's problem, whatever `datasets` raises for it (a parse error,
        # StopIteration on a file without a row in 4.8.5); only an I/O error of the mount is worth a retry.
        if _is_bad_data(err) or (local and (isinstance(err, FileNotFoundError) or not isinstance(err, OSError))):
            message = _first_line(err)
            if err.__cause__ is not None:
                message += f" ({type(err.__cause__).__name__}: {_first_line(err.__cause__)})"
            raise BadData(
                f"{key}: {source.get('hub') or source.get('shown_as')}: {type(err).__name__}: {message}"
            ) from None
        raise
    return ds, shown


def rows_as_jsonl(entry, ds, shown):
    key, ik, ok = entry["key"], entry["input_key"], entry["output_key"]
    columns = list(ds.column_names)
    for field, column in (("inputKey", ik), ("outputKey", ok)):
        if column not in columns:
            raise BadData(f"{key}.{field}: column {column!r} is not in {shown} (columns: {', '.join(columns)})")
    if len(ds) == 0:
        raise BadData(f"{key}.dataset: {shown} has no rows")
    lines = []
    for i, row in enumerate(ds.select_columns([ik, ok])):
        if row[ik] is None or row[ok] is None:
            raise BadData(f"{key}: row {i} of {shown} has no {ik if row[ik] is None else ok}")
        out = {entry["as_input"]: row[ik], entry["as_output"]: row[ok]}
        if entry.get("task_name"):
            out["task_name"] = entry["task_name"]
        lines.append(json.dumps(out, ensure_ascii=False))
    return lines


def staged(step, token):
    marker = step["marker"]
    wanted = step["entries"]
    done = read_json(marker)
    if isinstance(done, dict) and done.get("entries") == wanted:
        say(f"jobData: already staged in {step['dir']}")
        return
    datasets = _datasets()
    counts = {}
    jsonl = []
    for entry in wanted:
        ds, shown = load_entry(datasets, entry, token)
        lines = rows_as_jsonl(entry, ds, shown)
        jsonl.append((entry["out"], lines))
        counts[entry["key"]] = len(lines)
        say(f"{entry['key']}: {len(lines)} rows from {shown}, columns {entry['input_key']}, {entry['output_key']}")
    # Every dataset read and checked before the first file is written: bad data leaves nothing behind.
    for path, lines in jsonl:
        write_atomically(path, lines)
    write_atomically(
        marker,
        [
            json.dumps(
                {
                    "entries": wanted,
                    "rows": counts,
                    "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                sort_keys=True,
            )
        ],
    )
    say(f"jobData: staged {counts} in {step['dir']}")


def main(argv):
    args = argv[1:]
    if len(args) != 2 or args[0] != "--plan":
        fail("usage: stage_data.py --plan '<json>'")
    try:
        plan = json.loads(args[1])
    except ValueError:
        fail("--plan is not JSON")
    if not isinstance(plan, dict) or plan.get("version") != PLAN_VERSION:
        fail(f"--plan is not a version {PLAN_VERSION} staging plan")
    if not os.environ.get("HF_HOME"):
        fail("HF_HOME is not set; the Job sets it to the cache on Lustre")
    token = read_token()
    try:
        builtin(plan["builtin"], token)
        if plan.get("gsm8k"):
            gsm8k(plan["gsm8k"], token)
        if plan.get("staged"):
            staged(plan["staged"], token)
    except BadData as err:
        fail(str(err), BAD_DATA)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
