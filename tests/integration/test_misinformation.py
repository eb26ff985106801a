"""The misinformation perturbation end to end, as a user runs it: ``evalrunner run --perturb
misinformation`` against an OpenAI-compatible generation model that is sent the case's
contexts (a loopback server that answers from the sources it was sent, except for one
question it answers from "memory"), judged by the loopback OpenAI-compatible judge stub.

The judge rewrites one chunk per case (25 -> 30, 6% -> 9%); the faithful answer follows the
falsified source (held), the one from memory contradicts it silently (broken)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.judge_stub import JudgeStub
from tests.support.loopback_http import Loopback, Reply, Seen

from .conftest import read_csv

pytestmark = pytest.mark.slow

runner = CliRunner()

SUITE = (
    "id,question,expected_answer,retrieved_contexts\n"
    'leave,How many days of annual leave?,25 days,"[""Staff get 25 days of annual leave.""]"\n'
    'pension,What is the pension match?,6%,"[""The company matches pensions up to 6%.""]"\n'
)


def generation_model(seen: Seen) -> Reply:
    """Answers with the first number in the sources it was sent; the pension question it
    answers from what it 'knows' (6%), whatever the sources say."""
    messages = seen.json()["messages"]
    text = "\n".join(m["content"] for m in messages)
    if "pension" in messages[-1]["content"]:
        answer = "The match is 6%."
    else:
        found = re.search(r"\[1\] .*?(\d+)", text)
        answer = f"{found.group(1)} days." if found else "I do not know."
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": answer}}]})


def block(prompt: str, tag: str) -> str:
    """The last <tag> block of the prompt (the task text names the tags first)."""
    return prompt.rsplit(f"<{tag}>", 1)[1].split(f"</{tag}>")[0].strip()


def judge(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    prompt = messages[-1]["content"]
    if "Rewrite the chunk" in prompt:
        chunk = block(prompt, "chunk")
        changed = chunk.replace("25", "30").replace("6%", "9%")
        return {"rewritten": changed, "false_fact": changed}
    if "<false_fact>" in prompt:
        fact, answer = block(prompt, "false_fact"), block(prompt, "answer")
        number = re.search(r"\d+", fact)
        follows = number is not None and number.group() in answer
        return {"reason": answer.strip(), "verdict": "follows" if follows else "contradicts"}
    raise AssertionError(f"unexpected judge prompt: {prompt[:200]}")


def run(tmp_path: Path, target: dict[str, Any], *extra: str):
    suite = tmp_path / "chunks.csv"
    suite.write_text(SUITE, encoding="utf-8")
    args = ["run", "--suite", str(suite), "--target", json.dumps(target)]
    args += ["--metric", "Token F1", "--out", str(tmp_path / "out"), "--json", *extra]
    args += ["--no-preflight"]  # the scripted judge answers the run's prompts only
    return runner.invoke(app, args, catch_exceptions=False)


def judge_arg(stub: JudgeStub, tmp_path: Path) -> str:
    settings = {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 0,
    }
    return json.dumps(settings)


def test_the_answer_must_follow_the_falsified_context(tmp_path: Path, judge_stub) -> None:
    judge_stub.responder = judge
    with Loopback(responder=generation_model) as model:
        target = {"openai": {"base_url": model.url + "/v1", "model": "m", "send_contexts": "user"}}
        result = run(
            tmp_path,
            target,
            "--perturb",
            "misinformation:1:5",
            "--judge",
            judge_arg(judge_stub, tmp_path),
        )
        sent = [r.json()["messages"][-1]["content"] for r in model.requests]
    assert result.exit_code in (0, 1), result.output
    summary = json.loads(result.stdout)

    # the model was sent the falsified chunk on the perturbed copies, the original otherwise
    assert sum("[1] Staff get 30 days" in s for s in sent) == 1
    assert sum("[1] Staff get 25 days" in s for s in sent) == 1
    assert sum("[1] The company matches pensions up to 9%." in s for s in sent) == 1

    (misinfo,) = summary["robustness"]
    assert (misinfo["name"], misinfo["kind"], misinfo["seed"]) == (
        "misinformation",
        "misinformation",
        5,
    )
    assert (misinfo["compared"], misinfo["held"], misinfo["broken"]) == (2, 1, 1)
    assert misinfo["score"] == 0.5
    (problem,) = [p for p in summary["problems"] if p["type"] == "robustness"]
    assert (
        problem["affected_cases"] == ["pension"] and problem["metric"] == "Misinformation handled"
    )
    assert "1 of 2 cases contradicted their context" in problem["description"]
    assert "flag contradictions" in problem["suggested_action"]

    rows = {r["case_id"]: r for r in read_csv(tmp_path / "out" / summary["reports"]["details"])}
    leave = rows["leave~misinformation"]
    assert leave["answer"] == "30 days." and leave["perturbation"] == "misinformation"
    assert "Staff get 30 days" in leave["contexts"]
    assert leave["Misinformation handled score"] == "1.0000"
    assert rows["pension~misinformation"]["Misinformation handled score"] == "0.0000"
    # the originals are not judged by the check
    assert rows["leave"]["Misinformation handled score"] == ""

    # the report shows the broken case with the false fact and the chunk before and after
    html = (tmp_path / "out" / summary["reports"]["html"]).read_text("utf-8")
    section = html[html.index("false fact planted") - 3000 :]
    assert "pension~misinformation" in section
    assert "The company matches pensions up to 9%." in section  # as sent
    assert "The company matches pensions up to 6%." in section  # as it was

    # one rewrite per case at Prepare, one check per perturbed case
    purposes = [json.dumps(r.messages) for r in judge_stub.requests]
    assert sum("Rewrite the chunk" in p for p in purposes) == 2
    assert sum("false_fact" in p and "Rewrite" not in p for p in purposes) == 2


@pytest.mark.parametrize(
    ("target", "judge_given", "expected"),
    [
        ({"url": "http://127.0.0.1:9/ask"}, True, "target.contexts_field"),
        ({"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}, True, "send_contexts"),
        (
            {
                "openai": {
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "m",
                    "send_contexts": "user",
                }
            },
            False,
            "set 'judge' in the event",
        ),
    ],
)
def test_refused_before_anything_runs(
    tmp_path: Path, judge_stub, target: dict[str, Any], judge_given: bool, expected: str
) -> None:
    extra = ["--judge", judge_arg(judge_stub, tmp_path)] if judge_given else []
    result = run(tmp_path, target, "--perturb", "misinformation", *extra)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert judge_stub.requests == []
