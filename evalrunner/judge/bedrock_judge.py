"""A judge on Amazon Bedrock through the Converse API (any model or inference profile).

System messages go to ``system``; the rest alternate user/assistant (consecutive turns of one
role are merged, as Converse requires). botocore's own retries are off: the shared policy
(:mod:`evalrunner.retry`, applied in :class:`~evalrunner.judge._client._BaseJudge`) retries
throttling, 5xx and timeouts, so both judge kinds behave the same, every retry is counted, and
no backoff sleeps while holding a concurrency slot (the module docstring of
:mod:`evalrunner.retry` says why AWS targets leave their retries to botocore instead).
"""

from __future__ import annotations

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
from evalrunner.judge._client import Completion, _BaseJudge
from evalrunner.judge.base import JudgeError, Message
from evalrunner.judge.cache import ResponseCache
from evalrunner.judge.config import JudgeConfig
from evalrunner.retry import (
    AWS_TRANSIENT_CODES,
    TransientError,
    is_retryable_status,
    parse_retry_after,
)
from evalrunner.targets._aws import error_code, region_from_arn

#: Output budget per call: within every Bedrock text model's limit (Llama's is 2048).
MAX_TOKENS = 2048

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


class BedrockJudge(_BaseJudge):
    """The judge behind ``bedrock-runtime`` ``converse``."""

    kind = "bedrock"
    max_tokens = MAX_TOKENS

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
        options = config.bedrock
        session = session or boto3.Session()
        self.region = options.region or region_from_arn(options.model_id) or session.region_name
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

    def request(self, messages: list[Message]) -> dict[str, Any]:
        system, turns = converse_messages(messages)
        request: dict[str, Any] = {
            "modelId": self.model,
            "messages": turns,
            "inferenceConfig": {"temperature": 0.0, "maxTokens": self.max_tokens},
        }
        if system:
            request["system"] = system
        return request

    def _complete(self, messages: list[Message], logprobs: bool) -> Completion:
        # Converse returns no log-probabilities: GEval falls back to the plain score.
        try:
            response = self.client.converse(**self.request(messages))
        except ClientError as exc:
            raise self._client_error(exc) from exc
        except (ReadTimeoutError, ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError):
            raise TransientError(f"no answer within timeout_seconds={self.timeout:g}") from None
        except (EndpointConnectionError, ConnectionClosedError) as exc:
            raise TransientError(f"could not connect: {exc}") from exc
        except urllib3.exceptions.ProtocolError as exc:
            raise TransientError(f"the connection broke mid-response: {exc}") from exc
        except NoCredentialsError as exc:
            raise JudgeError(
                f"{self.endpoint}: no AWS credentials found. Configure credentials "
                "(AWS_PROFILE, environment variables or a role) for the judge's account."
            ) from exc
        except BotoCoreError as exc:
            raise JudgeError(f"{self.endpoint} failed: {exc}") from exc
        content = (response.get("output") or {}).get("message", {}).get("content") or []
        text = "".join(b["text"] for b in content if isinstance(b, dict) and "text" in b)
        usage = response.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
        )

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
            hint = (
                f"Grant bedrock:InvokeModel on {self.model} to the role that runs evalrunner, "
                "and enable access to the model in the Bedrock console"
            )
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
