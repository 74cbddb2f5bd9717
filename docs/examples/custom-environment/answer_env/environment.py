"""Rewards a response that contains the ground-truth answer (a looser check than NeMo-RL's math verifier).

A NeMo-RL environment is a Ray actor class implementing EnvironmentInterface (nemo_rl/environments/interfaces.py):
`step(message_log_batch, metadata)` returns an EnvironmentReturn with one reward per sample. NeMo-RL creates it
with the config's `env.<name>` section (`create_env`, nemo_rl/environments/utils.py); the math data processors pass
each sample's answer as `metadata["ground_truth"]`.
"""

from __future__ import annotations

import ray
import torch
from nemo_rl.environments.interfaces import EnvironmentInterface, EnvironmentReturn


@ray.remote(max_restarts=-1, max_task_retries=-1)
class ContainsAnswerEnvironment(EnvironmentInterface):
    def __init__(self, cfg: dict):
        # env.contains_answer.* in the config
        self.reward = float(cfg.get("reward", 1.0))
        self.case_sensitive = bool(cfg.get("case_sensitive", False))

    def step(self, message_log_batch, metadata):
        rewards = []
        for log, meta in zip(message_log_batch, metadata, strict=True):
            answer = str((meta or {}).get("ground_truth", ""))
            response = "".join(str(m["content"]) for m in log if m["role"] == "assistant")
            if not self.case_sensitive:
                answer, response = answer.lower(), response.lower()
            rewards.append(self.reward if answer and answer in response else 0.0)
        n = len(message_log_batch)
        return EnvironmentReturn(
            observations=[{"role": "environment", "content": "correct" if r else "incorrect"} for r in rewards],
            metadata=metadata,
            next_stop_strings=[None] * n,
            rewards=torch.tensor(rewards),
            terminateds=torch.ones(n, dtype=torch.bool),
            answers=None,
        )

    def global_post_process_and_metrics(self, batch):
        return batch, {}
