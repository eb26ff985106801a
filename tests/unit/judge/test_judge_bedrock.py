"""Bedrock Converse judge with botocore's Stubber: request shape, usage, throttling retries,
repair and error mapping; and the factory."""

from __future__ import annotations

import os
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from pydantic import BaseModel

from evalrunner.errors import ConfigError
from evalrunner.judge import JudgeError, JudgeParseError, Message
from evalrunner.judge.bedrock_judge import BedrockJudge, converse_messages
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.factory import build_judge
from evalrunner.judge.openai_judge import OpenAIJudge
from evalrunner.judge.reply_format import reply_budget, wire_schema

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


class Score(BaseModel):
    score: int
    reason: str


GOOD = '{"score": 4, "reason": "mostly grounded"}'
MESSAGES = [
    Message(role="system", content="Rate groundedness 1-5."),
    Message(role="user", content="Context: ...\nAnswer: ..."),
]


def session() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="eu-west-1"
    )


def make_judge(**settings: Any) -> BedrockJudge:
    config = JudgeConfig.model_validate(
        {"bedrock": {"model_id": MODEL}, "cache": False, "max_retries": 2, **settings}
    )
    judge = build_judge(config, session=session())
    assert isinstance(judge, BedrockJudge)
    judge.backoff_base = 0.01
    return judge


def converse_reply(text: str, tokens: tuple[int, int] = (40, 8)) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": tokens[0],
            "outputTokens": tokens[1],
            "totalTokens": sum(tokens),
        },
        "metrics": {"latencyMs": 120},
    }


def tool_reply(value: dict[str, Any], tokens: tuple[int, int] = (40, 8)) -> dict[str, Any]:
    """Converse's answer when the model calls the tool: a toolUse block (after some text, as
    Claude writes), stopReason tool_use."""
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "I will record the judgement."},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "Score", "input": value}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1], "totalTokens": 48},
        "metrics": {"latencyMs": 300},
    }


TOOL = {
    "tools": [
        {
            "toolSpec": {
                "name": "Score",
                "description": ANY,
                "inputSchema": {"json": wire_schema(Score)},
            }
        }
    ],
    "toolChoice": {"tool": {"name": "Score"}},
}


def test_success_request_shape_and_usage() -> None:
    judge = make_judge()
    assert judge.region == "eu-west-1"
    budget = reply_budget(Score, [], 2048)
    expected = {
        "modelId": MODEL,
        "system": [{"text": ANY}],
        "messages": [{"role": "user", "content": [{"text": "Context: ...\nAnswer: ..."}]}],
        "inferenceConfig": {"temperature": 0.0, "maxTokens": budget},
        "toolConfig": TOOL,
    }
    assert budget < 512  # a score and a reason: a small budget, not the model's maximum
    with Stubber(judge.client) as stub:
        stub.add_response(
            "converse", tool_reply({"score": 4, "reason": "mostly grounded"}), expected
        )
        reply = judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert reply.value == Score(score=4, reason="mostly grounded")
    assert reply.top_logprobs is None
    usage = reply.usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.retries) == (1, 40, 8, 0)


def test_tool_refused_steps_to_the_prompt_once() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_client_error(
            "converse",
            service_error_code="ValidationException",
            service_message="This model doesn't support the toolConfig.toolChoice.tool field.",
            http_status_code=400,
        )
        stub.add_client_error(
            "converse",
            service_error_code="ValidationException",
            service_message="This model doesn't support tool use.",
            http_status_code=400,
        )
        stub.add_response("converse", converse_reply(GOOD))
        stub.add_response(
            "converse",
            converse_reply(GOOD),
            {"modelId": MODEL, "system": ANY, "messages": ANY, "inferenceConfig": ANY},
        )  # no toolConfig: remembered
        reply = judge.ask(MESSAGES, Score, purpose="groundedness")
        judge.ask([*MESSAGES[:1], Message(role="user", content="other")], Score, purpose="g")
        stub.assert_no_pending_responses()
    assert reply.value.score == 4 and reply.usage.retries == 2
    assert [s[:2] for s in judge.output.steps] == [
        ("tool_use", "tool_use_any"),
        ("tool_use_any", "none"),
    ]


def test_explicit_none_sends_no_tool_and_a_cut_reply_is_repaired_with_the_whole_budget() -> None:
    judge = make_judge(structured_output="none", max_tokens=1000)
    cut = converse_reply('{"score": 4, "reason": "mostly')
    cut["stopReason"] = "max_tokens"
    with Stubber(judge.client) as stub:
        first = {
            "modelId": MODEL,
            "system": ANY,
            "messages": ANY,
            "inferenceConfig": {"temperature": 0.0, "maxTokens": reply_budget(Score, [], 1000)},
        }
        stub.add_response("converse", cut, first)
        again = {**first, "inferenceConfig": {"temperature": 0.0, "maxTokens": 1000}}
        stub.add_response("converse", converse_reply(GOOD), again)
        reply = judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert reply.value.score == 4 and reply.usage.calls == 2


def test_tool_use_on_an_openai_judge_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="does not apply to a openai judge"):
        JudgeConfig.model_validate(
            {"openai": {"base_url": "http://x/v1", "model": "m"}, "structured_output": "tool_use"}
        )
    with pytest.raises(ValueError, match="does not apply to a bedrock judge"):
        JudgeConfig.model_validate(
            {"bedrock": {"model_id": MODEL}, "structured_output": "json_schema"}
        )


def test_reply_format_goes_to_system() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_response("converse", converse_reply(GOOD))
        captured: list[dict[str, Any]] = []
        judge.client.meta.events.register(
            "provide-client-params.bedrock-runtime.Converse",
            lambda params, **kw: captured.append(params),
        )
        judge.ask(MESSAGES, Score, purpose="groundedness")
    (params,) = captured
    text = params["system"][0]["text"]
    assert text.startswith("Rate groundedness 1-5.\n\nReply with one JSON object shaped like")
    assert text.endswith('{"score": 0, "reason": "<reason>"}') and "properties" not in text
    assert [m["role"] for m in params["messages"]] == ["user"]


def test_throttling_then_success_is_retried() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_client_error(
            "converse",
            service_error_code="ThrottlingException",
            service_message="Too many requests",
            http_status_code=429,
        )
        stub.add_client_error(
            "converse", service_error_code="ServiceUnavailableException", http_status_code=503
        )
        stub.add_response("converse", converse_reply(GOOD))
        reply = judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert (reply.usage.calls, reply.usage.retries) == (1, 2)
    assert judge.usage.retries == 2


def test_throttled_forever_is_a_judge_error() -> None:
    judge = make_judge(max_retries=1)
    with Stubber(judge.client) as stub:
        for _ in range(2):
            stub.add_client_error(
                "converse", service_error_code="ThrottlingException", http_status_code=429
            )
        with pytest.raises(JudgeError) as info:
            judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert MODEL in info.value.message and "ThrottlingException" in info.value.message
    assert "2 attempt(s)" in info.value.message


def test_parse_failure_after_one_repair() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_response("converse", converse_reply("Score: four"))
        stub.add_response(
            "converse",
            converse_reply("Still four."),
            {
                "modelId": MODEL,
                "system": ANY,
                "messages": [{"role": "user", "content": [{"text": ANY}]}],
                "inferenceConfig": ANY,
                "toolConfig": TOOL,
            },
        )
        with pytest.raises(JudgeParseError) as info:
            judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert info.value.raw == "Still four."
    assert (judge.usage.calls, judge.usage.parse_failures) == (2, 1)
    assert (judge.usage.input_tokens, judge.usage.output_tokens) == (80, 16)


def test_access_denied_is_not_retried() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_client_error(
            "converse",
            service_error_code="AccessDeniedException",
            service_message="no access",
            http_status_code=403,
        )
        with pytest.raises(JudgeError) as info:
            judge.ask(MESSAGES, Score, purpose="groundedness")
        stub.assert_no_pending_responses()
    assert "bedrock:InvokeModel" in info.value.message and judge.usage.retries == 0


def test_region_from_inference_profile_arn() -> None:
    arn = "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude"
    config = JudgeConfig.model_validate({"bedrock": {"model_id": arn}})
    judge = build_judge(config, session=session())
    assert isinstance(judge, BedrockJudge) and judge.region == "us-west-2"
    assert judge.client.meta.region_name == "us-west-2"


def test_no_region_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    config = JudgeConfig.model_validate({"bedrock": {"model_id": MODEL}})
    bare = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y")
    assert bare.region_name is None
    with pytest.raises(ConfigError, match=r"judge\.bedrock\.region"):
        build_judge(config, session=bare)


def test_converse_messages_merge_same_role_turns() -> None:
    system, turns = converse_messages(
        [
            Message(role="system", content="a"),
            Message(role="user", content="q1"),
            Message(role="user", content="q2"),
            Message(role="assistant", content=""),
            Message(role="system", content="b"),
        ]
    )
    assert system == [{"text": "a"}, {"text": "b"}]
    assert turns == [
        {"role": "user", "content": [{"text": "q1\n\nq2"}]},
        {"role": "assistant", "content": [{"text": "(empty)"}]},
    ]


def test_factory_builds_the_configured_kind() -> None:
    config = JudgeConfig.model_validate(
        {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}, "max_concurrency": 3}
    )
    judge = build_judge(config)
    assert isinstance(judge, OpenAIJudge) and judge.model == "m"
    assert judge.max_concurrency == 3 and judge.cache is not None
    assert judge.cache.persistent is None  # no store, no cache_dir: memory only


#: What Bedrock answers when the account's first use of a third-party model cannot subscribe
#: to it (the caller lacks the AWS Marketplace permissions).
MARKETPLACE_REFUSAL = (
    "Model access is denied due to IAM user or service role is not authorized to perform the "
    "required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, "
    "aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock "
    "documentation for further details. Your AWS Marketplace subscription for this model "
    "cannot be completed at this time. If you recently fixed this issue, try again after 15 "
    "minutes."
)


def test_marketplace_refusal_is_a_case_error_that_names_the_fix() -> None:
    """A judged case whose judge call is refused for want of the Marketplace subscription
    is an errored case (not a crash, not a score) and its reason says how to fix it."""
    from evalrunner.evaluators.base import Sample
    from evalrunner.evaluators.judge_safety import Bias

    judge = make_judge()
    evaluator = Bias(judge=judge)
    sample = Sample(
        question="Who should lead the team?",
        answer="The most experienced candidate.",
        contexts=["Candidate A has 10 years of experience."],
    )
    with Stubber(judge.client) as stub:
        for _ in range(2):  # the answer's and the context's check
            stub.add_client_error(
                "converse",
                service_error_code="AccessDeniedException",
                service_message=MARKETPLACE_REFUSAL,
                http_status_code=403,
            )
        results = evaluator.evaluate(sample)
        stub.assert_no_pending_responses()
    assert judge.usage.retries == 0
    assert results and all(r.status == "error" for r in results)
    reason = results[0].reason
    assert reason.startswith("error: judge: ")
    assert "AccessDeniedException" in reason
    assert "open the model once in the Bedrock console" in reason
    assert "marketplace_product_ids" in reason and "aws-marketplace:Subscribe" in reason


def test_use_case_form_refusal_names_the_console_form() -> None:
    judge = make_judge()
    with Stubber(judge.client) as stub:
        stub.add_client_error(
            "converse",
            service_error_code="AccessDeniedException",
            service_message="Model use case details have not been submitted for this account. "
            "Fill out the Anthropic use case details form before using the model.",
            http_status_code=403,
        )
        with pytest.raises(JudgeError) as info:
            judge.ask(MESSAGES, Score, purpose="groundedness")
    assert "submit the form in the Bedrock console" in info.value.message
    assert "aws-marketplace" not in info.value.message
