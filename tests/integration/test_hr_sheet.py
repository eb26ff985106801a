"""The HR evaluation sheet scored as written: no target, every column mapped, NA skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.suite import read_suite_file
from tests.support.hr_sheet import ROWS, write_hr_sheet

from .conftest import read_csv

runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def by_metric(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["metric"]: m for m in summary["metrics"]}


def test_every_column_is_mapped_and_na_is_not_given(tmp_path: Path) -> None:
    suite = read_suite_file(write_hr_sheet(tmp_path / "hr-eval.xlsx"))
    leave, balance, hello = suite.cases
    assert leave.expected_intent == "leave_policy" and leave.intent == "leave_policy"
    assert leave.expected_tool == "search_policies" and leave.tool == "search_policies"
    assert leave.documents == ["leave-policy.pdf", "benefits.pdf"]
    assert leave.expected_documents == ["leave-policy.pdf"]
    assert leave.contexts == leave.expected_contexts == [ROWS[0][7]]
    assert leave.answer == ROWS[0][11] and leave.expected_answer == ROWS[0][12]
    assert balance.data == '{"remaining_days": 12}'
    assert balance.expected_data == '{"remaining_days":12}'
    # NA, N/A, n/a, - and empty are "not given", never the text "NA".
    assert leave.data is leave.expected_data is None
    assert balance.documents is None and balance.expected_documents == []
    assert balance.contexts == [] and balance.expected_contexts == []
    assert hello.tool is hello.expected_tool is None
    assert hello.data is hello.expected_data is None
    assert not any(c.metadata for c in suite.cases)  # no column was left unmapped


def test_the_sheet_scores_with_no_target(tmp_path: Path) -> None:
    sheet = write_hr_sheet(tmp_path / "hr-eval.xlsx")
    out = tmp_path / "out"
    result = run("run", "--suite", str(sheet), "--out", str(out), "--json", "--fail-on", "errors")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["target"] == "hr-eval" and summary["target_kind"] == "logged"
    assert summary["answered"] == 3 and summary["target_errors"] == 0
    metrics = by_metric(summary)
    # intent correct 3/3; tool correct 2/2 with the NA row skipped, not scored 0
    assert (metrics["Intent correct"]["average"], metrics["Intent correct"]["count"]) == (1.0, 3)
    tool = metrics["Tool correct"]
    assert (tool["average"], tool["count"], tool["skipped"]) == (1.0, 2, 1)
    # reciprocal rank 1 for the leave question; the rows with NA documents are skipped
    rank = metrics["Reciprocal rank"]
    assert (rank["average"], rank["count"], rank["skipped"]) == (1.0, 1, 2)
    assert (metrics["Chunk match"]["count"], metrics["Chunk match"]["skipped"]) == (1, 2)
    data = metrics["Retrieved data match"]
    assert (data["average"], data["count"], data["skipped"]) == (1.0, 1, 2)
    assert metrics["Token F1"]["count"] == 3 and 0 < metrics["Token F1"]["average"] < 1
    assert metrics["ROUGE-L"]["count"] == 3 and metrics["BLEU-1"]["count"] == 3
    run_metrics = summary["run_metrics"]
    assert run_metrics["Intent classification"]["macro_f1"] == 1.0
    assert run_metrics["Tool choice"]["cases"] == 2
    details = read_csv(out / summary["reports"]["details"])
    leave = next(r for r in details if r["question"].startswith("How many days"))
    assert float(leave["Reciprocal rank score"]) == 1.0
    hello = next(r for r in details if r["question"] == "Hello!")
    assert hello["Tool correct score"] == "" and "skipped" in hello["Tool correct reason"]
    assert "report.html" in summary["reports"]["html"]


def test_seed_metric_names_select_the_same_evaluators(tmp_path: Path) -> None:
    sheet = write_hr_sheet(tmp_path / "hr-eval.xlsx")
    names = ["classified_intent_score", "selected_tool_score", "reciprocal rank", "F1 score"]
    args = [a for n in [*names, "ROUGE"] for a in ("--metric", n)]
    result = run("run", "--suite", str(sheet), "--out", str(tmp_path / "o"), "--json", *args)
    assert result.exit_code == 0, result.output
    metrics = by_metric(json.loads(result.stdout))
    assert {"Intent correct", "Tool correct", "Reciprocal rank", "Token F1", "ROUGE-L"} <= set(
        metrics
    )
    assert "Exact match" not in metrics  # only what was named


def test_a_row_without_its_answer_needs_a_target(tmp_path: Path) -> None:
    rows = [list(ROWS[0]), list(ROWS[1])]
    rows[1][11] = "NA"
    sheet = write_hr_sheet(tmp_path / "partial.xlsx", rows)
    out = tmp_path / "out"
    result = run("run", "--suite", str(sheet), "--out", str(out))
    assert result.exit_code == 2
    assert "case-0002 (row 3)" in result.stderr and "answer_from_system" in result.stderr
    assert not out.exists() or not any(out.rglob("*details.csv"))
