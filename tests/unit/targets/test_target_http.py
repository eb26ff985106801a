"""HTTP target against a loopback server: shapes, mapping, retries, timeouts, headers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from evalrunner.errors import ConfigError, TargetError, TargetTimeout
from evalrunner.targets.http import HttpTarget, display_url, endpoint_name


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpTarget, "backoff_factor", 0.01)


def target_for(loopback: Any, path: str = "/ask", **spec: Any) -> HttpTarget:
    return HttpTarget({"url": loopback.url + path, **spec})


def test_posts_question_and_reads_default_shape(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, {"answer": "25 days", "contexts": ["Staff get 25 days."]})
    response = target_for(loopback).invoke(make_case("Days off?"))
    assert response.answer == "25 days" and response.contexts == ["Staff get 25 days."]
    (request,) = loopback.requests
    assert request.method == "POST" and request.path == "/ask"
    assert request.json() == {"question": "Days off?"}
    assert request.headers["Content-Type"] == "application/json"


def test_put_with_question_field_conversation_and_headers(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, {"output": "ok"})
    target = target_for(
        loopback, method="PUT", question_field="query", headers={"X-Tenant": "acme"}
    )
    target.invoke(make_case("Next?", turns=[("user", "Hi"), ("assistant", "Hello")]))
    (request,) = loopback.requests
    assert request.method == "PUT" and request.headers["X-Tenant"] == "acme"
    assert request.json() == {
        "query": "Next?",
        "conversation": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
        ],
    }


def test_jmespath_mapping(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(
        200,
        {
            "result": {"message": "mapped", "refs": [{"snippet": "s1", "doc": "d1"}]},
            "text": "decoy",
        },
    )
    target = target_for(
        loopback,
        answer_path="result.message",
        contexts_path="result.refs[].snippet",
        documents_path="result.refs[].doc",
    )
    response = target.invoke(make_case())
    assert (response.answer, response.contexts, response.documents) == ("mapped", ["s1"], ["d1"])


def test_api_gateway_shape(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, {"statusCode": 200, "body": json.dumps({"answer": "proxied"})})
    assert target_for(loopback).invoke(make_case()).answer == "proxied"


def test_503_then_200_is_retried(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.reply(503, {"error": "warming up"})
    loopback.reply(429, {"error": "slow down"}, headers={"Retry-After": "0"})
    loopback.always(200, {"answer": "finally"})
    response = target_for(loopback, max_retries=3).invoke(make_case())
    assert response.answer == "finally"
    assert len(loopback.requests) == 3


def test_500_forever_fails_after_max_retries_plus_one(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(500, {"error": "database is down"})
    with pytest.raises(TargetError) as info:
        target_for(loopback, max_retries=2).invoke(make_case())
    assert len(loopback.requests) == 3
    message = info.value.message
    assert "HTTP 500" in message and "3 attempt(s)" in message and "database is down" in message
    assert info.value.retryable


def test_client_error_is_not_retried(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(401, {"error": "bad token"})
    with pytest.raises(TargetError) as info:
        target_for(loopback, max_retries=3).invoke(make_case())
    assert len(loopback.requests) == 1
    assert "HTTP 401" in info.value.message and "headers_from_env" in info.value.message
    assert not info.value.retryable


def test_timeout_is_fast(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, {"answer": "too late"}, delay=60)
    target = target_for(loopback, timeout_seconds=0.2, max_retries=1)
    with pytest.raises(TargetTimeout, match=r"timeout_seconds=0\.2"):
        target.invoke(make_case())
    # Without the deadline the server's answer would arrive after 60 s and no timeout would
    # be raised: the error and the retried request prove both attempts were cut.
    assert len(loopback.requests) == 2  # the read timeout was retried once


def test_headers_from_env(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_QA_BOT_TOKEN", "Bearer s3cret")
    loopback.always(200, {"answer": "ok"})
    target_for(
        loopback, headers_from_env={"Authorization": "EVALRUNNER_SECRET_QA_BOT_TOKEN"}
    ).invoke(make_case())
    assert loopback.requests[0].headers["Authorization"] == "Bearer s3cret"


def test_missing_header_env_var_is_a_config_error(
    loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALRUNNER_SECRET_QA_BOT_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="EVALRUNNER_SECRET_QA_BOT_TOKEN"):
        target_for(loopback, headers_from_env={"Authorization": "EVALRUNNER_SECRET_QA_BOT_TOKEN"})


def test_non_json_body(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, "<html>Welcome to nginx</html>", headers={"Content-Type": "text/html"})
    with pytest.raises(TargetError) as info:
        target_for(loopback).invoke(make_case())
    assert "not JSON" in info.value.message and "nginx" in info.value.message
    assert "text/html" in info.value.message


def test_unreachable_endpoint(loopback: Any, make_case: Callable[..., Any]) -> None:
    url = loopback.url
    loopback.close()
    target = HttpTarget({"url": url + "/ask", "max_retries": 0})
    with pytest.raises(TargetError, match="could not connect") as info:
        target.invoke(make_case())
    message = info.value.message
    # in words, whole, and with no library class name or repr in it
    assert "the connection was refused: nothing is listening at that host and port" in message
    assert "Connection" not in message.replace("the connection", "")
    assert "(host=" not in message and "object at 0x" not in message
    assert message.endswith("reachable from where evalrunner runs.")


def test_an_unknown_host_is_said_in_words(loopback: Any, make_case: Callable[..., Any]) -> None:
    target = HttpTarget({"url": "http://no-such-host.invalid/ask", "max_retries": 0})
    with pytest.raises(TargetError) as info:
        target.invoke(make_case())
    assert "the host name could not be resolved" in info.value.message
    assert "(host=" not in info.value.message and "Errno" not in info.value.message


def test_concurrent_calls_share_one_target(loopback: Any, make_case: Callable[..., Any]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    loopback.always(200, {"answer": "same"}, delay=0.05)
    target = target_for(loopback)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: target.invoke(make_case(f"q{i}")).answer, range(16)))
    assert answers == ["same"] * 16
    assert sorted(r.json()["question"] for r in loopback.requests) == sorted(
        f"q{i}" for i in range(16)
    )


def test_names_and_display_url() -> None:
    assert endpoint_name("https://api.example.com/v1/chat") == "api.example.com-v1-chat"
    assert endpoint_name("http://127.0.0.1:8080/") == "127.0.0.1"
    assert display_url("https://u:p@h.example:8443/x?key=secret") == "https://h.example:8443/x"


def test_redirect_is_reported_not_followed(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(301, "", headers={"Location": "https://new.example.com/ask"})
    with pytest.raises(TargetError) as info:
        target_for(loopback).invoke(make_case())
    assert "HTTP 301" in info.value.message and "https://new.example.com/ask" in info.value.message
    assert len(loopback.requests) == 1


def test_contexts_field_carries_the_case_contexts(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, {"answer": "25 days"})
    target = target_for(loopback, contexts_field="documents")
    case = make_case("Days off?", contexts=["Staff get 25 days.", "Carry-over: 5 days."])
    response = target.invoke(case)
    assert loopback.requests[0].json() == {
        "question": "Days off?",
        "documents": ["Staff get 25 days.", "Carry-over: 5 days."],
    }
    # the response mapped no contexts: what was sent is what the answer came from
    assert response.contexts == ["Staff get 25 days.", "Carry-over: 5 days."]
    assert HttpTarget.sends_contexts(target.spec) == "target.contexts_field"
    # a case without contexts sends an empty list, not a missing field
    target.invoke(make_case("Days off?"))
    assert loopback.requests[1].json() == {"question": "Days off?", "documents": []}


def test_without_contexts_field_nothing_is_sent(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, {"answer": "25 days"})
    target = target_for(loopback)
    target.invoke(make_case("Days off?", contexts=["Staff get 25 days."]))
    assert loopback.requests[0].json() == {"question": "Days off?"}
    assert HttpTarget.sends_contexts(target.spec) is None


def test_a_conversation_turn_sends_its_history_and_session_id(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    from evalrunner.targets.base import ConversationSession

    loopback.always(200, {"answer": "ok"})
    target = target_for(loopback, history_field="messages", session_id_field="thread")
    turn = make_case("And mine?", turns=[("user", "I am Ana."), ("assistant", "Hi Ana.")])
    target.invoke_turn(turn, ConversationSession(id="s-1", position=2))
    target.invoke(make_case("Single?"))
    first, single = (r.json() for r in loopback.requests)
    assert first == {
        "question": "And mine?",
        "messages": [
            {"role": "user", "content": "I am Ana."},
            {"role": "assistant", "content": "Hi Ana."},
        ],
        "thread": "s-1",
    }
    assert single == {"question": "Single?"}  # single-turn cases keep the old request


def test_conversation_field_names_are_checked(loopback: Any) -> None:
    with pytest.raises(ConfigError, match=r"target\.session_id_field"):
        target_for(loopback, session_id_field="")
