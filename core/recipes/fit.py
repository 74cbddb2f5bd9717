"""Whether a run's resolved config fits its cluster and NeMo-RL's own checks, whatever set each key.

Pure code. The rules read the config NeMo-RL runs with: the config file and its defaults: chain, the user's own
files, the recipe's keys and every dotted jobOverrides key (core.recipes.resolve.checked_config), so a batch shape or
parallel size set by a file, a dotted key or a recipe is checked alike. Each problem is one line naming the setting
the deciding value came from (`Provenance`): a dotted jobOverrides key, a jobConfigFiles file, a recipe field, the
chosen config (jobOverrides.config_path) or the recipe's (jobRecipe).

The rules are NeMo-RL's own, at v0.4.0, v0.5.0 and v0.7.0 (NVIDIA-NeMo/RL at the tags of nemo-rl-reference/SOURCES.md):

- the cluster split (nemo_rl/algorithms/grpo.py `setup`, v0.4.0 L291-406, v0.5.0 L297-407, v0.7.0 L454-660):
  colocated generation shares the training cluster (num_nodes x gpus_per_node); non-colocated generation on one
  node takes policy.generation.colocated.resources.gpus_per_node GPUs of it (num_nodes 1 or null there) and trains
  on the rest; on several nodes it takes resources.num_nodes whole nodes (gpus_per_node equal to the cluster's) and
  trains on the others;
- the training layout (nemo_rl/models/policy/lm_policy.py `Policy.__init__`, v0.4.0 L121-139, v0.5.0 L133-151,
  v0.7.0 L175-211): the training world size must be a multiple of PP x CP x TP (Megatron: policy.megatron_cfg's
  tensor_model_parallel_size, pipeline_model_parallel_size, context_parallel_size; DTensor: policy.dtensor_cfg's
  tensor_parallel_size and context_parallel_size, PP 1), "World size (...) must be divisible by PP * CP * TP";
- vLLM's layout (nemo_rl/models/generation/vllm/vllm_generation.py, v0.4.0 and v0.5.0 L58-67 and L216, v0.7.0 L105-114
  and L252): the generation world size must be a multiple of TP x PP ("World size must be a multiple of model
  parallel size"); a TP x PP group no larger than a node is cut from each node's placement group (L322-331 at
  v0.5.0), so it must also divide the GPUs of a node, or fewer groups are made than the data parallel size and
  `assert self.dp_size == self.worker_group.dp_size` stops the run; a larger group spans nodes (L145);
- the batch shape (nemo_rl/distributed/batched_data_dict.py `shard_by_batch_size`, v0.4.0 and v0.5.0 L374-380, v0.7.0
  L395-401, called by lm_policy.py `Policy.train` with batch_size=policy.train_global_batch_size and one shard per
  data-parallel rank): the step's rollouts (grpo.num_prompts_per_step x grpo.num_generations_per_prompt) must be a
  multiple of the global batch, and the global batch a multiple of the data-parallel size (training world / (PP x CP
  x TP)). Not checked where dynamic sampling changes the rollout count (grpo.use_dynamic_sampling).

GPU memory: a lower bound, not an estimate. Mixed-precision training with Adam holds 16 bytes of model state per
parameter (bf16 weights and gradients 2 + 2, fp32 master weights, momentum and variance 4 + 4 + 4: Rajbhandari et al.,
"ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC20, arXiv:1910.02054, section 3.1), and
no sharding spreads them thinner than over every training GPU (ZeRO stage 3, the same paper's (2 + 2 + K) x Psi / Nd).
A run whose model state alone exceeds its GPUs' memory cannot start; offloading to the CPU (policy.dtensor_cfg.
cpu_offload, policy.megatron_cfg.optimizer.optimizer_cpu_offload) or adapters (LoRA / PEFT) lift the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import core.recipes.config_tree as config_tree
from core.catalog import NemoRlRelease
from core.keys import key as _key
from core.recipes.model import JobSpec, Recipe, as_written, rendered_key_owners

# Bytes of model state per parameter in mixed-precision Adam training (module docstring).
MODEL_STATE_BYTES_PER_PARAM = 16
GIB = 1024**3


@dataclass(frozen=True)
class Provenance:
    """Which setting the value of a config key came from, as the config key a problem line names."""

    job: JobSpec
    recipe: Recipe
    release: NemoRlRelease

    def __call__(self, key: str) -> str:
        # 1. A dotted jobOverrides key: the key itself, or a section above or below it.
        for k in sorted(self.recipe.config_overrides):
            dotted = k.lstrip("+~")
            if key == dotted or key.startswith(dotted + ".") or dotted.startswith(key + "."):
                return _key(f"jobOverrides.{k}")
        # 2. A key the program renders from a recipe field (with jobRecipe none: the model's snapshot only).
        owner = rendered_key_owners(self.recipe).get(key)
        if owner is not None and owner.startswith("jobOverrides."):
            field = owner.split()[0].split(".", 1)[1]
            if field in self.job.overrides:
                return _key(f"jobOverrides.{field}")
            if not as_written(self.recipe):
                return _key("jobRecipe")
        # 3. The file of the defaults: chain that sets it: the user's own, else the chosen config.
        try:
            path = config_tree.setter(self.release.tag, self.recipe.config_path, self.recipe.config_files, key)
        except config_tree.ConfigFileError:
            path = None
        if path is not None and path in self.recipe.config_files:
            return _key(f"jobConfigFiles.{path}")
        return _key("jobOverrides.config_path" if "config_path" in self.job.overrides else "jobRecipe")

    def first(self, *keys: str) -> str:
        """The setting of the most specific user action among the keys: a dotted key, a file of the user's, a recipe
        field, the chosen config, the recipe (a fix of any one of them fixes the problem)."""
        named = [self(k) for k in keys]
        return min(named, key=lambda n: (_rank(n.split(":", 1)[1]), named.index(n)))


def _rank(setting: str) -> int:
    if setting == "jobOverrides.config_path":
        return 3
    if setting.startswith("jobOverrides."):
        field = setting.split(".", 1)[1]
        return 0 if "." in field or field.startswith(("+", "~")) else 2
    return 1 if setting.startswith("jobConfigFiles.") else 4


def _get(config: dict, k: str, default: Any = None) -> Any:
    present, value = config_tree.lookup(config, k)
    return value if present else default


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class Layout:
    """The clusters NeMo-RL makes of cluster.num_nodes x cluster.gpus_per_node (grpo.py `setup`)."""

    train_nodes: int
    train_gpus_per_node: int
    gen_nodes: int
    gen_gpus_per_node: int

    @property
    def train_world(self) -> int:
        return self.train_nodes * self.train_gpus_per_node

    @property
    def gen_world(self) -> int:
        return self.gen_nodes * self.gen_gpus_per_node


def layout(config: dict) -> tuple[Optional[Layout], Optional[tuple[tuple[str, ...], str]]]:
    """The training and generation clusters, or the keys and the reason NeMo-RL's setup would stop."""
    nodes, gpn = _int(_get(config, "cluster.num_nodes")), _int(_get(config, "cluster.gpus_per_node"))
    if not nodes or not gpn or nodes < 1 or gpn < 1:
        return None, None  # the Recipe's own validation names these
    if _get(config, "policy.generation.colocated.enabled", True) is not False:
        return Layout(nodes, gpn, nodes, gpn), None
    res = "policy.generation.colocated.resources"
    inf_gpn, inf_nodes = _get(config, f"{res}.gpus_per_node"), _get(config, f"{res}.num_nodes")
    if nodes == 1:
        if _int(inf_gpn) is None or inf_gpn <= 0:
            return None, (
                (f"{res}.gpus_per_node",),
                f"non-colocated generation on one node needs {res}.gpus_per_node > 0 (got {inf_gpn!r})",
            )
        if inf_nodes not in (None, 1):
            return None, (
                (f"{res}.num_nodes",),
                f"non-colocated generation on one node needs {res}.num_nodes 1 or null",
            )
        if gpn - inf_gpn <= 0:
            return None, (
                (f"{res}.gpus_per_node", "cluster.gpus_per_node"),
                f"non-colocated generation takes {inf_gpn} of the node's {gpn} GPUs and leaves none for training",
            )
        return Layout(1, gpn - inf_gpn, 1, inf_gpn), None
    if _int(inf_nodes) is None or inf_nodes <= 0:
        return None, ((f"{res}.num_nodes",), f"non-colocated generation needs {res}.num_nodes > 0 (got {inf_nodes!r})")
    if inf_gpn != gpn:
        return None, (
            (f"{res}.gpus_per_node", "cluster.gpus_per_node"),
            f"non-colocated generation on several nodes needs {res}.gpus_per_node equal to cluster.gpus_per_node "
            f"{gpn} (got {inf_gpn!r})",
        )
    if inf_nodes >= nodes:
        return None, (
            (f"{res}.num_nodes", "cluster.num_nodes"),
            f"non-colocated generation on {inf_nodes} of cluster.num_nodes {nodes} node(s) leaves no node for training",
        )
    return Layout(nodes - inf_nodes, gpn, inf_nodes, gpn), None


def training_parallel(config: dict) -> tuple[dict[str, int], tuple[str, ...]]:
    """{tp, pp, cp} of the training backend and their keys (lm_policy.py `Policy.__init__`)."""
    keys: tuple[str, ...]
    if _get(config, "policy.megatron_cfg.enabled") is True:
        keys = (
            "policy.megatron_cfg.tensor_model_parallel_size",
            "policy.megatron_cfg.pipeline_model_parallel_size",
            "policy.megatron_cfg.context_parallel_size",
        )
        tp, pp, cp = (_int(_get(config, k, 1)) or 1 for k in keys)
        return {"TP": tp, "PP": pp, "CP": cp}, keys
    keys = ("policy.dtensor_cfg.tensor_parallel_size", "policy.dtensor_cfg.context_parallel_size")
    tp, cp = (_int(_get(config, k, 1)) or 1 for k in keys)
    return {"TP": tp, "PP": 1, "CP": cp}, keys


def config_problems(config: dict, release: NemoRlRelease, where: Provenance) -> list[str]:
    """NeMo-RL's own layout and batch checks on the resolved config (module docstring), one line each."""
    lay, stop = layout(config)
    tag = f"NeMo-RL {release.tag}"
    if stop is not None:
        keys, why = stop
        switch = "policy.generation.colocated.enabled"
        return [f"{where.first(*keys, switch, 'cluster.num_nodes')}: {why} ({tag} stops in grpo.py setup)"]
    if lay is None:
        return []
    p = []
    sizes, pkeys = training_parallel(config)
    mp = sizes["TP"] * sizes["PP"] * sizes["CP"]
    node_keys = ("cluster.num_nodes", "cluster.gpus_per_node")
    if lay.train_world % mp:
        shown = " x ".join(f"{k} {v}" for k, v in sizes.items())
        p.append(
            f"{where.first(*pkeys, *node_keys)}: the {lay.train_world} training GPUs are not a multiple of {shown} = "
            f'{mp}; {tag} stops at Policy init ("World size ({lay.train_world}) must be divisible by PP * CP * TP", '
            "nemo_rl/models/policy/lm_policy.py)"
        )
    vllm = "policy.generation.vllm_cfg"
    if _get(config, "policy.generation.backend") == "vllm":
        gtp = _int(_get(config, f"{vllm}.tensor_parallel_size", 1)) or 1
        gpp = _int(_get(config, f"{vllm}.pipeline_parallel_size", 1)) or 1
        gmp = gtp * gpp
        gkeys = (f"{vllm}.tensor_parallel_size", f"{vllm}.pipeline_parallel_size", *node_keys)
        if lay.gen_world % gmp:
            p.append(
                f"{where.first(*gkeys)}: vLLM TP {gtp} x PP {gpp} = {gmp} does not divide the {lay.gen_world} "
                f'generation GPUs; {tag} stops ("World size must be a multiple of model parallel size", '
                "nemo_rl/models/generation/vllm/vllm_generation.py)"
            )
        elif gmp <= lay.gen_gpus_per_node and lay.gen_gpus_per_node % gmp:
            p.append(
                f"{where.first(*gkeys)}: vLLM TP {gtp} x PP {gpp} = {gmp} does not divide the {lay.gen_gpus_per_node} "
                f"generation GPUs of a node; {tag} cuts its vLLM workers per node and stops when fewer come out than "
                "its data-parallel size (vllm_generation.py)"
            )
    if not lay.train_world % mp and _get(config, "grpo.use_dynamic_sampling") is not True:
        prompts = _int(_get(config, "grpo.num_prompts_per_step"))
        gens = _int(_get(config, "grpo.num_generations_per_prompt"))
        gbs = _int(_get(config, "policy.train_global_batch_size"))
        dp = lay.train_world // mp
        batch_keys = ("grpo.num_prompts_per_step", "grpo.num_generations_per_prompt", "policy.train_global_batch_size")
        if prompts and gens and gbs and (prompts * gens) % gbs:
            p.append(
                f"{where.first(*batch_keys)}: a step's {prompts} x {gens} = {prompts * gens} rollouts are not a "
                f"multiple of policy.train_global_batch_size {gbs}; {tag} stops at the first training step "
                '("Total batch size ... is not a multiple of batch_size", nemo_rl/distributed/batched_data_dict.py)'
            )
        elif gbs and gbs % dp:
            p.append(
                f"{where.first('policy.train_global_batch_size', *pkeys, *node_keys)}: policy.train_global_batch_size "
                f"{gbs} is not a multiple of the data-parallel size {dp} ({lay.train_world} training GPUs / {mp}); "
                f'{tag} stops at the first training step ("Batch size ... is not a multiple of shards", '
                "batched_data_dict.py)"
            )
    return p


def _offloaded(config: dict) -> bool:
    return any(
        _get(config, k) is True
        for k in (
            "policy.dtensor_cfg.cpu_offload",
            "policy.dtensor_cfg.lora_cfg.enabled",
            "policy.megatron_cfg.optimizer.optimizer_cpu_offload",
            "policy.megatron_cfg.peft.enabled",
        )
    )


def memory_problems(
    config: dict, params: Optional[int], gpu_memory_gib: int, where: Provenance, model_name: str
) -> list[str]:
    """The lower bound of the module docstring: the model state of `params` parameters over every training GPU."""
    lay, _ = layout(config)
    if lay is None or not params or _offloaded(config):
        return []
    per_gpu = MODEL_STATE_BYTES_PER_PARAM * params / lay.train_world
    if per_gpu <= gpu_memory_gib * GIB:
        return []
    need = math.ceil(MODEL_STATE_BYTES_PER_PARAM * params / (gpu_memory_gib * GIB))
    return [
        f"{where.first('cluster.num_nodes', 'policy.generation.colocated.resources.num_nodes')}: {model_name} "
        f"({params / 1e9:.1f}B parameters) holds at least {MODEL_STATE_BYTES_PER_PARAM} bytes of model state per "
        f"parameter in training (bf16 weights and gradients, fp32 Adam states): {per_gpu / GIB:.0f} GiB on each of "
        f"its {lay.train_world} training GPUs, which have {gpu_memory_gib} GiB; train on at least {need} GPUs, or "
        "offload the optimizer to the CPU"
    ]
