"""A plain LLM behind an OpenAI-compatible chat endpoint (``"openai"``).

Gives a baseline next to the RAG system (what does the bare model answer?) and covers local
servers (vLLM, llama.cpp, Ollama) as well as hosted ones; an absent API key is therefore not
an error, the request simply goes without an Authorization header.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from evalrunner import redaction
from evalrunner.errors import TargetError
from evalrunner.http_client import HttpResult, JsonHttpClient, snippet, status_error
from evalrunner.network import UrlCheck
from evalrunner.retry import BACKOFF_BASE_SECONDS
from evalrunner.secrets import api_key as read_api_key
from evalrunner.suite.model import TestCase
from evalrunner.targets._common import (
    SOURCES_INSTRUCTION,
    conversation_turns,
    numbered_sources,
    retry_policy,
    sanitise_name,
)
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.http import display_url
from evalrunner.targets.registry import register
from evalrunner.targets.spec import SpecModel, TargetSpec, integral
from evalrunner.targets.steps import steps_from_tool_calls, tool_names


def _content_text(content: Any) -> str | None:
    """``message.content``: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return None


class OpenAIOptions(SpecModel):
    """The object under ``"openai"``: where the model is served and how to ask it."""

    base_url: str = Field(pattern=r"^https?://")
    model: str = Field(min_length=1)
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
    system_prompt: str | None = None
    temperature: float = Field(default=0, ge=0, le=2)
    max_tokens: Annotated[int, Field(ge=1), integral] | None = None
    reasoning: bool = Field(
        default=False,
        description="A reasoning model (o-series, gpt-5): send no temperature (they refuse "
        "one) and send max_tokens as max_completion_tokens (which also counts the hidden "
        "reasoning tokens, so leave room).",
    )
    send_contexts: (
        Annotated[Literal["system", "user"], WithJsonSchema({"enum": ["system", "user"]})] | None
    ) = Field(
        default=None,
        description="Send each case's contexts (the suite's retrieved_contexts column) as "
        "numbered sources, in a system message after system_prompt ('system') or before the "
        "question in the user message ('user'), so the model is tested as the generation "
        "step of a RAG system; they are also recorded as the case's retrieved contexts. "
        "Needed by the misinformation perturbation. Default: not sent.",
    )

    @model_validator(mode="after")
    def _reasoning_takes_no_temperature(self) -> OpenAIOptions:
        check_reasoning(self)
        return self


class OpenAIFields(SpecModel):
    """``{"openai": {...}}``: a plain LLM behind an OpenAI-compatible chat endpoint."""

    schema_def: ClassVar[str] = "openai"

    openai: OpenAIOptions


class OpenAISpec(OpenAIFields, TargetSpec):
    """An OpenAI-compatible chat target as the event gives it."""


@register
class OpenAIChatTarget(Target):
    """``POST {base_url}/chat/completions`` with the case's turns and question."""

    kind = "openai"
    spec_model = OpenAISpec
    options: OpenAISpec

    #: First wait between retries (seconds; doubled per consecutive failure, see
    #: :mod:`evalrunner.retry`). No jitter: an HTTP target has always waited the whole window.
    backoff_factor = BACKOFF_BASE_SECONDS

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        super().__init__(spec)  # no AWS call: the session is not needed
        options = self.options.openai
        self.model = options.model
        self.url = options.base_url.rstrip("/") + "/chat/completions"
        self.system_prompt = options.system_prompt
        self.send_contexts = options.send_contexts
        self.api_key_env = options.api_key_env or "OPENAI_API_KEY"
        api_key = read_api_key(spec["openai"], "target.openai")
        redaction.register_url(self.url)
        self.check_url = UrlCheck(self.url, "target.openai.base_url")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = JsonHttpClient(
            retry_policy(self.options, base=self.backoff_factor, jitter=False),
            max_response_bytes=self.options.max_response_bytes,
        )

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        options = spec["openai"]
        model = options.get("model", "") if isinstance(options, dict) else ""
        return sanitise_name(str(model), fallback="openai")

    @classmethod
    def sends_contexts(cls, spec: dict[str, Any]) -> str | None:
        options = spec.get("openai")
        if isinstance(options, dict) and options.get("send_contexts"):
            return "target.openai.send_contexts"
        return None

    def request_body(self, case: TestCase) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(case, self.system_prompt, self.send_contexts),
        }
        body.update(sampling(self.options.openai))
        return body

    def invoke(self, case: TestCase) -> TargetResponse:
        what = f"model {self.model} at {display_url(self.url)}"
        self.check_url()
        result = self.http.send("POST", self.url, self.request_body(case), self.headers, what)
        auth_hint = (
            f"Set {self.api_key_env} to a valid API key (target.openai.api_key_env), "
            "or name an allowed secret in target.openai.api_key_secret."
        )
        return chat_reply(result, what, case, self.send_contexts, auth_hint)


class ChatSampling(Protocol):
    """The sampling options the chat kinds share (``openai``, ``azure_openai``)."""

    @property
    def temperature(self) -> float: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def reasoning(self) -> bool: ...
    @property
    def model_fields_set(self) -> set[str]: ...


def check_reasoning(options: ChatSampling) -> None:
    """Refuse a temperature given for a reasoning model: it would not be sent (o-series and
    gpt-5 reject any but their own), and silently dropping what the user wrote would hide
    that the run is not at the temperature they asked for."""
    if options.reasoning and "temperature" in options.model_fields_set:
        raise PydanticCustomError(
            "reasoning_temperature",
            "a reasoning model (reasoning: true) takes no temperature: remove temperature, "
            "or set reasoning to false for a model that accepts one",
        )


def sampling(options: ChatSampling) -> dict[str, Any]:
    """The request's sampling fields: ``temperature`` and ``max_tokens``, or for a reasoning
    model no temperature and ``max_completion_tokens`` (the only names it accepts)."""
    if options.reasoning:
        return {"max_completion_tokens": options.max_tokens} if options.max_tokens else {}
    fields: dict[str, Any] = {"temperature": float(options.temperature)}
    if options.max_tokens:
        fields["max_tokens"] = options.max_tokens
    return fields


def chat_messages(
    case: TestCase, system_prompt: str | None, send_contexts: str | None
) -> list[dict[str, str]]:
    """The chat messages of one case: the system prompt, the case's contexts as numbered
    sources where ``send_contexts`` says ('system' or 'user'), its earlier turns, its
    question. Shared by every chat-completions kind (OpenAI-compatible, Azure OpenAI)."""
    messages: list[dict[str, str]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    sources = (
        f"{SOURCES_INSTRUCTION}\n\nSources:\n{numbered_sources(case.contexts)}"
        if send_contexts and case.contexts
        else None
    )
    if sources and send_contexts == "system":
        messages.append({"role": "system", "content": sources})
    messages.extend(conversation_turns(case))
    question = case.question
    if sources and send_contexts == "user":
        question = f"{sources}\n\nQuestion: {case.question}"
    messages.append({"role": "user", "content": question})
    return messages


def chat_reply(
    result: HttpResult, what: str, case: TestCase, send_contexts: str | None, auth_hint: str
) -> TargetResponse:
    """A chat-completions reply as the normalised response: ``choices[0].message``'s text
    and tool calls, the usage figures, and (when the case's contexts were sent) those
    contexts; a TargetError that names the target otherwise."""
    if not 200 <= result.status < 300:
        raise status_error(result, what, auth_hint=auth_hint)
    body = result.json(what)
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise TargetError(f"{what} answered without choices[0].message: {snippet(result.body)}")
    steps = steps_from_tool_calls(message.get("tool_calls") or ())
    tools = tool_names(steps)
    answer = _content_text(message.get("content"))
    if answer is None:
        if not tools:
            raise TargetError(f"{what} answered with an empty message: {snippet(result.body)}")
        answer = ""
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return TargetResponse(
        answer=answer,
        # What the model was given is what it answered from (faithfulness checks it).
        contexts=list(case.contexts or []) if send_contexts else [],
        tool=", ".join(t for t in tools if t) or None,
        steps=steps,
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
    )
