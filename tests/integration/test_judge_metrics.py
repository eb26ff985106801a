"""Named judge metrics (issue 32 item 2): two GEval metrics and one BYOP in one run, through
the CLI (``--judge-metric``) and ``evaluate(metrics=[GEval(name=...), ...])``, against the
loopback judge stub. Each is its own column, result row and gate with its own threshold; the
judge prompt of each carries its own criteria and only its ``evaluation_params`` fields; a
name already in use, or declared twice, is refused before anything runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.errors import ConfigError
from evalrunner.evaluators import registry
from evalrunner.evaluators.judge_quality import BYOP, GEval
from tests.support.catalog import restored_catalog
from tests.support.judge_stub import JudgeStub
from tests.support.loopback_http import Loopback

from .conftest import read_csv

POLITENESS = {
    "kind": "geval",
    "name": "Politeness",
    "criteria": "Is the answer polite to the employee?",
    "evaluation_params": ["input", "actual_output"],
    "threshold": 0.7,
}
CORRECTNESS = {
    "kind": "geval",
    "name": "Correctness",
    "evaluation_steps": ["Check that the answer states the number the expected answer gives"],
    "evaluation_params": ["actual_output", "expected_output"],
    "threshold": 0.3,
}
MENTIONS_DAYS = {
    "kind": "byop",
    "name": "Mentions days",
    "prompt": "Does the answer {answer} speak of days?",
    "threshold": 0.5,
}
#: question, expected answer; the target always answers "25 days".
CASES = [("How many leave days?", "25 days of leave"), ("And sick leave?", "10 sick days")]


@pytest.fixture(autouse=True)
def catalog_restored() -> Iterator[None]:
    """The judge metrics a test declares leave the process's catalog as it was."""
    with restored_catalog():
        yield


@pytest.fixture
def server() -> Iterator[Loopback]:
    with Loopback() as loopback:
        loopback.always(200, {"answer": "25 days"})
        yield loopback


def judge(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    """A judge that reads the prompt: Politeness likes the leave-days question, Correctness
    the case whose expected answer says 25; BYOP answers whether the answer says days."""
    prompt = messages[-1]["content"]
    if "Write the evaluation form" in prompt:
        return {"steps": ["Read the answer", "Judge its tone"]}
    if "polite to the employee" in prompt:
        return {"score": 5 if "leave days" in prompt else 2, "reason": "tone judged"}
    if "states the number" in prompt:
        return {"score": 4 if "25 days of leave" in prompt else 2, "reason": "number judged"}
    if "speak of days" in prompt:
        return {"reason": "it says days", "verdict": "days" in prompt}
    raise AssertionError(f"unexpected judge prompt: {prompt[:200]}")


def judge_spec(stub: JudgeStub, tmp_path: Path) -> dict[str, Any]:
    return {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 1,
    }


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "s.csv"
    rows = "".join(f"{q},{e}\n" for q, e in CASES)
    path.write_text("question,expected_answer\n" + rows, "utf-8")
    return path


def run_cli(tmp_path: Path, server: Loopback, stub: JudgeStub, *extra: str):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            str(suite(tmp_path)),
            "--target",
            json.dumps({"url": server.url}),
            "--judge",
            json.dumps(judge_spec(stub, tmp_path)),
            "--metric",
            "Politeness",
            "--out",
            str(out),
            "--quiet",
            "--json",
            "--no-preflight",
            *extra,
        ],
    )
    return result, out


def prompts_of(stub: JudgeStub, marker: str, *, scoring: bool = True) -> list[str]:
    """The user prompts that hold ``marker``: the case-scoring ones (or the others)."""
    prompts = [r.messages[-1]["content"] for r in stub.requests]
    return [p for p in prompts if marker in p and ("Write the evaluation form" not in p) == scoring]


def assert_each_prompt_has_its_own_criteria_and_fields(stub: JudgeStub) -> None:
    polite, correct, byop = (
        prompts_of(stub, m) for m in ("polite to the employee", "states the number", "speak of")
    )
    assert len(polite) == len(correct) == 2  # one call per case each
    # the cases' answers are the same: one BYOP prompt, the second case's from the judge cache
    assert len(set(byop)) == 1
    for prompt in polite:  # input and actual_output only
        assert "<question>" in prompt and "<answer>" in prompt
        assert "<expected_answer>" not in prompt and "states the number" not in prompt
        assert not re.search(r"of leave|sick days", prompt)
    for prompt in correct:  # actual_output and expected_output only
        assert "<expected_answer>" in prompt and "<answer>" in prompt
        assert "<question>" not in prompt and "polite" not in prompt
        assert not re.search(r"leave days\?|sick leave\?", prompt)
    for prompt in byop:  # what its template names: the answer
        assert "<answer>" in prompt and "<question>" not in prompt
    # Correctness gave its steps: the judge wrote steps for Politeness only
    written = prompts_of(stub, "", scoring=False)
    assert len(written) == 1 and "polite to the employee" in written[0]


def test_two_gevals_and_a_byop_from_the_cli_each_its_column_row_and_gate(
    tmp_path, server, judge_stub
):
    judge_stub.responder = judge
    declared = json.dumps([POLITENESS, CORRECTNESS])
    byop_file = tmp_path / "byop.json"
    byop_file.write_text(json.dumps(MENTIONS_DAYS), "utf-8")

    result, out = run_cli(
        tmp_path,
        server,
        judge_stub,
        "--judge-metric",
        declared,
        "--judge-metric",
        str(byop_file),
        "--fail-under",
        "Mentions days=0.9",
    )

    # the sick-leave case is below Politeness' 0.7 and Correctness' 0.3: the run fails
    assert result.exit_code == 1, result.output
    summary = json.loads(result.output)
    below = {b["metric"]: b for b in summary["verdict"]["below_threshold"]}
    assert set(below) == {"Politeness", "Correctness"}
    assert (below["Politeness"]["threshold"], below["Politeness"]["failed"]) == (0.7, 1)
    assert (below["Correctness"]["threshold"], below["Correctness"]["failed"]) == (0.3, 1)
    details = read_csv(out / summary["reports"]["details"])
    by_question = {row["question"]: row for row in details}
    leave, sick = by_question[CASES[0][0]], by_question[CASES[1][0]]
    assert (leave["Politeness score"], leave["Politeness success"]) == ("1.0000", "true")
    assert (sick["Politeness score"], sick["Politeness success"]) == ("0.2500", "false")
    assert (leave["Correctness score"], leave["Correctness success"]) == ("0.7500", "true")
    assert (sick["Correctness score"], sick["Correctness success"]) == ("0.2500", "false")
    assert sick["Mentions days score"] == "1.0000"
    assert "it says days" in sick["Mentions days reason"]
    results = read_csv(out / summary["reports"]["result"])
    rows = {r["Metric"]: r for r in results if r["Iteration"] == "all"}
    assert {"Politeness", "Correctness", "Mentions days"} <= set(rows)
    assert [rows[m]["Threshold"] for m in ("Politeness", "Correctness", "Mentions days")] == [
        "0.7000",
        "0.3000",
        "0.5000",
    ]
    gates = {g["metric"]: g for g in summary["gates"]}
    assert gates["Mentions days"]["passed"] is True and summary["verdict"]["failed_gates"] == []
    assert_each_prompt_has_its_own_criteria_and_fields(judge_stub)


def test_a_threshold_on_the_command_line_gates_a_named_judge_metric(tmp_path, server, judge_stub):
    judge_stub.responder = judge
    result, _ = run_cli(
        tmp_path,
        server,
        judge_stub,
        "--judge-metric",
        json.dumps([POLITENESS, CORRECTNESS]),
        "--threshold",
        "Politeness=0.2",
        "--fail-under",
        "Correctness=0.6",
    )

    assert result.exit_code == 1, result.output
    summary = json.loads(result.output)
    assert {b["metric"] for b in summary["verdict"]["below_threshold"]} == {"Correctness"}
    gates = {g["metric"]: g for g in summary["gates"]}
    assert gates["Correctness"]["passed"] is False  # (0.75 + 0.25) / 2 = 0.5 < 0.6
    assert gates["Correctness"]["average"] == pytest.approx(0.5)


def test_evaluate_takes_named_geval_and_byop_objects(tmp_path, server, judge_stub):
    judge_stub.responder = judge
    rows = [{"question": q, "expected_answer": e} for q, e in CASES]

    run = evalrunner.evaluate(
        rows,
        {"url": server.url},
        metrics=[
            GEval(**{k: v for k, v in POLITENESS.items() if k != "kind"}),
            GEval(**{k: v for k, v in CORRECTNESS.items() if k != "kind"}),
            BYOP(**{k: v for k, v in MENTIONS_DAYS.items() if k != "kind"}),
        ],
        judge=judge_spec(judge_stub, tmp_path),
        thresholds={"Correctness": 0.2},
        out=tmp_path / "out",
        preflight=False,
    )

    assert run.metric("Politeness") == pytest.approx(0.625)
    assert run.metric("Correctness") == pytest.approx(0.5)
    assert run.metric("Mentions days") == pytest.approx(1.0)
    # Correctness' threshold given here wins over the object's: only Politeness fails a case
    assert {b.metric for b in run.verdict.below_threshold} == {"Politeness"}
    assert not run.passed
    assert_each_prompt_has_its_own_criteria_and_fields(judge_stub)


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ([{**POLITENESS, "name": "Faithfulness"}], "already taken by the built-in evaluator"),
        ([{**POLITENESS, "name": "ROUGE-L"}], "already taken by the built-in evaluator"),
        ([POLITENESS, {**CORRECTNESS, "name": "politeness"}], "declared twice"),
        ([{**MENTIONS_DAYS, "criteria": "x"}], "a byop metric takes prompt, not criteria"),
        ([{**POLITENESS, "name": "=HYPERLINK(1)"}], "must start with a letter"),
        ([{**POLITENESS, "evaluation_params": ["tools"]}], "unknown evaluation_params entry"),
    ],
)
def test_a_bad_declaration_is_refused_before_the_run(tmp_path, server, judge_stub, declared, said):
    result, _ = run_cli(tmp_path, server, judge_stub, "--judge-metric", json.dumps(declared))

    assert result.exit_code == 2, result.output
    assert said in result.output
    assert judge_stub.requests == [] and server.requests == []


def test_geval_named_like_a_built_in_is_refused_in_python():
    with pytest.raises(ConfigError, match="'Faithfulness' is already taken by the built-in"):
        GEval(name="Faithfulness", criteria="Is it faithful?")


def test_a_named_judge_metric_declared_again_with_other_settings_replaces_it():
    first = GEval(name="Tone", criteria="Is it calm?", threshold=0.6)
    again = GEval(name="Tone", criteria="Is it warm?", threshold=0.8)

    assert type(first) is not type(again)
    assert registry.resolve("Tone") is type(again)
    assert again.options.criteria == "Is it warm?" and again.threshold("Tone") == 0.8
