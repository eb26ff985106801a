"""result.csv read by a script written for the seed runner's layout: ``name``, ``Average
Score``, ``Pass rate``, one row per metric name asked for."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app

SUITE = (
    "question,expected_answer,actual_answer\n"
    "How many days of leave?,Employees get 25 days of leave.,Employees get 25 days of leave.\n"
    "What is the pension match?,The match is 6%.,Pensions are matched.\n"
)


def seed_script(text: str) -> dict[str, tuple[float, float]]:
    """What the seed's consumers do with result.csv (keyed by ``name``)."""
    scores: dict[str, tuple[float, float]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["name"]:
            scores[row["name"]] = (float(row["Average Score"]), float(row["Pass rate"]))
    return scores


def test_a_seed_script_reads_result_csv(tmp_path: Path) -> None:
    suite = tmp_path / "seed.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"
    args = ["run", "--suite", str(suite), "--out", str(out), "--json", "--iterations", "2"]
    args += ["--fail-on", "errors"]  # the seed cases need not pass: only result.csv is read
    for name in ("Rouge Metric", "Exact match"):
        args += ["--metric", name]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    text = (out / summary["reports"]["result"]).read_text("utf-8-sig")
    scores = seed_script(text)
    by_metric = {m["metric"]: m for m in summary["metrics"]}
    # The evaluator's name sits on its primary metric's row; other metrics keep their names.
    assert scores["Rouge Metric"] == (
        round(by_metric["ROUGE-L"]["average"], 4),
        round(by_metric["ROUGE-L"]["pass_rate"], 4),
    )
    assert scores["Exact match"] == (0.5, 0.5)
    assert {"ROUGE-1", "ROUGE-2"} <= set(scores) and "ROUGE-L" not in scores
    # Every column we had is still there, and per-iteration rows do not repeat a name.
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {"Metric", "Evaluator", "Iteration", "Count", "Threshold"} <= set(rows[0])
    assert all(r["name"] == "" for r in rows if r["Iteration"] != "all")
    assert len([r for r in rows if r["Iteration"] != "all"]) == 2 * 4
