"""A model behind OpenAI's Responses API (``"openai_responses"``), with file search.

``POST {base_url}/responses`` with the case's turns as input messages and, when vector store
ids are given, the hosted ``file_search`` tool over them: OpenAI retrieves from the user's
vector stores and answers from what it found. That is a RAG system OpenAI hosts, so its
retrieval is read back for the RAG metrics: the request asks for the search results
(``include: ["file_search_call.results"]``), each result's text becomes a retrieved context
and its file a retrieved document, and the files the answer cites (its ``file_citation``
annotations) are documents too. The search is recorded as a knowledge-base step (with its
queries), function calls as tool steps.

Responses are not stored on OpenAI's side unless ``store`` is set (a test run's answers are
not conversations to keep). The key comes from ``OPENAI_API_KEY`` (or ``api_key_env``; deployed:
``api_key_secret``) through :mod:`evalrunner.secrets`, as for the chat-completions kind.

Why not the Assistants API: OpenAI deprecated it in favour of this one (announced August
2025, shut down on 26 August 2026); its threads and runs map onto Responses' input and
``file_search`` one to one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import Field

from evalrunner import redaction
from evalrunner.errors import TargetError
from evalrunner.http_client import HttpResult, JsonHttpClient, snippet, status_error
from evalrunner.network import UrlCheck
from evalrunner.retry import BACKOFF_BASE_SECONDS
from evalrunner.secrets import api_key as read_api_key
from evalrunner.suite.model import TestCase
from evalrunner.targets._common import conversation_turns, retry_policy, sanitise_name
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.http import display_url
from evalrunner.targets.registry import register
from evalrunner.targets.spec import SpecModel, TargetSpec, integral
from evalrunner.targets.steps import MAX_STEP_TEXT, MAX_STEPS, AgentStep

#: What the request asks to have back besides the answer: the file search's results.
INCLUDE_RESULTS = "file_search_call.results"


class ResponsesOptions(SpecModel):
    """The object under ``"openai_responses"``: the model, its file search, how to ask."""

    base_url: str = Field(pattern=r"^https?://", description="e.g. https://api.openai.com/v1")
    model: str = Field(min_length=1)
    vector_store_ids: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        max_length=2,
        description="Vector stores the file_search tool searches (OpenAI allows up to 2 per "
        "request); their results become the case's retrieved contexts and documents. "
        "Without them no tool is sent: the bare model answers.",
    )
    max_num_results: Annotated[int, Field(ge=1, le=50), integral] | None = Field(
        default=None, description="file_search's max_num_results (1-50; OpenAI's default 10)."
    )
    filters: dict[str, Any] | None = Field(
        default=None,
        description="file_search's attribute filter, as OpenAI writes it (e.g. "
        '{"type": "eq", "key": "region", "value": "EU"}), sent as it is.',
    )
    instructions: str | None = Field(
        default=None, description="The system prompt (the Responses API's instructions)."
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Sent only when given (reasoning models refuse it).",
    )
    max_output_tokens: Annotated[int, Field(ge=1), integral] | None = None
    store: bool = Field(
        default=False, description="Let OpenAI store the responses (default: not stored)."
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable with the API key (locally only; same rules as "
        "headers_from_env).",
    )
    api_key_secret: str | None = Field(
        default=None,
        min_length=1,
        description="AWS Secrets Manager secret (ARN or name, listed in cdk.json 'secrets') "
        "with the API key; deployed runner only.",
    )


class ResponsesFields(SpecModel):
    """``{"openai_responses": {...}}``: OpenAI's Responses API, with file search."""

    schema_def: ClassVar[str] = "openaiResponses"

    openai_responses: ResponsesOptions


class ResponsesSpec(ResponsesFields, TargetSpec):
    """An OpenAI Responses target as the event gives it."""


@register
class OpenAIResponsesTarget(Target):
    """``POST {base_url}/responses``; file search results become contexts and documents."""

    kind = "openai_responses"
    spec_model = ResponsesSpec
    options: ResponsesSpec

    #: First wait between retries (seconds, doubled per failure; see :mod:`evalrunner.retry`).
    backoff_factor = BACKOFF_BASE_SECONDS

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        super().__init__(spec)  # no AWS call: the session is not needed
        self.settings = self.options.openai_responses
        self.model = self.settings.model
        self.url = self.settings.base_url.rstrip("/") + "/responses"
        self.api_key_env = self.settings.api_key_env
        api_key = read_api_key(spec["openai_responses"], "target.openai_responses")
        redaction.register_url(self.url)
        self.check_url = UrlCheck(self.url, "target.openai_responses.base_url")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = JsonHttpClient(
            retry_policy(self.options, base=self.backoff_factor, jitter=False),
            max_response_bytes=self.options.max_response_bytes,
        )

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        options = spec["openai_responses"]
        model = options.get("model", "") if isinstance(options, dict) else ""
        return sanitise_name(str(model), fallback="openai-responses")

    def request_body(self, case: TestCase) -> dict[str, Any]:
        settings = self.settings
        body: dict[str, Any] = {"model": self.model}
        if settings.instructions:
            body["instructions"] = settings.instructions
        body["input"] = [*conversation_turns(case), {"role": "user", "content": case.question}]
        if settings.vector_store_ids:
            tool: dict[str, Any] = {
                "type": "file_search",
                "vector_store_ids": list(settings.vector_store_ids),
            }
            if settings.max_num_results:
                tool["max_num_results"] = settings.max_num_results
            if settings.filters is not None:
                tool["filters"] = settings.filters
            body["tools"] = [tool]
            body["include"] = [INCLUDE_RESULTS]
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_output_tokens:
            body["max_output_tokens"] = settings.max_output_tokens
        body["store"] = settings.store
        return body

    def invoke(self, case: TestCase) -> TargetResponse:
        what = f"model {self.model} at {display_url(self.url)} (Responses API)"
        self.check_url()
        result = self.http.send("POST", self.url, self.request_body(case), self.headers, what)
        if not 200 <= result.status < 300:
            raise status_error(
                result,
                what,
                auth_hint=(
                    f"Set {self.api_key_env} to a valid API key "
                    "(target.openai_responses.api_key_env), or name an allowed secret in "
                    "target.openai_responses.api_key_secret."
                ),
            )
        return read_response(result, what)


def read_response(result: HttpResult, what: str) -> TargetResponse:
    """A Responses API reply as the normalised response: the assistant message's text, the
    file search's results as contexts, the searched and cited files as documents, the
    search and function calls as steps, and the usage."""
    body = result.json(what)
    if not isinstance(body, dict):
        raise TargetError(f"{what} answered with no response object: {snippet(result.body)}")
    error = body.get("error")
    if body.get("status") == "failed" or isinstance(error, dict):
        error = error if isinstance(error, dict) else {}
        raise TargetError(
            f"{what} failed: {error.get('code') or 'error'}: {error.get('message') or ''}".rstrip()
        )
    output = body.get("output")
    if not isinstance(output, list):
        raise TargetError(f"{what} answered without an output list: {snippet(result.body)}")
    texts: list[str] = []
    contexts: list[str] = []
    documents: list[str] = []
    steps: list[AgentStep] = []
    for item in (i for i in output if isinstance(i, Mapping)):
        kind = item.get("type")
        if kind == "file_search_call":
            steps.append(_search_step(item, contexts, documents))
        elif kind == "function_call" and item.get("name"):
            steps.append(AgentStep(name=str(item["name"]), arguments=_arguments(item)))
        elif kind == "message":
            for part in (p for p in item.get("content") or () if isinstance(p, Mapping)):
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                    documents.extend(_cited_files(part.get("annotations")))
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    texts.append(part["refusal"])
    if not texts and not any(s.kind == "tool" for s in steps):
        raise TargetError(f"{what} answered with no message: {snippet(result.body)}")
    notes = []
    if body.get("status") == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        notes.append(f"the response is incomplete ({reason or 'no reason given'})")
    usage = body.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    tools = [s.name for s in steps if s.kind == "tool"]
    return TargetResponse(
        answer="\n".join(texts),
        contexts=list(dict.fromkeys(contexts)),
        documents=list(dict.fromkeys(documents)),
        tool=", ".join(tools) or None,
        steps=steps[:MAX_STEPS],
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        notes=notes,
    )


def _search_step(item: Mapping[str, Any], contexts: list[str], documents: list[str]) -> AgentStep:
    """One file search: its results' texts and files added to the case's, and the step."""
    found = 0
    for hit in (r for r in item.get("results") or () if isinstance(r, Mapping)):
        if isinstance(hit.get("text"), str) and hit["text"].strip():
            contexts.append(hit["text"])
            found += 1
        name = hit.get("filename") or hit.get("file_id")
        if isinstance(name, str) and name:
            documents.append(name)
    queries = [q for q in item.get("queries") or () if isinstance(q, str)]
    failed = item.get("status") in ("failed", "incomplete")
    return AgentStep(
        kind="knowledge_base",
        name="file_search",
        arguments={"queries": queries},
        output=f"{found} result(s)"[:MAX_STEP_TEXT],
        failed=failed,
        error=f"file search {item.get('status')}" if failed else None,
    )


def _cited_files(annotations: Any) -> list[str]:
    """The files an answer cites (``file_citation`` annotations): filename, else file id."""
    files = []
    for note in annotations or ():
        if isinstance(note, Mapping) and note.get("type") == "file_citation":
            name = note.get("filename") or note.get("file_id")
            if isinstance(name, str) and name:
                files.append(name)
    return files


def _arguments(item: Mapping[str, Any]) -> dict[str, Any]:
    """A function call's arguments: OpenAI sends them as a JSON string."""
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {"raw": raw[:MAX_STEP_TEXT]}
    return dict(raw) if isinstance(raw, Mapping) else {}
