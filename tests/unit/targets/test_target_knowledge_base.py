"""Knowledge-base target: RetrieveAndGenerate request shape and citation mapping (Stubber)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.stub import Stubber

from evalrunner.errors import ConfigError, EventError, TargetError
from evalrunner.event import parse_event
from evalrunner.targets.knowledge_base import KnowledgeBaseTarget

MODEL = "arn:aws:bedrock:eu-central-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"
SPEC = {"knowledgeBaseId": "KB12345678", "modelArn": MODEL}


def kb_response(text: str, session_id: str = "sess-1", **extra: Any) -> dict[str, Any]:
    return {"output": {"text": text}, "sessionId": session_id, **extra}


def expected_request(text: str, number: int | None = None, session: str | None = None) -> dict:
    kb: dict[str, Any] = {"knowledgeBaseId": "KB12345678", "modelArn": MODEL}
    if number:
        kb["retrievalConfiguration"] = {"vectorSearchConfiguration": {"numberOfResults": number}}
    request: dict[str, Any] = {
        "input": {"text": text},
        "retrieveAndGenerateConfiguration": {
            "type": "KNOWLEDGE_BASE",
            "knowledgeBaseConfiguration": kb,
        },
    }
    if session:
        request["sessionId"] = session
    return request


def test_citations_become_contexts_and_documents(make_case: Callable[..., Any]) -> None:
    target = KnowledgeBaseTarget({**SPEC, "numberOfResults": 4})
    assert target.client.meta.region_name == "eu-central-1"  # from the model ARN
    citations = [
        {
            "generatedResponsePart": {
                "textResponsePart": {"text": "25 days", "span": {"start": 0, "end": 7}}
            },
            "retrievedReferences": [
                {
                    "content": {"text": "Staff get 25 days."},
                    "location": {"type": "S3", "s3Location": {"uri": "s3://hr/leave.pdf"}},
                },
                {
                    "content": {"text": "Ask your manager."},
                    "location": {"type": "WEB", "webLocation": {"url": "https://hr/wiki"}},
                },
            ],
        }
    ]
    with Stubber(target.client) as stub:
        stub.add_response(
            "retrieve_and_generate",
            kb_response("You get 25 days.", citations=citations),
            expected_request("Days off?", number=4),
        )
        response = target.invoke(make_case("Days off?"))
    assert response.answer == "You get 25 days."
    assert response.contexts == ["Staff get 25 days.", "Ask your manager."]
    assert response.documents == ["s3://hr/leave.pdf", "https://hr/wiki"]
    assert target.name == "KB12345678"


def test_conversation_continues_the_session(make_case: Callable[..., Any]) -> None:
    target = KnowledgeBaseTarget({**SPEC, "region": "us-west-2"})
    assert target.client.meta.region_name == "us-west-2"  # explicit region wins
    with Stubber(target.client) as stub:
        stub.add_response("retrieve_and_generate", kb_response("hi", "s-9"), expected_request("Hi"))
        stub.add_response(
            "retrieve_and_generate",
            kb_response("final", "s-9"),
            expected_request("More?", session="s-9"),
        )
        case = make_case("More?", turns=[("user", "Hi"), ("assistant", "hello")])
        assert target.invoke(case).answer == "final"
        stub.assert_no_pending_responses()


def test_access_denied_names_permissions(make_case: Callable[..., Any]) -> None:
    target = KnowledgeBaseTarget(SPEC)
    with Stubber(target.client) as stub:
        stub.add_client_error("retrieve_and_generate", "AccessDeniedException", "nope", 403)
        with pytest.raises(TargetError) as info:
            target.invoke(make_case())
    assert "bedrock:RetrieveAndGenerate" in info.value.message and MODEL in info.value.message


def test_throttling_is_retryable(make_case: Callable[..., Any]) -> None:
    target = KnowledgeBaseTarget(SPEC)
    with Stubber(target.client) as stub:
        stub.add_client_error("retrieve_and_generate", "ThrottlingException", "slow down", 429)
        with pytest.raises(TargetError) as info:
            target.invoke(make_case())
    assert info.value.retryable and "throttled" in info.value.message


#: The advanced settings a knowledge base is tuned with, as RetrieveAndGenerate names them.
GENERATION = {
    "promptTemplate": {
        "textPromptTemplate": "Answer from these results only:\n$search_results$\n"
        "If they do not say, answer 'I don't know'."
    },
    "inferenceConfig": {
        "textInferenceConfig": {
            "temperature": 0.0,
            "topP": 0.9,
            "maxTokens": 512,
            "stopSequences": ["\n\nHuman:"],
        }
    },
    "guardrailConfiguration": {"guardrailId": "gr1abcdefgh2", "guardrailVersion": "3"},
    "additionalModelRequestFields": {"top_k": 50},
}
FILTER = {
    "andAll": [
        {"equals": {"key": "region", "value": "EU"}},
        {"greaterThanOrEquals": {"key": "year", "value": 2024}},
    ]
}
ORCHESTRATION = {"queryTransformationConfiguration": {"type": "QUERY_DECOMPOSITION"}}


def test_advanced_settings_reach_retrieve_and_generate_as_written(
    make_case: Callable[..., Any],
) -> None:
    spec = {
        **SPEC,
        "numberOfResults": 8,
        "searchType": "HYBRID",
        "filter": FILTER,
        "generationConfiguration": GENERATION,
        "orchestrationConfiguration": ORCHESTRATION,
    }
    target = KnowledgeBaseTarget(spec)
    expected = {
        "input": {"text": "Days off?"},
        "retrieveAndGenerateConfiguration": {
            "type": "KNOWLEDGE_BASE",
            "knowledgeBaseConfiguration": {
                "knowledgeBaseId": "KB12345678",
                "modelArn": MODEL,
                "retrievalConfiguration": {
                    "vectorSearchConfiguration": {
                        "numberOfResults": 8,
                        "overrideSearchType": "HYBRID",
                        "filter": FILTER,
                    }
                },
                "generationConfiguration": GENERATION,
                "orchestrationConfiguration": ORCHESTRATION,
            },
        },
    }
    # the Stubber checks the request against botocore's model too, then against this one
    with Stubber(target.client) as stub:
        stub.add_response("retrieve_and_generate", kb_response("25 days."), expected)
        assert target.invoke(make_case("Days off?")).answer == "25 days."
        stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (
            {"generationConfiguration": {"guardrailConfiguration": {"guardrailIdentifier": "x"}}},
            "Unknown parameter in generationConfiguration.guardrailConfiguration: "
            '"guardrailIdentifier"',
        ),
        (
            {
                "generationConfiguration": {
                    "inferenceConfig": {"textInferenceConfig": {"temperature": "cold"}}
                }
            },
            "generationConfiguration.inferenceConfig.textInferenceConfig.temperature",
        ),
        (
            {"filter": {"equals": {"key": "region"}}},
            "Missing required parameter in "
            'retrievalConfiguration.vectorSearchConfiguration.filter.equals: "value"',
        ),
    ],
)
def test_a_setting_bedrock_would_refuse_is_refused_before_the_run(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as built:
        KnowledgeBaseTarget({**SPEC, **settings})
    assert "refused by botocore" in built.value.message and named in built.value.message
    # and when the event is read (evalrunner validate, Prepare), with the target's path
    event = {"key": "test-suites/hr.csv", "iterations": 1, "target": {**SPEC, **settings}}
    with pytest.raises(EventError) as parsed:
        parse_event(event)
    assert any(named in p for p in parsed.value.problems), parsed.value.problems


def test_a_search_type_outside_bedrock_s_is_refused_by_the_schema() -> None:
    with pytest.raises(ConfigError, match="searchType"):
        KnowledgeBaseTarget({**SPEC, "searchType": "KEYWORD"})
