"""Issue 35 item 3, end to end: a run against Azure OpenAI and against OpenAI's Responses
API with file search (loopback servers speaking their APIs), through the CLI. The file
search's results are scored as the retrieved contexts, and the keys never reach a report, a
log line or the terminal, even when the server echoes them back in an error."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import Loopback, Reply, Seen

from .test_rescore import rows_of

AZURE_KEY = "azk-0a1b2c3d4e5f60718293"
OPENAI_KEY = "sk-proj-9f8e7d6c5b4a3210"
SUITE = [
    {
        "id": "leave",
        "question": "How many days of annual leave?",
        "expected_answer": "25 days",
        "expected_contexts": ["Full-time staff get 25 days of annual leave a year."],
    },
    {"id": "boom", "question": "Who approves leave?", "expected_answer": "Your manager"},
]


def echoing(answer: Any, key: str):
    """Answer the leave question; refuse the other with an error that quotes the key."""

    def respond(seen: Seen) -> Reply:
        if b"approves" in seen.body:
            return Reply(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
        return Reply(body=answer)

    return respond


def run(tmp_path: Path, target: dict[str, Any], *metrics: str) -> tuple[Any, Path]:
    suite = tmp_path / "hr.json"
    suite.write_text(json.dumps(SUITE), encoding="utf-8")
    out = tmp_path / "out"
    args = ["run", "--suite", str(suite), "--target", json.dumps(target), "--out", str(out)]
    for metric in metrics:
        args += ["--metric", metric]
    args += ["--fail-on", "never", "--no-preflight", "--json"]
    return CliRunner().invoke(app, args), out


def assert_nowhere(key: str, out: Path, *texts: str) -> None:
    for path in out.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    for text in texts:
        assert key not in text


def test_azure_openai_end_to_end_without_its_key_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    reply = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "25 days"}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2},
    }
    caplog.set_level(logging.DEBUG)
    with Loopback(responder=echoing(reply, AZURE_KEY)) as server:
        target = {"azure_openai": {"endpoint": server.url, "deployment": "gpt-4o-hr"}}
        result, out = run(tmp_path, target, "Exact match")
        seen = server.requests
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["target"] == "azure-gpt-4o-hr" and summary["target_kind"] == "azure_openai"
    assert summary["answered"] == 1 and summary["target_errors"] == 1
    assert {s.path for s in seen} == {
        "/openai/deployments/gpt-4o-hr/chat/completions?api-version=2024-10-21"
    }
    assert all(s.headers["api-key"] == AZURE_KEY for s in seen)
    leave, boom = rows_of(out, summary["reports"]["report"])
    assert leave["answer"] == "25 days" and "HTTP 401" in boom["error"]
    assert "Incorrect API key provided" in boom["error"]  # the echo reached the report, masked
    assert_nowhere(AZURE_KEY, out, result.output, caplog.text)


def test_openai_responses_file_search_feeds_the_rag_metrics_and_hides_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    chunk = "Full-time staff get 25 days of annual leave a year."
    reply = {
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "file_search_call",
                "id": "fs_1",
                "status": "completed",
                "queries": ["annual leave"],
                "results": [
                    {"file_id": "file-1", "filename": "leave.pdf", "score": 0.9, "text": chunk}
                ],
            },
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": "25 days",
                        "annotations": [
                            {
                                "type": "file_citation",
                                "index": 7,
                                "file_id": "file-1",
                                "filename": "leave.pdf",
                            }
                        ],
                    }
                ],
            },
        ],
        "usage": {"input_tokens": 300, "output_tokens": 3},
    }
    caplog.set_level(logging.DEBUG)
    with Loopback(responder=echoing(reply, OPENAI_KEY)) as server:
        target = {
            "openai_responses": {
                "base_url": server.url + "/v1",
                "model": "gpt-4.1-mini",
                "vector_store_ids": ["vs_hr"],
            }
        }
        result, out = run(tmp_path, target, "Chunk match")
        seen = server.requests
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert {s.path for s in seen} == {"/v1/responses"}
    assert seen[0].json()["tools"] == [{"type": "file_search", "vector_store_ids": ["vs_hr"]}]
    leave, _ = rows_of(out, summary["reports"]["report"])
    assert leave["contexts"] == [chunk] and leave["documents"] == ["leave.pdf"]
    (chunk_match,) = [r for r in leave["results"] if r["metric"] == "Chunk match"]
    assert (chunk_match["status"], chunk_match["score"]) == ("scored", 1.0)
    assert_nowhere(OPENAI_KEY, out, result.output, caplog.text)
