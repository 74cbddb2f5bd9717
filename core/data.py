"""Your own training data (`jobData`) and the pinned built-in datasets: what the data staging Job leaves on Lustre,
and how the training command reads it. Pure code.

No NeMo-RL release passes a dataset revision to its loaders (core/catalog/hub.py), so the pin is what the staging
Job (a CPU Job in the release's image: workloads/data_staging.py, pod_programs/stage_data.py) stages before the
RayJob is created:

- a user's dataset (a Hub dataset at its commit, a `gs://` prefix or object, a path on Lustre) is read with the
  release's own `datasets`, checked (files, columns, at least one row) and written as JSONL under
  `<mount>/datasets/staged/<digest>/` (`staged()`), where NeMo-RL's ResponseDataset reads it in the release's layout
  (`hydra_keys()`); the digest names the source, its revision, the columns and the release, so another dataset or
  commit is another directory and another run name (`identity()`);
- GSM8K as the recipes train it: `openai/gsm8k` at its pinned commit as JSONL (`gsm8k_dir()`);
- a built-in loader's Hub datasets (DeepScaler, AIME2024, OpenMathInstruct-2, v0.7.0's GSM8K) are built into a
  `datasets` cache that holds exactly the pinned commits (`builtin_cache_dir()`), which the job reads offline
  (`training_env()`: HF_DATASETS_CACHE, HF_DATASETS_OFFLINE=1; the mechanism and its sources:
  core.catalog.DATASETS_LIBRARY).

The rows of a user's dataset are staged with two columns, the train entry's input and output keys (a validation
entry's own keys are renamed to those), plus `task_name: math` where the release's GRPO entry needs it; every other
column is dropped (ResponseDataset keeps only the conversation it builds from the two).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict

from core import catalog, prefetch
from core.keys import key
from core.lustre_paths import mount_root

SETTING = "jobData"
ENTRIES = ("train", "validation")
ENTRY_FIELDS = ("dataset", "revision", "inputKey", "outputKey", "split", "subset", "files")
# The column names ResponseDataset reads by default (response_dataset.py `input_key="input"`, `output_key="output"` at
# v0.4.0 L44-45, v0.5.0 L44-45, v0.7.0 L46-47).
DEFAULT_INPUT_KEY, DEFAULT_OUTPUT_KEY = "input", "output"
# Columns that change what ResponseDataset does: a `messages` column is taken as the conversation itself (v0.5.0
# response_dataset.py L59-67, v0.7.0 L64-72), and `task_name` is the column the GRPO entry dispatches on.
RESERVED_COLUMNS = ("messages", "task_name")
# Formats by file extension, as v0.7.0's load_dataset_from_path maps them (datasets/utils.py L96-103 FILEEXT2TYPE,
# minus arrow and text, which hold no named columns for inputKey/outputKey); the staging Job reads them with the
# release's `datasets` and writes JSONL, the one format every release's ResponseDataset reads from a file (a single
# .parquet file fails at v0.4.0 and v0.5.0: load_dataset_from_path sends it to `load_dataset(path)`, utils.py L74-76).
FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
DEFAULT_FILES = "*.jsonl"

DATASETS_DIR = "datasets"  # under the Lustre mount
STAGED_DIR = f"{DATASETS_DIR}/staged"
CACHE_DIR = f"{DATASETS_DIR}/cache"
MARKER = "_SUCCESS"
# Bumped when the staged files' layout changes, so a new layout never takes an old directory for done.
STAGING_VERSION = 1

# The v0.4.0 GRPO entry dispatches each row on its `task_name` (processed_dataset.py L96-101: `task_name =
# entry["task_name"]; assert task_name in self.task_data_processors`) and registers "math" only
# (examples/run_grpo_math.py L87-90); v0.4.0's ResponseDataset adds no such column (response_dataset.py L72-80) and
# docs/guides/grpo.md L90-94 asks for `{"task_name": "math", ...}`. v0.5.0's adds its own (L76-84), v0.7.0's formats
# rows with remove_columns (L64-68): the column is staged for v0.4.0 only.
ROW_TASK_NAME: dict[str, str] = {"v0.4.0": "math"}

_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# Bucket names: 3-63 characters of lowercase letters, digits, '-', '_' and '.', starting and ending with a letter or
# digit (cloud.google.com/storage/docs/buckets#naming). Object names here: the characters the job's argv and Hydra
# keep as written (no spaces, quotes, '$' or '\\'), no '..' and no empty component.
_GCS = re.compile(r"gs://([a-z0-9][a-z0-9._-]{1,61}[a-z0-9])(?:/(.*))?")
_PATH_CHARS = re.compile(r"[A-Za-z0-9._@=+/-]*")
_PATTERN_CHARS = re.compile(r"[A-Za-z0-9._@=+/*?\[\]-]+")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class DataEntry(BaseModel):
    """One dataset of jobData (train or validation), as checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    kind: str  # "hub" | "gcs" | "lustre"
    revision: Optional[str] = None  # Hub: the 40-hex commit
    subset: Optional[str] = None  # Hub: the config name
    split: Optional[str] = None  # Hub: the split
    files: Optional[str] = None  # a glob under a Hub repository, a gs:// prefix or a Lustre directory
    input_key: str = DEFAULT_INPUT_KEY
    output_key: str = DEFAULT_OUTPUT_KEY

    @property
    def bucket(self) -> Optional[str]:
        return _GCS.fullmatch(self.dataset).group(1) if self.kind == "gcs" else None  # type: ignore[union-attr]

    @property
    def object_path(self) -> str:
        """gs://: the object or prefix inside the bucket ('' for the whole bucket)."""
        m = _GCS.fullmatch(self.dataset)
        return (m.group(2) or "") if m else ""

    @property
    def is_file(self) -> bool:
        """A single object or file (its extension names its format), not a prefix or directory."""
        if self.kind == "hub":
            return False
        path = self.object_path if self.kind == "gcs" else self.dataset
        return not path.endswith("/") and posixpath.splitext(path)[1] in FORMATS

    @property
    def gcs_dir(self) -> str:
        """gs://: the folder the staging Job mounts (`only-dir`): the object's parent, or the prefix itself."""
        path = self.object_path.rstrip("/")
        return posixpath.dirname(path) if self.is_file else path

    @property
    def pattern(self) -> str:
        """The files to read under the mounted folder or the Lustre directory."""
        if self.is_file:
            return posixpath.basename(self.object_path if self.kind == "gcs" else self.dataset)
        return self.files or DEFAULT_FILES

    @property
    def grant_prefix(self) -> str:
        """gs://: what the read grant covers: the object itself, or every object under the prefix."""
        if self.is_file:
            return self.object_path
        return f"{self.gcs_dir}/" if self.gcs_dir else ""


class DataSpec(BaseModel):
    """jobData as checked: the training data and, optionally, validation data read with the same columns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    train: DataEntry
    validation: Optional[DataEntry] = None

    def entries(self) -> list[tuple[str, DataEntry]]:
        return [(n, e) for n, e in (("train", self.train), ("validation", self.validation)) if e is not None]

    @property
    def input_key(self) -> str:
        return self.train.input_key

    @property
    def output_key(self) -> str:
        return self.train.output_key


def _k(*parts: str) -> str:
    return key(".".join((SETTING, *parts)))


def _entry(
    name: str, raw: Any, mount: Optional[str], train: Optional[DataEntry]
) -> tuple[Optional[DataEntry], list[str]]:
    """One entry, or every problem with it (one line each, naming its key)."""
    if not isinstance(raw, dict):
        return None, [f"{_k(name)}: must be an object with dataset (and revision, inputKey, outputKey, ...)"]
    p = [
        f"{_k(name, f)}: is not a field of a dataset; fields: {', '.join(ENTRY_FIELDS)}"
        for f in sorted(raw)
        if f not in ENTRY_FIELDS
    ]
    bad_type = [f for f in ENTRY_FIELDS if f in raw and raw[f] is not None and not isinstance(raw[f], str)]
    p += [f"{_k(name, f)}: must be a string (got {raw[f]!r})" for f in bad_type]
    if p:
        return None, p
    dataset = raw.get("dataset")
    if not dataset:
        return None, [
            f"{_k(name, 'dataset')}: is required: a Hub dataset id (org/name), a gs:// prefix or object, or a path "
            "on the Lustre volume"
        ]
    kind, problem = _kind(dataset, mount)
    if problem:
        return None, [f"{_k(name, 'dataset')}: {problem}"]
    get = raw.get
    fields: dict[str, Any] = {"dataset": dataset, "kind": kind}
    if kind == "hub":
        rev = get("revision")
        if not rev:
            p.append(
                f"{_k(name, 'revision')}: a Hub dataset needs the 40-hex commit to train on (its commit history on "
                "the Hub); NeMo-RL would otherwise read whatever `main` is at the time"
            )
        elif not re.fullmatch(catalog.HF_COMMIT_RE, rev):
            p.append(
                f"{_k(name, 'revision')}: {rev!r} is not a commit hash (40 lowercase hex digits); branches and tags "
                "move"
            )
        fields["revision"] = rev
        for f in ("subset", "split"):
            v = get(f)
            if v is not None and not _NAME.fullmatch(v):
                p.append(f"{_k(name, f)}: {v!r} is not a {f} name (letters, digits, '.', '_', '-')")
            fields[f] = v
        if get("split") is not None and get("files") is not None:
            p.append(f"{_k(name, 'split')}: set split or files, not both (a files pattern loads as the split train)")
        if name == "validation" and get("split") is None and get("files") is None:
            p.append(
                f"{_k(name, 'split')}: name the Hub dataset's validation split (e.g. test), or its files with files"
            )
    else:
        for f in ("revision", "subset", "split"):
            if get(f) is not None:
                p.append(
                    f"{_k(name, f)}: applies to a Hub dataset only; {'gs://' if kind == 'gcs' else 'Lustre'} data is "
                    "read as files" + ("" if f == "revision" else " (name them with files)")
                )
    files = get("files")
    if files is not None:
        problem = _pattern_problem(files)
        if problem:
            p.append(f"{_k(name, 'files')}: {problem}")
        elif kind != "hub" and _is_file(kind, dataset):
            p.append(f"{_k(name, 'files')}: {dataset} is a single file; files applies to a prefix or directory")
        elif kind != "hub" and posixpath.splitext(files)[1] not in FORMATS:
            p.append(f"{_k(name, 'files')}: {files!r} must end in one of {', '.join(FORMATS)} (the files' format)")
        fields["files"] = files
    for f, default in (("inputKey", DEFAULT_INPUT_KEY), ("outputKey", DEFAULT_OUTPUT_KEY)):
        inherited = getattr(train, "input_key" if f == "inputKey" else "output_key") if train else default
        v = get(f) or inherited
        if not _COLUMN.fullmatch(v):
            p.append(f"{_k(name, f)}: {v!r} is not a column name (a letter or '_', then letters, digits, '_')")
        elif v in RESERVED_COLUMNS:
            p.append(f"{_k(name, f)}: {v!r} changes what NeMo-RL's ResponseDataset does with a row; rename the column")
        fields["input_key" if f == "inputKey" else "output_key"] = v
    if not p and fields["input_key"] == fields["output_key"]:
        p.append(f"{_k(name, 'outputKey')}: is the same column as inputKey ({fields['input_key']!r})")
    if p:
        return None, p
    return DataEntry(**fields), []


def _is_file(kind: str, dataset: str) -> bool:
    path = (_GCS.fullmatch(dataset).group(2) or "") if kind == "gcs" else dataset  # type: ignore[union-attr]
    return not path.endswith("/") and posixpath.splitext(path)[1] in FORMATS


def _kind(dataset: str, mount: Optional[str]) -> tuple[str, Optional[str]]:
    """("hub" | "gcs" | "lustre", problem)."""
    if dataset.startswith("gs://"):
        m = _GCS.fullmatch(dataset)
        if m is None:
            return (
                "gcs",
                f"{dataset!r} is not gs://<bucket>/<prefix or object> (bucket: 3-63 lowercase letters, digits, '-', "
                "'_', '.')",
            )
        path = m.group(2) or ""
        if not _PATH_CHARS.fullmatch(path) or ".." in path or "//" in path:
            return "gcs", f"{dataset!r}: object names here take letters, digits and . _ @ = + / - (no '..', no '//')"
        if not path.endswith("/") and posixpath.splitext(path)[1] and posixpath.splitext(path)[1] not in FORMATS:
            return "gcs", f"{dataset!r} is neither a prefix nor a file of a known format ({', '.join(FORMATS)})"
        return "gcs", None
    if dataset.startswith("/"):
        if not _PATH_CHARS.fullmatch(dataset) or ".." in dataset or "//" in dataset:
            return "lustre", f"{dataset!r}: paths here take letters, digits and . _ @ = + / - (no '..', no '//')"
        if mount is not None and (problem := _lustre_problem(dataset, mount)):
            return "lustre", problem
        ext = posixpath.splitext(dataset)[1]
        if ext and not dataset.endswith("/") and ext not in FORMATS:
            return "lustre", f"{dataset!r} is neither a directory nor a file of a known format ({', '.join(FORMATS)})"
        return "lustre", None
    if _HUB_ID.fullmatch(dataset) and ".." not in dataset:
        return "hub", None
    return "hub", (
        f"{dataset!r} is neither a Hub dataset id (org/name), a gs:// prefix or object, nor a path on the Lustre "
        "volume (under lustreMountPath)"
    )


def _lustre_problem(dataset: str, mount: str) -> Optional[str]:
    root = mount_root(mount)
    if not dataset.startswith(root + "/") or dataset.startswith(f"{root}/{DATASETS_DIR}/"):
        return (
            f"{dataset!r} is not on the Lustre volume: a path under the mount {root}/ (lustreMountPath), outside "
            f"{root}/{DATASETS_DIR}/ (the staged copies)"
        )
    return None


def lustre_problems(spec: Optional[DataSpec], mount_path: str) -> list[str]:
    """A Lustre dataset must lie under the stack's mount (the rule needs lustreMountPath, which jobData's own parse does
    not see)."""
    out = []
    for name, e in spec.entries() if spec is not None else []:
        if e.kind == "lustre" and (problem := _lustre_problem(e.dataset, mount_path)):
            out.append(f"{_k(name, 'dataset')}: {problem}")
    return out


def _pattern_problem(pattern: str) -> Optional[str]:
    if not _PATTERN_CHARS.fullmatch(pattern) or ".." in pattern or pattern.startswith("/"):
        return f"{pattern!r} is not a relative glob (letters, digits, . _ - / * ? [ ], no '..')"
    return None


def parse(raw: Any, mount_path: Optional[str]) -> tuple[Optional[DataSpec], list[str]]:
    """jobData (a JSON object: train, optional validation) checked offline: one line per problem naming its key.
    Without `mount_path`, a Lustre path is only checked for its form (lustre_problems() checks where it lies)."""
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [f"{key(SETTING)}: must be an object with train (and optional validation) datasets (got {raw!r})"]
    p = [f"{_k(n)}: is not a part of jobData; parts: {', '.join(ENTRIES)}" for n in sorted(raw) if n not in ENTRIES]
    if "train" not in raw:
        p.append(f'{_k("train")}: is required: the training dataset ({{"dataset": ..., ...}})')
    if p:
        return None, p
    train, p = _entry("train", raw["train"], mount_path, None)
    validation = None
    if raw.get("validation") is not None:
        validation, more = _entry("validation", raw["validation"], mount_path, train)
        p += more
    if p or train is None:
        return None, p
    return DataSpec(train=train, validation=validation), []


# --- where the staged data lives ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Staged:
    dir: str
    train: str
    validation: Optional[str]
    marker: str


def _digest(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:n]


def staged(spec: DataSpec, tag: str, mount_path: str) -> Staged:
    """The JSONL files of `spec` on Lustre for release `tag`. The directory name is a digest (no '.': v0.7.0 names a
    ResponseDataset's task after the path's last two components, cut at the first '.': response_dataset.py L56-58)."""
    d = f"{mount_root(mount_path)}/{STAGED_DIR}/" + _digest(
        {"v": STAGING_VERSION, "release": tag, "data": spec.model_dump(mode="json")}
    )
    return Staged(
        dir=d,
        train=f"{d}/train.jsonl",
        validation=f"{d}/validation.jsonl" if spec.validation is not None else None,
        marker=f"{d}/{MARKER}",
    )


def gsm8k_dir(mount_path: str) -> str:
    """GSM8K's JSONL (pod_programs/prepare_gsm8k.py) at the catalog's commit of openai/gsm8k."""
    return f"{mount_root(mount_path)}/{DATASETS_DIR}/gsm8k@{catalog.DATASETS[catalog.GSM8K_REPO].revision}"


def builtin_loads(names: list[str], tag: str) -> list[tuple[str, Optional[str]]]:
    """The (repo id, config) the named built-in loaders of release `tag` read, each once, in a stable order."""
    loads = catalog.BUILTIN_DATASET_LOADS.get(tag, {})
    return sorted({load for n in names for load in loads.get(n, ())}, key=lambda x: (x[0], x[1] or ""))


def builtin_cache_dir(loads: list[tuple[str, Optional[str]]], tag: str, mount_path: str) -> str:
    """The `datasets` cache the job reads its built-in datasets from: one per (library version, pinned commits), so it
    holds exactly the pinned builds (of several, the library takes the newest: core.catalog.DATASETS_LIBRARY)."""
    pins = [[r, c, catalog.DATASETS[r].revision] for r, c in loads]
    return f"{mount_root(mount_path)}/{CACHE_DIR}/" + _digest({"datasets": catalog.DATASETS_LIBRARY[tag], "pins": pins})


def training_env(cache_dir: str) -> dict[str, str]:
    """The job's variables that make its built-in loaders read the staged cache and never the Hub: HF_DATASETS_OFFLINE
    turns off only the `datasets` library's Hub calls (core.catalog.DATASETS_LIBRARY: its own HF_HUB_OFFLINE)."""
    return {"HF_DATASETS_CACHE": cache_dir, "HF_DATASETS_OFFLINE": "1"}


# --- the training command ----------------------------------------------------------------------------------------
def hydra_keys(spec: DataSpec, tag: str, flat: bool, mount_path: str) -> dict[str, Any]:
    """The config keys that point NeMo-RL's ResponseDataset at the staged files, in the release's layout.

    Flat (v0.4.0/v0.5.0, response_datasets/__init__.py `ResponseDataset(train_data_path=..., **get_extra_kwargs(...,
    [val_data_path, input_key, output_key, train_split, val_split]))`): a .jsonl path loads with
    `load_dataset("json", data_files=path)`, whose only split is `train` (utils.py load_dataset_from_path), hence both
    split keys; no validation is an explicit null, so no key of the config's own is left to name one.
    v0.7.0 (data.train / data.validation, nemo_rl/data/utils.py setup_response_data): each entry's own keys, since
    data.default fills only the keys an entry lacks (datasets/utils.py update_single_dataset_config L168-172) and the
    base config's data.train names OpenMathInstruct-2 with split_validation_size 0.05; `split: train` over any split
    the config names; with validation data of its own, no share of the training file is held out."""
    s = staged(spec, tag, mount_path)
    ik, ok = spec.input_key, spec.output_key
    if flat:
        return {
            "data.dataset_name": "ResponseDataset",
            "data.train_data_path": s.train,
            "data.val_data_path": s.validation,
            "data.input_key": ik,
            "data.output_key": ok,
            "data.train_split": "train",
            "data.val_split": "train" if s.validation else None,
        }
    out: dict[str, Any] = {
        "data.train.dataset_name": "ResponseDataset",
        "data.train.data_path": s.train,
        "data.train.input_key": ik,
        "data.train.output_key": ok,
        "data.train.split": "train",
    }
    if s.validation is not None:
        out.update(
            {
                "data.train.split_validation_size": 0,
                "data.validation.dataset_name": "ResponseDataset",
                "data.validation.data_path": s.validation,
                "data.validation.input_key": ik,
                "data.validation.output_key": ok,
                "data.validation.split": "train",
            }
        )
    return out


FLAT_KEYS = (
    "data.dataset_name",
    "data.train_data_path",
    "data.val_data_path",
    "data.input_key",
    "data.output_key",
    "data.train_split",
    "data.val_split",
)
ENTRY_KEYS = tuple(
    f"data.{part}.{k}"
    for part in ("train", "validation")
    for k in ("dataset_name", "data_path", "input_key", "output_key", "split", "split_validation_size")
)
# Every key hydra_keys() may render, in either layout (tests/test_job_data.py checks it against what it renders).
HYDRA_KEYS: frozenset[str] = frozenset(FLAT_KEYS + ENTRY_KEYS)


def identity(spec: DataSpec) -> dict[str, Any]:
    """What the run's checkpoints were trained on, for the run fingerprint: each dataset with its revision."""
    return {name: e.model_dump(mode="json", exclude_none=True) for name, e in spec.entries()}


def builtin_identity(loads: list[tuple[str, Optional[str]]]) -> dict[str, str]:
    return {f"{r}{'/' + c if c else ''}": catalog.DATASETS[r].revision for r, c in loads}


# --- the staging Job's plan ----------------------------------------------------------------------------------------
GCS_MOUNT_ROOT = "/data-sources"  # where the staging Job mounts each gs:// folder
# How much the staging Job's deadline (and Pulumi's wait for it) allows for: no dataset's size is known offline (the
# catalog records none). 100 GB at the weights prefetch's slowest tolerated rate plus its margin (core.prefetch):
# about an hour; a larger dataset belongs on Lustre already (a path under lustreMountPath), or in a bucket the staging
# reads at the bucket's speed.
STAGING_CEILING_BYTES = 100_000_000_000


def staging_timeout_seconds() -> int:
    return int(STAGING_CEILING_BYTES / prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S) + prefetch.TIMEOUT_MARGIN_SECONDS


def gcs_volumes(spec: Optional[DataSpec]) -> list[tuple[str, str, str]]:
    """(volume name, bucket, folder) of each distinct gs:// folder the staging Job mounts, in a stable order."""
    if spec is None:
        return []
    seen = sorted({(e.bucket or "", e.gcs_dir) for _, e in spec.entries() if e.kind == "gcs"})
    return [(f"gcs-{i}", b, d) for i, (b, d) in enumerate(seen)]


def gcs_grants(spec: Optional[DataSpec]) -> dict[str, tuple[str, ...]]:
    """bucket -> the object prefixes (or objects) the staging Job reads there; what a prefix covers is not repeated."""
    out: dict[str, set[str]] = {}
    for _, e in spec.entries() if spec is not None else []:
        if e.kind == "gcs":
            out.setdefault(e.bucket or "", set()).add(e.grant_prefix)
    covered = {
        b: {r for r in reads if any(p != r and p.endswith("/") and r.startswith(p) or p == "" != r for p in reads)}
        for b, reads in out.items()
    }
    return {b: tuple(sorted(v - covered[b])) for b, v in sorted(out.items())}


def staging_plan(
    spec: Optional[DataSpec],
    *,
    tag: str,
    mount_path: str,
    builtins: list[tuple[str, Optional[str]]],
    gsm8k: bool,
) -> dict[str, Any]:
    """What pod_programs/stage_data.py does, as the JSON it takes (`--plan`)."""
    plan: dict[str, Any] = {"version": STAGING_VERSION, "release": tag}
    plan["builtin"] = {
        "cache": builtin_cache_dir(builtins, tag, mount_path),
        "datasets": [{"repo_id": r, "config": c, "revision": catalog.DATASETS[r].revision} for r, c in builtins],
    }
    if gsm8k:
        plan["gsm8k"] = {"dir": gsm8k_dir(mount_path), "revision": catalog.DATASETS[catalog.GSM8K_REPO].revision}
    entries = []
    if spec is not None:
        s = staged(spec, tag, mount_path)
        volumes = {(b, d): name for name, b, d in gcs_volumes(spec)}
        for name, e in spec.entries():
            source: dict[str, Any]
            if e.kind == "hub":
                source = {
                    "hub": e.dataset,
                    "revision": e.revision,
                    "subset": e.subset,
                    "split": e.split,
                    "files": e.files,
                }
            elif e.kind == "gcs":
                source = {
                    "dir": f"{GCS_MOUNT_ROOT}/{volumes[(e.bucket or '', e.gcs_dir)]}",
                    "files": e.pattern,
                    "shown_as": e.dataset,
                }
            else:
                directory = posixpath.dirname(e.dataset) if e.is_file else e.dataset.rstrip("/")
                source = {"dir": directory, "files": e.pattern, "shown_as": e.dataset}
            entries.append(
                {
                    "key": f"{SETTING}.{name}",
                    "source": {k: v for k, v in source.items() if v is not None},
                    "input_key": e.input_key,
                    "output_key": e.output_key,
                    "as_input": spec.input_key,
                    "as_output": spec.output_key,
                    "task_name": ROW_TASK_NAME.get(tag),
                    "out": s.train if name == "train" else s.validation,
                }
            )
        plan["staged"] = {"dir": s.dir, "marker": s.marker, "entries": entries}
    return plan
