"""synth.sizing_report sizes every configured stack: its Lustre from its stack file, its ratio against its budget."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from synth import sizing_report as checkpoint_io
from synth.engine import available_stacks, platform_stacks

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
NS = "nemo-rl-gke"


def stack_config(stack: str, root: Path = ROOT) -> dict:
    return yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text())["config"]


def configured(stack: str, key: str, root: Path = ROOT):
    """The stack file's value of `key`, else Pulumi.yaml's default."""
    cfg = stack_config(stack, root)
    if f"{NS}:{key}" in cfg:
        return cfg[f"{NS}:{key}"]
    return yaml.safe_load((root / "Pulumi.yaml").read_text())["config"][key]["default"]


def run_bench(capsys, *argv: str, root: Path = ROOT) -> tuple[int, dict[str, dict[str, str]], str]:
    """(exit code, rows by stack as {column: cell}, whole stdout)."""
    code = checkpoint_io.main(list(argv), root=root)
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header == list(checkpoint_io.HEADER)
    assert set(lines[1].replace(" ", "")) == {"-"}
    rows = {}
    for line in lines[2:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(header), line
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return code, rows, out


def test_shipped_stacks_are_there():
    assert {"codelab", "dev"} <= set(available_stacks())


def test_a_row_per_stack_with_its_configured_lustre_and_budget(capsys):
    code, rows, _ = run_bench(capsys)
    assert code == 0
    assert sorted(rows) == platform_stacks()
    for stack, row in rows.items():
        cfg = stack_config(stack)
        capacity, tier = cfg[f"{NS}:lustreCapacityGib"], cfg[f"{NS}:lustreTier"]
        assert row["Lustre (GiB @ MB/s/TiB)"] == f"{capacity} GiB @ {tier}"
        budget = int(configured(stack, "checkpointBudgetSeconds"))
        assert budget > 0 and float(row["budget s"]) == budget
        # The ratio is min write time over the stack's budget, not over any fixed figure.
        assert float(row["ratio"]) == pytest.approx(float(row["min write s"]) / budget, abs=0.006)
        assert row["verdict"] == "ok"


def test_codelab_row_is_the_72b_recipe_on_9000_gib_at_1000():
    s = checkpoint_io.size_stack("codelab")
    assert s.recipe == "qwen2.5-72b-deepscaler"
    assert s.sizing.model_name == "Qwen/Qwen2.5-72B-Instruct"
    assert (s.sizing.capacity_gib, s.sizing.tier) == (9000, 1000)
    assert 100 < s.sizing.min_write_seconds < 130


def test_budget_flag_overrides_every_stacks_budget(capsys):
    code, rows, out = run_bench(capsys, "--budget", "100", "codelab", "dev")
    assert code == 0 and sorted(rows) == ["codelab", "dev"]
    for row in rows.values():
        assert row["budget s"] == "100"
        assert float(row["ratio"]) == pytest.approx(float(row["min write s"]) / 100, abs=0.006)
    assert rows["codelab"]["verdict"] == "OVER" and rows["dev"]["verdict"] == "ok"
    assert "codelab: nemo-rl-gke:checkpointBudgetSeconds:" in out  # the fix for the over-budget one


@pytest.fixture
def project_copy(tmp_path) -> Path:
    """A project root with Pulumi.yaml and the dev stack, whose budget a test rewrites."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "Pulumi.dev.yaml", tmp_path / "Pulumi.dev.yaml")
    return tmp_path


def set_budget(root: Path, stack: str, value: int) -> None:
    path = root / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"][f"{NS}:checkpointBudgetSeconds"] = value
    path.write_text(yaml.safe_dump(doc))


def test_ratio_follows_the_budget_the_stack_configures(capsys, project_copy):
    set_budget(project_copy, "dev", 50)
    code, rows, _ = run_bench(capsys, root=project_copy)
    assert code == 0 and list(rows) == ["dev"]
    row = rows["dev"]
    assert row["budget s"] == "50"
    assert float(row["ratio"]) == pytest.approx(float(row["min write s"]) / 50, abs=0.006)
    assert float(row["ratio"]) > 0.5  # 43.6 s of a 50 s budget


def test_a_zero_budget_is_no_budget(capsys, project_copy):
    set_budget(project_copy, "dev", 0)
    code, rows, _ = run_bench(capsys, root=project_copy)
    assert code == 0
    assert (rows["dev"]["budget s"], rows["dev"]["ratio"], rows["dev"]["verdict"]) == ("none", "-", "no budget")


def test_unknown_stack_fails_but_sizes_the_others(capsys):
    code = checkpoint_io.main(["dev", "no-such-stack"])
    captured = capsys.readouterr()
    assert code == 1
    assert "no-such-stack" in captured.err and captured.out.splitlines()[2].startswith("dev ")


def test_budget_must_be_positive():
    with pytest.raises(SystemExit):
        checkpoint_io.main(["--budget", "0"])


def test_the_performance_guide_shows_the_current_sizing_report(capsys):
    checkpoint_io.main([])
    out = capsys.readouterr().out
    guide = (ROOT / "docs" / "performance.md").read_text()
    after = guide[guide.index("`make sizing-report`") :]
    block = after[after.index("```\n") + 4 :]
    assert block[: block.index("```")] == out
