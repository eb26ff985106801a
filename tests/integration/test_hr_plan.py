"""Issue 32 item 6 (c): the HR sheet scored as its evaluation plan scores it: "no tool
expected and none used" counts as correct with the option ``none_as_label``, and the plan's
own header spellings (``gpt_groundness``, ``ROUGE/BLUE``) select their metrics; through the
CLI and ``evaluate()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from tests.support.hr_sheet import write_hr_sheet

from .conftest import read_csv

pytestmark = pytest.mark.slow

NONE_COUNTS = {"Tool choice": {"none_as_label": True}}


def details(out: Path) -> dict[str, dict[str, str]]:
    (path,) = out.rglob("*-details.csv")
    return {r["question"]: r for r in read_csv(path)}


def test_the_cli_scores_the_greeting_row_as_the_plan_does(tmp_path: Path) -> None:
    sheet = write_hr_sheet(tmp_path / "hr-eval.xlsx")
    args = ["run", "--suite", str(sheet), "--metric", "selected_tool_score"]
    args += ["--metric", "ROUGE/BLUE", "--fail-on", "never", "--json"]
    common = [*args, "--out"]
    plain = CliRunner().invoke(app, [*common, str(tmp_path / "plain")], catch_exceptions=False)
    assert plain.exit_code == 0, plain.output
    assert details(tmp_path / "plain")["Hello!"]["Tool correct reason"].startswith("skipped:")

    counted = CliRunner().invoke(
        app,
        [*common, str(tmp_path / "counted"), "--evaluator-options", json.dumps(NONE_COUNTS)],
        catch_exceptions=False,
    )
    assert counted.exit_code == 0, counted.output
    rows = details(tmp_path / "counted")
    hello = rows["Hello!"]
    assert (hello["Tool correct score"], hello["Tool correct reason"]) == (
        "1.0000",
        "no tool expected and none reported",
    )
    # ROUGE/BLUE selected both evaluators
    assert hello["ROUGE-L score"] and hello["BLEU-1 score"]
    summary = json.loads(counted.stdout)
    tool = next(m for m in summary["metrics"] if m["metric"] == "Tool correct")
    assert tool["average"] == 1.0 and tool["count"] == 3  # the plan's 3 of 3


def test_evaluate_accepts_the_plan_s_spellings_and_the_option(tmp_path: Path) -> None:
    sheet = write_hr_sheet(tmp_path / "hr-eval.xlsx")
    run = evalrunner.evaluate(
        suite=sheet,
        target={"logged": "hr-eval"},
        metrics=["ROUGE/BLUE", "selected_tool_score", "gpt_groundness"],
        evaluator_options=NONE_COUNTS,
        fail_on="never",
        preflight=False,
        out=tmp_path / "out",
    )
    evaluators = set(run.results["Evaluator"])
    assert {"Rouge Metric", "BLEU", "Tool choice", "Groundedness (1-5)"} <= evaluators
    assert run.metric("Tool correct") == 1.0
