"""An H2O test lab with several models' answers per case: one run per model, a leaderboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.suite.labs import split_lab


def lab_row(question: str, expected: str, model: str, answer: str) -> dict[str, Any]:
    return {
        "input": question,
        "expected_output": expected,
        "actual_output": answer,
        "context": [],
        "model_key": model,
    }


LAB = {
    "name": "two models",
    "dataset": {
        "inputs": [
            lab_row("Annual leave?", "25 days of annual leave", "m1", "25 days of annual leave"),
            lab_row("Annual leave?", "25 days of annual leave", "m2", "I do not know"),
            lab_row("Pension match?", "The match is 6%", "m1", "The match is 6%"),
            lab_row("Pension match?", "The match is 6%", "m2", "The match is 6%"),
        ]
    },
    "models": [{"key": "m1", "name": "smart"}, {"key": "m2", "llm_model_name": "donkey"}],
}


def test_split_lab_only_when_several_models_answer_a_case() -> None:
    parts = split_lab(json.dumps(LAB).encode())
    assert [name for name, _ in parts] == ["smart", "donkey"]
    smart = json.loads(parts[0][1])
    assert [r["actual_output"] for r in smart["dataset"]["inputs"]] == [
        "25 days of annual leave",
        "The match is 6%",
    ]
    one_each = {**LAB, "dataset": {"inputs": LAB["dataset"]["inputs"][::2]}}  # type: ignore[index]
    assert split_lab(json.dumps(one_each).encode()) == []
    assert split_lab(b"[]") == [] and split_lab(b"not json") == []


def test_a_lab_runs_once_per_model_and_ranks_them(tmp_path: Path) -> None:
    lab = tmp_path / "lab.json"
    lab.write_text(json.dumps(LAB), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            *("run", "--suite", str(lab), "--out", str(out), "--metric", "Exact match"),
            *("--quiet", "--fail-on", "errors"),  # the donkey's answers fail, by design
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    reports = out / "test-reports"
    assert {p.name for p in reports.iterdir()} == {"smart", "donkey", "_leaderboard"}
    (board_file,) = (reports / "_leaderboard").glob("*-leaderboard.json")
    board = json.loads(board_file.read_text("utf-8"))
    text = json.dumps(board)
    assert "smart" in text and "donkey" in text
    smart = json.loads(next((reports / "smart").glob("*-summary.json")).read_text("utf-8"))
    donkey = json.loads(next((reports / "donkey").glob("*-summary.json")).read_text("utf-8"))
    exact = {s["target"]: s["metrics"][0]["average"] for s in (smart, donkey)}
    assert exact == {"smart": 1.0, "donkey": 0.5}
    assert smart["suite"] == donkey["suite"] == "test-suites/lab.json"
