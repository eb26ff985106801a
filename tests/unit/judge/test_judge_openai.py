"""OpenAI-compatible judge against the loopback stub: request shape, parsing, repair, retries,
timeouts, the concurrency limit, log-probabilities, auth headers and per-case accounting."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel, Field

from evalrunner.judge import JudgeError, JudgeParseError, Message
from evalrunner.judge.base import CURRENT_CASE, CaseUsage
from evalrunner.judge.openai_judge import OpenAIJudge
from evalrunner.judge.reply_format import BUDGET_FLOOR, reply_budget, wire_schema
from tests.support.judge_stub import JudgeStub, StubReply, scripted


class Verdict(BaseModel):
    verdict: str = Field(pattern="^(yes|no)$")
    reason: str


GOOD = '{"verdict": "yes", "reason": "stated in the context"}'


def ask(judge: Any, text: str = "Is the claim supported?", **kwargs: Any) -> Any:
    messages = [
        Message(role="system", content="You are a strict grader."),
        Message(role="user", content=text),
    ]
    return judge.ask(messages, Verdict, purpose=kwargs.pop("purpose", "verdicts"), **kwargs)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "EVALRUNNER_SECRET_JUDGE_STUB_KEY",
        "EVALRUNNER_SECRET_JUDGE_TEST_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def test_happy_path_request_shape_and_usage(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(
        GOOD, prompt_tokens=120, completion_tokens=9
    )
    judge = judge_stub.judge()
    assert isinstance(judge, OpenAIJudge)
    reply = ask(judge)
    assert reply.value == Verdict(verdict="yes", reason="stated in the context")
    assert not reply.cached and reply.top_logprobs is None
    assert reply.usage.as_dict() == {
        "calls": 1,
        "cached": 0,
        "input_tokens": 120,
        "output_tokens": 9,
        "retries": 0,
        "parse_failures": 0,
    }
    assert judge.usage == reply.usage
    (request,) = judge_stub.requests
    assert request.path == "/v1/chat/completions"
    assert "Authorization" not in request.headers  # no key in the environment
    body = request.body
    assert body["model"] == "stub-judge" and body["temperature"] == 0
    # the schema goes to the server's structured output, a filled-in example to the prompt
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": wire_schema(Verdict)},
    }
    assert body["max_tokens"] == reply_budget(Verdict, [], 4096) == BUDGET_FLOOR + 2 + 2 * 52
    assert "logprobs" not in body
    system, user = body["messages"]
    assert user == {"role": "user", "content": "Is the claim supported?"}
    assert system["role"] == "system"
    first, last = system["content"].split("\n\n")
    assert first == "You are a strict grader."
    assert last.endswith('{"verdict": "<verdict>", "reason": "<reason>"}')
    assert "properties" not in system["content"]


def test_schema_line_is_a_system_message_when_there_is_none(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: GOOD
    judge_stub.judge().ask([Message(role="user", content="Q")], Verdict, purpose="p")
    messages = judge_stub.requests[0].messages
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].startswith("Reply with one JSON object shaped like this")


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{GOOD}\n```",
        f"Sure! Here is my verdict:\n```\n{GOOD}\n```\nHope it helps.",
        f'My answer: {GOOD} (note: "}}" closes it)',
        'Thinking {not json} ... {"verdict": "yes", "reason": "has a } brace"} done',
    ],
)
def test_json_in_fences_and_prose(judge_stub: JudgeStub, text: str) -> None:
    judge_stub.responder = lambda messages, request: text
    reply = ask(judge_stub.judge())
    assert reply.value.verdict == "yes"
    assert len(judge_stub.requests) == 1  # no repair needed


def test_garbage_is_repaired_once_then_a_parse_failure(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: "I think the answer is yes."
    judge = judge_stub.judge()
    with pytest.raises(JudgeParseError) as info:
        ask(judge)
    assert "stub-judge" in info.value.message and "Verdict" in info.value.message
    assert info.value.raw == "I think the answer is yes."
    first, repair = judge_stub.requests  # exactly one repair call
    # the repair changes the prompt: it quotes the reply and the error in the user turn
    # (roles still alternate), not a replay of the reply as the model's own turn
    assert [m["role"] for m in repair.messages] == ["system", "user"]
    assert repair.messages[0] == first.messages[0]
    original = first.messages[1]["content"]
    instruction = repair.messages[1]["content"]
    assert instruction.startswith(original) and instruction != original
    assert "<reply>\nI think the answer is yes.\n</reply>" in instruction
    assert "no JSON object found in the reply" in instruction
    assert instruction.endswith('{"verdict": "<verdict>", "reason": "<reason>"}')
    assert judge.usage.parse_failures == 1 and judge.usage.calls == 2


def test_invalid_schema_then_repaired(judge_stub: JudgeStub) -> None:
    judge_stub.responder = scripted('{"verdict": "maybe"}', GOOD)
    reply = ask(judge_stub.judge())
    assert reply.value.verdict == "yes"
    assert (reply.usage.calls, reply.usage.parse_failures) == (2, 0)
    repair = judge_stub.requests[1].messages[-1]["content"]
    assert "verdict" in repair and "reason" in repair  # names the failing fields


def test_429_with_retry_after_then_success(judge_stub: JudgeStub) -> None:
    judge_stub.responder = scripted(
        StubReply("slow down", status=429, headers={"retry-after-ms": "300"}), GOOD
    )
    judge = judge_stub.judge()
    start = time.monotonic()
    reply = ask(judge)
    assert time.monotonic() - start >= 0.29  # waited as told, not the 10 ms backoff
    assert len(judge_stub.requests) == 2
    assert (reply.usage.calls, reply.usage.retries) == (1, 1)
    assert judge.usage.retries == 1


def test_retry_after_is_capped_by_the_timeout(judge_stub: JudgeStub) -> None:
    judge_stub.responder = scripted(
        StubReply("slow down", status=429, headers={"Retry-After": "30"}), GOOD
    )
    start = time.monotonic()
    ask(judge_stub.judge(timeout_seconds=0.4))
    # At least the capped wait, far less than the 30 s asked for (a generous upper bound,
    # so a loaded machine cannot fail it).
    assert 0.35 <= time.monotonic() - start < 15


def test_500_forever_gives_up_after_max_retries(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply("boom", status=500)
    judge = judge_stub.judge(max_retries=3)
    with pytest.raises(JudgeError) as info:
        ask(judge, purpose="statements")
    assert not isinstance(info.value, JudgeParseError)
    # a 500 to the first structured-output mode steps to the next once (llama-cpp-python's
    # answer to json_schema), then the 500s are retried as server errors
    formats = [r.body["response_format"]["type"] for r in judge_stub.requests]
    assert formats == ["json_schema", "json_object", "json_object", "json_object", "json_object"]
    message = info.value.message
    assert "stub-judge" in message and "127.0.0.1" in message and "HTTP 500" in message
    assert "4 attempt(s)" in message and "'statements'" in message
    assert (judge.usage.calls, judge.usage.retries, judge.usage.parse_failures) == (1, 3, 0)


def test_client_errors_are_not_retried(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply("bad key", status=401)
    with pytest.raises(JudgeError) as info:
        ask(judge_stub.judge(max_retries=3))
    assert len(judge_stub.requests) == 1
    assert (
        "HTTP 401" in info.value.message
        and "EVALRUNNER_SECRET_JUDGE_STUB_KEY" in info.value.message
    )


def test_a_hanging_server_is_bounded_by_the_timeout(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(GOOD, delay=30)
    judge = judge_stub.judge(timeout_seconds=0.3, max_retries=1)
    with pytest.raises(JudgeError) as info:
        ask(judge)
    # Without the deadline the first attempt would have got its good reply after 30 s and
    # there would be no error and no second attempt: the two cut-off attempts are the proof,
    # with no clock in the assertion.
    assert len(judge_stub.requests) == 2
    assert "timeout_seconds=0.3" in info.value.message


def test_unreachable_server_is_a_judge_error() -> None:
    with JudgeStub() as stub:
        config = stub.judge_config(max_retries=1)
    judge = OpenAIJudge(config)  # the stub is gone: connection refused
    judge.backoff_base = 0.01
    with pytest.raises(JudgeError, match="could not connect"):
        ask(judge)


def test_concurrency_limit_is_run_wide(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(GOOD, delay=0.15)
    judge = judge_stub.judge(max_concurrency=2)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            ask(judge, f"question {i}")  # distinct prompts: nothing is shared
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(judge_stub.requests) == 6
    assert judge_stub.max_in_flight == 2
    assert judge.usage.calls == 6


def test_logprobs_pass_through(judge_stub: JudgeStub) -> None:
    top = [{"{": -0.01}, {"7": -0.2, "8": -1.9, "6": -3.0}]
    judge_stub.responder = lambda messages, request: StubReply(GOOD, top_logprobs=top)
    judge = judge_stub.judge()
    reply = ask(judge, logprobs=True)
    assert reply.top_logprobs == top
    body = judge_stub.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    plain = ask(judge, "another question")
    assert plain.top_logprobs is None and "logprobs" not in judge_stub.requests[1].body


def test_unsupported_response_format_is_dropped(judge_stub: JudgeStub) -> None:
    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        if "response_format" in request:
            return StubReply("response_format is not supported by this server", status=400)
        return GOOD

    judge_stub.responder = responder
    judge = judge_stub.judge()
    reply = ask(judge)
    # json_schema, json_object with a schema, plain JSON mode, then the prompt alone
    assert reply.value.verdict == "yes" and reply.usage.retries == 3
    sent = [r.body.get("response_format", {}).get("type") for r in judge_stub.requests]
    assert sent == ["json_schema", "json_object", "json_object", None]
    assert "schema" in judge_stub.requests[1].body["response_format"]
    assert "schema" not in judge_stub.requests[2].body["response_format"]
    ask(judge, "another question")  # remembered: no second rejection
    assert len(judge_stub.requests) == 5
    assert "response_format" not in judge_stub.requests[4].body
    assert judge.output.current == "none" and len(judge.output.steps) == 3


def test_bearer_key_from_env(judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_JUDGE_TEST_KEY", "sk-secret")
    judge_stub.responder = lambda messages, request: GOOD
    ask(judge_stub.judge(openai={"api_key_env": "EVALRUNNER_SECRET_JUDGE_TEST_KEY"}))
    assert judge_stub.requests[0].headers["Authorization"] == "Bearer sk-secret"


def test_azure_style_api_key_header(judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_JUDGE_TEST_KEY", "azure-secret")
    judge_stub.responder = lambda messages, request: GOOD
    judge = judge_stub.judge(
        openai={
            "base_url": judge_stub.url + "?api-version=2024-10-21",
            "api_key_env": "EVALRUNNER_SECRET_JUDGE_TEST_KEY",
            "api_key_header": "api-key",
        }
    )
    ask(judge)
    (request,) = judge_stub.requests
    assert request.headers["api-key"] == "azure-secret"
    assert "Authorization" not in request.headers
    assert judge.url.endswith("/v1/chat/completions?api-version=2024-10-21")


def test_usage_is_recorded_per_case_and_purpose(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(
        GOOD, prompt_tokens=10, completion_tokens=3
    )
    judge = judge_stub.judge()
    case = CaseUsage()
    token = CURRENT_CASE.set(case)
    try:
        ask(judge, purpose="statements")
        ask(judge, purpose="statements")  # cached: counted, costs nothing
        ask(judge, "other", purpose="verdicts")
    finally:
        CURRENT_CASE.reset(token)
    assert case.as_dict() == {
        "calls": 2,
        "cached": 1,
        "input_tokens": 20,
        "output_tokens": 6,
        "retries": 0,
        "parse_failures": 0,
        "by_purpose": {"statements": 1, "verdicts": 1},
    }
    assert judge.usage == case.usage


def test_a_failing_responder_fails_the_ask_at_once(judge_stub: JudgeStub) -> None:
    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        raise KeyError("no script for this prompt")

    judge_stub.responder = responder
    with pytest.raises(JudgeError, match="stub responder raised KeyError"):
        ask(judge_stub.judge(max_retries=3))
    assert len(judge_stub.requests) == 1
    assert [type(e) for e in judge_stub.errors] == [KeyError]
    judge_stub.clear()
    assert judge_stub.requests == [] and judge_stub.errors == []
