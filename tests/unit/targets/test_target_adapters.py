"""Every payload shape the adapters promise to understand, and the errors when they cannot."""

from __future__ import annotations

import json

import pytest

from evalrunner.errors import ConfigError, TargetError
from evalrunner.targets.adapters import ResponseMapping, normalise
from evalrunner.targets.answer_hints import suggest_answer_path
from evalrunner.targets.reply_contexts import bedrock_references


def test_plain_dict_needs_no_configuration() -> None:
    response = normalise({"answer": "25 days", "contexts": ["Staff get 25 days.", "Carry 5."]})
    assert response.answer == "25 days"
    assert response.contexts == ["Staff get 25 days.", "Carry 5."]
    assert response.documents == []
    assert response.tool is None and response.input_tokens is None and response.latency_ms is None


@pytest.mark.parametrize("key", ["answer", "output", "response", "text", "completion", "result"])
def test_alternative_answer_keys(key: str) -> None:
    assert normalise({key: "yes"}).answer == "yes"


@pytest.mark.parametrize(
    "key", ["contexts", "citations", "sources", "retrieved_contexts", "context"]
)
def test_alternative_context_keys(key: str) -> None:
    assert normalise({"answer": "a", key: ["chunk one", "chunk two"]}).contexts == [
        "chunk one",
        "chunk two",
    ]


def test_single_context_string() -> None:
    assert normalise({"answer": "a", "context": "the only chunk"}).contexts == ["the only chunk"]


@pytest.mark.parametrize(
    ("item", "text", "document"),
    [
        ({"text": "t1", "document": "hr.pdf"}, "t1", "hr.pdf"),
        ({"content": "t2", "source": "s3://b/k.md"}, "t2", "s3://b/k.md"),
        ({"page_content": "t3", "metadata": {"source": "wiki/leave"}}, "t3", "wiki/leave"),
        ({"text": "t4", "uri": "https://x/doc"}, "t4", "https://x/doc"),
        (
            {"text": "t5", "location": {"s3Location": {"uri": "s3://kb/a.pdf"}}},
            "t5",
            "s3://kb/a.pdf",
        ),
        (
            {"content": {"text": "t6"}, "location": {"webLocation": {"url": "https://w"}}},
            "t6",
            "https://w",
        ),
    ],
)
def test_context_objects_give_contexts_and_documents(
    item: dict[str, object], text: str, document: str
) -> None:
    response = normalise({"answer": "a", "contexts": [item]})
    assert response.contexts == [text]
    assert response.documents == [document]


def test_context_object_without_document() -> None:
    response = normalise({"answer": "a", "sources": [{"text": "only text"}]})
    assert response.contexts == ["only text"] and response.documents == []


def test_sources_beside_contexts_are_documents() -> None:
    response = normalise({"answer": "a", "contexts": ["c1"], "sources": ["hr.pdf", "hr.pdf"]})
    assert response.contexts == ["c1"]
    assert response.documents == ["hr.pdf"]  # deduplicated


def test_explicit_documents_key() -> None:
    response = normalise({"answer": "a", "documents": ["d1", {"id": "d2"}]})
    assert response.documents == ["d1", "d2"]


def test_nested_wrapper_record() -> None:
    response = normalise({"status": "ok", "data": {"answer": "nested", "contexts": ["c"]}})
    assert response.answer == "nested" and response.contexts == ["c"]


@pytest.mark.parametrize("body_as_string", [True, False])
def test_api_gateway_shape(body_as_string: bool) -> None:
    body = {"answer": "via APIGW", "citations": [{"text": "c", "source": "doc"}]}
    payload = {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body) if body_as_string else body,
    }
    response = normalise(payload)
    assert response.answer == "via APIGW"
    assert response.contexts == ["c"] and response.documents == ["doc"]


def test_api_gateway_error_status_is_a_target_error_with_body() -> None:
    payload = {"statusCode": 502, "body": json.dumps({"message": "upstream exploded"})}
    with pytest.raises(TargetError) as info:
        normalise(payload, source="Lambda function qa")
    assert "statusCode 502" in info.value.message
    assert "upstream exploded" in info.value.message
    assert "Lambda function qa" in info.value.message
    assert info.value.retryable


def test_api_gateway_client_error_is_not_retryable() -> None:
    with pytest.raises(TargetError) as info:
        normalise({"statusCode": 400, "body": "bad question"})
    assert "400" in info.value.message and "bad question" in info.value.message
    assert not info.value.retryable


def test_api_gateway_plain_text_body_is_the_answer() -> None:
    assert normalise({"statusCode": 200, "body": "just text"}).answer == "just text"


def test_bare_string_from_lambda() -> None:
    # Lambda's Payload for `return "hello"` is the JSON string "hello".
    assert normalise(b'"hello there"').answer == "hello there"
    assert normalise("not json at all").answer == "not json at all"


def test_step_functions_output_json_string() -> None:
    output = json.dumps({"result": {"answer": "sfn says", "contexts": ["x"]}})
    response = normalise(output)
    assert response.answer == "sfn says" and response.contexts == ["x"]


def test_step_functions_lambda_task_envelope() -> None:
    output = {
        "ExecutedVersion": "$LATEST",
        "Payload": {"statusCode": 200, "body": json.dumps({"answer": "deep"})},
        "StatusCode": 200,
    }
    assert normalise(json.dumps(output)).answer == "deep"


def test_tool_intent_tokens_cost() -> None:
    response = normalise(
        {
            "answer": "a",
            "tool": {"name": "get_balance"},
            "intent": "leave_balance",
            "usage": {"prompt_tokens": 120, "completion_tokens": 30},
            "cost": 0.0021,
            "latency_ms": 812.5,
        }
    )
    assert response.tool == "get_balance"
    assert response.intent == "leave_balance"
    assert (response.input_tokens, response.output_tokens) == (120, 30)
    assert response.cost == pytest.approx(0.0021)
    assert response.latency_ms == pytest.approx(812.5)


def test_usage_with_input_output_token_names() -> None:
    response = normalise({"answer": "a", "usage": {"input_tokens": 7, "output_tokens": 3}})
    assert (response.input_tokens, response.output_tokens) == (7, 3)


def test_openai_shaped_payload() -> None:
    payload = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    }
    response = normalise(payload)
    assert response.answer == "hi" and response.input_tokens == 5


def test_bedrock_retrieve_and_generate_shaped_payload() -> None:
    payload = {
        "output": {"text": "From the KB"},
        "citations": [
            {
                "generatedResponsePart": {"textResponsePart": {"text": "From the KB"}},
                "retrievedReferences": [
                    {
                        "content": {"text": "chunk"},
                        "location": {"type": "S3", "s3Location": {"uri": "s3://kb/doc.pdf"}},
                    }
                ],
            }
        ],
    }
    response = normalise(payload)
    assert response.answer == "From the KB"
    assert response.contexts == ["chunk"] and response.documents == ["s3://kb/doc.pdf"]


def test_jmespath_mapping_overrides_defaults() -> None:
    payload = {
        "answer": "decoy",
        "data": {
            "reply": {"text": "mapped answer"},
            "hits": [{"body": "h1", "doc": "D1"}, {"body": "h2", "doc": "D2"}],
            "route": {"tool": "search", "label": "faq"},
        },
    }
    mapping = {
        "answer_path": "data.reply.text",
        "contexts_path": "data.hits[].body",
        "documents_path": "data.hits[].doc",
        "tool_path": "data.route.tool",
        "intent_path": "data.route.label",
    }
    response = normalise(payload, mapping)
    assert response.answer == "mapped answer"
    assert response.contexts == ["h1", "h2"]
    assert response.documents == ["D1", "D2"]
    assert response.tool == "search" and response.intent == "faq"


def test_mapping_applies_inside_api_gateway_body() -> None:
    payload = {"statusCode": 200, "body": json.dumps({"out": {"msg": "inside"}})}
    assert normalise(payload, {"answer_path": "out.msg"}).answer == "inside"


def test_mapping_that_selects_nothing_names_the_keys() -> None:
    with pytest.raises(TargetError) as info:
        normalise({"reply": "x", "meta": {}}, {"answer_path": "data.reply"})
    assert "answer_path" in info.value.message
    assert '"meta"' in info.value.message and '"reply"' in info.value.message
    # the fix is written in full, from the response's own keys
    assert info.value.message.endswith('probably "answer_path": "reply".')


def test_invalid_jmespath_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="answer_path"):
        ResponseMapping.from_spec({"answer_path": "data.[oops"})


def test_no_answer_lists_keys_and_suggests_answer_path() -> None:
    with pytest.raises(TargetError) as info:
        normalise({"reply_text": "x", "debug": True}, source="POST http://h/x")
    message = info.value.message
    assert '"debug"' in message and '"reply_text"' in message
    assert "POST http://h/x" in message
    assert message.endswith('probably "answer_path": "reply_text".')


def test_the_suggested_answer_path_is_the_answer_like_text_deep_in_the_response() -> None:
    payload = {
        "request_id": "a-long-request-identifier-0123456789",
        "result_set": {"items": [{"reply": "Paris", "lang": "en"}]},
    }
    with pytest.raises(TargetError) as info:
        normalise(payload)
    assert 'probably "answer_path": "result_set.items[0].reply"' in info.value.message
    # ... and it works when set as written
    assert normalise(payload, {"answer_path": "result_set.items[0].reply"}).answer == "Paris"
    # odd keys are quoted as JMESPath wants them
    assert suggest_answer_path({"the reply": {"x-y": "ok"}}) == '"the reply"."x-y"'
    assert suggest_answer_path({"n": 1, "flag": True}) is None


@pytest.mark.parametrize("payload", [None, b"null", "", {"statusCode": 200, "body": ""}])
def test_empty_or_null_payload_is_an_error(payload: object) -> None:
    with pytest.raises(TargetError):
        normalise(payload)


def test_empty_answer_string_is_kept() -> None:
    assert normalise({"answer": ""}).answer == ""


def test_bedrock_references_locations_and_content_kinds() -> None:
    contexts, documents = bedrock_references(
        [
            {"content": {"text": "a"}, "location": {"webLocation": {"url": "https://w"}}},
            {
                "content": {"row": [{"columnName": "id", "columnValue": "7", "type": "STRING"}]},
                "location": {"sqlLocation": {"query": "select 1"}},
            },
            {"content": {"text": "c"}, "location": {"customDocumentLocation": {"id": "doc-9"}}},
            {"content": {"text": "d"}, "metadata": {"x-amz-bedrock-kb-source-uri": "s3://m/d"}},
        ]
    )
    assert contexts == ["a", "id: 7", "c", "d"]
    assert documents == ["https://w", "select 1", "doc-9", "s3://m/d"]


def test_error_status_without_body_is_an_error() -> None:
    with pytest.raises(TargetError, match=r"statusCode 503.*overloaded") as info:
        normalise({"statusCode": 503, "error": "overloaded"})
    assert info.value.retryable


def test_non_numeric_status_without_body_is_ignored() -> None:
    assert normalise({"statusCode": "ok", "answer": "fine"}).answer == "fine"
