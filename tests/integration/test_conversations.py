"""Scripted conversations end to end through the embedded engine: a spreadsheet of turns run
with ``evalrunner run`` against a loopback chat endpoint that keeps a memory per session_id,
an OpenAI-compatible endpoint that answers from the message history (Python API), and a
Bedrock agent whose session memory lives on the wire."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.engine import LocalEngine
from evalrunner.engine.real_aws import real_session
from evalrunner.suite import write_suite_xlsx
from lambdas.local import local_pipeline
from tests.support.agent_stream import STREAM_HEADERS, wire_chunk
from tests.support.conversation_eval import transcript_check
from tests.support.judge_stub import JudgeStub
from tests.support.loopback_http import Loopback, Reply, Seen

from .conftest import read_csv

pytestmark = pytest.mark.slow

#: Two conversations: the target keeps the user's name across turns; it never keeps a city.
ROWS = [
    {"question": "Hello?", "condition": "Hi"},
    {"conversation_id": "name", "turn": 1, "question": "My name is Ana.", "role": "HR bot"},
    {"conversation_id": "name", "turn": 2, "question": "What is my name?", "condition": "Ana"},
    {"conversation_id": "city", "question": "I live in Paris."},
    {"conversation_id": "city", "question": "Where do I live?", "condition": "Paris"},
]


def remember(facts: dict[str, str], question: str) -> str:
    """The chat logic of the loopback targets: it keeps a name, forgets everything else."""
    if question == "Hello?":
        return "Hi there."
    said = re.search(r"my name is (\w+)", question, re.IGNORECASE)
    if said:
        facts["name"] = said.group(1)
        return "Nice to meet you."
    if "name" in question and "name" in facts:
        return f"Your name is {facts['name']}."
    return "Noted." if question.endswith(".") else "I do not know."


class MemoryChat:
    """An HTTP chat endpoint with a memory per ``session_id`` (none without one)."""

    def __init__(self) -> None:
        self.memory: dict[str, dict[str, str]] = {}

    def __call__(self, seen: Seen) -> Reply:
        body = seen.json()
        session = body.get("session_id")
        facts = self.memory.setdefault(session, {}) if session else {}
        return Reply(body={"answer": remember(facts, body["question"])})


def test_a_chat_target_with_memory_passes_and_a_forgetting_turn_fails_by_name(
    tmp_path: Path,
) -> None:
    suite = write_suite_xlsx(tmp_path / "conv.xlsx", ROWS)
    out = tmp_path / "out"
    with Loopback(responder=MemoryChat()) as chat, transcript_check():
        result = CliRunner().invoke(
            app,
            [
                "run", "--suite", str(suite), "--target", json.dumps({"url": chat.url + "/chat"}),
                "--metric", "Text matching", "--metric", "Transcript check (test)",
                "--out", str(out), "--quiet",
            ],
        )  # fmt: skip
        probe, *requests = [r.json() for r in chat.requests]
    assert result.exit_code in (0, 1), result.output
    # the pre-flight probe is a plain question, in no conversation's session
    assert "session_id" not in probe and "conversation" not in probe
    # every turn of a conversation carried the same session id and the actual history
    by_session: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        by_session.setdefault(r.get("session_id", "none"), []).append(r)
    assert sorted(len(v) for v in by_session.values()) == [1, 2, 2]
    name_turns = next(v for v in by_session.values() if v[0]["question"] == "My name is Ana.")
    assert name_turns[1]["conversation"] == [
        {"role": "user", "content": "My name is Ana."},
        {"role": "assistant", "content": "Nice to meet you."},
    ]
    assert "session_id" not in by_session["none"][0]  # the single-turn case is as before

    details = read_csv(next(out.rglob("*details.csv")))
    cells = {r["case_id"]: r for r in details}
    assert [(r["case_id"], r["conversation_id"], r["turn"]) for r in details] == [
        ("case-0001", "", ""),
        ("name", "name", "all"),
        ("name#1", "name", "1"),
        ("name#2", "name", "2"),
        ("city", "city", "all"),
        ("city#1", "city", "1"),
        ("city#2", "city", "2"),
    ]
    assert cells["name#2"]["answer"] == "Your name is Ana."
    assert cells["name#2"]["Model passes success"] == "true"
    assert cells["city#2"]["answer"] == "I do not know."
    assert cells["city#2"]["Model passes success"] == "false"
    assert cells["name"]["Transcript check reason"].startswith("role HR bot; user: My name")

    page = BeautifulSoup(next(out.rglob("*report.html")).read_text(), "html.parser")
    section = page.find("section", id="conversations")
    articles = section.find_all("article", class_="conversation")
    assert [a.find("code").text for a in articles] == ["city", "name"]  # failing first
    city_turn = articles[0].find_all("li", class_="turn")[1]
    assert city_turn.find("code").text == "city#2"  # the failing turn, named
    assert "I do not know." in city_turn.text and "Where do I live?" in city_turn.text
    assert "fail" in city_turn.find("table").text
    report = json.loads(next(out.rglob("*report.json")).read_text())
    assert {(r["case_id"], r["turn"]) for r in report["rows"]} >= {("name", None), ("name#2", 2)}


def test_an_openai_target_is_sent_the_history_with_its_own_answers(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    def chat(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        facts: dict[str, str] = {}
        for message in messages[:-1]:  # replay the history the runner sent
            if message["role"] == "user":
                remember(facts, message["content"])
        return remember(facts, messages[-1]["content"])

    judge_stub.responder = chat
    with transcript_check():
        run = evalrunner.evaluate(
            suite=ROWS,
            target={"openai": {"base_url": judge_stub.url, "model": "chat"}},
            metrics=["Text matching", "Transcript check (test)"],
            out=tmp_path / "out",
        )
    histories = [[m["content"] for m in r.messages] for r in judge_stub.requests]
    assert ["My name is Ana.", "Nice to meet you.", "What is my name?"] in histories
    details = run.details.set_index("case_id")
    assert details.loc["name#2", "Model passes success"] == True  # noqa: E712 (numpy bool)
    assert details.loc["city#2", "Model passes success"] == False  # noqa: E712
    assert details.loc["name", "turn"] == "all"
    whole = details.loc["name", "Transcript check reason"]
    assert "assistant: Your name is Ana." in whole
    assert run.summary.cases == 3 and run.summary.items == 3


class MemoryAgent:
    """A Bedrock agent on the wire: its memory is keyed on the sessionId in the path, and it
    is sent only each new input (InvokeAgent has no history field)."""

    def __init__(self) -> None:
        self.memory: dict[str, dict[str, str]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, seen: Seen) -> Reply:
        session = seen.path.split("/sessions/")[1].split("/")[0]
        body = seen.json()
        self.calls.append((session, body))
        answer = remember(self.memory.setdefault(session, {}), body["inputText"])
        return Reply(body=wire_chunk(answer), headers=STREAM_HEADERS)


def test_a_bedrock_agent_conversation_keeps_one_session_and_sends_only_new_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = MemoryAgent()
    with Loopback(responder=agent) as wire, transcript_check():
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", wire.url)
        session = real_session(
            boto3.Session(
                aws_access_key_id="AKIATEST", aws_secret_access_key="s", region_name="us-east-1"
            )
        )
        engine = LocalEngine(pipeline=local_pipeline, aws_session=session)
        engine.run(
            {
                "key": "test-suites/conv.json",
                "iterations": 1,
                "target": {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"},
                "metrics": ["Text matching", "Transcript check (test)"],
            },
            suite=json.dumps(ROWS).encode(),
            out_dir=tmp_path,
        )
    sessions = [s for s, _ in agent.calls]
    assert len(sessions) == 5 and len(set(sessions)) == 3  # single, name (2 turns), city (2)
    name_session = next(s for s, b in agent.calls if b["inputText"] == "My name is Ana.")
    assert [b["inputText"] for s, b in agent.calls if s == name_session] == [
        "My name is Ana.",
        "What is my name?",
    ]
    assert all(set(b) == {"inputText", "enableTrace"} for _, b in agent.calls)  # no history
    details = read_csv(next(Path(tmp_path).rglob("*details.csv")))
    cells = {r["case_id"]: r for r in details}
    assert cells["name#2"]["answer"] == "Your name is Ana."
    assert cells["name#2"]["Model passes success"] == "true"
    assert cells["city#2"]["Model passes success"] == "false"


def _reading_judge(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    """A judge that reads the transcript it is sent, as a model would: the user's facts are
    the turns that state one ("My name is …", "I live in …"); a reply forgets a fact when it
    says it does not know after the user said it. Only the conversation's own text decides."""
    prompt = messages[-1]["content"]
    users = {int(k): t for k, t in re.findall(r'<user id="(\d+)">(.*?)</user>', prompt, re.S)}
    replies = re.findall(r'<assistant id="(\d+)">(.*?)</assistant>', prompt, re.S)
    if "List the facts the user gave" in prompt:
        return {
            "facts": [
                {"turn": k, "fact": text.strip().rstrip(".")}
                for k, text in sorted(users.items())
                if re.match(r"\s*(my name is|i live in)", text, re.IGNORECASE)
            ]
        }
    facts = re.findall(r'<fact id="(\d+)">\s*\(turn (\d+)\)', prompt)
    verdicts = []
    for k, reply in ((int(k), r) for k, r in replies):
        given = [int(i) for i, turn in facts if int(turn) < k]
        forgot = "do not know" in reply and bool(given)
        verdicts.append(
            {
                "turn": k,
                "reason": "says it does not know what the user told it" if forgot else "fine",
                "forgot": forgot,
                "fact": given[-1] if forgot else None,
            }
        )
    return {"verdicts": verdicts}


def test_a_target_that_forgets_fails_knowledge_retention_with_the_turn_named(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """Both halves together: the spreadsheet of turns played against a chat with memory (it
    keeps names, forgets cities), and the real Knowledge retention metric judged by the
    loopback OpenAI-compatible judge reading the transcript the run recorded."""
    judge_stub.responder = _reading_judge
    suite = write_suite_xlsx(tmp_path / "conv.xlsx", ROWS)
    out = tmp_path / "out"
    judge = {"openai": {"base_url": judge_stub.url, "model": "j"}, "cache": False}
    with Loopback(responder=MemoryChat()) as chat:
        result = CliRunner().invoke(
            app,
            [
                "run", "--suite", str(suite), "--target", json.dumps({"url": chat.url + "/chat"}),
                "--metric", "Text matching", "--metric", "Knowledge retention",
                "--judge", json.dumps(judge),
                "--out", str(out), "--quiet",
            ],
        )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    cells = {r["case_id"]: r for r in read_csv(next(out.rglob("*details.csv")))}
    # scored once per conversation, on the conversation's own row, never per turn
    assert cells["name"]["Knowledge retention success"] == "true"
    assert cells["city"]["Knowledge retention success"] == "false"
    assert float(cells["city"]["Knowledge retention score"]) == pytest.approx(0.5)
    reason = cells["city"]["Knowledge retention reason"]
    assert 'turn 2 forgot "I live in Paris" given in turn 1' in reason
    assert cells["city#2"]["Knowledge retention success"] == ""
    assert cells["case-0001"]["Knowledge retention success"] == ""  # not a conversation
    # the judge read the transcript the target produced, answers included
    seen = "\n".join(r.messages[-1]["content"] for r in judge_stub.requests)
    assert "I do not know." in seen and "Your name is Ana." in seen
    page = BeautifulSoup(next(out.rglob("*report.html")).read_text(), "html.parser")
    city = page.find("section", id="conversations").find_all("article")[0]
    assert city.find("code").text == "city" and "turn 2 forgot" in city.text
