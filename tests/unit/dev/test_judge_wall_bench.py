"""bench/judge_peers/loopback_judge.py, the judge every tool of bench/bench_judge_wall.py talks
to: each request style gets a reply the sending tool's parser accepts, 429 above its capacity,
and the figures the bench records. No peer is installed, nothing is timed (delay 0)."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH / "judge_peers"))
sys.path.insert(0, str(BENCH))

from bench_judge_wall import allowed_in_flight, suite  # noqa: E402
from loopback_judge import LoopbackJudge  # noqa: E402


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]
    reason: str | None = None


class Verdicts(BaseModel):  # a DeepEval-like schema: nested models ($defs/$ref), Optional
    verdicts: list[Verdict]
    statements: list[str] = Field(min_length=4, max_length=5)


def post(judge: LoopbackJudge, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        judge.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return dict(json.loads(reply.read()))


def chat(judge: LoopbackJudge, **body: Any) -> dict[str, Any]:
    body.setdefault("messages", [{"role": "user", "content": "Judge these statements."}])
    return post(judge, "/chat/completions", {"model": "m", **body})


@pytest.fixture
def judge() -> Any:
    with LoopbackJudge(delay=0.0, jitter=0.0) as started:
        yield started


def test_a_json_schema_request_gets_an_instance_of_that_schema(judge: LoopbackJudge) -> None:
    schema = Verdicts.model_json_schema()
    fmt = {"type": "json_schema", "json_schema": {"name": "Verdicts", "schema": schema}}
    reply = chat(judge, response_format=fmt)
    value = Verdicts.model_validate_json(reply["choices"][0]["message"]["content"])
    assert [v.verdict for v in value.verdicts] == ["yes", "yes", "yes"]
    assert len(value.statements) == 4  # 3 asked for, raised to minItems


def test_a_tools_request_gets_a_tool_call(judge: LoopbackJudge) -> None:
    tool = {"name": "Verdicts", "parameters": Verdicts.model_json_schema()}
    reply = chat(judge, tools=[{"type": "function", "function": tool}])
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "Verdicts"
    Verdicts.model_validate_json(call["function"]["arguments"])
    assert reply["choices"][0]["finish_reason"] == "tool_calls"


def test_a_schema_in_the_prompt_text_is_followed_and_n_choices_come_back(
    judge: LoopbackJudge,
) -> None:
    prompt = (
        "Please return the output in a JSON format that complies with the following schema "
        f"as specified in JSON Schema:\n{json.dumps(Verdicts.model_json_schema())}\n"
        'Example: {"verdicts": []}'
    )
    reply = chat(judge, messages=[{"role": "user", "content": prompt}], n=3)
    assert len(reply["choices"]) == 3
    for choice in reply["choices"]:
        Verdicts.model_validate_json(choice["message"]["content"])
    bare = chat(judge, messages=[{"role": "user", "content": "The rating is:"}])
    assert bare["choices"][0]["message"]["content"] == "2"
    assert judge.stats()["bare_rating_replies"] == 1


def test_embeddings_are_deterministic_vectors(judge: LoopbackJudge) -> None:
    first = post(judge, "/embeddings", {"model": "e", "input": ["a", "b"]})
    again = post(judge, "/embeddings", {"model": "e", "input": "a"})
    vectors = [d["embedding"] for d in first["data"]]
    assert len(vectors) == 2 and all(len(v) == 64 for v in vectors)
    assert vectors[0] != vectors[1]
    assert again["data"][0]["embedding"] == vectors[0]
    stats = judge.stats()
    assert (stats["embedding_requests"], stats["embedding_texts"]) == (2, 3)
    assert stats["judge_calls"] == 0


def test_over_capacity_is_refused_with_429_and_counted() -> None:
    with LoopbackJudge(delay=0.0, capacity=0) as judge:
        with pytest.raises(urllib.error.HTTPError) as refused:
            chat(judge)
        assert refused.value.code == 429
        assert judge.stats()["refused_429"] == 1


def test_the_figures_count_prompt_and_schema_characters(judge: LoopbackJudge) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "V", "schema": {"type": "object"}}}
    chat(judge, messages=[{"role": "user", "content": "x" * 40}], response_format=fmt)
    stats = judge.stats()
    assert stats["judge_calls"] == 1 and stats["prompt_chars"] == 40
    assert stats["schema_chars"] == len(json.dumps(fmt))
    judge.reset()
    assert judge.stats()["judge_calls"] == 0


def test_every_text_of_a_case_is_its_own_and_the_ideal_counts_each_trees_calls_in_flight(
    tmp_path: Path,
) -> None:
    cases = json.loads(suite(tmp_path / "cases.json", 20).read_text())["cases"]
    for field in ("question", "expected_answer", "actual_answer", "retrieved_contexts"):
        assert len({c[field] for c in cases}) == 20, field  # no ask repeats another case's
    args = type("Args", (), {"concurrency": 20, "capacity": None})()
    assert allowed_in_flight("evalrunner", args, 0) == 32  # 20 cases × 5 metrics, cap 32
    assert allowed_in_flight("evalrunner-before", args, 0) == 20  # one call per case
    assert allowed_in_flight("ragas", args, 17) == 17  # the peers: what the judge saw
    args.capacity = 10
    assert allowed_in_flight("evalrunner", args, 0) == 10
