"""A judge on Amazon Bedrock through the Converse API (any model or inference profile).

System messages go to ``system``; the rest alternate user/assistant (consecutive turns of one
role are merged, as Converse requires). Every request carries ``maxTokens`` sized for the
reply's schema, and, unless ``judge.structured_output`` is ``none``, the reply's schema as the
input schema of one tool the model is told to call (Converse tool use): the tool's input is the
reply. Models that refuse a forced tool choice get the tool offered (``any``), models without
tool use the prompt alone; the step is taken once per run (:mod:`evalrunner.judge.structured`).

botocore's own retries are off: the shared policy
(:mod:`evalrunner.retry`, applied in :class:`~evalrunner.judge._client._BaseJudge`) retries
throttling, 5xx and timeouts, so both judge kinds behave the same, every retry is counted, and
no backoff sleeps while holding a concurrency slot (the module docstring of
:mod:`evalrunner.retry` says why AWS targets leave their retries to botocore instead).
"""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import urllib3.exceptions
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from evalrunner.errors import ConfigError
from evalrunner.http_client import describe_failure
from evalrunner.judge._client import Completion, JudgeRequest, _BaseJudge
from evalrunner.judge.base import JudgeError, Message
from evalrunner.judge.cache import ResponseCache
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.reply_format import schema_name, wire_schema
from evalrunner.judge.structured import BEDROCK_CHAIN, OutputMode
from evalrunner.retry import (
    AWS_TRANSIENT_CODES,
    TransientError,
    is_retryable_status,
    parse_retry_after,
)
from evalrunner.targets._aws import error_code, region_from_arn

#: The most a Bedrock reply may use: within every Bedrock text model's limit (Llama's is
#: 2048); judge.max_tokens above it is lowered to it.
MAX_TOKENS = 2048
#: What the tool that carries the reply is described as.
TOOL_DESCRIPTION = "Record your judgement. The input is your whole reply."

#: Connecting takes milliseconds when the network is fine; do not wait a full read timeout.
CONNECT_TIMEOUT_SECONDS = 10.0


def converse_messages(messages: list[Message]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """(system blocks, messages) for Converse: system split out, same-role turns merged."""
    system = [{"text": m.content} for m in messages if m.role == "system" and m.content.strip()]
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        text = m.content if m.content.strip() else "(empty)"  # Converse rejects blank text
        if turns and turns[-1]["role"] == m.role:
            turns[-1]["content"][0]["text"] += "\n\n" + text
        else:
            turns.append({"role": m.role, "content": [{"text": text}]})
    return system, turns


#: What Bedrock's refusal says when the account has not subscribed to a third-party model
#: (first use goes through AWS Marketplace) or has not sent Anthropic's use-case form.
_MARKETPLACE = re.compile(r"aws-marketplace|marketplace subscription", re.IGNORECASE)
_USE_CASE_FORM = re.compile(r"use case details|use case form", re.IGNORECASE)


def access_hint(model: str, message: str) -> str:
    """How to fix a refused Bedrock call, from what the refusal says. A model's first use in
    an account subscribes to it through AWS Marketplace with the caller's permissions;
    Anthropic's models also need the account's one-time use-case form."""
    if _MARKETPLACE.search(message):
        return (
            f"The first call to {model} in this account subscribes to it through AWS "
            "Marketplace, and the caller may not: open the model once in the Bedrock console "
            "(Model catalog, then the playground) with an identity allowed "
            "aws-marketplace:Subscribe and aws-marketplace:ViewSubscriptions, or deploy with "
            "cdk.json marketplace_product_ids set to the model's product id; the subscription "
            "takes up to 15 minutes, then rerun"
        )
    if _USE_CASE_FORM.search(message):
        return (
            "Anthropic's models need the account's use-case details once: submit the form in "
            "the Bedrock console (Model catalog, the model, then the playground), then rerun"
        )
    return (
        f"Grant bedrock:InvokeModel on {model} to the role that runs evalrunner (for an "
        "inference profile: the profile and the foundation model in each region it routes "
        "to), and make sure the account may use the model (Bedrock console, Model catalog)"
    )


class BedrockJudge(_BaseJudge):
    """The judge behind ``bedrock-runtime`` ``converse``."""

    kind = "bedrock"

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache: ResponseCache | None = None,
        session: boto3.Session | None = None,
        client: Any | None = None,
    ) -> None:
        if config.bedrock is None:
            raise ConfigError('BedrockJudge needs judge.bedrock {"model_id": ...}')
        super().__init__(config, cache=cache)
        self.max_tokens = min(self.max_tokens, MAX_TOKENS)
        options = config.bedrock
        session = session or boto3.Session()
        self.region = options.region or region_from_arn(options.model_id) or session.region_name
        self.output = OutputMode(
            config.structured_output,
            BEDROCK_CHAIN,
            self.capability_memory("bedrock", str(self.region), self.model),
        )
        if client is None:
            if not self.region:
                raise ConfigError(
                    "No AWS region for the Bedrock judge: set judge.bedrock.region "
                    '(e.g. "us-east-1") or AWS_REGION / AWS_DEFAULT_REGION.'
                )
            try:
                client = session.client(
                    "bedrock-runtime",
                    region_name=self.region,
                    config=Config(
                        connect_timeout=min(self.timeout, CONNECT_TIMEOUT_SECONDS),
                        read_timeout=self.timeout,
                        # One attempt per call: the shared retry policy does the rest (two
                        # retry layers would multiply the attempts; see evalrunner.retry).
                        retries={"total_max_attempts": 1, "mode": "standard"},
                        max_pool_connections=max(10, self.max_concurrency),
                        user_agent_extra="evalrunner-judge",
                    ),
                )
            except NoRegionError as exc:  # pragma: no cover - region is passed above
                raise ConfigError(str(exc)) from exc
        self.client = client

    @property
    def endpoint(self) -> str:
        return f"Bedrock judge model {self.model} in {self.region or '(default region)'}"

    def request(self, request: JudgeRequest, mode: str | None = None) -> dict[str, Any]:
        mode = self.output.current if mode is None else mode
        system, turns = converse_messages(request.messages)
        body: dict[str, Any] = {
            "modelId": self.model,
            "messages": turns,
            "inferenceConfig": {"temperature": 0.0, "maxTokens": request.max_tokens},
        }
        if system:
            body["system"] = system
        if mode in ("tool_use", "tool_use_any"):
            name = schema_name(request.schema)
            spec = {
                "name": name,
                "description": TOOL_DESCRIPTION,
                "inputSchema": {"json": wire_schema(request.schema)},
            }
            choice = {"tool": {"name": name}} if mode == "tool_use" else {"any": {}}
            body["toolConfig"] = {"tools": [{"toolSpec": spec}], "toolChoice": choice}
        return body

    def _complete(self, request: JudgeRequest) -> Completion:
        # Converse returns no log-probabilities: GEval falls back to the plain score.
        mode = self.output.current
        extra = 0
        while True:
            try:
                response = self.client.converse(**self.request(request, mode))
                break
            except ClientError as exc:
                following = self._rejected(exc, mode)
                if following is None:
                    raise self._client_error(exc) from exc
                mode, extra = following, extra + 1
            except (ReadTimeoutError, ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError):
                raise TransientError(f"no answer within timeout_seconds={self.timeout:g}") from None
            except (EndpointConnectionError, ConnectionClosedError) as exc:
                raise TransientError(f"could not connect: {exc}") from exc
            except urllib3.exceptions.ProtocolError as exc:
                raise TransientError(
                    f"the connection broke mid-response: {describe_failure(exc)}"
                ) from exc
            except NoCredentialsError as exc:
                raise JudgeError(
                    f"{self.endpoint}: no AWS credentials found. Configure credentials "
                    "(AWS_PROFILE, environment variables or a role) for the judge's account."
                ) from exc
            except BotoCoreError as exc:
                raise JudgeError(f"{self.endpoint} failed: {exc}") from exc
        self.output.confirm(mode)
        content = (response.get("output") or {}).get("message", {}).get("content") or []
        blocks = [b for b in content if isinstance(b, dict)]
        tool_inputs = [
            b["toolUse"].get("input")
            for b in blocks
            if isinstance(b.get("toolUse"), dict) and "input" in b["toolUse"]
        ]
        if tool_inputs:  # the reply is the tool's input (text blocks beside it are musings)
            text = json.dumps(tool_inputs[0], ensure_ascii=False)
        else:
            text = "".join(b["text"] for b in blocks if isinstance(b.get("text"), str))
        usage = response.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
            extra_requests=extra,
            truncated=response.get("stopReason") == "max_tokens",
        )

    def _rejected(self, exc: ClientError, mode: str) -> str | None:
        """The mode to resend with when ``exc`` rejects tool use (a ValidationException
        naming the tool or its choice), else None."""
        if error_code(exc) != "ValidationException" or mode == "none":
            return None
        message = exc.response.get("Error", {}).get("Message", "") or str(exc)
        if not self.output.is_rejection(mode, 400, message):
            return None
        following = self.output.step(mode, f"ValidationException: {message}", self.endpoint)
        if following is None:
            raise JudgeError(
                f"{self.endpoint} rejected judge.structured_output {mode!r} ({message}). Set "
                'judge.structured_output to "auto" (falls back to the prompt alone) or "none".'
            ) from exc
        return following

    def _client_error(self, exc: ClientError) -> Exception:
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "") or str(exc)
        meta = exc.response.get("ResponseMetadata", {})
        status = meta.get("HTTPStatusCode")
        if code in AWS_TRANSIENT_CODES or is_retryable_status(status):
            return TransientError(
                f"{code or status}: {message}",
                retry_after=parse_retry_after(meta.get("HTTPHeaders")),
            )
        if code.startswith("AccessDenied") or code in {"UnauthorizedOperation", "Forbidden"}:
            hint = access_hint(self.model, message)
            return JudgeError(f"{self.endpoint} was refused ({code}): {message}. {hint}.")
        if code == "ResourceNotFoundException":
            return JudgeError(
                f"{self.endpoint} was not found ({code}: {message}). Check judge.bedrock.model_id "
                "and judge.bedrock.region (some models need an inference profile id)."
            )
        if code == "ValidationException":
            return JudgeError(f"{self.endpoint} rejected the request ({code}): {message}")
        if isinstance(status, int) and status >= 500:
            return TransientError(f"{code or status}: {message}")
        return JudgeError(f"{self.endpoint} failed ({code or status}): {message}")
