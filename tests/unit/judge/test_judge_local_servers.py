"""The OpenAI-compatible judge against servers that behave like local model servers (issue
19): reply budgets, structured-output modes and their detection, cut replies, and the stub's
own behaviour (tests/support/local_model.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel

from evalrunner.judge import JudgeError, JudgeParseError, Message
from evalrunner.judge.extract import StatementChecks, counted
from evalrunner.judge.reply_format import reply_budget, with_reply_format
from tests.support.judge_stub import JudgeStub, StubReply
from tests.support.local_model import LocalModel, fill_in


class Verdict(BaseModel):
    reason: str
    verdict: bool


MESSAGES = [Message(role="system", content="Judge."), Message(role="user", content="Claim?")]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALRUNNER_SECRET_JUDGE_STUB_KEY", raising=False)


def ask(judge: Any, text: str = "Claim?", schema: Any = Verdict) -> Any:
    return judge.ask([MESSAGES[0], Message(role="user", content=text)], schema, purpose="p")


# -- the stub behaves like the servers it stands for ---------------------------------------
def test_the_stub_model_writes_until_its_context_without_max_tokens() -> None:
    model = LocalModel(server="plain", context_tokens=50_000)
    messages = [m.model_dump() for m in with_reply_format(MESSAGES, Verdict)]
    unbounded = model(messages, {"messages": messages})
    bounded = model(messages, {"messages": messages, "max_tokens": 300})
    assert unbounded.completion_tokens == 50_000 and unbounded.finish_reason == "length"
    assert bounded.completion_tokens == 300 and model.unbounded == 1
    assert str(bounded.content).startswith('{"reason": ')  # the JSON, then more text


def test_the_stub_model_echoes_a_schema_and_500s_like_llama_cpp_python() -> None:
    model = LocalModel(server="llama-cpp-python")
    schema_prompt = [{"role": "user", "content": 'Match {"properties": {"a": {}}}'}]
    echo = model(schema_prompt, {"messages": schema_prompt, "max_tokens": 100})
    assert str(echo.content).startswith('{"properties": {"a": {}}} and so on')
    assert model.echoes == 1
    refused = model(schema_prompt, {"response_format": {"type": "json_schema"}})
    assert refused.status == 500 and isinstance(refused.body, dict)
    assert refused.body["error"]["type"] == "internal_server_error"
    schema = {"type": "object", "properties": {"v": {"type": "array", "minItems": 3}}}
    followed = model(schema_prompt, {"response_format": {"type": "json_object", "schema": schema}})
    assert followed.finish_reason == "stop" and len(fill_in([], schema)["v"]) == 3


def test_a_serial_stub_answers_one_request_at_a_time(judge_stub: JudgeStub) -> None:
    active, most = [0], [0]
    lock = threading.Lock()

    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        with lock:
            active[0] -= 1
        return StubReply('{"reason": "r", "verdict": true}', delay=0.05)

    judge_stub.serial = True
    judge_stub.responder = responder
    judge = judge_stub.judge(cache=False)
    threads = [threading.Thread(target=ask, args=(judge, f"q{i}")) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(judge_stub.requests) == 4 and judge_stub.max_in_flight > 1 and most[0] == 1


# -- budgets and cut replies -----------------------------------------------------------------
def test_every_request_has_a_budget_sized_for_its_schema(judge_stub: JudgeStub) -> None:
    judge_stub.responder = LocalModel(server="llama-server")
    judge = judge_stub.judge()
    ask(judge, "one", counted(StatementChecks, checks=2))
    ask(judge, "two", counted(StatementChecks, checks=20))
    small, large = (r.body["max_tokens"] for r in judge_stub.requests)
    assert small < large <= 4096


def test_a_cut_reply_is_repaired_with_the_whole_budget(judge_stub: JudgeStub) -> None:
    long_reason = "word " * 600  # about 750 tokens: more than a Verdict's budget

    def answer(messages: list[dict[str, Any]], schema: Any) -> Any:
        return {"reason": long_reason, "verdict": True}

    judge_stub.responder = LocalModel(server="plain", answer=answer, rambles=False)
    judge = judge_stub.judge(max_tokens=2000)
    reply = ask(judge)
    assert reply.value.verdict is True
    first, repair = judge_stub.requests
    assert first.body["max_tokens"] == reply_budget(Verdict, [], 2000) < 2000
    assert repair.body["max_tokens"] == 2000
    assert "cut off at the reply budget" in repair.messages[-1]["content"]


def test_a_reply_cut_even_at_max_tokens_says_to_raise_it(judge_stub: JudgeStub) -> None:
    judge_stub.responder = LocalModel(
        server="plain", answer=lambda m, s: {"reason": "word " * 600, "verdict": True}
    )
    with pytest.raises(JudgeParseError, match=r"raise judge\.max_tokens"):
        ask(judge_stub.judge(max_tokens=300))


# -- structured output modes ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "key", "expected"),
    [
        ("json_object", "response_format", {"type": "json_object", "schema": ...}),
        ("json_mode", "response_format", {"type": "json_object"}),
        ("guided_json", "guided_json", ...),
        ("none", None, None),
    ],
)
def test_explicit_modes_send_their_parameter(
    judge_stub: JudgeStub, mode: str, key: str | None, expected: Any
) -> None:
    judge_stub.responder = LocalModel(server="vllm", rambles=False)
    ask(judge_stub.judge(structured_output=mode))
    body = judge_stub.requests[0].body
    present = {k for k in ("response_format", "guided_json") if k in body}
    assert present == ({key} if key else set())
    if isinstance(expected, dict):
        assert body[key]["type"] == expected["type"]
        assert ("schema" in body[key]) == ("schema" in expected)
    if key == "guided_json":
        assert body["guided_json"]["properties"]["verdict"] == {"type": "boolean"}


def test_an_explicit_mode_the_server_rejects_is_a_clear_error(judge_stub: JudgeStub) -> None:
    judge_stub.responder = LocalModel(server="llama-cpp-python")
    with pytest.raises(JudgeError, match=r"judge\.structured_output 'json_schema'") as info:
        ask(judge_stub.judge(structured_output="json_schema", max_retries=1), "x")
    assert "HTTP 500" in info.value.message and "'auto'" in info.value.message
    judge_stub.clear()
    judge_stub.responder = lambda m, r: StubReply("Invalid value for response_format", status=400)
    with pytest.raises(JudgeError, match="json_object"):
        ask(judge_stub.judge(structured_output="json_object"))
    assert len(judge_stub.requests) == 1  # never stepped down when set explicitly


def test_concurrent_first_asks_step_down_once(judge_stub: JudgeStub) -> None:
    model = LocalModel(server="llama-cpp-python")
    judge_stub.responder = model
    judge = judge_stub.judge(cache=False)
    barrier = threading.Barrier(6)

    def work(i: int) -> None:
        barrier.wait()
        assert ask(judge, f"q{i}").value.verdict is True

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [s[:2] for s in judge.output.steps] == [("json_schema", "json_object")]
    assert judge.usage.parse_failures == 0 and judge.usage.calls == 6
    assert model.formats.count("json_object+schema") == 6


def test_a_500_after_the_mode_worked_is_a_server_error(judge_stub: JudgeStub) -> None:
    replies = iter(
        [StubReply('{"reason": "r", "verdict": true}'), StubReply("overloaded", status=500)]
    )
    judge_stub.responder = lambda m, r: next(replies, StubReply('{"reason": "r", "verdict": 1}'))
    judge = judge_stub.judge()
    ask(judge, "first")
    ask(judge, "second")  # 500, retried with the same mode
    assert judge.output.steps == [] and judge.usage.retries == 1
    assert {r.body["response_format"]["type"] for r in judge_stub.requests} == {"json_schema"}


def test_max_completion_tokens_for_servers_that_want_it(judge_stub: JudgeStub) -> None:
    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        if "max_tokens" in request:
            return StubReply(
                "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.",
                status=400,
            )
        return '{"reason": "r", "verdict": true}'

    judge_stub.responder = responder
    judge = judge_stub.judge()
    ask(judge, "a")
    ask(judge, "b")  # remembered
    bodies = [r.body for r in judge_stub.requests]
    assert "max_tokens" in bodies[0] and "max_completion_tokens" in bodies[1]
    assert len(bodies) == 3 and "max_tokens" not in bodies[2]


# -- what a server refused is remembered across runs (issue 31 goal 6) ----------------------
def test_the_next_run_does_not_send_json_schema_to_a_server_that_refused_it(
    judge_stub: JudgeStub, tmp_path: Any
) -> None:
    model = LocalModel(server="llama-cpp-python")  # 500 on json_schema, obeys json_object
    judge_stub.responder = model
    first = judge_stub.judge(cache_dir=str(tmp_path / "cache"))
    ask(first, "Claim one?")
    assert model.formats == ["json_schema", "json_object+schema"]

    # a new run (a new judge, same endpoint and cache folder) asks something else
    model.formats.clear()
    judge_stub.clear()
    second = judge_stub.judge(cache_dir=str(tmp_path / "cache"))
    assert second.output.recalled == "json_object"
    ask(second, "Claim two?")
    assert model.formats == ["json_object+schema"]
    assert all(r.body["response_format"]["type"] != "json_schema" for r in judge_stub.requests)

    # another cache folder knows nothing: detected again
    model.formats.clear()
    third = judge_stub.judge(cache_dir=str(tmp_path / "other"))
    ask(third, "Claim three?")
    assert model.formats == ["json_schema", "json_object+schema"]


def test_a_remembered_mode_expires_and_a_fixed_mode_ignores_it(tmp_path: Any) -> None:
    from evalrunner.judge.cache import FolderStore
    from evalrunner.judge.structured import (
        MEMORY_SECONDS,
        OPENAI_CHAIN,
        CapabilityMemory,
        OutputMode,
    )

    memory = CapabilityMemory(FolderStore(tmp_path), ("openai", "http://h/v1", "m"))
    memory.remember("json_mode")
    assert OutputMode("auto", OPENAI_CHAIN, memory).current == "json_mode"
    assert OutputMode("json_schema", OPENAI_CHAIN, memory).current == "json_schema"
    later = memory.store.load(memory.key)["learned_at"] + MEMORY_SECONDS + 1
    assert memory.recall(OPENAI_CHAIN, now=later) is None
    other = CapabilityMemory(FolderStore(tmp_path), ("openai", "http://h/v1", "other-model"))
    assert other.recall(OPENAI_CHAIN) is None


def test_statements_of_a_short_answer_ask_for_a_few_items_and_a_few_hundred_tokens(
    judge_stub: JudgeStub,
) -> None:
    """Issue 31: the statements of a one-sentence answer were asked with a 1,100-1,800 token
    budget and no bound on their number; a 1-5 tokens/s local server never finished them."""
    from evalrunner.judge.extract import MAX_STATEMENTS, max_statements, statements

    model = LocalModel(server="llama-server")
    judge_stub.responder = model
    sentence = "Full-time employees receive 25 days of paid annual leave per calendar year."
    found = statements(judge_stub.judge(), sentence)
    assert found and len(found) <= max_statements(sentence)
    (request,) = judge_stub.requests
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["statements"]["maxItems"] == max_statements(sentence) == 5
    assert request.body["max_tokens"] < 400
    # a long text may hold many, up to a ceiling
    assert max_statements(sentence * 10) > 5 and max_statements(sentence * 1000) == MAX_STATEMENTS
