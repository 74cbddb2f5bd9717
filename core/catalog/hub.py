"""What the recipes load from the Hugging Face Hub, pinned: models (revision, size, parameters), datasets, and
every key of NeMo-RL's configs that names something NeMo-RL loads. Each fact names its source.
"""

from __future__ import annotations

from dataclasses import dataclass

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

# Hugging Face datasets each recipe's data loader downloads (NeMo-RL calls load_dataset without a revision,
# so the prefetch takes the branch head NeMo-RL will read). Sources: NVIDIA-NeMo/RL
# nemo_rl/data/datasets/response_datasets/deepscaler.py at v0.4.0 (c751f81) and v0.5.0 (6c70893);
# pod_programs/prepare_gsm8k.py for GSM8K.
RECIPE_DATASETS: dict[str, tuple[str, ...]] = {
    "DeepScaler": ("agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"),
    "gsm8k": ("openai/gsm8k",),
}
DATASET_REVISION = "main"
# NeMo-RL's built-in dataset names the recipes render -> the Hub dataset each loads (all in RECIPE_DATASETS):
# nemo_rl/data/datasets/response_datasets/__init__.py DATASET_REGISTRY, deepscaler.py and aime.py
# (`load_dataset("HuggingFaceH4/aime_2024", split="train")` for "AIME2024") at v0.7.0; v0.4.0/v0.5.0's
# DeepScalerDataset loads both itself (deepscaler.py at the tags).
BUILTIN_DATASET_HUB_IDS: dict[str, tuple[str, ...]] = {
    "DeepScaler": ("agentica-org/DeepScaleR-Preview-Dataset",),
    "AIME2024": ("HuggingFaceH4/aime_2024",),
}

# Every key of the releases' GRPO configs (the `configs` of NEMO_RL_RELEASES, resolved through their `defaults:`)
# whose value names something NeMo-RL loads, and how the rendered job pins it; tests/test_pinned_artefacts.py reads
# the real configs and fails on any such key missing here. Kinds:
# - "model": rendered as the prefetched snapshot's path (core.prefetch: `<mount>/models/<repo>@<revision>`);
# - "dataset": a built-in loader named by NeMo-RL (its Hub datasets are in RECIPE_DATASETS, prefetched) or
#   ResponseDataset on the JSONL files the job prepared on Lustre;
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
