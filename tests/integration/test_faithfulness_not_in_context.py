"""Issue 32 item 6 (d) as a user runs it: ``--evaluator-options '{"Faithfulness":
{"not_in_context": "faithful"}}'`` (and the same through ``evaluate()``) counts a claim the
retrieved context is silent about as faithful, as DeepEval does; without it, as Ragas does,
unsupported. Judged by the loopback OpenAI-compatible stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from tests.support.judge_stub import JudgeStub

pytestmark = pytest.mark.slow

ROWS = [{"question": "How much annual leave do I get?", "expected_answer": "25 days."}]
CLAIMS = ["You get 25 days.", "Unused leave expires in March."]
DEEPEVAL = {"Faithfulness": {"not_in_context": "faithful"}}


def target(question: str) -> dict[str, Any]:
    return {"answer": " ".join(CLAIMS), "contexts": ["Staff get 25 days of annual leave."]}


def judge(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    prompt = messages[-1]["content"]
    if "Split the text" in prompt:
        return {"statements": CLAIMS}
    if "supported is true" in prompt:
        return {
            "checks": [
                {"reason": "chunk 1", "supported": True, "relevant": True},
                {"reason": "not mentioned", "supported": False, "relevant": True},
            ]
        }
    if "contradicts it" in prompt:
        return {"verdicts": [{"reason": "the context is silent", "verdict": False}]}
    raise AssertionError(f"unexpected judge prompt: {prompt[:200]}")


def settings(stub: JudgeStub, tmp_path: Path) -> dict[str, Any]:
    stub.responder = judge
    return {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 0,
    }


def test_evaluate_counts_a_claim_the_context_lacks_as_the_option_says(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    def run(options: dict[str, Any] | None, out: str) -> float | None:
        return evalrunner.evaluate(
            suite=ROWS,
            target=target,
            metrics=["Faithfulness"],
            judge=settings(judge_stub, tmp_path),
            evaluator_options=options,
            fail_on="never",
            preflight=False,
            out=tmp_path / out,
        ).metric("Faithfulness")

    assert run(None, "ragas") == 0.5
    assert run(DEEPEVAL, "deepeval") == 1.0


def test_the_cli_takes_the_option(tmp_path: Path, judge_stub: JudgeStub) -> None:
    suite = tmp_path / "leave.json"
    rows = [
        {
            **ROWS[0],
            "actual_answer": " ".join(CLAIMS),
            "retrieved_contexts": ["Staff get 25 days of annual leave."],
        }
    ]
    suite.write_text(json.dumps(rows), encoding="utf-8")
    args = ["run", "--suite", str(suite), "--metric", "Faithfulness", "--json"]
    args += ["--judge", json.dumps(settings(judge_stub, tmp_path)), "--no-preflight"]
    args += ["--evaluator-options", json.dumps(DEEPEVAL), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    (faithfulness,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    assert faithfulness["average"] == 1.0
    asked = [r.prompt for r in judge_stub.requests]
    assert any("contradicts it" in p for p in asked)
