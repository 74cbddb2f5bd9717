"""Time to the first training step, in one report: the table of nominal figures and, for a fresh stack and for an
experiment on warm and on cold nodes, the estimate from the rendered graph beside its bound and their ratio.

`python -m synth.ttfs_report` (`make ttfs-report`) runs the engine for the stacks below and prints the Markdown that
docs/performance.md holds between its `ttfs-report` markers; `--write` puts it there. Both the estimates and the
bounds come from synth/critical_path.py with core/catalog/startup.py NOMINAL_TABLE, so the docs and the report
cannot disagree (tests/test_ttfs_report.py checks the docs against the engine's records).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from core import catalog as c
from synth import critical_path as cp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- ttfs-report:begin (make ttfs-report) -->", "<!-- ttfs-report:end -->"
# (stack, warm): the codelab platform as a fresh stack, and its experiments on cold and on warm nodes.
CASES: tuple[tuple[str, bool], ...] = (
    ("codelab", False),
    ("codelab-exp1", False),
    ("codelab-exp1", True),
    ("codelab-exp2", False),
    ("codelab-exp2", True),
)


# Other graphs of the same stacks (`python -m synth <stack> --set key=value`), on cold nodes.
VARIANTS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("codelab", ()),
    ("codelab", (("imagePath", "prepull"),)),
    ("codelab", (("prefetchImage", "nemo-rl"),)),
    ("codelab", (("imagePath", "pull"), ("prefetchWeights", "false"))),
    ("codelab", (("jobMode", "own-cluster"),)),
    ("codelab", (("readinessGate", "off"),)),
    ("dev", ()),
    ("dev", (("imagePath", "prepull"),)),
    ("autopilot", ()),
    ("autopilot", (("imagePath", "prepull"),)),
)
Records = Callable[[str, tuple[tuple[str, str], ...]], list[Any]]


def _figure(name: str, n: c.Nominal) -> str:
    if name.endswith("_BYTES_PER_S"):
        return f"{n.seconds / 1e6:g} MB/s"
    if name.endswith("_BYTES"):
        return f"{n.seconds / 1e9:g} GB"
    if name.endswith("_PER_NODE"):
        return f"x {n.seconds:g}"
    return f"{n.seconds:g} s"


def nominal_table() -> list[str]:
    lines = ["| figure | value | source |", "|---|---|---|"]
    for name, n in c.NOMINAL_TABLE.items():
        label = f"`{name.removeprefix('resource ')}`" + (" (resource)" if name.startswith("resource ") else "")
        lines.append(f"| {label} | {_figure(name, n)} | {n.source.replace('|', '/')} |")
    return lines


def _longest(est: cp.Estimate, k: int = 3) -> str:
    steps = sorted(est.path, key=lambda key: -est.activities[key].seconds)[:k]
    return ", ".join(f"{est.activities[s].label} {cp._mmss(est.activities[s].seconds)}" for s in steps)


def figures(records: Records) -> list[str]:
    """The figures table: `records(stack, overrides)` gives the engine's records of a stack."""
    lines = [
        "| stack | case | first step | bound | ratio | goal | longest steps on the path |",
        "|---|---|---|---|---|---|---|",
    ]
    for stack, warm in CASES:
        est = cp.estimate(records(stack, ()), warm=warm)
        b = est.bound
        assert b is not None and est.bound_ratio is not None, stack
        goal = cp.GOALS[b.kind]
        verdict = "met" if est.bound_ratio <= goal else "not met"
        lines.append(
            f"| {stack} | {b.kind} | {est.first_step_seconds / 60:.1f} min | {b.seconds / 60:.1f} min | "
            f"{est.bound_ratio:.2f}x | {goal:g}x ({verdict}) | {_longest(est)} |"
        )
    return lines


def variants(records: Records) -> list[str]:
    lines = [
        "| graph | first step | bound | ratio | one step at a time | ratio | longest steps on the path |",
        "|---|---|---|---|---|---|---|",
    ]
    for stack, over in VARIANTS:
        est = cp.estimate(records(stack, over))
        b = est.bound
        assert b is not None and est.bound_ratio is not None, (stack, over)
        name = stack + "".join(f" `--set {k}={v}`" for k, v in over)
        lines.append(
            f"| {name} | {est.first_step_seconds / 60:.1f} min | {b.seconds / 60:.1f} min | {est.bound_ratio:.2f}x | "
            f"{est.sequential_seconds / 60:.1f} min | {est.ratio:.3f} | {_longest(est)} |"
        )
    return lines


def path(records: Records, stack: str = "codelab") -> list[str]:
    """The fresh stack's critical path (the report's source column left off)."""
    est = cp.estimate(records(stack, ()))
    width = max(len(est.activities[k].label) for k in est.path)
    lines = ["```", f"  {'start':>7}  {'finish':>7}  {'took':>7}  step"]
    for k in est.path:
        a = est.activities[k]
        times = f"  {cp._mmss(est.start[k]):>7}  {cp._mmss(est.finish[k]):>7}  {cp._mmss(a.seconds):>7}"
        lines.append(f"{times}  {a.label:<{width}}".rstrip())
    return [*lines, "```"]


def bounds(records: Records) -> list[str]:
    """Each case's bound, term by term."""
    out: list[str] = []
    seen = set()
    for stack, warm in CASES:
        b = cp.bound(records(stack, ()), warm=warm)
        if b is None or (b.kind, b.seconds) in seen:
            continue
        seen.add((b.kind, b.seconds))
        out += [f"{stack}:", *b.format()]
    return ["```", *out, "```"]


def render(records: Records) -> str:
    return "\n".join(
        [
            BEGIN,
            *figures(records),
            "",
            "The bounds, from the same table:",
            "",
            *bounds(records),
            "",
            "The fresh `codelab` stack's critical path:",
            "",
            *path(records),
            "",
            "The same report for other graphs (cold nodes):",
            "",
            *variants(records),
            "",
            "The table (core/catalog/startup.py `NOMINAL_TABLE`):",
            "",
            *nominal_table(),
            END,
        ]
    )


def block_of(text: str) -> Optional[str]:
    if BEGIN not in text or END not in text:
        return None
    return text[text.index(BEGIN) : text.index(END) + len(END)]


def engine_records() -> Records:
    from synth import engine

    memo: dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]] = {}

    def records(stack: str, over: tuple[tuple[str, str], ...]) -> list[Any]:
        if (stack, over) not in memo:
            result = engine.run(stack, dict(over))
            if result.error:
                raise SystemExit(f"ttfs-report: stack {stack!r} {dict(over)}: {result.error}")
            memo[stack, over] = result.resources
        return memo[stack, over]

    return records


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"replace the block in {DOC.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    text = render(engine_records())
    if not args.write:
        print(text)
        return 0
    doc = DOC.read_text()
    old = block_of(doc)
    if old is None:
        print(f"ttfs-report: {DOC.relative_to(ROOT)} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 2
    DOC.write_text(doc.replace(old, text))
    print(f"wrote the time-to-first-step report into {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
