"""Stand-ins that let the RayJob path run on a laptop or CI: no GPU, no NeMo-RL image, no network.

- `grpo_trainer.py`: the GRPO entry script stand-in (Hydra-style command line, NeMo-RL checkpointing).
- `install_workdir()`: lays out a directory standing in for /opt/nemo-rl: the stand-in at both entry script
  paths and each config path of the releases, holding `BASE_CONFIG`.
- `fake_datasets`: a `datasets` package stand-in serving GSM8K-shaped rows from memory.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterable

TRAINER = Path(__file__).with_name("grpo_trainer.py")

# Every GRPO entry script the catalog's releases name (infra.catalog.NemoRlRelease.grpo_entry).
ENTRY_SCRIPTS = ("examples/run_grpo_math.py", "examples/run_grpo.py")

# The keys of NeMo-RL's GRPO base config that the recipes override, with their values, transcribed from
# examples/configs/grpo_math_1B.yaml (v0.4/v0.5), which every GRPO config inherits. The stand-in applies
# Hydra's rules against it: a plain override must name one of these keys, a `+` override a key absent here.
BASE_CONFIG: dict = {
    "grpo": {"num_prompts_per_step": 32, "num_generations_per_prompt": 16, "max_num_steps": 1000000},
    "checkpointing": {"enabled": True, "checkpoint_dir": "results/grpo", "metric_name": "val_reward",
                      "higher_is_better": True, "keep_top_k": 3, "save_period": 10,
                      "checkpoint_must_save_by": None},
    "policy": {
        "model_name": "Qwen/Qwen2.5-1.5B",
        "train_global_batch_size": 512,
        "precision": "bfloat16",
        "dtensor_cfg": {"enabled": True, "tensor_parallel_size": 1},
        "megatron_cfg": {"enabled": False, "converter_type": "Qwen2ForCausalLM"},
        "generation": {
            "backend": "vllm",
            "vllm_cfg": {"tensor_parallel_size": 1, "gpu_memory_utilization": 0.6},
            "colocated": {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}},
        },
    },
    "data": {"prompt_file": "examples/prompts/cot.txt", "system_prompt_file": None, "shuffle": True,
             "dataset_name": "OpenMathInstruct-2"},
    "logger": {"log_dir": "logs", "wandb_enabled": False, "tensorboard_enabled": False,
               "wandb": {"project": "grpo-dev", "name": "grpo-dev-logger"}},
    "cluster": {"gpus_per_node": 1, "num_nodes": 1},
}


def install_workdir(workdir: Path, config_paths: Iterable[str]) -> None:
    """Put the stand-in trainer at every entry script path and BASE_CONFIG at each config path."""
    for rel in ENTRY_SCRIPTS:
        dest = workdir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TRAINER, dest)
    for rel in config_paths:
        dest = workdir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(BASE_CONFIG, indent=2, sort_keys=True) + "\n", encoding="utf-8")
