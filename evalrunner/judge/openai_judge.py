"""A judge behind any OpenAI-compatible chat endpoint: OpenAI, Azure OpenAI, vLLM, Ollama,
llama.cpp, LiteLLM and other gateways.

``POST {base_url}/chat/completions`` with temperature 0, a reply budget (``max_tokens``, sized
for the reply's schema) and the server's structured output (``judge.structured_output``,
detected per endpoint: see :mod:`evalrunner.judge.structured`). A server that rejects
log-probabilities or ``max_tokens`` (OpenAI's reasoning models want
``max_completion_tokens``) with a 400 naming the parameter gets the request once more without
it, or with the other name, and this judge remembers. One attempt per request: retries,
backoff and the concurrency limit live in :class:`~evalrunner.judge._client._BaseJudge`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalrunner import redaction
from evalrunner.errors import ConfigError, TargetError
from evalrunner.http_client import HttpResult, JsonHttpClient, ResponseTooLarge, snippet
from evalrunner.judge._client import Completion, JudgeRequest, _BaseJudge
from evalrunner.judge.base import JudgeError
from evalrunner.judge.cache import ResponseCache
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.reply_format import schema_name, wire_schema
from evalrunner.judge.structured import OPENAI_CHAIN, OutputMode
from evalrunner.network import UrlCheck
from evalrunner.retry import TransientError, is_retryable_status, parse_retry_after
from evalrunner.secrets import api_key as read_api_key
from evalrunner.targets.http import display_url

#: Alternatives per output position when log-probabilities are asked for (OpenAI's maximum).
TOP_LOGPROBS = 20
#: Statuses on which an unsupported optional parameter is dropped and the request resent.
_REJECTED = (400, 422)
#: Cap on one judge reply. A verdict is a few KiB; with log-probabilities (20 alternatives
#: per output token) a long one reaches about 1.5 MB. A reply is untrusted input, so reading
#: stops here instead of filling the memory of the Lambda that grades the case.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


def _content_text(content: Any) -> str:
    """``message.content``: a string, a list of ``{"type": "text", "text": ...}`` parts, or
    null (an empty reply, which the repair prompt deals with)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return ""


def _top_logprobs(choice: dict[str, Any]) -> list[dict[str, float]] | None:
    """``choices[0].logprobs`` as ``[{token: logprob, ...}]`` per output position."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list):  # chat format: [{token, logprob, top_logprobs: [...]}]
        positions: list[dict[str, float]] = []
        for position in content:
            if not isinstance(position, dict):
                continue
            alternatives = {
                str(alt["token"]): float(alt["logprob"])
                for alt in position.get("top_logprobs") or ()
                if isinstance(alt, dict) and "token" in alt and alt.get("logprob") is not None
            }
            if not alternatives and "token" in position and position.get("logprob") is not None:
                alternatives = {str(position["token"]): float(position["logprob"])}
            positions.append(alternatives)
        return positions
    legacy = logprobs.get("top_logprobs")  # completions format: [{token: logprob}]
    if isinstance(legacy, list):
        return [
            {str(k): float(v) for k, v in p.items() if isinstance(v, int | float)}
            for p in legacy
            if isinstance(p, dict)
        ]
    return None


def chat_completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, keeping a query string (Azure's ``?api-version=``)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class OpenAIJudge(_BaseJudge):
    """The judge at an OpenAI-compatible ``/chat/completions``."""

    kind = "openai"
    max_response_bytes = MAX_RESPONSE_BYTES

    def __init__(self, config: JudgeConfig, *, cache: ResponseCache | None = None) -> None:
        if config.openai is None:
            raise ConfigError('OpenAIJudge needs judge.openai {"base_url": ..., "model": ...}')
        super().__init__(config, cache=cache)
        options = config.openai
        self.url = chat_completions_url(options.base_url)
        self.api_key_env = options.api_key_env or "OPENAI_API_KEY"
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        api_key = read_api_key(options.model_dump(), "judge.openai")
        redaction.register_url(self.url)
        self.check_url = UrlCheck(self.url, "judge.openai.base_url")
        if api_key:  # no key: a local server (vLLM, Ollama) that wants none
            header = options.api_key_header
            bearer = header.lower() == "authorization"
            self.headers[header] = f"Bearer {api_key}" if bearer else api_key
        #: Which structured output to send (detected with ``auto``, and remembered across
        #: runs per base URL and model beside the judge cache).
        self.output = OutputMode(
            config.structured_output,
            OPENAI_CHAIN,
            self.capability_memory("openai", options.base_url.rstrip("/"), self.model),
        )
        #: Dropped (or renamed) for good once the server rejects them.
        self.logprobs_supported = True
        self.budget_field = "max_tokens"
        # One attempt per request (the retries are _BaseJudge's), each bounded as a whole
        # (connect, send, the whole body) and read up to the size cap: as for HTTP targets.
        self.http = JsonHttpClient(
            self.retry_policy(),
            max_response_bytes=self.max_response_bytes,
            settings="judge",
            pool_size=max(10, self.max_concurrency),  # one connection per call in flight
        )

    @property
    def endpoint(self) -> str:
        return f"judge model {self.model} at {display_url(self.url)}"

    def request_body(self, request: JudgeRequest, mode: str | None = None) -> dict[str, Any]:
        mode = self.output.current if mode is None else mode
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": 0,
            self.budget_field: request.max_tokens,
        }
        schema = wire_schema(request.schema)
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                # strict would require every field and no defaults: validation does the rest
                "json_schema": {"name": schema_name(request.schema), "schema": schema},
            }
        elif mode == "json_object":  # llama-cpp-python and llama-server constrain to it
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_mode":
            body["response_format"] = {"type": "json_object"}
        elif mode == "guided_json":  # vLLM's own parameter
            body["guided_json"] = schema
        if request.logprobs and self.logprobs_supported:
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS
        return body

    def _complete(self, request: JudgeRequest) -> Completion:
        mode = self.output.current
        body = self.request_body(request, mode)
        extra = 0
        while True:
            result = self._post(body)
            status, data = result.status, result.body
            text = data.decode("utf-8", errors="replace")
            if self.output.is_rejection(mode, status, text):
                why = f"HTTP {status}: {snippet(data) or '(empty body)'}"
                following = self.output.step(mode, why, self.endpoint)
                if following is None:
                    raise JudgeError(self._rejected_message(mode, why))
                mode, body = following, self.request_body(request, following)
                extra += 1
                continue
            if status in _REJECTED and self._drop_rejected(body, text):
                extra += 1
                continue
            break
        if is_retryable_status(status):
            hint = self.output.unproven_hint(mode) if status == 500 else ""
            raise TransientError(
                f"HTTP {status}: {snippet(data) or '(empty body)'}{hint}",
                retry_after=parse_retry_after(result.headers),
            )
        if not 200 <= status < 300:
            raise JudgeError(self._status_message(status, data))
        try:
            reply = json.loads(data)
        except ValueError:
            raise JudgeError(
                f"{self.endpoint} answered HTTP {status} with a body that is not JSON: "
                f"{snippet(data) or '(empty)'}. Check judge.openai.base_url."
            ) from None
        choices = reply.get("choices") if isinstance(reply, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        choice: dict[str, Any] = first if isinstance(first, dict) else {}
        message = choice.get("message")
        if not isinstance(message, dict):
            raise JudgeError(
                f"{self.endpoint} answered without choices[0].message: {snippet(data)}"
            )
        self.output.confirm(mode)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return Completion(
            text=_content_text(message.get("content")),
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            top_logprobs=_top_logprobs(choice) if request.logprobs else None,
            extra_requests=extra,
            truncated=choice.get("finish_reason") == "length",
        )

    def _rejected_message(self, mode: str, why: str) -> str:
        if self.output.auto:
            return f"{self.endpoint} rejected every structured-output mode; last: {why}"
        return (
            f"{self.endpoint} rejected judge.structured_output {mode!r} ({why}). Set "
            'judge.structured_output to "auto" (detects what the server supports) or to a '
            "mode it supports: json_schema (OpenAI, vLLM, llama-server, Ollama), json_object "
            "(llama-cpp-python), guided_json (older vLLM), json_mode or none."
        )

    def _post(self, body: dict[str, Any]) -> HttpResult:
        try:
            self.check_url()
        except TargetError as exc:
            raise JudgeError(exc.message) from None
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            return self.http.attempt(
                "POST", self.url, data, self.headers, self.timeout, "the judge"
            )
        except ResponseTooLarge as exc:  # not retried: it would come back as big
            raise JudgeError(
                f"{self.endpoint} sent a reply larger than {exc.limit:,} bytes ({exc.how}); it "
                "was not read further. A verdict is far smaller: check judge.openai.base_url "
                "and judge.openai.model."
            ) from None
        except TargetError as exc:  # timed out, refused, broken: worth another attempt
            raise TransientError(exc.message) from exc

    def _drop_rejected(self, body: dict[str, Any], text: str) -> bool:
        """Drop (or rename) the optional parameter a 400 complains about; False when none
        is named."""
        text = text.lower()
        if "logprobs" in body and "logprobs" in text:
            body.pop("logprobs", None)
            body.pop("top_logprobs", None)
            self.logprobs_supported = False
            return True
        if "max_tokens" in body and "max_completion_tokens" in text:
            body["max_completion_tokens"] = body.pop("max_tokens")
            self.budget_field = "max_completion_tokens"
            return True
        return False

    def _status_message(self, status: int, data: bytes) -> str:
        base = f"{self.endpoint} answered HTTP {status}: {snippet(data) or '(empty body)'}."
        if status in (401, 403):
            return (
                f"{base} Set {self.api_key_env} to a valid API key (judge.openai.api_key_env, "
                "or an allowed secret in judge.openai.api_key_secret; Azure OpenAI also needs "
                "api_key_header 'api-key')."
            )
        if status == 404:
            return (
                f"{base} Check judge.openai.base_url (most servers want it to end in /v1) and "
                "judge.openai.model."
            )
        if 300 <= status < 400:
            return f"{base} The endpoint redirects: put the final URL in judge.openai.base_url."
        return base
