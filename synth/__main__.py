"""`python -m synth <stack>`: run the program offline and write build/<stack>/ (no cloud account needed).

With `--compare <dir>` it then prints what this run adds, removes or changes against a previous output
folder (a build/<stack> of another commit; synth/compare.py), with exit code 0 whether or not anything changed.

Exit codes: 0 written; 2 unknown stack, invalid settings (the problems are printed one per line) or a
`--compare` folder that is not a synth output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from synth import compare, critical_path, engine, render


def cost_report(c: dict) -> str:
    """The stack's costEstimate output as `pulumi preview` prints it (core/cost.py)."""
    lines = ["cost per hour (USD; not a bill):"]
    for line in c["lines"]:
        amount = "unknown" if line["usdPerHour"] is None else f"${line['usdPerHour']:,.4f}/h"
        lines.append(f"  {line['item']:<58} {amount:>16}  {line['origin']}")
    for model, t in c["perHourByCapacityModel"].items():
        unknown = f" + unknown: {', '.join(t['unknown'])}" if t["unknown"] else ""
        lines.append(f"  with GPUs on {model}: ${t['knownUsd']:,.2f}/h{unknown}")
    if "run" in c:
        r = c["run"]
        lines.append(f"  run: {r['hours']} h, {r['gpuHours']} GPU-hours; GPU nodes by model: {r['usdByCapacityModel']}")
    lines += [f"  note: {n}" for n in c["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m synth", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help=f"stack name (one of: {', '.join(engine.available_stacks())})")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: build/<stack>)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value for this run (repeatable)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="DIR",
        help="previous output folder (build/<stack> of another commit): print what changed",
    )
    parser.add_argument(
        "--stack-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the stack's config file when it is not Pulumi.<stack>.yaml here (the CLI's --config-file)",
    )
    args = parser.parse_args(argv)

    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"synth: --set needs KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key] = value
    before = None
    if args.compare is not None:
        try:
            before = compare.load(args.compare)  # read first: --compare may name the folder this run rewrites
        except compare.NotASynthOutput as err:
            print(f"synth: --compare: {err}", file=sys.stderr)
            return 2
    try:
        result = engine.run(args.stack, overrides, stack_file=args.stack_file)
    except (engine.StackNotFound, engine.StackConfigError) as err:
        print(f"synth: {err}", file=sys.stderr)
        return 2
    if result.error:
        print(f"synth: stack {args.stack!r}: {result.error}", file=sys.stderr)
        return 2
    out = args.out or engine.ROOT / "build" / args.stack
    counts = render.write(result, out)
    # Time to the first training step: the graph's critical path with nominal durations (synth/critical_path.py).
    estimate = critical_path.estimate(result.resources)
    report = estimate.format(args.stack) if estimate.path else ""
    if report and result.stack_references:
        # An experiment stack: on a cold platform (above: nodes and image each time) and on a warm one.
        warm = critical_path.estimate(result.resources, warm=True)
        report = (
            f"cold platform (GPU nodes and image each time); dominant term: {estimate.dominant}\n{report}\n"
            f"warm platform (GPU nodes up, image cached, a recent gate pass on each node); dominant term: "
            f"{warm.dominant}\n{warm.format(args.stack)}"
        )
    if report:
        (out / "critical-path.md").write_text(
            f"# Stack `{args.stack}`: time to the first training step\n\n```\n{report}```\n"
        )
    print(f"stack {args.stack}: {sum(counts.values())} resources")
    sizing = result.outputs.get("checkpointSizing")
    if sizing:
        print(f"checkpoint sizing: {sizing['summary']}")
    for warning in result.warnings:
        print(f"warning: {warning}")
    costs = result.outputs.get("costEstimate")
    if costs:
        print(cost_report(costs), end="")
    for typ, n in counts.items():
        print(f"  {n:3d}  {typ}")
    if report:
        print(report, end="")
    print(
        f"wrote {out}/ (inventory.md, inventory.json, graph.mmd, README.md"
        + (", critical-path.md" if report else "")
        + (", manifests/" if (out / "manifests").exists() else "")
        + ")"
    )
    if before is not None:
        after = compare.load(out)
        verdicts = compare.format_plan(compare.plan(before, after))
        print(compare.format_report(compare.compare(before, after), str(args.compare), verdicts), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
