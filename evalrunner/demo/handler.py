"""Lambda-style entry point for the demo assistant.

It answers in the API-Gateway proxy shape on purpose: that is the shape most real RAG
Lambdas return, so the demo exercises the same response adapter a user's own function will
go through. Deployed as a Lambda, or dispatched in-process by the embedded engine, the code is
the same.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from evalrunner.demo.assistant import HRAssistant

__all__ = ["DEGRADED_ENV", "get_assistant", "handler"]

#: Set to ``1`` to serve the degraded assistant, for the regression demo.
DEGRADED_ENV = "EVALRUNNER_DEMO_DEGRADED"

_TRUE = frozenset({"1", "true", "yes", "on"})
_assistants: dict[bool, HRAssistant] = {}
_lock = threading.Lock()


def _degraded_from_env() -> bool:
    """Read per call, so a test or a warm container can flip it without a reload."""
    return os.environ.get(DEGRADED_ENV, "").strip().lower() in _TRUE


def get_assistant(degraded: bool | None = None) -> HRAssistant:
    """The process-wide assistant, built once per variant.

    Building indexes the policies; the engine invokes the handler from many threads at once,
    so the first build is guarded and later calls share one read-only instance.
    """
    if degraded is None:
        degraded = _degraded_from_env()
    assistant = _assistants.get(degraded)
    if assistant is None:
        with _lock:
            assistant = _assistants.get(degraded)
            if assistant is None:
                assistant = HRAssistant(degraded=degraded)
                _assistants[degraded] = assistant
    return assistant


def _response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body, ensure_ascii=False),
    }


def _bad_request(message: str) -> dict[str, Any]:
    return _response(400, {"error": message})


def _parse_event(event: Any) -> dict[str, Any] | str:
    """The request as a dict, or the message for a 400.

    Accepts the direct-invoke payload and, for convenience when the function sits behind API
    Gateway, a proxy event whose ``body`` holds the same JSON.
    """
    if isinstance(event, dict) and isinstance(event.get("body"), str) and "question" not in event:
        try:
            event = json.loads(event["body"])
        except json.JSONDecodeError as exc:
            return f"body is not valid JSON: {exc.msg}"
    if not isinstance(event, dict):
        return 'event must be a JSON object like {"question": "..."}'
    return event


def _parse_conversation(raw: Any) -> list[dict[str, str]] | str:
    """Prior turns as role/content dicts, or the message for a 400."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return "conversation must be a list of {role, content} objects"
    turns: list[dict[str, str]] = []
    for i, turn in enumerate(raw):
        if (
            not isinstance(turn, dict)
            or turn.get("role") not in {"user", "assistant", "system"}
            or not isinstance(turn.get("content"), str)
        ):
            return (
                f"conversation[{i}] must be an object with role user, assistant or system "
                "and a string content"
            )
        turns.append({"role": turn["role"], "content": turn["content"]})
    return turns


def handler(event: Any, context: Any = None) -> dict[str, Any]:
    """Answer ``{"question": ..., "conversation": [...]}`` with an answer and its citations.

    Bad input gets a 400 with a message saying what to send, never an exception: a target
    that crashes on an empty question would hide the real result in a demo run.
    """
    request = _parse_event(event)
    if isinstance(request, str):
        return _bad_request(request)
    question = request.get("question")
    if not isinstance(question, str) or not question.strip():
        return _bad_request('"question" is required and must be a non-empty string')
    conversation = _parse_conversation(request.get("conversation"))
    if isinstance(conversation, str):
        return _bad_request(conversation)

    result = get_assistant().answer(question.strip(), conversation)
    return _response(
        200,
        {
            "answer": result.answer,
            "citations": [{"text": c.text, "document": c.document} for c in result.citations],
        },
    )
