"""NeMo-RL's dataset loading, per release, as a script run with that release's `datasets` (tests/datasets_envs.py).

NeMo-RL's data modules import torch, transformers and PIL at the top (nemo_rl/data/datasets/utils.py at every release),
which the `datasets` environments do not hold, so this follows the code on the path a job takes, line by line, with the
upstream lines cited (NVIDIA-NeMo/RL at v0.4.0 c751f811, v0.5.0 6c708930, v0.7.0 81aa43dd):

- `response <tag> <data config JSON>`: what the release's GRPO entry loads for `dataset_name: ResponseDataset`, printed
  as JSON ({"train": rows, "validation": rows or null, "task_names": ...}); each row is what ResponseDataset's map
  leaves (the conversation and the task name), and v0.4.0's rows must carry the task its processors know;
- `builtin <tag> <name>`: the `load_dataset` calls the release's built-in loader `<name>` makes, verbatim, printed as
  JSON ({"rows": [...first rows of each call...], "cache_files": [...]}).

Every `load_dataset` here is the real library of the release.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

from datasets import DatasetDict, load_dataset, load_from_disk


# --- load_dataset_from_path ------------------------------------------------------------------------------------------
def load_dataset_from_path_v040(data_path: str, data_split: Optional[str] = "train"):
    # nemo_rl/data/datasets/utils.py L64-83 at v0.4.0
    suffix = os.path.splitext(data_path)[-1]
    if suffix in [".json", ".jsonl"]:
        raw_dataset = load_dataset("json", data_files=data_path)
    else:
        raw_dataset = load_dataset(data_path)
    if data_split:
        raw_dataset = raw_dataset[data_split]
    elif isinstance(raw_dataset, DatasetDict) and "train" in raw_dataset:
        raw_dataset = raw_dataset["train"]
    return raw_dataset


def load_dataset_from_path_v050(data_path: str, data_split: Optional[str] = "train"):
    # nemo_rl/data/datasets/utils.py L64-89 at v0.5.0: v0.4.0's, with the save_to_disk fallback
    suffix = os.path.splitext(data_path)[-1]
    if suffix in [".json", ".jsonl"]:
        raw_dataset = load_dataset("json", data_files=data_path)
    else:
        try:
            raw_dataset = load_dataset(data_path)
        except ValueError as e:
            if "load_from_disk" in str(e):
                raw_dataset = load_from_disk(data_path)
            else:
                raise e
    if data_split:
        raw_dataset = raw_dataset[data_split]
    elif isinstance(raw_dataset, DatasetDict) and "train" in raw_dataset:
        raw_dataset = raw_dataset["train"]
    return raw_dataset


FILEEXT2TYPE = {
    ".arrow": "arrow",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
    ".txt": "text",
}


def load_dataset_from_path_v070(data_path: str, data_subset: Optional[str] = None, data_split: Optional[str] = "train"):
    # nemo_rl/data/datasets/utils.py L81-128 at v0.7.0
    suffix = os.path.splitext(data_path)[-1]
    if dataset_type := FILEEXT2TYPE.get(suffix):
        assert data_subset is None, "data_subset is only supported for huggingface datasets"
        raw_dataset = load_dataset(dataset_type, data_files=data_path)
    else:
        try:
            raw_dataset = load_dataset(data_path, data_subset) if data_subset else load_dataset(data_path)
        except ValueError as e:
            if "load_from_disk" in str(e):
                raw_dataset = load_from_disk(data_path)
            else:
                raise e
    if data_split:
        raw_dataset = raw_dataset[data_split]
    elif isinstance(raw_dataset, DatasetDict) and "train" in raw_dataset:
        raw_dataset = raw_dataset["train"]
    return raw_dataset


# --- ResponseDataset -------------------------------------------------------------------------------------------------
def response_dataset_v040(data_config: dict) -> dict:
    # response_datasets/__init__.py L97-115 at v0.4.0: the dispatch, then response_dataset.py L40-80
    if "train_data_path" not in data_config:
        raise ValueError("train_data_path is required when dataset_name is not one of the built-ins.")
    keys = ["val_data_path", "input_key", "output_key", "train_split", "val_split"]
    kw = {k: data_config[k] for k in keys if k in data_config}  # get_extra_kwargs, utils.py L86-101
    input_key, output_key = kw.get("input_key", "input"), kw.get("output_key", "output")
    train_ds = load_dataset_from_path_v040(data_config["train_data_path"], kw.get("train_split"))
    val_ds = load_dataset_from_path_v040(kw["val_data_path"], kw.get("val_split")) if kw.get("val_data_path") else None

    def add_messages_key(example):
        return {
            "messages": [
                {"role": "user", "content": example[input_key]},
                {"role": "assistant", "content": example[output_key]},
            ]
        }

    train_ds = train_ds.map(add_messages_key)
    if val_ds:
        val_ds = val_ds.map(add_messages_key)
    # examples/run_grpo_math.py L87-90: processors for "math" only; processed_dataset.py L96-101 asserts each row's
    # task_name among them.
    processors = {"math"}
    for ds in (train_ds, val_ds):
        for entry in ds or []:
            assert entry["task_name"] in processors, f"task processor not provided for {entry.get('task_name')}"
    return {"train": train_ds, "validation": val_ds, "task_names": sorted(processors)}


def response_dataset_v050(data_config: dict) -> dict:
    # response_datasets/__init__.py L109-127 at v0.5.0, then response_dataset.py L40-84
    if "train_data_path" not in data_config:
        raise ValueError("train_data_path is required when dataset_name is not one of the built-ins.")
    keys = ["val_data_path", "input_key", "output_key", "train_split", "val_split"]
    kw = {k: data_config[k] for k in keys if k in data_config}
    input_key, output_key = kw.get("input_key", "input"), kw.get("output_key", "output")
    task_name = "ResponseDataset"
    train_ds = load_dataset_from_path_v050(data_config["train_data_path"], kw.get("train_split"))
    val_ds = load_dataset_from_path_v050(kw["val_data_path"], kw.get("val_split")) if kw.get("val_data_path") else None

    def add_messages_key(example, task_name="ResponseDataset"):
        return {
            "messages": [
                {"role": "user", "content": example[input_key]},
                {"role": "assistant", "content": example[output_key]},
            ],
            "task_name": task_name,
        }

    if "messages" not in train_ds.column_names:
        train_ds = train_ds.map(add_messages_key, fn_kwargs={"task_name": task_name})
    if val_ds is not None and "messages" not in val_ds.column_names:
        val_ds = val_ds.map(add_messages_key, fn_kwargs={"task_name": task_name})
    # examples/run_grpo_math.py L85-93: the dataset's task_name is bound to the math processor.
    for ds in (train_ds, val_ds):
        for entry in ds or []:
            assert entry["task_name"] == task_name, entry
    return {"train": train_ds, "validation": val_ds, "task_names": [task_name]}


def _response_dataset_v070(cfg: dict):
    # response_dataset.py L42-76 at v0.7.0 (ResponseDataset(**cfg): every key of the entry is a kwarg)
    data_path = cfg["data_path"]
    input_key, output_key = cfg.get("input_key", "input"), cfg.get("output_key", "output")
    task_name = "-".join(data_path.split("/")[-2:]).split(".")[0]
    if task_name[0] == "-":
        task_name = task_name[1:]
    dataset = load_dataset_from_path_v070(data_path, cfg.get("subset"), cfg.get("split"))

    def format_data(data):
        return {
            "messages": [
                {"role": "user", "content": data[input_key]},
                {"role": "assistant", "content": data[output_key]},
            ],
            "task_name": task_name,
        }

    if "messages" not in dataset.column_names:
        dataset = dataset.map(format_data, remove_columns=dataset.column_names)
    else:
        dataset = dataset.add_column("task_name", [task_name] * len(dataset))
    val_dataset = None
    size = cfg.get("split_validation_size", 0)
    if size > 0:  # raw_dataset.py L36-49 split_train_validation
        split = dataset.train_test_split(test_size=int(size) if size >= 1 else size, seed=cfg.get("seed", 42))
        dataset, val_dataset = split["train"], split["test"]
    return dataset, val_dataset, task_name


def response_dataset_v070(data_config: dict) -> dict:
    # nemo_rl/data/utils.py setup_response_data L143-270 at v0.7.0: each entry filled from data.default
    # (datasets/utils.py L168-172 update_single_dataset_config: only the keys it lacks), loaded through
    # DATASET_REGISTRY["ResponseDataset"] (response_datasets/__init__.py L53-123), its split_validation_size share
    # added to the validation data.
    assert "train" in data_config
    default = data_config.get("default") or {}
    trains = data_config["train"] if isinstance(data_config["train"], list) else [data_config["train"]]
    train_rows, val_rows, names = [], [], []
    for cfg in trains:
        cfg = {**{k: v for k, v in default.items() if k not in cfg}, **cfg}
        assert cfg["dataset_name"] == "ResponseDataset", cfg["dataset_name"]
        ds, held_out, task = _response_dataset_v070(cfg)
        train_rows += list(ds)
        names.append(task)
        if held_out is not None:
            val_rows += list(held_out)
    validation = data_config.get("validation")
    for cfg in validation if isinstance(validation, list) else [validation] if validation else []:
        cfg = {**{k: v for k, v in default.items() if k not in cfg}, **cfg}
        assert cfg["dataset_name"] == "ResponseDataset", cfg["dataset_name"]
        ds, _, task = _response_dataset_v070(cfg)
        val_rows += list(ds)
        names.append(task)
    return {"train": train_rows, "validation": val_rows or None, "task_names": sorted(set(names))}


RESPONSE = {"v0.4.0": response_dataset_v040, "v0.5.0": response_dataset_v050, "v0.7.0": response_dataset_v070}


# --- the built-in loaders' calls, verbatim ----------------------------------------------------------------------------
def _deepscaler_v04():  # deepscaler.py L43, L46 at v0.4.0 (L46, L49 at v0.5.0)
    return [
        load_dataset("agentica-org/DeepScaleR-Preview-Dataset", split="train"),
        load_dataset("HuggingFaceH4/aime_2024", split="train"),
    ]


BUILTIN: dict[str, dict[str, Any]] = {
    "v0.4.0": {
        "DeepScaler": _deepscaler_v04,
        "OpenMathInstruct-2": lambda: [load_dataset("nvidia/OpenMathInstruct-2", split="train_1M")],  # L54, its default
    },
    "v0.5.0": {
        "DeepScaler": _deepscaler_v04,
        "OpenMathInstruct-2": lambda: [load_dataset("nvidia/OpenMathInstruct-2", split="train_1M")],  # L56
    },
    "v0.7.0": {
        # deepscaler.py L29-31, aime.py L44, gsm8k.py L47, openmathinstruct2.py L51 (split default train_1M)
        "DeepScaler": lambda: [load_dataset("agentica-org/DeepScaleR-Preview-Dataset", split="train")],
        "AIME2024": lambda: [load_dataset("HuggingFaceH4/aime_2024", split="train")],
        "GSM8K": lambda: [load_dataset("openai/gsm8k", "main")["train"]],
        "OpenMathInstruct-2": lambda: [load_dataset("nvidia/OpenMathInstruct-2", split="train_1M")],
    },
}


def _rows(ds) -> list:
    return [dict(r) for r in ds] if ds is not None else None  # type: ignore[return-value]


def main(argv: list[str]) -> int:
    what, tag, arg = argv[1], argv[2], argv[3]
    if what == "response":
        out = RESPONSE[tag](json.loads(arg))
        out = {k: (_rows(v) if k != "task_names" else v) for k, v in out.items()}
    else:
        loaded = BUILTIN[tag][arg]()
        out = {
            "rows": [dict(d[0]) for d in loaded],
            "lengths": [len(d) for d in loaded],
            "cache_files": [f["filename"] for d in loaded for f in d.cache_files],
        }
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
