"""Stand-in for NeMo-RL's GRPO entry script, for running the Ray job path without GPUs or NeMo-RL.

Placed at `examples/run_grpo_math.py` / `examples/run_grpo.py` under a directory standing in for
/opt/nemo-rl, it takes the same command line as NeMo-RL: `--config <yaml>` plus Hydra overrides, and applies
Hydra's rules: `key=value` must name a key of the base config, `+key=value` one it lacks; values use
Hydra's grammar (null, booleans, numbers, quoted or bare strings). It then behaves like NeMo-RL's
checkpointing (FACTS.md §7):

- resumes from the highest `step_N` in `checkpointing.checkpoint_dir` (checking training_info.json);
- runs steps up to `grpo.max_num_steps`, sleeping $NEMO_RL_STANDIN_STEP_SECONDS per step (default 1);
- every `checkpointing.save_period` steps and at the last step writes `tmp_step_N/` (config.yaml,
  training_info.json, train_dataloader.pt, policy/{weights,optimizer,tokenizer}/), renames it to `step_N`,
  and keeps the newest `checkpointing.keep_top_k` (metric_name must be null: it computes no metric);
- with `data.dataset_name=ResponseDataset`, reads the train/validation JSONL files and their keys.

Only the standard library (and PyYAML when the base config is not JSON); it never prints a secret.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from typing import Any, Optional

STEP_SECONDS_ENV = "NEMO_RL_STANDIN_STEP_SECONDS"
PREFIX = "stand-in GRPO:"

_OVERRIDE = re.compile(r"^(\+?)([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)=(.*)$", re.S)
# Hydra's INT and FLOAT tokens (hydra/grammar/OverrideLexer.g4, Hydra 1.1-1.3): no leading zeros, `_` between
# digits, inf / nan in any case. A bare value converts only when it is one such token as a whole ("007" and
# "1.5.3" are strings); used with fullmatch.
_UINT = r"(?:0|[1-9](?:_?[0-9])*)"
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT_FLOAT = rf"(?:{_UINT}?\.{_DIGITS}|{_UINT}\.)"
_INT = re.compile(rf"[+-]?{_UINT}")
_FLOAT = re.compile(rf"[+-]?(?:(?:{_POINT_FLOAT}|{_UINT})[eE][+-]?{_DIGITS}|{_POINT_FLOAT}|[Ii][Nn][Ff]|[Nn][Aa][Nn])")
# Characters of an unquoted string: ID tokens, Hydra's unquoted characters and `:`. Stricter than Hydra, never
# looser: no `$` (interpolation), `\` escapes or inner whitespace, which the recipes always quote.
_BARE_STRING = re.compile(r"[A-Za-z0-9_/+.%*@?|:-]+")
_STEP_DIR = re.compile(r"^step_([0-9]+)$")


class StandInError(Exception):
    pass


def parse_value(text: str) -> Any:
    """A Hydra override value: null, true/false, int, float (inf, nan), 'quoted' / "quoted" or bare string."""
    if text[:1] in ("'", '"'):
        return _parse_quoted(text)
    bare = text.strip()
    if bare.lower() == "null":
        return None
    if bare.lower() in ("true", "false"):
        return bare.lower() == "true"
    if _INT.fullmatch(bare):
        return int(bare)
    if _FLOAT.fullmatch(bare):
        return float(bare)
    if not _BARE_STRING.fullmatch(bare):
        raise StandInError(f"value {text!r} must be quoted in Hydra's grammar")
    return bare


def _parse_quoted(text: str) -> str:
    # Hydra: \<quote> is a literal quote; a run of backslashes before a quote (or the closing quote) is
    # halved; other backslashes are literal.
    quote, out, i, n = text[0], [], 1, len(text)
    while i < n:
        j = i
        while j < n and text[j] == "\\":
            j += 1
        run = j - i
        if j < n and text[j] == quote:
            closing = j == n - 1
            if run % 2 == 0:
                out.append("\\" * (run // 2))
                if not closing:
                    raise StandInError(f"unescaped {quote} inside {text!r}")
                return "".join(out)
            out.append("\\" * (run // 2) + quote)
            i = j + 1
        elif run:
            out.append("\\" * run)
            i = j
        else:
            out.append(text[i])
            i += 1
    raise StandInError(f"unterminated quoted value {text!r}")


def parse_override(word: str) -> tuple[bool, str, Any]:
    """'+a.b=v' -> (True, 'a.b', v)."""
    m = _OVERRIDE.match(word)
    if not m:
        raise StandInError(f"cannot parse override {word!r} (expected [+]key.path=value)")
    return m.group(1) == "+", m.group(2), parse_value(m.group(3))


def _lookup(config: dict, key: str) -> tuple[bool, Any]:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def apply_overrides(base: dict, words: list[str]) -> dict:
    config = json.loads(json.dumps(base))
    for word in words:
        append, key, value = parse_override(word)
        present, _ = _lookup(config, key)
        if append and present:
            raise StandInError(f"could not append to config: an item is already at {key!r} (drop the '+')")
        if not append and not present:
            raise StandInError(f"could not override {key!r}: not in the base config (use +{key}=...)")
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return config


def load_base(path: str) -> dict:
    if not os.path.isfile(path):
        raise StandInError(f"config file {path!r} not found (cwd {os.getcwd()})")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise StandInError(f"config file {path!r} is not a mapping")
    return data


def require(config: dict, key: str, kind: type) -> Any:
    present, value = _lookup(config, key)
    if not present or value is None:
        raise StandInError(f"required setting {key} is missing")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise StandInError(f"{key} must be an integer, got {value!r}")
    if not isinstance(value, kind):
        raise StandInError(f"{key} must be a {kind.__name__}, got {value!r}")
    return value


def check_response_dataset(config: dict) -> None:
    present, name = _lookup(config, "data.dataset_name")
    if not present or name != "ResponseDataset":
        return
    in_key, out_key = require(config, "data.input_key", str), require(config, "data.output_key", str)
    counts = {}
    for which in ("train_data_path", "val_data_path"):
        path = require(config, f"data.{which}", str)
        if not os.path.isfile(path):
            raise StandInError(f"data.{which} {path!r} does not exist (was the dataset prepared?)")
        rows = 0
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                row = json.loads(line)
                if not (isinstance(row.get(in_key), str) and row[in_key] and isinstance(row.get(out_key), str)
                        and row[out_key]):
                    raise StandInError(f"{path}:{n}: needs non-empty {in_key!r} and {out_key!r}")
                rows += 1
        if rows == 0:
            raise StandInError(f"{path} is empty")
        counts[which] = rows
    for which in ("train_split", "val_split"):
        if _lookup(config, f"data.{which}")[1] != "train":
            raise StandInError(f"data.{which} must be 'train' for a local JSONL file")
    print(f"{PREFIX} ResponseDataset {counts['train_data_path']} train / {counts['val_data_path']} validation rows",
          flush=True)


def checkpoints(ckpt_dir: str) -> dict[int, str]:
    out = {}
    if os.path.isdir(ckpt_dir):
        for name in os.listdir(ckpt_dir):
            m = _STEP_DIR.match(name)
            if m and os.path.isdir(os.path.join(ckpt_dir, name)):
                out[int(m.group(1))] = os.path.join(ckpt_dir, name)
    return out


def resume_step(ckpt_dir: str) -> int:
    found = checkpoints(ckpt_dir)
    if not found:
        return 0
    step = max(found)
    with open(os.path.join(found[step], "training_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    if info.get("step") != step:
        raise StandInError(f"{found[step]}/training_info.json says step {info.get('step')!r}, expected {step}")
    return step


def save_checkpoint(ckpt_dir: str, step: int, config: dict, keep_top_k: int) -> str:
    tmp = os.path.join(ckpt_dir, f"tmp_step_{step}")
    final = os.path.join(ckpt_dir, f"step_{step}")
    shutil.rmtree(tmp, ignore_errors=True)
    for sub in ("policy/weights", "policy/optimizer", "policy/tokenizer"):
        os.makedirs(os.path.join(tmp, sub))
    with open(os.path.join(tmp, "config.yaml"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    with open(os.path.join(tmp, "training_info.json"), "w", encoding="utf-8") as f:
        json.dump({"step": step}, f)
    with open(os.path.join(tmp, "train_dataloader.pt"), "wb") as f:
        f.write(json.dumps({"step": step}).encode())
    for sub in ("weights", "optimizer"):
        with open(os.path.join(tmp, "policy", sub, "__0_0.distcp"), "wb") as f:
            f.write(b"\0" * 64)
    with open(os.path.join(tmp, "policy", "tokenizer", "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"name": config.get("policy", {}).get("model_name")}, f)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    for old in sorted(checkpoints(ckpt_dir))[:-keep_top_k]:
        shutil.rmtree(os.path.join(ckpt_dir, f"step_{old}"))
    return final


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Stand-in for NeMo-RL GRPO (no GPU, no NeMo-RL)")
    ap.add_argument("--config", required=True)
    args, words = ap.parse_known_args(argv)
    try:
        config = apply_overrides(load_base(args.config), words)
        if require(config, "checkpointing.enabled", bool) is not True:
            raise StandInError("checkpointing.enabled must be True: nothing could resume after a preemption")
        ckpt_dir = require(config, "checkpointing.checkpoint_dir", str)
        if not os.path.isabs(ckpt_dir):
            raise StandInError(f"checkpointing.checkpoint_dir {ckpt_dir!r} must be absolute (on Lustre)")
        save_period = require(config, "checkpointing.save_period", int)
        keep_top_k = require(config, "checkpointing.keep_top_k", int)
        max_steps = require(config, "grpo.max_num_steps", int)
        if _lookup(config, "checkpointing.metric_name")[1] is not None:
            raise StandInError("checkpointing.metric_name must be null (keep the newest checkpoints)")
        if save_period < 1 or keep_top_k < 1 or max_steps < 1:
            raise StandInError("save_period, keep_top_k and max_num_steps must be >= 1")
        check_response_dataset(config)
        os.makedirs(ckpt_dir, exist_ok=True)
        start = resume_step(ckpt_dir)
    except (StandInError, OSError, ValueError) as e:
        print(f"{PREFIX} error: {e}", file=sys.stderr, flush=True)
        return 2

    step_seconds = float(os.environ.get(STEP_SECONDS_ENV, "1"))
    model = config.get("policy", {}).get("model_name")
    print(f"{PREFIX} model {model}, {max_steps} steps, checkpoints in {ckpt_dir}", flush=True)
    print(f"{PREFIX} HF_TOKEN visible: {'yes' if os.environ.get('HF_TOKEN') else 'no'}", flush=True)
    if start:
        print(f"{PREFIX} resuming from step {start} ({os.path.join(ckpt_dir, f'step_{start}')})", flush=True)
    else:
        print(f"{PREFIX} no checkpoint in {ckpt_dir}, starting from step 0", flush=True)
    for step in range(start + 1, max_steps + 1):
        time.sleep(step_seconds)
        print(f"{PREFIX} step {step}/{max_steps} done", flush=True)
        if step % save_period == 0 or step == max_steps:
            path = save_checkpoint(ckpt_dir, step, config, keep_top_k)
            print(f"{PREFIX} saved checkpoint {path}", flush=True)
    print(f"{PREFIX} finished at step {max_steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
