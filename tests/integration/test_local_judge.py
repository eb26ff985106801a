"""Issue 19's acceptance: the demo suite with the five RAG metrics, judged through the CLI by
a loopback server that behaves like a small model behind llama.cpp / vLLM (one request at a
time; unconstrained, it writes until max_tokens, or far beyond any timeout when none is sent;
it echoes a schema document it is shown; llama-cpp-python's HTTP 500 on an unknown
response_format). See tests/support/local_model.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.judge_stub import JudgeStub
from tests.support.local_model import LocalModel, fill_in, schema_documents

runner = CliRunner()
FIVE = (
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
)
#: 20 µs per generated token: a reply cut at its budget takes milliseconds, a request with no
#: budget (the model's 1M-token limit) 20 s, longer than the judge's timeout below.
SECONDS_PER_TOKEN = 2e-5
NO_BUDGET_LIMIT = 1_000_000


def demo(tmp_path: Path, stub: JudgeStub, **judge: Any) -> dict[str, Any]:
    settings = {
        "openai": {"base_url": stub.url, "model": "tiny-gguf"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "timeout_seconds": 10,
        "max_retries": 0,
        **judge,
    }
    # no pre-flight: these tests hold the run's judge accounting to every request on the wire
    args = ["demo", "--out", str(tmp_path / "out"), "--json", "--judge", json.dumps(settings)]
    args += ["--no-preflight"]
    for metric in FIVE:
        args += ["--metric", metric]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # 1: a gate failed, not a crash
    return dict(json.loads(result.stdout))


def assert_all_scored(summary: dict[str, Any]) -> None:
    metrics = {m["metric"]: m for m in summary["metrics"]}
    for name in FIVE:
        assert metrics[name]["errored"] == 0, metrics[name]
        assert metrics[name]["count"] > 0
    assert summary["judge"]["parse_failures"] == 0


@pytest.fixture
def serial_stub(judge_stub: JudgeStub) -> JudgeStub:
    judge_stub.serial = True
    return judge_stub


def test_a_model_that_does_not_stop_is_bounded_by_max_tokens(
    tmp_path: Path, serial_stub: JudgeStub
) -> None:
    model = LocalModel(
        server="plain",  # ignores structured output: the model writes on until it is stopped
        context_tokens=NO_BUDGET_LIMIT,
        seconds_per_token=SECONDS_PER_TOKEN,
    )
    serial_stub.responder = model
    summary = demo(tmp_path, serial_stub)
    assert_all_scored(summary)
    requests = serial_stub.requests
    budgets = [r.body.get("max_tokens") for r in requests]
    # every request carried a budget sized for its reply, so every reply stopped there: what
    # the single-slot server spent generating is bounded by their sum (about 3 s at the
    # simulated speed here), against 20 s for every request without one
    assert model.unbounded == 0 and all(isinstance(b, int) and 0 < b <= 4096 for b in budgets)
    assert model.generated <= sum(budgets)
    assert len(set(budgets)) > 3  # sized per schema and prompt, not one number for all
    assert summary["judge"]["calls"] == len(requests)


def test_a_server_that_follows_json_schema_gives_no_parse_failures(
    tmp_path: Path, serial_stub: JudgeStub
) -> None:
    model = LocalModel(server="llama-server", context_tokens=NO_BUDGET_LIMIT)
    serial_stub.responder = model
    summary = demo(tmp_path, serial_stub)
    assert_all_scored(summary)
    assert set(model.formats) == {"json_schema"} and model.echoes == 0
    for request in serial_stub.requests:
        schema = request.body["response_format"]["json_schema"]["schema"]
        assert schema["type"] == "object" and "$ref" not in json.dumps(schema)
    assert summary["judge"]["retries"] == 0


def test_llama_cpp_python_500_on_json_schema_steps_down_once_per_run(
    tmp_path: Path, serial_stub: JudgeStub
) -> None:
    model = LocalModel(server="llama-cpp-python", context_tokens=NO_BUDGET_LIMIT)
    serial_stub.responder = model
    summary = demo(tmp_path, serial_stub)
    assert_all_scored(summary)
    # the first requests in flight may all carry json_schema; after the first 500 the run
    # sends json_object with the schema, which this server enforces. Requests already in
    # flight may reach the one-at-a-time server after the first step-down request (by how
    # much depends on how the OS schedules their threads on a loaded machine, so their
    # position is not bounded), but never more of them than calls in flight: the step-down
    # holds for the whole run, not per case (that would reject one request per call).
    rejected = [f for f in model.formats if f == "json_schema"]
    assert 1 <= len(rejected) <= 10  # at most the requests in flight (the cases at once)
    assert len(model.formats) > 3 * len(rejected)
    last_rejected = max(i for i, f in enumerate(model.formats) if f == "json_schema")
    assert set(model.formats[last_rejected + 1 :]) == {"json_object+schema"}
    assert summary["judge"]["retries"] == len(rejected)


def test_an_echoing_model_never_sees_a_schema_and_its_repair_differs(
    tmp_path: Path, serial_stub: JudgeStub
) -> None:
    """The model echoes any schema document in its prompt, and (deterministically, as at
    temperature 0) answers the statements prompt of every answer with prose first; only a
    changed prompt can get another reply from it."""

    def answer(messages: list[dict[str, Any]], schema: Any) -> Any:
        user = messages[-1]["content"]
        if "into atomic statements" in user and "<reply>" not in user:
            return "Sure! The statements are: leave is paid, and it is 25 days."
        return fill_in(messages, schema)

    model = LocalModel(server="plain", answer=answer, rambles=False)
    serial_stub.responder = model
    summary = demo(tmp_path, serial_stub)
    assert_all_scored(summary)
    requests = serial_stub.requests
    assert model.echoes == 0
    assert not any(schema_documents(r.prompt) for r in requests)  # no schema in any prompt
    repairs = [r for r in requests if "<reply>" in r.messages[-1]["content"]]
    assert repairs
    firsts = {r.messages[-1]["content"]: r for r in requests if r not in repairs}
    for repair in repairs:
        quoted = repair.messages[-1]["content"]
        original = next(text for text in firsts if quoted.startswith(text))
        assert quoted != original and "Sure! The statements are" in quoted
        assert "no JSON object found" in quoted
    # one bad reply costs one repair: Faithfulness and Answer Relevancy need the same
    # statements, and no first ask is sent twice
    prompts = [r.messages[-1]["content"] for r in requests if r not in repairs]
    assert len(prompts) == len(set(prompts))
