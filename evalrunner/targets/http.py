"""Any HTTP endpoint that takes a JSON question and answers JSON (``"url"``).

This is the escape hatch for systems that are not on AWS or not behind a Lambda: a FastAPI
app, an API Gateway stage, a container on a laptop. Secrets for its headers come from
allowed environment variables (``headers_from_env``) or, deployed, from AWS Secrets Manager
(``headers_from_secret``), through :mod:`evalrunner.secrets`, so they never sit in an event or
a report.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, WithJsonSchema

from evalrunner import redaction
from evalrunner.http_client import JsonHttpClient, status_error
from evalrunner.network import UrlCheck
from evalrunner.retry import BACKOFF_BASE_SECONDS
from evalrunner.secrets import resolve_headers
from evalrunner.suite.model import TestCase
from evalrunner.targets import adapters
from evalrunner.targets._common import (
    question_payload,
    retry_policy,
    sanitise_name,
)
from evalrunner.targets.base import ConversationSession, Target, TargetResponse
from evalrunner.targets.registry import register
from evalrunner.targets.spec import (
    ConversationFieldsSpec,
    ResponseMappingSpec,
    SpecModel,
    TargetSpec,
)


def endpoint_name(url: str) -> str:
    """``https://api.example.com/v1/chat`` → ``api.example.com-v1-chat``."""
    parts = urlsplit(url)
    return sanitise_name(f"{parts.hostname or ''}{parts.path}", fallback="http")


def display_url(url: str) -> str:
    """The URL without credentials or query string, safe to put in errors and logs."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


class HttpFields(SpecModel):
    """``{"url"}``: any endpoint that takes a JSON question and answers JSON."""

    schema_def: ClassVar[str] = "http"

    url: str = Field(pattern=r"^https?://")
    method: Annotated[Literal["POST", "PUT"], WithJsonSchema({"enum": ["POST", "PUT"]})] = "POST"
    headers: dict[str, str] | None = None
    headers_from_env: dict[str, str] | None = Field(
        default=None,
        description="Header name -> environment variable holding its value, so secrets stay "
        "out of the event. Locally only: the name must start with EVALRUNNER_SECRET_, be "
        "OPENAI_API_KEY, or be listed in EVALRUNNER_ALLOWED_SECRET_ENV; AWS_* never. Refused "
        "by the deployed runner: use headers_from_secret.",
    )
    headers_from_secret: dict[str, Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        description="Header name -> AWS Secrets Manager secret (ARN or name) holding its "
        "value. Deployed runner only; the secret must be listed in cdk.json 'secrets'.",
    )
    question_field: str = "question"
    contexts_field: str | None = Field(
        default=None,
        min_length=1,
        description="Request field that carries the case's contexts (the suite's "
        "retrieved_contexts column, a list of strings) to a generation endpoint that takes "
        "its context in the request; they are also recorded as the case's retrieved contexts "
        "when the response maps none. Needed by the misinformation perturbation.",
    )


class HttpSpec(HttpFields, ConversationFieldsSpec, ResponseMappingSpec, TargetSpec):
    """An HTTP target as the event gives it."""


@register
class HttpTarget(Target):
    """POSTs (or PUTs) ``{question_field: question, "conversation": [...]}`` as JSON."""

    kind = "url"
    spec_model = HttpSpec
    options: HttpSpec

    #: First wait between retries (seconds; doubled per consecutive failure, see
    #: :mod:`evalrunner.retry`). No jitter: an HTTP target has always waited the whole window.
    backoff_factor = BACKOFF_BASE_SECONDS

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        super().__init__(spec)  # no AWS call: the session is not needed
        self.url = self.options.url
        self.method: str = self.options.method
        self.question_field = self.options.question_field
        self.contexts_field = self.options.contexts_field
        self.headers = {**(self.options.headers or {}), **resolve_headers(spec)}
        # Credentials written into the event itself are masked by value too, like secrets.
        redaction.register_headers(self.headers)
        redaction.register_url(self.url)
        self.mapping = adapters.ResponseMapping.from_spec(spec)
        self.check_url = UrlCheck(self.url, "target.url")
        self.what = f"{self.method} {display_url(self.url)}"
        self.http = JsonHttpClient(
            retry_policy(self.options, base=self.backoff_factor, jitter=False),
            max_response_bytes=self.options.max_response_bytes,
        )

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        return endpoint_name(str(spec["url"]))

    @classmethod
    def sends_contexts(cls, spec: dict[str, Any]) -> str | None:
        return "target.contexts_field" if spec.get("contexts_field") else None

    def invoke(self, case: TestCase) -> TargetResponse:
        return self._send(case, None)

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        return self._send(case, session)

    def _send(self, case: TestCase, session: ConversationSession | None) -> TargetResponse:
        what = self.what
        self.check_url()
        payload = question_payload(
            case,
            self.question_field,
            self.contexts_field,
            history_field=self.options.history_field,
            session=(self.options.session_id_field, session.id) if session else None,
        )
        result = self.http.send(self.method, self.url, payload, self.headers, what)
        if not 200 <= result.status < 300:
            raise status_error(
                result,
                what,
                auth_hint="Check target.headers / headers_from_env / headers_from_secret.",
            )
        response = adapters.normalise(result.json(what), self.mapping, source=what)
        if self.contexts_field and not response.contexts and case.contexts:
            # What the model was given is what it answered from (faithfulness checks it).
            response = response.model_copy(update={"contexts": list(case.contexts)})
        return response
