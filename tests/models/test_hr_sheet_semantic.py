"""The HR evaluation sheet's semantic similarity (the seed's ada_similarity), computed from
the sheet with no target, by the packaged embedding model."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.hr_sheet import write_hr_sheet


def test_ada_similarity_scores_the_logged_answers(tmp_path: Path) -> None:
    sheet = write_hr_sheet(tmp_path / "hr-eval.xlsx")
    args = ["run", "--suite", str(sheet), "--out", str(tmp_path / "out"), "--json"]
    result = CliRunner().invoke(app, [*args, "--metric", "ada_similarity"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    (similarity,) = summary["metrics"]
    assert similarity["metric"] == "Answer semantic similarity"
    # three paraphrases of their ground truth: all scored, all close
    assert similarity["count"] == 3 and similarity["min"] > 0.7
    assert "all-MiniLM-L6-v2" in json.dumps(summary["models"])
