"""What the recipes load from the Hugging Face Hub, pinned: models (revision, size, parameters), datasets, and
every key of NeMo-RL's configs that names something NeMo-RL loads. Each fact names its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Revisions: a 40-hex commit id only, huggingface_hub's own test (`REGEX_COMMIT_HASH = "^[0-9a-f]{40}$"`,
# huggingface_hub/file_download.py, 0.34.4). Branches move, and so can tags (`HfApi.delete_tag` / `create_tag`,
# huggingface_hub/hf_api.py), so neither pins what the run trains from.
HF_COMMIT_RE = r"[0-9a-f]{40}"


@dataclass(frozen=True)
class ModelFacts:
    repo_id: str
    revision: str  # the `main` commit pinned by the recipes
    weight_bytes: int  # safetensors shards at that revision
    gated: bool  # the Hub asks for an accepted licence (token needed)
    source: str


# The Hub pages themselves are not in the search corpora; both commits are the `main` snapshots pinned by
# several independent public projects (exact-string search), one of which records the download size.
MODELS: dict[str, ModelFacts] = {
    "Qwen/Qwen2.5-72B-Instruct": ModelFacts(
        "Qwen/Qwen2.5-72B-Instruct",
        "495f39366efef23836d0cfae4fbe635880d2be31",
        145_000_000_000,
        False,
        "public fetch scripts pinning this commit for snapshot_download; a run log: '145 GB, 37/37 shards'",
    ),
    "google/gemma-3-27b-it": ModelFacts(
        "google/gemma-3-27b-it",
        "005ad3404e59d6023443cb575daa05336842228a",
        55_000_000_000,
        True,
        "a provenance table linking huggingface.co/google/gemma-3-27b-it to this commit; a manifest requiring "
        ">= 54,000,000,000 safetensors bytes (about 55 GB)",
    ),
}

# --- Datasets --------------------------------------------------------------------------------------------
# No NeMo-RL release passes a revision to `load_dataset` (`git grep -n revision <tag> -- nemo_rl/data`: nothing at
# v0.4.0 and v0.5.0, only a cache scan at v0.7.0 datasets/utils.py:239). So the pin comes from what the data staging
# Job (core/data.py, pod_programs/stage_data.py) leaves on Lustre: the built-in loaders read a `datasets` cache that
# holds exactly the pinned commits, offline; a user's data and GSM8K are JSONL files read through ResponseDataset.


@dataclass(frozen=True)
class DatasetFacts:
    repo_id: str
    revision: str  # the commit every run of the program reads
    source: str


# The Hub pages themselves are not in the search corpora; each commit is pinned by several independent public
# projects (exact-string search), and where a project shows its `datasets` cache or hub snapshot path, that path
# names the same commit.
DATASETS: dict[str, DatasetFacts] = {
    d.repo_id: d
    for d in (
        DatasetFacts(
            "openai/gsm8k",
            "cc7b047b6e5bb11b4f1af84efc572db110a51b3c",
            "projects pinning it as the openai/gsm8k revision; `datasets` caches at "
            "openai___gsm8k/main/0.0.0/cc7b047b... and hub snapshots datasets--openai--gsm8k/snapshots/cc7b047b...",
        ),
        DatasetFacts(
            "agentica-org/DeepScaleR-Preview-Dataset",
            "b6ae8c60f5c1f2b594e2140b91c49c9ad0949e29",
            "projects pinning it as the DeepScaleR-Preview-Dataset revision; a hub snapshot path "
            "datasets--agentica-org--DeepScaleR-Preview-Dataset/snapshots/b6ae8c60.../deepscaler.json",
        ),
        DatasetFacts(
            "HuggingFaceH4/aime_2024",
            "2fe88a2f1091d5048c0f36abc874fb997b3dd99a",
            "projects pinning it (30 rows, data/train-00000-of-00001.parquet); a hub snapshot path "
            "datasets--HuggingFaceH4--aime_2024/snapshots/2fe88a2f...",
        ),
        DatasetFacts(
            "nvidia/OpenMathInstruct-2",
            "469216e3f46f4dacf476b382e192485ea51a143e",
            "projects pinning it (split train_1M); hub snapshot paths "
            "datasets--nvidia--OpenMathInstruct-2/snapshots/469216e3.../data/train_1M-*.parquet",
        ),
    )
}

# GSM8K as the recipes train it: our own JSONL (pod_programs/prepare_gsm8k.py) of `openai/gsm8k`'s config `main`.
GSM8K_REPO, GSM8K_CONFIG, GSM8K_SPLITS = "openai/gsm8k", "main", ("train", "test")

_DS = "NVIDIA-NeMo/RL nemo_rl/data/datasets"
# NeMo-RL's built-in dataset names -> the Hub datasets each one's loader reads, as (repo id, config name) of its
# `load_dataset` call (a loader passes no revision, no data_files, no cache_dir), per release. A name absent here
# would load from the Hub at `main`: core.recipes refuses it.
BUILTIN_DATASET_LOADS: dict[str, dict[str, tuple[tuple[str, Optional[str]], ...]]] = {
    # response_datasets/__init__.py L69-78 dispatch; deepscaler.py L43 (train) and L46 (AIME 2024, repeated 16x as
    # validation); openmathinstruct2.py L54 (split train_1M by default).
    "v0.4.0": {
        "DeepScaler": (("agentica-org/DeepScaleR-Preview-Dataset", None), ("HuggingFaceH4/aime_2024", None)),
        "OpenMathInstruct-2": (("nvidia/OpenMathInstruct-2", None),),
    },
    # The same at deepscaler.py L46 / L49 and openmathinstruct2.py L56 (dispatch __init__.py L72-81).
    "v0.5.0": {
        "DeepScaler": (("agentica-org/DeepScaleR-Preview-Dataset", None), ("HuggingFaceH4/aime_2024", None)),
        "OpenMathInstruct-2": (("nvidia/OpenMathInstruct-2", None),),
    },
    # DATASET_REGISTRY in response_datasets/__init__.py L53-82: deepscaler.py L29-31 (train only), aime.py L44
    # (AIME2024), gsm8k.py L47 (`load_dataset("openai/gsm8k", "main")`, under "GSM8K" and "gsm8k"),
    # openmathinstruct2.py L51.
    "v0.7.0": {
        "DeepScaler": (("agentica-org/DeepScaleR-Preview-Dataset", None),),
        "AIME2024": (("HuggingFaceH4/aime_2024", None),),
        "GSM8K": (("openai/gsm8k", "main"),),
        "gsm8k": (("openai/gsm8k", "main"),),
        "OpenMathInstruct-2": (("nvidia/OpenMathInstruct-2", None),),
    },
}
BUILTIN_DATASET_SOURCE = f"{_DS} response_datasets/ at each release tag (lines in BUILTIN_DATASET_LOADS)"

# The `datasets` library each release's image runs (its uv.lock; tests/oracles/nemo_rl_environment/<tag>.txt): the
# cache layout the built-in loaders read offline is that library's. In 4.0.0, 4.4.1 and 4.8.5 alike:
# - HF_DATASETS_OFFLINE=1 sets the library's HF_HUB_OFFLINE (config.py L201-203 / L209-211 / L212-214), and a Hub id
#   then fails its Hub call and falls back to CachedDatasetModuleFactory (load.py L1017-1019 / L1024 / L1195), which
#   loads `<HF_DATASETS_CACHE>/<org>___<name>/<config>/<version>/<hash>`;
# - for a Hub dataset that hash is the commit it was built from (HubDatasetModuleFactory: load.py L699 / L700 / L707);
# - of several cached builds the newest by mtime wins (packaged_modules/cache/cache.py `# get most recent`, L69 /
#   L69 / L70), so each pin set gets a cache directory of its own (core.data.builtin_cache_dir).
# tests/test_data_staging.py runs each of the three libraries on the loopback Hub.
DATASETS_LIBRARY: dict[str, str] = {"v0.4.0": "4.0.0", "v0.5.0": "4.4.1", "v0.7.0": "4.8.5"}

# Every key of the releases' GRPO configs (the `configs` of NEMO_RL_RELEASES, resolved through their `defaults:`)
# whose value names something NeMo-RL loads, and how the rendered job pins it; tests/test_pinned_artefacts.py reads
# the real configs and fails on any such key missing here. Kinds:
# - "model": rendered as the prefetched snapshot's path (core.prefetch: `<mount>/models/<repo>@<revision>`);
# - "dataset": a built-in loader named by NeMo-RL (its Hub datasets are in BUILTIN_DATASET_LOADS, staged at their
#   pinned commits into the cache the job reads offline) or ResponseDataset on the JSONL files the data staging Job
#   wrote on Lustre;
# - "disabled": left null by every config and by every recipe field (the feature is off);
# - "local": a directory the job renders under the Lustre mount.
NEMO_RL_HUB_KEYS: dict[str, tuple[str, str]] = {
    "policy.model_name": ("model", "the weights"),
    "policy.tokenizer.name": (
        "model",
        "tokenizer and chat template: `${policy.model_name}` in grpo_math_1B.yaml, "
        "but the Gemma 3 recipes set `google/gemma-3-27b-it` literally "
        "(examples/configs/recipes/llm/grpo-gemma3-27b-it-8n8g-fsdp2tp8-actckpt-long.yaml "
        "at v0.5.0 and v0.7.0)",
    ),
    "policy.draft.model_name": ("disabled", "v0.7.0's speculative-decoding draft model (policy.draft.enabled false)"),
    "data.dataset_name": ("dataset", "v0.4.0/v0.5.0 flat data layout"),
    "data.train.dataset_name": ("dataset", "v0.7.0 data.train layout (core.recipes.overrides _train_validation_data)"),
    "data.validation.dataset_name": (
        "dataset",
        "v0.7.0 data.validation layout: AIME2024 with DeepScaler, ResponseDataset on the prepared GSM8K test file",
    ),
    "checkpointing.checkpoint_dir": ("local", "rendered to <mount>/checkpoints/<run name>"),
    "logger.log_dir": ("local", "rendered to <mount>/logs/<run name>"),
}

# --- Models the recipes train ------------------------------------------------------------------------------
# Parameter counts from the model cards on Hugging Face (used for checkpoint sizing).
MODEL_PARAMS: dict[str, int] = {
    "Qwen/Qwen2.5-72B-Instruct": 72_700_000_000,
    "google/gemma-3-27b-it": 27_400_000_000,
}
