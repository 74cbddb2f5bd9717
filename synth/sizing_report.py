"""Sizing report: checkpoint write time of every configured stack's recipe on that stack's Lustre instance,
against its budget.

Arithmetic from the catalog's figures, not a measurement (nothing is timed). For each `Pulumi.<stack>.yaml` the settings
are built the way the synth engine builds them, without running the program (no Pulumi engine, no credentials): the
stack's config (`synth.engine.assemble_config`, Pulumi.yaml defaults included) goes through
`core.settings.load_settings`, then `core.settings.monitoring.checkpoint_sizing` sizes the recipe's checkpoint: bytes
over the instance's provisioned aggregate throughput, i.e. the fastest a checkpoint can land. The budget is the stack's
`checkpointBudgetSeconds` (0 or unset: no budget) unless `--budget` overrides it for every stack.

Run: `make sizing-report` or `.venv/bin/python -m synth.sizing_report [--budget S] [STACK ...]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Optional

from core import recipes, sizing
from core.settings import PROJECT, SECRET_KEYS, Settings, load_settings
from core.settings.monitoring import checkpoint_sizing
from synth.engine import ROOT, assemble_config, platform_stacks

# The stack files ship the placeholder project, which load_settings refuses outside the engine; the sizing
# does not depend on the project.
REPORT_PROJECT = "example-project"


@dataclasses.dataclass(frozen=True)
class StackSizing:
    stack: str
    recipe: str
    sizing: sizing.CheckpointSizing  # budget_seconds: the budget in effect (None: no budget)


def stack_settings(stack: str, root: Path = ROOT) -> Settings:
    """The stack's settings from its config, as the engine builds them. Raises what assemble_config and
    load_settings raise for a missing stack or bad settings."""
    _, config, _ = assemble_config(stack, root=root)
    prefix = f"{PROJECT}:"
    values = {
        k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and k[len(prefix) :] not in SECRET_KEYS
    }
    return load_settings(stack, REPORT_PROJECT, values=values, secret_state={k: "secret" for k in SECRET_KEYS})


def configured_budget(s: Settings) -> Optional[float]:
    """The stack's checkpoint budget in seconds; None when it has none (unset or 0)."""
    budget = s.monitoring.checkpoint_budget_seconds
    return float(budget) if budget else None


def size_stack(stack: str, budget_override: Optional[float] = None, root: Path = ROOT) -> StackSizing:
    s = stack_settings(stack, root)
    budget = budget_override if budget_override is not None else configured_budget(s)
    sizing = checkpoint_sizing(s)
    if sizing is None:
        raise ValueError(f"stack {stack!r} has no checkpoint sizing (no job, or a model whose size is not known)")
    sz = dataclasses.replace(sizing, budget_seconds=budget)
    return StackSizing(stack=stack, recipe=recipes.recipe_name(s.job), sizing=sz)


HEADER = (
    "stack",
    "recipe",
    "model",
    "saved",
    "checkpoint",
    "Lustre (GiB @ MB/s/TiB)",
    "aggregate",
    "min write s",
    "budget s",
    "ratio",
    "verdict",
)


def row(r: StackSizing) -> tuple[str, ...]:
    s = r.sizing
    if s.budget_seconds is None:
        budget, ratio, verdict = "none", "-", "no budget"
    else:
        budget = f"{s.budget_seconds:g}"
        ratio = f"{s.min_write_seconds / s.budget_seconds:.2f}"
        verdict = "ok" if s.within_budget else "OVER"
    return (
        r.stack,
        r.recipe,
        s.model_name,
        "weights+optimizer" if s.save_optimizer else "weights",
        sizing.fmt_bytes(s.checkpoint_bytes),
        f"{s.capacity_gib} GiB @ {s.tier}",
        f"{sizing.fmt_bytes(s.throughput_bytes_per_s)}/s",
        f"{s.min_write_seconds:.1f}",
        budget,
        ratio,
        verdict,
    )


def table(results: list[StackSizing]) -> str:
    body = [row(r) for r in results]
    widths = [max(len(cells[i]) for cells in (HEADER, *body)) for i in range(len(HEADER))]

    def fmt(cells) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([fmt(HEADER), fmt(tuple("-" * w for w in widths)), *map(fmt, body)])


def main(argv: Optional[list[str]] = None, root: Path = ROOT) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stacks", nargs="*", metavar="STACK", help="stacks to size (default: every Pulumi.<stack>.yaml)")
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="checkpoint write budget in seconds for every stack (default: each stack's checkpointBudgetSeconds)",
    )
    args = ap.parse_args(argv)
    if args.budget is not None and args.budget <= 0:
        ap.error("--budget must be > 0")
    stacks = args.stacks or platform_stacks(root)  # an experiment sizes nothing: its Lustre is its platform's
    if not stacks:
        ap.error(f"no Pulumi.<stack>.yaml in {root}")

    results, failed = [], False
    for stack in stacks:
        try:
            results.append(size_stack(stack, args.budget, root))
        except Exception as e:  # no such stack, bad config or settings, unsizable recipe: report, size the rest
            failed = True
            print(
                f"stack {stack}: cannot be sized ({type(e).__name__}):\n  " + str(e).replace("\n", "\n  "),
                file=sys.stderr,
            )
    if results:
        print(table(results))
        for r in results:
            for line in sizing.budget_problems(r.sizing):
                print(f"\n{r.stack}: {line}")
        source = (
            f"--budget {args.budget:g} s for every stack"
            if args.budget is not None
            else "each stack's checkpointBudgetSeconds (0: no budget)"
        )
        print(f"\nBudget: {source}.")
        print("Lower bounds: bytes / (capacity TiB x tier MB/s per TiB); real writes add metadata and stragglers.")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
