"""The in-process dispatcher answers as Lambda does: the handler's value as JSON, or a
function error with Lambda's shape; and the context's remaining time counts down."""

from __future__ import annotations

import json
from typing import Any

from evalrunner.engine.dispatch import Dispatcher, LambdaContext


def test_a_value_lambda_cannot_serialise_is_a_marshal_error() -> None:
    seen: list[tuple[str, Any, BaseException | None]] = []
    dispatcher = Dispatcher(
        {"sets": lambda event, context: {"answer": {1, 2}}},
        observer=lambda name, event, result, exc: seen.append((name, result, exc)),
    )
    headers: dict[str, str] = {}
    body = json.loads(dispatcher.invoke("sets", b"{}", headers))
    assert headers["x-amz-function-error"] == "Unhandled"
    assert body["errorType"] == "Runtime.MarshalError"
    assert body["errorMessage"] == (
        "Unable to marshal response: Object of type set is not JSON serializable"
    )
    assert seen[0][0] == "sets" and seen[0][1] is None and isinstance(seen[0][2], TypeError)


def test_a_serialisable_value_crosses_as_json() -> None:
    dispatcher = Dispatcher({"echo": lambda event, context: {"got": event}})
    headers: dict[str, str] = {}
    assert json.loads(dispatcher.invoke("echo", b'{"q": "\\u00e9"}', headers)) == {
        "got": {"q": "\u00e9"}
    }
    assert "x-amz-function-error" not in headers


def test_the_remaining_time_counts_from_the_call(monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("evalrunner.engine.dispatch.time.monotonic", lambda: now[0])
    context = LambdaContext(function_name="f", invoked_function_arn="arn")
    assert context.get_remaining_time_in_millis() == 900_000
    now[0] += 899.5
    assert context.get_remaining_time_in_millis() == 500
    now[0] += 10
    assert context.get_remaining_time_in_millis() == 0
