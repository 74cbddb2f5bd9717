"""Checkpoint write time of the two shipped recipes on their seeds' Lustre instances, against a budget.

Arithmetic, not a timed test: checkpoint bytes (infra.sizing) over the instance's provisioned aggregate
throughput, i.e. the fastest a checkpoint can land. Run: `.venv/bin/python -m bench.checkpoint_io [--budget S]`.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Optional

from infra import sizing


@dataclass(frozen=True)
class SeedRecipe:
    label: str
    model_name: str
    save_optimizer: bool
    capacity_gib: int
    tier: int


# The Lustre instances the two seed documents create (FACTS.md §1, §5); both save optimizer state so a
# preempted run resumes exactly (FACTS.md §7).
RECIPES = (
    SeedRecipe("codelab (Qwen2.5-72B, GRPO 70B Megatron)", "Qwen/Qwen2.5-72B-Instruct", True, 9_000, 1000),
    SeedRecipe("GKE tutorial (Gemma 3 27B)", "google/gemma-3-27b-it", True, 18_000, 500),
)

DEFAULT_BUDGET_S = 120.0


def sizings(budget_seconds: float) -> list[sizing.CheckpointSizing]:
    return [sizing.size_checkpoints(r.model_name, save_optimizer=r.save_optimizer, capacity_gib=r.capacity_gib,
                                    tier=r.tier, keep_top_k=None, budget_seconds=budget_seconds) for r in RECIPES]


def rows(budget_seconds: float) -> list[tuple[str, ...]]:
    out = []
    for r, s in zip(RECIPES, sizings(budget_seconds)):
        out.append((r.label, r.model_name, "weights+optimizer" if r.save_optimizer else "weights",
                    sizing.fmt_bytes(s.checkpoint_bytes), f"{r.capacity_gib} GiB @ {r.tier}",
                    f"{sizing.fmt_bytes(s.throughput_bytes_per_s)}/s", f"{s.min_write_seconds:.1f}",
                    f"{s.min_write_seconds / budget_seconds:.2f}", "ok" if s.within_budget else "OVER"))
    return out


def table(budget_seconds: float) -> str:
    head = ("recipe", "model", "saved", "checkpoint", "Lustre (GiB @ MB/s/TiB)", "aggregate",
            "min write s", f"ratio to {budget_seconds:g} s", "verdict")
    body = rows(budget_seconds)
    widths = [max(len(row[i]) for row in (head, *body)) for i in range(len(head))]
    fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, body)])


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                    help=f"checkpoint write budget in seconds (default {DEFAULT_BUDGET_S:g})")
    args = ap.parse_args(argv)
    if args.budget <= 0:
        ap.error("--budget must be > 0")
    print(table(args.budget))
    for s in sizings(args.budget):
        for line in sizing.budget_problems(s):
            print(f"\n{s.model_name}: {line}")
    print("\nLower bounds: bytes / (capacity TiB x tier MB/s per TiB); real writes add metadata and stragglers.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
